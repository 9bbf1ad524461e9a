"""Hostile imports: the examples of every imported format with values replaced by values of
any type (or keys dropped), and batch scripts of arbitrary header lines, are either loaded
or refused with issues that each name a path — an importer never raises anything else."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from shoal.spec import SpecError, load_text

IMPORTS = Path(__file__).parents[3] / "examples" / "imports"
EXAMPLES = [yaml.safe_load((IMPORTS / "openpai-v2.yaml").read_text()),
            json.loads((IMPORTS / "ray-job.json").read_text()),
            yaml.safe_load((IMPORTS / "array-job.yaml").read_text())]

scalars = st.one_of(st.none(), st.booleans(), st.integers(-2**70, 2**70),
                    st.floats(allow_nan=False), st.text(max_size=20))
values = st.recursive(scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=8), inner, max_size=3)),
    max_leaves=8)


def paths(data: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix] if prefix else []
    if isinstance(data, dict):
        for key, value in data.items():
            out += paths(value, (*prefix, key))
    elif isinstance(data, list):
        for i, value in enumerate(data):
            out += paths(value, (*prefix, i))
    return out


def loaded_or_refused(text: str) -> None:
    try:
        load_text(text, "fuzz.yaml")
    except SpecError as exc:
        assert exc.issues and all(i.message for i in exc.issues)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(range(len(EXAMPLES))), st.data(), values, st.booleans())
def test_a_mutated_import_is_loaded_or_refused(which: int, data: st.DataObject, value: Any,
                                               drop: bool) -> None:
    document = copy.deepcopy(EXAMPLES[which])
    path = data.draw(st.sampled_from(paths(document)))
    parent = document
    for step in path[:-1]:
        parent = parent[step]
    if drop and isinstance(parent, dict):
        del parent[path[-1]]
    else:
        parent[path[-1]] = value
    loaded_or_refused(yaml.safe_dump(document))


directive = st.one_of(
    st.sampled_from(["-N", "-n", "-c", "-t", "-p", "-J", "-o", "-e", "--array", "--gres",
                     "--mem", "--gpus", "--dependency", "-H", "--qos", "--comment", "-D",
                     "--ntasks-per-node", "--mem-per-cpu", "--gpus-per-task", "--bogus"]),
    st.text(max_size=6))
argument = st.one_of(st.text(max_size=12), st.from_regex(r"[0-9a-z:%,\-]{0,10}",
                                                         fullmatch=True))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(directive, st.booleans(), argument), max_size=6),
       st.sampled_from(["#!/bin/bash", "#!/usr/bin/env python3", "#!", "#!/bin/sh -e"]))
def test_an_arbitrary_batch_header_is_loaded_or_refused(
        options: list[tuple[str, bool, str]], shebang: str) -> None:
    lines = [f"#SBATCH {o}{'=' if equals else ' '}{a}".replace("\n", " ")
             for o, equals, a in options]
    loaded_or_refused("\n".join([shebang, *lines, "echo done", ""]))
