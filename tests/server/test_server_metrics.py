"""`GET /metrics` of the app (a store-backed stand-in for the control loop): it parses, it
reads virtual clusters and jobs at each scrape, a scheduler that does not answer in time
costs its part of the scrape and is counted — never the whole answer — and a job's own
virtual cluster never becomes a label value."""

from __future__ import annotations

from dataclasses import replace

from prometheus_client.parser import text_string_to_metric_families
from server_helpers import Api, job_yaml

from shoal.scheduler.introspection import VirtualClusterStatus


def scrape(api: Api) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    answer = api.request("GET", "/metrics", "bob")
    assert answer.status_code == 200, answer.text
    return {(s.name, frozenset(s.labels.items())): s.value
            for family in text_string_to_metric_families(answer.text)
            for s in family.samples}


def key(name: str, **labels: str) -> tuple[str, frozenset[tuple[str, str]]]:
    return name, frozenset(labels.items())


def test_a_scrape_reads_virtual_clusters_and_jobs_now(api: Api) -> None:
    before = scrape(api)
    assert before[key("shoal_jobs", state="Pending")] == 0
    assert before[key("shoal_virtual_cluster_guaranteed", virtual_cluster="root",
                      resource="gpu")] == 16
    assert api.submit(job_yaml("train", replicas=2, gpu=1)).status_code == 201
    after = scrape(api)
    assert after[key("shoal_jobs", state="Pending")] == 1
    assert after[key("shoal_virtual_cluster_waiting", virtual_cluster="default",
                     resource="gpu")] == 2
    assert after[key("shoal_virtual_cluster_waiting", virtual_cluster="default",
                     resource="memory")] == 2 * 4 * 2**30
    assert after[key("shoal_virtual_cluster_pending_jobs", virtual_cluster="default")] == 1
    assert after[key("shoal_nodes", phase="Ready")] == 2


def test_a_scheduler_that_does_not_answer_costs_its_part_only(api: Api) -> None:
    api.scheduler.stuck = True
    samples = scrape(api)
    assert samples[key("shoal_metrics_scrape_errors_total", part="virtual_clusters")] == 1
    assert not any(name.startswith("shoal_virtual_cluster_") for name, _ in samples)
    assert samples[key("shoal_jobs", state="Pending")] == 0
    api.scheduler.stuck = False
    again = scrape(api)
    assert again[key("shoal_metrics_scrape_errors_total", part="virtual_clusters")] == 1
    assert key("shoal_virtual_cluster_used", virtual_cluster="team-a", resource="gpu") in again


def test_a_jobs_own_virtual_cluster_is_no_label(api: Api) -> None:
    real = api.scheduler.virtual_cluster_status

    def with_a_job_cluster() -> dict[str, VirtualClusterStatus]:
        statuses = real()
        statuses["job:secret-project"] = replace(statuses["team-a"], name="job:secret-project",
                                                 parent="team-a")
        return statuses

    api.scheduler.virtual_cluster_status = with_a_job_cluster  # type: ignore[method-assign]
    text = api.request("GET", "/metrics", "bob").text
    assert "team-a" in text and "secret-project" not in text
