"""The host-side tiling headers on their own (host-only C++ programs of ours) and with our kernels:
tiling/platform/platform_ascendc.h answers with the emulated chip's figures (mpnpu/device_model.h,
the same as DeviceSpec), tiling/tiling_api.h's MatmulApiTiling / MultiCoreMatmulTiling give tilings
that meet the documented TCubeTiling constraints (or -1), and our matmul kernels driven by those
tilings equal numpy, tails and several cores included."""

from __future__ import annotations

import json
import math
import os
import subprocess
from typing import Any

import numpy as np
import pytest

from mpnpu.ascendc import compile_kernel
from mpnpu.ascendc.build.compiler import INCLUDE_DIR
from mpnpu.ascendc.matmul_tiling import FIELDS, as_fields, matmul_tiling, workspace_bytes
from mpnpu.ascendc.tiling import tiling_layout
from mpnpu.runtime.config import DEFAULT_SPEC
from mpnpu.runtime.topology import KernelType
from tests.ascendc_util import needs_cxx, source
from tests.runtime_util import device

pytestmark = [needs_cxx]

CXX = [os.environ.get("CXX", "g++"), "-std=c++17", "-Wall", "-Wextra", "-Wpedantic", "-Werror", f"-I{INCLUDE_DIR}"]

# A request per stdin line: kind (single / multi), dim, m, n, k, A / B / C / bias types (ge::DataType
# numbers), C's position (0 GM, 1 VECIN), bias, SetFixSplit's three, SetSingleShape's singleM and
# singleN, SetBufferSpace's l1 / l0c / ub, A and B transposed, types set (0: skip SetAType..SetCType).
_DRIVER = r"""
#include <cstdio>
#include "tiling/tiling_api.h"
using namespace matmul_tiling;
int main() {
    char kind[16];
    int dim, m, n, k, at, bt, ct, bit, cpos, bias, fm, fn, fk, sm, sn, l1, l0c, ub, ta, tb, typed;
    while (std::scanf("%15s %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d", kind, &dim, &m, &n, &k,
                      &at, &bt, &ct, &bit, &cpos, &bias, &fm, &fn, &fk, &sm, &sn, &l1, &l0c, &ub, &ta, &tb,
                      &typed) == 22) {
        MatmulApiTiling single;
        MultiCoreMatmulTiling multi;
        const bool isMulti = kind[0] == 'm';
        MatmulApiTilingBase& t = isMulti ? static_cast<MatmulApiTilingBase&>(multi) : single;
        int setDim = isMulti ? multi.SetDim(dim) : 0;
        if (typed) {
            t.SetAType(TPosition::GM, CubeFormat::ND, DataType(at), ta != 0);
            t.SetBType(TPosition::GM, CubeFormat::ND, DataType(bt), tb != 0);
            t.SetCType(cpos ? TPosition::VECIN : TPosition::GM, CubeFormat::ND, DataType(ct));
            t.SetBiasType(TPosition::GM, CubeFormat::ND, DataType(bit));
        }
        t.SetOrgShape(m, n, k);
        t.SetShape(m, n, k);
        t.EnableBias(bias != 0);
        t.SetFixSplit(fm, fn, fk);
        if (sm > 0 || sn > 0) t.SetSingleShape(sm, sn, -1);
        t.SetBufferSpace(l1, l0c, ub);
        TCubeTiling d;
        const long long ret = t.GetTiling(d);
        int cd = 0, md = 0, nd = 0;
        if (isMulti && ret != -1) multi.GetCoreNum(cd, md, nd);
        std::printf("{\"ret\": %lld, \"setDim\": %d, \"dim\": %d, \"mDim\": %d, \"nDim\": %d, \"base\": [%d, %d, %d], ",
                    ret, setDim, cd, md, nd, t.GetBaseM(), t.GetBaseN(), t.GetBaseK());
        std::printf("\"fields\": {");
        FIELDS_PRINT
        std::printf("}}\n");
        std::fflush(stdout);
    }
}
"""

DT = {"float32": 0, "float16": 1, "int8": 2, "int32": 3, "bfloat16": 27}
ITEM = {"float32": 4, "float16": 2, "int8": 1, "bfloat16": 2}
L0A, L0B, L0C, L1, BT = (DEFAULT_SPEC.l0a_bytes, DEFAULT_SPEC.l0b_bytes, DEFAULT_SPEC.l0c_bytes, DEFAULT_SPEC.l1_bytes,
                         1024)


def _compile(tmp: Any, name: str, text: str) -> str:
    src, exe = tmp / f"{name}.cpp", tmp / name
    src.write_text(text)
    cc = subprocess.run([*CXX, str(src), "-o", str(exe)], capture_output=True, text=True, timeout=300)
    assert cc.returncode == 0, cc.stderr
    return str(exe)


@pytest.fixture(scope="module")
def driver(tmp_path_factory) -> str:
    prints = "\n".join(f'        std::printf("{", " if i else ""}\\"{f}\\": %d", d.{f});' for i, f in enumerate(FIELDS))
    return _compile(tmp_path_factory.mktemp("host_tiling"), "driver", _DRIVER.replace("FIELDS_PRINT", prints.strip()))


def _req(m: int, n: int, k: int, *, kind: str = "multi", dim: int = 1, a: str = "float16", c: str = "float32",
         vecin: bool = False, bias: bool = False, fix: tuple[int, int, int] = (-1, -1, -1),
         single: tuple[int, int] = (-1, -1), buffers: tuple[int, int, int] = (-1, -1, -1),
         trans: tuple[bool, bool] = (False, False), typed: bool = True) -> dict[str, Any]:
    return dict(kind=kind, dim=dim, m=m, n=n, k=k, a=a, c=c, vecin=vecin, bias=bias, fix=fix, single=single,
                buffers=buffers, trans=trans, typed=typed)


def _line(r: dict[str, Any]) -> str:
    bias_t = "int32" if r["a"] == "int8" else "float32"
    vals = [r["kind"], r["dim"], r["m"], r["n"], r["k"], DT[r["a"]], DT[r["a"]], DT[r["c"]], DT[bias_t],
            int(r["vecin"]), int(r["bias"]), *r["fix"], *r["single"], *r["buffers"], *map(int, r["trans"]),
            int(r["typed"])]
    return " ".join(map(str, vals))


def _run(driver: str, reqs: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], str]:
    p = subprocess.run([driver], input="\n".join(map(_line, reqs)) + "\n", capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    out = [json.loads(x) for x in p.stdout.splitlines()]
    assert len(out) == len(reqs)
    return out, p.stderr


def _check_valid(r: dict[str, Any], got: dict[str, Any]) -> None:
    """The documented TCubeTiling constraints, for request ``r``."""
    assert got["ret"] != -1
    t = got["fields"]
    m, n, k, item = r["m"], r["n"], r["k"], ITEM[r["a"]]
    k_align = 16 if item >= 2 else 32 // item
    assert (t["M"], t["N"], t["Ka"], t["Kb"]) == (m, n, k, k)
    assert t["baseM"] % 16 == 0 and t["baseN"] % 16 == 0 and t["baseK"] % k_align == 0
    assert min(t["baseM"], t["baseN"], t["baseK"]) > 0
    assert got["base"] == [t["baseM"], t["baseN"], t["baseK"]]
    sm, sn = t["singleCoreM"], t["singleCoreN"]
    assert t["singleCoreK"] == k
    mdim, ndim = math.ceil(m / sm), math.ceil(n / sn)
    assert (mdim - 1) * sm < m and (ndim - 1) * sn < n  # every part holds some of C
    assert t["usedCoreNum"] == mdim * ndim <= (r["dim"] if r["kind"] == "multi" else 1)
    if r["kind"] == "multi":
        assert (got["dim"], got["mDim"], got["nDim"]) == (mdim * ndim, mdim, ndim)
    if r["single"][0] > 0:
        assert sm == r["single"][0]
    for f, v in zip(("baseM", "baseN", "baseK"), r["fix"]):
        if v > 0:
            assert t[f] == v
    l0c = r["buffers"][1] if r["buffers"][1] >= 0 else L0C
    l1 = r["buffers"][0] if r["buffers"][0] >= 0 else L1
    bm, bn, bk = t["baseM"], t["baseN"], t["baseK"]
    assert bm * bk * item * t["dbL0A"] <= L0A and bn * bk * item * t["dbL0B"] <= L0B
    assert bm * bn * 4 * t["dbL0C"] <= l0c
    assert {t["dbL0A"], t["dbL0B"], t["dbL0C"]} <= {1, 2}
    assert t["stepM"] == t["stepN"] == 1 and t["stepKa"] == t["stepKb"] >= 1
    db = t["depthA1"] // (t["stepM"] * t["stepKa"])
    assert db in (1, 2) and t["depthA1"] == t["stepM"] * t["stepKa"] * db == t["depthB1"]
    bias_bytes = bn * 4 if r["bias"] else 0
    assert (bm * item + bn * item) * bk * t["depthA1"] + bias_bytes <= l1
    assert t["isBias"] == int(r["bias"]) and (not r["bias"] or bn * 4 <= BT)
    assert t["iterateOrder"] == 0 and t["transLength"] == 0


VALID = [
    _req(128, 256, 64, kind="single"),
    _req(100, 70, 50, kind="single"),  # tails everywhere
    _req(512, 512, 128, dim=2),
    _req(512, 128, 128, dim=2, vecin=True, bias=True, fix=(128, 64, 128), buffers=(-1, -1, 192 * 1024 - 32768)),
    _req(300, 200, 70, dim=4, bias=True),
    _req(1000, 37, 300, dim=8),
    _req(33, 1000, 1000, dim=24),
    _req(4096, 4096, 4096, dim=24, fix=(128, 256, 64)),
    _req(8192, 8192, 8192, dim=24, single=(2048, 1536), fix=(128, 256, 64)),
    _req(8192, 8192, 8192, dim=24, single=(4096, 683), fix=(128, 256, 64)),
    _req(256, 256, 512, dim=3, a="float32"),
    _req(256, 256, 512, dim=6, a="int8", c="int32", bias=True),
    _req(64, 64, 4096, kind="single", buffers=(64 * 1024, -1, -1)),  # L1 too small for K whole: steps halve
    _req(256, 512, 64, kind="single", buffers=(-1, 32 * 1024, -1)),  # a smaller L0C: base blocks halve
    _req(16, 16, 16, dim=24),
    _req(96, 64, 80, dim=2, trans=(True, True)),
]


def test_the_tilings_meet_the_documented_constraints(driver) -> None:
    got, _ = _run(driver, VALID)
    for r, g in zip(VALID, got):
        _check_valid(r, g)


def test_the_cut_and_the_base_blocks_the_rule_documents(driver) -> None:
    got, _ = _run(driver, [
        _req(512, 512, 128, dim=2),
        _req(512, 128, 128, dim=2, vecin=True, fix=(128, 64, 128)),
        _req(512, 128, 128, dim=2),
        _req(100, 70, 50, kind="single"),
        _req(300, 200, 70, dim=4, bias=True),
        _req(8192, 8192, 8192, dim=24, single=(2048, 1536), fix=(128, 256, 64)),
        _req(64, 64, 4096, kind="single", buffers=(64 * 1024, -1, -1)),
    ])
    f = [g["fields"] for g in got]
    # two cores on a square C: cut along M; C to a vector core: cut along N, M whole
    assert (f[0]["singleCoreM"], f[0]["singleCoreN"], f[0]["usedCoreNum"]) == (256, 512, 2)
    assert (f[1]["singleCoreM"], f[1]["singleCoreN"], f[1]["baseN"]) == (512, 64, 64)
    assert (f[2]["singleCoreM"], f[2]["singleCoreN"]) == (256, 128)  # (GM: the most square parts)
    # one core: the shape itself; base blocks min(128 / 256 / 64, the part) rounded up to 16
    assert [f[3][x] for x in ("singleCoreM", "singleCoreN", "baseM", "baseN", "baseK")] == [100, 70, 112, 80, 64]
    assert (f[4]["singleCoreM"], f[4]["singleCoreN"], f[4]["usedCoreNum"]) == (160, 112, 4)
    assert (got[5]["mDim"], got[5]["nDim"], f[5]["dbL0C"]) == (4, 6, 1)
    # K loaded whole with two buffers where it fits, else fewer steps
    assert f[0]["stepKa"] == 2 and f[0]["depthA1"] == 4
    assert f[6]["stepKa"] < 4096 // 64


def test_it_agrees_with_the_python_helper_on_the_cut_and_base_blocks(driver) -> None:
    cases = [(128, 256, 64, 1), (512, 512, 128, 2), (256, 1024, 256, 4), (1024, 1024, 64, 8)]
    got, _ = _run(driver, [_req(m, n, k, dim=c) for m, n, k, c in cases])
    for (m, n, k, c), g in zip(cases, got):
        py = matmul_tiling(m, n, k, cores=c)
        keys = ("usedCoreNum", "singleCoreM", "singleCoreN", "singleCoreK", "baseM", "baseN", "baseK", "dbL0A", "dbL0B")
        assert {x: g["fields"][x] for x in keys} == {x: py[x] for x in keys}


def test_a_request_it_cannot_tile_is_minus_one_with_the_reason(driver) -> None:
    bad = [
        _req(64, 64, 64, typed=False),  # no SetAType / SetBType / SetCType
        _req(64, 64, 64, fix=(24, -1, -1)),  # baseM not a multiple of 16
        _req(512, 512, 64, fix=(256, 256, -1)),  # 256 x 256 float C blocks overflow L0C
        _req(512, 512, 64, fix=(-1, -1, 24)),  # baseK not a multiple of 16
        _req(512, 512, 64, dim=2, single=(128, 512)),  # 4 parts along M, 2 cores
        _req(64, 64, 64, buffers=(1024, -1, -1)),  # no room in L1 for one block of each
        _req(64, 64, 64, dim=2, vecin=True, buffers=(-1, -1, 0)),  # C to UB with no UB
        _req(64, 64, 64, kind="single", fix=(64, 512, -1), bias=True),  # bias row beyond the bias table
    ]
    got, err = _run(driver, bad)
    assert [g["ret"] for g in got] == [-1] * len(bad)
    for words in ("SetAType, SetBType and SetCType", "multiples of 16", "does not fit", "at most 2 cores",
                  "does not fit L1", "no UB space"):
        assert words in err
    assert err.count("MatmulApi Tiling: ") >= len(bad)
    got, err = _run(driver, [_req(64, 64, 64, dim=0), _req(64, 64, 64, dim=49)])
    assert [g["setDim"] for g in got] == [-1, -1] and "SetDim(49)" in err


def test_the_platform_is_the_device_model(tmp_path) -> None:
    exe = _compile(tmp_path, "platform", r"""
#include <cstdio>
#include "tiling/platform/platform_ascendc.h"
int main() {
    using namespace platform_ascendc;
    PlatformAscendC* p = PlatformAscendCManager::GetInstance("Ascend910B1");
    if (p != PlatformAscendCManager::GetInstance()) return 1;
    uint64_t s[9];
    for (int i = 0; i < 9; ++i) p->GetCoreMemSize(CoreMemType(i), s[i]);
    std::printf("%u %u %u %u %u %d %d\n", p->GetCoreNumAic(), p->GetCoreNumAiv(), p->GetCoreNum(),
                p->GetCoreNumVector(), p->GetLibApiWorkSpaceSize(), int(p->GetSocVersion() == SocVersion::ASCEND910B),
                int(p->GetCurNpuArch() == NpuArch::DAV_2201));
    for (int i = 0; i < 9; ++i) std::printf("%llu ", (unsigned long long)s[i]);
    std::printf("\n%u %u %u %u\n", p->CalcTschNumBlocks(48, 24, 48), p->CalcTschNumBlocks(7, 24, 48),
                p->CalcTschNumBlocks(100, 0, 48), p->CalcTschNumBlocks(5, 24, 0));
}
""")
    lines = subprocess.run([exe], capture_output=True, text=True, timeout=30, check=True).stdout.splitlines()
    aic, aiv, num, vec, ws, soc, arch = map(int, lines[0].split())
    spec = DEFAULT_SPEC
    assert (aic, aiv, num, vec, soc, arch) == (spec.ai_cores, 2 * spec.ai_cores, 2 * spec.ai_cores, 0, 1, 1)
    assert ws >= workspace_bytes(spec.ai_cores, 1)  # the matmul server's need, one object on every AI core
    l0a, l0b, l0c, l1, _l2, ub, _hbm, _fb, bt = map(int, lines[1].split())
    assert (l0a, l0b, l0c, l1, ub, bt) == (spec.l0a_bytes, spec.l0b_bytes, spec.l0c_bytes, spec.l1_bytes,
                                           spec.ub_bytes, BT)
    assert list(map(int, lines[2].split())) == [24, 4, 48, 5]


def test_tcube_tiling_has_the_host_accessors_and_converts_from_bytes(tmp_path) -> None:
    exe = _compile(tmp_path, "accessors", r"""
#include <cstdio>
#include "kernel_tiling/kernel_tiling.h"
struct Holder {
    static constexpr uint8_t bytes[sizeof(TCubeTiling)] = {3, 0, 0, 0, 0, 1};
    static constexpr TCubeTiling value = convert_from_bytes<TCubeTiling>(bytes);
};
static_assert(Holder::value.usedCoreNum == 3 && Holder::value.M == 256, "converted at compile time");
int main() {
    optiling::TCubeTiling t;
    t.set_baseK(64);
    t.set_depthA1(2);
    uint8_t buf[sizeof(TCubeTiling)];
    t.SaveToBuffer(buf, t.GetDataSize());
    std::printf("%d %d %zu %d\n", t.get_baseK(), t.get_depthA1(), t.GetDataSize(),
                int(reinterpret_cast<const TCubeTiling*>(buf)->baseK));
}
""")
    out = subprocess.run([exe], capture_output=True, text=True, timeout=30, check=True).stdout.split()
    assert out == ["64", "2", str(4 * len(FIELDS)), "64"]


def test_the_batch_layout_setters_fill_the_layout_fields(tmp_path) -> None:
    exe = _compile(tmp_path, "batch", r"""
#include <cstdio>
#include "tiling/tiling_api.h"
using namespace matmul_tiling;
static void types(MatmulApiTilingBase& t) {
    t.SetAType(TPosition::GM, CubeFormat::ND, DataType::DT_FLOAT16);
    t.SetBType(TPosition::GM, CubeFormat::ND, DataType::DT_FLOAT16, true);
    t.SetCType(TPosition::GM, CubeFormat::ND, DataType::DT_FLOAT);
    t.SetShape(32, 256, 64);
}
int main() {
    MultiCoreMatmulTiling multi;
    types(multi);
    multi.SetDim(1);
    int bad = multi.SetALayout(2, 32, 0, 3, 64);
    multi.SetALayout(2, 32, 1, 3, 64);
    multi.SetBLayout(2, 256, 1, 3, 64);
    multi.SetCLayout(2, 32, 1, 3, 256);
    multi.SetBatchNum(3);
    TCubeTiling t{};
    long long r = multi.GetTiling(t);
    std::printf("%d %lld %d %d %d %d %d %d %d %d %d %d %d\n", bad, r, t.ALayoutInfoB, t.ALayoutInfoS, t.ALayoutInfoN,
                t.ALayoutInfoG, t.ALayoutInfoD, t.BLayoutInfoS, t.BLayoutInfoD, t.CLayoutInfoS1, t.CLayoutInfoG,
                t.CLayoutInfoS2, t.BatchNum);
    BatchMatmulTiling batch;
    types(batch);
    batch.SetBatchInfoForNormal(4, 2, 32, 256, 64);
    TCubeTiling u{};
    r = batch.GetTiling(u);
    std::printf("%lld %d %d %d %d %d %d %d\n", r, u.usedCoreNum, u.singleCoreM, u.singleCoreN, u.ALayoutInfoB,
                u.BLayoutInfoB, u.CLayoutInfoB, u.BatchNum);
}
""")
    lines = subprocess.run([exe], capture_output=True, text=True, timeout=30, check=True).stdout.splitlines()
    assert list(map(int, lines[0].split())) == [-1, 0, 2, 32, 1, 3, 64, 256, 64, 32, 3, 256, 3]
    # BatchMatmulTiling: one core computes whole matrices unless SetDim says otherwise; NORMAL's batches
    assert list(map(int, lines[1].split())) == [0, 1, 32, 256, 4, 2, 4, 4]


def test_matmul_config_params_and_dequant_type(tmp_path) -> None:
    """SetMatmulConfigParams' traversal sets iterateOrder (as SetTraverse); N_BUFFER_33 cuts C into
    parts without tails (mpnpu's choice: the dev kit's sample offsets its cores with no SetTail);
    SetDequantType takes SCALAR and TENSOR."""
    exe = _compile(tmp_path, "config", r"""
#include <cstdio>
#include "tiling/tiling_api.h"
using namespace matmul_tiling;
static void types(MatmulApiTilingBase& t, int m, int n, int k) {
    t.SetAType(TPosition::GM, CubeFormat::ND, DataType::DT_FLOAT16);
    t.SetBType(TPosition::GM, CubeFormat::ND, DataType::DT_FLOAT16);
    t.SetCType(TPosition::GM, CubeFormat::ND, DataType::DT_FLOAT);
    t.SetOrgShape(m, n, k);
    t.SetShape(m, n, k);
}
int main() {
    MatmulApiTiling one;
    types(one, 128, 128, 64);
    one.SetMatmulConfigParams(1, false, ScheduleType::OUTER_PRODUCT, MatrixTraverse::FIRSTN, false);
    TCubeTiling t{};
    long long r = one.GetTiling(t);
    std::printf("%lld %d %d %d\n", r, t.iterateOrder, one.SetDequantType(DequantType::SCALAR),
                one.SetDequantType(DequantType::TENSOR));
    for (int nb = 0; nb < 2; ++nb) {
        MultiCoreMatmulTiling multi;
        types(multi, 256, 512, 192);
        multi.SetDim(24);
        if (nb) multi.SetMatmulConfigParams(MatmulConfigParams(1, false, ScheduleType::N_BUFFER_33));
        TCubeTiling u{};
        r = multi.GetTiling(u);
        std::printf("%lld %d %d %d\n", r, u.usedCoreNum, u.singleCoreM, u.singleCoreN);
    }
}
""")
    lines = subprocess.run([exe], capture_output=True, text=True, timeout=30, check=True).stdout.splitlines()
    assert list(map(int, lines[0].split())) == [0, 1, 0, 0]
    plain = list(map(int, lines[1].split()))
    assert plain[0] == 0 and (256 % plain[2] or 512 % plain[3])  # the most cores, with a tail
    r, used, sm, sn = map(int, lines[2].split())
    assert r == 0 and 256 % sm == 0 and 512 % sn == 0 and used == (256 // sm) * (512 // sn) <= 24


# -- our matmul kernels driven by the computed tilings -----------------------------------------------------


@pytest.fixture(scope="module")
def kernels():
    return {"impl": compile_kernel(source("cube/mm_impl.cpp"), "mm_impl"),
            "client": compile_kernel(source("cube/mm_client.cpp"), "mm_client", kernel_type=KernelType.MIX_1_2),
            "layout": tiling_layout(source("cube/mm_tiling.h"), "MmTestTiling")}


def _close(out: np.ndarray, ref: np.ndarray) -> None:
    scale = max(1.0, float(np.abs(ref).max()))
    assert np.abs(np.asarray(out, np.float32) - ref).max() <= 4e-5 * scale


@pytest.mark.usefixtures("no_leaks")
@pytest.mark.parametrize("m,n,k,cores", [(128, 256, 64, 1), (100, 70, 50, 1), (200, 300, 96, 2), (96, 130, 600, 4)])
def test_the_cube_cores_compute_numpys_product_with_the_computed_tiling(driver, kernels, m, n, k, cores) -> None:
    (got,), _ = _run(driver, [_req(m, n, k, dim=cores, bias=True)])
    t = got["fields"]
    rng = np.random.default_rng(m + n + k)
    a, b = rng.standard_normal((m, k)).astype(np.float16), rng.standard_normal((k, n)).astype(np.float16)
    bias = rng.standard_normal(n).astype(np.float32)
    packed = kernels["layout"].pack({**as_fields(t, "cube"), "mode": 4, "rounds": 1})  # mode 4: with the bias
    with device(t["usedCoreNum"], kernel_type=KernelType.MIX_1_2) as dev:
        args = [dev.to_device("a", a), dev.to_device("b", b), dev.to_device("bias", bias),
                dev.to_device("c", np.zeros((m, n), np.float32)), dev.to_device("tiling", packed)]
        dev.launch(kernels["impl"], *args, 0)
        out = dev.to_host(args[3])
    _close(out, a.astype(np.float32) @ b.astype(np.float32) + bias)


@pytest.mark.usefixtures("no_leaks")
@pytest.mark.parametrize("m,n,k,block_dim", [(256, 256, 64, 1), (250, 90, 70, 2)])
def test_vector_cores_drive_the_cube_with_the_computed_tiling(driver, kernels, m, n, k, block_dim) -> None:
    (got,), _ = _run(driver, [_req(m, n, k, dim=2 * block_dim, vecin=True)])
    t = got["fields"]
    assert t["usedCoreNum"] <= 2 * block_dim
    rng = np.random.default_rng(7)
    a, b = rng.standard_normal((m, k)).astype(np.float16), rng.standard_normal((k, n)).astype(np.float16)
    packed = kernels["layout"].pack({**as_fields(t, "cube"), "mode": 0, "rounds": 1})
    with device(block_dim, kernel_type=KernelType.MIX_1_2) as dev:
        args = [dev.to_device("a", a), dev.to_device("b", b), dev.to_device("bias", np.zeros(n, np.float32)),
                dev.to_device("c", np.zeros((m, n), np.float32)), dev.to_device("peek", np.zeros(64, np.float32)),
                dev.to_device("workspace", np.zeros(workspace_bytes(block_dim, 2), np.uint8)),
                dev.to_device("tiling", packed)]
        dev.launch(kernels["client"], *args)
        out = dev.to_host(args[3])
    _close(out, a.astype(np.float32) @ b.astype(np.float32))


def test_ascend_string_and_the_host_tiling_definition_header(tmp_path) -> None:
    exe = _compile(tmp_path, "ascend_string", r"""
#include <cstdio>
#include <unordered_set>
#include "graph/ascend_string.h"
#include "register/tilingdata_base.h"
namespace optiling {
BEGIN_TILING_DATA_DEF(HostOnly)
TILING_DATA_FIELD_DEF(uint64_t, total);
TILING_DATA_FIELD_DEF_ARR(int32_t, 3, dims);
END_TILING_DATA_DEF;
REGISTER_TILING_DATA_CLASS(HostOp, HostOnly)
}  // namespace optiling
int main() {
    ge::AscendString a("reduction"), b("reduction mean", 9), empty, null(nullptr);
    std::unordered_set<ge::AscendString> seen{a, b};
    optiling::HostOnly t;
    t.set_total(7);
    const int32_t dims[3] = {1, 2, 3};
    t.set_dims(dims);
    std::printf("%s %zu %d %d %d %d %zu %zu %zu [%s] %zu %llu %d %zu\n", a.GetString(), a.GetLength(), int(a == b),
                int(empty == null), int(ge::AscendString("a") < ge::AscendString("b")), int(a != empty),
                ge::AscendString("abcabc").Find(ge::AscendString("ca")), a.Find(ge::AscendString("zz")),
                seen.size(), empty.GetString(), empty.GetLength(), (unsigned long long)t.get_total(),
                t.get_dims()[2], t.GetDataSize());
}
""")
    out = subprocess.run([exe], capture_output=True, text=True, timeout=30, check=True).stdout.split()
    assert out == ["reduction", "9", "1", "1", "1", "1", "2", str(2**64 - 1), "1", "[]", "0", "7", "3", "24"]
