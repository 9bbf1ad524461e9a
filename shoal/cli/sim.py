"""`shoal sim run` and `shoal sim compare`: replay a trace through Shoal's scheduler."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn

from shoal.scheduler.profile import Profile, ProfileError
from shoal.sim.inputs import TraceFormat, load_trace, with_trace_queues
from shoal.sim.loaders import parse_cluster_arg
from shoal.sim.metrics import summarize
from shoal.sim.report import compare_table, write_outputs
from shoal.sim.result import SimResult
from shoal.sim.simulator import SimConfig, simulate
from shoal.sim.trace import TraceError
from shoal.sim.work import SpeedupCurve, TableSpeedup, WorkModel

sim_app = typer.Typer(help="Replay cluster traces through Shoal's scheduler (what-if).",
                      no_args_is_help=True)
err = Console(stderr=True)

TraceOpt = Annotated[Path, typer.Option("--trace", "-t", help="Trace file (Philly, ITP or "
                                        "Alibaba CSV, or shoal/v1 YAML with arrivalTime).")]
ClusterOpt = Annotated[str, typer.Option("--cluster", "-c", help="Cluster file (shoal/v1 "
                                         "YAML, Alibaba node CSV) or NODESxGPUS like 125x8.")]
OutOpt = Annotated[Path | None, typer.Option("--out", "-o", help="Write per-job CSVs, "
                                             "summary JSONs and report.html here.")]
FormatOpt = Annotated[TraceFormat, typer.Option("--format", help="Trace format.")]
LimitOpt = Annotated[int | None, typer.Option("--limit", "-n", min=1,
                                              help="Only the first N jobs.")]
IntervalOpt = Annotated[float, typer.Option("--cycle-interval", min=0.001,
                                            help="Seconds between scheduling cycles.")]
EventsOpt = Annotated[bool, typer.Option("--cycle-on-events/--periodic-only",
                                         help="Also run a cycle right after each arrival "
                                              "and completion.")]
CheckpointOpt = Annotated[float | None, typer.Option(
    "--checkpoint", min=0.001, help="Checkpoint interval in seconds (default: an evicted "
                                    "job loses all its work).")]
SpeedupOpt = Annotated[list[str] | None, typer.Option(
    "--speedup", help="MODEL=FILE: a scalability table (CSV gpus,throughput) for the jobs "
                      "of that model; '*=FILE' for every job. Repeatable. Default: linear.")]
SingleOpt = Annotated[bool, typer.Option("--single-queue", help="Ignore the trace's "
                                         "queue column: every job in `default`.")]


def _work_model(speedups: list[str] | None, checkpoint: float | None) -> WorkModel:
    tables: dict[str, SpeedupCurve] = {}
    for item in speedups or []:
        model, sep, path = item.partition("=")
        if not sep or not model or not path:
            raise ValueError(f"--speedup {item!r}: expected MODEL=FILE")
        tables[model] = TableSpeedup.read(path)
    default = tables.pop("*", None)
    if default is None:
        return WorkModel(per_model=tables, checkpoint_interval=checkpoint)
    return WorkModel(default=default, per_model=tables, checkpoint_interval=checkpoint)


def _run_all(trace_path: Path, cluster: str, profiles: list[str], fmt: TraceFormat,
             limit: int | None, interval: float, on_events: bool, checkpoint: float | None,
             single_queue: bool, speedups: list[str] | None = None) -> list[SimResult]:
    try:
        work = _work_model(speedups, checkpoint)
        chosen = [Profile.load(p) for p in profiles]
        declared = parse_cluster_arg(cluster)
        # The gang shape of a trace job depends on the GPUs per node.
        trace = load_trace(trace_path, fmt, gpus_per_node=declared.gpus_per_node or 8,
                           limit=limit, single_queue=single_queue)
        description = with_trace_queues(declared, trace)
    except (TraceError, ProfileError, ValueError, OSError) as exc:
        err.print(f"[bold red]error:[/] {exc}", highlight=False)
        raise typer.Exit(2) from None
    config = SimConfig(cycle_interval=interval, cycle_on_events=on_events, work=work)
    results = []
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                  TextColumn("sim t={task.fields[sim]:.0f}s"), console=err,
                  transient=True, disable=not err.is_terminal) as bar:
        for profile in chosen:
            task = bar.add_task(profile.name, total=len(trace.jobs), sim=0.0)

            def report(now: float, done: int, _total: int, task: TaskID = task) -> None:
                bar.update(task, completed=done, sim=now)
            results.append(simulate(trace, description, profile, config, report))
    return results


def _finish(results: list[SimResult], out: Path | None) -> None:
    Console().print(compare_table([summarize(r) for r in results]))
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        for path in write_outputs(results, out):
            err.print(f"wrote {path}")


@sim_app.command("run")
def run(trace: TraceOpt, cluster: ClusterOpt,
        profile: Annotated[str, typer.Option("--profile", "-p",
                                             help="Built-in profile or profile file.")]
        = "default",
        out: OutOpt = None, fmt: FormatOpt = TraceFormat.AUTO, limit: LimitOpt = None,
        cycle_interval: IntervalOpt = 5.0, cycle_on_events: EventsOpt = False,
        checkpoint: CheckpointOpt = None, single_queue: SingleOpt = False,
        speedup: SpeedupOpt = None) -> None:
    """Replay a trace with one profile and print its summary."""
    _finish(_run_all(trace, cluster, [profile], fmt, limit, cycle_interval, cycle_on_events,
                     checkpoint, single_queue, speedup), out)


@sim_app.command("compare")
def compare(trace: TraceOpt, cluster: ClusterOpt,
            profiles: Annotated[str, typer.Option(
                "--profiles", "-p", help="Comma-separated profiles, e.g. fifo,sjf,default.")]
            = "fifo,fifo-backfill,sjf,default",
            out: OutOpt = None, fmt: FormatOpt = TraceFormat.AUTO, limit: LimitOpt = None,
            cycle_interval: IntervalOpt = 5.0, cycle_on_events: EventsOpt = False,
            checkpoint: CheckpointOpt = None, single_queue: SingleOpt = False,
            speedup: SpeedupOpt = None) -> None:
    """Replay one trace with several profiles and print them side by side."""
    names = [p.strip() for p in profiles.split(",") if p.strip()]
    if not names:
        err.print("[bold red]error:[/] --profiles names no profile")
        raise typer.Exit(2)
    _finish(_run_all(trace, cluster, names, fmt, limit, cycle_interval, cycle_on_events,
                     checkpoint, single_queue, speedup), out)
