"""Fuzzing job submissions: valid job documents, mutated (values replaced by hostile ones —
huge, non-finite, negative, NUL, long, deeply nested, of the wrong type — keys dropped,
added or renamed, the text cut short), sent as JSON or YAML to the in-process app on each
store. Whatever arrives, no answer is a 5xx, and every 4xx names a path in each of its
errors. Bounded for CI: `EXAMPLES` documents per store."""

from __future__ import annotations

import copy
import json
from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from server_helpers import Api

EXAMPLES = 250


def group(name: str, **extra: Any) -> dict[str, Any]:
    return {"name": name, "replicas": 2, "command": ["python", "-c", "pass"],
            "resources": {"cpu": "1", "memory": "1Gi", "gpu": 1}, **extra}


def job(name: str, spec: dict[str, Any], **metadata: Any) -> dict[str, Any]:
    return {"apiVersion": "shoal/v1", "kind": "Job", "metadata": {"name": name, **metadata},
            "spec": spec}


VALID = [
    job("plain", {"taskGroups": [group("worker")]}),
    job("gang", {"schedulerName": "shoal", "minAvailable": 3, "queue": "team-a",
                 "jobRetryCount": 1, "completion": {"minSucceeded": 2, "minFailed": 1},
                 "taskGroups": [group("ps", replicas=1, env={"A": "1"}),
                                group("worker", nodeSelector={"gpu-type": "a100"},
                                      taskRetryCount=2, workingDir="/tmp",
                                      completion={"minSucceeded": 1})]},
        annotations={"note": "x"}, creationTimestamp=1.5),
    job("elastic", {"schedulerName": "shoal",
                    "elastic": {"minReplicas": 1, "maxReplicas": 4, "step": {"factor": 1},
                                "scaleCooldown": "10m0s", "protectFor": 30},
                    "taskGroups": [group("worker", replicas=4)]}),
    job("owned", {"minResources": {"cpu": 1},
                  "virtualCluster": {"flexibleResourceMin": {"gpu": 1},
                                     "flexibleResourceMax": {"gpu": 2},
                                     "fixedSizeNodes": [{"nodes": [{"resources": {"gpu": 1},
                                                                    "labels": {"a": "b"}}]}],
                                     "flexibleIdleTimeout": 5},
                  "taskGroups": [group("worker", replicas=1)]}),
]


def nested(depth: int) -> Any:
    value: Any = 1
    for i in range(depth):
        value = [value] if i % 2 else {"k": value}
    return value


HOSTILE = st.one_of(
    st.integers(),
    st.sampled_from([0, -1, 2**31, 2**63 - 1, 2**63, 2**70, -(2**63) - 1, 10**40]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=20),
    st.sampled_from(["", "\0", "a\0b", "A=B", "x" * 5000, "1e999", ".inf", "Infinity", "NaN",
                     "9" * 300, "500m", "4Gi", "-1", "root", "job:plain", "\U0001f600"]),
    st.none(), st.booleans(),
    st.lists(st.one_of(st.integers(), st.text(max_size=5)), max_size=4),
    st.dictionaries(st.text(max_size=8), st.one_of(st.integers(), st.text(max_size=5)),
                    max_size=3),
    st.integers(1, 100).map(nested),
)


def paths(value: Any, here: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path into `value`, the root included."""
    out = [here]
    if isinstance(value, dict):
        for key, item in value.items():
            out.extend(paths(item, (*here, key)))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            out.extend(paths(item, (*here, i)))
    return out


def at(document: Any, path: tuple[Any, ...]) -> Any:
    for part in path:
        document = document[part]
    return document


@st.composite
def mutated(draw: st.DrawFn) -> tuple[str, str]:
    document = copy.deepcopy(draw(st.sampled_from(VALID)))
    for _ in range(draw(st.integers(1, 3))):
        path = draw(st.sampled_from(paths(document)))
        if not path:
            continue
        parent, last = at(document, path[:-1]), path[-1]
        action = draw(st.sampled_from(["replace", "replace", "drop", "add", "rename"]))
        if action == "replace":
            parent[last] = draw(HOSTILE)
        elif action == "drop":
            del parent[last]
        elif action == "add" and isinstance(parent, dict):
            parent[draw(st.text(max_size=12))] = draw(HOSTILE)
        elif action == "rename" and isinstance(parent, dict):
            parent[draw(st.text(max_size=12))] = parent.pop(last)
    as_json = draw(st.booleans())
    text = json.dumps(document) if as_json else yaml.safe_dump(document)
    if draw(st.integers(0, 9)) == 0:
        text = text[:draw(st.integers(0, len(text)))]
    return text, "application/json" if as_json else "application/yaml"


@settings(max_examples=EXAMPLES, deadline=None, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                 HealthCheck.data_too_large])
@given(case=mutated())
def test_mutated_job_documents_never_get_a_5xx_and_4xx_name_a_path(api: Api,
                                                                   case: tuple[str, str]) -> None:
    text, content_type = case
    answer = api.submit(text, content_type=content_type)
    assert answer.status_code < 500, (answer.status_code, answer.text[:2000], text[:2000])
    if answer.status_code >= 400:
        assert len(answer.content) < 64 * 1024
        errors = answer.json()["errors"]
        assert errors and all(e["path"] for e in errors), (errors, text[:2000])


def test_the_valid_documents_are_accepted(api: Api) -> None:
    # The mutations start from documents the server takes: what fails, fails by mutation.
    for document in VALID:
        answer = api.submit(json.dumps(document), content_type="application/json")
        assert answer.status_code == 201, answer.text
