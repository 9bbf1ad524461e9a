"""OpenPAI protocol-v2 jobs → native Jobs: representative files (as OpenPAI's portal and its
users write them) and the Job each becomes; refused fields with their paths and messages;
`super-2` still a multi-cluster job."""

from __future__ import annotations

import copy
import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml

from shoal.api import SchedulerName
from shoal.spec import SpecError, load_text
from shoal.spec.imports import ImportFormat
from shoal.spec.loader import MULTI_CLUSTER_HINT

EXAMPLE = Path(__file__).parents[3] / "examples" / "imports" / "openpai-v2.yaml"

PORTAL = textwrap.dedent("""\
    protocolVersion: '2'
    name: bert_finetune_0412
    type: job
    version: 1.0
    contributor: nlp-team
    jobRetryCount: 0
    prerequisites:
      - name: image
        type: dockerimage
        uri: 'openpai/standard:python_3.6-pytorch_1.2.0-gpu'
      - name: corpus
        type: data
        uri: ['/mnt/data/glue/mrpc', '/mnt/data/glue/sst2']
      - name: finetune
        type: script
        uri: 'https://github.com/example/bert/run_glue.py'
    parameters:
      batch: 32
      fp16: true
    taskRoles:
      taskrole:
        instances: 1
        completion:
          minFailedInstances: 1
        taskRetryCount: 0
        dockerImage: image
        data: corpus
        script: finetune
        resourcePerInstance:
          gpu: 4
          cpu: 16
          memoryMB: 65536
        commands:
          - wget <% $script.uri %>
          - python run_glue.py --data <% $data.uri[0] %> --batch <% $parameters.batch %>
              --fp16 <% $parameters.fp16 %>
    deployments:
      - name: prep
        taskRoles:
          taskrole:
            preCommands: [pip install transformers]
            postCommands: [echo done]
    defaults:
      virtualCluster: nlp
      deployment: prep
    extras:
      submitFrom: submit-job-v2
      hivedScheduler:
        jobPriorityClass: test
        taskRoles:
          taskrole: {skuType: V100}
    """)


def load(data: Any, **known: Any) -> Any:
    text = data if isinstance(data, str) else yaml.safe_dump(data, sort_keys=False)
    return load_text(text, "job.yaml", known_queues=("nlp",), **known)


def test_the_example_becomes_a_gang_of_two_roles() -> None:
    bundle = load(EXAMPLE.read_text())
    (job,) = bundle.jobs
    assert job.name == "mnist-dist" and job.queue == "default"
    assert job.scheduler_name is SchedulerName.SHOAL
    assert job.job_retry_count == 1
    assert job.priority_class == "production"
    ps, worker = job.groups
    assert (ps.name, ps.replicas, ps.resources.cpu, ps.resources.memory, ps.resources.gpu) \
        == ("ps", 1, 2000, 4096, 0)
    assert (worker.replicas, worker.resources.gpu, worker.task_retry_count) == (2, 1, 2)
    assert worker.image == ps.image == "openpai/standard:python_3.6-pytorch_1.2.0-gpu"
    assert worker.command[-1] == "cd /workspace\npython train.py --epochs 10 --lr 0.01"
    assert worker.command[-3:-1] == ("bash", "-c")
    assert worker.env["PAI_TASK_ROLE_LIST"] == "ps,worker"
    assert worker.env["PAI_TASK_ROLE_TASK_COUNT_worker"] == "2"
    assert worker.env["PAI_CURRENT_TASK_ROLE_NAME"] == "worker"
    assert job.annotations["openpai.microsoft.com/description"].startswith("distributed")
    original = bundle.originals["mnist-dist"]
    assert original.format is ImportFormat.OPENPAI
    assert original.document["taskRoles"]["worker"]["instances"] == 2


def test_a_portal_job_renders_its_templates_and_deployment() -> None:
    (job,) = load(PORTAL).jobs
    assert job.name == "bert_finetune_0412" and job.queue == "nlp"
    assert job.scheduler_name is SchedulerName.DEFAULT  # one instance: nothing to gang
    assert job.priority_class == "normal"
    (group,) = job.groups
    assert group.name == "taskrole"
    assert group.node_selector == {"gpu-type": "V100"}
    assert group.command[-1] == (
        "pip install transformers\n"
        "wget https://github.com/example/bert/run_glue.py\n"
        "python run_glue.py --data /mnt/data/glue/mrpc --batch 32 --fp16 true\n"
        "echo done")
    assert job.annotations == {"openpai.microsoft.com/version": "1.0",
                               "openpai.microsoft.com/contributor": "nlp-team",
                               "openpai.microsoft.com/submitFrom": "submit-job-v2"}


def test_completion_maps_onto_groups_and_the_job() -> None:
    data = yaml.safe_load(PORTAL)
    role = data["taskRoles"]["taskrole"]
    role["instances"] = 4
    role["completion"] = {"minFailedInstances": 2, "minSucceededInstances": 3}
    (job,) = load(data).jobs
    assert job.groups[0].min_succeeded == 3
    assert job.min_failed == 2


def test_role_names_become_task_group_names() -> None:
    data = yaml.safe_load(PORTAL)
    data["taskRoles"] = {"Train_Worker": data["taskRoles"]["taskrole"]}
    data["extras"].pop("hivedScheduler")
    (job,) = load(data).jobs
    assert job.groups[0].name == "train-worker"
    assert job.groups[0].env["PAI_CURRENT_TASK_ROLE_NAME"] == "Train_Worker"


def test_a_role_without_an_image_runs_on_the_host() -> None:
    data = yaml.safe_load(PORTAL)
    del data["taskRoles"]["taskrole"]["dockerImage"]
    (job,) = load(data).jobs
    assert job.groups[0].image is None


def test_super_2_stays_a_multi_cluster_job() -> None:
    data = yaml.safe_load(PORTAL)
    data["protocolVersion"] = "super-2"
    with pytest.raises(SpecError) as caught:
        load(data)
    assert [i.message for i in caught.value.issues] == [MULTI_CLUSTER_HINT]


def change(path: str | list[str], value: Any) -> dict[str, Any]:
    """PORTAL with the value at a dotted path (or a list of keys) set (None: removed)."""
    data = copy.deepcopy(yaml.safe_load(PORTAL))
    *parents, last = path.split(".") if isinstance(path, str) else path
    node = data
    for part in parents:
        node = node[int(part)] if isinstance(node, list) else node[part]
    if value is None:
        del node[last]
    else:
        node[last] = value
    return data


ROLE = "taskRoles.taskrole"
REFUSED = [
    (change("secrets", {"token": "s3cret"}), "secrets", "Shoal keeps no secrets"),
    (change("prerequisites.0.auth", {"username": "u", "password": "p"}),
     "prerequisites[0].auth", "registry credentials"),
    (change(["extras", "com.microsoft.pai.runtimeplugin"], [{"plugin": "ssh"}]),
     "extras['com.microsoft.pai.runtimeplugin']", "runtime plugins"),
    (change("extras.storages", [{"name": "nfs"}]), "extras.storages", "storages"),
    (change("extras.hivedScheduler.jobPriorityClass", "urgent"),
     "extras.hivedScheduler.jobPriorityClass", "must be one of crit, prod, test, oppo"),
    (change(f"{ROLE}.resourcePerInstance.ports", {"http": 1}),
     f"{ROLE}.resourcePerInstance.ports", "each task gets one port"),
    (change(f"{ROLE}.extraContainerOptions", {"shmMB": 1024}),
     f"{ROLE}.extraContainerOptions", "container options"),
    (change(f"{ROLE}.completion", {"minFailedInstances": -1}),
     f"{ROLE}.completion.minFailedInstances", "(never fail) is not supported"),
    (change(f"{ROLE}.commands", ["echo <% $parameters.missing %>"]),
     f"{ROLE}.commands[0]", "names nothing"),
    (change(f"{ROLE}.commands", ["echo <% $secrets.token %>"]),
     f"{ROLE}.commands[0]", "secrets cannot be used in commands"),
    (change(f"{ROLE}.dockerImage", "nope"), f"{ROLE}.dockerImage",
     "must name a prerequisite of type dockerimage"),
    (change(f"{ROLE}.resourcePerInstance.gpu", None), f"{ROLE}.resourcePerInstance.gpu",
     "required field is missing"),
    (change(f"{ROLE}.instances", 0), f"{ROLE}.instances", "must be at least 1"),
    (change("extras.hivedScheduler.taskRoles.taskrole.affinityGroupName", "g1"),
     "extras.hivedScheduler.taskRoles.taskrole.affinityGroupName", "no affinity groups"),
    (change("extras.hivedScheduler.taskRoles.ghost", {"skuType": "K80"}),
     "extras.hivedScheduler.taskRoles.ghost", "names no task role"),
    (change("extras.hivedScheduler.taskRoles", ["taskrole"]),
     "extras.hivedScheduler.taskRoles", "must be a mapping of task roles"),
    (change("defaults.deployment", "other"), "defaults.deployment", "names no deployment"),
    (change("type", "service"), "type", "'job'"),
    (change("jobPriority", 3), "jobPriority", "unknown field"),
    (change("defaults.virtualCluster", "vision"), "defaults.virtualCluster",
     "unknown queue 'vision'"),
    (change("name", "bad name"), "name", "letters, digits, '_' and '-' only"),
]


@pytest.mark.parametrize(("data", "path", "message"), REFUSED,
                         ids=[r[1] for r in REFUSED])
def test_a_field_shoal_cannot_honour_is_refused_under_its_path(
        data: dict[str, Any], path: str, message: str) -> None:
    with pytest.raises(SpecError) as caught:
        load(data)
    found = [(i.path, i.message) for i in caught.value.issues]
    assert any(p == path and message.lower() in m.lower() for p, m in found), found


def test_a_threshold_per_role_is_refused_for_several_roles() -> None:
    data = yaml.safe_load(EXAMPLE.read_text())
    data["taskRoles"]["worker"]["completion"]["minFailedInstances"] = 2
    with pytest.raises(SpecError) as caught:
        load(data)
    assert [i.path for i in caught.value.issues] == [
        "taskRoles.worker.completion.minFailedInstances"]


def test_a_threshold_above_the_instances_is_refused_at_the_role() -> None:
    data = yaml.safe_load(PORTAL)
    data["taskRoles"]["taskrole"]["completion"] = {"minFailedInstances": 5}
    with pytest.raises(SpecError) as caught:
        load(data)
    assert [i.path for i in caught.value.issues] == [
        "taskRoles.taskrole.completion.minFailedInstances"]
