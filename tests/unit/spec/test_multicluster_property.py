"""Specialisation as a property: for random parameters and random templates (placeholders as
whole nodes and inside text, at any depth), no placeholder survives in any member's copy,
each whole-node placeholder holds exactly that member's value, only the member's own token
survives, and the roles say what the copy's document says."""

from __future__ import annotations

import json
from typing import Any

import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from shoal.spec.multicluster_read import read_multicluster_text
from shoal.spec.specialise import specialise

ALIASES = ("a", "b-2", "https://c.example:8443")
SCALAR_PARAMS = ("p0", "p1", "p2")
LIST_PARAMS = ("l0", "l1")

scalars = st.one_of(st.integers(-1000, 1000), st.booleans(),
                    st.text("abcxyz _-./", min_size=1, max_size=8))
lists = st.lists(scalars, max_size=4)


@st.composite
def params(draw: st.DrawFn) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {
        name: {alias: draw(scalars) for alias in ALIASES} for name in SCALAR_PARAMS}
    out.update({name: {alias: draw(lists) for alias in ALIASES} for name in LIST_PARAMS})
    out["gpus"] = {alias: draw(st.integers(0, 16)) for alias in ALIASES}
    return out


def placeholder(name: str) -> str:
    return f"<% $mcc.{name} %>"


leaves = st.one_of(
    scalars,
    st.sampled_from(SCALAR_PARAMS + LIST_PARAMS).map(placeholder),
    st.tuples(st.text("abc ", max_size=4), st.sampled_from(SCALAR_PARAMS),
              st.text("xyz ", max_size=4)).map(lambda t: f"{t[0]}{placeholder(t[1])}{t[2]}"))
templates = st.recursive(
    leaves,
    lambda children: st.one_of(st.lists(children, max_size=4),
                               st.dictionaries(st.text("kv", min_size=1, max_size=3),
                                               children, max_size=4)),
    max_leaves=20)


def expected(template: Any, values: dict[str, Any]) -> Any:
    """What the template says for one member, computed independently of the code."""
    if isinstance(template, dict):
        return {k: expected(v, values) for k, v in template.items()}
    if isinstance(template, list):
        return [expected(v, values) for v in template]
    if isinstance(template, str) and "$mcc" in template:
        for name, value in values.items():
            if template == placeholder(name):
                return value
            text = ("true" if value else "false") if isinstance(value, bool) else str(value)
            template = template.replace(placeholder(name), text)
        return template
    return template


@settings(max_examples=60, deadline=None)
@given(params(), templates, st.integers(1, 3))
def test_no_placeholder_survives_and_only_the_own_token_does(
        values: dict[str, dict[str, Any]], template: Any, instances: int) -> None:
    document = {
        "protocolVersion": "super-2",
        "name": "prop",
        "secrets": {f"token-{alias}": f"tok{i}" for i, alias in enumerate(ALIASES)}
        | {"registry": "shared"},
        "prerequisites": [{"name": "img", "type": "dockerimage", "uri": "busybox"}],
        "taskRoles": {"main": {
            "instances": instances, "dockerImage": "img",
            "resourcePerInstance": {"gpu": placeholder("gpus"), "cpu": 1, "memoryMB": 512},
            "commands": [f"run --gpus {placeholder('gpus')} --x {placeholder('p0')}"]}},
        "somethingElse": template,
        "extras": {"com.microsoft.pai.runtimeplugin": [{"plugin": "super_scheduler",
                                                        "parameters": {
            "clusters": [{"alias": alias, "uri": f"http://{i}"}
                         for i, alias in enumerate(ALIASES)],
            "params": values}}]},
    }
    job = read_multicluster_text(yaml.safe_dump(document))
    for i, alias in enumerate(ALIASES):
        request = specialise(job, alias)
        assert "$mcc" not in request.document
        copy = json.loads(request.document)
        member_values = {name: per[alias] for name, per in values.items()}
        assert copy["somethingElse"] == expected(template, member_values)
        tokens = {k: v for k, v in request.secrets if k.startswith("token-")}
        assert tokens == {f"token-{alias}": f"tok{i}"}
        assert dict(request.secrets)["registry"] == "shared"
        main = copy["taskRoles"]["main"]
        (role,) = request.roles
        assert (role.instances, role.gpu, role.cpu, role.memory_mib, role.image) == (
            main["instances"], main["resourcePerInstance"]["gpu"],
            main["resourcePerInstance"]["cpu"], main["resourcePerInstance"]["memoryMB"],
            "busybox")
        assert role.gpu == values["gpus"][alias] and role.commands == tuple(main["commands"])
