"""Runs a :class:`vecref.Sim` job through the C++ runner and compares what it did with the reference:
the whole UB image (bit-exact, or within a tolerance for the regions the reference marks approximate),
the vector registers, the trace's local-memory records (the byte hull of every operand access, in
order: a call's reads before its writes), and the one-line fault of a call expected to fail.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from vecref import NP, SIZE, Sim, to_f32


@dataclass
class Result:
    rc: int
    fault: str
    image: np.ndarray
    regs: tuple
    events: list  # (kind, start, run)
    spr: list  # (kind, pipe): accesses of the special registers
    acc: int  # the accumulator register at the end


def run_job(exe: Path, sim: Sim, tmp: Path, sanitize: bool = False) -> Result:
    job = tmp / "job.txt"
    img_in, img_out = tmp / "in.bin", tmp / "out.bin"
    job.write_text(sim.job_text())
    (sim.initial if sim.initial is not None else sim.img).tofile(img_in)
    env = dict(os.environ)
    if sanitize:
        env.setdefault("ASAN_OPTIONS", "detect_leaks=1:abort_on_error=0")
        env.setdefault("UBSAN_OPTIONS", "print_stacktrace=1:halt_on_error=1")
    p = subprocess.run([str(exe), str(job), str(img_in), str(img_out)], capture_output=True, text=True, env=env,
                       timeout=120)
    if p.returncode not in (0, 3) or "runtime error" in p.stderr or "Sanitizer" in p.stderr:
        raise AssertionError(f"runner exit {p.returncode}\n{p.stdout}\n{p.stderr[-6000:]}\njob:\n{sim.job_text()}")
    rep = (tmp / "out.bin.txt").read_text().splitlines()
    fault, regs, events, spr, acc = "", (), [], [], 0
    for line in rep:
        word, _, rest = line.partition(" ")
        if word == "fault":
            fault = rest
        elif word == "regs":
            regs = tuple(int(x) for x in rest.split())
        elif word == "spr":
            k, pipe = rest.split()
            spr.append((k, int(pipe)))
        elif word == "acc":
            acc = int(rest)
        elif word == "ev":
            k, pipe, start, run = rest.split()
            assert pipe == "1", f"a vector instruction's access on pipe {pipe}, not PIPE_V"
            events.append((k, int(start), int(run)))
    return Result(p.returncode, fault, np.fromfile(img_out, np.uint8), regs, events, spr, acc)


def _ulp_close(got: np.ndarray, want: np.ndarray, dt: str, rtol: float, ulps: int) -> np.ndarray:
    if dt == "f16":
        gi = got.view(np.int16).astype(np.int32)
        wi = want.view(np.int16).astype(np.int32)
        return np.abs(gi - wi) <= ulps
    g, w = to_f32(got, dt), to_f32(want, dt)
    return np.isclose(g, w, rtol=rtol, atol=0, equal_nan=True)


def execute(exe: Path, sim: Sim, tmp: Path, sanitize: bool = False, check_events: bool = True) -> Result:
    res = run_job(exe, sim, tmp, sanitize)
    errors = [e for e in sim.expects if e.error is not None]
    if errors:
        want = errors[0]
        assert res.rc == 3, f"expected the fault {want.error!r}, the job ran to its end\n{sim.job_text()}"
        kind, _, msg = res.fault.partition(" ")
        assert want.error in msg, f"fault {msg!r} does not say {want.error!r}"
        assert int(kind) == want.error_kind, f"fault kind {kind}, expected {want.error_kind}: {msg}"
        assert "\n" not in msg
    else:
        assert res.rc == 0, f"unexpected fault: {res.fault}\n{sim.job_text()}"
    # the image: exact outside the approximate regions
    want_img, got_img = sim.img, res.image
    exact_mask = np.ones(len(want_img), bool)
    for exp in sim.expects:
        for name, rtol, _atol, ulps in exp.approx:
            t = sim.tensors[name]
            lo, hi = t.offset, t.offset + t.elems * SIZE[t.dt]
            exact_mask[lo:hi] = False
            g = got_img[lo:hi].view(NP[t.dt])
            w = want_img[lo:hi].view(NP[t.dt])
            ok = _ulp_close(g, w, t.dt, rtol, ulps)
            assert ok.all(), (f"{name}: {int((~ok).sum())} elements differ beyond tolerance, e.g. at "
                              f"{np.flatnonzero(~ok)[:8]}: got {g[~ok][:8]} want {w[~ok][:8]}")
    diff = np.flatnonzero((want_img != got_img) & exact_mask)
    if len(diff):
        where = []
        for d in diff[:6]:
            owner = [f"{t.name}[{(d - t.offset) // SIZE[t.dt]}]" for t in sim.tensors.values()
                     if t.offset <= d < t.offset + t.elems * SIZE[t.dt]]
            where.append(f"byte {d} ({','.join(owner) or 'outside every tensor'}): got {got_img[d]} want {want_img[d]}")
        raise AssertionError(f"{len(diff)} bytes differ: " + "; ".join(where) + f"\njob:\n{sim.job_text()}")
    # registers
    r = sim.regs
    if not errors:
        want = (r.lo, r.hi, int(r.counter))
        assert res.regs[:3] == want, f"mask register {res.regs[:3]}, expected {want}"
        assert res.regs[3:] == tuple(r.cmp), f"compare mask {res.regs[3:]}, expected {tuple(r.cmp)}"
        assert res.acc == r.acc, f"accumulator register {res.acc:#x}, expected {r.acc:#x}"
    # the trace: each call's accesses, reads before writes
    if check_events:
        want_ev = []
        for exp in sim.expects:
            if exp.error is not None:
                break
            want_ev += [(k, lo, hi - lo) for k, lo, hi in exp.accesses]
        got = res.events if not errors else res.events[:len(want_ev)]
        assert got == want_ev, f"trace records differ:\n got  {got[:12]}\n want {want_ev[:12]}"
        want_spr = [a for exp in sim.expects if exp.error is None for a in exp.spr]
        if not errors:
            assert res.spr == want_spr, f"special-register records {res.spr}, expected {want_spr}"
    return res
