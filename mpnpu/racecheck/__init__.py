"""Happens-before race detection for GM, from launch traces alone.

In the spirit of Ascend msSanitizer racecheck and CUDA compute-sanitizer racecheck: a traced
launch (:class:`mpnpu.runtime.trace.LaunchTrace`, one event list per core) is turned into vector clocks
(:mod:`.hb`: program order, SyncAll rounds, counting cross-core flags), every pair of overlapping
GM accesses from different cores that could conflict is checked against them (:mod:`.detect`),
and the unordered ones are merged into hazards (:mod:`.hazards`), returned as data::

    LaunchTrace ──hb.compute_clocks──▶ VectorClocks
         │                                  │
         └──detect.find_conflicts───────────┴──▶ Conflicts (access pairs)
                                                     │ detect.hazards_from
                                                     ▼
                         list[Hazard] ──HazardLog.add──▶ merged over launches ──▶ to_dicts()

Usage, on a real launch (:mod:`.launch`)::

    hazards = check_launch_with(device, LaunchOptions(drop_syncs={"S1"}), kernel, *args)
    print(mpnpu.report.hazards.format_hazards(hazards))   # msSanitizer-style text

or on traces already recorded (``Device.launch_with(LaunchOptions(trace=True), ...).trace``)::

    log = HazardLog()
    for trace in traces:
        log.add(analyze(trace))
    print(mpnpu.report.hazards.format_hazard_log(log))

Over many launches (a batch), :class:`~mpnpu.racecheck.reuse.AnalysisCache` analyses each distinct
trace once: a launch whose trace is the same but for its times reuses that analysis, its consequences
recomputed from its own times (:mod:`.reuse`)::

    cache = AnalysisCache()
    for trace in traces:
        log.add(cache.analyze(trace), reused=cache.last_reused)

The analysis needs no processes: everything works on traces, and returns data (the text is
:mod:`mpnpu.report.hazards`'s).
"""

from mpnpu.racecheck.detect import Conflicts, analyze, find_conflicts, hazards_from, stage_order
from mpnpu.racecheck.hazards import AccessSite, Hazard, HazardLog
from mpnpu.racecheck.hb import VectorClocks, compute_clocks
from mpnpu.racecheck.launch import CaseCheck, check_case, check_launch, check_launch_with
from mpnpu.racecheck.reuse import AnalysisCache

__all__ = [
    "AccessSite",
    "AnalysisCache",
    "CaseCheck",
    "Conflicts",
    "Hazard",
    "HazardLog",
    "VectorClocks",
    "analyze",
    "check_case",
    "check_launch",
    "check_launch_with",
    "compute_clocks",
    "find_conflicts",
    "hazards_from",
    "stage_order",
]
