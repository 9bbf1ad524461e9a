"""Ray job submissions (the body of Ray's `POST /api/jobs/`, as JSON or YAML) → native Jobs,
and the fields refused with their paths and messages."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from shoal.spec import SpecError, load_json, load_text
from shoal.spec.imports import ImportFormat

EXAMPLE = Path(__file__).parents[3] / "examples" / "imports" / "ray-job.json"


def test_the_example_becomes_one_driver_task() -> None:
    bundle = load_json(EXAMPLE.read_text(), "ray-job.json")
    (job,) = bundle.jobs
    (group,) = job.groups
    assert job.name == "tune-resnet"
    assert (group.name, group.replicas) == ("driver", 1)
    assert (group.resources.cpu, group.resources.gpu, group.resources.memory) \
        == (4000, 1, 8192)
    assert group.command == ("/bin/sh", "-c", "python tune_hyperparameters.py --trials 20")
    assert group.env == {"TUNE_MAX_PENDING_TRIALS_PG": "4"}
    assert group.working_dir == "/srv/experiments/resnet"
    assert job.annotations == {"ray.io/owner": "vision-team"}
    assert bundle.originals["tune-resnet"].format is ImportFormat.RAY_JOB


def test_yaml_and_the_smallest_body_work_too() -> None:
    text = "entrypoint: python -c 'print(1)'\njob_id: legacy_id\n"
    (job,) = load_text(text).jobs
    assert job.name == "legacy_id"
    assert job.groups[0].resources.cpu == 1000  # Ray reserves nothing; Shoal 1 CPU


def test_custom_resources_accelerators_labels_and_images() -> None:
    body = {"entrypoint": "python serve.py", "submission_id": "s1",
            "entrypoint_num_cpus": 0.5,
            "entrypoint_resources": {"accelerator_type:A100": 0.001, "tpu": 2},
            "entrypoint_label_selector": {"zone": "eu"},
            "runtime_env": {"image_uri": "rayproject/ray:2.9.0"}}
    (job,) = load_json(json.dumps(body)).jobs
    (group,) = job.groups
    assert group.resources.cpu == 500
    assert dict(group.resources.extras) == {"tpu": 2}
    assert group.node_selector == {"zone": "eu", "gpu-type": "A100"}
    assert group.image == "rayproject/ray:2.9.0"


def ray(**fields: Any) -> str:
    return json.dumps({"entrypoint": "python x.py", "submission_id": "r", **fields})


REFUSED = [
    (ray(runtime_env={"pip": ["torch"]}), "runtime_env.pip", "installs no packages"),
    (ray(runtime_env={"conda": "env.yaml"}), "runtime_env.conda", "no conda"),
    (ray(runtime_env={"py_modules": ["m"]}), "runtime_env.py_modules", "uploads no modules"),
    (ray(runtime_env={"working_dir": "s3://bucket/code.zip"}), "runtime_env.working_dir",
     "uploads and fetches nothing"),
    (ray(runtime_env={"plugin_x": 1}), "runtime_env.plugin_x", "is not supported"),
    (ray(entrypoint_num_gpus=0.5), "entrypoint_num_gpus", "whole GPUs"),
    (ray(entrypoint_resources={"tpu": 0.5}), "entrypoint_resources.tpu", "whole units"),
    (ray(retry_policy={"max_retries": 3}), "retry_policy", "unknown field"),
    (ray(metadata={"n": 1}), "metadata.n", "must be a string"),
    (ray(submission_id="has space"), "submission_id", "letters, digits"),
    (json.dumps({"entrypoint": "python x.py"}), "submission_id", "a Shoal job needs a name"),
    (ray(entrypoint_num_cpus=-1), "entrypoint_num_cpus", "must be at least 0"),
]


@pytest.mark.parametrize(("body", "path", "message"), REFUSED, ids=[r[1] for r in REFUSED])
def test_a_field_shoal_cannot_honour_is_refused_under_its_path(body: str, path: str,
                                                                message: str) -> None:
    with pytest.raises(SpecError) as caught:
        load_json(body)
    found = [(i.path, i.message) for i in caught.value.issues]
    assert any(p == path and message in m for p, m in found), found
