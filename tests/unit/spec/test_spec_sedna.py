"""Seed 004's Sedna kinds as Sedna's users write them (`tests/unit/spec/data/sedna/`, from
Sedna's own examples) → the native Job documents they are lowered to; what they become once
loaded; and the fields Shoal refuses, with their paths and why."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from spec_helpers import SOURCE, expect, issues

from shoal.api import SchedulerName
from shoal.api.services import Service
from shoal.spec import load_text
from shoal.spec.errors import DocRef, IssueLog
from shoal.spec.imports import Foreign, ImportFormat
from shoal.spec.imports.sedna import SednaImporter
from shoal.spec.imports.sedna_kinds import (
    AGGREGATOR_EXPORTS,
    CLOUD_EXPORTS,
    EDGE_EXPORTS,
    TRAINER_EXPORTS,
)

DATA = Path(__file__).parent / "data" / "sedna"
IMAGE = "kubeedge/sedna-example-incremental-learning-helmet-detection:v0.4.0"
HELMET = {"JOB_NAME": "helmet-detection-demo", "NAMESPACE": "default",
          "DATASET_NAME": "incremental-dataset", "TRAIN_PROB": "0.8", "OUTPUT_DIR": "/output",
          "MODEL_NAME": "initial-model"}


def lowered(name: str) -> list[dict[str, Any]]:
    log = IssueLog()
    data = yaml.safe_load((DATA / name).read_text())
    out = SednaImporter().lower(log, [Foreign(DocRef(name, 1), data)])
    assert not log.issues, log.issues
    assert all(x.original.format is ImportFormat.SEDNA and x.original.document == data
               for x in out)
    return [doc for x in out for doc in x.documents]


def wrapped(exports: str, label: str, *command: str) -> list[str]:
    return ["sh", "-c", f'{exports}; exec "$@"', label, *command]


def job(name: str, groups: list[dict[str, Any]], kind: str, **spec: Any) -> dict[str, Any]:
    annotations = {"sedna.io/kind": kind, **spec.pop("annotations", {})}
    metadata: dict[str, Any] = {"name": name, "annotations": annotations}
    if "labels" in spec:
        metadata["labels"] = spec.pop("labels")
    return {"apiVersion": "shoal/v1", "kind": "Job", "metadata": metadata,
            "spec": {**spec, "taskGroups": groups}}


FL_ENV = {"JOB_NAME": "surface-defect-detection", "NAMESPACE": "default",
          "PARTICIPANTS_COUNT": "2", "MODEL_NAME": "surface-defect-detection-model"}
FL_IMAGE = "kubeedge/sedna-example-federated-learning-surface-defect-detection-{}:v0.3.0"

TABLE = [
    ("federated_learning.yaml", [job(
        "surface-defect-detection", [
            {"name": "aggregator", "replicas": 1, "image": FL_IMAGE.format("aggregation"),
             "command": wrapped(AGGREGATOR_EXPORTS, "sedna-aggregator", "python",
                                "aggregate.py"),
             "env": {**FL_ENV, "exit_round": "3"}, "resources": {"memory": "2Gi"},
             "nodeSelector": {"kubernetes.io/hostname": "fraporion00001"}, "taskRetryCount": 3},
            {"name": "trainer-0", "replicas": 1, "image": FL_IMAGE.format("train"),
             "command": wrapped(TRAINER_EXPORTS, "sedna-trainer", "python", "train.py"),
             "env": {**FL_ENV, "DATASET_NAME": "edge1-surface-defect-detection-dataset",
                     "batch_size": "32"},
             "resources": {"memory": "2Gi"},
             "nodeSelector": {"kubernetes.io/hostname": "frapedge00001"},
             "taskRetryCount": 3},
            {"name": "trainer-1", "replicas": 1, "image": FL_IMAGE.format("train"),
             "command": wrapped(TRAINER_EXPORTS, "sedna-trainer", "python", "train.py"),
             "env": {**FL_ENV, "DATASET_NAME": "edge2-surface-defect-detection-dataset"},
             "resources": {"memory": "2Gi", "cpu": "500m"}, "nodeSelector": {"zone": "east"},
             "taskRetryCount": 3},
        ], "FederatedLearningJob", labels={"team": "vision"}, schedulerName="volcano",
        schedulingPolicy={"minAvailable": 2, "queue": "edge-ai", "priorityClass": "high",
                          "minResources": {"cpu": "2", "memory": "6Gi"}})]),
    ("incremental_learning.yaml", [
        job("helmet-detection-demo-train", [
            {"name": "train", "replicas": 1, "image": IMAGE, "command": ["train.py"],
             "env": {**HELMET, "TRIGGER_CHECK_PERIOD_SECONDS": "60",
                     "TRIGGER_TIMER": "02:00-20:00",
                     "TRIGGER_CONDITION": "num_of_samples > 500", "batch_size": "32"},
             "resources": {}, "nodeSelector": {"kubernetes.io/hostname": "edge-1"}}],
            "IncrementalLearningJob"),
        job("helmet-detection-demo-eval", [
            {"name": "eval", "replicas": 1, "image": IMAGE, "command": ["eval.py"],
             "env": {**HELMET, "DEPLOY_CONDITION": "precision_delta > 0.1"},
             "resources": {}, "nodeSelector": {"kubernetes.io/hostname": "edge-1"}}],
            "IncrementalLearningJob", dependsOn=["helmet-detection-demo-train"]),
        job("helmet-detection-demo-deploy", [
            {"name": "deploy", "replicas": 1, "image": IMAGE, "command": ["inference.py"],
             "env": {**HELMET, "DEPLOY_MODEL_NAME": "deploy-model", "HEM_NAME": "IBT",
                     "HEM_PARAMETERS": '{"threshold_img": "0.9"}'},
             "resources": {"memory": "2Gi"},
             "nodeSelector": {"kubernetes.io/hostname": "edge-1"}}],
            "IncrementalLearningJob", dependsOn=["helmet-detection-demo-eval"], service=True),
    ]),
    ("joint_inference.yaml", [job(
        "helmet-detection-inference-example", [
            {"name": "cloud", "replicas": 1,
             "image": "kubeedge/sedna-example-joint-inference-helmet-detection-big:v0.3.0",
             "command": wrapped(CLOUD_EXPORTS, "sedna-cloud", "python", "big.py"),
             "env": {"JOB_NAME": "helmet-detection-inference-example", "NAMESPACE": "default",
                     "MODEL_NAME": "helmet-detection-inference-big-model"},
             "resources": {"memory": "2Gi"}, "nodeSelector": {"node-role": "cloud"}},
            {"name": "edge", "replicas": 1,
             "image": "kubeedge/sedna-example-joint-inference-helmet-detection-little:v0.3.0",
             "command": wrapped(EDGE_EXPORTS, "sedna-edge", "python", "little.py"),
             "env": {"JOB_NAME": "helmet-detection-inference-example", "NAMESPACE": "default",
                     "HEM_NAME": "IBT",
                     "HEM_PARAMETERS": '{"threshold_box": "0.9", "threshold_img": "0.9"}',
                     "MODEL_NAME": "helmet-detection-inference-little-model",
                     "input_shape": "416,736"},
             "resources": {"memory": "64M", "cpu": "100m"},
             "nodeSelector": {"kubernetes.io/hostname": "edge-1"}},
        ], "JointInferenceService", annotations={"sedna.io/namespace": "default"},
        service=True)]),
]


@pytest.mark.parametrize(("name", "expected"), TABLE, ids=[row[0] for row in TABLE])
def test_a_real_sedna_file_lowers_to_these_native_jobs(name: str,
                                                       expected: list[dict[str, Any]]) -> None:
    assert lowered(name) == expected


def test_lifelong_learning_is_three_phases_and_an_unpinned_one_goes_to_its_role() -> None:
    train, evaluate, deploy = lowered("lifelong_learning.yaml")
    assert [d["metadata"]["name"] for d in (train, evaluate, deploy)] == [
        "atcii-classifier-demo-train", "atcii-classifier-demo-eval",
        "atcii-classifier-demo-deploy"]
    assert evaluate["spec"]["taskGroups"][0]["nodeSelector"] == {"node-role": "cloud"}
    assert deploy["spec"]["taskGroups"][0]["nodeSelector"] == {
        "kubernetes.io/hostname": "edge-node"}
    assert train["spec"]["taskGroups"][0]["env"]["TRIGGER_CHECK_PERIOD_SECONDS"] == "60"
    assert (evaluate["spec"]["dependsOn"], deploy["spec"]["dependsOn"]) == (
        ["atcii-classifier-demo-train"], ["atcii-classifier-demo-eval"])


def load(name: str) -> Any:
    text = (DATA / name).read_text()
    extra = ("apiVersion: shoal/v1\nkind: VirtualCluster\nmetadata: {name: edge-ai}\n---\n"
             "apiVersion: shoal/v1\nkind: PriorityClass\nmetadata: {name: high}\nvalue: 9\n"
             "---\n")
    return load_text(extra + text, SOURCE)


def test_loaded_the_jobs_keep_their_kind_pins_and_gang() -> None:
    bundle = load("federated_learning.yaml")
    (fl,) = bundle.jobs
    assert (fl.scheduler_name, fl.min_available, fl.queue, fl.priority_class) == (
        SchedulerName.SHOAL, 2, "edge-ai", "high")
    assert bundle.originals[fl.name].format is ImportFormat.SEDNA
    service = load("joint_inference.yaml").jobs[0]
    assert service.service == Service() and not service.evictable
    assert service.priority_class == "production"
    train, evaluate, deploy = load("incremental_learning.yaml").jobs
    assert (train.depends_on, evaluate.depends_on, deploy.depends_on) == (
        (), ("helmet-detection-demo-train",), ("helmet-detection-demo-eval",))
    assert deploy.service is not None and train.service is None
    assert train.scheduler_name is SchedulerName.DEFAULT  # no schedulerName: task by task


def test_shoal_v1_spells_the_same_kinds() -> None:
    text = (DATA / "lifelong_learning.yaml").read_text()
    native = text.replace("sedna.io/v1alpha1", "shoal/v1").replace(
        "LifelongLearningJob", "LifeLongLearningJob")
    assert [j.name for j in load_text(native, SOURCE).jobs] == [
        j.name for j in load_text(text, SOURCE).jobs]


FL = (DATA / "federated_learning.yaml").read_text()
PHASES = (DATA / "incremental_learning.yaml").read_text()
JIS = (DATA / "joint_inference.yaml").read_text()
AGG = "spec.aggregationWorker.template.spec"

REFUSED = [
    (FL.replace("  schedulerName: volcano", "  schedulerName: kube-batch"), "spec.schedulerName",
     ("must be volcano or shoal",)),
    (FL.replace("  transmitter:", "  x:").replace(
        "spec:\n  schedulerName", "spec:\n  transmitter: {s3: {aggDataPath: s3://x}}\n"
                                  "  schedulerName"), "spec.transmitter.s3",
     ("Kubernetes secret",)),
    (FL.replace("        nodeName: fraporion00001\n",
                "        nodeName: fraporion00001\n        volumes: [{name: v}]\n"),
     f"{AGG}.volumes", ("is not supported",)),
    (FL.replace("  aggregationWorker:\n", "  aggregationWorker:\n    workerSpec: {}\n"),
     "spec.aggregationWorker.workerSpec", ("pre-v0.3 form",)),
    (FL.replace("      name: \"surface-defect-detection-model\"\n",
                "      name: \"surface-defect-detection-model\"\n    nodeName: x\n"),
     "spec.aggregationWorker.nodeName", ("unknown field",)),
    (FL.replace("spec:\n  schedulerName", "status: {phase: Running}\nspec:\n  schedulerName"),
     "status", ("written by Sedna",)),
    (FL.replace("    queue: edge-ai", "    queue: edge-ai\n    gang: true"),
     "spec.schedulingPolicy.gang", ("unknown field",)),
    (FL.replace("  schedulerName: volcano\n", ""), "spec.schedulingPolicy.minAvailable",
     ("only allowed with schedulerName shoal or volcano",)),
    (FL.replace("                memory: 2Gi", "                memory: lots", 1),
     f"{AGG}.containers[0].resources.memory", ()),
    (FL.replace("        nodeName: fraporion00001\n",
                "        nodeName: fraporion00001\n        restartPolicy: Always\n"),
     f"{AGG}.restartPolicy", ("a training worker ends",)),
    (PHASES.replace("        operator: \">\"\n        threshold: 500",
                    "        operator: \"~\"\n        threshold: 500"),
     "spec.trainSpec.trigger.condition.operator", ("must be one of",)),
    (PHASES.replace("  outputDir: \"/output\"", "  outputDir: /output\n  credentialName: s"),
     "spec.credentialName", ("Kubernetes secret",)),
    (PHASES.replace("  outputDir: \"/output\"", "  outputDir: /output\n  nodeName: cloud0"),
     "spec.nodeName", ("pre-v0.3 form",)),
    (PHASES.replace("    trainProb: 0.8", "    trainProb: 8"), "spec.dataset.trainProb",
     ("in [0, 1]",)),
    (PHASES.replace("name: \"incremental-dataset\"", "name: \"i.d\"").replace(
        "name: helmet-detection-demo", "name: helmet.demo"), "metadata.name",
     ("letters, digits",)),
    (JIS.replace("  cloudWorker:", "  cloudWorkers:"), "spec.cloudWorkers", ("unknown field",)),
    (JIS.replace("        - key: \"threshold_box\"\n", "        - key: 3\n"),
     "spec.edgeWorker.hardExampleMining.parameters[1]", ("{key, value}",)),
]


@pytest.mark.parametrize(("text", "path", "fragments"), REFUSED,
                         ids=[row[1] for row in REFUSED])
def test_a_field_shoal_cannot_honour_is_refused_at_its_path(text: str, path: str,
                                                            fragments: tuple[str, ...]) -> None:
    found = issues(text)
    line = next((str(i) for i in found if i.path == path), None)
    assert line is not None, "\n".join(map(str, found))
    expect(line, f"{SOURCE}: document 1", f"{path}: ", *fragments)
