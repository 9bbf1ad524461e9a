"""Benchmark: what one `shoal` command costs the machine it runs on, against a real server.

Starts its own `shoal up` (`local_server`: SQLite, a temporary data directory, one node of
8 CPUs), then runs, N times each (`--repeat`, default 10), in interleaved rounds so that the
shared machine's noise falls on each alike:

- `python -c pass`: the bare interpreter, the same-run baseline;
- `shoal --help`;
- `shoal jobs` (listing the jobs submitted so far);
- `shoal submit FILE`: a trivial one-task job (`true`).

Each command is a child process; its CPU time (user + system) is the growth of this
process's `RUSAGE_CHILDREN` while it ran (the server is reaped only at the end, so that is
the command's alone), its wall time from spawn to exit. Output goes to a pipe, as in a
script.

Each is measured twice, as Python finds its bytecode:
- `bytecode_cached`: compiled modules cached (in a private `PYTHONPYCACHEPREFIX`, filled by
  one unmeasured run first), as after `pip install`, which compiles, or any second run;
- `no_bytecode`: `PYTHONDONTWRITEBYTECODE=1` and no cache of the run's own, so every module
  without a `__pycache__` beside it (an environment installed by `uv sync`, which compiles
  none by default, and the project) is compiled from source at every start: how the
  machines of issue 18 ran it.

With `--peer SHOAL` (another checkout's `shoal` entry point, e.g. the main branch's
`.venv/bin/shoal`) the same three commands of that checkout run in the same rounds, against
the same server: a before/after comparison measured under the same load.

Prints one JSON object: per mode and command the median `cpu_s` and `wall_s`, `cpu_vs_bare`
(its median CPU as a multiple of the bare interpreter's, same mode) and `meets_goal`
(`cpu_s` < `goal_cpu_s`, 0.3, issue 18); `shoal`, the package that ran (so a before/after
comparison names its checkout). With `--peer`: `peer` (the entry point) and, per mode,
`peer_help`, `peer_jobs`, `peer_submit` (the same figures) and `cpu_vs_peer` (each command's
median CPU over the peer's, same run).

    uv run python bench/cli.py [--repeat 10] [--peer ../main/.venv/bin/shoal]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # as a script or via runpy
from local_server import local_server

import shoal

#: Issue 18's goal: CPU seconds per command.
GOAL_CPU_S = 0.3
#: The environment of each way of finding bytecode (see the docstring); PYCACHE is replaced
#: by a directory of the run's own.
MODES = {"bytecode_cached": {"PYTHONPYCACHEPREFIX": "PYCACHE"},
         "no_bytecode": {"PYTHONDONTWRITEBYTECODE": "1"}}

JOB = """\
apiVersion: shoal/v1
kind: Job
metadata: {name: NAME}
spec:
  taskGroups:
    - name: main
      replicas: 1
      resources: {cpu: 100m, memory: 64Mi}
      command: ["true"]
"""


@dataclass(frozen=True)
class Sample:
    cpu_s: float
    wall_s: float


def shoal_command() -> list[str]:
    """The `shoal` entry point of this interpreter's environment (what users run), else
    `python -m shoal`."""
    script = Path(sys.executable).parent / "shoal"
    return [str(script)] if script.exists() else [sys.executable, "-m", "shoal"]


def measure(argv: list[str], env: dict[str, str], cwd: Path) -> Sample:
    """Run `argv` to its end with stdout on a pipe; its own CPU time and the wall time."""
    # Children's rusage grows only when one is reaped: the server is reaped at the end, so
    # the delta around one command is that command's alone.
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} exited {done.returncode}: "
                         f"{(done.stderr or done.stdout).decode(errors='replace')[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return Sample(cpu, wall)


def summary(samples: list[Sample], bare_cpu: float) -> dict[str, float | bool]:
    cpu = statistics.median(s.cpu_s for s in samples)
    return {
        "cpu_s": round(cpu, 4),
        "wall_s": round(statistics.median(s.wall_s for s in samples), 4),
        "cpu_vs_bare": round(cpu / bare_cpu, 1) if bare_cpu else float("inf"),
        "meets_goal": cpu < GOAL_CPU_S,
    }


def mode_env(base: dict[str, str], mode: str, workdir: Path) -> dict[str, str]:
    env = {k: v for k, v in base.items()
           if k not in ("PYTHONPYCACHEPREFIX", "PYTHONDONTWRITEBYTECODE")}
    for key, value in MODES[mode].items():
        env[key] = value.replace("PYCACHE", str(workdir / "pycache"))
    return env


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=10, help="Runs of each command.")
    parser.add_argument("--peer", type=Path, help="Another checkout's `shoal` entry point, "
                                                  "measured in the same rounds.")
    args = parser.parse_args(argv)

    started = time.perf_counter()
    results: dict[str, dict[str, object]] = {}
    with tempfile.TemporaryDirectory(prefix="shoal-bench-cli-") as tmp:
        workdir = Path(tmp)
        with local_server(workdir, "--interval", "1") as client:
            token = str(client.headers["Authorization"]).removeprefix("Bearer ")
            base = {**os.environ, "SHOAL_SERVER": str(client.base_url).rstrip("/"),
                    "SHOAL_TOKEN": token, "SHOAL_CONFIG": str(workdir / "no-config.yaml")}
            envs = {mode: mode_env(base, mode, workdir) for mode in MODES}
            shoal_cli = shoal_command()
            commands = {
                "bare_python": [sys.executable, "-c", "pass"],
                "help": [*shoal_cli, "--help"],
                "jobs": [*shoal_cli, "jobs"],
                "submit": [*shoal_cli, "submit", "JOB"],
            }
            if args.peer is not None:
                peer = str(args.peer.resolve())
                commands |= {"peer_help": [peer, "--help"], "peer_jobs": [peer, "jobs"],
                             "peer_submit": [peer, "submit", "PEERJOB"]}
            samples = {mode: {name: list[Sample]() for name in commands} for mode in MODES}
            for round_ in range(-1, args.repeat):  # round -1 fills the bytecode cache
                for mode, env in envs.items():
                    jobs = {}
                    for kind in ("JOB", "PEERJOB"):
                        jobs[kind] = workdir / f"{kind}-{mode}-{round_ + 1}.yaml"
                        jobs[kind].write_text(JOB.replace("NAME", f"bench-cli-{kind.lower()}-"
                                                          f"{mode.replace('_', '-')}-"
                                                          f"{round_ + 1}"))
                    for name, command in commands.items():
                        argv = [str(jobs[part]) if part in jobs else part for part in command]
                        sample = measure(argv, env, workdir)
                        if round_ >= 0:
                            samples[mode][name].append(sample)
    for mode, by_command in samples.items():
        bare = statistics.median(s.cpu_s for s in by_command["bare_python"])
        results[mode] = {
            "bare_python": {"cpu_s": round(bare, 4), "wall_s": round(statistics.median(
                s.wall_s for s in by_command["bare_python"]), 4)},
            **{name: summary(by_command[name], bare) for name in commands
               if name != "bare_python"}}
        if args.peer is not None:
            results[mode]["cpu_vs_peer"] = {
                name: round(statistics.median(s.cpu_s for s in by_command[name])
                            / statistics.median(s.cpu_s for s in by_command[f"peer_{name}"]), 3)
                for name in ("help", "jobs", "submit")}
    print(json.dumps({
        "benchmark": "cli",
        "shoal": str(Path(shoal.__file__).parent),
        "repeat": args.repeat,
        "goal_cpu_s": GOAL_CPU_S,
        **({} if args.peer is None else {"peer": str(args.peer)}),
        **results,
        "wall_s": round(time.perf_counter() - started, 2),
    }))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
