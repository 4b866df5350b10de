"""Soaks as text: the fixed kernel's soak, the stress soak and the watchdog's soak."""

from __future__ import annotations

from mpnpu.harness.handshakes import KERNELS, WatchdogSoak
from mpnpu.harness.soak import FixedSoak, StressSoak
from mpnpu.harness.stats import rule_of_three, zero_failure_upper_bound
from mpnpu.report.text.scale import shard_lines


def format_fixed_soak(s: FixedSoak) -> str:
    n, k = s.case_runs, s.failed_case_runs
    packings = sorted({r.packing for r in s.run.results if r.packing})
    lines = [f"soak: fixed {s.operator} kernel, {s.cases} cases x {s.repeat} repeats, seed {s.seed}, block_dim "
             f"{s.block_dim} (core processes per shard: {', '.join(packings) or '-'}); {len(s.shards)} shard(s) of "
             f"up to {min(s.cases, s.shard_cases)} cases"]
    if s.run.interrupted:
        lines.append("INTERRUPTED: the counts cover only the case-runs that finished")
    lines.append(f"case-runs: {n}; failures: {k}")
    if k == 0 and n:
        lines.append(f"95% upper bound on the failure rate: {rule_of_three(n):.3g} (rule of three, 3/n); "
                     f"exact {zero_failure_upper_bound(n):.3g}")
    for r in s.rows:
        v = r.variants["fixed"]
        if v.failed_case_runs:
            lines.append(f"failed outputs (case-runs): {dict(v.failed_by_output)}; launch errors: {v.launch_errors}"
                         + (f" (first: {v.first_launch_error})" if v.first_launch_error else ""))
            lines.append(f"failing cases by repeat: {[c for c in v.failing_cases_by_repeat if c][:5]} ...")
    lines += [f"error: {e}" for e in s.errors]
    lines += shard_lines(s.run, len(s.shards), detail_limit=0 if len(s.shards) > 40 else 40)
    lines.append(f"wall time: {s.wall_s:.1f} s ({s.ms_per_case_run:.1f} ms per case-run, golden included; "
                 f"{n / s.wall_s if s.wall_s else 0:.1f} case-runs/s)")
    return "\n".join(lines)


def format_stress_soak(s: StressSoak) -> str:
    total, failed = s.case_runs, s.failed_case_runs
    lines = [f"soak of the fixed kernel: {len(s.configurations)} configurations, {s.rounds} round(s), "
             f"{s.elapsed_s:.0f} s" + (" (INTERRUPTED)" if s.interrupted else "")]
    width = max(len(label) for label in s.counts)
    lines += [f"  {label:<{width}}  {c['failed_case_runs']}/{c['case_runs']}" for label, c in s.counts.items()]
    if s.run is not None:
        lines += shard_lines(s.run, len(s.shards), detail_limit=0)
    errors = s.shard_errors
    if failed == 0 and total and not errors:
        lines.append(f"fixed: 0 failures in {total} case-runs; 95% upper bound on the rate: "
                     f"{rule_of_three(total):.2e} (rule of three), {zero_failure_upper_bound(total):.2e} (exact)")
    else:
        lines.append(f"fixed: {failed} FAILURES in {total} case-runs"
                     + (f"; {errors} shard(s) with errors" if errors else ""))
    return "\n".join(lines)


def format_watchdog_soak(s: WatchdogSoak) -> str:
    lines = [f"soak_watchdog: {s.launches} launches ({s.rounds} x {', '.join(KERNELS)}), block_dim {s.block_dim}, "
             f"watchdog tick {s.tick_ms:g} ms, late core {s.late_ms:g} ms, {s.hogs} hog(s); {s.wall_s:.1f} s",
             f"failed launches: {len(s.failures)}"]
    lines += [f"  {line}" for line in s.failures[:10]]
    if len(s.failures) > 10:
        lines.append(f"  ... and {len(s.failures) - 10} more")
    return "\n".join(lines)
