"""The client commands load only what they use (issue 18): `shoal --help`, `shoal submit`,
`shoal jobs` and the other verbs that talk to a server run, for real, against a live
`shoal up`, each in a fresh interpreter that writes the modules it loaded when it exits;
none of the server's, the store's, the control plane's, the scheduler's or the simulator's
modules (nor the libraries under them) may be among them.

And the defaults `shoal up` shows are the ones the layers apply (`shoal.api.defaults`); the
one copy left, the built-in profiles' names (`shoal.cli.option_defaults`), is checked
against its source.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import light_runs
import pytest
from light_runs import heavy_in
from live_shoal import Server

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


#: Modules of commands other than the job verbs (`shoal.cli.remote`).
OTHER_COMMANDS = frozenset({"shoal.cli.sim", "shoal.cli.up", "shoal.cli.multicluster",
                            "shoal.cli.usage", "shoal.cli.remote_admin",
                            "shoal.cli.remote_changes", "shoal.cli.job_controls",
                            "shoal.cli.offline"})


def run_shoal(server: Server, tmp_path: Path, *args: str) -> tuple[str, list[str]]:
    """`shoal ARGS…` in a fresh interpreter: its stdout and the modules it loaded."""
    done, modules = light_runs.run_shoal(tmp_path, *args, server=server.url,
                                         token=server.token)
    return done.stdout, modules


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
    # the name is printed as a line: no console, no table (rich) to load for it
    assert [m for m in modules if m.split(".")[0] == "rich"] == []
    # `shoal submit` loads the module declaring it, not the other commands' (main.COMMANDS)
    assert OTHER_COMMANDS.isdisjoint(modules)
    listed, modules = run_shoal(server, tmp_path, "jobs")
    assert "light" in listed.split()  # the job just submitted is listed
    assert heavy_in(modules) == []
    assert OTHER_COMMANDS.isdisjoint(modules)
    # its table, in a pipe, is laid out as plain text (shoal.cli.plain_table), not by rich
    assert [m for m in modules if m.split(".")[0] == "rich"] == []
    # shoal.api's names load from their modules when asked: the states, not the model
    assert "shoal.api.lifecycle" in modules and "shoal.api.objects" not in modules
    # a plain-HTTP server is reached without httpx's connection pool (shoal.client.plain_http)
    assert "shoal.client.plain_http" in modules and "httpcore" not in modules
    got, modules = run_shoal(server, tmp_path, "get", "light")
    assert "light" in got
    assert heavy_in(modules) == []


def test_logs_loads_no_server_store_or_scheduler(server: Server, tmp_path: Path) -> None:
    job = tmp_path / "said.yaml"
    job.write_text(JOB.replace("light", "said").replace('["true"]', '["echo", "said"]'))
    run_shoal(server, tmp_path, "submit", "--wait", str(job))
    out, modules = run_shoal(server, tmp_path, "logs", "said")
    assert out == "said\n"
    assert heavy_in(modules) == []


def test_hold_and_release_load_no_server_store_or_scheduler(server: Server,
                                                            tmp_path: Path) -> None:
    job = tmp_path / "parked.yaml"
    job.write_text(JOB.replace("light", "parked").replace("spec:\n", "spec:\n  hold: true\n"))
    run_shoal(server, tmp_path, "submit", str(job))
    out, modules = run_shoal(server, tmp_path, "hold", "parked")
    assert out.strip() == "job parked is held"
    assert heavy_in(modules) == []
    out, modules = run_shoal(server, tmp_path, "release", "parked")
    assert out.strip() == "job parked is released"
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


def test_the_profile_names_copy_matches_its_source() -> None:
    from shoal.cli.option_defaults import BUILTIN_PROFILE_NAMES
    from shoal.scheduler.profile import BUILTIN_PROFILES

    assert set(BUILTIN_PROFILE_NAMES) == set(BUILTIN_PROFILES)


def test_the_defaults_up_shows_are_the_ones_the_layers_apply() -> None:
    """`shoal up --help` shows `shoal.api.defaults`; the spec's limits, the log follows and
    the executors' isolation apply the same values, not copies of them."""
    import inspect

    from shoal.api import defaults
    from shoal.cli.up import up
    from shoal.executors.isolation import Policy
    from shoal.server.app import create_app
    from shoal.spec.limits import DEFAULT_LIMITS

    shown = {name: p.default for name, p in inspect.signature(up).parameters.items()}
    assert (shown["max_body_bytes"], shown["max_tasks_per_job"], shown["max_nodes"]) == (
        DEFAULT_LIMITS.max_body_bytes, DEFAULT_LIMITS.max_tasks_per_job,
        DEFAULT_LIMITS.max_nodes)
    assert shown["max_follows_per_user"] == inspect.signature(create_app).parameters[
        "follows_per_user"].default == defaults.FOLLOWS_PER_USER
    assert shown["task_user_prefix"] == Policy.__dataclass_fields__["prefix"].default


def test_the_packages_load_their_names_when_asked() -> None:
    """`shoal.api` and `shoal.client` define their heavier names on first use (PEP 562):
    importing the package loads none of them, and every public name still resolves to the
    object its module defines."""
    probe = """\
import importlib, json, sys
import shoal.api, shoal.client
before = sorted(sys.modules)
names = {}
for package in (shoal.api, shoal.client):
    for name in package.__all__:
        value = getattr(package, name)
        names[f"{package.__name__}.{name}"] = getattr(
            importlib.import_module(getattr(value, "__module__", None) or package.__name__),
            name, value) is value
print(json.dumps({"before": before, "names": names}))
"""
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          timeout=120, check=True)
    report = json.loads(done.stdout)
    loaded = set(report["before"])
    assert "shoal.api" in loaded and "shoal.api.objects" not in loaded
    assert "shoal.client.models" in loaded and "shoal.client.cluster_views" not in loaded
    assert len(report["names"]) > 60 and all(report["names"].values())


def test_the_listing_loads_neither_attrs_nor_the_commands_parameters(server: Server,
                                                                     tmp_path: Path) -> None:
    """`shoal --help` prints every command without loading attrs (rich's pretty-printer
    does without it) or the client."""
    out, modules = run_shoal(server, tmp_path, "--help")
    assert "submit" in out and "Talking to a server" in out
    assert [m for m in modules if m.startswith("attr.")] == []
    assert "pydantic" not in modules and "shoal.client" not in modules
