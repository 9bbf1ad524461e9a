"""The files and tables a simulation run is reported in.

This module owns the output formats (the metrics themselves live in `shoal.sim.metrics`, the
plots in `shoal.sim.report_plots`):

* ``jobs-<profile>.csv`` — one row per job (`write_jobs_csv`), with its user, stretch and
  finish-time fairness ρ (`shoal.sim.fairness`);
* ``summary-<profile>.json`` — `Summary.to_dict` (`write_summary_json`);
* ``report.html`` — one self-contained page comparing the profiles, plots inlined as SVG
  (`write_html_report`);
* the side-by-side table `shoal sim compare` prints (`compare_table`), and the per-queue
  table of one run (`queue_table`: GPU-hours used and demanded, share, service ratio, mean
  JCT, and per virtual cluster its guaranteed GPUs, borrowed GPU-hours and share, the
  utilisation of its guarantee, its stretch and mean queueing delay; the HTML report has the
  same columns).

Every output is deterministic: the same results give byte-identical files (fixed float
formats, sorted JSON keys, no timestamps, SVG ids salted with a constant).
"""

from __future__ import annotations

import csv
import html
import json
import re
from collections.abc import Callable, Sequence
from pathlib import Path

from rich.table import Table

from shoal.sim.fairness import finish_time_fairness, job_stretch
from shoal.sim.metrics import QueueShare, Summary, summarize
from shoal.sim.result import SimResult

#: Columns of the per-job CSV, in order.
JOBS_CSV_HEADER = ("name", "queue", "gpus", "duration", "submit", "first_start", "end", "jct",
                   "queueing_delay", "preemptions", "gpu_seconds_used", "gpu_seconds_lost",
                   "user", "stretch", "rho")

#: Shown for a metric that is undefined (no finished job, zero-length makespan, …).
MISSING = "-"


def _num(x: float | None) -> str:
    """Fixed CSV float format: three decimals, no negative zero, empty for None."""
    if x is None:
        return ""
    text = f"{x:.3f}"
    return "0.000" if text == "-0.000" else text


def write_jobs_csv(result: SimResult, path: Path | str) -> Path:
    """One row per job in the result's order, columns `JOBS_CSV_HEADER`, LF line ends."""
    path = Path(path)
    rhos = finish_time_fairness(result.jobs, result.cluster_gpus, result.cycle_interval)
    with path.open("w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f, lineterminator="\n")
        writer.writerow(JOBS_CSV_HEADER)
        for j in result.jobs:
            writer.writerow([j.name, j.queue, j.gpus, _num(j.duration), _num(j.submit),
                             _num(j.first_start), _num(j.end), _num(j.jct),
                             _num(j.queueing_delay), j.preemptions, _num(j.gpu_seconds_used),
                             _num(j.gpu_seconds_lost),
                             j.user or "", _num(job_stretch(j)),
                             _num(rhos[j.name].rho if j.name in rhos else None)])
    return path


def summary_json(summary: Summary) -> str:
    """The summary JSON document: sorted keys, two-space indent, trailing newline."""
    return json.dumps(summary.to_dict(), indent=2, sort_keys=True) + "\n"


def write_summary_json(summary: Summary, path: Path | str) -> Path:
    path = Path(path)
    path.write_text(summary_json(summary), encoding="utf-8")
    return path


def profile_slug(profile: str) -> str:
    """The profile's name as a file-name component (anything but [A-Za-z0-9._-] becomes _)."""
    slug = re.sub(r"[^A-Za-z0-9._-]+", "_", profile).strip(".")
    return slug or "_"


def write_outputs(results: Sequence[SimResult], out_dir: Path | str) -> list[Path]:
    """Write ``jobs-<profile>.csv`` and ``summary-<profile>.json`` per result (in order), then
    ``report.html``; create `out_dir` if needed. Returns the paths written, in that order.

    Raises ValueError if two profiles would write the same files.
    """
    out = Path(out_dir)
    slugs = [profile_slug(r.profile) for r in results]
    if len(set(slugs)) != len(slugs):
        raise ValueError(f"profile names collide in file names: {[r.profile for r in results]}")
    out.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    summaries = [summarize(r) for r in results]
    for result, summary, slug in zip(results, summaries, slugs, strict=True):
        written.append(write_jobs_csv(result, out / f"jobs-{slug}.csv"))
        written.append(write_summary_json(summary, out / f"summary-{slug}.json"))
    written.append(_write_html(results, summaries, out / "report.html"))
    return written


# --- human formatting (shared by the rich table and the HTML table) -----------------------

def fmt_seconds(x: float | None) -> str:
    """Seconds with one decimal; hours added from an hour up: ``5,400.0 s (1.50 h)``."""
    if x is None:
        return MISSING
    text = f"{x:,.1f} s"
    return f"{text} ({x / 3600:,.2f} h)" if abs(x) >= 3600 else text


def fmt_percent(x: float | None) -> str:
    return MISSING if x is None else f"{100 * x:.1f} %"


def fmt_ratio(x: float | None) -> str:
    return MISSING if x is None else f"{x:.3f}"


def fmt_hours(x: float | None, unit: str = "GPU-h") -> str:
    return MISSING if x is None else f"{x:,.2f} {unit}"


#: (label, formatter) per row of the comparison tables.
METRIC_ROWS: tuple[tuple[str, Callable[[Summary], str]], ...] = (
    ("jobs finished", lambda s: f"{s.finished} / {s.jobs}"),
    ("mean JCT", lambda s: fmt_seconds(s.mean_jct_s)),
    ("median JCT", lambda s: fmt_seconds(s.median_jct_s)),
    ("p95 JCT", lambda s: fmt_seconds(s.p95_jct_s)),
    ("p99 JCT", lambda s: fmt_seconds(s.p99_jct_s)),
    ("mean queueing delay", lambda s: fmt_seconds(s.mean_queueing_delay_s)),
    ("mean total wait", lambda s: fmt_seconds(
        None if s.total_wait is None else s.total_wait.mean_s)),
    ("worst VC mean total wait", lambda s: MISSING if s.total_wait is None else
     f"{fmt_seconds(s.total_wait.worst_queue_mean_s)} ({s.total_wait.worst_queue})"),
    ("makespan", lambda s: fmt_seconds(s.makespan_s)),
    ("GPU utilisation", lambda s: fmt_percent(s.avg_utilization)),
    ("preemptions", lambda s: str(s.preemptions)),
    ("lost GPU-hours", lambda s: fmt_hours(s.lost_gpu_hours)),
    ("Jain's index, VC stretch", lambda s: fmt_ratio(s.jain_vc_stretch)),
    ("Jain's index, user stretch", lambda s: fmt_ratio(s.jain_user_stretch)),
    ("worst VC mean queueing delay", lambda s: fmt_seconds(s.worst_vc_mean_queueing_delay_s)),
    ("max finish-time fairness ρ", lambda s: fmt_ratio(s.max_rho)),
    ("jobs with ρ > 1", lambda s: fmt_percent(s.frac_rho_gt_1)),
    ("lower bound (mean JCT, no queueing)", lambda s: fmt_seconds(s.lower_bound_mean_jct_s)),
    ("events", lambda s: str(s.events)),
)


#: Header of the per-queue tables (text and HTML); the first column is the queue's name.
QUEUE_COLUMNS = ("queue", "min GPUs", "GPU-hours used", "share", "GPU-hours demanded",
                 "service ratio", "mean JCT", "borrowed GPU-hours", "borrowed share",
                 "min utilisation", "stretch", "mean queueing delay")


def queue_cells(share: QueueShare) -> tuple[str, ...]:
    """One queue's row of the per-queue tables, after its name (`QUEUE_COLUMNS[1:]`)."""
    return (str(share.min_gpus), fmt_hours(share.gpu_seconds / 3600),
            fmt_percent(share.share), fmt_hours(share.demand_gpu_seconds / 3600),
            fmt_ratio(share.service_ratio), fmt_seconds(share.mean_jct_s),
            fmt_hours(share.borrowed_gpu_seconds / 3600), fmt_percent(share.borrowed_share),
            fmt_percent(share.min_utilization), fmt_ratio(share.stretch),
            fmt_seconds(share.mean_queueing_delay_s))


#: The columns the terminal table shows (it must fit 80 columns); the HTML and JSON have all.
TERMINAL_QUEUE_COLUMNS = ("queue", "min GPUs", "GPU-hours used", "mean JCT", "borrowed share",
                          "min utilisation", "stretch")


def queue_table(summary: Summary) -> Table:
    """The per-queue (virtual cluster) table of one run, for a terminal: its guaranteed
    GPUs, what it used, its mean JCT, the share of its use borrowed above its guarantee and
    how much of the guarantee it used, and its stretch (mean JCT ÷ mean duration)."""
    table = Table(title=f"per queue: {summary.profile}", title_justify="left")
    shown = [QUEUE_COLUMNS.index(c) for c in TERMINAL_QUEUE_COLUMNS]
    for i in shown:
        table.add_column(QUEUE_COLUMNS[i], justify="left" if i == 0 else "right",
                         no_wrap=i == 0)
    for q, share in summary.per_queue.items():
        row = (q, *queue_cells(share))
        table.add_row(*(row[i] for i in shown))
    return table


def compare_table(summaries: Sequence[Summary]) -> Table:
    """Metrics as rows, one column per profile (side by side)."""
    traces = sorted({s.trace for s in summaries})
    table = Table(title=f"trace: {', '.join(traces)}" if traces else None, title_justify="left")
    table.add_column("metric", no_wrap=True)
    for s in summaries:
        table.add_column(s.profile, justify="right", no_wrap=True)
    for label, fmt in METRIC_ROWS:
        table.add_row(label, *(fmt(s) for s in summaries))
    return table


# --- HTML ----------------------------------------------------------------------------------

_STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em; color: #222; }
table { border-collapse: collapse; margin: 1em 0; }
th, td { border: 1px solid #ccc; padding: 0.3em 0.7em; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
th { background: #f3f3f3; }
figure { margin: 1em 0; }
figure svg { max-width: 100%; height: auto; }
""".strip()


_DEFINITIONS = (
    "<p>JCT = end − submit over finished jobs (percentiles by linear interpolation); "
    "queueing delay = first start − submit over started jobs; total wait = time not running "
    "between submit and end, waits after evictions included, over finished jobs; makespan = "
    "last end − first submit; utilisation = busy GPUs / cluster GPUs, time-averaged over the "
    "makespan. "
    "Stretch = JCT ÷ duration at the requested size; a virtual cluster's (a user's) stretch = "
    "mean JCT ÷ mean duration of its finished jobs; Jain's index (Σx)² / (n·Σx²) over those "
    "stretches is 1 when every virtual cluster (user) waited in the same proportion. "
    "Finish-time fairness ρ (Themis) = JCT ÷ JCT on a 1/N share of the cluster, N = the "
    "average number of active jobs over the job's life, the 1/N-share JCT = the wait for the "
    "first scheduling cycle + duration × max(1, GPUs × N ÷ cluster GPUs); ρ > 1: the job "
    "would have done better on its own share. "
    "The lower bound is the mean JCT if every job started on "
    "arrival and never stopped. Per queue, with in_use(t) the GPUs its jobs hold and min its "
    "guaranteed GPUs: borrowed = ∫ max(0, in_use − min) dt, borrowed share = borrowed / used, "
    "min utilisation = ∫ min(in_use, min) dt / (min × makespan).</p>"
)


def write_html_report(results: Sequence[SimResult], path: Path | str) -> Path:
    """One self-contained HTML page comparing `results` (one profile each, same trace):
    summary table, utilisation and queue length over time, JCT CDF, per-queue shares and
    stretch."""
    return _write_html(results, [summarize(r) for r in results], Path(path))


def _write_html(results: Sequence[SimResult], summaries: Sequence[Summary], path: Path) -> Path:
    path.write_text(html_report(results, summaries), encoding="utf-8")
    return path


def html_report(results: Sequence[SimResult], summaries: Sequence[Summary]) -> str:
    """The HTML page `write_html_report` writes (`summaries[i]` summarises `results[i]`)."""
    from shoal.sim import report_plots  # matplotlib is imported only when a report is drawn

    esc = html.escape
    traces = sorted({r.trace for r in results})
    title = f"Shoal simulation report: {', '.join(traces)}" if traces else "Shoal simulation"
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en">',
        "<head>",
        '<meta charset="utf-8">',
        f"<title>{esc(title)}</title>",
        f"<style>\n{_STYLE}\n</style>",
        "</head>",
        "<body>",
        f"<h1>{esc(title)}</h1>",
        f"<p>Profiles: {esc(', '.join(s.profile for s in summaries)) or 'none'}. "
        f"Cluster GPUs: {esc(', '.join(str(r.cluster_gpus) for r in results)) or '-'}.</p>",
        "<h2>Summary</h2>",
        _summary_table(summaries),
        _DEFINITIONS,
        "<h2>GPU utilisation over time</h2>",
        _figure(report_plots.utilization_svg(summaries), "GPU utilisation over time"),
        "<h2>Queue length over time</h2>",
        _figure(report_plots.queue_svg(summaries), "Queued jobs over time"),
        "<h2>JCT distribution</h2>",
        _figure(report_plots.jct_cdf_svg(results), "CDF of job completion time"),
        "<h2>Per-queue shares</h2>",
        _figure(report_plots.queue_share_svg(summaries), "Share of GPU-seconds per queue"),
        "<h2>Per-queue stretch</h2>",
        _figure(report_plots.queue_stretch_svg(summaries),
                "Stretch per queue: mean JCT ÷ mean duration (1 = no waiting)"),
        _queue_tables(summaries),
        "</body>",
        "</html>",
    ]
    return "\n".join(parts) + "\n"


def _summary_table(summaries: Sequence[Summary]) -> str:
    esc = html.escape
    rows = ["<table>", "<tr><th>metric</th>"
            + "".join(f"<th>{esc(s.profile)}</th>" for s in summaries) + "</tr>"]
    for label, fmt in METRIC_ROWS:
        rows.append(f"<tr><th>{esc(label)}</th>"
                    + "".join(f'<td class="num">{esc(fmt(s))}</td>' for s in summaries)
                    + "</tr>")
    rows.append("</table>")
    return "\n".join(rows)


def _queue_tables(summaries: Sequence[Summary]) -> str:
    esc = html.escape
    out: list[str] = []
    for s in summaries:
        out.append(f"<h3>{esc(s.profile)}</h3>")
        out.append("<table>")
        out.append("<tr>" + "".join(f"<th>{esc(c)}</th>" for c in QUEUE_COLUMNS) + "</tr>")
        for q, share in s.per_queue.items():
            out.append(f"<tr><th>{esc(q)}</th>"
                       + "".join(f'<td class="num">{esc(c)}</td>' for c in queue_cells(share))
                       + "</tr>")
        out.append("</table>")
    return "\n".join(out)


def _figure(svg: str, caption: str) -> str:
    return f"<figure>\n{svg}\n<figcaption>{html.escape(caption)}</figcaption>\n</figure>"
