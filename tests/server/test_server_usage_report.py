"""`GET /api/v1/usage` (issue 21): bad parameters are 422s naming the query parameter, a
report answers the contract's JSON (a series only with a step), and the default span is
the week up to now."""

from __future__ import annotations

from server_helpers import Api

from shoal.api import Resources
from shoal.api.accounting import DAY, Outcome, iso
from shoal.store.accounting import EndedAttempt, record_ended


def test_the_usage_report_and_its_errors(api: Api) -> None:
    api.repository.clock.now = 1_800_000_000.0  # type: ignore[attr-defined]  # a test Clock
    now = api.repository.clock()
    with api.repository.store.sessions.begin() as s:
        record_ended(s, [EndedAttempt(1, "train", "worker/0", 1, "team-a", "alice", "gpu-0",
                                      now - 7200, now - 3600, Resources.of(cpu=2000, gpu=2),
                                      Outcome.PREEMPTED)])
    for query, path in (("by=team", "query.by"), ("since=last-week", "query.since"),
                        ("since=2026-11-02&until=2026-11-01", "query.since"),
                        ("step=week", "query.step")):
        answer = api.request("GET", f"/api/v1/usage?{query}", "bob")
        assert answer.status_code == 422, query
        assert answer.json()["errors"][0]["path"] == path
    answer = api.request("GET", "/api/v1/usage?by=gpu-type", "bob")
    assert answer.status_code == 200
    data = answer.json()
    assert (data["by"], data["step"]) == ("gpu-type", "none")
    assert data["until"] == iso(api.repository.clock.now) and \
        data["since"] == iso(api.repository.clock.now - 7 * DAY)
    [row] = data["rows"]
    assert row == {"key": "a100", "tasks": 1, "gpuSeconds": 7200.0, "cpuSeconds": 7200.0,
                   "memoryByteSeconds": 0.0,
                   "wastedGpuSeconds": {"preempted": 7200.0, "failed": 0.0}}
    assert data["total"]["key"] == "total" and "series" not in data["total"]
    hourly = api.request("GET", f"/api/v1/usage?by=user&step=hour&since={iso(now - DAY)}",
                         "alice").json()
    assert [r["key"] for r in hourly["rows"]] == ["alice"]
    assert sum(p["gpuSeconds"] for p in hourly["rows"][0]["series"]) == 7200.0
