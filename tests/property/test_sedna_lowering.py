"""Property: lowering any valid generated FederatedLearningJob or learning job (Sedna's
seed 004 kinds) gives jobs that pass native validation, with every worker's pin kept."""

from __future__ import annotations

from typing import Any

import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from shoal.api.objects import HOSTNAME_LABEL, NODE_ROLE_LABEL
from shoal.spec import load_text

NODE_NAMES = st.from_regex(r"\A[a-z][a-z0-9-]{0,10}[a-z0-9]\Z", fullmatch=True)
PIN = st.one_of(st.none(), NODE_NAMES.map(lambda n: ("nodeName", n)),
                st.dictionaries(st.sampled_from(["zone", "rack", "gpu-type"]), NODE_NAMES,
                                min_size=1, max_size=2).map(lambda s: ("nodeSelector", s)))


def template(pin: Any, command: list[str]) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "c", "command": command,
                                            "resources": {"requests": {"cpu": "100m"}}}]}
    if pin is not None:
        spec[pin[0]] = pin[1]
    return {"spec": spec}


def expected_selector(pin: Any, role: str) -> dict[str, str]:
    if pin is None:
        return {NODE_ROLE_LABEL: role}
    return {HOSTNAME_LABEL: pin[1]} if pin[0] == "nodeName" else dict(pin[1])


SCHEDULING = st.sampled_from([{}, {"schedulerName": "volcano"},
                              {"schedulerName": "shoal", "schedulingPolicy": {"minAvailable": 1}},
                              {"schedulerName": "default"}])


@settings(max_examples=60, deadline=None)
@given(PIN, st.lists(PIN, min_size=1, max_size=8), SCHEDULING)
def test_federated_learning_lowers_to_a_valid_job_keeping_every_pin(
        agg_pin: Any, trainer_pins: list[Any], scheduling: dict[str, Any]) -> None:
    doc = {"apiVersion": "sedna.io/v1alpha1", "kind": "FederatedLearningJob",
           "metadata": {"name": "fl"},
           "spec": {**scheduling,
                    "aggregationWorker": {"model": {"name": "m"},
                                          "template": template(agg_pin, ["agg"])},
                    "trainingWorkers": [{"dataset": {"name": f"d{i}"},
                                         "template": template(pin, ["train"])}
                                        for i, pin in enumerate(trainer_pins)]}}
    (job,) = load_text(yaml.safe_dump(doc), "fl.yaml").jobs
    groups = {g.name: g for g in job.groups}
    assert dict(groups["aggregator"].node_selector) == expected_selector(agg_pin, "cloud")
    for i, pin in enumerate(trainer_pins):
        assert dict(groups[f"trainer-{i}"].node_selector) == expected_selector(pin, "edge")
        assert groups[f"trainer-{i}"].env["PARTICIPANTS_COUNT"] == str(len(trainer_pins))
    assert job.replicas == len(trainer_pins) + 1


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(["IncrementalLearningJob", "LifelongLearningJob"]), PIN, PIN, PIN,
       SCHEDULING)
def test_learning_phases_lower_to_three_valid_jobs_keeping_every_pin(
        kind: str, train: Any, evaluate: Any, deploy: Any, scheduling: dict[str, Any]) -> None:
    doc = {"apiVersion": "sedna.io/v1alpha1", "kind": kind, "metadata": {"name": "ll"},
           "spec": {**scheduling, "dataset": {"name": "d", "trainProb": 0.5},
                    "trainSpec": {"template": template(train, ["t"]),
                                  "trigger": {"checkPeriodSeconds": 30}},
                    "evalSpec": {"template": template(evaluate, ["e"])},
                    "deploySpec": {"template": template(deploy, ["d"])}}}
    jobs = load_text(yaml.safe_dump(doc), "ll.yaml").jobs
    assert [j.name for j in jobs] == ["ll-train", "ll-eval", "ll-deploy"]
    assert [j.depends_on for j in jobs] == [(), ("ll-train",), ("ll-eval",)]
    for job, pin, role in zip(jobs, (train, evaluate, deploy), ("cloud", "cloud", "edge"),
                              strict=True):
        assert dict(job.groups[0].node_selector) == expected_selector(pin, role)
    assert jobs[2].service is not None and jobs[0].service is None
