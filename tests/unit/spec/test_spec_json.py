"""`load_json`: a document sent as JSON is read by the json module and then checked and
converted exactly as the same document in YAML."""

from __future__ import annotations

import json

import pytest
import yaml as pyyaml
from spec_helpers import JOB, NODE

from shoal.spec import SpecError, load_json, load_text


def issues(text: str) -> list[tuple[str, str]]:
    with pytest.raises(SpecError) as caught:
        load_json(text, "request")
    return [(i.path, i.message) for i in caught.value.issues]


@pytest.mark.parametrize("document", [JOB, NODE])
def test_json_loads_as_the_same_yaml_does(document: str) -> None:
    assert load_json(json.dumps(pyyaml.safe_load(document))) == load_text(document)


def test_json_issues_are_the_yaml_issues() -> None:
    data = pyyaml.safe_load(JOB)
    data["spec"]["taskGroups"][0]["replicas"] = 0
    data["spec"]["colour"] = "blue"
    with pytest.raises(SpecError) as from_yaml:
        load_text(pyyaml.safe_dump(data), "request")
    assert issues(json.dumps(data)) == [(i.path, i.message) for i in from_yaml.value.issues]


def test_json_numbers_are_numbers() -> None:
    # PyYAML (YAML 1.1) reads 3.2e10 as the string "3.2e10", not a quantity of memory.
    text = JOB.replace("memory: 32Gi", "memory: 3.2e10")
    with pytest.raises(SpecError):
        load_text(text)
    job = load_json(json.dumps(pyyaml.safe_load(JOB)).replace('"32Gi"', "3.2e10")).jobs[0]
    assert job.groups[0].resources.memory == -(-32_000_000_000 // 2**20)


def test_malformed_json_names_line_and_column() -> None:
    [(path, message)] = issues('{"apiVersion": "shoal/v1",\n  "kind": }')
    assert path == ""
    assert message.startswith("invalid JSON at line 2, column 11")


def test_a_repeated_key_is_refused() -> None:
    [(_, message)] = issues('{"apiVersion": "shoal/v1", "kind": "Job", "kind": "Node"}')
    assert message == "invalid JSON: found duplicate key 'kind'"


@pytest.mark.parametrize("text", ["null", "[]", '"Job"'])
def test_a_document_that_is_no_object_is_refused(text: str) -> None:
    [(_, message)] = issues(text)
    assert "no document" in message or "must be a mapping" in message
