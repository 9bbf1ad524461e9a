"""The `ray` member adapter against a real Ray head and its Jobs API (one head for the
folder, conftest.py): a copy runs to SUCCEEDED with its log read back, a sleeping one is
RUNNING until it is stopped, a GPU copy waits while the head's one GPU is taken, copies are
found by name, and a head that does not answer is reported unavailable.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import partial

import pytest
from member_copies import copy_request, wait_until
from ray_member_cluster import RayMemberCluster, free_port

from shoal.api.federation import ClusterKind, CopyState, MemberCluster
from shoal.federation.members.contract import (
    MemberCredentials,
    MemberRefusedError,
    MemberUnavailableError,
)
from shoal.federation.members.ray import RayMember

#: A safety net for conditions that hold within seconds on an idle machine.


@pytest.fixture()
def head(ray_head: RayMemberCluster) -> RayMemberCluster:
    return ray_head


@pytest.fixture()
def member(head: RayMemberCluster) -> Iterator[RayMember]:
    adapter = RayMember(MemberCluster("ray-a", head.uri, ClusterKind.RAY),
                        MemberCredentials(token=head.token), timeout_s=30)
    yield adapter
    adapter.close()


copy = partial(copy_request, "ray-a")


def test_a_copy_runs_to_success_and_its_log_is_read_back(member: RayMember) -> None:
    remote_id = member.submit(copy("greet-ray-a", 'echo "$GREETING"', "echo second line"))
    assert remote_id == "greet-ray-a"
    seen = wait_until(member, remote_id, lambda status: status.state.is_final)
    assert seen[-1].state is CopyState.SUCCEEDED, seen[-1]
    assert seen[-1].member_state == "SUCCEEDED"
    assert seen[-1].started_at is not None
    assert {s.state for s in seen} <= {CopyState.WAITING, CopyState.RUNNING,
                                       CopyState.SUCCEEDED}
    log = member.logs(remote_id)
    assert "hello from shoal" in log and "second line" in log
    assert member.logs(remote_id, limit_bytes=5) == log.encode()[-5:].decode(errors="ignore")
    assert member.find("greet-ray-a") == remote_id
    assert member.find("greet-ray-nobody") is None


def test_a_failing_command_fails_the_copy(member: RayMember) -> None:
    # Ray's log quotes the entrypoint when it fails: the output differs from its text.
    remote_id = member.submit(copy("fail-ray-a", "false", "printf 'after%s' -failure"))
    seen = wait_until(member, remote_id, lambda status: status.state.is_final)
    assert seen[-1].state is CopyState.FAILED
    assert "after-failure" not in member.logs(remote_id)


def test_a_running_copy_is_stopped_and_a_gpu_copy_waits_for_the_gpu(
        member: RayMember) -> None:
    holder = member.submit(copy("holder-ray-a", "sleep 600", gpu=1))
    wait_until(member, holder, lambda status: status.state is CopyState.RUNNING)
    waiter = member.submit(copy("waiter-ray-a", "echo got the gpu", gpu=1))
    # Ray keeps it PENDING while the GPU is taken: its driver cannot be placed.
    assert member.status(waiter).state is CopyState.WAITING
    member.cancel(holder)
    seen = wait_until(member, holder, lambda status: status.state.is_final)
    assert seen[-1].state is CopyState.STOPPED
    member.cancel(holder)  # stopping a stopped copy is no error
    assert member.status(holder).state is CopyState.STOPPED
    done = wait_until(member, waiter, lambda status: status.state.is_final)
    assert done[-1].state is CopyState.SUCCEEDED
    assert "got the gpu" in member.logs(waiter)


def test_a_taken_name_is_refused(member: RayMember) -> None:
    member.submit(copy("twice-ray-a", "true"))
    with pytest.raises(MemberRefusedError, match="already exists"):
        member.submit(copy("twice-ray-a", "true"))


@pytest.mark.parametrize(("instances", "roles", "why"), [(2, 1, "2 instances"),
                                                         (1, 2, "2 task roles")])
def test_a_copy_a_ray_job_cannot_be_is_refused_before_any_call(
        instances: int, roles: int, why: str) -> None:
    # No head at this address: a refusal here was decided before any call.
    adapter = RayMember(MemberCluster("ray-b", f"http://127.0.0.1:{free_port()}",
                                      ClusterKind.RAY), MemberCredentials())
    with pytest.raises(MemberRefusedError, match=rf"cluster 'ray-b'.*{why}"):
        adapter.submit(copy("wide-ray-b", "true", instances=instances, roles=roles))


def test_a_wrong_token_is_refused_without_showing_it(head: RayMemberCluster) -> None:
    adapter = RayMember(MemberCluster("ray-a", head.uri, ClusterKind.RAY),
                        MemberCredentials(token="wrong-ray-token"))
    with pytest.raises(MemberRefusedError, match=r"cluster 'ray-a'.*refused with 403") as raised:
        adapter.find("greet-ray-a")
    assert "wrong-ray-token" not in str(raised.value)
    assert head.token not in str(raised.value)
    assert "wrong-ray-token" not in repr(MemberCredentials(token="wrong-ray-token"))


def test_a_head_that_does_not_answer_is_unavailable() -> None:
    adapter = RayMember(MemberCluster("ray-down", f"http://127.0.0.1:{free_port()}",
                                      ClusterKind.RAY),
                        MemberCredentials(token="secret-ray-token"), timeout_s=5)
    with pytest.raises(MemberUnavailableError, match="cluster 'ray-down'") as raised:
        adapter.submit(copy("lost-ray-down", "true"))
    assert "secret-ray-token" not in str(raised.value)
    with pytest.raises(MemberUnavailableError):
        adapter.status("lost-ray-down")
    with pytest.raises(MemberUnavailableError):
        adapter.find("lost-ray-down")
