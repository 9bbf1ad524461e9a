"""Fair share's job field (seed 002) through the API: shown as submitted, in seconds, and a
bad value refused with its path."""

from __future__ import annotations

from server_helpers import Api, job_yaml


def test_a_jobs_freezing_window_is_shown(api: Api) -> None:
    answer = api.submit(job_yaml("calm", extra_spec="\n  freezingWindow: 5m"))
    assert answer.status_code == 201, answer.text
    job = api.request("GET", "/api/v1/jobs/calm", "alice").json()
    assert job["spec"]["freezingWindow"] == 300.0
    assert api.submit(job_yaml("plain")).status_code == 201
    plain = api.request("GET", "/api/v1/jobs/plain", "alice").json()
    assert plain["spec"]["freezingWindow"] is None


def test_a_negative_freezing_window_is_refused_with_its_path(api: Api) -> None:
    refused = api.submit(job_yaml("jumpy", extra_spec="\n  freezingWindow: -5"))
    assert refused.status_code == 422
    assert refused.json()["errors"][0]["path"] == "spec.freezingWindow"
    assert api.repository.get_job("jumpy") is None
