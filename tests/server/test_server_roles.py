"""The API shows a task group's `TaskCompleted → CompleteJob` policy as it was written."""

from __future__ import annotations

from server_helpers import Api, job_yaml


def test_the_complete_job_policy_is_shown_with_the_failure_policies(api: Api) -> None:
    text = job_yaml("train", extra_group=(
        "\n      policies: [{event: TaskCompleted, action: CompleteJob}, "
        "{event: TaskFailed, action: RestartTask}]"))
    answer = api.submit(text)
    assert answer.status_code == 201, answer.text
    group = answer.json()["spec"]["taskGroups"][0]
    assert group["policies"] == [{"event": "TaskFailed", "action": "RestartTask"},
                                 {"event": "TaskCompleted", "action": "CompleteJob"}]
    stored = api.repository.get_job("train")
    assert stored is not None and stored.groups[0].completes_job
