"""Kernels used by the runtime tests (tests/test_runtime_*.py).

Each is a module-level function run on every core by ``Device.launch("tests.kernels_for_tests:name", ...)``.
Results are written to GM through ``data_copy`` so that a test can check what each core saw.
Values written are distinct per core and per round, and GM tensors are filled with -1 by the test
before the launch, so a read that happened before the matching write shows up as -1 (or as a wrong
value), never as a coincidentally right one.

Fault kernels never wait forever: a "spin" is a bounded sleep loop, so that even a runtime that
failed to kill its cores would not leave a process behind for long.
"""

from __future__ import annotations

import os
import time

import numpy as np

from mpnpu import api
from mpnpu.api import TPosition

#: upper bound of every deliberate spin (the runtime kills the core long before)
SPIN_LIMIT_S = 30.0


# -- helpers -------------------------------------------------------------------------------------


def put(dst, values, dtype=np.int32) -> None:
    """Write ``values`` to the GM view ``dst`` (shapes must match in size)."""
    arr = np.asarray(values, dtype=dtype).reshape(dst.shape)
    api.data_copy(dst, np.ascontiguousarray(arr))


def get(src, dtype=np.int32) -> np.ndarray:
    """Read a GM view into a fresh local array."""
    out = np.empty(src.shape, dtype=dtype)
    api.data_copy(out, src)
    return out


def spin(seconds: float = SPIN_LIMIT_S) -> None:
    """Keep this core busy (never blocked in a sync) for a bounded time."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        time.sleep(0.005)


def _vec_ai_core() -> tuple[int, int]:
    """(AI core, sub) of a vector core."""
    v = api.get_block_idx()
    return v // 2, api.get_subblock_idx()


# -- cross-core flags ------------------------------------------------------------------------------


def mode2_cube_to_vectors(data, seen, rounds: int) -> None:
    """Cube k writes data[k, j] then sets flag 5 (mode 2), ``rounds`` times without waiting.

    Each vector core of AI core k waits ``rounds`` times; after its j-th wait it reads data[k, j]
    and writes it to seen[v, j]. The j-th wait pairs with the j-th set: seen[v, j] must be
    data[k, j]'s value, 1000*k + j + 1.
    """
    if api.is_aic():
        k = api.get_block_idx()
        for j in range(rounds):
            put(data[k, j:j + 1], [1000 * k + j + 1])
            api.cross_core_set_flag(5, mode=2)
    else:
        v = api.get_block_idx()
        k = v // 2
        for j in range(rounds):
            api.cross_core_wait_flag(5, mode=2)
            put(seen[v, j:j + 1], get(data[k, j:j + 1]))


def mode2_cube_waits_both(data, seen, late_sleep_s: float) -> None:
    """A mode-2 cube wait returns only after *both* vector cores of its AI core have set.

    Sub 0 writes data[v] and sets flag 6 twice (two rounds, slots 2k+0 and 2k+0+2*nv) right away.
    Sub 1 is delayed: it first waits for a mode-1 handshake that sub 0 only joins after its two
    sets, then sleeps ``late_sleep_s``, and only then writes its slots and sets flag 6 twice.
    The cube waits on flag 6 twice; after each wait it reads the round's slots of both vector
    cores and writes them to seen[k, round, 0..1]. With one counter per sender both reads see
    written values; a cube wait that counted "two sets" regardless of sender would return after
    sub 0's two sets and read -1 for sub 1.
    """
    nv = 2 * api.get_block_num()
    if api.is_aic():
        k = api.get_block_idx()
        for r in range(2):
            api.cross_core_wait_flag(6, mode=2)
            for sub in range(2):
                v = 2 * k + sub
                put(seen[k, r, sub:sub + 1], get(data[r * nv + v:r * nv + v + 1]))
        return
    v = api.get_block_idx()
    if api.get_subblock_idx() == 0:
        for r in range(2):
            put(data[r * nv + v:r * nv + v + 1], [100 * r + v + 1])
            api.cross_core_set_flag(6, mode=2)
        api.cross_core_set_flag(3, mode=1)
        api.cross_core_wait_flag(3, mode=1)
    else:
        api.cross_core_set_flag(3, mode=1)
        api.cross_core_wait_flag(3, mode=1)
        time.sleep(late_sleep_s)
        for r in range(2):
            put(data[r * nv + v:r * nv + v + 1], [100 * r + v + 1])
            api.cross_core_set_flag(6, mode=2)


def mode2_ping_pong(data, seen, rounds: int) -> None:
    """Cube and its vectors alternate: cube writes round j and sets 5; vectors wait, read, write
    back their own value and set 6; cube waits 6 and reads both vectors' values of round j."""
    if api.is_aic():
        k = api.get_block_idx()
        for j in range(rounds):
            put(data[k, j:j + 1], [1000 * k + j + 1])
            api.cross_core_set_flag(5, mode=2)
            api.cross_core_wait_flag(6, mode=2)
            # both vectors have written seen[2k+sub, j]; echo their sum into data[k, rounds + j]
            both = get(seen[2 * k:2 * k + 2, j])
            put(data[k, rounds + j:rounds + j + 1], [int(both.sum())])
    else:
        v = api.get_block_idx()
        k = v // 2
        for j in range(rounds):
            api.cross_core_wait_flag(5, mode=2)
            put(seen[v, j:j + 1], get(data[k, j:j + 1]) + api.get_subblock_idx())
            api.cross_core_set_flag(6, mode=2)


def mode1_pairs(data, seen, rounds: int, late_sub: int, late_sleep_s: float) -> None:
    """Mode 1 between the two vector cores of one AI core: each writes data[v, j], sets flag 2
    (mode 1), waits flag 2, then reads its partner's data[partner, j] into seen[v, j].

    Sub ``late_sub`` sleeps before writing, so its partner's wait must block until the late set.
    Cube cores do nothing.
    """
    if api.is_aic():
        return
    v = api.get_block_idx()
    sub = api.get_subblock_idx()
    partner = v ^ 1
    for j in range(rounds):
        if sub == late_sub and late_sleep_s:
            time.sleep(late_sleep_s)
        put(data[v, j:j + 1], [100 * v + j + 1])
        api.cross_core_set_flag(2, mode=1)
        api.cross_core_wait_flag(2, mode=1)
        put(seen[v, j:j + 1], get(data[partner, j:j + 1]))


def mode0_all(vec_data, vec_seen, cube_data, cube_seen, rounds: int, late_sleep_s: float) -> None:
    """Mode 0 across all cores of one type, cube and vector at once on the same flag id (4).

    Every core writes its slot of round j, sets flag 4 (mode 0) and waits flag 4; then it reads
    every slot of round j of its type into its row of seen. The last core of each type sleeps
    before writing, so every other core's wait must block until its set.
    """
    idx = api.get_block_idx()
    if api.is_aic():
        data, seen, n = cube_data, cube_seen, api.get_block_num()
    else:
        data, seen, n = vec_data, vec_seen, 2 * api.get_block_num()
    for j in range(rounds):
        if idx == n - 1 and late_sleep_s:
            time.sleep(late_sleep_s)
        put(data[j, idx:idx + 1], [1000 * j + idx + 1])
        api.cross_core_set_flag(4, mode=0)
        api.cross_core_wait_flag(4, mode=0)
        put(seen[idx, j], get(data[j]))


def set_flag_times(who: str, block: int, flag_id: int, mode: int, times: int) -> None:
    """One core (``who`` "cube"/"vector", block idx ``block``) sets a flag ``times`` times; no waits."""
    if (who == "cube") != api.is_aic() or api.get_block_idx() != block:
        return
    for _ in range(times):
        api.cross_core_set_flag(flag_id, mode=mode)


def wait_flag_once(who: str, block: int, flag_id: int, mode: int) -> None:
    """One core waits a flag once; nobody sets it."""
    if (who == "cube") != api.is_aic() or api.get_block_idx() != block:
        return
    api.cross_core_wait_flag(flag_id, mode=mode)


def learn_flag_mode(who: str, block: int, flag_id: int, out) -> None:
    """One core waits to learn the mode of ``flag_id``'s sets (a wait that names no mode, as a C++
    kernel's CrossCoreWaitFlag does) and writes it to out[0]; nobody sets it in this launch."""
    if (who == "cube") != api.is_aic() or api.get_block_idx() != block:
        return
    from mpnpu.runtime import kcontext

    put(out, [kcontext.flag_wait_mode(kcontext.current(), flag_id)])


def mode1_both_wait_first() -> None:
    """Vector pairs both wait on flag 2 (mode 1) before setting it: every running core is blocked."""
    if api.is_aiv():
        api.cross_core_wait_flag(2, mode=1)
        api.cross_core_set_flag(2, mode=1)


# -- SyncAll ----------------------------------------------------------------------------------


def sync_all_rounds(data, seen, rounds: int, late_core: int, late_sleep_s: float) -> None:
    """Every core writes data[j, core] then SyncAll, then reads round j's whole row into seen[core, j].

    Core numbering: cube k -> k, vector v -> block_dim + v (the core id).
    """
    n_cube = api.get_block_num()
    core = api.get_block_idx() if api.is_aic() else n_cube + api.get_block_idx()
    for j in range(rounds):
        if core == late_core and late_sleep_s:
            time.sleep(late_sleep_s)
        put(data[j, core:core + 1], [1000 * j + core + 1])
        api.sync_all()
        put(seen[core, j], get(data[j]))


def sync_aiv_rounds(data, seen, rounds: int, late_sleep_s: float) -> None:
    """Vector cores only: write data[j, v], SyncAll<true>, read round j's row. Cube cores return."""
    if api.is_aic():
        return
    v = api.get_block_idx()
    n = 2 * api.get_block_num()
    for j in range(rounds):
        if v == n - 1 and late_sleep_s:
            time.sleep(late_sleep_s)
        put(data[j, v:v + 1], [1000 * j + v + 1])
        api.sync_all(aiv_only=True)
        put(seen[v, j], get(data[j]))


def sync_aiv_on_cube() -> None:
    if api.is_aic():
        api.sync_all(aiv_only=True)


def named_sync(out) -> None:
    """Writes 1 to out[core] after a SyncAll named "S"; a launch can drop it."""
    api.sync_all(name="S")
    n_cube = api.get_block_num()
    core = api.get_block_idx() if api.is_aic() else n_cube + api.get_block_idx()
    put(out[core:core + 1], [1])


# -- atomics ----------------------------------------------------------------------------------


def atomic_add_vectors(acc, reps: int, dtype_name: str) -> None:
    """Every vector core adds (v + 1) [int32] or (v + 1) / 2 [float32] to every element, reps times."""
    if api.is_aic():
        return
    v = api.get_block_idx()
    if dtype_name == "int32":
        values = np.full(acc.shape, v + 1, dtype=np.int32)
    else:
        values = np.full(acc.shape, (v + 1) / 2, dtype=np.float32)
    api.set_atomic_add()
    for _ in range(reps):
        api.data_copy(acc, values)
    api.set_atomic_none()


# -- local memory, data_copy and GM views --------------------------------------------------------


_POSITION_OF = {"UB": TPosition.VECCALC, "L1": TPosition.A1, "L0A": TPosition.A2, "L0B": TPosition.B2,
                "L0C": TPosition.CO1}


def reserve_local(memory: str, sizes: list[int], on: str) -> None:
    """Core 0 of type ``on`` ("cube"/"vector") reserves ``sizes`` bytes of ``memory`` in turn."""
    if (on == "cube") != api.is_aic() or api.get_block_idx() != 0:
        return
    pipe = api.get_tpipe()
    for size in sizes:
        buf = pipe.init_buffer(_POSITION_OF[memory], size)
        assert buf.nbytes >= size


def tbuf_get_too_big() -> None:
    if api.is_aiv() and api.get_block_idx() == 0:
        buf = api.get_tpipe().init_buffer(TPosition.VECIN, 64)
        buf.get(32, "float32")  # 128 bytes from a 64-byte buffer


def data_copy_misuse(x, what: str) -> None:
    """Vector core 0 misuses data_copy: dtype / size mismatch, GM to GM, out-of-range GM index."""
    if not (api.is_aiv() and api.get_block_idx() == 0):
        return
    if what == "dtype":
        api.data_copy(np.zeros(x.shape, dtype=np.float32), x)  # x is int32
    elif what == "size":
        api.data_copy(np.zeros(x.size + 1, dtype=np.int32), x)
    elif what == "gm_to_gm":
        api.data_copy(x, x)
    elif what == "index":
        api.data_copy(np.zeros(1, dtype=np.int32), x[x.shape[0]])
    else:
        raise AssertionError(what)


def strided_views(m, col, out) -> None:
    """Vector core 0 reads column ``col`` of m (a strided view) into out[0], writes 7s into row 1."""
    if not (api.is_aiv() and api.get_block_idx() == 0):
        return
    column = get(m[:, col], np.float32)
    put(out, column, np.float32)
    put(m[1, ::2], np.full(m[1, ::2].shape, 7.0, dtype=np.float32), np.float32)


def empty_kernel() -> None:
    pass


def fill_kernel(t, value: int) -> None:
    """Vector core 0 fills t with ``value``."""
    if api.is_aiv() and api.get_block_idx() == 0:
        put(t, np.full(t.shape, value), np.int32)


def block_info(out) -> None:
    """Each core writes (type, block idx, sub idx, block num) to out[core id]."""
    n_cube = api.get_block_num()
    core = api.get_block_idx() if api.is_aic() else n_cube + api.get_block_idx()
    put(out[core], [0 if api.is_aic() else 1, api.get_block_idx(), api.get_subblock_idx(), api.get_block_num()])


# -- faults -------------------------------------------------------------------------------------


def raise_on(vector_block: int, sync_first: bool) -> None:
    """Vector core ``vector_block`` raises ValueError; the others (optionally) wait in a SyncAll."""
    if api.is_aiv() and api.get_block_idx() == vector_block:
        _fail_here(vector_block)
    if sync_first:
        api.sync_all()


def _fail_here(v: int) -> None:
    raise ValueError(f"boom from vector block {v}")


def exit_on(vector_block: int, code: int) -> None:
    """Vector core ``vector_block`` calls os._exit(code) while the others wait in a SyncAll."""
    if api.is_aiv() and api.get_block_idx() == vector_block:
        os._exit(code)
    api.sync_all()


def skip_sync_on(vector_block: int) -> None:
    """Vector core ``vector_block`` returns without reaching the SyncAll every other core waits in."""
    if api.is_aiv() and api.get_block_idx() == vector_block:
        return
    api.sync_all()


def skip_second_aiv_sync(vector_block: int) -> None:
    """All vectors pass one SyncAll<true>; vector ``vector_block`` skips the second one."""
    if api.is_aic():
        return
    api.sync_all(aiv_only=True)
    if api.get_block_idx() == vector_block:
        return
    api.sync_all(aiv_only=True)


def victim_spins(victim_core_id: int) -> None:
    """Core ``victim_core_id`` spins (bounded) while every other core blocks in a SyncAll."""
    n_cube = api.get_block_num()
    core = api.get_block_idx() if api.is_aic() else n_cube + api.get_block_idx()
    if core == victim_core_id:
        spin()
        return
    api.sync_all()


def spin_on(core_id: int, marker: str = "") -> None:
    """Core ``core_id`` spins (bounded); the others return at once. Optionally touches ``marker``."""
    n_cube = api.get_block_num()
    core = api.get_block_idx() if api.is_aic() else n_cube + api.get_block_idx()
    if core == core_id:
        if marker:
            with open(marker, "w") as f:
                f.write(str(os.getpid()))
        spin()


def block_in_sync_all(marker: str) -> None:
    """Cube 0 touches ``marker`` and spins (bounded); every other core blocks in a SyncAll.

    Used by the parent-level fault helper: a signal to the parent lands while cores are inside
    Barrier.wait.
    """
    if api.is_aic() and api.get_block_idx() == 0:
        with open(marker, "w") as f:
            f.write(str(os.getpid()))
        spin()
        return
    # "About to wait": the test waits for every core's file before it signals the parent.
    with open(f"{marker}.{os.getpid()}", "w"):
        pass
    api.sync_all()


def vectors_set_cube_waits(flag_id: int = 6) -> None:
    """Both vector cores set flag ``flag_id`` (mode 2) once and finish; the cube waits once."""
    if api.is_aic():
        api.cross_core_wait_flag(flag_id, mode=2)
    else:
        api.cross_core_set_flag(flag_id, mode=2)


def partner_sets_waiter_forgets() -> None:
    """Vector sub 1 sets flag 2 (mode 1) and finishes; sub 0 waits without having set it."""
    if api.is_aiv():
        if api.get_subblock_idx() == 1:
            api.cross_core_set_flag(2, mode=1)
        else:
            api.cross_core_wait_flag(2, mode=1)


def copy_kernel(src, dst) -> None:
    """Vector core 0 copies GM src to GM dst through local memory."""
    if api.is_aiv() and api.get_block_idx() == 0:
        buf = api.alloc_local(TPosition.VECIN, src.shape, src.dtype)
        api.data_copy(buf, src)
        api.data_copy(dst, buf)


# -- kernel arguments that share a name with a launch option ----------------------------------------


def options_named(out, trace, timeout, drop_syncs=0, hold=0) -> None:
    """Core c writes trace + timeout + drop_syncs + hold + c: arguments named like launch options
    reach the kernel untouched (Device.launch passes every argument to the kernel)."""
    c = api.get_block_idx() + (0 if api.is_aic() else api.get_block_num())
    put(out[c:c + 1], [trace + timeout + drop_syncs + hold + c])


def set_many_flags(vector_block: int, ids: list[int]) -> None:
    """Vector core ``vector_block`` sets each flag id once in mode 0 and once in mode 2 (so its
    reply lists 2 * len(ids) flags); nobody waits."""
    if not api.is_aiv() or api.get_block_idx() != vector_block:
        return
    for flag_id in ids:
        api.cross_core_set_flag(flag_id, mode=0)
        api.cross_core_set_flag(flag_id, mode=2)


def hold_reply_lock(vector_block: int, seconds: float) -> None:
    """Vector core ``vector_block`` holds the reply board's lock for ``seconds`` while the others
    finish (their counts time out): the parent must still find every reply."""
    if not api.is_aiv() or api.get_block_idx() != vector_block:
        spin(0.2)  # (finish while the lock is held)
        return
    from mpnpu.runtime import kcontext

    lock = kcontext.current().sync.replies._lock
    lock.acquire()
    try:
        spin(seconds)
    finally:
        lock.release()


def report_spin_budget(out) -> None:
    """Each core writes how long its waits look before they sleep (microseconds) to out[core id]."""
    from mpnpu.runtime import kcontext

    ctx = kcontext.current()
    put(out[ctx.info.core_id], [round(ctx.spin_s * 1e6)])


def payload_length(out, payload: bytes) -> None:
    """Every core writes len(payload) (a launch command as large as its payload)."""
    put(out, [len(payload)] * out.size)


def first_look(seen, ws) -> None:
    """Vector core 0 records whether its output and workspace held only the unwritten byte (0xFF) when
    the case-run began (1.0: yes), then writes the workspace, as a case-run of another variant would."""
    if api.is_aiv() and api.get_block_idx() == 0:
        before_ws = np.empty(ws.shape, np.float32)
        before_seen = np.empty(seen.shape, np.float32)
        api.data_copy(before_ws, ws)
        api.data_copy(before_seen, seen)
        untouched = bool((before_ws.view(np.uint8) == 0xFF).all() and (before_seen.view(np.uint8) == 0xFF).all())
        api.data_copy(ws, np.full(ws.shape, 7.0, np.float32))
        api.data_copy(seen, np.full(seen.shape, 1.0 if untouched else 0.0, np.float32))


def handshake_on(flag_id: int, sync_all_first: bool) -> None:
    """The cube core sets ``flag_id`` (mode 2) for its vector cores, which wait for it; with
    ``sync_all_first``, every core calls SyncAll before."""
    if sync_all_first:
        api.sync_all()
    if api.is_aic():
        api.cross_core_set_flag(flag_id, mode=2)
    else:
        api.cross_core_wait_flag(flag_id, mode=2)


def late_to_sync_all(late_core: int, seconds: float) -> None:
    """Vector core ``late_core`` keeps running for ``seconds`` before the SyncAll every core calls."""
    if api.is_aiv() and api.get_block_idx() == late_core:
        spin(seconds)
    api.sync_all()


# -- hangs the watchdog must name (tests/test_hangs.py) ---------------------------------------------


def busy(seconds: float = SPIN_LIMIT_S) -> None:
    """Spin on the CPU (no kernel API call, no sleep) for a bounded time."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        pass


def hangs(mode: int, who: int) -> None:
    """The Python twin of tests/ascendc_kernels/hangs.cpp (mode 1: every core waits on flag 5 that
    nothing sets; 2: vector core ``who`` waits in mode 1 without its own set; 3: it spins while the
    others are in SyncAll; 4: it spins before any API call while the others finish; 5, this front end
    only: the cube core waits on its vector cores' flag 5; vector core 0 returns without setting it,
    vector core 1 waits on the cube core's flag 6)."""
    if mode == 5:
        if api.is_aic():
            api.cross_core_wait_flag(5, mode=2)  # hang: vector core 0 has returned
        elif api.get_block_idx() == 1:
            api.cross_core_wait_flag(6, mode=2)
        return
    if mode == 4:
        if api.is_aiv() and api.get_block_idx() == who:
            busy()  # hang: spins, no API call
        return
    me = api.is_aiv() and api.get_block_idx() == who
    if mode == 1:
        api.cross_core_wait_flag(5, mode=2)  # hang: nothing sets flag 5
    if mode == 2 and api.is_aiv():
        if me:
            api.cross_core_wait_flag(3, mode=1)  # hang: mode 1 needs this core's own set
        else:
            api.cross_core_set_flag(3, mode=1)
    if mode == 3:
        if me:
            busy()  # hang: spins before the SyncAll
        api.sync_all()  # the others wait here


def busy_with_calls(who: int, seconds: float) -> None:
    """Vector core ``who`` works for ``seconds`` calling the kernel API all along (progress), while
    the others wait in SyncAll: not a hang."""
    if api.is_aiv() and api.get_block_idx() == who:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            api.get_block_idx()
    api.sync_all()


# -- launches wider than the device's cores ----------------------------------------------------------


def wave_stamps(stamps, first_wave: int, hold_s: float) -> None:
    """Block b writes [start, end] (monotonic ns) into stamps[b]; the blocks below ``first_wave`` hold
    their core ``hold_s`` seconds, so a block the device starts only as a core frees starts after
    one of them ended."""
    b = api.get_block_idx()
    t0 = time.monotonic_ns()
    if b < first_wave:
        time.sleep(hold_s)
    put(stamps[b], [t0, time.monotonic_ns()], np.int64)


def report_recorder(out) -> None:
    """Each core writes 1 to out[core id] when its Python API records in C (mpnpu.runtime.native_trace),
    else 0."""
    from mpnpu.api import _trace
    from mpnpu.runtime import kcontext

    ctx = kcontext.current()
    native = _trace.record_local is not _trace.record_local_py and kcontext.call_site is not kcontext.call_site_py
    put(out[ctx.info.core_id], [int(native)])


def collector_state(out) -> None:
    """Vector core 0 writes whether the cyclic garbage collector runs during this launch (1) or not (0)."""
    import gc

    if api.is_aiv() and api.get_block_idx() == 0:
        put(out, [int(gc.isenabled())], np.int32)
