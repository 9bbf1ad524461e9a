"""Reading a multi-cluster job: the fields both forms share (times, policy, priorities,
members), the bounds applied before any work, errors that name the field path and stay
bounded, secrets that appear in no error and no repr, and the loader's pointer to `shoal mc`
for a multi-cluster file."""

from __future__ import annotations

import json
import textwrap

import pytest
import yaml

from shoal.api.federation import DispatchPolicy
from shoal.spec import SpecError, load_json, load_text
from shoal.spec.limits import Limits
from shoal.spec.multicluster_fields import MAX_CLUSTERS, minutes_or_duration
from shoal.spec.multicluster_read import read_multicluster_text

SECRET = "s3cr3t-Value-that-must-never-show"


def shoal_form(spec: str, name: str = "mc") -> str:
    return textwrap.dedent("""\
        apiVersion: shoal/v1
        kind: MultiClusterJob
        metadata: {name: %s}
        spec:
        """) % name + textwrap.indent(textwrap.dedent(spec), "  ")


BASE = """\
clusters: {a: {uri: 'http://a'}, b: {uri: 'http://b'}}
template:
  taskGroups:
    - {name: w, replicas: 1, resources: {cpu: 1}, command: [run]}
"""


def issues_of(text: str, limits: Limits | None = None) -> list[tuple[str, str]]:
    with pytest.raises(SpecError) as caught:
        if limits is None:
            read_multicluster_text(text, "mc.yaml")
        else:
            read_multicluster_text(text, "mc.yaml", limits=limits)
    return [(i.path, i.message) for i in caught.value.issues]


@pytest.mark.parametrize(("written", "seconds"), [
    ("10", 600.0), ("1.5", 90.0), ("'10'", 600.0), ("10m", 600.0), ("30s", 30.0),
    ("1h30m", 5400.0), ("0", 0.0)])
def test_times_are_minutes_or_durations_kept_in_seconds(written: str, seconds: float) -> None:
    job = read_multicluster_text(shoal_form(BASE + f"guardTimeRunning: {written}\n"
                                                   f"timeScale: {written}\n"))
    assert job.guard_time_running_s == job.time_scale_s == seconds


def test_times_default_to_the_seeds_ten_minutes_and_one_minute() -> None:
    job = read_multicluster_text(shoal_form(BASE))
    assert (job.guard_time_running_s, job.time_scale_s) == (600.0, 60.0)
    assert job.policy is DispatchPolicy.FAC


@pytest.mark.parametrize("written", ["-1", "ten", "'1e9'", "10 min", "true"])
def test_a_bad_time_is_refused_under_its_field(written: str) -> None:
    (path, message), = issues_of(shoal_form(BASE + f"guardTimeRunning: {written}\n"))
    assert path == "spec.guardTimeRunning", message


def test_policy_and_priorities_are_read() -> None:
    text = shoal_form(BASE.replace("{uri: 'http://a'}", "{uri: 'http://a', priority: 70}")
                      + "policy: fac-priority\n")
    job = read_multicluster_text(text)
    assert job.policy is DispatchPolicy.FAC_PRIORITY
    assert [(m.alias, m.priority) for m in job.members] == [("a", 70), ("b", None)]


@pytest.mark.parametrize(("change", "path"), [
    ("priority: 101", "spec.clusters.a.priority"),
    ("priority: -1", "spec.clusters.a.priority"),
    ("colour: red", "spec.clusters.a.colour")])
def test_a_bad_member_field_is_refused_under_its_path(change: str, path: str) -> None:
    text = shoal_form(BASE.replace("{uri: 'http://a'}", "{uri: 'http://a', " + change + "}"))
    assert [p for p, _ in issues_of(text)] == [path]


def test_an_unknown_policy_is_refused() -> None:
    (path, message), = issues_of(shoal_form(BASE + "policy: fastest\n"))
    assert path == "spec.policy" and "fac" in message


def test_the_number_of_clusters_is_bounded() -> None:
    many = ", ".join(f"c{i}: {{uri: 'http://c{i}'}}" for i in range(MAX_CLUSTERS + 1))
    text = shoal_form(BASE.replace("{a: {uri: 'http://a'}, b: {uri: 'http://b'}}",
                                   "{" + many + "}"))
    (path, message), = issues_of(text)
    assert path == "spec.clusters" and str(MAX_CLUSTERS) in message


def test_list_values_and_nesting_are_bounded_while_reading() -> None:
    deep = "[" * 40 + "]" * 40
    (path, message), = issues_of(shoal_form(BASE + f"params: {{x: {{a: {deep}, b: 1}}}}\n"))
    assert path == "" and "nested" in message
    long = "[" + ", ".join("1" for _ in range(300)) + "]"
    (path, message), = issues_of(shoal_form(BASE + f"params: {{x: {{a: {long}, b: 1}}}}\n"))
    assert path == "spec.params.x.a" and "256" in message


def test_a_document_beyond_the_size_limit_is_refused_before_reading() -> None:
    text = shoal_form(BASE) + "#" + "x" * 2000 + "\n"
    (path, message), = issues_of(text, Limits(max_body_bytes=1000))
    assert path == "" and "1000 bytes" in message


def test_a_parameter_value_holding_a_placeholder_is_refused() -> None:
    text = shoal_form(BASE + "params: {x: {a: '<% $mcc.x %>', b: 1}}\n")
    (path, message), = issues_of(text)
    assert path == "spec.params.x.a" and "placeholder" in message


def test_a_copy_cannot_blow_up_past_the_values_limit() -> None:
    big = "[" + ", ".join(str(i) for i in range(200)) + "]"
    uses = ", ".join(f"k{i}: '<% $mcc.x %>'" for i in range(100))
    text = shoal_form(BASE + f"params: {{x: {{a: {big}, b: 1}}}}\n").replace(
        "command: [run]}", "command: [run], nodeSelector: {" + uses + "}}")
    found = issues_of(text, Limits(max_values=5000))
    assert any("more than 5000 values" in message for _, message in found)


def test_a_job_name_must_be_name_safe() -> None:
    (path, message), = issues_of(shoal_form(BASE, name="'bad name'"))
    assert path == "metadata.name" and "'bad name'" in message


def test_errors_are_bounded_whatever_the_input() -> None:
    text = shoal_form(BASE + "policy: '" + "p" * 100_000 + "'\n")
    (path, message), = issues_of(text)
    assert path == "spec.policy" and len(message) <= 500


def test_a_secret_appears_in_no_error_and_no_repr() -> None:
    text = shoal_form(BASE + f"secrets: {{token-a: {SECRET}, token-b: [{SECRET}]}}\n")
    with pytest.raises(SpecError) as caught:
        read_multicluster_text(text)
    assert SECRET not in str(caught.value)
    (issue,) = caught.value.issues
    assert issue.path == "spec.secrets.token-b" and "not shown" in issue.message
    with pytest.raises(SpecError) as caught:
        read_multicluster_text(shoal_form(BASE + f"secrets: {SECRET}\n"))
    assert SECRET not in str(caught.value)
    assert [i.path for i in caught.value.issues] == ["spec.secrets"]
    job = read_multicluster_text(shoal_form(BASE + f"secrets: {{token-a: {SECRET}}}\n"))
    assert job.secrets == (("token-a", SECRET),) and SECRET not in repr(job)


def test_the_same_alias_twice_is_refused() -> None:
    text = shoal_form(BASE.replace("{a: {uri: 'http://a'}, b: {uri: 'http://b'}}",
                                   "[{alias: a, uri: 'http://1'}, {alias: a, uri: 'http://2'}]"))
    (path, message), = issues_of(text)
    assert path == "spec.clusters[1]" and "twice" in message


def test_not_a_multicluster_job_says_what_is_expected() -> None:
    (path, message), = issues_of("apiVersion: shoal/v1\nkind: Job\nmetadata: {name: x}\n")
    assert path == "" and "super-2" in message and "MultiClusterJob" in message


def test_minutes_or_duration_refuses_a_month_and_more() -> None:
    with pytest.raises(ValueError, match="at most"):
        minutes_or_duration(60 * 24 * 31)


# ---- the loader's pointer -------------------------------------------------------------

@pytest.mark.parametrize(("text", "path"), [
    ("protocolVersion: super-2\nname: x\ntaskRoles: {}\n", "protocolVersion"),
    (shoal_form(BASE), "kind")])
def test_the_loader_points_a_multicluster_file_to_shoal_mc(text: str, path: str) -> None:
    with pytest.raises(SpecError) as caught:
        load_text(text, "mc.yaml")
    (issue,) = caught.value.issues
    assert issue.path == path and "shoal mc specialise" in issue.message
    assert "apiVersion: required field is missing" not in str(caught.value)


def test_a_submission_as_json_gets_the_same_pointer() -> None:
    """What `shoal submit` sends reaches the server's loader as JSON (`load_json`)."""
    body = json.dumps(yaml.safe_load(shoal_form(BASE)))
    with pytest.raises(SpecError) as caught:
        load_json(body, "body", launchable=True)
    (issue,) = caught.value.issues
    assert issue.path == "kind" and "shoal mc validate FILE" in issue.message


def test_the_loader_still_reads_what_it_read() -> None:
    bundle = load_text(textwrap.dedent("""\
        apiVersion: shoal/v1
        kind: Job
        metadata: {name: plain}
        spec:
          taskGroups: [{name: w, replicas: 1, resources: {cpu: 1}}]
        """))
    assert [j.name for j in bundle.jobs] == ["plain"]
    # A protocol-v2 document is an OpenPAI job now (shoal.spec.imports.openpai), checked
    # as one: it has no task roles.
    with pytest.raises(SpecError, match="taskRoles: required field is missing"):
        load_text("protocolVersion: 2\nname: x\n")
