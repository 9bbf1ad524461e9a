"""The HTML report's plots, drawn with matplotlib and returned as inline SVG text.

This module owns the figures only (`shoal.sim.report` lays out the page). Figures are built
on `matplotlib.figure.Figure` directly, never through pyplot: no GUI backend is selected and
no global figure state is created, so it works headless and in any host process. Output is
deterministic: SVG ids are salted with a constant (``svg.hashsalt``) instead of a random
salt, the date and creator metadata are dropped, and text is kept as text
(``svg.fonttype = none``), so the same input gives byte-identical SVG. Every id is prefixed
with the figure's name, so the figures inlined in one page never share an id.
"""

from __future__ import annotations

import io
import re
from collections.abc import Callable, Sequence

from matplotlib import rc_context
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from shoal.sim.metrics import QueueShare, Series, Summary
from shoal.sim.result import SimResult

_SIZE = (8.0, 3.2)
_TAG = re.compile(r"<[^<>]+>")
_ID_REFS = re.compile(r'(\bid="|url\(#|href="#)')


def _render(name: str, draw: Callable[[], Figure]) -> str:
    """Draw a figure and return it as an SVG element for inlining: XML prolog and doctype
    dropped, ids (and references to them) prefixed with `name`."""
    with rc_context({"svg.hashsalt": "shoal", "svg.fonttype": "none", "font.size": 9.0}):
        fig = draw()
        buf = io.StringIO()
        fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": None})
    text = buf.getvalue()
    text = text[text.index("<svg"):].strip()
    # Only inside tags: text content never holds a raw "<", so labels are left alone.
    return _TAG.sub(lambda tag: _ID_REFS.sub(rf"\g<1>{name}-", tag.group(0)), text)


def _new(ylabel: str, xlabel: str) -> tuple[Figure, Axes]:
    fig = Figure(figsize=_SIZE, layout="constrained")
    ax = fig.add_subplot()
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(True, alpha=0.3)
    return fig, ax


def _time_unit(series: Sequence[Series]) -> tuple[float, str]:
    """A divisor and a label that keep the time axis readable."""
    span = max((s[-1][0] - s[0][0] for s in series if s), default=0.0)
    if span >= 2 * 3600:
        return 3600.0, "time (h)"
    if span >= 2 * 60:
        return 60.0, "time (min)"
    return 1.0, "time (s)"


def _no_data(ax: Axes, what: str) -> None:
    ax.text(0.5, 0.5, f"no {what}", ha="center", va="center", transform=ax.transAxes)


def _series_figure(summaries: Sequence[Summary], pick: str, ylabel: str,
                   scale: float) -> Figure:
    all_series: list[Series] = [getattr(s, pick) for s in summaries]
    divisor, xlabel = _time_unit(all_series)
    fig, ax = _new(ylabel, xlabel)
    drawn = False
    for s, series in zip(summaries, all_series, strict=True):
        if not series:
            continue
        ax.plot([t / divisor for t, _ in series], [v * scale for _, v in series],
                drawstyle="steps-post", label=s.profile, linewidth=1.2)
        drawn = True
    if drawn:
        ax.set_ylim(bottom=0)
        ax.legend(loc="best")
    else:
        _no_data(ax, "samples in the makespan window")
    return fig


def utilization_svg(summaries: Sequence[Summary]) -> str:
    """Busy GPUs / cluster GPUs over time (bucket averages), one line per profile."""
    return _render("utilization", lambda: _series_figure(
        summaries, "utilization_series", "GPU utilisation (%)", 100.0))


def queue_svg(summaries: Sequence[Summary]) -> str:
    """Queued jobs over time (bucket averages), one line per profile."""
    return _render("queue", lambda: _series_figure(
        summaries, "queue_series", "queued jobs", 1.0))


def jct_cdf_svg(results: Sequence[SimResult]) -> str:
    """Empirical CDF of the finished jobs' JCT, one step line per profile, log x.

    Zero JCTs cannot be drawn on a log axis and are left out of the line (the fraction still
    counts them, so the curve starts above 0).
    """
    return _render("jct-cdf", lambda: _jct_cdf_figure(results))


def _jct_cdf_figure(results: Sequence[SimResult]) -> Figure:
    fig, ax = _new("fraction of finished jobs", "JCT (s, log scale)")
    drawn = False
    for r in results:
        jcts = sorted(j.end - j.submit for j in r.jobs if j.end is not None)
        n = len(jcts)
        points = [(x, (i + 1) / n) for i, x in enumerate(jcts) if x > 0]
        if not points:
            continue
        ax.plot([x for x, _ in points], [y for _, y in points], drawstyle="steps-post",
                label=r.profile, linewidth=1.2)
        drawn = True
    if drawn:
        ax.set_xscale("log")
        ax.set_ylim(0, 1.02)
        ax.legend(loc="lower right")
    else:
        _no_data(ax, "finished jobs with a positive JCT")
    return fig


def queue_share_svg(summaries: Sequence[Summary]) -> str:
    """Each queue's share of the GPU-seconds used, grouped bars (one bar per profile)."""
    return _render("queue-share", lambda: _queue_share_figure(summaries))


def _queue_share_figure(summaries: Sequence[Summary]) -> Figure:
    return _queue_bars(summaries, "share of GPU-seconds (%)",
                       lambda share: 100 * share.share if share.share else 0.0)


def queue_stretch_svg(summaries: Sequence[Summary]) -> str:
    """Each queue's stretch (mean JCT ÷ mean duration), grouped bars (one bar per profile),
    with a line at 1: the bars a report's unfairness shows in (`shoal.sim.fairness`)."""
    return _render("queue-stretch", lambda: _queue_stretch_figure(summaries))


def _queue_stretch_figure(summaries: Sequence[Summary]) -> Figure:
    fig = _queue_bars(summaries, "stretch (mean JCT ÷ mean duration)",
                      lambda share: share.stretch or 0.0)
    fig.axes[0].axhline(1.0, color="#888", linewidth=0.8, linestyle="--")
    return fig


def _queue_bars(summaries: Sequence[Summary], label: str,
                value: Callable[[QueueShare], float]) -> Figure:
    """One group of bars per queue, one bar per profile: `value` of its per-queue figures
    (0 where a profile has none for the queue)."""
    queues = sorted({q for s in summaries for q in s.per_queue})
    fig, ax = _new(label, "queue")
    if not queues:
        _no_data(ax, "queues")
        return fig
    width = 0.8 / len(summaries)
    for k, s in enumerate(summaries):
        heights = []
        for q in queues:
            share = s.per_queue.get(q)
            heights.append(0.0 if share is None else value(share))
        xs = [i - 0.4 + width * (k + 0.5) for i in range(len(queues))]
        ax.bar(xs, heights, width=width, label=s.profile)
    ax.set_xticks(range(len(queues)), queues)
    ax.legend(loc="best")
    return fig
