"""One truth across Python and C++ (mpnpu.ascendc.native.contract): every number, frame layout and
struct both languages use on the native launch path is defined once, in Python, and the C++ side
agrees with it.

Edit one side only and a test here fails: the generated headers are regenerated and compared
(a Python definition changed without regenerating, or a generated header edited by hand), and a
program compiled against mpnpu's headers prints every macro and every struct field's offset and
size, which must be the registry's (a C struct changed without its ctypes mirror, or the reverse;
abi.h's own static_asserts stop such a build first). Nothing here lists what to check: it all
comes from the registry."""

from __future__ import annotations

import os
import re
import shutil
import struct
import subprocess

import pytest

from mpnpu.ascendc.build import contract_header
from mpnpu.ascendc.build.compiler import INCLUDE_DIR, find_compiler
from mpnpu.ascendc.native import contract
from tests.ascendc_util import needs_cxx

HEADERS = INCLUDE_DIR + "/mpnpu"


def test_the_generated_headers_are_what_the_python_definitions_make() -> None:
    assert contract_header.stale() == [], ("run python -m mpnpu.ascendc.build.contract_header after changing a "
                                           "definition of mpnpu.ascendc.native.contract")


def test_a_stale_header_is_found_and_rewritten(tmp_path) -> None:
    for rel, text in contract_header.render().items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text.replace("#define MPNPU_STATE_DONE                   5",
                                                 "#define MPNPU_STATE_DONE                   9"))
    assert contract_header.stale(str(tmp_path)) == [contract_header.CONSTANTS_HEADER]
    assert contract_header.write(str(tmp_path)) == [contract_header.CONSTANTS_HEADER]
    assert contract_header.stale(str(tmp_path)) == []


def test_the_registry_covers_every_shared_definition() -> None:
    names = {c.name for c in contract.constants()}
    contract.check_unique(contract.constants())
    # (spot checks that discovery works: the registry finds these, the test does not list what to check)
    assert {"MPNPU_STATE_DONE", "MPNPU_ST_STATE", "MPNPU_ST_COLUMNS", "MPNPU_SERVE_RESPIN",
            "MPNPU_NATIVE_CMD_TAIL_AT", "MPNPU_DONE_FLAG_BYTES"} <= names
    assert {"MpnpuServe", "MpnpuLaunch", "MpnpuNativeSync", "MpnpuEvent", "MpnpuExports"} <= {
        s.c_name for s in contract.structs()}


def test_no_header_restates_a_number_the_contract_defines() -> None:
    """The hand-written headers take every contract number from contract.h: none of them defines
    a macro or enumerator of the contract's names itself."""
    names = {c.name for c in contract.constants()}
    found = []
    for root, _, files in os.walk(HEADERS):
        for f in files:
            if f.startswith("contract"):
                continue
            with open(os.path.join(root, f)) as fh:
                text = fh.read()
            for m in re.finditer(r"#define\s+(MPNPU_\w+)|\b(MPNPU_\w+)\s*=\s*\d", text):
                name = m.group(1) or m.group(2)
                if name in names:
                    found.append(f"{f}: {name}")
    assert found == []


@needs_cxx
def test_a_compiled_program_sees_every_value_and_layout_of_the_registry(tmp_path) -> None:
    constants = contract.constants()
    structs = contract.structs()
    lines = []
    for c in constants:
        lines.append(f'std::printf("{c.name} %lld\\n", (long long)({c.name}));')
    for s in structs:
        lines.append(f'std::printf("{s.c_name} size %zu\\n", sizeof({s.c_name}));')
        for name, _, _ in s.fields():
            lines.append(f'std::printf("{s.c_name}.{name} %zu %zu\\n", offsetof({s.c_name}, {name}), '
                         f"sizeof({s.c_name}::{name}));")
    src = tmp_path / "contract.cpp"
    src.write_text('#include <cstddef>\n#include <cstdio>\n#include "mpnpu/native/serve.h"\nint main() {\n'
                   + "\n".join(lines) + "\n}\n")
    exe = tmp_path / "contract"
    subprocess.run([*find_compiler(), "-std=c++17", "-Wall", "-Wextra", "-Werror", f"-I{INCLUDE_DIR}", str(src),
                    "-o", str(exe), "-pthread"], check=True)
    got = subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout.splitlines()
    want = [f"{c.name} {c.value}" for c in constants]
    for s in structs:
        want.append(f"{s.c_name} size {s.size()}")
        want += [f"{s.c_name}.{name} {at} {size}" for name, at, size in s.fields()]
    assert got == want


@needs_cxx
def test_a_struct_edited_on_one_side_does_not_build(tmp_path) -> None:
    """abi.h's generated static_asserts stop a build whose struct differs from its mirror."""
    inc = tmp_path / "include"
    shutil.copytree(INCLUDE_DIR, inc)
    abi_h = inc / "mpnpu" / "native" / "abi.h"
    text = abi_h.read_text()
    edited = text.replace("    int32_t spin_cpus;", "    int64_t spin_cpus;")
    assert edited != text
    abi_h.write_text(edited)
    src = tmp_path / "one.cpp"
    src.write_text('#include "mpnpu/native/abi.h"\nint main() { return 0; }\n')
    out = subprocess.run([*find_compiler(), "-std=c++17", f"-I{inc}", str(src), "-o", str(tmp_path / "one")],
                         capture_output=True, text=True)
    assert out.returncode != 0
    assert "MpnpuServe differs from its mirror in mpnpu.ascendc.native.abi" in out.stderr


@pytest.mark.parametrize("layout", [layout for _, layout in contract.LAYOUTS], ids=lambda lay: lay.doc[:24])
def test_each_layout_packs_its_fields_at_the_offsets_c_reads(layout) -> None:
    named = [(name, code) for name, code in layout.fields if name]
    values = [1 + i for i in range(len(named))]
    packed = layout.struct.pack(*values)
    for (name, code), value in zip(named, values):
        at, size = layout.offsets[name]
        assert struct.calcsize("=" + code) == size
        assert struct.unpack_from("=" + code, packed, at)[0] == value


@needs_cxx
def test_the_trace_tables_name_the_kernel_apis_numbers(tmp_path) -> None:
    """The names trace records are decoded with (mpnpu.ascendc.native.abi.PIPE_NAMES, HARD_EVENTS)
    are the kernel API's own enums, which the public headers define: each name has its number."""
    from mpnpu.ascendc.native import abi

    lines = [f'std::printf("{name} %d\\n", int({name}));' for name in abi.PIPE_NAMES]
    lines += [f'std::printf("{name} %d\\n", int(AscendC::HardEvent::{name}));' for name in abi.HARD_EVENTS]
    src = tmp_path / "tables.cpp"
    src.write_text('#include <cstdio>\n#include "mpnpu/types.h"\nint main() {\n' + "\n".join(lines) + "\n}\n")
    exe = tmp_path / "tables"
    subprocess.run([*find_compiler(), "-std=c++17", f"-I{INCLUDE_DIR}", str(src), "-o", str(exe)], check=True)
    got = subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout.splitlines()
    assert got == [f"{n} {i}" for i, n in enumerate(abi.PIPE_NAMES)] + [f"{n} {i}" for i, n in
                                                                          enumerate(abi.HARD_EVENTS)]
