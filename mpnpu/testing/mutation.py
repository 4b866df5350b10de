"""``pytest --mpnpu-mutate-syncs``: sync mutation testing of a pytest suite that uses the mpnpu device.

The same engine as ``mpnpu mutate`` (:func:`mpnpu.tools.mutate.mutate_program`), with pytest as the
program: the selected tests run once (the baseline, which must pass) to learn the sync points their
launches execute, then once per sync point with that point dropped from every launch on the
device. A mutant is **killed** when a test fails; otherwise it **survived**, as untested (racecheck
finds a hazard that no test's assertion caught) or redundant (no hazard without it). Each run is a
pytest of its own, started with the plugin's ``--mpnpu-mutant-run``, whose device follows the
controls a CPU-debug program follows::

    MPNPU_SYNC_LOG=PATH    every launch traced, the sync points it executed appended to PATH
    MPNPU_DROP_SYNC=S      every launch drops sync point S
    MPNPU_RACECHECK=1      every launch traced and analysed; the run's hazard count printed at its end

A Python kernel's sync point is the ``name=`` of its sync call (an unnamed sync cannot be dropped,
so it is no mutant); a compiled kernel's is the FILE:LINE of the call. Nothing changes a kernel's
code or data: a mutant is the same tests with one sync call skipped.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import sys
from typing import Any, Sequence

import pytest

from mpnpu import settings

#: one pytest run of the tests may take this long before the mutant counts as killed by a time-out
RUN_TIMEOUT_S = 600.0


def child_args(args: Sequence[str]) -> list[str]:
    """The invocation's arguments less the mutation options (the runs it starts are plain runs)."""
    out: list[str] = []
    skip = False
    for a in args:
        if skip:
            skip = False
            continue
        if a == settings.MUTATE_SYNCS.pytest or a.startswith(settings.MIN_SCORE.pytest + "="):
            continue
        if a == settings.MIN_SCORE.pytest:
            skip = True  # (and its value)
            continue
        out.append(a)
    return out


def mutate_test_run(config: pytest.Config, mutant_run: str) -> int:
    """Run the mutation testing of the tests ``config``'s command line selects, each run started with
    the plugin's ``mutant_run`` option; print the table; the exit status (0, 1 below
    ``--mpnpu-min-score``, 4 for a baseline that fails, 2 interrupted)."""
    from mpnpu.directed.mutation import KILLED
    from mpnpu.errors import UsageError
    from mpnpu.tools.mutate import Mutant, mutate_program
    from mpnpu.tools.mutate_report import format_mutation

    argv = [sys.executable, "-m", "pytest", *child_args(config.invocation_params.args), mutant_run,
            "-p", "no:cacheprovider"]  # (a mutant's failures are not the suite's last failures)
    min_score = config.getoption(settings.MIN_SCORE.pytest)

    def said(done: int, total: int, m: Mutant) -> None:  # progress on long work: a line per mutant
        result = m.how if m.status == KILLED else f"SURVIVED ({m.survivor_class})"
        print(f"mpnpu --mpnpu-mutate-syncs: {done}/{total} {m.site} ({m.call}): {result}", file=sys.stderr, flush=True)

    try:
        report = mutate_program(argv, timeout_s=RUN_TIMEOUT_S, progress=said,
                                places=[(str(config.invocation_params.dir), os.environ)])
    except UsageError as e:
        print(f"mpnpu --mpnpu-mutate-syncs: {str(e).replace(argv[0], 'pytest', 1)}", file=sys.stderr)
        return int(pytest.ExitCode.USAGE_ERROR)
    print(format_mutation(report, min_score))
    if report.interrupted:
        return int(pytest.ExitCode.INTERRUPTED)
    return int(pytest.ExitCode.OK if min_score is None or report.score >= min_score else pytest.ExitCode.TESTS_FAILED)


def follow_mutation_controls(dev: Any, state: Any) -> None:
    """In a run ``--mpnpu-mutate-syncs`` started: make every launch on ``dev`` follow the controls in
    the module docstring (the wrapper shadows the bound method on this one instance, as
    ``--mpnpu-racecheck``'s does)."""
    from mpnpu.directed.mutation import log_sync_sites

    dropped: tuple[str, ...] | None = settings.from_env(settings.DROP_SYNC)
    drops = frozenset(dropped or ())
    log_path = settings.from_env(settings.SYNC_LOG)
    racecheck = bool(settings.from_env(settings.RACECHECK))
    if not (drops or log_path or racecheck):
        return
    original = dev.launch_with

    @functools.wraps(original)
    def launch_with(options: Any, kernel: Any, /, *args: Any, **kwargs: Any) -> Any:
        traced = bool(log_path) or racecheck
        changed = dataclasses.replace(options, trace=options.trace or traced, drop_syncs=options.drop_syncs | drops)
        result = original(changed, kernel, *args, **kwargs)
        if traced and result.trace is not None:
            if log_path:
                compiled = getattr(kernel, "__mpnpu_pipes__", "") == "own"  # (a compiled kernel's mark)
                log_sync_sites(result.trace, result.kernel, log_path, by_site=compiled)
            if racecheck:
                from mpnpu import racecheck as racecheck_mod

                if state.mutant_log is None:
                    state.mutant_log = racecheck_mod.HazardLog()
                state.mutant_log.add(racecheck_mod.analyze(result.trace))
        return result if options.trace else result._replace(trace=None)

    dev.launch_with = launch_with
