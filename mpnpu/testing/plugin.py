"""The pytest plugin: fixtures, the ``mpnpu`` marker and the ``--mpnpu-*`` options.

Registered through the ``pytest11`` entry point, so pytest imports this module in *every* test run
of an environment where mpnpu is installed. It must stay inert for suites that do not use it:

- importing it costs nothing beyond pytest, the standard library and the settings table its
  options come from (:mod:`mpnpu.settings`, standard library only; numpy, the runtime and the
  helpers are imported the first time a test uses a fixture or a helper);
- it registers options and the marker, nothing else: no header line, no output, no device, no
  signal handler until a test asks for ``mpnpu_device`` (or calls a helper);
- its hooks return at once for tests that carry no ``mpnpu`` marker when ``--mpnpu-racecheck``
  is off.

Disable it for one run with ``-p no:mpnpu``.
"""

from __future__ import annotations

import argparse
import inspect
import sys
from dataclasses import dataclass
from typing import Any

import pytest

from mpnpu.settings import BLOCK_DIM, INITCHECK, MUTATE_SYNCS, RACECHECK, REPEAT, SEED, SETTINGS, SYNCCHECK, Setting

MARKER = "mpnpu"
_MARKER_ARGS = ("block_dim", "options", "kernel_type", "repeat", "seed", "racecheck")
_DEVICES_MODULE = "mpnpu.testing.devices"


@dataclass
class PluginState:
    """What the plugin knows in one pytest run, kept in ``config.stash[STATE]`` (never in a module
    global: two runs in one process, as pytester's in-process runs are, each have their own).

    The device side (:mod:`mpnpu.testing.devices`) is handed it by the ``mpnpu_device`` fixture and
    before every test (if that side is loaded at all: the plugin never imports it itself).
    """

    block_dim: int | None = None  # --mpnpu-block-dim
    racecheck: bool = False  # --mpnpu-racecheck
    initcheck: bool = False  # --mpnpu-initcheck
    synccheck: bool = False  # --mpnpu-synccheck
    racecheck_active: bool = False  # True while a checked test body runs (racecheck, initcheck, synccheck)
    #: that test's mpnpu.racecheck.findings.FindingLog (initcheck, synccheck), made at its first traced launch
    check_log: Any = None
    checks: Any = None  # the run's mpnpu.racecheck.checks.TraceChecks, made at the first traced launch
    hazard_log: Any = None  # that test's mpnpu.racecheck.HazardLog, made at its first traced launch
    #: the run's mpnpu.racecheck.reuse.AnalysisCache (made at the first traced launch): a launch the
    #: same as one analysed before, in this test or another, but for its times reuses its analysis
    analyses: Any = None
    #: a run --mpnpu-mutate-syncs started (one mutant, or the baseline): its launches follow
    #: MPNPU_DROP_SYNC / MPNPU_SYNC_LOG / MPNPU_RACECHECK (mpnpu.testing.mutation)
    mutant: bool = False
    mutant_log: Any = None  # such a run's racecheck: every launch's hazards (mpnpu.racecheck.HazardLog)


    @property
    def checking(self) -> bool:
        """Whether launches are traced and checked (any of racecheck, initcheck, synccheck)."""
        return self.racecheck or self.initcheck or self.synccheck


#: where each run's PluginState lives: ``config.stash[STATE]``
STATE = pytest.StashKey[PluginState]()


@dataclass(frozen=True)
class TestSettings:
    """A test's mpnpu settings: its marker(s) merged, then the command line applied."""

    marked: bool
    block_dim: int | None
    options: Any  # mpnpu.runtime.config.RuntimeOptions or None (checked by the device side)
    kernel_type: Any  # a mpnpu.runtime.topology.KernelType, its value ("vector-only") or None
    seeds: tuple[int, ...]
    racecheck: bool

    __test__ = False  # not a test class, whatever pytest's collection rules say


#: the settings with a pytest option (mpnpu.settings), in the order --help lists them
OPTIONS = tuple(s for s in SETTINGS.values() if s.pytest)


def option_kwargs(setting: Setting[Any]) -> dict[str, Any]:
    """How the plugin adds ``setting``'s option: the setting's parser and help; not given, it is
    None (a switch: False), so that the marker's value, or the setting's default, applies."""
    if setting.switch:
        return {"action": "store_true", "default": False, "help": setting.text(setting.pytest_help)}
    return {"type": setting.parse, "default": None, "metavar": "N", "help": setting.text(setting.pytest_help)}


#: the option --mpnpu-mutate-syncs gives the pytest runs it starts (not for users: not in --help)
MUTANT_RUN = "--mpnpu-mutant-run"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("mpnpu", "mpnpu: inter-core race tests (mpnpu_device fixture, @pytest.mark.mpnpu)")
    for setting in OPTIONS:
        group.addoption(setting.pytest, **option_kwargs(setting))
    group.addoption(MUTANT_RUN, action="store_true", default=False, help=argparse.SUPPRESS)


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config: pytest.Config) -> int | None:
    """``--mpnpu-mutate-syncs``: the run is sync mutation testing of the selected tests, each run of
    them a pytest of its own (:mod:`mpnpu.testing.mutation`), instead of one run."""
    if not config.getoption(MUTATE_SYNCS.pytest) or config.getoption(MUTANT_RUN):
        return None
    from mpnpu.testing.mutation import mutate_test_run

    return mutate_test_run(config, MUTANT_RUN)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"mpnpu(block_dim=None, options=None, kernel_type=None, repeat={REPEAT.default}, "
        f"seed={SEED.default}, racecheck=True): "
        "settings of the mpnpu_device fixture (block_dim, RuntimeOptions, the cores a launch starts: "
        "'vector-only' for an AIV C++ kernel) and a repeat of the test with seeds "
        "seed..seed+repeat-1 (the mpnpu_seed fixture); racecheck=False exempts the test from "
        "--mpnpu-racecheck",
    )
    config.stash[STATE] = PluginState(block_dim=config.getoption(BLOCK_DIM.pytest),
                                      racecheck=bool(config.getoption(RACECHECK.pytest)),
                                      initcheck=bool(config.getoption(INITCHECK.pytest)),
                                      synccheck=bool(config.getoption(SYNCCHECK.pytest)),
                                      mutant=bool(config.getoption(MUTANT_RUN)))


def _share_state(config: pytest.Config) -> None:
    # Only if a test ever loaded the device side: an unrelated run never imports it.
    devices = sys.modules.get(_DEVICES_MODULE)
    if devices is not None:
        devices.use_plugin_state(config.stash[STATE])


def pytest_runtest_setup(item: pytest.Item) -> None:
    _share_state(item.config)


def _close_devices() -> None:
    # Only if a test ever made a device: an unrelated run never imports the device side.
    devices = sys.modules.get(_DEVICES_MODULE)
    if devices is not None:
        devices.close_shared()


@pytest.hookimpl(trylast=True)  # after session-scoped fixtures (which may use the device) are torn down
def pytest_sessionfinish(session: pytest.Session) -> None:
    _close_devices()
    log = session.config.stash[STATE].mutant_log
    if log is not None:  # what mutation testing reads of a survivor's run (mpnpu.tools.mutate)
        print(f"mpnpu: ====== SUMMARY: {len(log)} hazards in {log.launches_analyzed} launches", file=sys.stderr)


def pytest_unconfigure(config: pytest.Config) -> None:
    _close_devices()  # idempotent; covers runs that end without a session finish


# -- settings ---------------------------------------------------------------------------------


def _bad_marker(item: pytest.Item, message: str) -> None:
    pytest.fail(f"@pytest.mark.{MARKER} on {item.nodeid}: {message}", pytrace=False)


def _check_int(item: pytest.Item, name: str, value: Any, low: int) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < low:
        _bad_marker(item, f"{name} must be an integer >= {low}, got {value!r}")
    return int(value)


def settings_for(item: pytest.Item) -> TestSettings:
    """Merge the test's ``mpnpu`` markers (the closest wins: function over class over module)."""
    kwargs: dict[str, Any] = {}
    markers = list(item.iter_markers(MARKER))
    for m in reversed(markers):
        if m.args:
            _bad_marker(item, f"takes keyword arguments only ({', '.join(_MARKER_ARGS)}), got {m.args!r}")
        unknown = sorted(set(m.kwargs) - set(_MARKER_ARGS))
        if unknown:
            _bad_marker(item, f"unknown argument {', '.join(unknown)}; known: {', '.join(_MARKER_ARGS)}")
        kwargs.update(m.kwargs)
    config = item.config
    block_dim = kwargs.get("block_dim")
    if block_dim is not None:
        _check_int(item, "block_dim", block_dim, 1)
    repeat = _check_int(item, "repeat", kwargs.get("repeat", REPEAT.default), 1)
    seed = _check_int(item, "seed", kwargs.get("seed", SEED.default), 0)
    racecheck = kwargs.get("racecheck", True)
    if not isinstance(racecheck, bool):
        _bad_marker(item, f"racecheck must be True or False, got {racecheck!r}")
    if markers and config.getoption(REPEAT.pytest) is not None:
        repeat = config.getoption(REPEAT.pytest)
    replay = config.getoption(SEED.pytest)
    seeds = (replay,) if replay is not None else tuple(range(seed, seed + repeat))
    return TestSettings(
        marked=bool(markers),
        block_dim=block_dim,
        options=kwargs.get("options"),
        kernel_type=kwargs.get("kernel_type"),
        seeds=seeds,
        racecheck=config.stash[STATE].checking and racecheck,
    )


# -- fixtures ---------------------------------------------------------------------------------


@pytest.fixture
def mpnpu_device(request: pytest.FixtureRequest) -> Any:
    """The emulated device of this test process (:class:`mpnpu.runtime.device.Device`).

    One device per process, reused by every test that asks for the same block_dim and options and
    closed when the session ends (a test that asks for other settings gets a fresh one, and the
    previous one is closed first). block_dim comes from ``@pytest.mark.mpnpu(block_dim=N)``, else
    ``--mpnpu-block-dim``, else the tools' default (:data:`mpnpu.settings.BLOCK_DIM`, on every machine).
    """
    settings = settings_for(request.node)
    from mpnpu.errors import UsageError
    from mpnpu.runtime.topology import KernelType
    from mpnpu.testing.devices import kernel_type_named, shared_device, use_plugin_state

    use_plugin_state(request.config.stash[STATE])
    try:
        # the marker's kernel type, else the full mix 1:2 device (never whatever a helper left open
        # for a vector-only operator of an earlier test)
        kind = kernel_type_named(settings.kernel_type) or KernelType.MIX_1_2
        return shared_device(settings.block_dim, settings.options, kind)
    except UsageError as e:  # a bad block_dim or options: one line, not a traceback into mpnpu
        pytest.fail(f"mpnpu_device: {e}", pytrace=False)


@pytest.fixture
def mpnpu_seed(request: pytest.FixtureRequest) -> int:
    """The seed of this run of the test: the marker's ``seed`` (default 0), ``seed + i`` on
    repeat ``i`` of ``@pytest.mark.mpnpu(repeat=N)``, or ``--mpnpu-seed``."""
    return settings_for(request.node).seeds[0]


# -- running a test: repeats with seeds, racecheck ------------------------------------------


def _test_args(item: pytest.Function) -> dict[str, Any]:
    # What pytest's own pytest_pyfunc_call passes: the function's arguments, from its fixtures.
    return {name: item.funcargs[name] for name in item._fixtureinfo.argnames}


def _hazards_text(log: Any) -> str:
    from mpnpu.report.hazards import format_hazard_log  # only when a test failed on hazards

    n = len(log)
    return (f"mpnpu --mpnpu-racecheck: {n} GM hazard{'s' if n != 1 else ''} in launches made on the mpnpu "
            f"device during this test:\n{format_hazard_log(log)}")


def _findings_text(log: Any) -> str:
    from mpnpu.report.checks import format_finding_log  # only when a test failed on findings

    n = log.errors()
    return (f"mpnpu --mpnpu-initcheck/--mpnpu-synccheck: {n} finding{'s' if n != 1 else ''} in launches made on the "
            f"mpnpu device during this test:\n{format_finding_log(log)}")


def _replay_hint(item: pytest.Item, index: int, settings: TestSettings) -> str:
    seed = settings.seeds[index]
    return (
        f"mpnpu: failed on repeat {index + 1} of {len(settings.seeds)}, mpnpu_seed={seed}; "
        f"replay: pytest '{item.nodeid}' {SEED.pytest} {seed}"
    )


def _annotate(exc: BaseException, note: str) -> None:
    """Add ``note`` under the error pytest prints for ``exc``."""
    if isinstance(exc, pytest.fail.Exception) and not exc.pytrace:
        exc.msg = f"{exc.msg}\n{note}"  # printed alone, without a traceback (or notes)
    elif hasattr(exc, "add_note"):  # Python >= 3.11: pytest prints notes under the error
        exc.add_note(note)
    else:
        exc.args = (f"{exc.args[0] if exc.args else ''}\n{note}",) + tuple(exc.args[1:])


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> bool | None:
    """Run a marked test once per seed (or a racechecked test once), else leave it to pytest."""
    state = pyfuncitem.config.stash[STATE]
    if not state.checking and pyfuncitem.get_closest_marker(MARKER) is None:
        return None  # not ours: pytest's own call, untouched
    settings = settings_for(pyfuncitem)
    if len(settings.seeds) == 1 and not settings.racecheck:
        return None  # one run; the mpnpu_seed fixture already holds its seed
    if inspect.iscoroutinefunction(pyfuncitem.obj):
        pytest.fail("@pytest.mark.mpnpu(repeat=...) and --mpnpu-racecheck do not support async tests", pytrace=False)
    args = _test_args(pyfuncitem)
    for index, seed in enumerate(settings.seeds):
        if "mpnpu_seed" in args:
            args["mpnpu_seed"] = seed
        state.hazard_log = state.check_log = None
        state.racecheck_active = settings.racecheck
        try:
            pyfuncitem.obj(**args)
            log = state.hazard_log
            if log is not None and len(log):
                # The hazards are the whole story: no traceback into the plugin.
                pytest.fail(_hazards_text(log), pytrace=False)
            found = state.check_log
            if found is not None and found.errors():
                pytest.fail(_findings_text(found), pytrace=False)
        except (Exception, pytest.fail.Exception) as e:
            if len(settings.seeds) > 1:
                _annotate(e, _replay_hint(pyfuncitem, index, settings))
            raise
        finally:
            state.racecheck_active = False
            state.hazard_log = state.check_log = None
    return True
