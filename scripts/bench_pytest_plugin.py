"""What the pytest helpers cost over the bare library calls, side by side, in one run.

Three pairs, each timed alternately (the order swapped every round, so neither side always runs on
a warmer or quieter machine) over several rounds, on one persistent device:

- ``assert_matches_golden(op, cases, repeat)`` against a bare ``run_batch`` of the same cases
  (what the helper adds: resolving the operator, checking the result, formatting nothing on pass);
- ``assert_no_races(op, cases)`` against the same cases made and launched untraced through
  ``op.run`` (what racechecking the launches costs: tracing in the cores plus happens-before
  analysis);
- a whole ``pytest`` run of a test file using the ``mpnpu_device`` fixture and
  ``assert_matches_golden`` against ``python -c`` doing the same batch on a fresh device (what
  pytest and the plugin add, start-up included).

Prints each round's times, the median ratio and the median difference (seconds) per pair. The
machine may be shared: only ratios measured side by side mean anything.

    python scripts/bench_pytest_plugin.py [--cases 30] [--repeat 2] [--rounds 5] [--block-dim N]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

from mpnpu.cli.options import DEFAULT_OPERATOR
from mpnpu.harness.runner import Variant, run_batch
from mpnpu.operators.registry import load_operator
from mpnpu.runtime.config import DEFAULT_BLOCK_DIM
from mpnpu.runtime.device import Device
from mpnpu.testing import assert_matches_golden, assert_no_races

TEST_FILE = '''
from mpnpu.testing import assert_matches_golden


def test_batch(mpnpu_device):
    assert_matches_golden("{op}", cases={cases}, repeat={repeat}, device=mpnpu_device)
'''

SCRIPT = '''
from mpnpu.operators.registry import load_operator
from mpnpu.harness.runner import Variant, run_batch
from mpnpu.runtime.device import Device

with Device({block_dim}) as dev:
    batch = run_batch(load_operator("{op}"), cases={cases}, repeat={repeat},
                      variants=[Variant("fixed", frozenset())], device=dev)
assert batch.variants["fixed"].clean
'''


def timed(fn: Callable[[], object]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def side_by_side(name: str, a: tuple[str, Callable[[], object]], b: tuple[str, Callable[[], object]],
                 rounds: int) -> float:
    """Median of b/a over ``rounds`` alternating rounds; prints every round."""
    print(f"\n{name}: {b[0]} / {a[0]}")
    ratios, diffs = [], []
    for r in range(rounds):
        first, second = (a, b) if r % 2 == 0 else (b, a)
        times = {first[0]: timed(first[1]), second[0]: timed(second[1])}
        ratio = times[b[0]] / times[a[0]]
        ratios.append(ratio)
        diffs.append(times[b[0]] - times[a[0]])
        print(f"  round {r + 1}: {a[0]} {times[a[0]]:.2f} s, {b[0]} {times[b[0]]:.2f} s, ratio {ratio:.2f}")
    med = statistics.median(ratios)
    print(f"  median ratio {med:.2f} (min {min(ratios):.2f}, max {max(ratios):.2f}); "
          f"median difference {statistics.median(diffs):+.2f} s")
    return med


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", type=int, default=30)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--block-dim", type=int, default=None)
    args = ap.parse_args()

    op = load_operator(DEFAULT_OPERATOR)
    block_dim = args.block_dim or DEFAULT_BLOCK_DIM
    print(f"{op.name}, fixed variant, {args.cases} cases x {args.repeat} repeats, block_dim {block_dim}, "
          f"{len(os.sched_getaffinity(0))} CPUs, load average {os.getloadavg()[0]:.1f}; {args.rounds} rounds")
    fixed = [Variant("fixed", frozenset())]
    ratios = {}
    with Device(block_dim) as dev:
        def bare_batch() -> None:
            result = run_batch(op, cases=args.cases, repeat=args.repeat, variants=fixed, device=dev)
            assert result.expected_clean_are_clean

        def helper_batch() -> None:
            assert_matches_golden(op, cases=args.cases, repeat=args.repeat, device=dev)

        def bare_launches() -> None:
            for i in range(args.cases):  # the cases made as the helper makes them
                op.run(dev, op.make_case(0, i), drop_syncs=frozenset(), probe="", trace=False)

        def helper_races() -> None:
            assert_no_races(op, cases=args.cases, device=dev)

        bare_batch()  # warm-up: case cache, imports, first GM segment
        ratios["assert_matches_golden"] = side_by_side(
            "assert_matches_golden over run_batch", ("run_batch", bare_batch), ("helper", helper_batch), args.rounds)
        ratios["assert_no_races"] = side_by_side(
            "assert_no_races over untraced launches of the same cases", ("launches", bare_launches),
            ("helper", helper_races), args.rounds)

    with tempfile.TemporaryDirectory() as tmp:
        fields = dict(op=DEFAULT_OPERATOR, cases=args.cases, repeat=args.repeat, block_dim=block_dim)
        test = Path(tmp, "test_bench_plugin.py")
        test.write_text(TEST_FILE.format(**fields))
        script = SCRIPT.format(**fields)
        pytest_cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(test),
                      "--mpnpu-block-dim", str(block_dim)]
        python_cmd = [sys.executable, "-c", script]

        def run(cmd: list[str]) -> Callable[[], None]:
            return lambda: subprocess.run(cmd, cwd=tmp, check=True, capture_output=True)

        ratios["pytest run"] = side_by_side(
            "a pytest run of a test file over python -c doing the same batch", ("python", run(python_cmd)),
            ("pytest", run(pytest_cmd)), args.rounds)

    print("\nmedian ratios: " + ", ".join(f"{k} {v:.2f}x" for k, v in ratios.items()))


if __name__ == "__main__":
    main()
