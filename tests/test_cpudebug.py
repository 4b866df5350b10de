"""CPU-debug style host programs (our own) built with ``python -m mpnpu.ascendc --cflags --libs``:
GmAlloc / SetKernelMode / ICPU_RUN_KF on the multi-process device, faults and deadlocks ending the
program with one line and a non-zero status, and the environment controls."""

from __future__ import annotations

import functools
import os
import re
import signal
import subprocess
import sys

import psutil
import pytest

from tests.ascendc_util import KERNELS, line_of, needs_cxx
from tests.waiting import wait_for

pytestmark = [needs_cxx, pytest.mark.usefixtures("no_leaks")]
HOST = os.path.join(KERNELS, "cpudebug")


@functools.lru_cache(maxsize=None)
def _flags() -> tuple[str, ...]:
    out = subprocess.run([sys.executable, "-m", "mpnpu.ascendc", "--cflags", "--libs"], capture_output=True,
                         text=True, check=True, timeout=600)
    return tuple(out.stdout.split())


@functools.lru_cache(maxsize=None)
def program(name: str, out_dir: str, *also: str, cflags: tuple[str, ...] = ()) -> str:
    """The host program ``name`` (and the kernel sources ``also``, paths under tests/ascendc_kernels,
    compiled as translation units of their own) built with mpnpu's CPU-debug flags and ``cflags``."""
    exe = os.path.join(out_dir, name.replace(".cpp", "") + "".join(cflags))
    cxx = os.environ.get("CXX", "g++")
    sources = [os.path.join(HOST, name), *(os.path.join(KERNELS, a) for a in also)]
    proc = subprocess.run([cxx, *cflags, *sources, *_flags(), "-o", exe], capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr
    return exe


@pytest.fixture(scope="module")
def bindir(tmp_path_factory) -> str:
    return str(tmp_path_factory.mktemp("cpudebug"))


def _run(exe: str, timeout: float = 60, **env: str) -> subprocess.CompletedProcess:
    e = {k: v for k, v in os.environ.items() if not k.startswith("MPNPU_") or k == "MPNPU_CACHE_DIR"}
    return subprocess.run([exe], capture_output=True, text=True, timeout=timeout, env={**e, **env})


def test_the_flags_name_the_headers_and_the_host_library() -> None:
    flags = _flags()
    assert "-std=c++17" in flags and "-lmpnpu_cpudebug" in flags
    assert any(f.startswith("-I") and f.endswith(os.path.join("ascendc", "include")) for f in flags)
    assert any(f.startswith("-Wl,-rpath,") for f in flags)


@pytest.mark.slow
def test_a_vector_kernel_runs_on_vector_core_processes(bindir) -> None:
    r = _run(program("test_two_phase.cpp", bindir))
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "total 1024"
    assert r.stderr == ""  # unset controls: nothing printed


def test_a_mix_kernel_runs_one_cube_and_two_vector_processes_per_block(bindir) -> None:
    r = _run(program("test_mix.cpp", bindir))
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "rounds 7 7 7 7"


@pytest.mark.slow
def test_a_fault_ends_the_program_naming_the_core_and_the_kernel_line(bindir) -> None:
    r = _run(program("test_fault.cpp", bindir))
    assert r.returncode == 3
    line = line_of("faults.cpp", "mode == 1")
    # (whether the other core's failure is counted depends on when it noticed: not part of the check)
    run_line = line_of('cpudebug/test_fault.cpp', 'ICPU_RUN_KF')
    assert r.stderr.strip().startswith(
        f"mpnpu: ICPU_RUN_KF(faults) at test_fault.cpp:{run_line}: vector core 1 "
        f"(block 1) raised MemcheckError: illegal read of GM tensor x by DataCopy GM->local at "
        f"ascendc_kernels/faults.cpp:{line} (faults): bytes [224, 480) of its 256 bytes")
    assert len(r.stderr.strip().splitlines()) == 1


@pytest.mark.slow
def test_a_deadlock_ends_the_program_within_seconds(bindir) -> None:
    r = _run(program("test_deadlock.cpp", bindir), timeout=30)
    assert r.returncode == 3
    assert "waits on flag 3 (mode 2) that cube core 0 (block 0) can no longer set: it finished the kernel" in r.stderr


@pytest.mark.slow
def test_the_stall_window_comes_from_the_environment(bindir) -> None:
    r = _run(program("test_stall.cpp", bindir), timeout=60, MPNPU_STALL_GRACE="1.5")
    assert r.returncode == 3, r.stderr
    assert "deadlock: every running core has been blocked for 1.5 s" in r.stderr, r.stderr
    assert "aic0 in flag 4" in r.stderr and "aiv0 in flag 3" in r.stderr, r.stderr


@pytest.mark.slow
def test_dropped_sync_racecheck_and_repeat_from_the_environment(bindir) -> None:
    exe = program("test_two_phase.cpp", bindir)
    sync = f"two_phase.cpp:{line_of('two_phase.cpp', 'SyncAll();')}"
    r = _run(exe, MPNPU_DROP_SYNC=sync, MPNPU_RACECHECK="1")
    assert "Potential RAW hazard detected at GM tensor partials" in r.stderr
    assert "READ  by vector core 0 (block 0) in Total at ascendc_kernels/two_phase.cpp:" in r.stderr
    assert f"(sync point ascendc_kernels/{sync} was dropped)" in r.stderr
    failing = _run(exe, MPNPU_DROP_SYNC=sync, MPNPU_RACECHECK="fail")
    assert failing.returncode == 1
    clean = _run(exe, MPNPU_RACECHECK="fail")
    assert clean.returncode == 0 and "SUMMARY: 0 hazards" in clean.stderr
    assert "racecheck (assuming the compiler's automatic synchronisation;" in clean.stderr
    bare = _run(exe, MPNPU_RACECHECK="1", MPNPU_NO_AUTO_SYNC="1")
    assert "racecheck (assuming no automatic synchronisation (MPNPU_NO_AUTO_SYNC=1))" in bare.stderr
    rep = _run(exe, MPNPU_DROP_SYNC=sync, MPNPU_REPEAT="12")
    assert "of 12 runs differ from the first" in rep.stderr or "12 runs, every one gave" in rep.stderr
    fixed = _run(exe, MPNPU_REPEAT="12")
    assert "12 runs, every one gave the first run's results" in fixed.stderr


@pytest.mark.slow
def test_a_bad_control_ends_the_program_with_one_line_and_exit_2(bindir) -> None:
    """Each control is a setting of mpnpu.settings: a bad value is the program's usage error."""
    r = _run(program("test_two_phase.cpp", bindir), MPNPU_REPEAT="many")
    assert r.returncode == 2, r.stderr
    line = line_of("cpudebug/test_two_phase.cpp", "ICPU_RUN_KF(two_phase")
    assert r.stderr == (f"mpnpu: ICPU_RUN_KF(two_phase) at test_two_phase.cpp:{line}: MPNPU_REPEAT='many': "
                        "expected a positive integer, got 'many'\n")


@pytest.mark.slow
def test_the_timeline_is_written_where_the_environment_says(bindir, tmp_path) -> None:
    path = tmp_path / "launch.json"
    r = _run(program("test_two_phase.cpp", bindir), MPNPU_TIMELINE=str(path))
    assert r.returncode == 0 and path.is_file() and path.stat().st_size > 100


@pytest.mark.slow
@pytest.mark.parametrize("sig, code, name, ignored", [
    (signal.SIGINT, 130, "Ctrl-C", None),
    (signal.SIGTERM, 143, "SIGTERM", None),
    (signal.SIGTERM, 143, "SIGTERM", signal.SIGINT),  # started in the background of a non-interactive shell
    (signal.SIGINT, 130, "Ctrl-C", signal.SIGTERM),
])
def test_an_interrupted_program_ends_in_order_with_what_finished(bindir, sig, code, name, ignored) -> None:
    """Ctrl-C (to the whole process group, as a terminal sends it) or SIGTERM during a repeating
    ICPU_RUN_KF: exit 130 / 143, what finished and the interruption in a line each, no traceback,
    and no core process or segment left (the no_leaks fixture checks the pids and /dev/shm). Each
    signal is forwarded by itself: a program that starts with SIGINT ignored keeps ignoring a
    Ctrl-C (it runs on) and still ends in order on SIGTERM; one that ignores SIGTERM still ends in
    order on Ctrl-C."""
    exe = program("test_two_phase.cpp", bindir)
    e = {k: v for k, v in os.environ.items() if not k.startswith("MPNPU_") or k == "MPNPU_CACHE_DIR"}

    def start_with_signals() -> None:
        # the program's signals as asked, whatever this test process inherited (a background job
        # of a non-interactive shell starts with SIGINT ignored)
        for s in (signal.SIGINT, signal.SIGTERM):
            signal.signal(s, signal.SIG_IGN if s == ignored else signal.SIG_DFL)

    p = subprocess.Popen([exe], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env={**e, "MPNPU_REPEAT": "1000000"}, start_new_session=True,
                         preexec_fn=start_with_signals)
    try:
        # runs are under way once the program's 4 vector core processes have spent CPU time on them
        def cores_cpu() -> float:
            cores = psutil.Process(p.pid).children()
            return sum(c.cpu_times().user + c.cpu_times().system for c in cores) if len(cores) >= 4 else 0.0

        assert wait_for(lambda: cores_cpu() > 0.3, 60.0), "the cores never ran"
        if ignored == signal.SIGINT:
            os.killpg(p.pid, signal.SIGINT)  # ignored: the runs go on
            before = cores_cpu()
            assert wait_for(lambda: p.poll() is not None or cores_cpu() > before + 0.3, 60.0)
            assert p.poll() is None, "a program that ignores SIGINT ended on it"
        os.killpg(p.pid, sig)
        _, err = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.communicate()
    assert p.returncode == code, err
    lines = err.strip().splitlines()
    assert "Traceback" not in err and "resource_tracker" not in err and len(lines) == 2, err
    line = line_of("cpudebug/test_two_phase.cpp", "ICPU_RUN_KF(two_phase")
    where = f"ICPU_RUN_KF(two_phase) at test_two_phase.cpp:{line}"
    assert re.fullmatch(rf"mpnpu: {re.escape(where)}: \d+ of 1000000 runs finished \(interrupted\); .*", lines[0])
    assert lines[1] == f"mpnpu: interrupted ({name}) in {where}: every core process ended, nothing left behind"


@pytest.mark.slow
@pytest.mark.parametrize(("offset", "cflags"), [(100, ()), (400_000, ()), (100, ("-g",))])
def test_a_raw_read_past_a_gmalloc_block_faults_and_says_how_far_and_where(bindir, offset, cflags) -> None:
    """A kernel's raw pointer read `offset` floats past a 64 KiB GmAlloc'd tensor: the block is mapped page by
    page with nothing after it, so the core faults (it used to read 0 and go on), and the report says by how
    many bytes the address lies past which tensor, and where the read is: its kernel line when the program
    has a line table (-g), else its function and that the line needs -g."""
    exe = program("test_raw_overrun.cpp", bindir, cflags=cflags)
    e = {k: v for k, v in os.environ.items() if not k.startswith("MPNPU_") or k == "MPNPU_CACHE_DIR"}
    r = subprocess.run([exe, str(offset)], capture_output=True, text=True, timeout=60, env=e)
    assert r.returncode == 3, r.stdout + r.stderr
    line = line_of("cpudebug/test_raw_overrun.cpp", "ICPU_RUN_KF(overrun")
    assert r.stderr.startswith(f"mpnpu: ICPU_RUN_KF(overrun) at test_raw_overrun.cpp:{line}: vector core 0"), r.stderr
    assert "killed by signal SIGSEGV" in r.stderr
    assert f"({offset * 4} bytes past the end of x, 65536 bytes)" in r.stderr, r.stderr
    if cflags:
        read = line_of("cpudebug/test_raw_overrun.cpp", "the read past the end")
        assert f"; the faulting access is at cpudebug/test_raw_overrun.cpp:{read} (overrun);" in r.stderr, r.stderr
    else:
        assert "; the faulting access is in overrun (test_raw_overrun was built without -g: no line table" \
            in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and r.stdout == ""


@pytest.mark.slow
def test_drop_sync_takes_sync_call_sites_only_and_says_what_dropped_nothing(bindir) -> None:
    """MPNPU_DROP_SYNC=S1 (an operator's name, not a line) is one line and exit 2; so is a line of the
    program's own sources (the ICPU_RUN_KF file and what it includes) that holds no sync call, naming the
    nearest, as --drop-sync does (it ran with every sync in place, exit 0); an entry naming a file the
    program does not include is checked against the sources compiled into the program (a kernel built
    as a translation unit of its own): a line there with no sync call, or a file compiled into no part
    of the program, is refused the same way, and a real sync call there is dropped."""
    exe = program("test_two_phase.cpp", bindir)
    bad = _run(exe, MPNPU_DROP_SYNC="S1")
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1
    assert "'S1' is not a sync call site: give FILE:LINE of the sync call" in bad.stderr
    sync_all = line_of("two_phase.cpp", "SyncAll();")
    for entry in ("two_phase.cpp:1", "ascendc_kernels/two_phase.cpp:1"):
        no_sync = _run(exe, MPNPU_DROP_SYNC=entry)
        assert no_sync.returncode == 2 and len(no_sync.stderr.strip().splitlines()) == 1, no_sync.stderr
        assert (f"MPNPU_DROP_SYNC='{entry}': '{entry}' is not a sync point of the kernel (a sync call's FILE:LINE); "
                f"nearest: ascendc_kernels/two_phase.cpp:{sync_all} (SyncAll)") in no_sync.stderr, no_sync.stderr
        assert no_sync.stdout == ""  # (refused before the launch)
    sync = f"two_phase.cpp:{sync_all}"
    real = _run(exe, MPNPU_DROP_SYNC=sync, MPNPU_RACECHECK="1")
    assert "skipped nothing" not in real.stderr and "Potential RAW hazard" in real.stderr
    apart = program("test_apart.cpp", bindir, "two_phase.cpp")
    for entry in ("nofile.cpp:3", f"other/two_phase.cpp:{sync_all}"):
        nowhere = _run(apart, MPNPU_DROP_SYNC=entry, MPNPU_RACECHECK="1")
        assert nowhere.returncode == 2 and len(nowhere.stderr.strip().splitlines()) == 1, nowhere.stderr
        assert f"'{entry}' names a file compiled into no part of this program" in nowhere.stderr
        assert nowhere.stdout == ""
    no_sync = _run(apart, MPNPU_DROP_SYNC="two_phase.cpp:1")
    assert no_sync.returncode == 2 and "nearest: ascendc_kernels/two_phase.cpp:" in no_sync.stderr, no_sync.stderr
    dropped = _run(apart, MPNPU_DROP_SYNC=sync, MPNPU_RACECHECK="1")
    assert "skipped nothing" not in dropped.stderr and "Potential RAW hazard" in dropped.stderr, dropped.stderr


@pytest.mark.slow
def test_the_pipes_come_from_the_environment_and_decide_whether_a_pipe_race_can_change_an_output(bindir) -> None:
    """early_read.cpp without its DeQue: in order (MPNPU_PIPES=sync) the copy lands before the Add reads
    the tile, so the output is right; with asynchronous pipes the copy stays queued and the Add reads
    what the buffer held before. A bad value is one line and exit 2."""
    exe = program("test_early_read.cpp", bindir)
    deque = f"early_read.cpp:{line_of('early_read.cpp', 'a = in.DeQue<float>();')}"
    in_order = _run(exe, MPNPU_DROP_SYNC=deque, MPNPU_PIPES="sync")
    assert in_order.returncode == 0 and in_order.stdout.strip() == "wrong 0", in_order.stdout + in_order.stderr
    late = _run(exe, MPNPU_DROP_SYNC=deque, MPNPU_PIPES="async", MPNPU_PIPE_LATENCY_US="2000")
    assert late.returncode == 1 and late.stdout.startswith("wrong "), late.stdout + late.stderr
    kept = _run(exe, MPNPU_PIPES="async", MPNPU_PIPE_LATENCY_US="2000")
    assert kept.returncode == 0 and kept.stdout.strip() == "wrong 0", kept.stdout + kept.stderr
    bad = _run(exe, MPNPU_PIPES="fast")
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1
    assert "MPNPU_PIPES='fast': expected one of kernel, async, sync" in bad.stderr


@pytest.mark.slow
@pytest.mark.parametrize("nbytes,count,legal", [(18, 16, True), (40, 32, True), (18, 32, False), (64, 48, False)])
def test_memcheck_bounds_a_gmalloc_block_at_the_devices_32_byte_granule(bindir, nbytes, count, legal) -> None:
    """The device rounds every GM allocation up to a multiple of 32 bytes: a whole-block copy that covers
    the end of an 18-byte tensor reads its allocation and is legal; one byte past the rounded size is
    an illegal read named at the kernel's line."""
    exe = program("test_gm_granule.cpp", bindir)
    e = {k: v for k, v in os.environ.items() if not k.startswith("MPNPU_") or k == "MPNPU_CACHE_DIR"}
    r = subprocess.run([exe, str(nbytes), str(count)], capture_output=True, text=True, timeout=60, env=e)
    if legal:
        assert r.returncode == 0 and r.stdout == f"copied {count} halfs\n", r.stdout + r.stderr
        return
    assert r.returncode == 3, r.stdout + r.stderr
    line = line_of("cpudebug/test_gm_granule.cpp", "// the copy in")
    rounded = -(-nbytes // 32) * 32
    assert "illegal read of GM tensor x by DataCopy GM->local" in r.stderr, r.stderr
    assert f"test_gm_granule.cpp:{line}" in r.stderr and f"of its {rounded} bytes" in r.stderr, r.stderr


@pytest.mark.slow
def test_a_launch_with_other_argument_types_runs_on_the_core_processes_an_earlier_launch_forked(bindir) -> None:
    """ICPU_RUN_KF(k, ..., nullptr) after ICPU_RUN_KF(k, ..., tensor) is another instantiation of the launch;
    the core processes forked for the first must find what the second needs (it once failed with a
    TypeError from mpnpu's side because that table existed in the program only)."""
    r = _run(program("test_two_signatures.cpp", bindir))
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout == "with bias 41\nwithout 2\n" and r.stderr == ""


@pytest.mark.slow
def test_a_lambda_with_or_without_captures_is_a_kernel(bindir) -> None:
    """ICPU_RUN_KF(lambda, ...): a lambda without captures is a function; one with captures runs as a
    copy of itself in GM (a struct captured by copy keeps the values it had), on the core processes
    an earlier launch forked."""
    r = _run(program("test_lambda.cpp", bindir))
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout == "10 11\n120 123\n" and r.stderr == ""


@pytest.mark.slow
def test_a_vector_kernel_launched_without_a_kernel_mode_is_told_why_a_cube_core_ran_it(bindir) -> None:
    """No SetKernelMode: MIX_MODE, the documented CPU-debug default, starts a cube core per block, and a
    vector kernel's UB buffer fails there; the one line says so and how the test chooses the mode."""
    r = _run(program("test_no_mode.cpp", bindir))
    assert r.returncode == 3, r.stdout + r.stderr
    line = line_of("cpudebug/test_no_mode.cpp", "// UB")
    assert f"test_no_mode.cpp:{line}" in r.stderr and "and this is a cube core" in r.stderr, r.stderr
    assert "the program never called SetKernelMode, so this launch ran in MIX_MODE" in r.stderr
    assert "AscendC::SetKernelMode(KernelMode::AIV_MODE)" in r.stderr and len(r.stderr.strip().splitlines()) == 1


@pytest.mark.slow
def test_the_default_kernel_mode_of_a_program_that_never_chooses_one_comes_from_the_environment(bindir) -> None:
    """MPNPU_DEFAULT_KERNEL_MODE=aiv (what mpnpu ut gives a vector-only kernel's test): the same launch
    without SetKernelMode runs on vector cores and ends well; a bad value is one line and exit 2."""
    exe = program("test_no_mode.cpp", bindir)
    r = _run(exe, MPNPU_DEFAULT_KERNEL_MODE="aiv")
    assert r.returncode == 0 and r.stderr == "", r.stderr
    bad = _run(exe, MPNPU_DEFAULT_KERNEL_MODE="vector")
    assert bad.returncode == 2 and "MPNPU_DEFAULT_KERNEL_MODE='vector'" in bad.stderr
    assert len(bad.stderr.strip().splitlines()) == 1


@pytest.mark.slow
def test_a_kernel_prints_with_ascendc_printf_one_whole_line_per_call(bindir) -> None:
    """AscendC::printf from every core of a launch: each call's text arrives whole (one write), a half
    argument prints as the float it holds."""
    r = _run(program("test_printf.cpp", bindir))
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert sorted(lines) == [f"core {i} of 4 says 1.5" for i in range(4)] + ["done"], r.stdout


@pytest.mark.slow
def test_a_struct_passed_by_value_reaches_every_core(bindir) -> None:
    """A tiling struct by value (the dev kit's samples pass theirs so): each launch's copy travels in GM,
    so every core process sees that launch's value, and no block is left behind (no_leaks)."""
    r = _run(program("test_struct_arg.cpp", bindir))
    assert r.returncode == 0 and r.stdout == "12.5 12.5\n", r.stdout + r.stderr


@pytest.mark.slow
def test_a_launch_of_zero_blocks_runs_nothing_and_says_so(bindir) -> None:
    # Outside the documented 1..65535: the chip's runtime refuses the launch and no core runs; a
    # program that goes on (as a unit test that launches 0 blocks on purpose does) goes on here too.
    r = _run(program("test_two_phase.cpp", bindir, cflags=("-DMPNPU_TEST_ZERO_BLOCKS",)))
    assert r.returncode == 0, r.stderr
    assert r.stdout.split("\n")[:2] == ["total 1024", "after 0 blocks -1"], r.stdout
    run_line = line_of("cpudebug/test_two_phase.cpp", "// no block")
    assert r.stderr.strip() == (
        f"mpnpu: ICPU_RUN_KF(two_phase) at test_two_phase.cpp:{run_line}: block_dim 0 launches no core "
        "(outside the documented 1..65535, a launch the chip's runtime refuses): nothing ran"), r.stderr


@pytest.mark.slow
def test_racecheck_probes_a_polling_loop_that_looked_once_and_gives_the_program_its_own_gm(bindir) -> None:
    """poll_barrier.cpp mode 6 under MPNPU_RACECHECK=1: when the last core found its neighbour's flag
    set at its first look, racecheck probes that read (the launch again from the same GM, the neighbour
    held before its flag) and reports the loop and no hazard; the program then reads the GM its own
    launch left (its outputs right)."""
    exe = program("test_poll_probe.cpp", bindir)
    for _ in range(5):
        r = _run(exe, MPNPU_RACECHECK="1")
        if r.stdout.startswith("looks ") and r.stdout.split()[2] == "1":
            break
    assert r.returncode == 0 and r.stdout.split()[2] == "1", r.stdout + r.stderr
    assert r.stdout.strip().endswith("wrong 0"), r.stdout
    line = line_of("poll_barrier.cpp", "// the last core's own line")
    assert "poll probe: held core 0 before " in r.stderr and f"poll_barrier.cpp:{line}" in r.stderr, r.stderr
    assert "spun there: a polling loop" in r.stderr and "SUMMARY: 0 hazards" in r.stderr, r.stderr


def test_a_program_that_chose_its_kernel_mode_runs_those_cores_whatever_the_kernel_declares(bindir) -> None:
    # (a unit test may run a mix kernel's cube part alone with AIC_MODE; the kernel's declaration
    # decides only for a program that never chose)
    exe = program("test_host_mode.cpp", bindir)
    r = _run(exe)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "cube 2 vector 0"
    env = {k: v for k, v in os.environ.items() if not k.startswith("MPNPU_") or k == "MPNPU_CACHE_DIR"}
    declared = subprocess.run([exe, "declared"], capture_output=True, text=True, timeout=60,
                              env={**env, "MPNPU_DEFAULT_KERNEL_MODE": "aiv"})
    assert declared.returncode == 3, declared.stderr
    assert "the kernel declares KERNEL_TYPE_MIX_AIC_1_2 but was launched as KERNEL_TYPE_AIV_ONLY" in declared.stderr
    # KernelMode::MIX_AIC_1_1 (a public unit test sets it): one vector core a block beside its cube core
    one_one = subprocess.run([exe, "mix11"], capture_output=True, text=True, timeout=60, env=env)
    assert one_one.returncode == 0, one_one.stderr
    assert one_one.stdout.strip() == "cube 2 vector 2"


def test_a_matmul_kernel_given_a_few_kib_of_workspace_keeps_its_state_in_mpnpus_own(bindir) -> None:
    """REGIST_MATMUL_OBJ with a 5120-byte workspace (ops-nn's single_layer_lstm_grad test gives that):
    the vendor's CPU-debug library keeps the matmul state elsewhere, and so does mpnpu's CPU-debug
    launch (a system workspace of its own); before, the launch stopped: "the system workspace is too
    small". The product is right, and racecheck finds nothing in the library's own traffic."""
    exe = program("test_small_workspace.cpp", bindir)
    for env in ({}, {"MPNPU_RACECHECK": "1"}):
        r = _run(exe, timeout=120, **env)
        assert r.returncode == 0, r.stderr
        assert float(r.stdout.split()[1]) < 1e-3, r.stdout
    assert "SUMMARY: 0 hazards" in r.stderr, r.stderr
