"""Timelines and stress sweeps as pictures (PNG or SVG, by the file's extension), with matplotlib.

matplotlib is an optional extra (``pip install 'mpnpu[plot]'``): :func:`require_matplotlib`
turns its absence into one line saying what to install. Figures are made without pyplot (no
global state, no display needed).

A launch timeline is one panel per launch: a lane per core process (grouped by AI core), the
kernel's stages as coloured bars, time spent waiting (SyncAll, flag waits) hatched, GM accesses as
ticks under the stage bar (reads blue, writes orange, atomics purple), every SyncAll release as a
vertical line across all lanes, a sync point the launch dropped as a red dashed mark on each lane
where a core skipped it — and the race: the racing write and read circled in red, an arrow
between them, and a caption saying who accessed what, where, and in which order.
"""

from __future__ import annotations

import os
import textwrap
from typing import IO, TYPE_CHECKING, Any, Sequence, Union

from mpnpu.errors import InvalidArgumentError, UsageError
from mpnpu.harness.timeline.inversions import Inversion
from mpnpu.harness.timeline.model import (
    FLAG,
    GM,
    INSERTED,
    INSERTED_PREFIX,
    STAGE,
    SYNC,
    LaunchTimeline,
    Race,
    Span,
)
from mpnpu.racecheck.hazards import AccessSite, key_text
from mpnpu.report import write_report
from mpnpu.runtime.topology import CoreType

if TYPE_CHECKING:
    from matplotlib.axes import Axes

PICTURE_FORMATS = ("png", "svg")
INSTALL_HINT = "pip install 'mpnpu[plot]'"

_STAGE_COLORS = ["#9ecae1", "#fdae6b", "#a1d99b", "#bcbddc", "#fdd0a2", "#c7e9c0"]
_ACCESS_COLORS = {GM["R"]: "#3182bd", GM["W"]: "#e6550d", GM["A"]: "#756bb1"}
_RACE = "#d62728"
_INSERTED = "#1a9641"  # a sync point inserted for the launch (a repair being tried)


def require_matplotlib(option: str) -> None:
    """Raise a one-line UsageError naming the extra to install when matplotlib is missing."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise UsageError(f"{option} needs matplotlib: {INSTALL_HINT}") from None


def picture_format(path: str) -> str:
    ext = os.path.splitext(path)[1].lower().lstrip(".")
    if ext not in PICTURE_FORMATS:
        raise UsageError(f"{path}: a picture must end in .png or .svg")
    return ext


DPI = 110  # PNG pixels per inch
TIMELINE_WIDTH_IN = 13.0


def _figure(width: float, height: float) -> Any:
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height), dpi=DPI, layout="constrained")


def _save(fig: Any, out: IO[bytes], fmt: str) -> None:
    import matplotlib

    # SVG text stays text (searchable, small) instead of glyph outlines.
    with matplotlib.rc_context({"svg.fonttype": "none"}):
        fig.savefig(out, format=fmt, metadata={"Software": "mpnpu"} if fmt == "png" else None)


class TimelinePicture:
    """Launch timelines as a picture: one panel per launch (see the module docstring)."""

    binary = True

    def __init__(self, fmt: str) -> None:
        self.fmt = fmt

    def write(self, timelines: Sequence[LaunchTimeline], out: IO[bytes]) -> None:
        _save(timeline_figure(timelines), out, self.fmt)


class SweepPicture:
    """A stress sweep's failure rate per configuration and variant, with its 95% Wilson interval."""

    binary = True

    def __init__(self, fmt: str, title: str = "") -> None:
        self.fmt, self.title = fmt, title

    def write(self, result: Any, out: IO[bytes]) -> None:
        title = self.title or f"{result.operator}: failing case-runs per configuration"
        _save(sweep_figure(sweep_rows(result), title), out, self.fmt)


# -- launch timelines ---------------------------------------------------------------------------


def _lanes(tl: LaunchTimeline) -> list[int]:
    """Core ids top to bottom: per AI core its cube, then its two vector cores."""
    return sorted(range(tl.topology.n_cores),
                  key=lambda c: (tl.topology.core(c).ai_core, tl.topology.core(c).core_type is CoreType.VECTOR,
                                 tl.topology.core(c).sub_block_idx))


#: the longest stage name a picture prints (a C++ stage is its function's full name)
_NAME_CHARS = 32


def short_name(name: str) -> str:
    """A stage's name as a picture prints it: a C++ function's name without its template arguments and
    with at most its class ("AscendC::MatmulImpl<AscendC::MatmulType<...>, ...>::Iterate" ->
    "MatmulImpl::Iterate"), cut to :data:`_NAME_CHARS` characters ("..." at the end); the JSON keeps the
    full name."""
    out, depth = [], 0
    for ch in name:
        if ch == "<":
            depth += 1
        elif ch == ">" and depth:
            depth -= 1
        elif not depth:
            out.append(ch)
    plain = "".join(out).strip()
    if "::" in plain and "(" not in plain:
        plain = "::".join(plain.split("::")[-2:])
    return plain if len(plain) <= _NAME_CHARS else plain[:_NAME_CHARS - 3] + "..."


def _lane_label(tl: LaunchTimeline, core: int) -> str:
    """"aic0  cube", "aiv1  vector 1" (the AI core's second vector core); a vector core alone in its
    block (a vector-only or mix 1:1 kernel) is "aiv5  vector", with no sub-block index to tell apart."""
    info = tl.topology.core(core)
    if info.core_type is CoreType.CUBE:
        return f"{info.short}  cube"
    if _lanes_per_block(tl) - (1 if _has_cube(tl) else 0) <= 1:
        return f"{info.short}  vector"
    return f"{info.short}  vector {info.sub_block_idx}"


def _has_cube(tl: LaunchTimeline) -> bool:
    return any(tl.topology.core(c).core_type is CoreType.CUBE for c in range(tl.topology.n_cores))


def _lanes_per_block(tl: LaunchTimeline) -> int:
    """The core processes of one AI core (3 for mix 1:2, 2 for mix 1:1, 1 for a vector- or cube-only kernel)."""
    return max(1, tl.topology.n_cores // max(tl.topology.block_dim, 1))


#: a label's width per character, in inches, at 8 pt bold (DejaVu Sans averages about 0.62 em)
_CHAR_INCHES_8PT = 0.62 * 8 / 72


def _label_inches(text: str) -> float:
    """About how wide ``text`` is drawn at 8 pt bold, with its box's padding."""
    return len(text) * _CHAR_INCHES_8PT + 0.1


#: GM accesses are drawn in a strip along the bottom of their core's lane. Copies an asynchronous
#: pipe executed can overlap each other in time: MTE2 (reads into the core) in the strip's lower
#: half, MTE3/FIX (writes out) in its upper half, so neither hides the other.
_STRIP_Y, _STRIP_H = -0.4, 0.22
_UPPER_STRIP = frozenset(("MTE3", "FIX"))


def _access_strip(s: Span, y: float) -> tuple[float, float]:
    """(bottom, height) of a GM access's tick in the lane at ``y``."""
    if not s.lane:
        return y + _STRIP_Y, _STRIP_H
    half = _STRIP_H / 2
    return y + _STRIP_Y + (half if s.lane in _UPPER_STRIP else 0.0), half


def _ms(ns: float) -> float:
    return ns / 1e6


_VERB = {"READ": "reads", "WRITE": "writes", "ATOMIC": "atomically adds to"}
_NOUN = {"READ": "read", "WRITE": "write", "ATOMIC": "atomic add"}


def _site(site: str) -> str:
    return site.rsplit("/", 1)[-1]


def _who(side: AccessSite) -> str:
    """A side's core, and its pipe for a race inside a core: "aiv1", "aiv0 MTE2"."""
    return f"{side.short} {side.pipe.removeprefix('PIPE_')}" if side.pipe else side.short


def _caption(race: Race, passed: bool | None = None, summary: str = "") -> str:
    """What the drawn pair did, in intended order, then in the order it happened in this run:
    who read stale data (or whose write landed out of order), and whether it mattered."""
    h, a, b = race.hazard, race.first, race.second
    x, y = race.first_side, race.second_side
    lo, hi = race.elements
    first, second = _NOUN[x.access], _NOUN[y.access]
    head = (f"{race.title}:  {_who(x)} {_VERB[x.access]} {h.tensor}[{lo}:{hi}] in {x.stage} ({_site(x.site)}); "
            f"{_who(y)} {_VERB[y.access]} it in {y.stage} ({_site(y.site)}).")
    if race.inverted:
        when = (f"In this run {_who(y)}'s {second} started at {_ms(b.t0):.3f} ms, {_ms(a.t1 - b.t0):.2f} ms BEFORE "
                f"{_who(x)}'s {first} (from {_ms(a.t0):.3f} ms) had finished: ")
        if h.kind == "RAW":
            order = when + f"{_who(y)} read stale data."
        elif h.kind == "WAR":
            order = when + f"{_who(x)} read data {_who(y)} wrote after it, not the data it was meant to read."
        else:
            order = when + f"the two writes landed out of order; {_who(x)}'s may be what stayed."
        if passed is True:
            order += (" It did not matter this time: the run passed (the stale values equalled the new ones, "
                      "or were not used).")
        elif passed is False:
            order += f" It mattered: the run failed ({summary})." if summary else " It mattered: the run failed."
    else:
        order = (f"In this run {_who(y)}'s {second} came at {_ms(b.t0):.3f} ms, {_ms(b.t0 - a.t1):.2f} ms after "
                 f"{_who(x)}'s {first}: the right order, by luck of scheduling"
                 + (", so nobody read stale data." if h.kind == "RAW" else "."))
        if passed is False:
            order += (f" The run failed all the same ({summary}), not through this hazard: none of its "
                      f"{race.pairs} pairs ran in the wrong order.")
    tail = f"Nothing orders the two: {h.missing_sync}."
    if h.root is not None:
        tail = f"A consequence of {key_text(h.root)}: its accesses depend on data read through that hazard."
    return f"{head}\n{order}\n{tail}"


def _inversion_caption(inv: Inversion) -> str:
    a, b = inv.first, inv.second
    lo, hi = inv.elements
    first, second = _NOUN[a.args["access"]], _NOUN[b.args["access"]]
    head = (f"{inv.title}:  {inv.core} issued a {first} of {inv.tensor}[{lo}:{hi}] to {a.lane} in {a.args['stage']} "
            f"({_site(a.args['site'])}), then a {second} of it to {b.lane} in {b.args['stage']} "
            f"({_site(b.args['site'])}).")
    order = (f"In this run the {second} started {_ms(inv.lead_ns):.2f} ms BEFORE the {first} had finished: "
             + ("it got the old contents." if second == "read" else "the two landed in the wrong order."))
    dropped = f"; sync point {', '.join(inv.dropped)} was dropped" if inv.dropped else ""
    why = (f"Nothing made {b.lane} wait for {a.lane} (a {a.lane}_{b.lane} flag, a pipe barrier, or a SyncAll, which "
           f"drains the core's pipes{dropped}). Observed in this launch: racecheck reported no hazard inside the "
           "core on this tensor.")
    return f"{head}\n{order}\n{why}"


Shown = Union[Race, Inversion]


def _shown(tl: LaunchTimeline) -> Shown | None:
    """What the panel highlights: a hazard whose accesses ran in the wrong order, else a core's
    pipes running its own GM accesses in the wrong order, else the first hazard (in order this time)."""
    for race in tl.races:
        if race.inverted:
            return race
    if tl.inversions:
        return tl.inversions[0]
    return tl.races[0] if tl.races else None


CAPTION_CHARS = 165  # a caption line of the 13-inch figure at 9 pt


def _caption_of(shown: Shown, tl: LaunchTimeline | None = None) -> str:
    if isinstance(shown, Race):
        text = _caption(shown, tl.passed if tl else None, tl.summary if tl else "")
    else:
        text = _inversion_caption(shown)
    return "\n".join(textwrap.fill(line, CAPTION_CHARS) for line in text.split("\n"))


def _race_window(race: Shown, duration_ns: int) -> tuple[int, int]:
    """The stretch of time around the two racing accesses that the zoom panel shows."""
    lo = min(race.first.t0, race.second.t0)
    hi = max(race.first.t1, race.second.t1)
    pad = max((hi - lo) // 2, duration_ns // 80, 20_000)
    return max(0, lo - pad), min(duration_ns, hi + pad)


def _draw_launch(ax: "Axes", tl: LaunchTimeline, stage_colors: dict[str, str],
                 window: tuple[int, int] | None = None, race_labels: bool = True) -> None:
    """Draw the launch; ``window`` (ns): show only that stretch of time (the zoom on the race)."""
    from matplotlib.ticker import MaxNLocator

    lanes = _lanes(tl)
    row = {c: len(lanes) - 1 - i for i, c in enumerate(lanes)}  # top lane first
    height = 0.8
    span_ms = max(_ms(tl.duration_ns), 1e-6)
    x_lo, x_hi = (-0.01 * span_ms, span_ms * 1.01) if window is None else (_ms(window[0]), _ms(window[1]))

    def visible(x: float) -> bool:
        # Text outside the axes would stretch the layout: only label what is in view.
        return x_lo <= x <= x_hi

    for s in tl.spans:
        y = row[s.core]
        x0, w = _ms(s.t0), max(_ms(s.t1 - s.t0), 0.0)
        if s.cat == STAGE:
            ax.broken_barh([(x0, w)], (y - height / 2, height), facecolors=stage_colors[s.name],
                           edgecolor="white", linewidth=0.5, zorder=1)
        elif s.cat == SYNC:
            ax.broken_barh([(x0, w)], (y - height / 2, height), facecolors="#f0f0f0", edgecolor="#888888",
                           hatch="////", linewidth=0.3, zorder=2)
        elif s.cat == FLAG and s.name.startswith("wait"):
            # Waiting for a flag inside a stage: the stage's bar, faded.
            ax.broken_barh([(x0, w)], (y - height / 2, height), facecolors="white", alpha=0.55, zorder=2)
        elif s.cat in _ACCESS_COLORS:
            ax.broken_barh([(x0, w)], _access_strip(s, y), facecolors=_ACCESS_COLORS[s.cat],
                           edgecolor=_ACCESS_COLORS[s.cat], linewidth=0.6, zorder=3)
    # Stage names inside their bars, where they fit.
    for s in tl.spans:
        a, b = max(_ms(s.t0), x_lo), min(_ms(s.t1), x_hi)
        if s.cat == STAGE and b - a > 0.09 * (x_hi - x_lo) * (4 if window is not None else 1):
            ax.text((a + b) / 2, row[s.core] + 0.12, short_name(s.name), ha="center", va="center", fontsize=7.5,
                    color="#333333", zorder=4, clip_on=True)
    top = len(lanes) - 0.5
    placed: list[tuple[float, float, int]] = []  # (x, half width, level) of each label above the lanes
    # the axis's time per inch, to tell how wide a label is in time (the figure's layout moves it little)
    per_inch = (x_hi - x_lo) * ax.figure.dpi / max(ax.bbox.width, 1.0)

    def level(x: float, label: str) -> float:
        # A label that would cover one already placed (barriers and dropped sync points close in time,
        # each label as wide as its text) goes one level up instead of on top of it.
        half = _label_inches(label) / 2 * per_inch
        k = next(k for k in range(len(placed) + 1)
                 if all(abs(x - px) > half + ph for px, ph, pk in placed if pk == k))
        placed.append((x, half, k))
        return top + 0.05 + 0.4 * k

    for bar in tl.barriers:
        x = _ms(bar.release)
        name = bar.name.split()[-1]
        ax.axvline(x, color=_INSERTED if name.startswith(INSERTED_PREFIX) else "#222222", linewidth=1.2, zorder=5)
        # An inserted barrier is labelled by its "inserted" marker below, not twice.
        if visible(x) and not name.startswith(INSERTED_PREFIX):
            ax.text(x, level(x, f" {name} "), f" {name} ", ha="center", va="bottom", fontsize=8,
                    fontweight="bold", color="#222222",
                    bbox={"boxstyle": "round,pad=0.15", "fc": "white", "ec": "#222222", "lw": 0.8})
    marks: dict[tuple[str, str], list[float]] = {}
    for i in tl.instants:
        y = row[i.core]
        color = _INSERTED if i.cat == INSERTED else _RACE
        ax.plot([_ms(i.t)] * 2, [y - 0.48, y + 0.48], color=color, linestyle=(0, (2, 1.5)), linewidth=1.6,
                zorder=5)
        if visible(_ms(i.t)):
            marks.setdefault((i.cat, i.name.rsplit(" ", 1)[0]), []).append(_ms(i.t))
    for (cat, name), xs in marks.items():
        color = _INSERTED if cat == INSERTED else _RACE
        what = "inserted" if cat == INSERTED else "dropped"
        label = f" {name} {what} "
        ax.text(min(xs), level(min(xs), label), label, ha="center", va="bottom", fontsize=8, fontweight="bold",
                color=color, bbox={"boxstyle": "round,pad=0.15", "fc": "white", "ec": color, "lw": 0.8,
                                   "linestyle": "--"})
    ax.set_yticks([row[c] for c in lanes], [_lane_label(tl, c) for c in lanes], fontsize=8.5)
    ax.set_ylim(-0.6, len(lanes) - 0.4)
    ax.set_xlim(x_lo, x_hi)
    ax.xaxis.set_major_locator(MaxNLocator(4 if window is not None else 10))
    ax.set_xlabel("time since the launch started (ms, one clock for every core)" if window is None
                  else "zoom on the race (ms)", fontsize=8.5)
    per_block = _lanes_per_block(tl)
    if per_block > 1:  # a line between AI cores (a kernel with one core per block needs none)
        for a in range(1, tl.topology.block_dim):
            ax.axhline(len(lanes) - per_block * a - 0.5, color="#999999", linewidth=0.8)
    ax.spines[["top", "right"]].set_visible(False)
    shown = _shown(tl)
    if shown is not None:
        _draw_race(ax, shown, row, race_labels)


def _side_labels(shown: Shown) -> tuple[str, str]:
    if isinstance(shown, Race):
        a, b = (f"{_who(side)} {side.access} in {side.stage}\n{_site(side.site)}"
                for side in (shown.first_side, shown.second_side))
        return a, b
    a, b = (f"{s.args['access']} on {s.lane} in {s.args['stage']}\n{_site(s.args['site'])}"
            for s in (shown.first, shown.second))
    return a, b


def _draw_race(ax: "Axes", race: Shown, row: dict[int, int], labels: bool = True) -> None:
    a, b = race.first, race.second
    if a.core == b.core:  # one lane: the arrow arcs above the strip instead of lying along it
        connection = "arc3,rad=-0.6" if a.t0 < b.t0 else "arc3,rad=0.6"
    else:
        connection = "arc3,rad=-0.25"
    pa = (_ms((a.t0 + a.t1) / 2), row[a.core] - 0.29)
    pb = (_ms((b.t0 + b.t1) / 2), row[b.core] - 0.29)
    for p, span in ((pa, a), (pb, b)):
        ax.plot(*p, marker="o", markersize=13, markerfacecolor="none", markeredgecolor=_RACE, markeredgewidth=2.2,
                zorder=7)
        ax.broken_barh([(_ms(span.t0), max(_ms(span.t1 - span.t0), 0.0))], _access_strip(span, row[span.core]),
                       facecolors=_RACE, edgecolor=_RACE, linewidth=1.2, zorder=6)
    ax.annotate("", xy=pb, xytext=pa, zorder=8,
                arrowprops={"arrowstyle": "-|>,head_length=0.6,head_width=0.35", "color": _RACE, "lw": 2.0,
                            "shrinkA": 7, "shrinkB": 7, "connectionstyle": connection})
    if not labels:
        return
    texts = _side_labels(race)
    x_lo, x_hi = ax.get_xlim()
    per_inch = (x_hi - x_lo) * ax.figure.dpi / max(ax.bbox.width, 1.0)  # time per inch of this axis
    halves = [_callout_inches(t) / 2 * per_inch for t in texts]  # each label's half width, centred, in time
    crossing = abs(pa[0] - pb[0]) < halves[0] + halves[1]  # centred, the two would cover each other sideways
    # Below the circle, except in the bottom lane, where that would cover the time axis.
    below = {id(a): row[a.core] > 0, id(b): row[b.core] > 0}
    if a.core != b.core and crossing:
        upper, lower = (a, b) if row[a.core] > row[b.core] else (b, a)
        if below[id(upper)] and not below[id(lower)]:
            # The upper label below its circle and the lower one above its own would meet between the two
            # lanes: the upper one goes above its circle, over its own lane.
            below[id(upper)] = False
    for p, text, span, half in zip((pa, pb), texts, (a, b), halves):
        ha, shift = "center", 0.0
        if a.core == b.core and crossing:  # one lane, close together: each away from the other
            ha = "right" if p[0] < max(pa[0], pb[0]) or (pa[0] == pb[0] and span is a) else "left"
        else:  # kept inside the panel (a zoom panel is narrow; its right edge is the figure's)
            over = max(p[0] + half - x_hi, 0.0) - max(x_lo - (p[0] - half), 0.0)
            shift = -over / per_inch * 72
        down = below[id(span)]
        ax.annotate(text, xy=p, xytext=(shift, -11 if down else 11),
                    textcoords="offset points", ha=ha, va="top" if down else "bottom", fontsize=7.5,
                    fontweight="bold", color=_RACE, zorder=8,
                    bbox={"boxstyle": "round,pad=0.1", "fc": "white", "ec": "none", "alpha": 0.8})


def _callout_inches(text: str) -> float:
    """About how wide a race callout (7.5 pt bold, its lines) is drawn."""
    return max(len(line) for line in text.split("\n")) * _CHAR_INCHES_8PT * 7.5 / 8 + 0.06


def _panel_heights(timelines: Sequence[LaunchTimeline]) -> list[float]:
    return [0.5 * tl.topology.n_cores + (2.4 if _shown(tl) is not None else 1.6) for tl in timelines]


def timeline_figure_size(timelines: Sequence[LaunchTimeline]) -> tuple[float, float]:
    """(width, height) in inches of :func:`render_timelines`' figure (PNG: times :data:`DPI`)."""
    return TIMELINE_WIDTH_IN, sum(_panel_heights(timelines)) + 0.7


def render_timelines(path: str, timelines: Sequence[LaunchTimeline]) -> None:
    """Draw the launches (one panel each) into ``path`` (.png or .svg)."""
    require_matplotlib("--timeline-png")
    write_report(path, TimelinePicture(picture_format(path)), timelines)


def timeline_figure(timelines: Sequence[LaunchTimeline]) -> Any:
    """The figure of :func:`render_timelines`."""
    if not timelines:
        raise InvalidArgumentError("no launch to draw")
    stages: list[str] = []
    for tl in timelines:
        stages += [s for s in tl.stages if s not in stages]
    colors = {s: _STAGE_COLORS[i % len(_STAGE_COLORS)] for i, s in enumerate(stages)}
    heights = _panel_heights(timelines)
    fig = _figure(*timeline_figure_size(timelines))
    subfigs = fig.subfigures(len(timelines), 1, squeeze=False, height_ratios=heights)[:, 0]
    for sf, tl in zip(subfigs, timelines):
        shown = _shown(tl)
        if shown is not None:
            # The race happens in a small stretch of a long launch: a zoom panel beside the whole.
            ax, zoom = sf.subplots(1, 2, width_ratios=[3.2, 1], sharey=True)
            window = _race_window(shown, tl.duration_ns)
            _draw_launch(ax, tl, colors, race_labels=False)
            ax.axvspan(_ms(window[0]), _ms(window[1]), facecolor="none", edgecolor="#c9a400", linestyle="--",
                       linewidth=1.0, zorder=6)
            _draw_launch(zoom, tl, colors, window)
            zoom.tick_params(labelleft=False)
            zoom.set_facecolor("#fffbea")
        else:
            ax = sf.subplots()
            _draw_launch(ax, tl, colors)
        verdict = "PASSED" if tl.passed else ("FAILED" if tl.passed is False else "")
        title = f"{tl.label}: {tl.summary if tl.summary and not tl.passed else verdict}"
        sf.suptitle(f"{title}\n{tl.role}" if tl.role else title, x=0.01, ha="left", fontsize=10.5,
                    fontweight="bold", color=_RACE if tl.passed is False else "#222222")
        if shown is not None:
            more = len(tl.races) + len(tl.inversions) - 1
            extra = f" (+{more} more in the JSON timeline)" if more else ""
            sf.supxlabel(_caption_of(shown, tl) + extra, x=0.01, ha="left", fontsize=9, color="#222222",
                         bbox={"boxstyle": "round,pad=0.45", "fc": "#fff5f5" if shown.inverted else "#fbfbfb",
                               "ec": _RACE, "lw": 0.9})
        elif tl.passed is not None:
            sf.supxlabel("no race: racecheck finds no unordered conflicting accesses in this launch (between cores "
                         "or inside one)",
                         x=0.01, ha="left", fontsize=9, color="#2c7a2c")
    _legend(fig, colors, any(i.cat == INSERTED for tl in timelines for i in tl.instants))
    return fig


def _legend(fig: Any, colors: dict[str, str], inserted: bool = False) -> None:
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    handles: list[Any] = [Patch(facecolor=c, label=short_name(s)) for s, c in colors.items()]
    handles += [
        Patch(facecolor="#f0f0f0", edgecolor="#888888", hatch="////", label="waiting (SyncAll, flag)"),
        Patch(facecolor=_ACCESS_COLORS[GM["R"]], label="GM read"),
        Patch(facecolor=_ACCESS_COLORS[GM["W"]], label="GM write"),
        Patch(facecolor=_ACCESS_COLORS[GM["A"]], label="GM atomic add"),
        Line2D([], [], color="#222222", lw=1.2, label="SyncAll: last core arrived"),
        Line2D([], [], color=_RACE, lw=1.6, linestyle=(0, (2, 1.5)), label="sync point dropped"),
        *([Line2D([], [], color=_INSERTED, lw=1.6, linestyle=(0, (2, 1.5)), label="sync point inserted")]
          if inserted else []),
        Line2D([], [], color=_RACE, marker="o", markerfacecolor="none", lw=2, label="racing accesses"),
    ]
    fig.legend(handles=handles, loc="outside lower center", ncol=min(len(handles), 7), fontsize=8, frameon=False)


# -- stress sweeps ------------------------------------------------------------------------------


def sweep_rows(result: Any) -> list[dict[str, Any]]:
    """The rows :func:`sweep_figure` draws, from a :class:`mpnpu.harness.stress.plan.SweepResult`."""
    rows = []
    for r in result.results:
        for name, v in r.variants.items():
            lo, hi = v.wilson95
            rows.append({"config": r.config.label, "variant": name, "failed": v.failed_case_runs,
                         "case_runs": v.case_runs, "rate": v.failure_rate, "lo": lo, "hi": hi})
    return rows


def sweep_figure(rows: Sequence[dict[str, Any]], title: str = "") -> Any:
    """Failure rate per configuration and variant with its 95% Wilson interval.

    ``rows``: one dict per (configuration, variant) with ``config`` (label), ``variant``,
    ``failed``, ``case_runs``, ``rate``, ``lo``, ``hi`` (:func:`sweep_rows`).
    """
    configs = list(dict.fromkeys(r["config"] for r in rows))
    variants = list(dict.fromkeys(r["variant"] for r in rows))
    fig = _figure(max(7.0, 0.9 * len(configs) + 3.0), 4.8)
    ax = fig.subplots()
    width = 0.7 / max(1, len(variants))
    palette = [_RACE, "#2c7a2c", "#3182bd", "#756bb1"]
    for k, v in enumerate(variants):
        xs, ys, lo, hi, labels = [], [], [], [], []
        for r in rows:
            if r["variant"] != v or not r["case_runs"]:
                continue
            x = configs.index(r["config"]) + (k - (len(variants) - 1) / 2) * width
            xs.append(x)
            ys.append(100 * r["rate"])
            lo.append(100 * (r["rate"] - r["lo"]))
            hi.append(100 * (r["hi"] - r["rate"]))
            labels.append(f"{r['failed']}/{r['case_runs']}")
        color = palette[k % len(palette)]
        ax.errorbar(xs, ys, yerr=[lo, hi], fmt="o", color=color, capsize=4, markersize=6, label=v)
        for x, y, e, text in zip(xs, ys, hi, labels):
            ax.annotate(text, (x, y + e), xytext=(0, 3), textcoords="offset points", ha="center", fontsize=7,
                        color=color)
    ax.set_xticks(range(len(configs)), configs, rotation=30, ha="right", fontsize=8)
    ax.set_ylabel("failing case-runs (%), 95% Wilson interval")
    ax.set_ylim(bottom=-2)
    ax.grid(axis="y", color="#dddddd")
    ax.spines[["top", "right"]].set_visible(False)
    ax.legend(fontsize=8, frameon=False)
    ax.set_title(title or "failure rate per configuration", loc="left", fontsize=10)
    return fig
