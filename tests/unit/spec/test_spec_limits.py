"""Limits on what a spec may hold (`shoal.spec.limits`), the reading pre-checks that keep a
hostile text from costing more than a bounded amount (`shoal.spec.reading`), and the
refusal of jobs that could never launch (`shoal.spec.launch`).

Each refusal is a `SpecError` whose issues name a path and whose messages stay short,
however large the input."""

from __future__ import annotations

import json

import pytest
import yaml as pyyaml
from spec_helpers import JOB, NODE, SOURCE, yaml

from shoal.spec import SpecError, SpecIssue, load_json, load_text
from shoal.spec.errors import quote
from shoal.spec.limits import DEFAULT_LIMITS, Limits

JOB_DATA = pyyaml.safe_load(JOB)


def refused(text: str, *, json_text: bool = False, limits: Limits = DEFAULT_LIMITS,
            launchable: bool = False) -> list[SpecIssue]:
    load = load_json if json_text else load_text
    with pytest.raises(SpecError) as info:
        load(text, SOURCE, limits=limits, launchable=launchable)
    found = info.value.issues
    assert all(len(i.message) <= 500 and len(i.path) <= 200 for i in found), found
    return found


def job_json(**group: object) -> str:
    data = json.loads(json.dumps(JOB_DATA))
    data["spec"]["taskGroups"][0].update(group)
    return json.dumps(data)


# ---- the limits themselves ----------------------------------------------------------------

def test_limits_must_be_positive_integers() -> None:
    assert Limits().max_body_bytes == 4 * 1024 * 1024
    for bad in (0, -1, 1.5, True):
        with pytest.raises(ValueError, match="max_nodes"):
            Limits(max_nodes=bad)  # type: ignore[arg-type]


def test_quote_is_bounded_whatever_it_is_given() -> None:
    assert quote("x" * 10_000) == repr("x" * 57) + "..."
    assert quote(10**5000) == "<an integer of 16610 bits>"
    assert len(quote([list(range(1000))] * 1000)) <= 120
    assert quote(3) == "3" and quote("ok") == "'ok'"


# ---- YAML read safely ---------------------------------------------------------------------

def test_an_alias_bomb_is_refused_before_it_expands() -> None:
    bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 10)}]\n"
        for i in range(8))
    [issue] = refused(bomb)
    assert issue.path == ""
    assert issue.message == "cannot read the YAML: anchors (&name) are not allowed at line 1, " \
                            "column 4"


def test_an_alias_alone_is_refused() -> None:
    [issue] = refused(JOB + "      env: *undefined\n")
    assert "aliases (*name) are not allowed" in issue.message


@pytest.mark.parametrize("text", ["[" * 50_000 + "]" * 50_000,
                                  "a:\n" + "".join(" " * i + "- \n" for i in range(1, 200)),
                                  JOB + "---\n" + "{a: " * 40 + "1" + "}" * 40])
def test_deep_yaml_is_refused_without_recursing(text: str) -> None:
    [issue] = refused(text)
    assert issue.path == ""
    assert "nested more than 32 deep" in issue.message
    assert " at line " in issue.message and len(issue.message) < 200  # where, not a dump


def test_nesting_within_the_limit_reads() -> None:
    deep = Limits(max_depth=64)
    text = JOB.replace("spec:\n", "spec:\n  elastic: null\n") + "status: {tasks: []}\n"
    assert load_text(text, limits=deep).jobs[0].name == "train-a"


def test_too_many_entries_in_one_collection_are_refused() -> None:
    small = Limits(max_items=5)
    [issue] = refused(JOB.replace("resources: {", "command: [a, b, c, d, e, f]\n"
                                  "      resources: {"), limits=small)
    assert "more than 5 entries" in issue.message


def test_too_many_values_or_documents_in_one_text_are_refused() -> None:
    small = Limits(max_values=50)
    [issue] = refused("---\n" * 60, limits=small)
    assert issue.path == "" and "more than 50 values" in issue.message
    nested = JOB + "      env: {" + ", ".join(f"K{i}: v" for i in range(30)) + "}\n"
    [issue] = refused(nested, limits=small)
    assert "more than 50 values" in issue.message
    as_json = json.dumps(pyyaml.safe_load(nested))
    [issue] = refused(as_json, json_text=True, limits=small)
    assert "more than 50 values" in issue.message
    commas_in_strings = job_json(command=["x" + "," * 100])
    assert load_json(commas_in_strings, limits=small).jobs[0].groups[0].command[0][1] == ","
    assert load_text(nested, limits=Limits(max_values=200)).jobs[0].groups[0].env["K29"] == "v"


@pytest.mark.parametrize("literal", ["1" * 5000, "-" + "9" * 40])
def test_an_overlong_integer_is_refused_while_reading(literal: str) -> None:
    [issue] = refused(JOB.replace("replicas: 4", f"replicas: {literal}"))
    assert issue.path == "" and "outside every field's range" in issue.message


def test_a_duplicate_key_is_named_by_its_path_in_yaml_and_json() -> None:
    [issue] = refused(JOB.replace("gpu: 2}", "gpu: 2, cpu: 1}"))
    assert issue.path == "spec.taskGroups[0].resources.cpu"
    text = job_json(env={"A": "1"}).replace('"A": "1"', '"A": "1", "B": "2", "A": "3"')
    [issue] = refused(text, json_text=True)
    assert (issue.path, issue.message) == ("spec.taskGroups[0].env.A",
                                           "invalid JSON: found duplicate key 'A'")


def test_an_unpaired_surrogate_is_refused_with_its_path() -> None:
    [issue] = refused(job_json(env={"A": "\ud800"}), json_text=True)
    assert issue.path == "spec.taskGroups[0].env.A"
    [issue] = refused(JOB + '      env: {A: "\\ud800"}\n')
    # libyaml refuses the escape itself; PyYAML's own parser (without libyaml) reads it.
    assert (issue.path, issue.message[:12]) in {("", "invalid YAML"),
                                                ("spec.taskGroups[0].env.A", "holds a NUL ")}
    assert load_json(job_json(env={"A": "\U0001f600"})).jobs[0].groups[0].env["A"] == \
        "\U0001f600"


# ---- JSON read safely ---------------------------------------------------------------------

def test_deep_json_is_refused_and_brackets_in_strings_do_not_count() -> None:
    [issue] = refused("[" * 50_000 + "]" * 50_000, json_text=True)
    assert issue.path == "" and "nested more than 32 deep" in issue.message
    text = job_json(command=["echo", "[" * 100 + "{" * 100, "\\\"[[["])
    assert load_json(text).jobs[0].groups[0].command[1] == "[" * 100 + "{" * 100


@pytest.mark.parametrize("constant", ["Infinity", "-Infinity", "NaN"])
def test_json_non_finite_constants_are_refused(constant: str) -> None:
    [issue] = refused(job_json().replace('"cpu": 8', f'"cpu": {constant}'), json_text=True)
    assert issue.path == ""
    assert issue.message.startswith("invalid JSON: ") and "must be finite" in issue.message


def test_json_number_literals_out_of_any_range() -> None:
    [issue] = refused(job_json().replace('"cpu": 8', '"cpu": 1e999'), json_text=True)
    assert issue.path == "spec.taskGroups[0].resources.cpu"
    assert issue.message == "must be a finite number, got inf"
    [issue] = refused(job_json().replace('"replicas": 4', '"replicas": ' + "7" * 5000),
                      json_text=True)
    assert issue.path == "" and "5000 characters" in issue.message


# ---- numbers where they are read ----------------------------------------------------------

INTEGER_FIELDS = {
    "spec.taskGroups[0].replicas": ("replicas: 4", "replicas: {}"),
    "spec.taskGroups[0].taskRetryCount": ("replicas: 4", "replicas: 4\n      taskRetryCount: {}"),
    "spec.jobRetryCount": ("spec:\n", "spec:\n  jobRetryCount: {}\n"),
    "spec.minAvailable": ("spec:\n", "spec:\n  schedulerName: shoal\n  minAvailable: {}\n"),
    "spec.completion.minSucceeded": ("spec:\n", "spec:\n  completion: {{minSucceeded: {}}}\n"),
    "spec.taskGroups[0].completion.minSucceeded": (
        "replicas: 4", "replicas: 4\n      completion: {{minSucceeded: {}}}"),
}


@pytest.mark.parametrize("value", [2**63, 2**70, -(2**63) - 1])
@pytest.mark.parametrize("path", sorted(INTEGER_FIELDS))
def test_integers_outside_64_bits_are_refused_by_field(path: str, value: int) -> None:
    old, new = INTEGER_FIELDS[path]
    found = refused(JOB.replace(old, new.format(value)))
    assert path in {i.path for i in found}, found


@pytest.mark.parametrize("value", [2**63, 2**70])
def test_other_documents_integers_outside_64_bits(value: int) -> None:
    pc = f"apiVersion: shoal/v1\nkind: PriorityClass\nmetadata: {{name: p}}\nvalue: {value}\n"
    assert [i.path for i in refused(pc)] == ["value"]
    assert [i.path for i in refused(pc.replace(str(value), str(-value - 1)))] == ["value"]
    vc = "apiVersion: shoal/v1\nkind: VirtualCluster\nmetadata: {name: v}\nspec: {weight: %d}\n"
    assert [i.path for i in refused(vc % value)] == ["spec.weight"]
    node = NODE.replace("gpu: 8}", f"gpu: 8}}\n  count: {value}")
    assert [i.path for i in refused(node)] == ["spec.count"]


@pytest.mark.parametrize("value", [".inf", "-.inf", ".nan", "1e999", "'1e999'", "'Infinity'",
                                   "9" * 40, "'" + "9" * 5000 + "'", "99999999999999999999Ti"])
def test_quantities_are_finite_and_bounded(value: str) -> None:
    job = JOB.replace("cpu: 8", f"cpu: {value}").replace("memory: 32Gi", f"memory: {value}")
    found = refused(job)
    paths = {i.path for i in found}
    assert paths <= {"spec.taskGroups[0].resources.cpu", "spec.taskGroups[0].resources.memory",
                     ""}, found
    node = NODE.replace("gpu: 8}", f"gpu: {value}}}")
    assert {i.path for i in refused(node)} <= {"spec.capacity.gpu", ""}
    vc = ("apiVersion: shoal/v1\nkind: VirtualCluster\nmetadata: {name: v}\n"
          f"spec: {{max: {{gpu: {value}}}}}\n")
    assert {i.path for i in refused(vc)} <= {"spec.max.gpu", ""}


def test_a_non_finite_duration_is_refused() -> None:
    text = JOB.replace("spec:\n", "spec:\n  elastic: {minReplicas: 1, scaleCooldown: 'inf'}\n")
    [issue] = refused(text)
    assert issue.path == "spec.elastic.scaleCooldown"


# ---- sizes and counts ---------------------------------------------------------------------

def test_replicas_and_tasks_per_job_are_bounded_without_making_tasks() -> None:
    [issue] = refused(JOB.replace("replicas: 4", "replicas: 1000000000"))
    assert issue.path == "spec.taskGroups[0].replicas"
    assert issue.message == ("must be at most 10000 (the server's limit per task group), "
                             "got 1000000000")
    two = JOB.replace("replicas: 4", "replicas: 6000") + yaml("""
            - name: ps
              replicas: 6000
              resources: {cpu: 1}
        """).replace("- name", "    - name").replace("  replicas", "      replicas").replace(
        "  resources", "      resources")
    [issue] = refused(two)
    assert issue.path == "spec.taskGroups"
    assert "add up to 12000" in issue.message
    assert load_text(two, limits=Limits(max_tasks_per_job=12_000)).jobs[0].replicas == 12_000


def test_strings_env_args_labels_and_groups_are_bounded() -> None:
    small = Limits(max_string_length=10, max_env=2, max_args=3, max_labels=1,
                   max_task_groups=1, max_key_length=7)
    found = refused(job_json(command=["a", "x" * 11], env={"A": "1", "B": "2", "C": "3"},
                             nodeSelector={"a": "1", "b": "2"}, workingDir="/" * 11),
                    json_text=True, limits=small)
    assert [i.path for i in found] == [
        "spec.taskGroups[0].command[1]", "spec.taskGroups[0].env",
        "spec.taskGroups[0].nodeSelector", "spec.taskGroups[0].workingDir"]
    assert found[0].message == "must be at most 10 characters long, got 11 ('xxxxxxxxxxx'...)"
    [issue] = refused(job_json(command=["a"] * 4), json_text=True, limits=small)
    assert issue.path == "spec.taskGroups[0].command"
    [issue] = refused(job_json(env={"LONGNAME": "1"}), json_text=True, limits=small)
    assert issue.path == "spec.taskGroups[0].env" and "'LONGNAME'" in issue.message
    data = json.loads(job_json())
    data["spec"]["taskGroups"].append(dict(data["spec"]["taskGroups"][0], name="other"))
    [issue] = refused(json.dumps(data), json_text=True, limits=small)
    assert issue.path == "spec.taskGroups" and "at most 1 task groups" in issue.message
    data = json.loads(job_json())
    data["metadata"]["annotations"] = {"a": "x" * 11}
    [issue] = refused(json.dumps(data), json_text=True, limits=small)
    assert issue.path == "metadata.annotations.a"
    data = json.loads(job_json())
    data["spec"]["virtualCluster"] = {"fixedSizeNodes": [
        {"nodes": [{"resources": {"gpu": 1}, "labels": {"a": "1", "b": "2"}}]}]}
    [issue] = refused(json.dumps(data), json_text=True, limits=small)
    assert issue.path == "spec.virtualCluster.fixedSizeNodes[0].nodes[0].labels"
    vc = "apiVersion: shoal/v1\nkind: VirtualCluster\nmetadata: {name: v}\nspec: {parent: %s}\n"
    [issue] = refused(vc % ("p" * 300))
    assert issue.path == "spec.parent" and "at most 253 characters" in issue.message


def test_node_counts_add_up_across_a_load() -> None:
    few = Limits(max_nodes=10)
    [issue] = refused(NODE.replace("gpu: 8}", "gpu: 8}\n  count: 10000000"), limits=few)
    assert (issue.path, issue.message) == (
        "spec.count", "must be at most 10 (the server's limit on nodes), got 10000000")
    second = NODE.replace("name: n1", "name: n2").replace("gpu: 8}", "gpu: 8}\n  count: 4")
    text = NODE.replace("gpu: 8}", "gpu: 8}\n  count: 7") + "---\n" + second
    [issue] = refused(text, limits=few)
    assert issue.document == 2 and "brings the nodes of this load to 11" in issue.message
    assert len(load_text(text, limits=Limits(max_nodes=11)).nodes) == 11


# ---- jobs that could never launch ---------------------------------------------------------

def test_a_job_without_a_command_is_refused_only_when_it_must_launch() -> None:
    assert load_text(JOB).jobs[0].groups[0].command == ()  # a scenario may leave it out
    [issue] = refused(JOB, launchable=True)
    assert issue.path == "spec.taskGroups[0].command"
    assert "can never start" in issue.message


def test_bad_environment_names_and_empty_programs_are_refused_with_their_paths() -> None:
    text = job_json(command=["", "-c"], env={"A=B": "1", "": "2", "OK": "v"}, workingDir="")
    found = refused(text, json_text=True, launchable=True)
    assert [i.path for i in found] == [
        "spec.taskGroups[0].command[0]", "spec.taskGroups[0].env['A=B']",
        "spec.taskGroups[0].env", "spec.taskGroups[0].workingDir"]
    assert load_json(job_json(command=["python"], env={"A": "1"}),
                     launchable=True).jobs[0].groups[0].env == {"A": "1"}


@pytest.mark.parametrize(("group", "path"), [
    ({"command": ["python", "-c", "x\0y"]}, "spec.taskGroups[0].command[2]"),
    ({"env": {"OK": "v\0"}}, "spec.taskGroups[0].env.OK"),
    ({"env": {"N\0": "v"}}, "spec.taskGroups[0].env"),
    ({"workingDir": "/tmp/\0"}, "spec.taskGroups[0].workingDir"),
    ({"nodeSelector": {"a": "\0"}}, "spec.taskGroups[0].nodeSelector.a"),
])
def test_a_nul_byte_is_refused_in_any_string_with_its_path(group: dict[str, object],
                                                          path: str) -> None:
    # No launch needed: a NUL is not text anywhere (PostgreSQL refuses it too).
    [issue] = refused(job_json(**group), json_text=True)
    assert issue.path == path and "NUL byte" in issue.message
    [issue] = refused(pyyaml.safe_dump(json.loads(job_json(**group))))
    assert issue.path == path
