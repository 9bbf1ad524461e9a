"""`shoal sim run` and `shoal sim compare`: replay a trace through Shoal's scheduler."""

from __future__ import annotations

from dataclasses import dataclass, replace
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn

from shoal.cli.profiles import load_profile
from shoal.scheduler.profile import ProfileError
from shoal.sim.inputs import (
    TraceFormat,
    detect_format,
    load_pollux_workload,
    load_trace,
    read_node_events,
    read_queue_map,
    with_trace_queues,
)
from shoal.sim.loaders import ClusterDescription, map_queues, parse_cluster_arg
from shoal.sim.metrics import summarize
from shoal.sim.report import compare_table, queue_table, write_outputs
from shoal.sim.simulator import SimConfig, simulate
from shoal.sim.trace import Trace, TraceError
from shoal.sim.work import SpeedupCurve, TableSpeedup, WorkModel

sim_app = typer.Typer(help="Replay cluster traces through Shoal's scheduler (what-if).",
                      no_args_is_help=True)
err = Console(stderr=True)

class MapBy(StrEnum):
    QUEUE = "queue"
    USER = "user"


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
    "--checkpoint", min=0.001, help="Checkpoint interval in seconds of the jobs that "
                                    "declare none (spec.checkpointInterval); default: an "
                                    "evicted job loses all its work.")]
SpeedupOpt = Annotated[list[str] | None, typer.Option(
    "--speedup", help="MODEL=FILE: a scalability table (CSV gpus,throughput) for the jobs "
                      "of that model; '*=FILE' for every job. Repeatable. Default: linear.")]
QueueMapOpt = Annotated[Path | None, typer.Option(
    "--queue-map", help="YAML {trace value: virtual cluster, '*': fallback} mapping each "
                        "job's queue (or user, with --map-by user) onto a virtual cluster.")]
MapByOpt = Annotated[MapBy, typer.Option("--map-by", help="What --queue-map reads.")]
NodeEventsOpt = Annotated[Path | None, typer.Option(
    "--node-events", help="CSV time,node,state (down|up): node failures and recoveries.")]
ElasticOpt = Annotated[bool, typer.Option(
    "--elastic", help="Pollux workloads: every job elastic from 1 replica to its requested "
                      "count (seed 001; grown by profiles with the elastic action).")]
AdaptiveOpt = Annotated[bool, typer.Option(
    "--adaptive-batch", help="Pollux workloads: every job elastic, and adapting its batch size "
                             "to the replicas it gets, as AdaptDL jobs do under Pollux.")]
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


@dataclass(frozen=True)
class Inputs:
    """Everything `run` and `compare` share, as the user gave it."""

    trace: Path
    cluster: str
    fmt: TraceFormat
    limit: int | None
    cycle_interval: float
    cycle_on_events: bool
    checkpoint: float | None
    single_queue: bool
    speedups: list[str] | None
    queue_map: Path | None
    map_by: MapBy
    node_events: Path | None
    elastic: bool = False
    adaptive: bool = False


def _prepare(inputs: Inputs) -> tuple[Trace, ClusterDescription, SimConfig]:
    declared = parse_cluster_arg(inputs.cluster)
    fmt = detect_format(inputs.trace) if inputs.fmt is TraceFormat.AUTO else inputs.fmt
    work = _work_model(inputs.speedups, inputs.checkpoint)
    if fmt is TraceFormat.POLLUX:
        trace, pollux = load_pollux_workload(inputs.trace, elastic=inputs.elastic,
                                             adaptive=inputs.adaptive, limit=inputs.limit)
        # The applications' curves, unless --speedup names a model itself.
        work = replace(work, per_model={**(pollux.per_model or {}), **(work.per_model or {})})
    elif inputs.elastic or inputs.adaptive:
        raise ValueError(f"{'--elastic' if inputs.elastic else '--adaptive-batch'} applies to "
                         "Pollux workloads only")
    else:
        # The gang shape of a trace job depends on the GPUs per node.
        trace = load_trace(inputs.trace, fmt, gpus_per_node=declared.gpus_per_node or 8,
                           limit=inputs.limit, single_queue=inputs.single_queue)
    if inputs.queue_map is not None:
        trace = map_queues(trace, read_queue_map(inputs.queue_map), by=inputs.map_by.value)
    config = SimConfig(
        cycle_interval=inputs.cycle_interval, cycle_on_events=inputs.cycle_on_events,
        work=work,
        node_events=read_node_events(inputs.node_events) if inputs.node_events else ())
    return trace, with_trace_queues(declared, trace), config


def _run_all(inputs: Inputs, profiles: list[str], out: Path | None) -> None:
    try:
        chosen = [load_profile(p) for p in profiles]
        trace, cluster, config = _prepare(inputs)
    except (TraceError, ProfileError, ValueError, OSError) as exc:
        err.print(f"[bold red]error:[/] {exc}", highlight=False)
        raise typer.Exit(2) from None
    results = []
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                  TextColumn("sim t={task.fields[sim]:.0f}s"), console=err,
                  transient=True, disable=not err.is_terminal) as bar:
        for profile in chosen:
            task = bar.add_task(profile.name, total=len(trace.jobs), sim=0.0)

            def report(now: float, done: int, _total: int, task: TaskID = task) -> None:
                bar.update(task, completed=done, sim=now)
            results.append(simulate(trace, cluster, profile, config, report))
    summaries = [summarize(r) for r in results]
    console = Console()
    console.print(compare_table(summaries))
    for summary in summaries:  # per virtual cluster, when the run has more than one
        if len(summary.per_queue) > 1:
            console.print(queue_table(summary))
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
        speedup: SpeedupOpt = None, queue_map: QueueMapOpt = None,
        map_by: MapByOpt = MapBy.QUEUE, node_events: NodeEventsOpt = None,
        elastic: ElasticOpt = False, adaptive_batch: AdaptiveOpt = False) -> None:
    """Replay a trace with one profile and print its summary."""
    _run_all(Inputs(trace, cluster, fmt, limit, cycle_interval, cycle_on_events, checkpoint,
                    single_queue, speedup, queue_map, map_by, node_events, elastic,
                    adaptive_batch),
             [profile], out)


@sim_app.command("compare")
def compare(trace: TraceOpt, cluster: ClusterOpt,
            profiles: Annotated[str, typer.Option(
                "--profiles", "-p", help="Comma-separated profiles, e.g. fifo,sjf,default.")]
            = "fifo,fifo-backfill,sjf,default",
            out: OutOpt = None, fmt: FormatOpt = TraceFormat.AUTO, limit: LimitOpt = None,
            cycle_interval: IntervalOpt = 5.0, cycle_on_events: EventsOpt = False,
            checkpoint: CheckpointOpt = None, single_queue: SingleOpt = False,
            speedup: SpeedupOpt = None, queue_map: QueueMapOpt = None,
            map_by: MapByOpt = MapBy.QUEUE, node_events: NodeEventsOpt = None,
            elastic: ElasticOpt = False, adaptive_batch: AdaptiveOpt = False) -> None:
    """Replay one trace with several profiles and print them side by side."""
    names = [p.strip() for p in profiles.split(",") if p.strip()]
    if not names:
        err.print("[bold red]error:[/] --profiles names no profile")
        raise typer.Exit(2)
    _run_all(Inputs(trace, cluster, fmt, limit, cycle_interval, cycle_on_events, checkpoint,
                    single_queue, speedup, queue_map, map_by, node_events, elastic,
                    adaptive_batch), names, out)
