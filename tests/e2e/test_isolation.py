"""End to end: tenants' tasks under a real `shoal up` (as root, which CI is), tried as a
hostile user would (issue 14, item 1).

Mallory's job is given everything it would need to take over: the paths of the admin token,
the store, another tenant's log and working directory, the pid of that tenant's running
task (and of its wrapper and the server). It tries each and prints a JSON report, which the
test reads through the logs API with Mallory's own token: every attempt must have failed
with a permission error, and the other tenant's task must be running untouched. Where a
cgroup hierarchy is writable (it is on CI), a task that allocates past its memory request
ends `OOMKilled`, and a process that escaped its task's session with `setsid` is killed
with it.
"""

from __future__ import annotations

import json
import os
import stat
import time
from pathlib import Path

import httpx
import psutil
import pytest
from task_users import task_python
from test_shoal_up import Server, wait_for

from shoal.executors import cgroups

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="isolation needs shoal up as root")

#: What Mallory's task tries; argv[1] is a JSON object of targets. Each attempt reports
#: "ok: …" or the exception's name (`python -c ATTACK TARGETS`: argv[0] is "-c").
ATTACK = """\
import json, os, signal, sys
targets = json.loads(sys.argv[1])
report = {"uid": os.getuid(), "gid": os.getgid(), "groups": os.getgroups(),
          "cwd": os.getcwd(), "cwd_owner": os.stat(".").st_uid,
          "cwd_mode": oct(os.stat(".").st_mode & 0o777), "home": os.environ["HOME"],
          "has_token": "SHOAL_TOKEN" in os.environ}
def attempt(name, action):
    try:
        report[name] = "ok: " + str(action())[:80]
    except Exception as exc:
        report[name] = type(exc).__name__
for name in ("admin_token", "store", "victim_log", "victim_secret", "victim_environ"):
    attempt(name, lambda path=targets[name]: open(path, "rb").read())
attempt("list_victim_work", lambda: os.listdir(targets["victim_work"]))
attempt("list_data_dir", lambda: os.listdir(targets["data_dir"]))
attempt("write_victim_status",
        lambda: open(targets["victim_status"], "w").write('{"exit_code": 0}'))
for name in ("kill_victim", "kill_victim_wrapper", "kill_server"):
    attempt(name, lambda pid=targets[name]: os.kill(pid, signal.SIGKILL))
attempt("kill_victim_group", lambda: os.killpg(targets["kill_victim_wrapper"], signal.SIGKILL))
print(json.dumps(report), flush=True)
"""

#: Alice's long-running task: a secret in its working directory, its pid and cwd printed.
VICTIM = ("import os, pathlib, time; pathlib.Path('secret.txt').write_text('s3cret'); "
          "print(os.getpid(), os.getcwd(), flush=True); time.sleep(600)")

REFUSED = "PermissionError"


def submit(client: httpx.Client, name: str, *argv: str, memory: str = "1Gi") -> None:
    """Submit a one-task job running `task_python() argv…` (as JSON: any argv survives)."""
    job = {"apiVersion": "shoal/v1", "kind": "Job", "metadata": {"name": name},
           "spec": {"schedulerName": "shoal", "taskGroups": [{
               "name": "worker", "replicas": 1,
               "resources": {"cpu": "1", "memory": memory, "gpu": 0},
               "command": [task_python(), *argv]}]}}
    answer = client.post("/api/v1/jobs", json=job)
    assert answer.status_code == 201, answer.text


def create_user(admin: httpx.Client, name: str) -> httpx.Client:
    answer = admin.post("/api/v1/users", json={"name": name, "queues": ["default"]})
    assert answer.status_code == 201, answer.text
    return httpx.Client(base_url=str(admin.base_url), timeout=10,
                        headers={"Authorization": f"Bearer {answer.json()['token']}"})


def stdout_of(client: httpx.Client, job: str, seconds: float = 30) -> str:
    """The job's first task's stdout once it has a line, read through the API."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        answer = client.get(f"/api/v1/jobs/{job}/logs")
        if answer.status_code == 200 and answer.text.endswith("\n"):
            return answer.text
        time.sleep(0.1)
    raise AssertionError(f"{job} printed nothing in {seconds} s: "
                         f"{client.get(f'/api/v1/jobs/{job}').json()['status']}")


def test_a_tenant_cannot_reach_the_server_or_another_tenant(server: Server) -> None:
    with server.client() as admin, create_user(admin, "alice") as alice, \
            create_user(admin, "mallory") as mallory:
        submit(alice, "victim", "-c", VICTIM)
        victim_pid_text, victim_cwd = stdout_of(alice, "victim").split()
        victim_pid = int(victim_pid_text)
        wrapper = psutil.Process(victim_pid).parent()
        assert wrapper is not None
        data = server.data.resolve()
        attempt_dir = next(data.glob("executor/tasks/victim/worker-0/attempt-*"))
        targets = {
            "admin_token": str(data / "admin.token"), "store": str(data / "shoal.db"),
            "victim_log": str(data / "executor" / "logs" / "victim" / "worker-0.out"),
            "victim_secret": str(Path(victim_cwd) / "secret.txt"),
            "victim_environ": f"/proc/{victim_pid}/environ",
            "victim_work": victim_cwd, "data_dir": str(data),
            "victim_status": str(attempt_dir / "status.json"),
            "kill_victim": victim_pid, "kill_victim_wrapper": wrapper.pid,
            "kill_server": server.process.pid}
        submit(mallory, "attacker", "-c", ATTACK, json.dumps(targets))
        report = json.loads(stdout_of(mallory, "attacker").splitlines()[-1])

        # Mallory's task is neither root nor the server, and its own directory is its own.
        assert report["uid"] not in (0, os.getuid()) and report["gid"] != 0
        assert report["groups"] in ([], [report["gid"]])
        assert report["cwd_owner"] == report["uid"] and report["cwd_mode"] == "0o700"
        assert report["home"] == report["cwd"]
        assert not report["cwd"].startswith(str(data))
        assert report["has_token"]  # its own job's token reaches it …
        # … and nothing else does: each attempt failed, as the task itself saw it.
        attempts = ("admin_token", "store", "victim_log", "victim_secret", "victim_environ",
                    "list_victim_work", "list_data_dir", "write_victim_status", "kill_victim",
                    "kill_victim_wrapper", "kill_server", "kill_victim_group")
        assert {name: report[name] for name in attempts} == dict.fromkeys(attempts, REFUSED)

        # Tenants are different OS users; the victim is unharmed.
        victim_owner = psutil.Process(victim_pid).uids().real
        assert victim_owner not in (0, report["uid"])
        assert alice.get("/api/v1/jobs/victim").json()["status"]["state"] == "Running"
        assert (Path(victim_cwd) / "secret.txt").read_text() == "s3cret"
        # The API keeps Alice's log from Mallory too.
        assert mallory.get("/api/v1/jobs/victim/logs").status_code == 403
        assert alice.post("/api/v1/jobs/victim/cancel").status_code == 200
        wait_for(alice, "victim", {"Cancelled"})

    # What a local user sees from outside: nothing of the server's is open to them.
    assert stat.S_IMODE(data.stat().st_mode) == 0o700
    for private in ("admin.token", "shoal.db", "executor/logs/victim/worker-0.out"):
        assert stat.S_IMODE((data / private).stat().st_mode) == 0o600, private


def test_cgroups_are_writable_here() -> None:
    """CI's machines offer a writable hierarchy (v1 beside a controller-less cgroup2): the
    limit tests below must run, never be skipped there."""
    found = cgroups.detect("probe-test")
    assert isinstance(found, cgroups.TaskCgroups), found
    for parent in {found.memory_parent, found.cpu_parent} - {None}:
        assert parent is not None
        parent.rmdir()


def test_a_task_above_its_memory_request_ends_oom_killed(server: Server) -> None:
    hog = "data = b'x' * (512 * 2**20); print(len(data))"
    with server.client() as client:
        submit(client, "hog", "-c", hog, memory="64Mi")
        wait_for(client, "hog", {"Succeeded", "Failed"}, 60)
        status = client.get("/api/v1/jobs/hog").json()["status"]
        assert status["state"] == "Failed"
        causes = [event["cause"] for event in status["events"]]
        assert any("OOMKilled" in cause for cause in causes), causes


#: A task that leaves its session (setsid) and so its process group, then waits.
ESCAPE = ("import os, subprocess, sys, time; "
          "p = subprocess.Popen(['sleep', '600'], start_new_session=True); "
          "print(p.pid, flush=True); time.sleep(600)")


def gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def test_stopping_a_task_kills_what_escaped_its_session(server: Server) -> None:
    with server.client() as client:
        submit(client, "escaper", "-c", ESCAPE)
        escaped = int(stdout_of(client, "escaper").split()[0])
        assert os.getsid(escaped) == escaped  # out of the task's session and group
        assert client.post("/api/v1/jobs/escaper/cancel").status_code == 200
        wait_for(client, "escaper", {"Cancelled"})
        deadline = time.monotonic() + 30
        while not gone(escaped) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert gone(escaped)
