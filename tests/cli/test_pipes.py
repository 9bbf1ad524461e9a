"""The CLI in pipes and on terminals, and how it says what went wrong (issue 18): tables at
full width in a pipe (and with `-o wide` on a terminal), `jobs --watch` printing a line per
change where it cannot redraw (it follows the server's events since issue 21), a silent
server reported as timed out with the timeout, and errors without the API's request
locations (`path.name`)."""

from __future__ import annotations

import json
import os
import pty
import re
import select
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from live_shoal import Server, runner

from shoal.cli.config import ConfigFile, resolve, write_config
from shoal.cli.main import app
from shoal.cli.remote_support import Format
from shoal.client import (
    ErrorItem,
    JobEvent,
    ShoalClient,
    ShoalConnectionError,
    ShoalServerTimeoutError,
)
from shoal.executors.local import free_port

#: Long enough that its row of `shoal jobs` passes 80 columns.
LONG = "a-job-whose-name-is-long-enough-to-push-its-row-well-past-80"
SHOAL = str(Path(sys.executable).parent / "shoal")
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07")


@pytest.fixture(autouse=True)
def no_config(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No server, token, timeout or config from the environment."""
    for name in ("SHOAL_SERVER", "SHOAL_TOKEN", "SHOAL_TIMEOUT", "FORCE_COLOR",
                 "TTY_COMPATIBLE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("SHOAL_CONFIG", str(tmp_path / "config.yaml"))


LONG_JOB = f"""\
apiVersion: shoal/v1
kind: Job
metadata: {{name: {LONG}}}
spec:
  taskGroups:
    - name: main
      replicas: 1
      resources: {{cpu: 100m, memory: 64Mi}}
      command: ["true"]
"""


@pytest.fixture(scope="module")
def long_job(server: Server, tmp_path_factory: pytest.TempPathFactory) -> str:
    path = tmp_path_factory.mktemp("jobs") / "long.yaml"
    path.write_text(LONG_JOB)
    submitted = server.shoal("submit", str(path))
    assert submitted.exit_code == 0, submitted.output
    return LONG


def shoal_env(server: Server, **more: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "TTY_COMPATIBLE")}
    return {**env, "SHOAL_SERVER": server.url, "SHOAL_TOKEN": server.token, **more}


def piped(server: Server, *args: str) -> str:
    """`shoal ARGS…` with stdout on a pipe, and COLUMNS=40, which rich would fold to."""
    done = subprocess.run([SHOAL, *args], env=shoal_env(server, COLUMNS="40"),
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout


def on_a_terminal(server: Server, *args: str, columns: int = 50) -> list[str]:
    """`shoal ARGS…` with stdout on a pseudo-terminal `columns` wide: its lines, without
    colours."""
    leader, follower = pty.openpty()
    process = subprocess.Popen([SHOAL, *args], env=shoal_env(server, COLUMNS=str(columns)),
                               stdout=follower, stderr=subprocess.PIPE)
    os.close(follower)
    output = b""
    deadline = time.monotonic() + 120  # a safety net: the command ends on its own
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([leader], [], [], 1.0)
            if not ready:
                if process.poll() is not None:
                    break
                continue
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # EIO: the terminal's other side closed
                break
            if not chunk:
                break
            output += chunk
    finally:
        os.close(leader)
        assert process.wait(timeout=60) == 0
    return ANSI.sub("", output.decode()).splitlines()


# ---- full width ------------------------------------------------------------------------------

def test_a_table_in_a_pipe_is_never_folded(server: Server, long_job: str) -> None:
    lines = piped(server, "jobs").splitlines()
    assert lines[0].split() == ["NAME", "USER", "QUEUE", "STATE", "RUNNING", "SUBMITTED",
                                "WAITING", "BECAUSE"]
    row = next(line for line in lines if long_job in line)
    assert row.split()[1:3] == ["admin", "default"]  # the whole row on one line
    assert len(row.rstrip()) > 80


def test_the_vc_tree_in_a_pipe_keeps_its_line_ends(server: Server, long_job: str) -> None:
    lines = piped(server, "vc", "tree").splitlines()
    assert lines[0].startswith("root") and len(lines) >= 2
    for line in lines:  # every virtual cluster's line ends with its jobs
        assert re.search(r"jobs \d+ running, \d+ waiting$", line), line


def test_on_a_terminal_a_table_fits_it_and_wide_does_not(server: Server,
                                                          long_job: str) -> None:
    fitted = on_a_terminal(server, "jobs", columns=50)
    assert all(len(line) <= 50 for line in fitted)
    assert not any(long_job in line for line in fitted)  # folded into the column
    wide = on_a_terminal(server, "jobs", "-o", "wide", columns=50)
    row = next(line for line in wide if long_job in line)
    assert row.split()[1:3] == ["admin", "default"]


# ---- jobs --watch off a terminal -------------------------------------------------------------

def test_watch_in_a_pipe_prints_a_line_per_event(
        server: Server, long_job: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """One line per event, as JSON with `-o json`: Ctrl-C after the first of each."""
    from shoal.cli import watching

    printed = watching._print

    def print_once(fmt: Format, event: JobEvent) -> None:
        printed(fmt, event)
        raise KeyboardInterrupt

    monkeypatch.setattr(watching, "_print", print_once)
    result = server.shoal("jobs", "--watch", "--queue", "default")
    assert result.exit_code == 0, result.output
    first = result.stdout.splitlines()
    assert len(first) == 1 and first[0].split()[0] == "ADDED"
    as_json = server.shoal("jobs", "--watch", "-o", "json")
    assert as_json.exit_code == 0, as_json.output
    event = json.loads(as_json.stdout)  # one object a line: what jq reads
    assert event["type"] == "ADDED" and event["object"]["kind"] == "Job"


def test_watch_on_a_terminal_redraws_its_table_as_jobs_change(server: Server,
                                                              long_job: str) -> None:
    leader, follower = pty.openpty()
    process = subprocess.Popen([SHOAL, "jobs", "--watch", "-o", "wide"],
                               env=shoal_env(server, COLUMNS="200"), stdout=follower,
                               stderr=subprocess.PIPE)
    os.close(follower)
    screen = b""

    def shows(text: str) -> bool:
        nonlocal screen
        deadline = time.monotonic() + 60  # a safety net: the table is drawn at once
        while text.encode() not in screen:
            assert time.monotonic() < deadline, f"{text!r} never drawn: {screen[-2000:]!r}"
            assert process.poll() is None
            if select.select([leader], [], [], 1.0)[0]:
                screen += os.read(leader, 65536)
        return True

    try:
        assert shows(long_job) and shows("NAME")
        with ShoalClient(server.url, server.token) as shoal:
            shoal.submit(LONG_JOB.replace(LONG, "drawn-later"))
        assert shows("drawn-later")
    finally:
        process.kill()
        process.wait(timeout=60)
        os.close(leader)


def test_watch_stops_quietly_when_its_reader_leaves(server: Server, long_job: str) -> None:
    process = subprocess.Popen([SHOAL, "jobs", "--watch"], env=shoal_env(server),
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert process.stdout is not None and process.stderr is not None
    try:
        seen = b""
        deadline = time.monotonic() + 60  # a safety net: the listing comes at once
        while long_job.encode() not in seen:
            assert time.monotonic() < deadline, f"no listing in a minute: {seen!r}"
            assert process.poll() is None, process.stderr.read()
            if select.select([process.stdout], [], [], 1.0)[0]:
                seen += os.read(process.stdout.fileno(), 65536)
        process.stdout.close()  # `| head` has read enough
        # The next change makes it write, and find nobody reading.
        with ShoalClient(server.url, server.token) as shoal:
            shoal.submit(LONG_JOB.replace(LONG, "after-the-reader-left"))
        assert process.wait(timeout=60) == 0
        assert process.stderr.read() == b""  # no traceback, no "Exception ignored"
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


# ---- a server that does not answer, one that is not there -------------------------------------

def test_a_silent_server_is_reported_as_timed_out_with_the_timeout() -> None:
    with socket.socket() as silent:  # the kernel accepts connections; nobody ever answers
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        url = f"http://127.0.0.1:{silent.getsockname()[1]}"
        result = runner.invoke(app, ["jobs", "--server", url, "--token", "t"],
                               env={"SHOAL_TIMEOUT": "0.3"})
    assert result.exit_code == 3, result.output
    assert f"timed out after 0.3 s waiting for the Shoal server at {url}" in result.stderr
    assert "cannot reach" not in result.stderr and "Traceback" not in result.output


def test_a_refused_connection_still_says_cannot_reach() -> None:
    url = f"http://127.0.0.1:{free_port()}"
    result = runner.invoke(app, ["jobs", "--server", url, "--token", "t"])
    assert result.exit_code == 3, result.output
    assert f"cannot reach the Shoal server at {url}: connection refused" in result.stderr


def test_the_client_raises_a_timeout_that_is_a_connection_error() -> None:
    with socket.socket() as silent, pytest.raises(ShoalServerTimeoutError) as raised:
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        url = f"http://127.0.0.1:{silent.getsockname()[1]}"
        with ShoalClient(url, timeout=0.2, retry_delay=0.0) as shoal:
            shoal.health()
    assert isinstance(raised.value, ShoalConnectionError)  # what callers caught before
    assert raised.value.timeout == 0.2 and raised.value.url == url


@pytest.mark.parametrize("value", ["soon", "0", "-1", "nan", "86401"])
def test_a_bad_timeout_is_a_usage_error(value: str) -> None:
    result = runner.invoke(app, ["jobs", "--server", "http://127.0.0.1:1", "--token", "t"],
                           env={"SHOAL_TIMEOUT": value})
    assert result.exit_code == 2, result.output
    assert f"invalid timeout {value!r} (from SHOAL_TIMEOUT)" in result.stderr


def test_the_timeout_comes_from_the_environment_then_the_config_file(tmp_path: Path) -> None:
    config = tmp_path / "saved.yaml"
    write_config(config, ConfigFile("http://gpu-box:8765", "saved", 2.5))
    env = {"SHOAL_CONFIG": str(config)}
    assert resolve(env={"SHOAL_CONFIG": str(tmp_path / "absent.yaml")}).timeout == 30.0
    assert resolve(env=env).timeout == 2.5
    assert resolve(env={**env, "SHOAL_TIMEOUT": "7"}).timeout == 7.0


# ---- errors in the user's words ---------------------------------------------------------------

def test_an_unknown_job_is_named_without_the_apis_location(server: Server) -> None:
    result = server.shoal("get", "ghost")
    assert result.exit_code == 2, result.output
    assert result.stderr.strip() == "error: no job 'ghost'"


@pytest.mark.parametrize(("path", "shown"), [
    ("path.name", None), ("query.after", None), ("header.Authorization", None),
    ("body", None), ("body.queues[0]", "queues[0]"), (None, None),
    ("spec.taskGroups[0].replicas", "spec.taskGroups[0].replicas"),
    ("metadata.name", "metadata.name"), ("spec", "spec")])
def test_an_error_shows_where_only_for_the_users_own_fields(path: str | None,
                                                             shown: str | None) -> None:
    item = ErrorItem("is wrong", path)
    assert item.field == shown
    assert str(item) == (f"{shown}: is wrong" if shown else "is wrong")


def test_the_servers_words_are_printed_as_they_are(capsys: pytest.CaptureFixture[str]
                                                   ) -> None:
    """What the client verbs print is the server's data: `:name:` is no emoji code."""
    from shoal.cli.remote_support import Format, err, out

    said = "stopped: exit code 1 (:fire: in the log)"
    out(Format.WIDE).print(said)
    err.print(said)
    captured = capsys.readouterr()
    assert (captured.out, captured.err) == (said + "\n", said + "\n")
