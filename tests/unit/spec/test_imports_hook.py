"""The loader's hook for foreign documents (`shoal.spec.imports.registry.lower_load`) and
`original_path`, with a toy importer: what every real importer relies on."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from spec_helpers import JOB, NODE, docs
from toy_importer import ToyArray, toy_importer, toy_yaml

from shoal.spec import SpecError, load_text
from shoal.spec.errors import DocRef, IssueLog
from shoal.spec.imports import ImportFormat, Lowered, Original, original_path
from shoal.spec.imports.registry import lower_load


def _lowered(paths: dict[str, str]) -> Lowered:
    return Lowered(DocRef("f", 1), Original(ImportFormat.VOLCANO_JOB, {}), (), paths)


@pytest.mark.parametrize(("paths", "path", "expected"), [
    ({}, "spec.queue", "spec.queue"),
    ({"spec.taskGroups[0]": "spec.tasks[0]"}, "spec.taskGroups[0].replicas",
     "spec.tasks[0].replicas"),
    ({"spec.taskGroups[0]": "spec.tasks[0]"}, "spec.taskGroups[0]", "spec.tasks[0]"),
    # A prefix matches at a field or index boundary only.
    ({"spec.taskGroups[1]": "spec.tasks[1]"}, "spec.taskGroups[10].replicas",
     "spec.taskGroups[10].replicas"),
    ({"spec": "spec.template"}, "specx", "specx"),
    # The longest prefix wins.
    ({"spec": "spec.template.spec", "spec.taskGroups[0].resources":
      "spec.tasks[0].template.spec.containers[0].resources.requests"},
     "spec.taskGroups[0].resources.cpu",
     "spec.tasks[0].template.spec.containers[0].resources.requests.cpu"),
    ({"spec": "spec.template.spec", "spec.taskGroups[0].resources": "x"},
     "spec.queue", "spec.template.spec.queue"),
])
def test_original_path(paths: dict[str, str], path: str, expected: str) -> None:
    assert original_path(_lowered(paths), path) == expected


@given(st.text(alphabet="abc.[]0", max_size=20))
def test_an_unmapped_path_is_kept(path: str) -> None:
    assert original_path(_lowered({}), path) == path


def test_lower_load_replaces_claimed_documents_in_place() -> None:
    native = {"apiVersion": "shoal/v1", "kind": "Node"}
    toy = {"apiVersion": "toy/v1", "kind": "Array", "name": "a", "count": 2}
    items = list(lower_load(IssueLog(), [(DocRef("f", 1), native), (DocRef("f", 2), toy),
                                         (DocRef("f", 3), native)], (ToyArray(),)))
    assert [(i.doc.document, i.lowered is not None) for i in items] == [
        (1, False), (2, True), (2, True), (3, False)]
    assert [i.data["metadata"]["name"] for i in items[1:3]] == ["a-0", "a-1"]
    assert items[1].lowered is items[2].lowered
    assert items[1].lowered is not None and items[1].lowered.original.document is toy


def test_lower_load_without_importers_passes_everything() -> None:
    toy = {"apiVersion": "toy/v1", "kind": "Array", "name": "a", "count": 2}
    items = list(lower_load(IssueLog(), [(DocRef("f", 1), toy)], ()))
    assert [(i.data, i.lowered) for i in items] == [(toy, None)]


def test_an_importer_s_refusal_drops_the_document_and_is_reported() -> None:
    log = IssueLog()
    toy = {"apiVersion": "toy/v1", "kind": "Array", "name": "a", "count": 0}
    assert list(lower_load(log, [(DocRef("f", 1), toy)], (ToyArray(),))) == []
    assert [(i.path, i.message) for i in log.issues] == [
        ("count", "must be a positive integer, got 0")]


def test_the_loader_keeps_each_imported_job_s_original() -> None:
    with toy_importer():
        bundle = load_text(docs(NODE, toy_yaml("sweep", 2), JOB), "f.yaml")
    assert [j.name for j in bundle.jobs] == ["sweep-0", "sweep-1", "train-a"]
    assert set(bundle.originals) == {"sweep-0", "sweep-1"}
    assert bundle.originals["sweep-0"] is bundle.originals["sweep-1"]
    assert bundle.originals["sweep-0"].document["name"] == "sweep"
    assert bundle.jobs[0].labels == {"team": "vision"}
    assert bundle.jobs[1].annotations == {"toy/index": "1"}
    assert bundle.job_documents == {"sweep-0": ("f.yaml", 2), "sweep-1": ("f.yaml", 2),
                                    "train-a": ("f.yaml", 3)}


def test_issues_in_lowered_documents_are_reported_at_the_original_path() -> None:
    with toy_importer(), pytest.raises(SpecError) as info:
        load_text(toy_yaml("bad", 1) + "extra: {memory: lots}\n", "f.yaml")
    assert [(i.document, i.path) for i in info.value.issues] == [
        (1, "task.resources.memory")]
