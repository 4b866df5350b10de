"""Building an operator repository's kernel unit tests against mpnpu: staged sources, a compile per
translation unit with an object cache, a link, several tests at a time.

For each test (a :class:`~mpnpu.tools.ut.discover.UtTest`)::

    stage/<test>/tbe/ascendc/<op>/...      the operator's op_kernel (and its dependencies'), as the
                                           repository's build copies them (here: real folders, files
                                           linked, so a diagnostic resolves to the repository's file)
    stage/<test>/tbe/ascendc/{common,inc,pool_3d_common}  -> stage/_common/...: the shared kernel
                                           folders (matmul's cmct, conv's common, common/inc/op_kernel,
                                           opbase's atvoss and op_kernel, ops-tensor's blaze and
                                           tensor_api), staged once
    <test source>.o, <kernel>.o            $CXX -std=c++17 -O<n> -w <its -D> -include <tiling header>
                                           -I<the include folders of AddOpTestCase> -I<mpnpu's gtest>
                                           $(python -m mpnpu.ascendc --cflags)
    <test>                                 linked with the shared test helpers (tests/ut/op_kernel/*.cpp),
                                           mpnpu's gtest main and $(python -m mpnpu.ascendc --libs)

The include folders are those of cmake/ut.cmake's AddOpTestCase, in its order; mpnpu's folder comes
last, where the vendor's CPU library's own folders come (after the target's), so the repository's
test helpers (its data_utils.h) are the ones a test gets.

The cache: an object is kept under the hash of its compile command (compiler identity included)
and reused while every file the compile read (its -MD dependencies) is unchanged; a failed compile
is kept the same way (its dependencies from -M -MG), so an unchanged corpus is not compiled twice.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import glob
import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Callable, Sequence

from mpnpu.ascendc.build import cpudebug_lib
from mpnpu.ascendc.build.compiler import INCLUDE_DIR, cache_dir, find_compiler
from mpnpu.errors import UsageError
from mpnpu.tools.ut import missing
from mpnpu.tools.ut.conditionals import parse_defines
from mpnpu.tools.ut.defined import DefinedNames
from mpnpu.tools.ut.discover import Corpus, UtTest, op_type, reach
from mpnpu.tools.ut.kernel_mode import kernel_mode_of

GTEST_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "gtest")
GTEST_INCLUDE = os.path.join(GTEST_DIR, "include")
GTEST_MAIN = os.path.join(GTEST_DIR, "gtest_main.cpp")

#: the data formats a kernel's build defines for it to compare its FORMAT_<input> against (as
#: ``#if FORMAT_X1 == FORMAT_FRACTAL_NZ``, with the test's ``-DFORMAT_X1=FORMAT_ND``); the values are
#: the formats' places in the documented list of formats (C_FORMAT_ND is its third, C_FORMAT_FRACTAL_NZ
#: its thirtieth). Not for a unit that spells the host's ``ge::FORMAT_ND`` itself (see _format_flags).
KERNEL_FORMAT_DEFINES = ("-DFORMAT_ND=2", "-DFORMAT_FRACTAL_NZ=29")


def _format_flags(source: str) -> tuple[str, ...]:
    """The format defines for a unit compiling ``source`` (a kernel, or a test including one), unless
    its own text names the host's enumerators (``ge::FORMAT_ND``), which the macros would break."""
    try:
        with open(source, encoding="utf-8", errors="replace") as f:
            if "ge::FORMAT_" in f.read():
                return ()
    except OSError:
        pass
    return KERNEL_FORMAT_DEFINES

#: what intf_llt_pub_asan_cxx17 (the repository's test interface target) adds to every compile
REPO_FLAGS = ("-std=c++17", "-fPIC", "-w", "-D_GLIBCXX_USE_CXX11_ABI=0", "-DCFG_BUILD_DEBUG")
#: an operator project's framework sets the system workspace before its kernel runs (GetSysWorkSpacePtr
#: is then the kernel's workspace argument until it sets one itself: mpnpu/macros.h)
FRAMEWORK_FLAGS = ("-DMPNPU_FRAMEWORK_WORKSPACE",)
#: the shared helpers every test links (cmake/ut.cmake add_opkernel_ut_modules)
COMMON_SOURCES = ("tests/ut/op_kernel/data_utils.cpp", "tests/ut/op_kernel/kernel_ut_data_helper.cpp",
                  "tests/ut/op_kernel/kernel_ut_data_executor.cpp", "tests/ut/common/test_cube_util.cpp")
COMPILE_TIMEOUT_S = 900.0
#: how many times a unit stopped by missing headers is compiled again with stand-ins for them
STUB_ROUNDS = 3
LINK_TIMEOUT_S = 300.0


@dataclass(frozen=True)
class Toolchain:
    """The compiler and the flags every build shares."""

    cxx: tuple[str, ...]
    identity: str
    opt: str  # -O0, -O1, ...
    cflags: tuple[str, ...]  # python -m mpnpu.ascendc --cflags
    libs: tuple[str, ...]  # python -m mpnpu.ascendc --libs

    @property
    def clang(self) -> bool:
        return "clang" in self.identity.lower()

    @property
    def unlimited_errors(self) -> str:
        """Every error of a compile, not the first few: every missing name at once."""
        return "-ferror-limit=0" if self.clang else "-fmax-errors=0"


def toolchain(opt: str = "-O1") -> Toolchain:
    """The compiler (as mpnpu's kernel builds find it) and mpnpu's CPU-debug flags (building
    libmpnpu_cpudebug on first use)."""
    cxx = tuple(find_compiler())
    return Toolchain(cxx, _identity(cxx), opt, tuple(cpudebug_lib.cflags()), tuple(cpudebug_lib.libs()))


@lru_cache(maxsize=4)
def _identity(cxx: tuple[str, ...]) -> str:
    try:
        out = subprocess.run([*cxx, "--version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError) as e:
        raise UsageError(f"the C++ compiler {' '.join(cxx)} does not run: {e}") from None
    return (out.stdout or out.stderr).strip()


def default_build_dir() -> str:
    """Where the object cache, staged sources, binaries and run folders go: beside mpnpu's kernel cache."""
    return os.path.join(os.path.dirname(cache_dir()), "ut")


# -- results of a build ------------------------------------------------------------------------------------


@dataclass
class Unit:
    """One compiled translation unit."""

    source: str  # as the report shows it (repository path)
    ok: bool
    cached: bool
    seconds: float
    stderr: str = ""
    object: str = ""


@dataclass
class Build:
    """A test's build: its units, its link, and what it needed that mpnpu lacks."""

    test: UtTest
    units: list[Unit] = field(default_factory=list)
    linked: bool = False
    link_cached: bool = False
    link_stderr: str = ""
    binary: str = ""
    seconds: float = 0.0
    missing: list[missing.Missing] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)  # the first error lines (for builds no missing name explains)
    error_count: int = 0
    notes: list[str] = field(default_factory=list)  # tiling header made, helpers left out, ...
    high_level_headers: list[str] = field(default_factory=list)
    high_level_names: list[str] = field(default_factory=list)
    stubbed_ok: list[str] = field(default_factory=list)  # units that compile once the missing headers are stand-ins
    kernel_mode: str = "mix"  # the kernel type the chip would launch (mpnpu.tools.ut.kernel_mode)

    @property
    def compiled(self) -> bool:
        return bool(self.units) and all(u.ok for u in self.units)

    @property
    def cached(self) -> bool:
        return all(u.cached for u in self.units) and (self.link_cached or not self.linked)

    @property
    def compiles_with_stand_ins(self) -> bool:
        """It did not compile, and every unit that failed compiles with empty stand-ins for its missing
        headers: what the headers are to declare, it does not use (or mpnpu has)."""
        failed = [u.source for u in self.units if not u.ok]
        return bool(failed) and all(f in self.stubbed_ok for f in failed)


# -- the object cache ------------------------------------------------------------------------------------------


def _digest_file(path: str) -> str | None:
    try:
        with open(path, "rb") as f:
            return hashlib.sha256(f.read()).hexdigest()
    except OSError:
        return None


def _deps_of_make(text: str) -> list[str]:
    """The prerequisites of a make rule (a -MD / -M file), every rule of it."""
    out = []
    for rule in text.replace("\\\n", " ").splitlines():
        _, sep, prereqs = rule.partition(": ")
        if not sep:
            continue
        for token in re.split(r"(?<!\\)\s+", prereqs.strip()):
            if token:
                out.append(token.replace("\\ ", " "))
    return out


def _says_missing(stderr: str, path: str) -> bool:
    """Whether a compiler's ``stderr`` says it could not open ``path`` (GCC's and Clang's words)."""
    return f"error: {path}: No such file" in stderr or f"no such file or directory: '{path}'" in stderr


class ObjectCache:
    """Compiled objects (and failed compiles) by command, valid while their inputs are unchanged."""

    def __init__(self, folder: str) -> None:
        self.folder = folder
        os.makedirs(folder, exist_ok=True)

    def _paths(self, key: str) -> tuple[str, str]:
        return os.path.join(self.folder, f"{key}.o"), os.path.join(self.folder, f"{key}.json")

    def lookup(self, key: str) -> tuple[bool, str] | None:
        """(ok, stderr) of a still-valid entry, else None."""
        obj, meta = self._paths(key)
        try:
            with open(meta) as f:
                data = json.load(f)
        except (OSError, ValueError):
            return None
        if not all(_digest_file(p) == d for p, d in data.get("deps", {}).items()):
            return None
        if any(os.path.exists(os.path.join(folder, name))
               for name in data.get("missing", []) for folder in data.get("search", [])):
            return None  # a header the failed compile could not find is there now
        if data.get("ok") and not os.path.isfile(obj):
            return None
        stderr = str(data.get("stderr", ""))
        if not data.get("ok") and any(_says_missing(stderr, p) and os.path.isfile(p) for p in data.get("deps", {})):
            return None  # kept before compile_unit stopped keeping these: its source is there now
        return bool(data.get("ok")), stderr

    def store(self, key: str, ok: bool, stderr: str, deps: Sequence[str], obj: str | None,
              missing: Sequence[str] = (), search: Sequence[str] = ()) -> None:
        """Keep a compile's result; a failure that could not find the headers ``missing`` is kept
        only until one of them appears in a folder of ``search``."""
        target, meta = self._paths(key)
        if ok and obj:
            os.replace(obj, target)
        digests = {p: _digest_file(p) for p in dict.fromkeys(deps)}
        tmp = f"{meta}.{os.getpid()}.{threading.get_ident()}.tmp"
        with open(tmp, "w") as f:
            json.dump({"ok": ok, "stderr": stderr, "deps": digests, "missing": list(missing),
                       "search": list(search)}, f)
        os.replace(tmp, meta)

    def object_path(self, key: str) -> str:
        return self._paths(key)[0]


def _key(tool: Toolchain, cmd: Sequence[str], source: str) -> str:
    h = hashlib.sha256()
    h.update(tool.identity.encode())
    h.update(json.dumps(list(cmd)).encode())
    h.update((_digest_file(source) or "").encode())
    return h.hexdigest()[:32]


def compile_unit(tool: Toolchain, cache: ObjectCache, source: str, flags: Sequence[str], shown: str,
                 env: dict[str, str]) -> Unit:
    """Compile ``source`` with ``flags`` into an object (from the cache when still valid)."""
    cmd = [*tool.cxx, *flags, tool.unlimited_errors, "-c", source]
    key = _key(tool, cmd, source)
    start = time.monotonic()
    hit = cache.lookup(key)
    if hit is not None:
        ok, stderr = hit
        return Unit(shown, ok, True, time.monotonic() - start, stderr, cache.object_path(key) if ok else "")
    with tempfile.TemporaryDirectory(dir=cache.folder, prefix="cc-") as tmp:
        obj, dep = os.path.join(tmp, "out.o"), os.path.join(tmp, "out.d")
        try:
            proc = subprocess.run([*cmd, "-o", obj, "-MD", "-MF", dep], capture_output=True, text=True,
                                  timeout=COMPILE_TIMEOUT_S, env=env)
            ok, stderr = proc.returncode == 0, proc.stderr
        except subprocess.TimeoutExpired:
            return Unit(shown, False, False, time.monotonic() - start,
                        f"{shown}:1:1: error: the compile took longer than {COMPILE_TIMEOUT_S:g} s")
        if not ok and (not os.path.isfile(source) or _says_missing(stderr, source)):
            # Its source went away during the compile (a folder removed under it): nothing to learn
            # about the test, so nothing is kept; the next run compiles it again.
            return Unit(shown, False, False, time.monotonic() - start, stderr)
        deps: list[str] = [source]
        missing: list[str] = []
        if ok and os.path.isfile(dep):
            with open(dep) as f:
                deps = _deps_of_make(f.read())
        elif not ok:
            deps, missing = _deps_after_failure(cmd, source, env, tmp)
        cache.store(key, ok, stderr, [os.path.abspath(d) for d in deps], obj if ok else None,
                    missing, _search_folders(cmd, source) if missing else ())
    return Unit(shown, ok, False, time.monotonic() - start, stderr, cache.object_path(key) if ok else "")


def _deps_after_failure(cmd: Sequence[str], source: str, env: dict[str, str],
                        tmp: str) -> tuple[list[str], list[str]]:
    """The files a failed compile read, and the headers it could not find (-M -MG names a missing
    header as written in its #include), so its cached failure is dropped when one of the files
    changes or one of the headers appears (mpnpu gained it)."""
    dep = os.path.join(tmp, "fail.d")
    pre = [c for c in cmd if c not in ("-c",)] + ["-M", "-MG", "-MF", dep, "-E", "-o", os.devnull]
    try:
        subprocess.run(pre, capture_output=True, text=True, timeout=COMPILE_TIMEOUT_S, env=env)
        with open(dep) as f:
            named = _deps_of_make(f.read())
    except (OSError, subprocess.SubprocessError):
        return [source], []
    found = [d for d in named if os.path.isabs(d) or os.path.exists(d)]
    missing = [d for d in named if not (os.path.isabs(d) or os.path.exists(d))]
    return found or [source], missing


def _search_folders(cmd: Sequence[str], source: str) -> list[str]:
    """Where a compile looks for a quoted or bracketed #include: the source's folder and each -I."""
    folders = [os.path.dirname(os.path.abspath(source))]
    for i, arg in enumerate(cmd):
        if arg in ("-I", "-iquote", "-isystem") and i + 1 < len(cmd):
            folders.append(os.path.abspath(cmd[i + 1]))
        else:
            for flag in ("-I", "-iquote", "-isystem"):
                if arg.startswith(flag) and len(arg) > len(flag):
                    folders.append(os.path.abspath(arg[len(flag):]))
    return list(dict.fromkeys(folders))


# -- staging ------------------------------------------------------------------------------------------------------


def _link_tree(src: str, dst: str) -> None:
    """``dst`` mirrors ``src``: real folders, each file a symbolic link to the repository's (later
    trees laid over earlier ones, as ``cp -r`` into the same folder does)."""
    if not os.path.isdir(src):
        return
    for root, dirs, files in os.walk(src):
        dirs[:] = [d for d in dirs if d != ".git"]
        out = os.path.join(dst, os.path.relpath(root, src))
        os.makedirs(out, exist_ok=True)
        for name in files:
            target = os.path.join(out, name)
            if os.path.lexists(target):
                os.remove(target)
            os.symlink(os.path.join(root, name), target)


def _fresh(root: str, want: str) -> bool:
    """Whether ``root`` was staged for ``want`` (its stamp); if not, it is emptied for staging anew."""
    try:
        with open(os.path.join(root, "stamp.json")) as f:
            if f.read() == want:
                return True
    except OSError:
        pass
    if os.path.isdir(root):
        shutil.rmtree(root)
    return False


def _stamp(root: str, want: str) -> None:
    os.makedirs(root, exist_ok=True)
    with open(os.path.join(root, "stamp.json"), "w") as f:
        f.write(want)


def stage_common(corpus: Corpus, build_dir: str) -> str:
    """The shared kernel folders (``tbe/ascendc/{common,inc,pool_3d_common}``) staged once; their root."""
    root = os.path.join(build_dir, "stage", "_common")
    want = json.dumps([corpus.repo, corpus.opbase, corpus.ops_tensor, _tree_stamp(corpus)])
    if _fresh(root, want):
        return root
    tbe = os.path.join(root, "tbe", "ascendc")
    repo = corpus.repo
    # the order of cmake/ut.cmake's copies (a later one wins a file both have)
    _link_tree(os.path.join(repo, "matmul", "common", "cmct"), os.path.join(tbe, "common", "cmct"))
    if corpus.ops_tensor:
        _link_tree(os.path.join(corpus.ops_tensor, "include", "blaze"), os.path.join(tbe, "common", "blaze"))
        for part in ("impl", "include"):
            _link_tree(os.path.join(corpus.ops_tensor, "include", "tensor_api", part, "tensor_api"),
                       os.path.join(tbe, "common", "tensor_api", part, "tensor_api"))
    _link_tree(os.path.join(repo, "conv", "common", "op_kernel"), os.path.join(tbe, "common"))
    _link_tree(os.path.join(repo, "common", "inc", "op_kernel"), os.path.join(tbe, "inc"))
    _link_tree(os.path.join(repo, "pooling", "pool_3d_common", "op_kernel"), os.path.join(tbe, "pool_3d_common"))
    if corpus.opbase:  # cmake/gen_ops_info.cmake kernel_src_copy's common part
        _link_tree(os.path.join(corpus.opbase, "pkg_inc", "op_common", "atvoss"), os.path.join(tbe, "common", "atvoss"))
        _link_tree(os.path.join(corpus.opbase, "include", "op_common", "op_kernel"),
                   os.path.join(tbe, "common", "op_kernel"))
    _stamp(root, want)
    return root


def _operator_kernel_dirs(repo: str) -> dict[str, str]:
    """Every operator's ``op_kernel`` folder in the repository, by the operator folder's name
    (``<category>/<op>/op_kernel``, ``experimental/<category>/<op>/op_kernel``; the first wins a
    name both have)."""
    found: dict[str, str] = {}
    for top in sorted(os.listdir(repo)):
        if top.startswith(".") or top == "experimental":
            continue
        for op in sorted(glob.glob(os.path.join(repo, top, "*", "op_kernel"))):
            found.setdefault(os.path.basename(os.path.dirname(op)), op)
    for op in sorted(glob.glob(os.path.join(repo, "experimental", "*", "*", "op_kernel"))):
        found.setdefault(os.path.basename(os.path.dirname(op)), op)
    return found


def stage_siblings(corpus: Corpus, build_dir: str, common_root: str) -> str:
    """Every operator's kernel folder staged once, side by side (``tbe/ascendc/<op>``), with the
    shared folders beside them; its ``tbe/ascendc``. The repository's unit-test build copies each
    test's kernels into one ``tbe/ascendc`` shared by all its tests, so a kernel may include a
    sibling operator's header by ``../<other op>/...``; each test's stage links these in. Also links
    the repository's top folders into ``stage/``, where a kernel's ``../../../../<category>/...``
    lands from ``stage/<test>/tbe/ascendc/<op>/`` as it lands in the repository from its build folder."""
    stage = os.path.join(build_dir, "stage")
    root = os.path.join(stage, "_siblings")
    tbe = os.path.join(root, "tbe", "ascendc")
    want = json.dumps([corpus.repo, _tree_stamp(corpus)])
    if _fresh(root, want):
        return tbe
    os.makedirs(tbe)
    for name, kernel_dir in _operator_kernel_dirs(corpus.repo).items():
        _link_tree(kernel_dir, os.path.join(tbe, name))
    for shared in ("common", "inc", "pool_3d_common"):
        src = os.path.join(common_root, "tbe", "ascendc", shared)
        if os.path.isdir(src) and not os.path.lexists(os.path.join(tbe, shared)):
            os.symlink(src, os.path.join(tbe, shared))
    for top in os.listdir(corpus.repo):
        link = os.path.join(stage, top)
        if not top.startswith((".", "_")) and os.path.isdir(os.path.join(corpus.repo, top)) \
                and not os.path.lexists(link):
            os.symlink(os.path.join(corpus.repo, top), link)
    _stamp(root, want)
    return tbe


def _tree_stamp(corpus: Corpus) -> str:
    """A cheap identity of the corpus checkouts (their git HEADs), so a new checkout restages."""
    out = []
    for repo in (corpus.repo, corpus.opbase, corpus.ops_tensor):
        head = os.path.join(repo or "", ".git", "HEAD")
        try:
            with open(head) as f:
                ref = f.read().strip()
            if ref.startswith("ref: "):
                with open(os.path.join(repo or "", ".git", ref[5:])) as f:
                    ref = f.read().strip()
            out.append(ref)
        except OSError:
            out.append("")
    return ",".join(out)


def _stub_headers(root: str, headers: set[str]) -> str:
    """Empty files standing in for ``headers`` under ``root``; the include folder that finds them
    (nested as deep as the headers' leading ``../`` need, so a relative name stays inside ``root``)."""
    depth = max((len(re.match(r"^(?:\.\./)*", h).group(0)) // 3 for h in headers), default=0)  # type: ignore[union-attr]
    include = os.path.join(root, *(["d"] * depth))
    os.makedirs(include, exist_ok=True)
    for h in headers:
        path = os.path.normpath(os.path.join(include, h))
        if not path.startswith(os.path.normpath(root) + os.sep):
            continue
        os.makedirs(os.path.dirname(path), exist_ok=True)
        if not os.path.exists(path):
            with open(path, "w") as f:
                f.write("// an empty stand-in for a header mpnpu does not have (mpnpu ut)\n")
    return include


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", name)


@dataclass(frozen=True)
class Staged:
    """A test's staged kernel tree and what its compiles take."""

    root: str  # stage/<test>
    tbe: str  # stage/<test>/tbe/ascendc
    kernel: str | None  # the staged kernel source
    tiling_include: str | None  # the header -include'd into every unit
    include_dirs: tuple[str, ...]
    notes: tuple[str, ...]
    # searched last (-idirafter): the operator's and its dependencies' own op_kernel folders in the
    # repository, so a staged (linked) header's ``"../../<other op>/op_kernel/x.h"``, which the compiler
    # resolves from the link's folder in the stage, is found from where the header really is
    after_dirs: tuple[str, ...] = ()


def stage_test(corpus: Corpus, test: UtTest, build_dir: str, common_root: str,
               siblings: str | None = None) -> Staged:
    """Stage a test's kernel tree (its operator and dependencies; links to the shared folders and, from
    ``siblings``, to every other operator's kernel folder) and make the tiling header its build
    -includes when the vendor's tooling would generate one."""
    root = os.path.join(build_dir, "stage", _safe(test.id))
    if os.path.isdir(root):
        shutil.rmtree(root)
    tbe = os.path.join(root, "tbe", "ascendc")
    os.makedirs(tbe)
    for shared in ("common", "inc", "pool_3d_common"):
        src = os.path.join(common_root, "tbe", "ascendc", shared)
        if os.path.isdir(src):
            os.symlink(src, os.path.join(tbe, shared))
    op_root = os.path.join(corpus.repo, test.op_dir)
    dir_name = os.path.basename(op_root)
    _link_tree(os.path.join(op_root, "op_kernel"), os.path.join(tbe, dir_name))
    if test.op != dir_name:  # the kernel's path uses the op name (cmake/ut.cmake kernelFile)
        _link_tree(os.path.join(op_root, "op_kernel"), os.path.join(tbe, test.op))
    for dep in test.deps:  # ${OP_NAME_DIR}/../<dep>
        _link_tree(os.path.join(os.path.dirname(op_root), dep, "op_kernel"), os.path.join(tbe, dep))
    if siblings and os.path.isdir(siblings):  # the other operators' kernels, as the shared build has them
        for name in os.listdir(siblings):
            if not os.path.lexists(os.path.join(tbe, name)):
                os.symlink(os.path.join(siblings, name), os.path.join(tbe, name))
    notes = []
    tiling = test.tiling_def
    if tiling is None and test.host_tiling:
        from mpnpu.ascendc.tiling import kernel_tiling_header

        try:
            text = kernel_tiling_header(test.host_tiling, op_type=op_type(corpus.repo, test.op))
            own = _defines_its_own(test.ut_dir, text)
            if own:
                notes.append(f"no tiling header made from {os.path.relpath(test.host_tiling, corpus.repo)}: the test "
                             f"folder's {own} defines its tiling structs itself")
            else:
                tiling = os.path.join(root, f"{test.op}_tiling_data.h")
                with open(tiling, "w") as f:
                    f.write(text)
                notes.append(f"tiling header made by mpnpu from {os.path.relpath(test.host_tiling, corpus.repo)}")
        except UsageError as e:
            notes.append(f"no tiling header: {e}")
    elif tiling is None:
        notes.append(test.tiling_note)
    kernel = None if test.kernel is None else os.path.join(tbe, test.op, test.kernel)
    dirs = [os.path.join(corpus.repo, "tests", "ut", "op_kernel"), os.path.join(corpus.repo, "tests", "ut", "common"),
            os.path.join(corpus.repo, "conv", "conv3d_backprop_input_v2", "op_kernel"), os.path.join(tbe, test.op),
            tbe, os.path.join(tbe, "common"), *_opbase_dirs(corpus), *test.include_dirs]
    after = [os.path.join(op_root, "op_kernel"),
             *(os.path.join(os.path.dirname(op_root), dep, "op_kernel") for dep in test.deps)]
    return Staged(root, tbe, kernel, tiling, tuple(dirs), tuple(notes), tuple(d for d in after if os.path.isdir(d)))


def _defines_its_own(ut_dir: str, tiling_text: str) -> str:
    """The header of the test folder that defines a struct ``tiling_text`` declares itself and that
    the test's own sources include (a test that brings its own tiling structs under another name
    than ``<op>_tiling_def.h``), or "": a header made from op_host as well would define them twice.
    A header no test source includes does not count: the test then takes the structs from the
    header made from op_host, as the repository's flow gives them (index_put_with_sort)."""
    structs = set(re.findall(r"\bBEGIN_TILING_DATA_DEF\((\w+)\)", tiling_text))
    included: set[str] = set()
    for src in glob.glob(os.path.join(glob.escape(ut_dir), "*.cpp")):
        with contextlib.suppress(OSError), open(src, encoding="utf-8", errors="replace") as f:
            included.update(os.path.basename(h) for h in re.findall(r'^\s*#\s*include\s*"([^"]+)"', f.read(), re.M))
    for path in sorted(glob.glob(os.path.join(glob.escape(ut_dir), "*.h"))):
        if os.path.basename(path) not in included:
            continue
        try:
            with open(path, encoding="utf-8", errors="replace") as f:
                text = f.read()
        except OSError:
            continue
        if any(re.search(rf"\bstruct\s+{name}\s*\{{", text) for name in structs):
            return os.path.basename(path)
    return ""


def _opbase_dirs(corpus: Corpus) -> list[str]:
    """OPBASE_INC_DIRS (cmake/modules/FindOPBASE.cmake)."""
    if not corpus.opbase:
        return []
    inc, pkg = os.path.join(corpus.opbase, "include"), os.path.join(corpus.opbase, "pkg_inc")
    return [inc, os.path.join(inc, "op_common"), os.path.join(inc, "op_common", "op_host"), pkg,
            os.path.join(pkg, "op_common"), os.path.join(pkg, "op_common", "op_host")]


# -- building a test ------------------------------------------------------------------------------------------------


@dataclass
class Builder:
    """Builds tests of one corpus into ``build_dir`` with one toolchain."""

    corpus: Corpus
    tool: Toolchain
    build_dir: str
    cache: ObjectCache = field(init=False)
    common_root: str = field(init=False)
    siblings: str = field(init=False)
    env: dict[str, str] = field(init=False)
    _shared: dict[str, Unit] = field(init=False, default_factory=dict)
    _lock: threading.Lock = field(init=False, default_factory=threading.Lock)
    stubs: bool = True  # compile units stopped by missing headers again with stand-ins for them
    is_user: Callable[[str], bool] = field(init=False)
    defined: DefinedNames = field(init=False, default_factory=DefinedNames)
    shown: Callable[[str], str] = field(init=False)

    def __post_init__(self) -> None:
        self.cache = ObjectCache(os.path.join(self.build_dir, "objects"))
        self.common_root = stage_common(self.corpus, self.build_dir)
        self.siblings = stage_siblings(self.corpus, self.build_dir, self.common_root)
        self.env = {**os.environ, "LC_ALL": "C"}
        self.is_user, self.shown = missing.user_path_rules(
            [INCLUDE_DIR, GTEST_DIR], [r for r in (self.corpus.repo, self.corpus.opbase, self.corpus.ops_tensor) if r])

    def shared_units(self) -> list[Unit]:
        """The helpers every test links and mpnpu's gtest main, compiled once."""
        with self._lock:
            if not self._shared:
                base = [*REPO_FLAGS, self.tool.opt, f"-I{GTEST_INCLUDE}",
                        f"-I{os.path.join(self.corpus.repo, 'tests', 'ut', 'op_kernel')}"]
                for rel in COMMON_SOURCES:
                    path = os.path.join(self.corpus.repo, rel)
                    if os.path.isfile(path):
                        self._shared[rel] = compile_unit(self.tool, self.cache, path, base, rel, self.env)
                self._shared["gtest_main"] = compile_unit(self.tool, self.cache, GTEST_MAIN, base,
                                                          "mpnpu gtest main", self.env)
            return list(self._shared.values())

    def flags(self, staged: Staged, test: UtTest) -> list[str]:
        """A test or kernel unit's flags: the repository's, the test's defines, its tiling header, its
        include folders, mpnpu's gtest and mpnpu's --cflags (their -I last)."""
        mp_includes = [f for f in self.tool.cflags if f.startswith("-I")]
        mp_other = [f for f in self.tool.cflags if not f.startswith("-I")]
        # Without a tiling header the kernel's GET_TILING_DATA is the struct REGISTER_TILING_DEFAULT names
        # (the vendor's tooling would generate a header saying the same)
        tiling = (["-include", staged.tiling_include] if staged.tiling_include
                  else ["-DMPNPU_TILING_FROM_REGISTRATION"])
        return [*REPO_FLAGS, *FRAMEWORK_FLAGS, self.tool.opt, *mp_other, *test.defines(), *tiling,
                *[f"-I{d}" for d in staged.include_dirs], f"-I{GTEST_INCLUDE}", *mp_includes,
                *[f"-idirafter{d}" for d in staged.after_dirs]]

    def build(self, test: UtTest, link: bool = True) -> Build:
        """Compile every unit of ``test`` (all of them, so every missing name shows), then link."""
        start = time.monotonic()
        result = Build(test)
        staged = stage_test(self.corpus, test, self.build_dir, self.common_root, self.siblings)
        result.notes += staged.notes
        files = [*test.sources, *([staged.kernel] if staged.kernel else [])]
        if staged.tiling_include:
            files.append(staged.tiling_include)
        search = [d for d in (*staged.include_dirs, *staged.after_dirs) if os.path.isdir(d)]
        reached = reach(files, search)
        result.high_level_headers, result.high_level_names = list(reached.headers), list(reached.names)
        if staged.kernel:
            kernel_files = reach([staged.kernel], search).files
            result.kernel_mode = kernel_mode_of(list(kernel_files), parse_defines(test.options))
            result.notes.append(f"launches without SetKernelMode run as {result.kernel_mode} (the kernel type the "
                                "chip would launch it as; the CPU-debug default is mix)")
        if not test.sources:
            result.notes.append("no test source for this chip (cmake/ut.cmake finds no test_<op>*.cpp to build)")
            result.seconds = time.monotonic() - start
            return result
        result.notes += _cases_commented_out(test.sources)
        flags = self.flags(staged, test)
        sources = list(test.sources)
        if staged.kernel:
            if not os.path.isfile(staged.kernel):
                result.notes.append(f"no kernel source {test.kernel} in op_kernel/")
            else:
                sources.append(staged.kernel)
        for src in sources:
            unit_flags = [*flags, *_format_flags(src)]
            unit = compile_unit(self.tool, self.cache, src, unit_flags, self.shown(src), self.env)
            result.units.append(unit)
            if not unit.ok:
                found = missing.parse(unit.stderr, self.is_user, self.shown)
                result.missing += found
                result.error_count += missing.count_errors(unit.stderr)
                result.errors += missing.error_lines(unit.stderr, 20 - len(result.errors))
                if self.stubs and any(m.kind == "header" for m in found):
                    self._behind_headers(result, staged, src, unit_flags, found)
        if result.compiled and link:
            self._link(result)
        result.missing = missing.mark_corpus_names(_unique(result.missing), self.defined.union(reached.files))
        result.notes += _unregistered_dtypes(test, result.missing)
        result.seconds = time.monotonic() - start
        return result

    def _behind_headers(self, result: Build, staged: Staged, src: str, flags: list[str],
                        found: list[missing.Missing]) -> None:
        """A unit that stopped at a missing header, compiled again with an empty stand-in for each
        missing header (up to :data:`STUB_ROUNDS` times, as more show), so that the names behind
        them show too: those are marked ``behind_header``."""
        headers = {m.name for m in found if m.kind == "header"}
        root = os.path.join(staged.root, "stubs", _safe(os.path.basename(src)))
        seen = {(m.kind, m.name, m.where) for m in result.missing}
        for _ in range(STUB_ROUNDS):
            include = _stub_headers(root, headers)
            unit = compile_unit(self.tool, self.cache, src, [*flags, f"-I{include}"], self.shown(src), self.env)
            if unit.ok:
                result.stubbed_ok.append(self.shown(src))
                break
            more = [replace(m, behind_header=True) for m in missing.parse(unit.stderr, self.is_user, self.shown)]
            fresh = [m for m in more if (m.kind, m.name, m.where) not in seen]
            seen |= {(m.kind, m.name, m.where) for m in fresh}
            result.missing += fresh
            new_headers = {m.name for m in more if m.kind == "header"} - headers
            if not new_headers:
                break
            headers |= new_headers
        then = "it compiles then" if self.shown(src) in result.stubbed_ok else "it still fails"
        result.notes.append(f"{self.shown(src)} compiled again with empty stand-ins for {', '.join(sorted(headers))}: "
                            f"{then}")

    def _link(self, result: Build) -> None:
        shared = [u for u in self.shared_units() if u.ok]
        left_out = [u.source for u in self.shared_units() if not u.ok]
        objects = [u.object for u in result.units] + [u.object for u in shared]
        out_dir = os.path.join(self.build_dir, "bin")
        os.makedirs(out_dir, exist_ok=True)
        binary = os.path.join(out_dir, _safe(result.test.id))
        cmd = [*self.tool.cxx, *objects, *self.tool.libs, "-ldl", "-o", binary]
        h = hashlib.sha256(json.dumps([self.tool.identity, cmd]).encode())
        for o in objects:
            h.update((_digest_file(o) or "").encode())
        stamp = f"{binary}.key"
        key = h.hexdigest()
        try:
            with open(stamp) as f:
                if f.read() == key and os.path.isfile(binary):
                    result.linked, result.link_cached, result.binary = True, True, binary
                    return
        except OSError:
            pass
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=LINK_TIMEOUT_S, env=self.env)
        except subprocess.TimeoutExpired:
            result.link_stderr = f"the link took longer than {LINK_TIMEOUT_S:g} s"
            return
        result.link_stderr = proc.stderr
        if proc.returncode != 0:
            if left_out:
                result.notes.append(f"test helpers that do not compile here were left out of the link: "
                                    f"{', '.join(left_out)}")
            result.missing += missing.parse(proc.stderr, self.is_user, self.shown)
            result.errors += [ln.strip() for ln in proc.stderr.splitlines() if "error" in ln or "undefined" in ln][:20]
            return
        with open(stamp, "w") as f:
            f.write(key)
        result.linked, result.binary = True, binary


def _unregistered_dtypes(test: UtTest, found: list[missing.Missing]) -> list[str]:
    """Why a kernel's ``DTYPE_<NAME>`` is undeclared, when the test's registration defines none: the
    device build derives those macros from the operator's definition, but the repository's
    unit-test build takes only AddOpTestCase's options, so such a test cannot build as registered."""
    wanted = sorted({m.name for m in found if m.kind == "name" and re.fullmatch(r"(?:ORIG_)?DTYPE_\w+", m.name)})
    given = {o[2:].split("=", 1)[0] for o in test.options if o.startswith("-D")}
    lacking = [n for n in wanted if n not in given]
    if not lacking:
        return []
    return [f"the kernel uses {', '.join(lacking)}, which its registration (AddOpTestCase at "
            f"{os.path.basename(test.cmake)}:{test.line}) does not define and the repository's unit-test "
            "build does not generate: the test cannot build as registered"]


_CASE = re.compile(r"^[ \t]*(//[ \t]*)?TEST(?:_F|_P)?[ \t]*\(", re.M)


def _cases_commented_out(sources: Sequence[str]) -> list[str]:
    """Why gtest will run no case: every TEST / TEST_F / TEST_P line of the test sources is commented
    out (a repository that disabled a test this way still registers it)."""
    active = commented = 0
    for src in filter(os.path.isfile, sources):
        with open(src, errors="replace") as f:
            marks = [m.group(1) for m in _CASE.finditer(f.read())]
        commented += sum(1 for c in marks if c)
        active += sum(1 for c in marks if not c)
    if active or not commented:
        return []
    return [f"every test case of the test source is commented out (its {commented} TEST/TEST_F lines start with //): "
            "gtest runs none"]


def _unique(items: list[missing.Missing]) -> list[missing.Missing]:
    seen: set[tuple[str, str, str]] = set()
    out = []
    for it in items:
        k = (it.kind, it.name, it.where)
        if k not in seen:
            seen.add(k)
            out.append(it)
    return out


def build_all(builder: Builder, tests: Sequence[UtTest], jobs: int,
              done: Callable[[Build], None] | None = None) -> list[Build]:
    """Build ``tests``, ``jobs`` at a time (each test's units one after another), calling ``done``
    with each build as it finishes; the builds in the order of ``tests``."""
    if tests:
        builder.shared_units()  # once, before the tests that link them
    results: dict[int, Build] = {}
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        futures = {pool.submit(builder.build, t): i for i, t in enumerate(tests)}
        try:
            for fut in concurrent.futures.as_completed(futures):
                b = fut.result()
                results[futures[fut]] = b
                if done is not None:
                    done(b)
        except BaseException:
            for f in futures:
                f.cancel()
            raise
    return [results[i] for i in range(len(tests))]
