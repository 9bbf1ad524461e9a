"""Hostile edits of the imported formats' examples: the importers never raise, and every
problem is a `SpecError` whose issues name a path (a property over random mutations)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from shoal.spec import SpecError, load_text

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "imports"
DOCUMENTS = [list(yaml.safe_load_all((EXAMPLES / name).read_text()))
             for name in ("volcano-job.yaml", "kueue-job.yaml", "volcano-podgroup.yaml")]
HOSTILE = st.one_of(
    st.integers(), st.none(), st.booleans(), st.text(max_size=12),
    st.sampled_from(["", "\0", "*", "RestartJob", "PodFailed", "volcano", "Indexed",
                     "batch/v1", "v1", "Pod", "x" * 300, "-1", "1e999"]),
    st.lists(st.one_of(st.integers(), st.text(max_size=4)), max_size=3),
    st.dictionaries(st.text(max_size=6), st.one_of(st.integers(), st.text(max_size=4)),
                    max_size=3))


def _paths(value: Any, here: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [here]
    if isinstance(value, dict):
        for key, item in value.items():
            out += _paths(item, (*here, key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            out += _paths(item, (*here, i))
    return out


@st.composite
def mutated(draw: st.DrawFn) -> str:
    documents = copy.deepcopy(draw(st.sampled_from(DOCUMENTS)))
    for _ in range(draw(st.integers(1, 3))):
        path = draw(st.sampled_from(_paths(documents)))
        if len(path) < 2:
            continue
        parent: Any = documents
        for part in path[:-1]:
            parent = parent[part]
        if draw(st.booleans()):
            parent[path[-1]] = draw(HOSTILE)
        else:
            del parent[path[-1]]
    return yaml.safe_dump_all(documents)


@settings(max_examples=300, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(text=mutated())
def test_mutated_imports_load_or_name_a_path(text: str) -> None:
    try:
        load_text(text, "f.yaml", launchable=True)
    except SpecError as exc:
        assert exc.issues and all(i.path or i.kind is None for i in exc.issues), exc
