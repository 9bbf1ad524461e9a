"""Issue 20's everyday controls through a real `shoal up` on the local executor: a time limit
ends a running job FAILED with its cause, `metadata.generateName` names a job, and a name
is used again once its job has ended, the old run kept in history with its events and
logs."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from shoal_documents import job_yaml, node_yaml
from shoal_up_process import Up, shoal_up, until

from shoal.api import JobState
from shoal.client import ShoalApiError, ShoalClient
from shoal.spec.generated_names import ALPHABET, SUFFIX_LENGTH


@pytest.fixture(scope="module")
def up(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Up]:
    home = tmp_path_factory.mktemp("names")
    (home / "cluster.yaml").write_text(node_yaml())
    with shoal_up(home) as server:
        yield server
        with server.client() as shoal:  # it leaves running tasks behind when it stops
            for job in shoal.iter_jobs():
                if not job.terminal:
                    shoal.cancel(job.name)
            until("every job to end", lambda: all(j.terminal for j in shoal.iter_jobs()))


def job(name: str, command: str, extra_spec: str = "") -> str:
    return job_yaml(name, replicas=1, gpu=0, cpu="100m", memory="64Mi", command=command,
                    extra_spec=extra_spec)


def state_of(shoal: ShoalClient, name: str, state: JobState) -> bool:
    return shoal.get_job(name).state is state


def log_of(shoal: ShoalClient, name: str) -> str:
    with shoal.logs(name, "worker-0") as stream:
        return "".join(stream)


def test_a_job_past_its_time_limit_is_stopped_and_fails(up: Up) -> None:
    with up.client() as shoal:
        shoal.submit(job("sleepy", "[sleep, '600']", "\n  timeLimit: 2s\n  jobRetryCount: 3"))
        until("the job to run", lambda: state_of(shoal, "sleepy", JobState.RUNNING))
        until("the job to fail", lambda: state_of(shoal, "sleepy", JobState.FAILED))
        causes = [e.cause for e in shoal.events("sleepy")]
        assert "time limit of 2s exceeded" in causes
        assert not any("job retr" in c.lower() for c in causes)  # a time-out is not retried


def test_generate_name_gives_the_prefix_and_a_random_suffix(up: Up) -> None:
    document = job("unused", "[sh, -c, 'echo hi']").replace("name: unused",
                                                            "generateName: train-")
    with up.client() as shoal:
        first = shoal.submit(document)
        second = shoal.submit(document)
        for made in (first, second):
            suffix = made.name.removeprefix("train-")
            assert made.name.startswith("train-") and len(suffix) == SUFFIX_LENGTH
            assert set(suffix) <= set(ALPHABET)
        assert first.name != second.name
        assert shoal.get_job(first.name).name == first.name


def test_a_name_is_used_again_once_its_job_has_ended(up: Up) -> None:
    with up.client() as shoal:
        shoal.submit(job("again", "[sh, -c, 'echo first run']"))
        until("the first run to succeed",
              lambda: state_of(shoal, "again", JobState.SUCCEEDED))
        shoal.submit(job("again", "[sh, -c, 'echo second run; sleep 600']"))
        until("the second run to start", lambda: "second run" in log_of(shoal, "again"))
        with pytest.raises(ShoalApiError) as refused:  # it has not ended: the name is taken
            shoal.submit(job("again", "[sh, -c, 'echo third run']"))
        assert refused.value.status == 409
        assert "first run" not in log_of(shoal, "again")
        old = shoal.get_job("again.1")
        assert old.state is JobState.SUCCEEDED
        assert log_of(shoal, "again.1") == "first run\n"
        history = [e.cause for e in shoal.events("again.1")]
        assert history[0] == "submitted to queue default"
        assert "kept in history as again.1: a new job was submitted as again" in history
        shoal.cancel("again")
        until("the second run to end", lambda: state_of(shoal, "again", JobState.CANCELLED))
        shoal.submit(job("again", "[sh, -c, 'echo third run']"))
        until("the third run to succeed",
              lambda: state_of(shoal, "again", JobState.SUCCEEDED))
        assert log_of(shoal, "again") == "third run\n"
        assert "second run" in log_of(shoal, "again.2")
        assert log_of(shoal, "again.1") == "first run\n"


def test_names_are_checked_at_submission(up: Up) -> None:
    nameless = job("unused", "[sh, -c, 'echo hi']").replace("name: unused", "user: admin")
    too_long = job("unused", "[sh, -c, 'echo hi']").replace(
        "name: unused", f"generateName: {'x' * 249}")
    with up.client() as shoal:
        with pytest.raises(ShoalApiError) as missing:
            shoal.submit(nameless)
        assert missing.value.status == 422 and missing.value.path == "metadata.name"
        assert "metadata.generateName" in missing.value.message
        with pytest.raises(ShoalApiError) as long_prefix:
            shoal.submit(too_long)
        assert long_prefix.value.path == "metadata.generateName"
