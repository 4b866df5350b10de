"""One emulated device per test process, shared by the ``mpnpu_device`` fixture and the helpers.

A device forks 3 x block_dim core processes once and serves every launch, so a test suite makes
one and reuses it (as the batch tool does). Only one is open at a time: a test asking for other
settings closes the current device before the new one is made, so a process never holds more
core processes than its block_dim says — what sizing pytest-xdist workers against CPUs relies on.

Cleanup: the plugin closes the device at the end of the session; a device a failed launch left
in an unknown state rebuilds its own pool; Ctrl-C inside a launch ends the cores at once (the
device does that); SIGTERM is turned into the same interrupt while a device is open, so a
terminated test run also stops its cores and unlinks its GM segments. Whatever happens,
:class:`~mpnpu.runtime.device.Device` closes itself when the interpreter exits.
"""

from __future__ import annotations

import dataclasses
import functools
import signal
import threading
from typing import Any

from mpnpu.errors import UsageError
from mpnpu.runtime.config import DEFAULT_BLOCK_DIM, DEFAULT_OPTIONS, LaunchOptions, RuntimeOptions
from mpnpu.runtime.device import Device
from mpnpu.runtime.gm import sweep_stale_segments
from mpnpu.runtime.procutil import Terminated
from mpnpu.runtime.topology import KernelType


def use_plugin_state(state: Any) -> None:
    """The pytest plugin hands over its run's state (``--mpnpu-block-dim``, ``--mpnpu-racecheck``,
    :class:`mpnpu.testing.plugin.PluginState`) before each test and in the fixture."""
    _PROVIDER.plugin = state


def plugin_block_dim() -> int:
    """``--mpnpu-block-dim`` if given, else :data:`~mpnpu.runtime.config.DEFAULT_BLOCK_DIM` (1 on
    every machine, as everywhere in mpnpu).

    A default that grew with the machine would change what a test sees (the incident's rate
    depends on block_dim as much as on crowding) and with pytest-xdist would be multiplied by the
    worker count; sizing the run is the job of ``-n`` (docs/pytest-plugin.md, "pytest-xdist").
    """
    state = _PROVIDER.plugin
    if state is not None and state.block_dim is not None:
        return int(state.block_dim)
    return DEFAULT_BLOCK_DIM


def _raise_terminated(signum: int, frame: Any) -> None:
    raise Terminated(signum)


class DeviceProvider:
    """Holds the process's one open device and makes a new one when other settings are asked for."""

    def __init__(self) -> None:
        self._device: Device | None = None
        self._key: tuple[int, RuntimeOptions, KernelType] | None = None
        self._previous_sigterm: Any = None
        self._swept = False
        #: the pytest plugin's state of the run in progress (mpnpu.testing.plugin.PluginState), if any
        self.plugin: Any = None

    def current(self) -> Device | None:
        """The open device, if any."""
        dev = self._device
        return dev if dev is not None and not dev.closed else None

    def get(self, block_dim: int | None = None, options: RuntimeOptions | None = None,
            kernel_type: KernelType = KernelType.MIX_1_2) -> Device:
        """The open device if it has these settings, else a new one (the old one closed first)."""
        if options is None:
            options = DEFAULT_OPTIONS
        if not isinstance(options, RuntimeOptions):
            raise UsageError(f"options must be a mpnpu.runtime.config.RuntimeOptions, got {options!r}")
        key = (block_dim if block_dim is not None else plugin_block_dim(), options, kernel_type)
        dev = self.current()
        if dev is not None and self._key == key:
            return dev
        self.close()
        if not self._swept:
            # Segments a SIGKILLed earlier run (of the suite, or of a tool) could not unlink.
            sweep_stale_segments()
            self._swept = True
        dev = Device(key[0], options=options, kernel_type=kernel_type)
        state = self.plugin
        if state is not None and state.checking:
            _trace_every_launch(dev, state)
        if state is not None and state.mutant:
            from mpnpu.testing.mutation import follow_mutation_controls

            follow_mutation_controls(dev, state)
        self._device, self._key = dev, key
        self._catch_sigterm()
        return dev

    def close(self) -> None:
        """Close the device (core processes ended, GM segments unlinked). Idempotent."""
        dev, self._device, self._key = self._device, None, None
        try:
            if dev is not None:
                dev.close()
        finally:
            self._restore_sigterm()

    def _catch_sigterm(self) -> None:
        # Python's default SIGTERM action ends the process without unwinding: no launch cleanup,
        # no session teardown, GM segments left in /dev/shm. Raising instead runs all of it. Only
        # where nobody installed a handler of their own, and only while a device is open.
        if self._previous_sigterm is not None or threading.current_thread() is not threading.main_thread():
            return
        if signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
            self._previous_sigterm = signal.signal(signal.SIGTERM, _raise_terminated)

    def _restore_sigterm(self) -> None:
        if self._previous_sigterm is None or threading.current_thread() is not threading.main_thread():
            return
        if signal.getsignal(signal.SIGTERM) is _raise_terminated:
            signal.signal(signal.SIGTERM, self._previous_sigterm)
        self._previous_sigterm = None


def _trace_every_launch(dev: Device, state: Any) -> None:
    """``--mpnpu-racecheck``: while a test body runs, trace each launch and merge its hazards.

    The wrapper shadows the bound method on this one instance, so the device stays a Device for
    everything that receives it (operators, the batch runner, isinstance checks).
    """
    original = dev.launch_with  # Device.launch goes through it too

    @functools.wraps(original)
    def launch_with(options: LaunchOptions, kernel: Any, /, *args: Any, **kwargs: Any) -> Any:
        if not state.racecheck_active:
            return original(options, kernel, *args, **kwargs)
        traced = options if options.trace else dataclasses.replace(options, trace=True)
        result = original(traced, kernel, *args, **kwargs)
        assert result.trace is not None  # traced just above
        if state.racecheck:
            from mpnpu import racecheck  # only for --mpnpu-racecheck runs
            from mpnpu.racecheck.reuse import AnalysisCache

            if state.hazard_log is None:
                state.hazard_log = racecheck.HazardLog()
            if state.analyses is None:
                state.analyses = AnalysisCache()
            state.hazard_log.add(state.analyses.analyze(result.trace), reused=state.analyses.last_reused)
        if state.initcheck or state.synccheck:
            from mpnpu.racecheck.checks import TraceChecks  # only for --mpnpu-initcheck/--mpnpu-synccheck runs
            from mpnpu.racecheck.findings import FindingLog

            if state.checks is None:
                state.checks = TraceChecks(initcheck=state.initcheck, synccheck=state.synccheck)
            if state.check_log is None:
                state.check_log = FindingLog()
            state.check_log.add(state.checks.run(result.trace))
        return result if options.trace else result._replace(trace=None)

    dev.launch_with = launch_with  # type: ignore[method-assign]


_PROVIDER = DeviceProvider()


def shared_device(block_dim: int | None = None, options: RuntimeOptions | None = None,
                  kernel_type: KernelType | None = None) -> Device:
    """This process's device with these settings (see :class:`DeviceProvider`).

    Without ``block_dim`` and ``options``: the device currently open (the one the ``mpnpu_device``
    fixture gave this test) if it has ``kernel_type``'s cores, else one with its block_dim (or the
    default) and ``kernel_type``. Outside pytest it stays open until :func:`close_shared` or the
    interpreter exits.
    """
    if block_dim is None and options is None:
        dev = _PROVIDER.current()
        if dev is not None:
            if kernel_type is None or dev.kernel_type is kernel_type:
                return dev
            block_dim, options = dev.block_dim, dev.options
    return _PROVIDER.get(block_dim, options, kernel_type or KernelType.MIX_1_2)


def close_shared() -> None:
    """Close this process's shared device, if one is open."""
    _PROVIDER.close()


def kernel_type_named(kind: Any) -> KernelType | None:
    """A marker's ``kernel_type``: a KernelType, its value ("vector-only", "mix 1:1", ...) or None."""
    if kind is None or isinstance(kind, KernelType):
        return kind
    for k in KernelType:
        if kind in (k.value, k.name):
            return k
    raise UsageError(f"kernel_type must be one of {', '.join(repr(k.value) for k in KernelType)}, got {kind!r}")
