"""An OpenPAI copy run by a Shoal member: the Shoal Job built from its task roles."""

from __future__ import annotations

import json

import pytest

from shoal.api.federation import CopyRequest, RoleRequest
from shoal.federation.members.contract import MemberRefusedError
from shoal.federation.members.shoal_member import openpai_job
from shoal.spec import load_json


def request(*roles: RoleRequest) -> CopyRequest:
    return CopyRequest(job_name="train", alias="edge", name="train-edge", roles=roles,
                       document="{}", document_kind="openpai-v2")


def test_each_role_is_a_gang_scheduled_task_group_running_its_commands() -> None:
    job = openpai_job("edge", request(
        RoleRequest("Worker_A", 2, ("cd /data", "python train.py"), gpu=1, cpu=4,
                    memory_mib=8192, image="ubuntu:22.04", env=(("LR", "0.1"),)),
        RoleRequest("ps", 1, ("python ps.py",))))
    assert job == {
        "apiVersion": "shoal/v1", "kind": "Job", "metadata": {"name": "train-edge"},
        "spec": {"schedulerName": "shoal", "taskGroups": [
            {"name": "worker-a", "replicas": 2,
             "resources": {"cpu": 4, "memory": "8192Mi", "gpu": 1},
             "command": ["/bin/sh", "-c", "cd /data\npython train.py"], "env": {"LR": "0.1"}},
            {"name": "ps", "replicas": 1, "resources": {"cpu": 1, "memory": "1024Mi"},
             "command": ["/bin/sh", "-c", "python ps.py"]}]}}


def test_the_job_is_a_valid_shoal_document() -> None:
    job = openpai_job("edge", request(RoleRequest("main", 3, ("true",), gpu=2, cpu=2)))
    bundle = load_json(json.dumps(job))
    [loaded] = bundle.jobs
    assert (loaded.name, [(g.name, g.replicas) for g in loaded.groups]) == (
        "train-edge", [("main", 3)])


def test_two_roles_that_would_share_a_task_group_are_refused() -> None:
    with pytest.raises(MemberRefusedError) as caught:
        openpai_job("edge", request(RoleRequest("Main", 1, ("true",)),
                                    RoleRequest("main", 1, ("true",))))
    assert str(caught.value) == ("cluster 'edge': taskRoles.main: is the Shoal task group "
                                 "'main', as taskRoles.Main is")
    with pytest.raises(MemberRefusedError, match="taskRoles: the copy has no task role"):
        openpai_job("edge", request())
