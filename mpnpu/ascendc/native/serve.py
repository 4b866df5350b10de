"""A core process's native serving loop: the launches a batch repeats, run without its Python.

::

    core process (mpnpu.runtime.core)          kernel library (include/mpnpu/native/serve.h)
    ───────────────────────────────────        ──────────────────────────────────────────
    a plain launch of a compiled kernel ran ──► register(handle, its launch struct)
    idle: NativeLoop.serve(fd) ──────────────► mpnpu_serve: wait, read, run, reply, wait, ...
       ◄── Served.MESSAGE: a frame for Python   (another command, an unknown kernel or window)
       ◄── Served.FAILED: the kernel's error    (raised here as the core process's own path raises it)
       ◄── Served.REPLY / IDLE / CLOSED
           (ServeResult.RESPIN: the CPUs changed; the budget is worked out here, the loop goes on)

The loop reaches its core only through the core's native facet (mpnpu.runtime.seam.NativeCore);
the window table's hash is the library's alone (windows go in through mpnpu_serve_window).

Why it exists: see include/mpnpu/native/serve.h. What the loop runs natively is exactly what the core
process's short path in :func:`mpnpu.ascendc.native.bridge.launcher` runs (every argument a GM tensor or
None; no trace, dropped sync, hold or inserted sync: the parent sends only such launches as native
commands, :func:`mpnpu.runtime.protocol.frame_native`), on the same launch struct, sync objects,
status board and reply board; only who reads the pipe changes. ``MPNPU_NATIVE_SERVE=0`` turns it
off (every launch goes through the core process's Python), e.g. to measure the two side by side.
"""

from __future__ import annotations

import ctypes

from mpnpu import settings
from mpnpu.errors import WireError
from mpnpu.runtime import wire
from mpnpu.runtime.protocol import LaunchCommand, LaunchDone, decode, segment_key
from mpnpu.runtime.seam import NativeCore, NativeServing, Served, ServeOutcome
from mpnpu.runtime.sync import ST_COLUMNS
from mpnpu.runtime.topology import FLAG_MODES

from . import abi, bridge
from .bridge import Library, NativeEntry
from .windows import WINDOWS

#: the environment variable that turns native serving off ("0"); read in the parent and the cores
NATIVE_SERVE_ENV = "MPNPU_NATIVE_SERVE"
#: slots of the window table: a power of two, at least twice the windows a process keeps
#: (WINDOWS.max_windows), so that a probe always ends at an empty slot
_WINDOW_SLOTS = 1 << max(13, (2 * WINDOWS.max_windows - 1).bit_length())
#: the frame buffer (a larger frame is read on by the core process)
_BUFFER_BYTES = 1 << 16


def enabled() -> bool:
    """Native serving is on (``MPNPU_NATIVE_SERVE`` is not "0")."""
    return settings.from_env(settings.NATIVE_SERVE)


class _ServeLaunch:
    """What the library's callbacks act on while the loop runs (a bridge.CallbackTarget): the
    launch running now (the library of the loop's current entry)."""

    def __init__(self, loop: "NativeLoop", core: NativeCore) -> None:
        self.loop = loop
        self.core = core
        self.pending: BaseException | None = None

    @property
    def lib(self) -> Library:
        return self.loop.entries[int(self.loop.s.entry)].lib

    def site(self, site_id: int) -> tuple[str, str]:
        lib = self.lib
        got = lib.site_names.get(site_id)  # (ids are the library's for good: bridge.Library.site_names)
        return got if got is not None else bridge._Launch(lib, self.core).site(site_id)

    def flag_was_set(self, mode: int, flag_id: int) -> None:
        # (the loop reports it with the flags the library set natively: the parent clears them all)
        self.loop.s.extra_used |= 1 << (mode * abi.FLAG_IDS + flag_id)


class NativeLoop:
    """This core process's native serving loop: its MpnpuServe, the kernels registered in it and the
    window table, kept in step with :data:`mpnpu.ascendc.native.windows.WINDOWS`."""

    def __init__(self, core: NativeCore, lib: bridge.Library) -> None:
        self.core = core
        self._fn = lib.serve
        self._insert_window = lib.serve_window
        self.s = s = abi.Serve()
        s.abi = abi.ABI_VERSION
        s.core_id = core.core_id
        self._table = (abi.ServeWindow * _WINDOW_SLOTS)()
        s.windows, s.window_mask = ctypes.addressof(self._table), _WINDOW_SLOTS - 1
        board = core.reply_board()
        s.rows, s.row_size, s.row_flags = board["rows"], board["row_size"], board["row_flags"]
        s.off_launch_id, s.off_elapsed = board["off_launch_id"], board["off_elapsed"]
        s.off_n_flags, s.off_flags = board["off_n_flags"], board["off_flags"]
        s.done, s.board_lock, s.n_cores = board["done"], board["lock"], board["parties"]
        s.status, s.st_columns = core.status_address(), ST_COLUMNS
        s.spin_cpus, s.spin_ns = core.spin_cpus, int(core.spin_s * 1e9)
        s.timeout_ns = int(core.sync_timeout_s * 1e9)
        self._buf = ctypes.create_string_buffer(_BUFFER_BYTES)
        s.buf, s.buf_cap = ctypes.addressof(self._buf), _BUFFER_BYTES
        self.entries: list[NativeEntry] = []  # by the entry index the loop reports
        self._windows_seen = (-1, 0)  # (WINDOWS.generation, keys of WINDOWS.mapped in the table)
        self._served = 0
        self._state = _ServeLaunch(self, core)
        self.usable = bool(s.board_lock) and self._insert_window is not None

    def register(self, handle: int, entry: NativeEntry) -> bool:
        """Let the loop run launches of kernel ``handle`` as ``entry`` says (once per handle:
        CoreContext.offer_native); False if it is full."""
        s = self.s
        if s.n_entries >= abi.SERVE_MAX_ENTRIES:
            return False
        e = s.entries[s.n_entries]
        e.handle = handle
        e.run = ctypes.cast(entry.lib.run_unconverted or entry.lib.run, ctypes.c_void_p).value
        e.launch = ctypes.addressof(entry.launch)
        e.slots, e.regions = ctypes.addressof(entry.slots), ctypes.addressof(entry.regions)
        e.n_params, e.memcheck = entry.n_params, 1 if entry.memcheck else 0
        e.tiling_key, e.sys_workspace_bytes = entry.tiling_key, entry.sys_workspace_bytes
        e.used = ctypes.addressof(entry.used) if entry.used is not None else None
        s.n_entries += 1
        self.entries.append(entry)
        return True

    def _sync_windows(self) -> None:
        """Put the windows mapped since the last call into the table (all again after an unmap)."""
        generation, added = self._windows_seen
        mapped = WINDOWS.mapped
        if generation != WINDOWS.generation:
            ctypes.memset(self._table, 0, ctypes.sizeof(self._table))
            added = 0
        if added == len(mapped):
            self._windows_seen = (WINDOWS.generation, added)
            return
        insert, s = self._insert_window, ctypes.addressof(self.s)
        for i, ((segment, offset, nbytes), addr) in enumerate(mapped.items()):
            if i < added:
                continue
            # (never full: the table has twice the slots of the windows a process keeps)
            insert(s, segment_key(segment), offset, nbytes, addr)
        self._windows_seen = (WINDOWS.generation, len(mapped))

    def serve(self, fd: int, replied: bool) -> ServeOutcome:
        """Serve launches natively until the core process must act (see mpnpu.runtime.seam.Served)."""
        s, core = self.s, self.core
        s.fd, s.replied = fd, 1 if replied else 0
        self._sync_windows()
        # The context as a plain launch leaves it (the callbacks read it): the last launch through
        # Python may have been traced or held, or a Python kernel's pipes asynchronous.
        core.make_plain()
        while True:
            # (the core process may have worked the budget out again since the last call)
            s.spin_cpus, s.spin_ns = core.spin_cpus, int(core.spin_s * 1e9)
            self._state.pending = None
            with bridge.callbacks_to(self._state):
                code = self._fn(ctypes.addressof(s))
            if code != abi.ServeResult.RESPIN:
                break
            core.refresh_spin()  # (the rule is mpnpu.runtime.spin's; the loop only saw the CPUs change)
            s.replied = 1
        if s.served != self._served:
            self._served = s.served
            for entry in self.entries:  # (the loop wrote these structs: the next Python launch rewrites them)
                entry.last[0], entry.last[1], entry.last[2] = None, -1, None
        if code == abi.ServeResult.FRAME:
            if s.frame_len == 0:  # (nothing read)
                return ServeOutcome(Served.MESSAGE, wire.recv(fd))
            data = ctypes.string_at(self._buf, s.buf_len)
            if s.buf_len > s.frame_len:  # (as the core process's own reading says)
                raise WireError("protocol error: more than one message in the pipe")
            if s.frame_len > s.buf_len:
                data += wire.read_exact(fd, s.frame_len - s.buf_len)
            return ServeOutcome(Served.MESSAGE, data[wire.HEADER.size:])
        if code == abi.ServeResult.FAILED:
            return ServeOutcome(Served.FAILED, (s.launch_id, self._failure()))
        if code == abi.ServeResult.REPLY:
            mask = s.flags_mask
            flags = tuple((bit // abi.FLAG_IDS, bit % abi.FLAG_IDS) for bit in range(len(FLAG_MODES) * abi.FLAG_IDS)
                          if mask >> bit & 1)
            return ServeOutcome(Served.REPLY, LaunchDone(s.launch_id, s.core_id, s.elapsed_s, None, flags))
        if code == abi.ServeResult.IDLE:
            return ServeOutcome(Served.IDLE)
        return ServeOutcome(Served.CLOSED)

    def _failure(self) -> BaseException:
        """The error of the native launch that failed, as the core process's short path raises it."""
        state = self._state
        pending, state.pending = state.pending, None
        command = decode(ctypes.string_at(self._buf, self.s.buf_len)[wire.HEADER.size:])
        assert isinstance(command, LaunchCommand)
        try:
            raise bridge.launch_error(state, pending, state.lib.params, command.args, self.s.rc)
        except BaseException as e:  # (raised, so that it carries a traceback as the Python path's does)
            return e


def register(core: NativeCore, handle: int, entry: NativeEntry, loop: NativeServing | None) -> NativeServing | None:
    """Register ``entry`` as kernel ``handle`` in this core's native loop (made by the first one);
    the loop, or ``loop`` as it was when native serving is off or impossible here."""
    if not enabled() or entry.lib.serve is None:
        return loop
    if loop is None:
        loop = NativeLoop(core, entry.lib)
        if not loop.usable:
            return None
    if not isinstance(loop, NativeLoop):
        return loop
    loop.register(handle, entry)
    return loop


__all__ = ["NATIVE_SERVE_ENV", "NativeLoop", "enabled", "register"]
