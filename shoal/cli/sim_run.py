"""What `shoal sim run` and `shoal sim compare` (declared in `shoal.cli.sim`) do: load the
trace and the cluster, replay the trace with each profile, and print and write the results."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn

from shoal.api.trace_format import TraceFormat
from shoal.cli.profiles import load_profile
from shoal.cli.sim import Inputs, UsageOutput, err
from shoal.scheduler.profile import ProfileError
from shoal.sim.inputs import (
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
from shoal.sim.usage_report import write_usage_report
from shoal.sim.work import SpeedupCurve, TableSpeedup, WorkModel


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


def run_all(inputs: Inputs, profiles: list[str], out: Path | None,
            usage: UsageOutput | None = None) -> None:
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
    if usage is not None:
        try:
            written = write_usage_report(results[0], usage.path, usage.by, usage.step)
        except OSError as exc:
            err.print(f"[bold red]error:[/] --usage-report: {exc}", highlight=False)
            raise typer.Exit(2) from None
        err.print(f"wrote {written}")
