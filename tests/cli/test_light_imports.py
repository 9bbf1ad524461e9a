"""The client commands load only what they use (issue 18): `shoal --help`, `shoal submit`,
`shoal jobs` and the other verbs that talk to a server run, for real, against a live
`shoal up`, each in a fresh interpreter that writes the modules it loaded when it exits;
none of the server's, the store's, the control plane's, the scheduler's or the simulator's
modules (nor the libraries under them) may be among them.

And the copies of defaults that keep the commands' signatures light
(`shoal.cli.option_defaults`) are checked against the values they copy.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from live_shoal import Server

#: What a client command must not load: the server (FastAPI, uvicorn), the store
#: (SQLAlchemy, Alembic), the control plane and its executors, the scheduler, the simulator,
#: the spec's validation and the scenario runner. (pydantic is not on the list: typer
#: itself coerces every parameter through pydantic.)
HEAVY = ("sqlalchemy", "alembic", "fastapi", "uvicorn", "starlette", "psutil",
         "shoal.server", "shoal.store", "shoal.control", "shoal.executors", "shoal.scheduler",
         "shoal.sim", "shoal.spec", "shoal.core", "shoal.scenario")

#: Runs `shoal ARGS…` as the console script does, and at exit (after typer's SystemExit)
#: writes the names of every module loaded to the file named first.
RUNNER = """\
import atexit, json, sys
report = sys.argv.pop(1)
atexit.register(lambda: open(report, "w").write(json.dumps(sorted(sys.modules))))
sys.argv[0] = "shoal"
from shoal.cli.main import main
main()
"""

JOB = """\
apiVersion: shoal/v1
kind: Job
metadata: {name: light}
spec:
  taskGroups:
    - name: main
      replicas: 1
      resources: {cpu: 100m, memory: 64Mi}
      command: ["true"]
"""


def heavy_in(modules: list[str]) -> list[str]:
    return [m for m in modules if any(m == h or m.startswith(h + ".") for h in HEAVY)]


def run_shoal(server: Server, tmp_path: Path, *args: str) -> tuple[str, list[str]]:
    """`shoal ARGS…` in a fresh interpreter: its stdout and the modules it loaded."""
    report = tmp_path / "modules.json"
    report.unlink(missing_ok=True)
    env = {**os.environ, "SHOAL_SERVER": server.url, "SHOAL_TOKEN": server.token,
           "SHOAL_CONFIG": str(tmp_path / "no-config.yaml")}
    done = subprocess.run([sys.executable, "-c", RUNNER, str(report), *args], env=env,
                          cwd=tmp_path, capture_output=True, text=True, timeout=120,
                          check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout, json.loads(report.read_text())


def test_the_runner_sees_what_a_heavy_command_loads(server: Server, tmp_path: Path) -> None:
    """The check can fail: `shoal schema` needs the spec, and the report shows it."""
    out, modules = run_shoal(server, tmp_path, "schema")
    assert json.loads(out)  # it really ran
    assert "shoal.spec" in modules and heavy_in(modules)


def test_submit_and_jobs_load_no_server_store_or_scheduler(server: Server,
                                                           tmp_path: Path) -> None:
    job = tmp_path / "light.yaml"
    job.write_text(JOB)
    submitted, modules = run_shoal(server, tmp_path, "submit", str(job))
    assert submitted.strip() == "light"
    assert heavy_in(modules) == []
    listed, modules = run_shoal(server, tmp_path, "jobs")
    assert "light" in listed.split()  # the job just submitted is listed
    assert heavy_in(modules) == []
    got, modules = run_shoal(server, tmp_path, "get", "light")
    assert "light" in got
    assert heavy_in(modules) == []


@pytest.mark.parametrize("args", [("--help",), ("up", "--help"), ("nodes",), ("vc", "tree"),
                                  ("pc", "list"), ("whoami",)])
def test_help_and_the_cluster_verbs_load_no_server_store_or_scheduler(
        server: Server, tmp_path: Path, args: tuple[str, ...]) -> None:
    out, modules = run_shoal(server, tmp_path, *args)
    assert out.strip()
    assert heavy_in(modules) == []


@pytest.mark.parametrize("args", [("--help",), ("up", "--help"), ("sim", "run", "--help")])
def test_help_loads_no_http_client(server: Server, tmp_path: Path,
                                   args: tuple[str, ...]) -> None:
    out, modules = run_shoal(server, tmp_path, *args)
    assert "Usage" in out
    assert [m for m in modules if m.split(".")[0] == "httpx" or m == "shoal.client"] == []


def test_the_light_copies_match_their_sources() -> None:
    from shoal.cli import option_defaults as light
    from shoal.executors import isolation
    from shoal.scheduler.profile import BUILTIN_PROFILES
    from shoal.server import logs
    from shoal.sim.inputs import TraceFormat
    from shoal.spec.limits import DEFAULT_LIMITS

    assert set(light.BUILTIN_PROFILE_NAMES) == set(BUILTIN_PROFILES)
    limits = DEFAULT_LIMITS
    assert (limits.max_body_bytes, limits.max_tasks_per_job, limits.max_nodes) == (
        light.MAX_BODY_BYTES, light.MAX_TASKS_PER_JOB, light.MAX_NODES)
    assert light.FOLLOWS_PER_USER == logs.FOLLOWS_PER_USER
    assert (light.TASK_USER_PREFIX, light.WORK_DIR) == (isolation.DEFAULT_PREFIX,
                                                        isolation.DEFAULT_WORK_DIR)
    assert [f.value for f in light.TraceFormat] == [f.value for f in TraceFormat]
