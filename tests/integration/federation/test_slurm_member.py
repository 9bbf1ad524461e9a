"""The `slurm` member adapter against a real Slurm (the folder's one, conftest.py:
munged, slurmctld, two slurmd — `cpu1`, and `gpu1` with one fake GPU as GRES — and
slurmrestd with JWT auth): a copy runs to SUCCEEDED, a GPU copy runs on the GRES node and a
second one waits while its GPU is taken, a cancelled copy is STOPPED as the member itself
says (`squeue`, `scontrol show job`), copies are found by name, a wrong token is refused
without being shown, and a slurmrestd that does not answer, or whose slurmctld does not, is
reported unavailable.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import partial
from pathlib import Path

import pytest
from member_copies import copy_request, wait_until
from slurm_member_cluster import JOB_USER, SlurmMemberCluster, controller_down

from shoal.api.federation import ClusterKind, CopyState, MemberCluster
from shoal.federation.members.contract import (
    MemberCredentials,
    MemberRefusedError,
    MemberUnavailableError,
)
from shoal.federation.members.slurm import SlurmMember

#: A safety net for conditions that hold within seconds on an idle machine.


@pytest.fixture()
def cluster(slurm_cluster: SlurmMemberCluster) -> SlurmMemberCluster:
    return slurm_cluster


@pytest.fixture()
def member(cluster: SlurmMemberCluster) -> Iterator[SlurmMember]:
    adapter = SlurmMember(MemberCluster("slurm-a", cluster.uri, ClusterKind.SLURM),
                          MemberCredentials(JOB_USER, cluster.token), timeout_s=30)
    yield adapter
    adapter.close()


copy = partial(copy_request, "slurm-a")


def output_of(member: SlurmMember, remote_id: str) -> str:
    """The copy's output file, at the path `logs` names (the member is this machine)."""
    said = member.logs(remote_id)
    path = next(word for word in said.split() if word.startswith("/"))
    return Path(path).read_text()


def test_a_copy_runs_to_success_and_its_output_path_is_named(
        cluster: SlurmMemberCluster, member: SlurmMember) -> None:
    remote_id = member.submit(copy("greet-slurm-a", 'echo "$GREETING"', "echo in $PWD"))
    seen = wait_until(member, remote_id, lambda status: status.state.is_final)
    assert seen[-1].state is CopyState.SUCCEEDED, seen[-1]
    assert seen[-1].member_state == "COMPLETED"
    assert seen[-1].started_at is not None
    assert {s.state for s in seen} <= {CopyState.WAITING, CopyState.RUNNING,
                                       CopyState.SUCCEEDED}
    said = member.logs(remote_id)
    assert f"{cluster.work}/greet-slurm-a-{remote_id}.out" in said
    assert "slurmrestd serves no job output" in said
    assert output_of(member, remote_id) == f"hello from shoal\nin {cluster.work}\n"
    assert cluster.job_field(remote_id, "UserId").startswith(JOB_USER)
    assert member.find("greet-slurm-a") == remote_id
    assert member.find("greet-slurm-nobody") is None


def test_each_instance_runs_the_commands_and_a_failing_one_fails_the_copy(
        member: SlurmMember) -> None:
    both = member.submit(copy("pair-slurm-a", "echo instance $SLURM_PROCID", instances=2))
    failing = member.submit(copy("fail-slurm-a", "false", "echo after-failure"))
    assert wait_until(member, both, lambda s: s.state.is_final)[-1].state is CopyState.SUCCEEDED
    assert sorted(output_of(member, both).splitlines()) == ["instance 0", "instance 1"]
    done = wait_until(member, failing, lambda s: s.state.is_final)[-1]
    assert (done.state, done.member_state) == (CopyState.FAILED, "FAILED")
    assert "after-failure" not in output_of(member, failing)


def test_a_gpu_copy_runs_on_the_gres_node_and_another_waits_until_it_is_cancelled(
        cluster: SlurmMemberCluster, member: SlurmMember) -> None:
    holder = member.submit(copy("holder-slurm-a", "echo gpu=$CUDA_VISIBLE_DEVICES",
                                "sleep 600", gpu=1))
    wait_until(member, holder, lambda status: status.state is CopyState.RUNNING)
    assert cluster.job_field(holder, "NodeList") == "gpu1"
    waiter = member.submit(copy("waiter-slurm-a", "echo got the gpu", gpu=1))
    # slurmctld considered it and holds it for the GPU the first copy has.
    waiting = wait_until(member, waiter, lambda status: status.detail == "Resources")
    assert waiting[-1].state is CopyState.WAITING and waiting[-1].started_at is None
    assert waiting[-1].member_state == "PENDING"
    assert member.find("holder-slurm-a") == holder

    member.cancel(holder)
    stopped = wait_until(member, holder, lambda status: status.state.is_final)[-1]
    assert (stopped.state, stopped.member_state) == (CopyState.STOPPED, "CANCELLED")
    assert cluster.job_field(holder, "JobState") == "CANCELLED"
    assert holder not in cluster.queue()
    member.cancel(holder)  # cancelling a cancelled copy is no error

    done = wait_until(member, waiter, lambda status: status.state.is_final)[-1]
    assert done.state is CopyState.SUCCEEDED
    assert cluster.job_field(waiter, "NodeList") == "gpu1"
    member.cancel(waiter)  # nor is cancelling a finished one
    assert member.status(waiter).state is CopyState.SUCCEEDED


def test_an_unknown_job_is_refused_and_its_cancel_is_no_error(member: SlurmMember) -> None:
    with pytest.raises(MemberRefusedError, match=r"cluster 'slurm-a'.*Invalid job id"):
        member.status("999999")
    member.cancel("999999")
    with pytest.raises(MemberRefusedError, match="not a Slurm job id"):
        member.status("../jobs")


def test_a_copy_of_two_roles_is_refused_before_any_call(
        cluster: SlurmMemberCluster, member: SlurmMember) -> None:
    queued = cluster.queue()
    with pytest.raises(MemberRefusedError,
                       match=r"cluster 'slurm-a'.*2 task roles.*one role per copy"):
        member.submit(copy("roles-slurm-a", "true", roles=2))
    assert member.find("roles-slurm-a") is None
    assert cluster.queue() == queued


def test_a_wrong_token_is_refused_without_showing_it(cluster: SlurmMemberCluster) -> None:
    forged = cluster.token[:-8] + "AAAAAAAA"
    adapter = SlurmMember(MemberCluster("slurm-a", cluster.uri, ClusterKind.SLURM),
                          MemberCredentials(JOB_USER, forged))
    with pytest.raises(MemberRefusedError, match=r"cluster 'slurm-a'.*refused") as refused:
        adapter.submit(copy("forged-slurm-a", "true"))
    # A read gets only "Unspecified error" from slurmrestd 22.05, as with slurmctld down.
    with pytest.raises(MemberUnavailableError, match="turned the token away") as unknown:
        adapter.find("forged-slurm-a")
    for raised in (refused, unknown):
        for secret in (forged, cluster.token, forged[-20:]):
            assert secret not in str(raised.value)
    adapter.close()


def test_a_slurmrestd_that_does_not_answer_is_unavailable(
        cluster: SlurmMemberCluster) -> None:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    adapter = SlurmMember(MemberCluster("slurm-down", f"http://127.0.0.1:{port}",
                                        ClusterKind.SLURM),
                          MemberCredentials(JOB_USER, cluster.token), timeout_s=5)
    with pytest.raises(MemberUnavailableError, match="cluster 'slurm-down'") as raised:
        adapter.submit(copy("lost-slurm-down", "true"))
    assert cluster.token not in str(raised.value)
    with pytest.raises(MemberUnavailableError):
        adapter.status("1")
    with pytest.raises(MemberUnavailableError):
        adapter.cancel("1")


def test_a_slurmctld_that_is_down_behind_slurmrestd_is_unavailable(
        cluster: SlurmMemberCluster) -> None:
    with controller_down(cluster) as uri:
        adapter = SlurmMember(MemberCluster("slurm-a", uri, ClusterKind.SLURM),
                              MemberCredentials(JOB_USER, cluster.token), timeout_s=30)
        with pytest.raises(MemberUnavailableError, match="Unable to contact slurm controller"):
            adapter.submit(copy("late-slurm-a", "true"))
        with pytest.raises(MemberUnavailableError, match="slurmctld did not answer"):
            adapter.status("1")
        adapter.close()
    # The shared slurmctld never saw the copy, and still answers.
    assert "late-slurm-a" not in cluster.slurm.command("squeue", "-h", "-o", "%j")
