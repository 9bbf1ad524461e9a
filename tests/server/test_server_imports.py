"""`POST /api/v1/jobs` with a job file another system reads: a Slurm batch script sent as
text/x-shellscript (named after the file its Content-Disposition gives, unless it says -J),
an OpenPAI protocol-v2 job and a Ray job submission; what they cannot honour is a 422 under
the original's paths, and nothing is stored."""

from __future__ import annotations

import json
from typing import Any

import pytest
from server_helpers import Api

from shoal.client.client import SCRIPT

SCRIPT_TEXT = """\
#!/bin/bash
#SBATCH -n 2 --gpus-per-task=1 -c 4 --mem=8G -t 45
srun python train.py
"""


def post_script(api: Api, text: str, disposition: str | None) -> Any:
    headers = {"Content-Type": SCRIPT}
    if disposition is not None:
        headers["Content-Disposition"] = disposition
    return api.request("POST", "/api/v1/jobs", "alice", content=text, headers=headers)


@pytest.mark.parametrize(("disposition", "name"), [
    ('inline; filename="train.sbatch"', "train"),
    ("attachment; filename=../../etc/run-7.slurm", "run-7"),
])
def test_a_script_is_stored_as_the_job_its_header_asks_for(api: Api, disposition: str,
                                                           name: str) -> None:
    answer = post_script(api, SCRIPT_TEXT, disposition)
    assert answer.status_code == 201, answer.text
    assert answer.json()["metadata"]["name"] == name
    (job,) = api.repository.list_jobs()
    (group,) = job.groups
    assert (group.replicas, group.resources.gpu, group.resources.cpu) == (2, 1, 4000)
    assert group.command[-2] == SCRIPT_TEXT
    assert job.time_limit == 2700.0


def test_a_script_without_a_file_name_or_job_name_is_refused(api: Api) -> None:
    answer = post_script(api, SCRIPT_TEXT, None)
    assert answer.status_code == 422
    assert [e["path"] for e in answer.json()["errors"]] == ["#SBATCH --job-name"]
    assert api.repository.list_jobs() == []


def test_a_refused_option_is_a_422_under_its_path(api: Api) -> None:
    text = SCRIPT_TEXT.replace("-t 45", "-t 45 --mail-type=END")
    answer = post_script(api, text, 'inline; filename="a.sbatch"')
    assert answer.status_code == 422
    (error,) = answer.json()["errors"]
    assert error["path"] == "#SBATCH --mail-type" and "line 2" in error["message"]
    assert api.repository.list_jobs() == []


def test_a_script_sent_as_yaml_is_read_as_a_script_too(api: Api) -> None:
    answer = api.submit(SCRIPT_TEXT.replace("-t 45", "-t 45 -J as-yaml"))
    assert answer.status_code == 201, answer.text
    assert answer.json()["metadata"]["name"] == "as-yaml"


def test_openpai_and_ray_documents_are_accepted_as_json(api: Api) -> None:
    pai = {"protocolVersion": 2, "name": "pai-json", "type": "job",
           "taskRoles": {"worker": {"instances": 2, "commands": ["python w.py"],
                                    "resourcePerInstance": {"cpu": 2, "memoryMB": 1024,
                                                            "gpu": 1}}}}
    ray = {"entrypoint": "python driver.py", "submission_id": "ray-json",
           "entrypoint_num_gpus": 2, "entrypoint_num_cpus": 4}
    for body in (pai, ray):
        answer = api.submit(json.dumps(body), content_type="application/json")
        assert answer.status_code == 201, answer.text
    assert sorted(j.name for j in api.repository.list_jobs()) == ["pai-json", "ray-json"]


def test_an_unknown_content_type_names_the_script_type(api: Api) -> None:
    answer = api.submit(SCRIPT_TEXT, content_type="text/plain")
    assert answer.status_code == 415
    assert "text/x-shellscript" in answer.json()["errors"][0]["message"]
