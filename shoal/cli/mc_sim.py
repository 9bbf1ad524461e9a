"""`shoal mc sim`: the multi-cluster what-if — the ITP traces replayed over simulated member
clusters under `single`, `fac` and `fac-priority` (`shoal.sim.multicluster`).

Only the command function lives here; the `shoal mc` group registers it. What it runs is
imported when it runs, so that the other commands, which read this signature, do not pay
for the simulator.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Column, Table

POLICIES = ("single", "fac", "fac-priority")


def mc_sim(
    traces: Annotated[Path | None, typer.Option(
        "--traces", help="Folder of the ITP traces cluster01..05.csv: each file a member, "
                         "the home of its jobs.")] = None,
    days: Annotated[float, typer.Option(
        "--days", min=0.001, help="Replay the jobs each trace submits in its first DAYS "
                                  "days.")] = 1.0,
    utilisation: Annotated[float, typer.Option(
        "--utilisation", min=0.01, max=1.0, help="Size each member so that its own jobs "
                                                 "fill this share of it on average.")] = 0.85,
    policies: Annotated[str, typer.Option(
        "--policies", help="Comma-separated: single, fac, fac-priority.")] = ",".join(POLICIES),
    guard: Annotated[float, typer.Option(
        "--guard", min=0.0, help="guardTimeRunning, seconds.")] = 60.0,
    time_scale: Annotated[float, typer.Option(
        "--time-scale", min=0.0, help="timeScale: seconds of survival per priority "
                                      "point.")] = 5.0,
    poll: Annotated[float, typer.Option(
        "--poll", min=0.001, help="Seconds between the dispatcher's polls.")] = 30.0,
    profile: Annotated[str, typer.Option(
        "--profile", help="The scheduling profile every member runs.")] = "default",
    split: Annotated[Path | None, typer.Option(
        "--split", help="Instead of --traces: one ITP file dealt in turn over the five "
                        "members, each job's home the member it was dealt to.")] = None,
    limit: Annotated[int | None, typer.Option(
        "--limit", "-n", min=1, help="At most N jobs per member.")] = None,
    as_json: Annotated[bool, typer.Option(
        "--json", help="One JSON object per policy instead of a table.")] = False,
) -> None:
    """Replay the ITP traces over several simulated clusters under each dispatch policy."""
    from shoal.cli.errors import user_errors
    from shoal.cli.profiles import load_profile
    from shoal.sim.multicluster import McConfig, McPolicy, simulate_multicluster
    from shoal.sim.multicluster_inputs import itp_inputs, split_itp
    from shoal.sim.multicluster_report import summarize
    from shoal.sim.trace import TraceError

    err = Console(stderr=True, soft_wrap=True)
    wanted = [p.strip() for p in policies.split(",") if p.strip()]
    unknown = [p for p in wanted if p not in POLICIES]
    if unknown or not wanted:
        err.print(f"error: --policies: unknown {', '.join(unknown) or '(none given)'}; "
                  f"choose from {', '.join(POLICIES)}", highlight=False)
        raise typer.Exit(2)
    try:
        if (traces is None) == (split is None):
            raise ValueError("give one of --traces (a folder of cluster01..05.csv) and "
                             "--split (one ITP file)")
        if split is not None:
            inputs = split_itp(split, days=days, utilisation=utilisation, limit=limit)
        else:
            assert traces is not None
            inputs = itp_inputs(traces, days=days, utilisation=utilisation,
                                jobs_per_member=limit)
        configs = [McConfig(McPolicy(p), guard_time_running=guard, time_scale=time_scale,
                            poll_interval=poll) for p in wanted]
    except (TraceError, ValueError) as exc:
        err.print(f"error: {exc}", highlight=False)
        raise typer.Exit(2) from None
    chosen = user_errors(lambda: load_profile(profile))
    results = [summarize(simulate_multicluster(inputs.jobs, inputs.members, chosen, c))
               for c in configs]
    out = Console()
    if as_json:
        for s in results:
            out.print_json(json.dumps(s.to_json()), indent=None)
        return
    sizes = ", ".join(f"{m.cluster.alias} {n}×8 {m.cluster.gpu_type} p{m.cluster.priority}"
                      for m, (_, n) in zip(inputs.members, inputs.nodes, strict=True))
    out.print(f"{len(inputs.jobs)} jobs over {len(inputs.members)} members: {sizes}",
              highlight=False)
    table = Table(Column("policy", no_wrap=True, min_width=len("fac-priority")),
                  "mean wait s", "p95 wait s", "mean JCT s", "preferred", "wasted GPU-s",
                  "cancels")
    for s in results:
        table.add_row(s.policy, _num(s.mean_queueing_delay_s), _num(s.p95_queueing_delay_s),
                      _num(s.mean_jct_s), _num(s.preferred_cluster_share),
                      f"{s.wasted_gpu_seconds_fraction:.4%}", str(s.cancels))
    out.print(table)


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:,.4g}" if value < 10 else f"{value:,.0f}"
