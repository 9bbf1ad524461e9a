"""`GET /metrics` of a real `shoal up` (local executor) after a small scenario: a job that
succeeds, one that fails after a retry, a low-priority job preempted by a high-priority one
and placed again, and one left waiting. The scrape is parsed with prometheus-client's own
parser and its values are checked against what happened: jobs by state, launches, exits by
class, the retry, the preemption, the histograms' counts, GPUs used and GPU-seconds, the
node's condition. Who may scrape: a user's token and the scrape token of
`--metrics-token-file`, nobody without one; `--metrics-open`, anyone. And the sample Grafana
dashboard asks only for series a scrape has."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families
from shoal_documents import job_yaml, node_yaml
from shoal_up_process import Up, shoal_up, until
from task_users import task_python

from shoal.api import JobState, TaskState
from shoal.client import ShoalClient

SCRAPE_TOKEN = "scrape-0123456789abcdef"
DASHBOARD = Path(__file__).resolve().parents[2] / "examples" / "grafana" / "shoal-dashboard.json"
CLUSTER = node_yaml() + """---
apiVersion: shoal/v1
kind: PriorityClass
metadata: {name: high}
value: 1000
---
apiVersion: shoal/v1
kind: PriorityClass
metadata: {name: low}
value: 10
"""


@dataclass(frozen=True)
class Scrape:
    """One parsed exposition: each sample's value by name and labels."""

    samples: dict[tuple[str, frozenset[tuple[str, str]]], float]
    families: frozenset[str]

    @staticmethod
    def parse(text: str) -> Scrape:
        samples, families = {}, set()
        for family in text_string_to_metric_families(text):
            families.add(family.name)
            for sample in family.samples:
                samples[(sample.name, frozenset(sample.labels.items()))] = sample.value
        return Scrape(samples, frozenset(families))

    def value(self, name: str, **labels: str) -> float:
        return self.samples[(name, frozenset(labels.items()))]

    def names(self) -> set[str]:
        return {name for name, _ in self.samples}


def job(name: str, code: str, *, gpu: int, priority: str | None = None, extra: str = "") -> str:
    spec = f"\n  priorityClassName: {priority}" if priority else ""
    return job_yaml(name, queue=None, replicas=1, gpu=gpu, cpu=str(max(1, gpu)), memory="256Mi",
                    extra_spec=spec, extra_group=extra,
                    command=f"[{task_python()!r}, -c, {code!r}]")


def waits_for(go: Path, started: Path) -> str:
    """Code that notes each start in `started` (one line per run), then runs until `go`."""
    return (f"import pathlib, time\ns = pathlib.Path({str(started)!r})\n"
            f"s.write_text((s.read_text() if s.exists() else '') + 'run\\n')\n"
            f"while not pathlib.Path({str(go)!r}).exists(): time.sleep(0.05)\n")


def scrape(up: Up, token: str | None) -> httpx.Response:
    headers = {} if token is None else {"Authorization": f"Bearer {token}"}
    return httpx.get(f"{up.url}/metrics", headers=headers, timeout=30)


def ended(client: ShoalClient, name: str) -> JobState | None:
    state = client.get_job(name).state
    return state if state.terminal else None


@dataclass(frozen=True)
class Scenario:
    up: Up
    while_running: Scrape
    """Scraped while the preempted job's second run held both GPUs and another job waited."""
    final: Scrape
    held_s: float
    """How long the preempted job's second run was surely running (a lower bound)."""
    elapsed_s: float
    """From the first submission to the last job's end (an upper bound of any run)."""
    user_token: str


@pytest.fixture(scope="module")
def scenario(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Scenario]:
    home = tmp_path_factory.mktemp("metrics-up")
    (home / "cluster.yaml").write_text(CLUSTER)
    (home / "scrape.token").write_text(SCRAPE_TOKEN + "\n")
    with shoal_up(home, "--profile", "elastic", "--metrics-token-file", "scrape.token") as up:
        client = up.client()
        user_token = client.create_user("viewer", queues=["default"]).token
        assert user_token
        shared = up.scratch.shared
        go, started = shared / "go", shared / "low.started"
        begun = time.monotonic()
        client.submit(job("ok", "pass", gpu=1))
        client.submit(job("bad", "import sys; sys.exit(3)", gpu=0,
                          extra="\n      taskRetryCount: 1"))
        assert until("ok and bad to end", lambda: ended(client, "ok") and ended(client, "bad"))
        client.submit(job("low", waits_for(go, started), gpu=2, priority="low"))
        until("low to run", started.exists)
        client.submit(job("high", "pass", gpu=2, priority="high"))
        assert until("high to end", lambda: ended(client, "high")) is JobState.SUCCEEDED
        until("low to run again", lambda: started.read_text().count("run") == 2)
        seen_running = time.monotonic()
        client.submit(job("blocked", "pass", gpu=2, priority="low"))
        until("blocked told why it waits", lambda: client.get_job("blocked").pending_reason)
        while_running = until("a scrape that sees blocked wait", lambda: (
            s if (s := Scrape.parse(scrape(up, up.token).text)).value(
                "shoal_virtual_cluster_pending_jobs", virtual_cluster="default") == 1 else None))
        assert client.get_job("low").task_counts.get(TaskState.RUNNING) == 1
        client.cancel("blocked")
        go.touch()
        held = time.monotonic() - seen_running
        assert until("low to end", lambda: ended(client, "low")) is JobState.SUCCEEDED
        elapsed = time.monotonic() - begun
        until("blocked to end", lambda: ended(client, "blocked"))
        final = Scrape.parse(scrape(up, up.token).text)
        yield Scenario(up, while_running, final, held, elapsed, user_token)


def test_jobs_launches_exits_and_retries_are_counted(scenario: Scenario) -> None:
    final = scenario.final
    jobs = {state: final.value("shoal_jobs", state=state.value) for state in JobState}
    assert jobs == {JobState.PENDING: 0, JobState.RUNNING: 0, JobState.SUCCEEDED: 3,
                    JobState.FAILED: 1, JobState.CANCELLED: 1}
    # ok, bad twice, low twice, high; blocked never started.
    assert final.value("shoal_task_launches_total", outcome="started") == 6
    assert final.value("shoal_task_launches_total", outcome="failed") == 0
    exits = {code: final.value("shoal_task_exits_total", code_class=code)
             for code in ("0", "1-127", "signal", "lost")}
    # ok, high and low's second run; bad's two attempts; low's first run, SIGTERMed.
    assert exits == {"0": 3, "1-127": 2, "signal": 1, "lost": 0}
    assert final.value("shoal_task_retries_total", kind="task") == 1
    assert final.value("shoal_task_retries_total", kind="job") == 0


def test_the_preemption_and_the_cycles_are_counted(scenario: Scenario) -> None:
    final = scenario.final
    assert final.value("shoal_evictions_total", reason="preempted",
                       virtual_cluster="default") == 1
    evictions = sum(v for (name, _), v in final.samples.items()
                    if name == "shoal_evictions_total")
    assert evictions == 1
    assert final.value("shoal_decisions_total", kind="evict") == 1
    assert final.value("shoal_decisions_total", kind="bind") == 6
    cycles = final.value("shoal_cycle_duration_seconds_count")
    assert cycles >= 4 and final.value("shoal_cycle_decisions_count") == cycles
    assert final.value("shoal_cycle_decisions_sum") >= 7
    # A preempting profile cycles on every event: none is skipped as moot.
    assert final.value("shoal_cycles_skipped_total") == 0


def test_waits_are_observed_once_per_task(scenario: Scenario) -> None:
    """First placements and first starts only: bad's retry and low's second placement are
    not a new wait. Each is within the scenario's length."""
    final = scenario.final
    for name in ("shoal_task_queueing_delay_seconds", "shoal_task_submit_to_running_seconds"):
        assert final.value(f"{name}_count") == 4, name
        assert 0 < final.value(f"{name}_sum") <= 4 * scenario.elapsed_s, name
        assert final.value(f"{name}_bucket", le="+Inf") == 4


def test_gpus_used_waiting_and_gpu_seconds(scenario: Scenario) -> None:
    running = scenario.while_running
    assert running.value("shoal_virtual_cluster_used", virtual_cluster="default",
                         resource="gpu") == 2
    assert running.value("shoal_virtual_cluster_used", virtual_cluster="root",
                         resource="gpu") == 2
    assert running.value("shoal_virtual_cluster_used", virtual_cluster="default",
                         resource="memory") == 256 * 2**20
    assert running.value("shoal_virtual_cluster_used", virtual_cluster="default",
                         resource="cpu") == 2
    assert running.value("shoal_virtual_cluster_guaranteed", virtual_cluster="root",
                         resource="gpu") == 2
    assert running.value("shoal_virtual_cluster_waiting", virtual_cluster="default",
                         resource="gpu") == 2
    assert running.value("shoal_virtual_cluster_running_tasks", virtual_cluster="default") == 1
    final = scenario.final
    assert final.value("shoal_virtual_cluster_used", virtual_cluster="default",
                       resource="gpu") == 0
    gpu_seconds = final.value("shoal_task_resource_seconds_total", virtual_cluster="default",
                              resource="gpu")
    # Low's second run alone held 2 GPUs at least `held_s`; 2 GPUs can hold no more than
    # 2 × the scenario's length.
    assert 2 * scenario.held_s <= gpu_seconds <= 2 * scenario.elapsed_s


def test_the_node_and_the_store_are_watched(scenario: Scenario) -> None:
    final = scenario.final
    assert final.value("shoal_node_ready", node="local") == 1
    assert final.value("shoal_node_schedulable", node="local") == 1
    assert final.value("shoal_nodes", phase="Ready") == 1
    assert final.value("shoal_store_transaction_seconds_count", mode="write",
                       outcome="commit") > 10
    assert final.value("shoal_store_transaction_seconds_count", mode="read",
                       outcome="commit") > 10
    assert not any(name == "shoal_metrics_scrape_errors_total" for name, _ in final.samples)


def test_who_may_scrape(scenario: Scenario) -> None:
    up = scenario.up
    refused = scrape(up, None)
    assert refused.status_code == 401 and refused.headers["WWW-Authenticate"] == "Bearer"
    assert refused.json()["errors"][0]["path"] == "header.Authorization"
    assert scrape(up, "not-a-token").status_code == 401
    for token in (scenario.user_token, SCRAPE_TOKEN):
        answer = scrape(up, token)
        assert answer.status_code == 200, answer.text
        assert answer.headers["content-type"].startswith("text/plain; version=")
        assert "shoal_jobs" in Scrape.parse(answer.text).families
    # Not an API route: the OpenAPI document does not list it.
    assert "/metrics" not in httpx.get(f"{up.url}/openapi.json", timeout=30).json()["paths"]


def test_metrics_open_needs_no_token(tmp_path: Path) -> None:
    (tmp_path / "cluster.yaml").write_text(node_yaml())
    with shoal_up(tmp_path, "--metrics-open") as up:
        answer = scrape(up, None)
        assert answer.status_code == 200, answer.text
        assert Scrape.parse(answer.text).value("shoal_nodes", phase="Ready") == 1


def test_the_grafana_dashboard_asks_for_series_a_scrape_has(scenario: Scenario) -> None:
    dashboard = json.loads(DASHBOARD.read_text())
    names = scenario.final.names()
    exprs = [target["expr"] for panel in dashboard["panels"]
             for target in panel.get("targets", ())]
    assert len(exprs) >= 10
    for expr in exprs:
        asked = set(_metric_names(expr))
        assert asked, expr
        assert asked <= names, (expr, sorted(asked - names))


def _metric_names(expr: str) -> Iterator[str]:
    """The series names a PromQL expression asks for: every `shoal_…` word."""
    word = ""
    for char in expr + " ":
        if char.isalnum() or char in "_:":
            word += char
            continue
        if word.startswith("shoal_"):
            yield word
        word = ""
