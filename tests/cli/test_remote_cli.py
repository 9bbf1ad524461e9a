"""The client verbs (`shoal submit`, `jobs`, `get`, `cancel`, `logs`, `nodes`, `vc`, `pc`,
`user add`, `login`, `whoami`) through typer's CliRunner against one real `shoal up`
subprocess per module (the pattern of tests/e2e/test_shoal_up.py): exit codes, the messages
on stderr, and where the server URL and token come from."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from live_shoal import Server, runner
from task_users import task_python
from typer.testing import Result

from shoal.cli.main import app
from shoal.client import JobEvent
from shoal.executors.local import free_port


@pytest.fixture(autouse=True)
def isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """No server, token or config from the environment or the working directory."""
    for name in ("SHOAL_SERVER", "SHOAL_TOKEN", "XDG_CONFIG_HOME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("SHOAL_CONFIG", str(tmp_path / "config" / "shoal.yaml"))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def job_file(directory: Path, name: str, code: str, queue: str = "default") -> Path:
    path = directory / f"{name}.yaml"
    path.write_text(f"""\
apiVersion: shoal/v1
kind: Job
metadata: {{name: {name}}}
spec:
  schedulerName: shoal
  queue: {queue}
  taskGroups:
    - name: worker
      replicas: 1
      resources: {{cpu: 1, memory: 1Gi, gpu: 1}}
      command: [{task_python()!r}, -c, {code!r}]
""")
    return path


def clean(result: Result) -> None:
    """Every failure is a message, never a traceback."""
    assert result.exception is None or isinstance(result.exception, SystemExit), (
        result.exception)
    assert "Traceback" not in result.output


# ---- jobs ------------------------------------------------------------------------------------

def test_submit_wait_of_a_job_that_succeeds_exits_0(server: Server, tmp_path: Path) -> None:
    path = job_file(tmp_path, "ok", "import sys; print('out'); print('err', file=sys.stderr)")
    result = server.shoal("submit", str(path), "--wait", "--timeout", "30")
    assert result.exit_code == 0, result.output
    assert result.stdout.strip() == "ok" and "job ok Succeeded" in result.stderr


def test_submit_wait_of_a_job_that_fails_exits_1(server: Server, tmp_path: Path) -> None:
    result = server.shoal("submit", str(job_file(tmp_path, "bad", "raise SystemExit(3)")),
                          "--wait", "--timeout", "30")
    clean(result)
    assert result.exit_code == 1, result.output
    assert "job bad Failed" in result.stderr and "3" in result.stderr


def test_jobs_json_get_and_logs(server: Server, tmp_path: Path) -> None:
    server.shoal("submit", str(job_file(tmp_path, "hello", "print('hello there')")), "--wait")
    listed = server.shoal("jobs", "-o", "json")
    assert listed.exit_code == 0, listed.output
    states = {j["metadata"]["name"]: j["status"]["state"] for j in json.loads(listed.stdout)}
    assert states["hello"] == "Succeeded"
    assert server.shoal("jobs", "--state", "succeeded", "--limit", "1").exit_code == 0
    got = server.shoal("get", "hello")
    assert got.exit_code == 0, got.output
    assert "worker-0" in got.stdout and "local" in got.stdout and "Events" in got.stdout
    as_yaml = server.shoal("get", "hello", "-o", "yaml")
    assert "name: hello" in as_yaml.stdout and "state: Succeeded" in as_yaml.stdout
    logs = server.shoal("logs", "hello", "--task", "worker-0")
    assert logs.exit_code == 0, logs.output
    assert logs.stdout == "hello there\n"


def test_logs_follow_a_running_task_to_its_end(server: Server, tmp_path: Path) -> None:
    code = ("import sys, time; print('early', flush=True); time.sleep(1); print('late'); "
            "print('to stderr', file=sys.stderr)")
    assert server.shoal("submit", str(job_file(tmp_path, "noisy", code))).exit_code == 0
    followed = server.shoal("logs", "noisy", "-f")
    assert followed.exit_code == 0, followed.output
    assert followed.stdout == "early\nlate\n"
    logs = server.shoal("logs", "noisy", "--stderr")
    assert logs.exit_code == 0 and logs.stdout == "to stderr\n"
    missing = server.shoal("logs", "noisy", "--task", "worker-7")
    clean(missing)
    assert missing.exit_code == 2 and "worker-7" in missing.stderr


def wait_for_state(server: Server, name: str, state: str, failure: str) -> None:
    deadline = time.monotonic() + 20
    while json.loads(server.shoal("get", name, "-o", "json").stdout)[
            "status"]["state"] != state:
        assert time.monotonic() < deadline, failure
        time.sleep(0.2)


def test_cancel_a_running_job(server: Server, tmp_path: Path) -> None:
    server.shoal("submit", str(job_file(tmp_path, "sleeper", "import time; time.sleep(60)")))
    wait_for_state(server, "sleeper", "Running", "sleeper never ran")
    result = server.shoal("cancel", "sleeper")
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("job sleeper ")
    wait_for_state(server, "sleeper", "Cancelled", "sleeper was never stopped")
    again = server.shoal("cancel", "sleeper")
    clean(again)
    assert again.exit_code == 2
    assert "has already ended: Cancelled" in again.stderr


def test_user_errors_exit_2_with_a_message(server: Server, tmp_path: Path) -> None:
    missing = server.shoal("submit", str(tmp_path / "absent.yaml"))
    clean(missing)
    assert missing.exit_code == 2 and "absent.yaml" in missing.stderr
    bad = tmp_path / "bad.yaml"
    bad.write_text(job_file(tmp_path, "bad-spec", "pass").read_text()
                   .replace("replicas: 1", "replicas: 0"))
    invalid = server.shoal("submit", str(bad))
    clean(invalid)
    assert invalid.exit_code == 2 and "spec.taskGroups[0].replicas" in invalid.stderr
    unknown = server.shoal("get", "ghost")
    assert unknown.exit_code == 2 and "no job 'ghost'" in unknown.stderr


def test_watch_prints_until_ctrl_c(server: Server, monkeypatch: pytest.MonkeyPatch,
                                   tmp_path: Path) -> None:
    assert server.shoal("submit", str(job_file(tmp_path, "watched", "pass"))).exit_code == 0
    printed: list[str] = []

    def interrupt(_fmt: object, event: JobEvent) -> None:
        printed.append(event.job.name)
        raise KeyboardInterrupt

    monkeypatch.setattr("shoal.cli.watching._print", interrupt)
    result = server.shoal("jobs", "--watch")
    assert result.exit_code == 0, result.output
    assert len(printed) == 1  # the first job listed, then Ctrl-C


# ---- cluster and users -----------------------------------------------------------------------

def test_nodes_vc_and_pc(server: Server, tmp_path: Path) -> None:
    nodes = server.shoal("nodes", "-o", "json")
    assert nodes.exit_code == 0 and json.loads(nodes.stdout)[0]["name"] == "local"
    assert json.loads(nodes.stdout)[0]["state"] == "Ready"
    table = server.shoal("nodes").stdout
    assert "gpu-type=fake" in table and "Ready" in table
    spec = tmp_path / "vc.yaml"
    spec.write_text("apiVersion: shoal/v1\nkind: VirtualCluster\nmetadata: {name: team-z}\n")
    assert server.shoal("vc", "create", str(spec)).exit_code == 0
    listed = server.shoal("vc", "list", "-o", "json")
    assert {v["name"] for v in json.loads(listed.stdout)} >= {"team-a", "team-z"}
    tree = server.shoal("vc", "tree")
    assert tree.exit_code == 0, tree.stdout
    lines = tree.stdout.splitlines()
    assert lines[0].startswith("root") and "GPUs used" in lines[0]
    assert any("team-z" in line and "guaranteed" in line for line in lines[1:])
    as_json = json.loads(server.shoal("vc", "tree", "-o", "json").stdout)
    assert as_json["cluster"]["name"] == "root"
    assert "team-z" in as_json["cluster"]["children"]
    classes = server.shoal("pc", "list")
    assert classes.exit_code == 0 and "production" in classes.stdout


def test_flavors_create_and_list(server: Server, tmp_path: Path) -> None:
    empty = server.shoal("flavors", "list", "-o", "json")
    assert empty.exit_code == 0 and json.loads(empty.stdout) == []
    spec = tmp_path / "flavors.yaml"
    spec.write_text("apiVersion: shoal/v1\nkind: ResourceFlavor\nmetadata: {name: fake}\n"
                    "spec: {nodeLabels: {gpu-type: fake}}\n---\n"
                    "apiVersion: shoal/v1\nkind: ResourceFlavor\nmetadata: {name: any}\n"
                    "---\n"
                    "apiVersion: shoal/v1\nkind: ResourceFlavor\nmetadata: {name: spot}\n"
                    "spec: {nodeLabels: {lifecycle: spot}}\n")
    created = server.shoal("flavors", "create", str(spec))
    assert created.exit_code == 0, created.output
    table = server.shoal("flavors", "list")
    assert table.exit_code == 0, table.output
    rows = {line.split()[0]: line.split()[1:] for line in table.stdout.splitlines()[1:]
            if line.strip() and not line.startswith(("─", "━", "-"))}
    assert table.stdout.split()[:4] == ["NAME", "NODE", "LABELS", "NODES"]
    # The one node of this server is labelled gpu-type=fake; a flavor without labels is
    # every node.
    assert rows == {"any": ["(every", "node)", "1"], "fake": ["gpu-type=fake", "1"],
                    "spot": ["lifecycle=spot", "0"]}
    as_json = json.loads(server.shoal("flavors", "list", "-o", "json").stdout)
    assert [(f["name"], f["nodes"]) for f in as_json] == [("any", 1), ("fake", 1),
                                                          ("spot", 0)]
    again = server.shoal("flavors", "create", str(spec))
    assert again.exit_code == 2 and "exists already" in again.stderr


def test_a_new_user_may_not_submit_to_a_queue_not_theirs(server: Server, tmp_path: Path
                                                         ) -> None:
    added = server.shoal("user", "add", "bob", "--queue", "default")
    assert added.exit_code == 0, added.output
    bob = added.stdout.strip()
    assert bob and "shown only now" in added.stderr
    path = job_file(tmp_path, "bobs", "pass", queue="team-a")
    refused = server.shoal("submit", str(path), token=bob)
    clean(refused)
    assert refused.exit_code == 2
    assert "user 'bob' may not submit to queue 'team-a' (allowed: default)" in refused.stderr
    not_admin = server.shoal("user", "add", "eve", token=bob)
    assert not_admin.exit_code == 2 and "not an admin" in not_admin.stderr


def test_a_refused_token_says_how_to_log_in(server: Server) -> None:
    result = server.shoal("nodes", token="not-a-token")
    clean(result)
    assert result.exit_code == 2 and "shoal login" in result.stderr


# ---- where the server and token come from ------------------------------------------------

def test_login_writes_a_private_config_that_later_commands_use(server: Server,
                                                              isolated: Path) -> None:
    result = runner.invoke(app, ["login", "--server", server.url, "--token-file",
                                 str(server.home / ".shoal" / "admin.token")])
    assert result.exit_code == 0, result.output
    assert "as admin 'admin'" in result.stdout
    config = isolated / "config" / "shoal.yaml"
    assert config.stat().st_mode & 0o777 == 0o600
    who = runner.invoke(app, ["whoami", "-o", "json"])
    assert who.exit_code == 0, who.output
    assert json.loads(who.stdout) | {"server": server.url, "tokenFrom": "config file",
                                      "name": "admin"} == json.loads(who.stdout)
    wrong = runner.invoke(app, ["login", "--server", server.url, "--token", "nope"])
    assert wrong.exit_code == 2 and config.read_text().count(server.token) == 1


def test_the_local_admin_token_needs_no_login(server: Server,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(server.home)
    monkeypatch.setenv("SHOAL_SERVER", server.url)
    result = runner.invoke(app, ["whoami"])
    assert result.exit_code == 0, result.output
    assert "admin 'admin'" in result.stdout and "local admin token" in result.stdout


def test_an_unreachable_server_exits_3_naming_the_url() -> None:
    url = f"http://127.0.0.1:{free_port()}"
    result = runner.invoke(app, ["jobs", "--server", url, "--token", "t"])
    clean(result)
    assert result.exit_code == 3 and url in result.stderr
    malformed = runner.invoke(app, ["jobs", "--server", "127.0.0.1:8765"])
    clean(malformed)
    assert malformed.exit_code == 2 and "invalid server URL '127.0.0.1:8765'" in malformed.stderr


def test_settings_come_from_flags_then_env_then_config_then_local_token(
        isolated: Path) -> None:
    from shoal.cli.config import ConfigFile, Settings, Source, resolve, write_config

    (isolated / ".shoal").mkdir()
    (isolated / ".shoal" / "admin.token").write_text("local\n")
    nothing = {"SHOAL_CONFIG": str(isolated / "absent.yaml")}
    assert resolve(env=nothing, cwd=isolated) == Settings(
        "http://127.0.0.1:8765", "local", Source.DEFAULT, Source.LOCAL)
    config = isolated / "config.yaml"
    write_config(config, ConfigFile("http://gpu-box:8765", "saved"))
    env = {"SHOAL_CONFIG": str(config)}
    saved = resolve(env=env, cwd=isolated)
    assert (saved.server, saved.token, saved.token_from) == ("http://gpu-box:8765", "saved",
                                                             Source.CONFIG)
    # The saved token is for its own server only; the local one for this machine only.
    assert resolve("http://elsewhere:1", env=env, cwd=isolated).token is None
    assert resolve("http://localhost:1", env=env, cwd=isolated).token == "local"
    overridden = resolve(env={**env, "SHOAL_SERVER": "http://a:1", "SHOAL_TOKEN": "e"},
                         cwd=isolated)
    assert (overridden.server, overridden.token) == ("http://a:1", "e")
    assert resolve("http://b:2", "f", env={**nothing, "SHOAL_TOKEN": "e"},
                   cwd=isolated).token == "f"


def test_delete_a_running_job_then_reuse_its_name(server: Server, tmp_path: Path) -> None:
    server.shoal("submit", str(job_file(tmp_path, "doomed", "import time; time.sleep(60)")))
    wait_for_state(server, "doomed", "Running", "doomed never ran")
    result = server.shoal("delete", "doomed")
    assert result.exit_code == 0, result.output
    assert "is being stopped" in result.stdout
    deadline = time.monotonic() + 30
    while (got := server.shoal("get", "doomed")).exit_code == 0:
        assert time.monotonic() < deadline, "doomed was never removed"
        time.sleep(0.2)
    clean(got)
    assert got.exit_code == 2 and "no job 'doomed'" in got.stderr
    # The name is free again, and the new job starts from scratch: its first attempt is
    # launched (not the old one's record re-adopted) and its log holds only its own output.
    again = server.shoal("submit", "--wait", str(job_file(tmp_path, "doomed", "print('again')")))
    assert again.exit_code == 0, again.output
    assert server.shoal("logs", "doomed").stdout == "again\n"
    ended = server.shoal("delete", "doomed")
    assert ended.exit_code == 0 and "job 'doomed' deleted" in ended.stdout
    missing = server.shoal("delete", "doomed")
    clean(missing)
    assert missing.exit_code == 2 and "no job 'doomed'" in missing.stderr
