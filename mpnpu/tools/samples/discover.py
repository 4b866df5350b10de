"""Finding a dev kit's kernel samples and reading each one's recipe from its own files.

A sample is a folder with a CMakeLists.txt whose ``add_executable`` builds ``.asc`` sources (kernel and
host ``main`` in one file), a ``scripts/`` folder, and a README whose shell block gives the recipe:
``cmake .. -D...``, ``python3 ../scripts/gen_data.py``, ``./demo``, ``python3 ../scripts/verify_result.py
...``. The chip it targets is its ``CMAKE_ASC_ARCHITECTURES`` (``dav-2201`` is this chip class): the
README's ``-DCMAKE_ASC_ARCHITECTURES=`` value, else the CMake cache default.
"""

from __future__ import annotations

import os
import re
import shlex
from dataclasses import dataclass, field

from mpnpu.errors import UsageError

#: the architecture of this chip class in the dev kit's CMake
THIS_ARCH = "dav-2201"
#: folders whose samples are the high-level API's (another conformance suite)
SKIPPED_FOLDERS = ("04_advanced_api",)

_EXECUTABLE = re.compile(r"add_executable\s*\(\s*(\S+)([^)]*)\)", re.S)
_CACHE_SET = re.compile(r'set\s*\(\s*(\w+)\s+"?([^"\s)]*)"?\s+CACHE', re.S)
_DEFINITIONS = re.compile(r"(?:add_definitions|add_compile_definitions|target_compile_definitions)\s*\(([^)]*)\)", re.S)
_BASH = re.compile(r"```(?:bash|shell|sh)\s*\n(.*?)```", re.S)


@dataclass
class Sample:
    """One sample and how its README builds and runs it."""

    name: str  # its folder, relative to the tree
    folder: str  # absolute
    program: str = "demo"  # the executable add_executable makes
    sources: list[str] = field(default_factory=list)  # absolute .asc / .cpp sources
    arch: str = ""
    defines: list[str] = field(default_factory=list)  # -DNAME=VALUE, with the README's cmake values
    gen: list[str] = field(default_factory=list)  # the data step's argv (python3 ../scripts/gen_data.py ...)
    run_args: list[str] = field(default_factory=list)  # the program's arguments
    verify: list[str] = field(default_factory=list)  # the verify step's argv
    #: the README's expected output ("test pass!"): what the program prints when its own check passed
    expect: list[str] = field(default_factory=list)
    reason: str = ""  # why it is out of scope ("" when in scope)

    @property
    def checked(self) -> bool:
        """Whether the sample checks its result: a verify step, or an expected output of the program."""
        return bool(self.verify or self.expect)

    @property
    def in_scope(self) -> bool:
        return not self.reason

    @property
    def slug(self) -> str:
        """A folder name for its build and run folders: its path in the tree with "__" for "/" (the
        folder's own name when the tree is the sample itself, whose path is ".")."""
        name = self.name if self.name not in ("", ".") else os.path.basename(os.path.normpath(self.folder))
        return name.replace(os.sep, "__")


def _strip_comments(text: str) -> str:
    return re.sub(r"#[^\n]*", "", text)


def _expand(text: str, shell: dict[str, str]) -> str:
    """``text`` with ``$NAME`` / ``${NAME}`` replaced by the shell block's own value of NAME, where it has one."""
    return re.sub(r"\$\{?(\w+)\}?", lambda m: shell.get(m.group(1), m.group(0)), text)


_IF = re.compile(r"^\s*(if|elseif|else|endif)\s*\((.*)\)\s*$", re.I)
_STREQUAL = re.compile(r'^\s*\$?\{?(\w+)\}?\s+STREQUAL\s+"?([^"\s]*)"?\s*$')
_EQUAL = re.compile(r'^\s*\$?\{?(\w+)\}?\s+EQUAL\s+"?(-?\d+)"?\s*$', re.I)
_SET = re.compile(r'^\s*set\s*\(\s*(\w+)\s+"?([^"\s)]*)"?\s*\)\s*$', re.I)


_OPTION = re.compile(r'^\s*option\s*\(\s*(\w+)\s+"[^"]*"\s+(\w+)\s*\)', re.I | re.M)
_BARE = re.compile(r"^\s*(NOT\s+)?\$?\{?(\w+)\}?\s*$", re.I)
_FALSE = {"", "0", "OFF", "NO", "FALSE", "N", "IGNORE", "NOTFOUND"}


def _holds(cond: str, variables: dict[str, str]) -> bool | None:
    """Whether an if() condition holds with ``variables``: ``VAR STREQUAL "value"``, ``VAR EQUAL number``
    (CMake's numeric comparison; false when the value is no number), or a bare ``VAR`` /
    ``NOT VAR`` (CMake's truth of its value); None for another form or an unknown variable."""
    c = _STREQUAL.match(cond)
    if c:
        return (variables.get(c.group(1)) == c.group(2)) if c.group(1) in variables else None
    e = _EQUAL.match(cond)
    if e:
        if e.group(1) not in variables:
            return None
        try:
            return int(variables[e.group(1)]) == int(e.group(2))
        except ValueError:
            return False
    b = _BARE.match(cond)
    if b and b.group(2) in variables:
        value = variables[b.group(2)].upper()
        true = value not in _FALSE and not value.endswith("-NOTFOUND")
        return true != bool(b.group(1))
    return None


def _live_lines(text: str, variables: dict[str, str], unknown_taken: bool) -> list[str]:
    """The lines of ``text`` outside any if(), or in a branch that may be taken with ``variables``: a branch
    known to hold, or one whose condition is unknown; with ``unknown_taken`` an unknown condition also
    counts as the branch taken (so the rest of its chain is not)."""
    kept: list[str] = []
    stack: list[list[bool]] = []  # per open if(): [this branch live, a branch already taken]
    for line in text.splitlines():
        m = _IF.match(line)
        if m:
            word, cond = m.group(1).lower(), m.group(2)
            if word == "endif":
                if stack:
                    stack.pop()
                continue
            holds = True if word == "else" else _holds(cond, variables)
            takes = holds is True or (unknown_taken and holds is None)
            if word == "if":
                stack.append([holds is not False, takes])
            elif stack:
                taken = stack[-1][1]
                stack[-1] = [not taken and holds is not False, taken or (not taken and takes)]
            continue
        if all(frame[0] for frame in stack):
            kept.append(line)
    return kept


def _known_live(text: str, variables: dict[str, str]) -> str:
    """``text`` without the lines of if() branches known not to be taken (a branch whose condition is
    unknown is kept, as every branch was before conditions were read)."""
    return "\n".join(_live_lines(text, variables, unknown_taken=False))


def _plain_sets(text: str, variables: dict[str, str]) -> dict[str, str]:
    """The ``set(NAME value)`` statements of a CMake file that apply with ``variables``: those outside any
    if(), and those in the branch of an ``if(VAR STREQUAL "value")`` chain that holds (a condition of
    another form counts as holding in its first branch only)."""
    found: dict[str, str] = {}
    for line in _live_lines(text, variables, unknown_taken=True):
        st = _SET.match(line)
        if st:
            found.setdefault(st.group(1), st.group(2))
    return found


_REGEX_MATCH = re.compile(r'^\s*string\s*\(\s*REGEX\s+MATCH\s+"([^"]*)"\s+(\w+)\s+"?\$\{(\w+)\}"?\s*\)\s*$',
                          re.I | re.M)


def _regex_matches(text: str, variables: dict[str, str]) -> dict[str, str]:
    """The ``string(REGEX MATCH "<regex>" OUT "${IN}")`` statements of a CMake file whose input is known
    (a sample's ``ARCH_NUM`` from ``CMAKE_ASC_ARCHITECTURES``): OUT is the regex's first match in IN."""
    found: dict[str, str] = {}
    for pattern, out, source in _REGEX_MATCH.findall(text):
        if source not in variables:
            continue
        try:
            m = re.search(pattern, variables[source])
        except re.error:
            continue
        found[out] = m.group(0) if m else ""
    return found


def expected_output(readme: str) -> list[str]:
    """The lines of the README's block of expected output: the first shell block every line of which
    says the program passed ("test pass!"), as the high-level API samples, which compare in the program,
    show their result; [] when there is none."""
    for block in _BASH.findall(readme):
        lines = [line.strip() for line in block.splitlines() if line.strip()]
        if lines and all("pass" in line.lower() for line in lines):
            return lines
    return []


def _recipe(readme: str) -> tuple[dict[str, str], list[str], list[str], list[str], str]:
    """From a README: the cmake -D values, the data step, the program's arguments, the verify step and
    the executable's name, from the first shell block that runs the program."""
    values: dict[str, str] = {}
    gen: list[str] = []
    run: list[str] = []
    verify: list[str] = []
    program = ""
    for block in _BASH.findall(readme):
        lines = [line.split("#", 1)[0].strip() for line in block.splitlines()]
        if not any(line.startswith("./") for line in lines):
            continue
        shell: dict[str, str] = {}  # the block's own assignments (SCENARIO_NUM=1), used as $SCENARIO_NUM
        for line in lines:
            for part in (p.strip() for p in line.split(";")):
                assigned = re.fullmatch(r"(?:export\s+)?(\w+)=(\S*)", part)
                if assigned:
                    shell[assigned.group(1)] = assigned.group(2)
                    continue
                part = _expand(part, shell)
                try:
                    argv = shlex.split(part)
                except ValueError:
                    continue
                if not argv:
                    continue
                if argv[0] == "cmake":
                    for a in argv[1:]:
                        m = re.fullmatch(r"-D(\w+)=(.*)", a)
                        if m:
                            values.setdefault(m.group(1), m.group(2))
                elif argv[0].startswith("python") and len(argv) > 1 and "verify" in argv[1] and not verify:
                    verify = ["python3", *argv[1:]]
                elif argv[0].startswith("python") and len(argv) > 1 and "gen" in argv[1] and not gen:
                    gen = ["python3", *argv[1:]]
                elif argv[0].startswith("./") and not program:
                    program, run = argv[0][2:], argv[1:]
        if program:
            break
    return values, gen, run, verify, program


def read_sample(tree: str, folder: str) -> Sample | None:
    """The sample in ``folder`` (None when the folder builds no ``.asc`` program)."""
    cmake = os.path.join(folder, "CMakeLists.txt")
    try:
        with open(cmake, errors="replace") as f:
            text = _strip_comments(f.read())
    except OSError:
        return None
    exe = _EXECUTABLE.search(text)
    if not exe:
        return None
    here = {"CMAKE_CURRENT_SOURCE_DIR": folder, "PROJECT_SOURCE_DIR": folder, "CMAKE_SOURCE_DIR": folder}
    sources = [os.path.join(folder, re.sub(r"\$\{(\w+)\}", lambda m: here.get(m.group(1), m.group(0)), s))
               for s in exe.group(2).split() if s.endswith((".asc", ".cpp"))]
    if not any(s.endswith(".asc") for s in sources):
        return None
    sample = Sample(os.path.relpath(folder, tree), folder, exe.group(1), sources)
    readme = ""
    for name in ("README.md", "README_en.md"):
        try:
            with open(os.path.join(folder, name), errors="replace") as f:
                readme = f.read()
            break
        except OSError:
            continue
    values, sample.gen, sample.run_args, sample.verify, program = _recipe(readme)
    sample.expect = expected_output(readme)
    cache = dict(_CACHE_SET.findall(text))
    sample.arch = values.get("CMAKE_ASC_ARCHITECTURES") or cache.get("CMAKE_ASC_ARCHITECTURES", "")
    options = {name: default for name, default in _OPTION.findall(text)}  # option(NAME "doc" OFF)
    variables = {**options, **cache, **values}
    variables = {**variables, **{k: v for k, v in _plain_sets(text, variables).items() if k not in variables}}
    variables = {**variables, **{k: v for k, v in _regex_matches(text, variables).items() if k not in variables}}
    for group in _DEFINITIONS.findall(_known_live(text, variables)):
        for token in group.split():
            if token in ("PRIVATE", "PUBLIC", "INTERFACE", sample.program):
                continue
            token = re.sub(r"\$\{(\w+)\}", lambda m: variables.get(m.group(1), ""), token)
            sample.defines.append(token if token.startswith("-D") else f"-D{token}")
    if any(part in SKIPPED_FOLDERS for part in sample.name.split(os.sep)):
        sample.reason = "a high-level API sample (04_advanced_api): not this suite's"
    elif sample.arch != THIS_ARCH:
        sample.reason = f"targets {sample.arch or 'no architecture'}, not {THIS_ARCH} (this chip class)"
    elif not program:
        sample.reason = "its README has no shell block that runs the program"
    return sample


def discover(tree: str, only: tuple[str, ...] = ()) -> list[Sample]:
    """Every sample under ``tree`` (a dev kit checkout's examples folder or any folder of samples), in
    path order; ``only``: names or folder suffixes to keep (a usage error if one matches nothing)."""
    tree = os.path.abspath(tree)
    if not os.path.isdir(tree):
        raise UsageError(f"no such folder: {tree}")
    found = []
    for root, dirs, files in os.walk(tree):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in ("build", "scripts"))
        if "CMakeLists.txt" in files:
            sample = read_sample(tree, root)
            if sample is not None:
                found.append(sample)
    if only:
        kept = [s for s in found if any(s.name == o or s.name.endswith(os.sep + o) for o in only)]
        for o in only:
            if not any(s.name == o or s.name.endswith(os.sep + o) for s in kept):
                raise UsageError(f"--samples {o}: no such sample under {tree}")
        found = kept
    return found
