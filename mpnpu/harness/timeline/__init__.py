"""Launch timelines: which traced launches to keep (:mod:`.select`) and what they show (:mod:`.model`).

The writers (Chrome Trace Event JSON, PNG/SVG) are :mod:`mpnpu.report.chrome_trace` and
:mod:`mpnpu.report.picture`.
"""

from mpnpu.harness.timeline.model import Barrier, Flow, Instant, LaunchTimeline, Race, Span, build_timeline
from mpnpu.harness.timeline.select import KeptRun, TimelineSelector

__all__ = [
    "Barrier", "Flow", "Instant", "KeptRun", "LaunchTimeline", "Race", "Span", "TimelineSelector",
    "build_timeline",
]
