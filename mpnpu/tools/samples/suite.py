"""All the samples of a tree: discover, build (several at a time), run each recipe, report."""

from __future__ import annotations

import collections
import concurrent.futures
import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from mpnpu import settings
from mpnpu.ascendc.build.compiler import cache_dir, find_compiler
from mpnpu.tools.folder_lock import hold_folder
from mpnpu.tools.samples.build import SampleBuild, build_sample
from mpnpu.tools.samples.discover import Sample, discover
from mpnpu.tools.samples.run import Step, missing_module, passed, run_dir, run_step


@dataclass(frozen=True)
class SamplesOptions:
    """What ``mpnpu samples`` was asked."""

    only: tuple[str, ...] = ()
    jobs: int = 1
    build_dir: str | None = None
    racecheck: bool = False
    step_timeout_s: float = 600.0
    launch_timeout_s: float = 300.0
    pipes: str = "kernel"
    pipe_latency_us: float | None = None
    no_auto_sync: bool = False  # MPNPU_NO_AUTO_SYNC=1: racecheck without the compiler's automatic syncs
    stall_grace_s: float | None = None  # MPNPU_STALL_GRACE (None: the default)


@dataclass
class SampleResult:
    """One sample's outcome."""

    sample: Sample
    build: SampleBuild | None = None
    steps: list[Step] = field(default_factory=list)

    @property
    def needs_module(self) -> str | None:
        """The Python package the sample's own scripts import and this interpreter lacks (its data or
        verify step stopped on the import): the sample was not tried, which is neither a pass nor a fail."""
        for st in self.steps:
            name = missing_module(st)
            if name:
                return name
        return None

    @property
    def status(self) -> str:
        if not self.sample.in_scope:
            return "out-of-scope"
        if self.build is None or not self.build.ok:
            return "build-failed"
        if self.needs_module:
            return "needs-package"
        if not self.steps or any(s.code != 0 for s in self.steps[:-1]):
            return "run-failed"
        if not self.sample.verify:
            last = self.steps[-1]
            if last.code != 0:
                return "run-failed"
            if self.sample.expect:  # (the program compares and prints the README's "test pass!")
                return "passed" if all(line in last.tail for line in self.sample.expect) else "failed"
            return "ran"  # (a sample that checks nothing itself: ran, with nothing to verify)
        return "passed" if passed(self.steps[-1]) else "failed"

    def to_dict(self) -> dict[str, Any]:
        s, b = self.sample, self.build
        reason = s.reason
        if self.needs_module:
            reason = (f"its scripts import the Python package {self.needs_module!r}, which this interpreter "
                      f"({sys.executable}) lacks: install it (pip install {self.needs_module.replace('_', '-')}) "
                      "to run the sample")
        return {"name": s.name, "status": self.status, "reason": reason, "arch": s.arch, "defines": s.defines,
                "build_s": round(b.seconds, 2) if b else None, "kernel_mode": b.kernel_mode if b else None,
                "missing": [m.__dict__ for m in b.missing] if b else [], "errors": b.errors if b else [],
                "steps": [{"argv": st.argv, "code": st.code, "seconds": round(st.seconds, 2), "tail": st.tail}
                          for st in self.steps]}


@dataclass
class SamplesRun:
    """Every sample's result and the totals."""

    tree: str
    results: list[SampleResult]

    def counts(self) -> dict[str, int]:
        c = collections.Counter(r.status for r in self.results)
        scope = [r for r in self.results if r.sample.in_scope]
        return {"found": len(self.results), "in_scope": len(scope),
                "with_verify": sum(1 for r in scope if r.sample.checked),
                "built": sum(1 for r in scope if r.build is not None and r.build.ok),
                "ran": sum(1 for r in scope if r.status in ("passed", "failed", "ran")),
                "passed": c["passed"], "failed": c["failed"], "ran_unverified": c["ran"],
                "run_failed": c["run-failed"], "build_failed": c["build-failed"],
                "needs_package": c["needs-package"]}

    def missing_names(self) -> list[tuple[str, int]]:
        """Each missing name or header and how many samples need it, most needed first."""
        c: collections.Counter[str] = collections.Counter()
        for r in self.results:
            if r.build is not None:
                c.update({m.name for m in r.build.missing})
        return c.most_common()

    @property
    def ok(self) -> bool:
        return all(r.status in ("passed", "ran", "out-of-scope", "needs-package") for r in self.results)

    def to_dict(self) -> dict[str, Any]:
        return {"tree": self.tree, "counts": self.counts(), "missing_names": self.missing_names(),
                "samples": [r.to_dict() for r in self.results]}


def _flags() -> tuple[list[str], list[str]]:
    out = subprocess.run([sys.executable, "-m", "mpnpu.ascendc", "--cflags"], capture_output=True, text=True,
                         check=True, timeout=900).stdout.split()
    libs = subprocess.run([sys.executable, "-m", "mpnpu.ascendc", "--libs"], capture_output=True, text=True,
                          check=True, timeout=900).stdout.split()
    return out, libs


def environment(options: SamplesOptions) -> dict[str, str]:
    """The environment every step of a sample runs in: this process's, with the run's controls as
    the CPU-debug runtime reads them (and none of the caller's MPNPU_* controls the options leave off)."""
    env = {**os.environ, "LC_ALL": "C", "PYTHONUNBUFFERED": "1"}
    for setting, value in ((settings.TIMEOUT, float(options.launch_timeout_s)), (settings.PIPES, options.pipes),
                           (settings.RACECHECK, options.racecheck), (settings.NO_AUTO_SYNC, options.no_auto_sync),
                           (settings.PIPE_LATENCY_US, options.pipe_latency_us),
                           (settings.STALL_GRACE, options.stall_grace_s)):
        settings.to_env(env, setting, value)
    return env


def run_samples(tree: str, options: SamplesOptions, progress: Callable[[SampleResult], None] | None = None,
                started: Callable[[int], None] | None = None) -> SamplesRun:
    """Build and run every in-scope sample of ``tree``; samples out of scope are listed with why."""
    samples = discover(tree, options.only)
    root = os.path.abspath(options.build_dir or os.path.join(cache_dir(), "samples"))
    results = [SampleResult(s) for s in samples]
    todo = [r for r in results if r.sample.in_scope]
    if not todo:
        if started is not None:
            started(0)
        return SamplesRun(os.path.abspath(tree), results)
    # (the build folder is this run's alone while it lasts: mpnpu.tools.folder_lock; taken before
    # the progress bar starts, so a refusal is the one line the command prints)
    with hold_folder(root, "mpnpu samples"):
        if started is not None:
            started(len(todo))
        return _run_samples(tree, options, root, results, todo, progress)


def _run_samples(tree: str, options: SamplesOptions, root: str, results: list[SampleResult],
                 todo: list[SampleResult], progress: Callable[[SampleResult], None] | None) -> SamplesRun:
    cflags, libs = _flags()
    cxx = find_compiler()
    env = environment(options)

    def build(r: SampleResult) -> SampleResult:
        out = os.path.join(root, "bin", r.sample.slug)
        r.build = build_sample(r.sample, out, cflags, libs, cxx)
        return r

    with concurrent.futures.ThreadPoolExecutor(max_workers=options.jobs) as pool:
        for r in pool.map(build, todo):
            if r.build is not None and r.build.ok:
                cwd = run_dir(r.sample, os.path.join(root, "run"))
                step_env = {**env, "MPNPU_DEFAULT_KERNEL_MODE": r.build.kernel_mode}
                for argv in (r.sample.gen, [r.build.program, *r.sample.run_args], r.sample.verify):
                    if not argv:
                        continue
                    step = run_step(argv, cwd, options.step_timeout_s, step_env)
                    r.steps.append(step)
                    if step.code != 0:
                        break
            if progress is not None:
                progress(r)
    return SamplesRun(os.path.abspath(tree), results)


def format_table(run: SamplesRun) -> str:
    """One line per sample in scope, then the totals and the most-missed names."""
    lines = [f"{'sample':<70} {'status':<13} build s"]
    for r in run.results:
        if r.sample.in_scope:
            lines.append(f"{r.sample.name:<70} {r.status:<13} {r.build.seconds if r.build else 0:7.1f}")
            if r.needs_module:
                lines.append(f"    its scripts need the Python package {r.needs_module!r} (pip install "
                             f"{r.needs_module.replace('_', '-')}); not run")
    c = run.counts()
    lines.append(f"{c['found']} samples found, {c['in_scope']} for this chip class: {c['built']} built, "
                 f"{c['ran']} ran, {c['passed']} of {c['with_verify']} passed their own check (verify script or "
                 "expected output)"
                 + (f", {c['needs_package']} not run for a Python package their scripts need"
                    if c["needs_package"] else ""))
    top = run.missing_names()[:10]
    if top:
        lines.append("most missed: " + ", ".join(f"{n} ({k})" for n, k in top))
    return "\n".join(lines)
