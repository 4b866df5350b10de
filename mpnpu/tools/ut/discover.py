"""Finding an operator repository's kernel unit tests and the recipe each is built with.

The layout read is the public operator repositories' (ops-nn and its siblings)::

    <category>/<op>/op_kernel/                 the kernel sources (op_kernel/CMakeLists.txt may name
                                               the chip's KERNEL_SRC with add_kernel_sources)
    <category>/<op>/op_host/                   host code; a *_tiling.h with BEGIN_TILING_DATA_DEF
    <category>/<op>/tests/ut/op_kernel/        CMakeLists.txt: AddOpTestCase(op "socs" "options" [deps])
                                               test_<op>*.cpp (and arch22/ for this chip), <op>_tiling_def.h
    tests/ut/op_kernel/                        the shared test helpers (data_utils.cpp, ...)
    cmake/ut.cmake                             AddOpTestCase itself

What a test is built from follows ``cmake/ut.cmake``'s ``AddOpTestCase`` for the chip class of
mpnpu (Atlas A2: ``ascend910B1`` / ``ascend910b``): the test sources ``test_<op>*.cpp`` of the
test folder and of its ``arch22/`` folder; the kernel ``<op>.cpp`` (or the KERNEL_SRC that
``op_kernel/CMakeLists.txt`` gives this chip) from the staged kernel tree; the options of the call
(``-D...``) plus ``-DUT_SOC_VERSION="Ascend910B1" -DKERNELUT=1``; ``-include`` of the test folder's
``<op>_tiling_def.h`` (the foreach operators share foreach_abs's; for the others the vendor's
tooling generates one from the host tiling code, which mpnpu makes from the op_host header that
has ``BEGIN_TILING_DATA_DEF``, when there is one). The include folders are rebuilt by
:mod:`mpnpu.tools.ut.build` from the same function.
"""

from __future__ import annotations

import glob
import os
import re
from dataclasses import dataclass, field

from mpnpu.errors import UsageError
from mpnpu.tools.ut import cmake

#: AddOpTestCase's chip names of this chip class, lower case (ascend910b maps to ascend910b1)
CHIP_SOCS = ("ascend910b1", "ascend910b")
#: the compute unit whose KERNEL_SRC applies (op_kernel/CMakeLists.txt: add_kernel_sources COMPUTE_UNITS)
COMPUTE_UNIT = "ascend910b"
#: the sub-folder of a test folder with this chip's own test sources (cmake get_target_dir)
TARGET_DIR = "arch22"
#: what -DUT_SOC_VERSION says for this chip
SOC_VERSION = "Ascend910B1"

#: High-level Ascend C APIs, by the names a kernel calls them with (their documented names), for telling
#: basic-API-only tests from the rest. Names also used by the basic API (ReduceSum, ...) or by mpnpu's scalar
#: helpers (Ceil(a, b)) are left out: the advanced reduction is found by its header instead.
HIGH_LEVEL_NAMES = (
    "Matmul", "MatmulImpl", "REGIST_MATMUL_OBJ", "SoftMax", "SimpleSoftMax", "SoftmaxFlash", "SoftmaxFlashV2",
    "SoftmaxFlashV3", "LogSoftMax", "SoftmaxGrad", "SoftmaxGradFront", "AdjustSoftMaxRes", "LayerNorm",
    "LayerNormGrad", "LayerNormGradBeta", "RmsNorm", "DeepNorm", "BatchNorm", "GroupNorm", "Normalize",
    "WelfordUpdate", "WelfordFinalize", "Gelu", "FasterGelu", "FasterGeluV2", "GeGLU", "ReGlu", "SwiGLU", "Swish",
    "Silu", "Sigmoid", "AscendQuant", "AscendDequant", "AscendAntiQuant", "Sort", "TopK", "ConfusionTranspose",
    "Pad", "UnPad", "Broadcast", "CumSum", "Cumsum", "Erf", "Erfc", "Tanh", "Tan", "Sin", "Cos", "Sinh", "Cosh",
    "Asin", "Acos", "Atan", "Asinh", "Acosh", "Atanh", "Power", "Sign", "Floor", "Round", "Trunc", "Frac",
    "Fmod", "Lgamma", "Digamma", "Log", "Xor", "Mean", "Sum", "ArithProgression", "DropOut", "SelectWithBytesMask",
    "Clamp", "ClampMax", "ClampMin", "IsFinite", "Exp2", "Log2", "Log10",
)
_HIGH_LEVEL_CALL = re.compile(r"(?<![\w.>:])(?:AscendC::)?(" + "|".join(HIGH_LEVEL_NAMES)
                              + r")\s*(?:<[^;(){}]*>)?\s*\(")
_DEFINITION_BEFORE = re.compile(r"(?:\b(?:void|int|bool|auto|float|half|inline|static)\s+|::)$")
_INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^">]+)[">]', re.M)


@dataclass(frozen=True)
class Corpus:
    """Where the repository and the dependency repositories its build takes headers from are."""

    repo: str
    opbase: str | None = None  # hicann/opbase (include/, pkg_inc/)
    ops_tensor: str | None = None  # hicann/ops-tensor (include/blaze, include/tensor_api)

    @staticmethod
    def at(repo: str, opbase: str | None = None, ops_tensor: str | None = None) -> Corpus:
        """The corpus at ``repo``; the dependency repositories default to its siblings named
        ``opbase`` (or ``ops-base``) and ``ops-tensor``, when they are there."""
        repo = os.path.abspath(repo)
        if not os.path.isdir(repo):
            raise UsageError(f"no such folder: {repo}")
        if not os.path.isfile(os.path.join(repo, "cmake", "ut.cmake")):
            raise UsageError(f"{repo} is not laid out like the public operator repositories (no cmake/ut.cmake)")
        parent = os.path.dirname(repo)

        def sibling(given: str | None, names: tuple[str, ...]) -> str | None:
            if given:
                if not os.path.isdir(given):
                    raise UsageError(f"no such folder: {given}")
                return os.path.abspath(given)
            for n in names:
                if os.path.isdir(os.path.join(parent, n)):
                    return os.path.join(parent, n)
            return None

        return Corpus(repo, sibling(opbase, ("opbase", "ops-base")), sibling(ops_tensor, ("ops-tensor",)))


@dataclass(frozen=True)
class UtTest:
    """One operator's kernel unit test and how its repository builds it (for this chip class)."""

    op: str  # AddOpTestCase's operator name (the kernel's name)
    op_dir: str  # the operator's folder, relative to the repository: activation/swi_glu
    cmake: str  # the CMakeLists.txt that registers it (absolute)
    line: int  # the AddOpTestCase line
    socs: tuple[str, ...]  # the chips it registers, as written
    in_scope: bool  # registers this chip class
    options: tuple[str, ...] = ()  # compile options of the call (-D...), then the file's own for its target
    deps: tuple[str, ...] = ()  # operators whose kernels its build also stages
    multi_kernel_target: bool = False  # MULTI_KERNEL_TARGET: each test source builds alone, without the kernel
    kernel: str | None = None  # the kernel source, relative to op_kernel/ (None: MULTI_KERNEL_TARGET)
    sources: tuple[str, ...] = ()  # the test sources (absolute)
    tiling_def: str | None = None  # the -include'd tiling header it has (absolute), if any
    host_tiling: str | None = None  # else: the op_host header the generated one is made from, if any
    tiling_note: str = ""  # how the tiling header was chosen, or why there is none
    include_dirs: tuple[str, ...] = ()  # target_include_directories on its target in the test's CMake
    data_copies: tuple[tuple[str, str], ...] = ()  # (file, destination folder relative to the build root)
    data_scripts: tuple[str, ...] = ()  # the Python scripts of its test folder (gen_data.py, ...)

    @property
    def id(self) -> str:
        """The test's name in reports: its operator folder (unique even where two folders share an op name)."""
        return self.op_dir

    @property
    def category(self) -> str:
        return self.op_dir.split("/", 1)[0]

    @property
    def ut_dir(self) -> str:
        return os.path.dirname(self.cmake)

    def defines(self) -> list[str]:
        """Every -D of its compile, the CMake's and AddOpTestCase's own (UT_SOC_VERSION, KERNELUT)."""
        extra = [f'-DUT_SOC_VERSION="{SOC_VERSION}"'] + ([] if self.multi_kernel_target else ["-DKERNELUT=1"])
        return [*self.options, *extra]


@dataclass
class Discovery:
    """Every unit test found, in scope or not, and the CMake files that could not be read."""

    corpus: Corpus
    tests: list[UtTest] = field(default_factory=list)
    unreadable: list[str] = field(default_factory=list)

    @property
    def in_scope(self) -> list[UtTest]:
        return [t for t in self.tests if t.in_scope]

    @property
    def out_of_scope(self) -> list[UtTest]:
        return [t for t in self.tests if not t.in_scope]


def discover(corpus: Corpus) -> Discovery:
    """Every operator unit test of the repository: one per operator folder with an AddOpTestCase
    (the one for this chip class when there is one; else its first, which is out of scope)."""
    found = Discovery(corpus)
    pattern = os.path.join(corpus.repo, "**", "tests", "ut", "op_kernel", "CMakeLists.txt")
    for path in sorted(glob.glob(pattern, recursive=True)):
        rel = os.path.relpath(path, corpus.repo)
        if rel.startswith("tests" + os.sep):  # the shared folder, not an operator's
            continue
        try:
            test = read_test(corpus, path)
        except (OSError, UnicodeDecodeError):
            found.unreadable.append(path)
            continue
        if test is not None:
            found.tests.append(test)
    return found


def _op_dir_of(corpus: Corpus, cmake_path: str) -> str:
    ut = os.path.dirname(cmake_path)  # <op>/tests/ut/op_kernel
    return os.path.relpath(os.path.dirname(os.path.dirname(os.path.dirname(ut))), corpus.repo)


def read_test(corpus: Corpus, cmake_path: str) -> UtTest | None:
    """The test a ``tests/ut/op_kernel/CMakeLists.txt`` registers, or None when it registers none."""
    with open(cmake_path, encoding="utf-8", errors="replace") as f:
        calls = cmake.parse(f.read())
    ut_dir = os.path.dirname(cmake_path)
    scope = cmake.Scope({"CMAKE_CURRENT_SOURCE_DIR": ut_dir, "PROJECT_SOURCE_DIR": corpus.repo,
                         "OPS_NN_DIR": corpus.repo, "CMAKE_SOURCE_DIR": corpus.repo})
    chosen: tuple[cmake.Call, list[str]] | None = None
    first: tuple[cmake.Call, list[str]] | None = None
    target_calls: list[tuple[cmake.Call, list[str]]] = []
    copies: list[tuple[str, str]] = []
    for call in calls:
        cmake.apply_set(scope, call)
        if call.name == "addoptestcase":
            values = scope.values(call.args)
            if len(values) < 2:
                continue
            first = first or (call, values)
            named = [s.strip().lower() for s in values[1].split(";")]
            if chosen is None and any(s in CHIP_SOCS for s in named):
                chosen = (call, values)
        elif call.name in ("target_compile_definitions", "target_compile_options", "target_include_directories"):
            target_calls.append((call, scope.values(call.args)))
        elif call.name == "add_custom_command":
            copies += _copies(scope.values(call.args))
    picked = chosen or first
    if picked is None:
        return None
    call, values = picked
    op = values[0]
    socs = tuple(s for s in values[1].split(";") if s)
    in_scope = chosen is not None
    op_dir = _op_dir_of(corpus, cmake_path)
    test = UtTest(op=op, op_dir=op_dir, cmake=cmake_path, line=call.line, socs=socs, in_scope=in_scope)
    if not in_scope:
        return test
    options_text = values[2] if len(values) > 2 else ""
    options_text = re.sub(r"-DUT_CUSTOM_TILING_DATA_KEYS=\S+", "", options_text)
    # a CMake list: items apart by spaces or by ';' ("-DA=x;-DB=y" is two options, as CMake passes it)
    options = [o for o in re.split(r"[\s;]+", options_text) if o]
    rest = values[3:]
    multi = "MULTI_KERNEL_TARGET" in rest
    deps = tuple(d for d in rest if d != "MULTI_KERNEL_TARGET" and "/" not in d and not d.endswith(".cpp")
                 and re.fullmatch(r"[A-Za-z0-9_]+", d))
    include_dirs: list[str] = []
    for tcall, tvalues in target_calls:
        if not tvalues or tvalues[0] != f"opkernel_{op}":
            continue
        items = [v for v in tvalues[1:] if v not in ("PRIVATE", "PUBLIC", "INTERFACE", "BEFORE", "AFTER", "SYSTEM")]
        if tcall.name == "target_compile_definitions":
            options += [f"-D{d}" for d in items]
        elif tcall.name == "target_compile_options":
            options += items
        else:
            include_dirs += items
    sources = _test_sources(ut_dir, op, multi)
    op_root = os.path.join(corpus.repo, op_dir)
    kernel = None if multi else _kernel_source(op_root, op)
    tiling_def, host_tiling, note = _tiling(corpus, ut_dir, op_root, op, test.category, deps)
    scripts = tuple(sorted(glob.glob(os.path.join(ut_dir, "**", "*.py"), recursive=True)))
    return UtTest(op=op, op_dir=op_dir, cmake=cmake_path, line=call.line, socs=socs, in_scope=True,
                  options=tuple(options), deps=deps, multi_kernel_target=multi, kernel=kernel, sources=sources,
                  tiling_def=tiling_def, host_tiling=host_tiling, tiling_note=note, include_dirs=tuple(include_dirs),
                  data_copies=tuple(copies), data_scripts=scripts)


def _test_sources(ut_dir: str, op: str, multi: bool) -> tuple[str, ...]:
    """``test_<op>*.cpp`` of the test folder and of this chip's sub-folder (only the latter with
    MULTI_KERNEL_TARGET), as cmake/ut.cmake globs them."""
    here = sorted(glob.glob(os.path.join(glob.escape(ut_dir), f"test_{glob.escape(op)}*.cpp")))
    target = sorted(glob.glob(os.path.join(glob.escape(ut_dir), TARGET_DIR, f"test_{glob.escape(op)}*.cpp")))
    return tuple(target if multi else here + target)


def _kernel_source(op_root: str, op: str) -> str:
    """The kernel source for this chip, relative to op_kernel/: the KERNEL_SRC of an
    ``add_kernel_sources`` whose COMPUTE_UNITS name this chip, else ``<op>.cpp``."""
    path = os.path.join(op_root, "op_kernel", "CMakeLists.txt")
    if os.path.isfile(path):
        with open(path, encoding="utf-8", errors="replace") as f:
            calls = cmake.parse(f.read())
        for call in calls:
            if call.name != "add_kernel_sources":
                continue
            words = [a.text for a in call.args]
            units = _keyword_values(words, "COMPUTE_UNITS")
            src = _keyword_values(words, "KERNEL_SRC")
            if src and COMPUTE_UNIT in units:
                base = re.sub(r"\.cpp$", "", src[0])
                return f"{base}.cpp"
    return f"{op}.cpp"


_KEYWORDS = ("COMPUTE_UNITS", "KERNEL_SRC", "AUTO_SYNC", "OPTIONS", "SIMPLIFIED_KEY", "IMPL_MODE", "OPTYPE",
             "ACLNNTYPE", "TILING_KEY")


def op_type(repo: str, op: str) -> str:
    """The operator type cmake/ut.cmake gives the unit test of ``op`` (its generated tiling header asks
    the tiling library for the struct registered under it): the ``op_type`` of the last
    ``*/<op>/op_host/config/*/<op>_binary.json`` there is, else ``op`` in CamelCase (``swi_glu`` ->
    ``SwiGlu``)."""
    found = sorted(glob.glob(os.path.join(glob.escape(repo), "*", glob.escape(op), "op_host", "config", "*",
                                          f"{glob.escape(op)}_binary.json")))
    for path in reversed(found):
        try:
            with open(path, encoding="utf-8", errors="replace") as f:
                match = re.search(r'"op_type"\s*:\s*"(\w+)"', f.read())
        except OSError:
            continue
        if match:
            return match.group(1)
    return "".join(word[:1].upper() + word[1:].lower() for word in op.split("_"))


def _keyword_values(words: list[str], key: str) -> list[str]:
    if key not in words:
        return []
    out = []
    for w in words[words.index(key) + 1:]:
        if w in _KEYWORDS:
            break
        out.append(w)
    return out


def _host_tiling_headers(op_root: str) -> list[str]:
    """The headers of an operator's op_host folder that define tiling structs (BEGIN_TILING_DATA_DEF)."""
    hosts = []
    for path in sorted(glob.glob(os.path.join(glob.escape(op_root), "op_host", "**", "*.h"), recursive=True)):
        try:
            with open(path, encoding="utf-8", errors="replace") as f:
                if "BEGIN_TILING_DATA_DEF" in f.read():
                    hosts.append(path)
        except OSError:
            continue
    return hosts


def _registering(headers: list[str], op_type_name: str) -> str | None:
    """The first of ``headers`` that registers a tiling struct for the operator type ``op_type_name``."""
    from mpnpu.ascendc.tiling import registered_tiling_structs

    for path in headers:
        try:
            with open(path, encoding="utf-8", errors="replace") as f:
                if any(op == op_type_name for op, _ in registered_tiling_structs(f.read())):
                    return path
        except OSError:
            continue
    return None


def _tiling(corpus: Corpus, ut_dir: str, op_root: str, op: str, category: str,
            deps: tuple[str, ...] = ()) -> tuple[str | None, str | None, str]:
    """(the tiling header the test folder has, the host header a generated one comes from, a note).
    An operator whose op_host has no tiling header takes the one of a dependency operator (its
    test's build links that operator's tiling too) that registers a struct for its type."""
    own = os.path.join(ut_dir, f"{op}_tiling_def.h")
    if os.path.isfile(own):
        return own, None, f"{op}_tiling_def.h of the test folder"
    if category == "foreach":
        shared = os.path.join(corpus.repo, "foreach", "foreach_abs", "tests", "ut", "op_kernel",
                              "foreach_abs_tiling_def.h")
        if os.path.isfile(shared):
            return shared, None, "foreach_abs_tiling_def.h (shared by the foreach operators)"
    hosts = _host_tiling_headers(op_root)
    if not hosts:
        own_type = op_type(corpus.repo, op) if deps else ""
        for dep in deps:
            found = _registering(_host_tiling_headers(os.path.join(os.path.dirname(op_root), dep)), own_type)
            if found:
                return None, found, (f"generated by mpnpu from {os.path.relpath(found, corpus.repo)}, the header of "
                                     f"dependency {dep} that registers its type (the vendor generates it)")
        return None, None, ("no tiling header: the vendor's tooling generates one from the host tiling library; "
                            "its op_host has no BEGIN_TILING_DATA_DEF header to make one from")

    def rank(p: str) -> tuple[int, str]:
        name = os.path.basename(p)
        return (0 if name == f"{op}_tiling.h" else 1 if f"{os.sep}{TARGET_DIR}{os.sep}" in p else
                2 if "arch35" not in p else 3, p)

    host = sorted(hosts, key=rank)[0]
    return None, host, f"generated by mpnpu from {os.path.relpath(host, corpus.repo)} (the vendor generates it)"


def _copies(words: list[str]) -> list[tuple[str, str]]:
    """Files an add_custom_command copies into the build tree (``cmake -E copy FILE... DIR``):
    (file, destination folder relative to the build root), for the destinations under it."""
    out = []
    for i, w in enumerate(words):
        if w == "-E" and i + 1 < len(words) and words[i + 1] == "copy":
            args = []
            for a in words[i + 2:]:
                if a in ("DEPENDS", "COMMAND", "WORKING_DIRECTORY", "COMMENT", "OUTPUT"):
                    break
                args.append(a)
            if len(args) >= 2:
                dest = args[-1]
                marker = "/tests/ut/op_kernel"
                if marker in dest:
                    rel = "tests/ut/op_kernel" + dest.split(marker, 1)[1]
                    out += [(src, rel) for src in args[:-1]]
    return out


@dataclass(frozen=True)
class Reach:
    """What a test's sources reach through their includes (the repositories' files only)."""

    files: tuple[str, ...]  # every repository file reached, the sources included
    headers: tuple[str, ...]  # the high-level API headers included (lib/..., adv_api/...)
    names: tuple[str, ...]  # the high-level API names called


def reach(files: list[str], include_dirs: list[str]) -> Reach:
    """Follow the includes of ``files`` (quote includes beside the includer first, then ``include_dirs``;
    every branch of every #if) through the files found under ``include_dirs`` or beside the sources, and
    collect the high-level API headers they include and the high-level API names they call."""
    seen: set[str] = set()
    todo = [os.path.realpath(f) for f in files if os.path.isfile(f)]
    headers: set[str] = set()
    names: set[str] = set()
    roots = [os.path.realpath(d) for d in include_dirs]
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        try:
            with open(path, encoding="utf-8", errors="replace") as f:
                text = f.read()
        except OSError:
            continue
        code = re.sub(r"//[^\n]*|/\*.*?\*/", " ", text, flags=re.S)
        for m in _HIGH_LEVEL_CALL.finditer(code):
            before = code[max(0, m.start() - 24):m.start()]
            if not _DEFINITION_BEFORE.search(before):
                names.add(m.group(1))
        for m in _INCLUDE.finditer(code):
            inc = m.group(2)
            if inc.startswith(("lib/", "adv_api/")):
                headers.add(inc)
                continue
            for base in ([os.path.dirname(path)] if m.group(1) == '"' else []) + roots:
                cand = os.path.join(base, inc)
                if os.path.isfile(cand):
                    todo.append(os.path.realpath(cand))
                    break
    return Reach(tuple(sorted(seen)), tuple(sorted(headers)), tuple(sorted(names)))
