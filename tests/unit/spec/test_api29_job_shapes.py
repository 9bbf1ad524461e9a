"""A job converted once per shape (`shoal.spec.job_shapes`): a copy of a document under
another name loads exactly as it would have without the memory, errors included."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from shoal.spec import SpecBundle, SpecError, load_json, load_text
from shoal.spec import loader as loader_module
from shoal.spec.job_shapes import ConvertedJobs


@pytest.fixture(autouse=True)
def fresh_memory(monkeypatch: pytest.MonkeyPatch) -> Iterator[ConvertedJobs]:
    memory = ConvertedJobs()
    monkeypatch.setattr(loader_module, "CONVERTED", memory)
    yield memory


def _doc(name: Any, **spec: Any) -> dict[str, Any]:
    group = {"name": "main", "replicas": spec.pop("replicas", 1),
             "resources": spec.pop("resources", {"cpu": "1", "memory": "16Mi"}),
             "command": ["/bin/true"]}
    metadata: dict[str, Any] = {"name": name}
    if "user" in spec:
        metadata["user"] = spec.pop("user")
    return {"apiVersion": "shoal/v1", "kind": "Job", "metadata": metadata,
            "spec": {"taskGroups": [group], **spec}}


def _load(doc: dict[str, Any]) -> SpecBundle | str:
    try:
        return load_json(json.dumps(doc), "request", known_queues={"default", "q"},
                         launchable=True)
    except SpecError as exc:
        return str([(i.path, i.message) for i in exc.issues])


def _unremembered(doc: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> SpecBundle | str:
    with monkeypatch.context() as patch:
        patch.setattr(loader_module, "shape_of", lambda *_: None)
        return _load(doc)


_SPECS = st.fixed_dictionaries({}, optional={
    "replicas": st.sampled_from([1, 2, 0, -1, 10**6]),
    "resources": st.sampled_from([{"cpu": "1"}, {"cpu": 1}, {"cpu": 1.0}, {"cpu": True},
                                  {"cpu": "500m", "gpu": 1}, {"pods": 1}, {"cpu": "x"}]),
    "queue": st.sampled_from(["default", "q", "nowhere"]),
    "user": st.sampled_from(["alice", "bob", 7]),
    "timeLimit": st.sampled_from([60, 0, "1h"]),
    "hold": st.booleans()})
_NAMES = st.sampled_from(["a", "job-2", "b_3", "", "no/slash", "x" * 254, "x" * 253, 12,
                          "trailing\n"])


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(first=_NAMES, second=_NAMES, spec=_SPECS, other=_SPECS)
def test_a_copy_loads_as_it_would_without_the_memory(
        first: Any, second: Any, spec: dict[str, Any], other: dict[str, Any]) -> None:
    monkeypatch = pytest.MonkeyPatch()
    try:
        _load(_doc(first, **dict(other)))  # another shape remembered first, maybe
        _load(_doc(first, **dict(spec)))
        assert _load(_doc(second, **dict(spec))) == _unremembered(_doc(second, **dict(spec)),
                                                                  monkeypatch)
    finally:
        monkeypatch.undo()


def test_a_burst_converts_once_and_each_job_has_its_own_name(
        fresh_memory: ConvertedJobs, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    real = loader_module.convert.job

    def counted(log: Any, doc: Any, model: Any, position: int) -> Any:
        calls.append(model.metadata.name)
        return real(log, doc, model, position)

    monkeypatch.setattr(loader_module.convert, "job", counted)
    names = [f"job-{i}" for i in range(5)]
    bundles = [_load(_doc(n, user="alice")) for n in names]
    assert calls == ["job-0"]
    assert [b.jobs[0].name for b in bundles if isinstance(b, SpecBundle)] == names
    assert all(isinstance(b, SpecBundle) and b.jobs[0].user == "alice" for b in bundles)


def test_a_job_named_in_its_own_fields_is_never_remembered(
        fresh_memory: ConvertedJobs) -> None:
    # Its own virtual cluster is named after it: each copy's is its own.
    spec = {"virtualCluster": {"flexibleResourceMin": {"cpu": 1},
                               "flexibleResourceMax": {"cpu": 2}}}
    for name in ("vc-a", "vc-b"):
        bundle = _load(_doc(name, **spec))
        assert isinstance(bundle, SpecBundle), bundle
        vc = bundle.jobs[0].virtual_cluster
        assert vc is not None and name in vc.name
    assert not fresh_memory._jobs


def test_a_document_with_an_issue_is_never_remembered(fresh_memory: ConvertedJobs) -> None:
    assert isinstance(_load(_doc("bad", replicas=1, minAvailable=5)), str)
    assert not fresh_memory._jobs


def test_yaml_and_a_later_job_of_a_load_go_the_whole_way(
        fresh_memory: ConvertedJobs) -> None:
    text = "\n---\n".join(json.dumps(_doc(n)) for n in ("y-1", "y-2"))
    bundle = load_text(text, launchable=True)
    assert [j.name for j in bundle.jobs] == ["y-1", "y-2"]
    assert [j.submitted for j in bundle.jobs] == [0.0, 1.0]
    assert len(fresh_memory._jobs) == 1  # the first job's shape only
