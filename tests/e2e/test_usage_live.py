"""Usage accounting through a real `shoal up` on the local executor (issue 21): the report
after a small workload matches the run times the tasks measured themselves, within the
poll interval and the launch; a preempted task's GPU-seconds show as wasted; an attempt
that ends while the server is down (`kill -9`) is recorded once, after the restart, charged
until it ended and not for the downtime, and what was recorded before survives it; and
`shoal usage` prints the report as a table, JSON or CSV."""

from __future__ import annotations

import csv
import json
import time
from collections.abc import Iterator

import pytest
from shoal_documents import job_yaml, node_yaml
from shoal_up_process import Up, shoal_up, until
from typer.testing import CliRunner

from shoal.api import JobState
from shoal.api.accounting import DAY, Outcome, ReportRow, iso
from shoal.cli.main import app
from shoal.client import ShoalClient

LAUNCH_AND_POLL = 3.0
"""What the record may add to a task's own run time: from its bind to its process's start
(the launch), and from its exit to the poll that sees it (`--interval 0.2`); generous for
a loaded machine. The record never holds less than the process ran."""
NOW = time.time()
SINCE, UNTIL = iso(NOW - DAY), iso(NOW + DAY)  # holds the test, however slow the machine
MEASURE = "[sh, -c, 'date +%s.%N; sleep {s}; date +%s.%N']"


@pytest.fixture(scope="module")
def up(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Up]:
    home = tmp_path_factory.mktemp("usage")
    (home / "cluster.yaml").write_text(node_yaml())
    with shoal_up(home, "--profile", "elastic") as server:
        yield server
        with server.client() as shoal:  # it leaves running tasks behind when it stops
            for job in shoal.iter_jobs():
                if not job.terminal:
                    shoal.cancel(job.name)
            until("every job to end", lambda: all(j.terminal for j in shoal.iter_jobs()))


def job(name: str, command: str, *, gpu: int = 1, extra: str = "") -> str:
    return job_yaml(name, replicas=1, gpu=gpu, cpu=str(gpu), memory="64Mi", command=command,
                    extra_spec=extra)


def measured(shoal: ShoalClient, name: str) -> float:
    """The run time the task printed: from its first line's clock to its second's."""
    with shoal.logs(name, "worker-0") as stream:
        first, second = "".join(stream).split()[:2]
    return float(second) - float(first)


def by_job(shoal: ShoalClient) -> dict[str, ReportRow]:
    return {r.key: r for r in shoal.usage(by="job", since=SINCE, until=UNTIL,
                                          step="none").report.rows}


def test_the_report_matches_the_tasks_run_times(up: Up) -> None:
    with up.client() as shoal:
        for name, seconds in (("short", 1), ("longer", 3)):
            shoal.submit(job(name, MEASURE.format(s=seconds)))
        for name in ("short", "longer"):
            assert shoal.wait(name, timeout=120).state is JobState.SUCCEEDED
        rows = by_job(shoal)
        for name in ("short", "longer"):
            ran = measured(shoal, name)
            row = rows[name]
            assert row.tasks == 1 and row.wasted[Outcome.PREEMPTED] == 0
            assert ran - 0.05 <= row.gpu_seconds <= ran + LAUNCH_AND_POLL, (name, ran, row)
            assert row.cpu_seconds == pytest.approx(row.gpu_seconds)  # a CPU per GPU
        by_type = shoal.usage(by="gpu-type", since=SINCE, until=UNTIL).report
        assert [r.key for r in by_type.rows] == ["fake"]


def test_a_preempted_task_is_shown_as_wasted(up: Up) -> None:
    with up.client() as shoal:
        shoal.submit(job("low", "[sleep, '600']", gpu=2,
                         extra="\n  priorityClassName: experiment"))
        until("low to run", lambda: shoal.get_job("low").state is JobState.RUNNING)
        shoal.submit(job("high", "[sh, -c, 'echo done']", gpu=2,
                         extra="\n  priorityClassName: production"))
        assert shoal.wait("high", timeout=120).state is JobState.SUCCEEDED
        low = until("low's preempted attempt", lambda: by_job(shoal).get("low"))
        assert low.tasks == 1 and low.wasted[Outcome.PREEMPTED] == low.gpu_seconds > 0
        shoal.cancel("low")
        until("low to end", lambda: shoal.get_job("low").terminal)


def test_an_attempt_across_a_restart_is_recorded_once(up: Up) -> None:
    # Where the task, run as another OS user, can see and write.
    shared = up.scratch.shared
    started, release, done = (shared / f"across-{n}" for n in ("started", "release", "done"))
    # It measures itself between the two dates, and says when it started and ended.
    command = (f"[sh, -c, 'date +%s.%N; touch {started}; while [ ! -e {release} ]; "
               f"do sleep 0.05; done; date +%s.%N; touch {done}']")
    with up.client() as shoal:
        before = by_job(shoal)
        shoal.submit(job("across", command))
        until("across's process to start", started.exists)
    up.kill9()
    killed = time.monotonic()
    release.touch()  # it ends while the server is down
    until("across to end", done.exists)
    # Down longer than the slack below, so that charging the downtime would be caught.
    until("the server to be down past the slack",
          lambda: time.monotonic() - killed > 2 * LAUNCH_AND_POLL)
    up.start()  # the same port and store: it adopts the ended task
    with up.client() as shoal:
        assert shoal.wait("across", timeout=120).state is JobState.SUCCEEDED
        after = by_job(shoal)
        for name, row in before.items():
            assert after[name] == row, name  # nothing recorded before was lost or doubled
        across = after["across"]
        ran = measured(shoal, "across")
        assert across.tasks == 1
        # Charged until it ended (its wrapper's record), not until the restarted server
        # saw it end: the downtime is not in it.
        assert ran - 0.05 <= across.gpu_seconds <= ran + LAUNCH_AND_POLL, (ran, across)


def test_shoal_usage_prints_a_table_json_and_csv(up: Up) -> None:
    runner = CliRunner()
    common = ["usage", "--server", up.url, "--token", up.token, "--since", SINCE,
              "--until", UNTIL]
    as_json = runner.invoke(app, [*common, "--by", "user", "-o", "json", "--step", "day"])
    assert as_json.exit_code == 0, as_json.output
    data = json.loads(as_json.stdout)
    assert data["by"] == "user" and data["total"]["tasks"] >= 4
    assert sum(p["gpuSeconds"] for p in data["total"]["series"]) == \
        pytest.approx(data["total"]["gpuSeconds"])
    as_csv = runner.invoke(app, [*common, "--by", "job", "-o", "csv"])
    assert as_csv.exit_code == 0, as_csv.output
    rows = {r["key"]: r for r in csv.DictReader(as_csv.stdout.splitlines())}
    assert {"short", "longer", "low", "across", "total"} <= set(rows)
    assert float(rows["low"]["wasted_preempted_gpu_seconds"]) > 0
    table = runner.invoke(app, [*common, "--by", "queue"])
    assert table.exit_code == 0, table.output
    assert "default" in table.stdout and "total" in table.stdout
    bad = runner.invoke(app, [*common[:-2], "--until", "soon"])
    assert bad.exit_code == 2 and "--until must be an ISO 8601" in bad.output
