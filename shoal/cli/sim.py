"""`shoal sim run` and `shoal sim compare`: replay a trace through Shoal's scheduler.

This module declares the commands; what they run is `shoal.cli.sim_run`, imported only when
one runs (it loads the scheduler and the simulator, which the other `shoal` commands, all
reading these signatures, must not pay for).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from shoal.api.accounting import GroupBy, Step
from shoal.api.trace_format import TraceFormat

sim_app = typer.Typer(help="Replay cluster traces through Shoal's scheduler (what-if).",
                      no_args_is_help=True)
# An error is never folded at the terminal's width: a path or a field in it is copied whole,
# and piped (no terminal) rich would fold it at 80 columns.
err = Console(stderr=True, soft_wrap=True)


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


UsageReportOpt = Annotated[Path | None, typer.Option(
    "--usage-report", help="Write the run's usage report here: JSON (GET /api/v1/usage's "
                           "shape) or, for a .csv file, CSV (shoal usage -o csv's).",
    show_default=False)]
UsageByOpt = Annotated[GroupBy, typer.Option("--usage-by", help="The usage report's rows.")]
UsageStepOpt = Annotated[Step, typer.Option("--usage-step",
                                            help="The usage report's series: none, hour, day.")]


@dataclass(frozen=True)
class UsageOutput:
    """Where `--usage-report` writes, and how the report is grouped."""

    path: Path
    by: GroupBy
    step: Step


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
        elastic: ElasticOpt = False, adaptive_batch: AdaptiveOpt = False,
        usage_report: UsageReportOpt = None, usage_by: UsageByOpt = GroupBy.QUEUE,
        usage_step: UsageStepOpt = Step.NONE) -> None:
    """Replay a trace with one profile and print its summary."""
    from shoal.cli.sim_run import run_all  # the scheduler and simulator: see above

    run_all(Inputs(trace, cluster, fmt, limit, cycle_interval, cycle_on_events, checkpoint,
                    single_queue, speedup, queue_map, map_by, node_events, elastic,
                    adaptive_batch),
             [profile], out,
             None if usage_report is None else UsageOutput(usage_report, usage_by, usage_step))


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
    from shoal.cli.sim_run import run_all  # the scheduler and simulator: see above

    run_all(Inputs(trace, cluster, fmt, limit, cycle_interval, cycle_on_events, checkpoint,
                    single_queue, speedup, queue_map, map_by, node_events, elastic,
                    adaptive_batch), names, out)
