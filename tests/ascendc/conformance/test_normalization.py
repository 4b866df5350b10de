"""The normalization calls (LayerNorm [B, S, H] and [A, R], Normalize, DeepNorm, RmsNorm, LayerNormGrad,
LayerNormGradBeta, WelfordUpdate, WelfordFinalize) against numpy (normref.py): both element types, rows with
padding past the original length, tilings from the host helpers with stacks at, between and at the top of their
range, the sharedTmpBuffer form (its traced use) and the framework's, the documented in-place forms, misuse; and
the host helpers' sizes."""

from __future__ import annotations

import numpy as np
import pytest
from cases import Layout
from normref import NormSim, f32_bits, padded, rows_bytes, rows_fitting, tmp_minmax
from vecref import SIZE

EPS = f32_bits(1e-3)
STACKS = ("min", "mid", "max")


def _stack(call: str, sz: int, rows: int, width: int, which: str) -> int:
    hi, lo = tmp_minmax(call, sz, rows, width)
    return {"min": lo, "mid": (lo + hi) // 2 + 4, "max": hi}[which]


def _sim(seed: int, size: int = 65536):
    sim = NormSim(size, seed=seed)
    return sim, Layout(sim)


def _scratch(lay: Layout, form: str, stack: int, extra: int = 0) -> dict:
    if form != "tmp":
        return {}
    lay.add("scratch", "u8", stack + extra, 0, 255)
    return {"scratch": "scratch"}


BSH = [(2, 3, 16, 16), (1, 5, 32, 29), (3, 4, 64, 64)]


@pytest.mark.parametrize("T", ["f16", "f32"])
@pytest.mark.parametrize("shape", BSH, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("form,which", [("tmp", "min"), ("tmp", "mid"), ("tmp", "max"), ("fw", "mid")])
def test_layernorm(run, T, shape, form, which):
    b, s, h, orih = shape
    sz, rows = SIZE[T], b * s
    stack = _stack("LayerNorm", sz, rows, h, which)
    sim, lay = _sim(seed=b * 100 + h + len(which))
    for name, n in (("y", rows * h), ("mean", rows), ("var", rows), ("x", rows * h), ("gamma", h), ("beta", h)):
        lay.add(name, T, n * sz, -4, 4)
    kw = _scratch(lay, form, stack, extra=32 if which == "max" else 0)
    sim.call("LayerNorm", T=T, b=b, s=s, h=h, orih=orih, stack=stack, form=form, y="y", mean="mean", var="var",
             x="x", gamma="gamma", beta="beta", eps=EPS, **kw)
    run(sim)


@pytest.mark.parametrize("T", ["f16", "f32"])
def test_layernorm_in_place(run, T):
    """output may be inputX (documented)."""
    sz, b, s, h = SIZE[T], 2, 2, 32
    sim, lay = _sim(seed=3)
    for name, n in (("x", b * s * h), ("mean", b * s), ("var", b * s), ("gamma", h), ("beta", h)):
        lay.add(name, T, n * sz, -4, 4)
    sim.call("LayerNorm", T=T, b=b, s=s, h=h, orih=h, stack=1 << 20, form="fw", y="x", mean="mean", var="var",
             x="x", gamma="gamma", beta="beta", eps=EPS)
    run(sim)


@pytest.mark.parametrize("T", ["f16", "f32"])
@pytest.mark.parametrize("shape,basic", [((2, 3, 16, 13), 0), ((2, 4, 64, 64), 1)])
@pytest.mark.parametrize("form", ["tmp", "fw"])
def test_deepnorm(run, T, shape, basic, form):
    b, s, h, orih = shape
    sz, rows = SIZE[T], b * s
    stack = _stack("DeepNorm", sz, rows, h, "mid")
    sim, lay = _sim(seed=h + basic)
    for name, n in (("y", rows * h), ("mean", rows), ("var", rows), ("x", rows * h), ("gx", rows * h), ("gamma", h),
                    ("beta", h)):
        lay.add(name, T, n * sz, -4, 4)
    kw = _scratch(lay, form, stack)
    sim.call("DeepNorm", T=T, b=b, s=s, h=h, orih=orih, stack=stack, basic=basic, reuse=0, form=form, y="y",
             mean="mean", var="var", x="x", gx="gx", gamma="gamma", beta="beta", alpha=f32_bits(-1.5), eps=EPS, **kw)
    run(sim)


def test_deepnorm_reuse_src(run):
    """isReuseSrc: dst may be src (float only)."""
    b, s, h = 1, 4, 16
    sim, lay = _sim(seed=4)
    for name, n in (("x", b * s * h), ("mean", b * s), ("var", b * s), ("gx", b * s * h), ("gamma", h), ("beta", h)):
        lay.add(name, "f32", n * 4, -4, 4)
    sim.call("DeepNorm", T="f32", b=b, s=s, h=h, orih=h, stack=4096, basic=0, reuse=1, form="fw", y="x",
             mean="mean", var="var", x="x", gx="gx", gamma="gamma", beta="beta", alpha=f32_bits(2.0), eps=EPS)
    run(sim)


AR = [("f16", "f16"), ("f16", "f32"), ("f32", "f32")]


@pytest.mark.parametrize("T,U", AR)
@pytest.mark.parametrize("a,ta,r", [(4, 4, 32), (3, 6, 21), (5, 5, 64)])
@pytest.mark.parametrize("cfg", [0, 1, 2, 3])
@pytest.mark.parametrize("form", ["tmp", "fw"])
def test_layernorm_ar(run, T, U, a, ta, r, cfg, form):
    """The LayerNormPara form: A up to the tiling's, R with padding, gamma/beta left out, the variance out."""
    sz = SIZE[T]
    rp = padded(r, sz)
    stack = _stack("LayerNormAR", sz, ta, rp, "mid")
    sim, lay = _sim(seed=a * 7 + r + cfg)
    lay.add("y", T, a * rp * sz)
    lay.add("mean", "f32", a * 4)
    lay.add("rstd", "f32", a * 4)
    lay.add("x", T, a * rp * sz, -4, 4)
    lay.add("gamma", U, rp * SIZE[U], -2, 2)
    lay.add("beta", U, rp * SIZE[U], -2, 2)
    kw = _scratch(lay, form, stack)
    sim.call("LayerNormAR", T=T, U=U, a=a, r=r, rp=rp, ta=ta, stack=stack, cfg=cfg, form=form, y="y", mean="mean",
             rstd="rstd", x="x", gamma="gamma", beta="beta", eps=EPS, **kw)
    run(sim)


@pytest.mark.parametrize("T,U", AR)
@pytest.mark.parametrize("cfg", [0, 1, 2])
@pytest.mark.parametrize("form,rows", [("tmp", 1), ("tmp", 2), ("tmp", 9), ("fw", 0)])
def test_normalize(run, T, U, cfg, form, rows):
    """rows: the rows of a pass the sharedTmpBuffer holds (9: more than there are, the call uses 5)."""
    sz, a, r = SIZE[T], 5, 40
    rp = padded(r, sz)
    sim, lay = _sim(seed=cfg + rows)
    lay.add("y", T, a * rp * sz)
    lay.add("rstd", "f32", a * 4)
    lay.add("mean", "f32", a * 4, -1, 1)
    lay.add("var", "f32", a * 4, 0.5, 3)
    lay.add("x", T, a * rp * sz, -4, 4)
    lay.add("gamma", U, rp * SIZE[U], -2, 2)
    lay.add("beta", U, rp * SIZE[U], -2, 2)
    kw = _scratch(lay, form, rows_bytes("Normalize", sz, rows, rp) if rows else 0, extra=8 if rows == 2 else 0)
    sim.call("Normalize", T=T, U=U, a=a, r=r, rp=rp, cfg=cfg, form=form, y="y", rstd="rstd", mean="mean", var="var",
             x="x", gamma="gamma", beta="beta", eps=EPS, **kw)
    run(sim)


@pytest.mark.parametrize("T", ["f16", "f32"])
@pytest.mark.parametrize("shape,basic", [((2, 3, 16, 11), 0), ((4, 2, 64, 64), 1), ((1, 3, 48, 48), 0)])
@pytest.mark.parametrize("form,which", [("tmp", "min"), ("tmp", "max"), ("fw", "mid")])
def test_rmsnorm(run, T, shape, basic, form, which):
    b, s, h, orih = shape
    sz, rows = SIZE[T], b * s
    if h * sz % 32:
        pytest.skip("H is not 32-byte aligned for this type")
    stack = _stack("RmsNorm", sz, rows, h, which)
    sim, lay = _sim(seed=h + rows)
    lay.add("dst", T, rows * h * sz)
    lay.add("src", T, rows * h * sz, -3, 3)
    lay.add("gamma", T, h * sz, -2, 2)
    kw = _scratch(lay, form, stack)
    sim.call("RmsNorm", T=T, b=b, s=s, h=h, orih=orih, stack=stack, basic=basic, form=form, dst="dst", src="src",
             gamma="gamma", eps=EPS, **kw)
    run(sim)


@pytest.mark.parametrize("T", ["f16", "f32"])
@pytest.mark.parametrize("shape", [(2, 3, 16, 16), (1, 4, 32, 27)], ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("form,which", [("tmp", "min"), ("tmp", "max"), ("fw", "mid")])
def test_layernorm_grad(run, T, shape, form, which):
    b, s, h, orih = shape
    sz, rows = SIZE[T], b * s
    stack = _stack("LayerNormGrad", sz, rows, h, which)
    sim, lay = _sim(seed=rows + h)
    lay.add("pdx", T, rows * h * sz)
    lay.add("res", T, rows * h * sz)
    lay.add("dy", T, rows * h * sz, -2, 2)
    lay.add("x", T, rows * h * sz, -3, 3)
    lay.add("var", T, rows * sz, 0.5, 3)
    lay.add("mean", T, rows * sz, -1, 1)
    lay.add("gamma", T, h * sz, -2, 2)
    kw = _scratch(lay, form, stack)
    sim.call("LayerNormGrad", T=T, b=b, s=s, h=h, orih=orih, stack=stack, form=form, pdx="pdx", res="res", dy="dy",
             x="x", var="var", mean="mean", gamma="gamma", eps=EPS, **kw)
    run(sim)


@pytest.mark.parametrize("T", ["f16", "f32"])
@pytest.mark.parametrize("form,which", [("tmp", "min"), ("tmp", "mid"), ("fw", "max")])
def test_layernorm_grad_beta(run, T, form, which):
    b, s, h = 3, 5, 32
    sz, rows = SIZE[T], b * s
    stack = _stack("LayerNormGradBeta", sz, rows, h, which)
    sim, lay = _sim(seed=len(which))
    lay.add("pdg", T, h * sz)
    lay.add("pdb", T, h * sz)
    lay.add("res", T, rows * h * sz, -2, 2)
    lay.add("dy", T, rows * h * sz, -2, 2)
    kw = _scratch(lay, form, stack)
    sim.call("LayerNormGradBeta", T=T, b=b, s=s, h=h, orih=h, stack=stack, form=form, pdg="pdg", pdb="pdb",
             res="res", dy="dy", **kw)
    run(sim)


def test_layernorm_grad_in_place(run):
    """The grads' outputs may be their inputs (documented: the spaces may be reused)."""
    b, s, h = 2, 2, 16
    rows = b * s
    sim, lay = _sim(seed=8)
    lay.add("dy", "f32", rows * h * 4, -2, 2)
    lay.add("x", "f32", rows * h * 4, -3, 3)
    lay.add("var", "f32", rows * 4, 0.5, 3)
    lay.add("mean", "f32", rows * 4, -1, 1)
    lay.add("gamma", "f32", h * 4, -2, 2)
    lay.add("dy2", "f32", rows * h * 4, -2, 2)
    sim.call("LayerNormGrad", T="f32", b=b, s=s, h=h, orih=h, stack=4096, form="fw", pdx="dy", res="x", dy="dy",
             x="x", var="var", mean="mean", gamma="gamma", eps=EPS)
    sim.call("LayerNormGradBeta", T="f32", b=b, s=s, h=h, orih=h, stack=4096, form="fw", pdg="dy2", pdb="x",
             res="x", dy="dy2")
    run(sim)


@pytest.mark.parametrize("T", ["f16", "f32"])
@pytest.mark.parametrize("ab,k", [(64, 35), (32, 32), (16, 1)])
@pytest.mark.parametrize("inplace", [0, 1])
@pytest.mark.parametrize("form", ["tmp", "fw"])
def test_welford_update(run, T, ab, k, inplace, form):
    sz = SIZE[T]
    hi, _ = tmp_minmax("WelfordUpdate", sz, 1, ab)
    sim, lay = _sim(seed=ab + k + inplace)
    lay.add("om", "f32", ab * 4, -9, 9)
    lay.add("ov", "f32", ab * 4, -9, 9)
    lay.add("im", "f32", ab * 4, -50, 50)
    lay.add("iv", "f32", ab * 4, 0, 1000)
    lay.add("x", T, ab * sz, -50, 50)
    kw = _scratch(lay, form, hi)
    sim.call("WelfordUpdate", T=T, ab=ab, k=k, nrec=f32_bits(1 / 3), inplace=inplace, form=form, om="om", ov="ov",
             im="im", iv="iv", x="x", **kw)
    run(sim)


def test_welford_chain(run):
    """Three WelfordUpdate calls (nRec 1, 1/2, 1/3) and WelfordFinalize give the mean and variance of all the
    data (checked against numpy's, not only the reference)."""
    ab = 16
    sim, lay = _sim(seed=11)
    lay.add("m", "f32", ab * 4, data=np.zeros(ab, np.float32))
    lay.add("v", "f32", ab * 4, data=np.zeros(ab, np.float32))
    lay.add("m2", "f32", ab * 4)
    lay.add("v2", "f32", ab * 4)
    xs = [lay.add(f"x{i}", "f32", ab * 4, -5, 5) for i in range(3)]
    lay.add("fm", "f32", 32)
    lay.add("fv", "f32", 32)
    src, dst = ("m", "v"), ("m2", "v2")
    for i in range(3):
        sim.call("WelfordUpdate", T="f32", ab=ab, k=ab, nrec=f32_bits(1 / (i + 1)), inplace=0, form="fw",
                 om=dst[0], ov=dst[1], im=src[0], iv=src[1], x=f"x{i}")
        src, dst = dst, src
    sim.call("WelfordFinalize", T="f32", rn=3, ab=ab, hc=3, hl=ab, tc=0, tl=0, abrec=f32_bits(1 / ab),
             rrec=f32_bits(1 / 48), rrecc=0, corr=0, form="fw", om="fm", ov="fv", im=src[0], iv=src[1])
    run(sim)
    data = np.concatenate([sim.get(x).astype(np.float64) for x in xs])
    got = sim.get(sim.tensors["fm"])[0], sim.get(sim.tensors["fv"])[0]
    assert np.isclose(got[0], data.mean(), rtol=1e-5) and np.isclose(got[1], data.var(), rtol=1e-5)


@pytest.mark.parametrize("counts", [0, 1])
@pytest.mark.parametrize("corr", [0, 1])
@pytest.mark.parametrize("form", ["tmp", "fw"])
def test_welford_finalize(run, counts, corr, form):
    ab = 24
    sim, lay = _sim(seed=counts * 2 + corr)
    lay.add("om", "f32", 32)
    lay.add("ov", "f32", 32)
    lay.add("im", "f32", ab * 4, -5, 5)
    lay.add("iv", "f32", ab * 4, 0, 40)
    kw = _scratch(lay, form, tmp_minmax("WelfordFinalize", 4, 1, ab)[0])
    if counts:
        lay.add("counts", "i32", ab * 4, data=np.arange(ab, dtype=np.int32) % 5 + 1)
        kw["counts"] = "counts"
    sim.call("WelfordFinalize", T="f32", rn=4, ab=ab, hc=4, hl=16, tc=3, tl=8, abrec=f32_bits(1 / ab),
             rrec=f32_bits(1 / 88), rrecc=f32_bits(1 / 87), corr=corr, form=form, om="om", ov="ov", im="im", iv="iv",
             **kw)
    run(sim)


HOST = [("LayerNorm", (2, 8, 64, 60)), ("LayerNormGrad", (3, 1, 32, 32)), ("LayerNormGradBeta", (4, 4, 16, 16)),
        ("LayerNormAR", (6, 33)), ("Normalize", (2, 100)), ("DeepNorm", (2, 4, 64, 1)), ("DeepNorm", (2, 3, 64, 1)),
        ("RmsNorm", (1, 8, 128, 1)), ("RmsNorm", (1, 8, 96, 1)), ("RmsNorm", (2, 3, 40, 0)),
        ("WelfordUpdate", (1, 64)), ("WelfordFinalize", (48, 0))]


@pytest.mark.parametrize("T", ["f16", "f32"])
@pytest.mark.parametrize("op,dims", HOST, ids=[f"{o}-{'x'.join(map(str, d))}" for o, d in HOST])
def test_norm_host_helpers(run, T, op, dims):
    """GetXxxMaxMinTmpSize: the row model's one row and all rows (and the basic-block answer)."""
    sim, lay = _sim(seed=1, size=4096)
    lay.add("out", "u32", 32, data=np.zeros(8, np.uint32))
    kw = dict(zip(("d0", "d1", "d2", "d3"), dims))
    sim.call("NormHost", T=T, op=op, out="out", **kw)
    run(sim)


def test_row_model_numbers():
    """The reference's model, in numbers the pages' samples rely on: a stack of the minimum holds one row."""
    assert tmp_minmax("LayerNorm", 4, 64, 16) == (64 * 16 * 8, 128)
    assert rows_fitting("LayerNorm", 4, 64, 16, 256) == 2
    assert tmp_minmax("RmsNorm", 4, 32, 64)[1] == (64 + 8) * 4
    assert rows_fitting("RmsNorm", 2, 10, 16, tmp_minmax("RmsNorm", 2, 10, 16)[1] - 1) == 0


# -- misuse -----------------------------------------------------------------------------------------------------

def _ln(T="f32", b=1, s=4, h=16, stack=None, form="fw", scratch_bytes=0, gamma_elems=None, scratch_on=None,
        **over):
    sz, rows = SIZE[T], b * s
    stack = _stack("LayerNorm", sz, rows, h, "min") if stack is None else stack
    sim, lay = _sim(seed=5)
    for name, n in (("y", rows * h), ("mean", rows), ("var", rows), ("x", rows * h), ("beta", h)):
        lay.add(name, T, n * sz, -4, 4)
    lay.add("gamma", T, (gamma_elems or h) * sz, -4, 4)
    kw = dict(T=T, b=b, s=s, h=h, orih=h, stack=stack, form=form, y="y", mean="mean", var="var", x="x",
              gamma="gamma", beta="beta", eps=EPS)
    if scratch_bytes:
        lay.add("scratch", "u8", scratch_bytes, 0, 255)
        kw["scratch"] = "scratch"
    if scratch_on:  # a buffer on an operand's bytes
        sim.tensor("tmp_on", "u8", sim.tensors[scratch_on].offset, 256)
        kw["scratch"] = "tmp_on"
    kw.update(over)
    return sim, kw


@pytest.mark.parametrize("case,msg", [
    (dict(form="tmp", scratch_bytes=96),
     "LayerNorm: sharedTmpBuffer has 96 bytes, fewer than the 128 this call needs (at least "
     "GetLayerNormMaxMinTmpSize's minimum"),
    (dict(stack=100), "LayerNorm: the tiling gives no rows a pass (GetLayerNormNDTilingInfo was given a stack below"),
    (dict(h=12, stack=4096), "LayerNorm: H 12 is not 32-byte aligned"),
    (dict(y="gamma"), "LayerNorm: output has 16 elements; the shape needs 64"),
    (dict(gamma_elems=8), "LayerNorm: gamma has 8 elements; the shape needs 16"),
    (dict(mean="var"), "LayerNorm: outputMean and outputVariance overlap (each output needs its own space)"),
    (dict(var="x"), "LayerNorm: outputVariance and inputX overlap"),
    (dict(form="tmp", scratch_on="x"), "LayerNorm: sharedTmpBuffer overlaps inputX"),
])
def test_layernorm_misuse(run, case, msg):
    sim, kw = _ln(**case)
    sim.call("LayerNorm", expect_error=msg, **kw)
    run(sim)


def _misuse_sim(tensors: list[tuple[str, str, int]]):
    sim, lay = _sim(seed=6)
    for name, dt, nbytes in tensors:
        lay.add(name, dt, nbytes, -2, 2)
    return sim


@pytest.mark.parametrize("over,msg", [
    (dict(a=5), "LayerNorm: para.aLength 5 is more than the tiling's A 4"),
    (dict(x="y"), "LayerNorm: output and inputX overlap"),
    (dict(r=30, rp=30), "LayerNorm: rLengthWithPadding 30 is not 32-byte aligned"),
    (dict(r=33), "LayerNorm: rLength 33 is longer than rLengthWithPadding 32"),
    (dict(stack=64), "LayerNorm: the tiling gives no rows a pass"),
])
def test_layernorm_ar_misuse(run, over, msg):
    sim = _misuse_sim([("y", "f32", 512), ("mean", "f32", 32), ("rstd", "f32", 32), ("x", "f32", 512),
                       ("g", "f32", 128), ("b", "f32", 128)])
    kw = dict(T="f32", U="f32", a=4, r=32, rp=32, ta=4, stack=4096, cfg=0, form="fw", y="y", mean="mean",
              rstd="rstd", x="x", gamma="g", beta="b", eps=EPS)
    kw.update(over)
    sim.call("LayerNormAR", expect_error=msg, **kw)
    run(sim)


def test_normalize_misuse(run):
    t = [("y", "f32", 512), ("rstd", "f32", 32), ("mean", "f32", 32), ("var", "f32", 32), ("x", "f32", 512),
         ("g", "f32", 128), ("b", "f32", 128), ("scratch", "u8", 64)]
    base = dict(T="f32", U="f32", a=3, r=32, rp=32, cfg=0, y="y", rstd="rstd", mean="mean", var="var", x="x",
                gamma="g", beta="b", eps=EPS)
    sim = _misuse_sim(t)
    sim.call("Normalize", form="fw", cfga=1, **base, expect_error="Normalize: the config's aLength 4 is not "
             "para.aLength 3")
    run(sim)
    sim = _misuse_sim(t)
    sim.call("Normalize", form="tmp", scratch="scratch", **base,
             expect_error="Normalize: sharedTmpBuffer has 64 bytes, fewer than the 128")
    run(sim)
    sim = _misuse_sim(t)
    sim.call("Normalize", form="fw", **{**base, "rstd": "mean"},
             expect_error="Normalize: outputRstd and inputMean overlap")
    run(sim)


def test_deepnorm_rmsnorm_misuse(run):
    t = [("y", "f32", 2048), ("mean", "f32", 64), ("var", "f32", 64), ("x", "f32", 2048), ("gx", "f32", 2048),
         ("g", "f32", 256), ("b", "f32", 256)]
    deep = dict(T="f32", b=1, s=6, h=64, orih=64, stack=8192, reuse=0, form="fw", y="y", mean="mean", var="var",
                x="x", gx="gx", gamma="g", beta="b", alpha=f32_bits(1.0), eps=EPS)
    sim = _misuse_sim(t)
    sim.call("DeepNorm", basic=1, **deep, expect_error="DeepNorm: isBasicBlock needs H a multiple of 64 up to 2040 "
             "and B x S a multiple of 8 (H 64, B x S 6)")
    run(sim)
    sim = _misuse_sim(t)
    sim.call("DeepNorm", basic=0, **{**deep, "y": "x"},
             expect_error="DeepNorm: dstLocal and srcLocal overlap (the call does not let this output share")
    run(sim)
    rms = dict(T="f32", b=1, s=6, h=64, orih=64, stack=8192, form="fw", dst="y", src="x", gamma="g", eps=EPS)
    sim = _misuse_sim(t)
    sim.call("RmsNorm", basic=1, **rms, expect_error="RmsNorm: isBasicBlock needs H a multiple of 64 below 2048")
    run(sim)
    sim = _misuse_sim(t)
    sim.call("RmsNorm", basic=0, **{**rms, "dst": "g"}, expect_error="RmsNorm: dstLocal has 64 elements")
    run(sim)
    sim = _misuse_sim(t)
    sim.call("RmsNorm", basic=0, **{**rms, "stack": 100},
             expect_error="RmsNorm: the tiling gives no shape")  # (the helper refuses the stack: nothing filled)
    run(sim)


def test_grad_misuse(run):
    t = [("pdx", "f32", 256), ("res", "f32", 256), ("dy", "f32", 256), ("x", "f32", 256), ("var", "f32", 32),
         ("mean", "f32", 32), ("g", "f32", 64)]
    grad = dict(T="f32", b=1, s=4, h=16, orih=16, stack=4096, form="fw", pdx="pdx", res="res", dy="dy", x="x",
                var="var", mean="mean", gamma="g", eps=EPS)
    sim = _misuse_sim(t)
    sim.call("LayerNormGrad", nz=1, **grad, expect_error="LayerNormGrad: only the ND format is supported")
    run(sim)
    sim = _misuse_sim(t)
    sim.call("LayerNormGrad", **{**grad, "res": "pdx"},
             expect_error="LayerNormGrad: outputPdX and resForGamma overlap (each output needs its own space)")
    run(sim)
    sim = _misuse_sim(t)
    sim.tensor("res_mid", "f32", sim.tensors["res"].offset + 32, 16)  # half-way into resForGamma's bytes
    sim.call("LayerNormGradBeta", T="f32", b=1, s=4, h=16, orih=16, stack=4096, form="fw", pdg="g", pdb="res_mid",
             res="res", dy="dy", expect_error="LayerNormGradBeta: outputPdBeta and resForGamma overlap (this output "
             "may reuse that input only as the same tensor)")
    run(sim)


@pytest.mark.parametrize("over,msg", [
    (dict(ab=12), "WelfordUpdate: para.abLength 12 must be a multiple of 8"),
    (dict(k=0), "WelfordUpdate: para.abComputeLength 0 must be in [1, abLength 16]"),
    (dict(k=17), "WelfordUpdate: para.abComputeLength 17 must be in [1, abLength 16]"),
    (dict(rn=2), "WelfordUpdate: para.rnLength is 2; only 1 is supported"),
    (dict(om="x"), "WelfordUpdate: outputMean and inputX overlap"),
    (dict(form="tmp", scratch="small"), "WelfordUpdate: sharedTmpBuffer has 32 bytes, fewer than the 64"),
])
def test_welford_update_misuse(run, over, msg):
    sim = _misuse_sim([("om", "f32", 64), ("ov", "f32", 64), ("im", "f32", 64), ("iv", "f32", 64),
                       ("x", "f32", 64), ("small", "u8", 32)])
    kw = dict(T="f32", ab=16, k=16, nrec=f32_bits(0.5), inplace=0, form="fw", om="om", ov="ov", im="im", iv="iv",
              x="x")
    kw.update(over)
    sim.call("WelfordUpdate", expect_error=msg, **kw)
    run(sim)


@pytest.mark.parametrize("over,msg", [
    (dict(ab=12, hl=12), "WelfordFinalize: para.abLength 12 must be a multiple of 8"),
    (dict(hl=8, tl=4), "WelfordFinalize: para.headCountLength 8 + tailCountLength 4 must equal abLength 16"),
    (dict(hl=8, tl=8, tc=0), "WelfordFinalize: para.tailCountLength must be 0 when tailCount is 0"),
    (dict(om="im"), "WelfordFinalize: outputMean and inputMean overlap"),
])
def test_welford_finalize_misuse(run, over, msg):
    sim = _misuse_sim([("om", "f32", 32), ("ov", "f32", 32), ("im", "f32", 64), ("iv", "f32", 64)])
    kw = dict(rn=2, ab=16, hc=2, hl=16, tc=1, tl=0, abrec=f32_bits(1 / 16), rrec=f32_bits(1 / 32), rrecc=0, corr=0,
              form="fw", om="om", ov="ov", im="im", iv="iv")
    kw.update(over)
    sim.call("WelfordFinalize", T="f32", expect_error=msg, **kw)
    run(sim)


def test_the_framework_buffer_must_hold_the_pass(run):
    """Without a sharedTmpBuffer the call takes the Unified Buffer the pipe has not given out: here 32 KB (the
    job's image takes 160 KB of 192), fewer than the 128 KB a tiling of the maximum's pass needs."""
    b, s, h = 1, 64, 256
    rows = b * s
    sim, lay = _sim(seed=12, size=160 * 1024)
    for name, n in (("x", rows * h), ("mean", rows), ("var", rows), ("gamma", h), ("beta", h)):
        lay.add(name, "f32", n * 4, -4, 4)
    hi, lo = tmp_minmax("LayerNorm", 4, rows, h)
    kw = dict(T="f32", b=b, s=s, h=h, orih=h, form="fw", y="x", mean="mean", var="var", x="x", gamma="gamma",
              beta="beta", eps=EPS)
    sim.call("LayerNorm", stack=lo, **kw)  # one row a pass: 2 KB
    sim.call("LayerNorm", stack=hi, **kw, expect_error="LayerNorm: the framework's buffer (the Unified Buffer the "
             f"pipe has not given out: 32768 bytes) is smaller than the {hi} bytes this call needs")
    run(sim)
