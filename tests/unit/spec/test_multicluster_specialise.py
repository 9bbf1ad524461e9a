"""Specialisation of a multi-cluster job (seed 000), as tables: scalars, list nodes, text,
names, secrets, `extra`/`extras`, and every refusal under the path of the field as written.
The seed's own storage example is checked exactly as the seed writes it."""

from __future__ import annotations

import dataclasses
import json
import textwrap
from typing import Any

import pytest

from shoal.spec import SpecError, load_json
from shoal.spec.multicluster import JobForm
from shoal.spec.multicluster_read import read_multicluster_text
from shoal.spec.specialise import specialise, specialise_document

PLUGINS = "extras['com.microsoft.pai.runtimeplugin']"


def super2(*, params: str = "gpuNum: {a: 2, b: 4}", gpu: str = "<% $mcc.gpuNum %>",
           command: str = "python train.py", extra_key: str = "extras",
           clusters: str = "{a: {uri: 'https://a.example.com', user: u}, "
                           "b: {uri: 'https://b.example.com', user: u}}",
           secrets: str = "{token-a: secret-a-value, token-b: secret-b-value, "
                          "registry: reg-pass}",
           plugins_before: str = "") -> str:
    return (
        "protocolVersion: super-2\n"
        "name: job1\n"
        "type: job\n"
        f"secrets: {secrets}\n"
        "prerequisites:\n"
        "  - {name: img, type: dockerimage, uri: 'ubuntu:22.04'}\n"
        "taskRoles:\n"
        "  main:\n"
        "    instances: 2\n"
        "    dockerImage: img\n"
        f"    resourcePerInstance: {{gpu: {gpu}, cpu: 4, memoryMB: 8192}}\n"
        f"    commands: ['{command}']\n"
        f"{extra_key}:\n"
        f"  com.microsoft.pai.runtimeplugin:{plugins_before}\n"
        "    - plugin: super_scheduler\n"
        "      parameters:\n"
        f"        clusters: {clusters}\n"
        f"        params: {{{params}}}\n")


def issues(text: str, alias: str | None = None) -> list[tuple[str, str]]:
    with pytest.raises(SpecError) as caught:
        job = read_multicluster_text(text, "job.yaml")
        assert alias is not None, "the job was read without an error"
        specialise(job, alias)
    return [(i.path, i.message) for i in caught.value.issues]


def copy_of(text: str, alias: str) -> dict[str, Any]:
    document: dict[str, Any] = json.loads(
        specialise(read_multicluster_text(text), alias).document)
    return document


# ---- what a copy holds ------------------------------------------------------------------

def test_a_scalar_replaces_the_node_with_its_own_type() -> None:
    a, b = copy_of(super2(), "a"), copy_of(super2(), "b")
    assert a["taskRoles"]["main"]["resourcePerInstance"]["gpu"] == 2
    assert b["taskRoles"]["main"]["resourcePerInstance"]["gpu"] == 4


def test_a_list_replaces_the_whole_node() -> None:
    text = super2(params="gpuNum: {a: 1, b: 1}, stores: {a: [s1, s2], b: [s3]}",
                  plugins_before="\n    - {plugin: teamwise_storage, parameters: "
                                 "{storageConfigNames: '<% $mcc.stores %>'}}")
    a = copy_of(text, "a")
    assert a["extras"]["com.microsoft.pai.runtimeplugin"] == [
        {"plugin": "teamwise_storage", "parameters": {"storageConfigNames": ["s1", "s2"]}}]
    assert copy_of(text, "b")["extras"]["com.microsoft.pai.runtimeplugin"][0][
        "parameters"]["storageConfigNames"] == ["s3"]


@pytest.mark.parametrize(("value", "expected"), [
    ("8", "run --gpus 8 --fast"), ("true", "run --gpus true --fast"),
    ("'x y'", "run --gpus x y --fast"), ("1.5", "run --gpus 1.5 --fast")])
def test_a_scalar_inside_a_longer_string_is_substituted_as_text(value: str,
                                                                 expected: str) -> None:
    text = super2(params=f"gpuNum: {{a: 1, b: 1}}, n: {{a: {value}, b: 1}}",
                  command="run --gpus <% $mcc.n %> --fast")
    assert copy_of(text, "a")["taskRoles"]["main"]["commands"] == [expected]


def test_a_placeholder_with_more_around_it_is_text_even_if_only_spaces() -> None:
    text = super2(params="gpuNum: {a: 1, b: 1}, n: {a: 8, b: 1}",
                  command=" <% $mcc.n %>")
    assert copy_of(text, "a")["taskRoles"]["main"]["commands"] == [" 8"]


def test_a_placeholder_in_a_key_is_substituted_and_may_not_collide() -> None:
    text = super2(params="gpuNum: {a: 1, b: 1}, k: {a: x, b: z}") + \
        "labels: {'<% $mcc.k %>-gpu': 1, y-gpu: 2}\n"
    assert copy_of(text, "a")["labels"] == {"x-gpu": 1, "y-gpu": 2}
    (path, message), = issues(text.replace("b: z", "b: y"))  # b's copy would repeat a key
    assert path == "labels.y-gpu" and "'y-gpu'" in message


def test_the_copy_is_renamed_version_2_without_the_super_scheduler_entry() -> None:
    a = copy_of(super2(), "a")
    assert a["protocolVersion"] == "2" and a["name"] == "job1-a"
    assert "extras" not in a  # its only plugin entry was the super_scheduler's
    assert "secrets" not in a  # secrets travel beside the document, never in it
    assert a["type"] == "job" and a["prerequisites"][0]["uri"] == "ubuntu:22.04"


def test_other_plugins_and_unknown_top_level_fields_pass_through() -> None:
    text = super2(plugins_before="\n    - {plugin: ssh, parameters: {jobssh: true}}")
    text += "jobRetryCount: 3\nsomethingNew: {kept: [1, 2]}\n"
    a = copy_of(text, "a")
    assert a["extras"] == {"com.microsoft.pai.runtimeplugin": [
        {"plugin": "ssh", "parameters": {"jobssh": True}}]}
    assert a["jobRetryCount"] == 3 and a["somethingNew"] == {"kept": [1, 2]}


def test_the_seeds_extra_is_read_and_written_as_extras() -> None:
    text = super2(extra_key="extra",
                  plugins_before="\n    - {plugin: ssh, parameters: {jobssh: true}}")
    a = copy_of(text, "a")
    assert "extra" not in a and a["extras"]["com.microsoft.pai.runtimeplugin"][0][
        "plugin"] == "ssh"


@pytest.mark.parametrize(("alias", "kept"), [
    ("a", {"token-a": "secret-a-value", "registry": "reg-pass"}),
    ("b", {"token-b": "secret-b-value", "registry": "reg-pass"})])
def test_only_the_members_own_token_is_kept(alias: str, kept: dict[str, str]) -> None:
    request = specialise(read_multicluster_text(super2()), alias)
    assert dict(request.secrets) == kept
    other = "secret-b-value" if alias == "a" else "secret-a-value"
    assert other not in request.document and "secret-a-value" not in repr(request)


def test_the_request_carries_roles_matching_the_document() -> None:
    request = specialise(read_multicluster_text(super2()), "b")
    assert request.name == "job1-b" and request.job_name == "job1"
    assert request.document_kind == "openpai-v2" and request.alias == "b"
    (role,) = request.roles
    assert (role.name, role.instances, role.gpu, role.cpu, role.memory_mib, role.image,
            role.commands) == ("main", 2, 4, 4, 8192, "ubuntu:22.04", ("python train.py",))


@pytest.mark.parametrize(("alias", "copy"), [
    ("https://pai.example.com:9090/", "job1-pai-example-com-9090"),
    ("<alias-1>", "job1-alias-1"), ("v100_east", "job1-v100_east")])
def test_an_alias_that_is_not_name_safe_gets_its_safe_form(alias: str, copy: str) -> None:
    text = super2(params="", gpu="1",
                  clusters=f"[{{alias: '{alias}', uri: 'https://x'}}]", secrets="{}")
    assert specialise(read_multicluster_text(text), alias).name == copy


def test_the_alias_defaults_to_the_uri() -> None:
    text = super2(params="gpuNum: {'http://c1:80': 1}",
                  clusters="[{uri: 'http://c1:80', priority: 50}]", secrets="{}")
    job = read_multicluster_text(text)
    assert job.aliases == ("http://c1:80",) and job.members[0].priority == 50
    assert specialise(job, "http://c1:80").name == "job1-c1-80"


# ---- what is refused, and where ---------------------------------------------------------

def test_a_parameter_missing_for_a_cluster_is_refused_under_params() -> None:
    assert issues(super2(params="gpuNum: {a: 2}")) == [
        (f"{PLUGINS}[0].parameters.params.gpuNum", "no value for cluster 'b'")]


def test_a_placeholder_naming_no_parameter_is_refused_where_it_is() -> None:
    (path, message), = issues(super2(params="gpuNum: {a: 1, b: 1}",
                                     command="run <% $mcc.epochs %>"))
    assert path == "taskRoles.main.commands[0]"
    assert "$mcc.epochs" in message and "gpuNum" in message


@pytest.mark.parametrize("written", ["<% $mcc.gpu-num %>", "<% $mcc %>", "<%$mcc.%>"])
def test_a_placeholder_left_unresolved_is_refused_where_it_is(written: str) -> None:
    (path, message), = issues(super2(command=f"run {written}"))
    assert path == "taskRoles.main.commands[0]" and "not resolved" in message


def test_a_list_inside_a_longer_string_is_refused() -> None:
    (path, message), = issues(super2(params="gpuNum: {a: 1, b: 1}, s: {a: [x], b: y}",
                                     command="run <% $mcc.s %>"))
    assert path == "taskRoles.main.commands[0]"
    assert "a list" in message and message.endswith("(on cluster 'a')")


def test_a_cluster_the_job_does_not_list_is_refused() -> None:
    (path, message), = issues(super2(), "c")
    assert path == "" and "'c'" in message and "'a', 'b'" in message


def test_a_value_for_a_cluster_not_listed_is_refused() -> None:
    (path, message), = issues(super2(params="gpuNum: {a: 1, b: 1, z: 3}"))
    assert path == f"{PLUGINS}[0].parameters.params.gpuNum.z" and "no cluster" in message


def test_two_aliases_with_the_same_name_safe_form_collide() -> None:
    clusters = "{'a.b': {uri: 'http://1'}, 'a-b': {uri: 'http://2'}}"
    (path, message), = issues(super2(params="", gpu="1", clusters=clusters))
    assert path == f"{PLUGINS}[0].parameters.clusters.a-b"
    assert "'job1-a-b'" in message


def test_a_copy_that_is_no_valid_openpai_job_is_refused_under_its_path() -> None:
    text = super2(params="gpuNum: {a: 1, b: many}")
    assert issues(text, "b") == [
        ("taskRoles.main.resourcePerInstance.gpu", "must be an integer, got 'many'")]
    assert specialise(read_multicluster_text(text), "a").roles[0].gpu == 1


def test_extra_and_extras_together_are_refused() -> None:
    text = super2() + "extra: {}\n"
    assert ("extra", "give OpenPAI's `extras` or the seed's `extra`, not both") in issues(text)


def test_a_job_without_a_super_scheduler_entry_is_refused() -> None:
    text = super2().replace("plugin: super_scheduler", "plugin: other")
    (path, message), = issues(text)
    assert path == PLUGINS and "super_scheduler" in message


# ---- the seed's example, exactly as the seed writes it ----------------------------------

SEED = """\
protocolVersion: super-2 # prefixed with super- means this is a muli-cluster job
name: mc-job-name
secrets:
  token-<alias-1>: <token-1>
  token-<alias-2>: <token-2> 
taskRoles:
  main:
    resourcePerInstance:
      gpu: <% $mcc.gpuNum %>
extra:
  com.microsoft.pai.runtimeplugin:
    - plugin: teamwiase_storage
      parameters:
        storageConfigNames: <% $mcc.storageConfigs %>
    - plugin: super_scheduler
      parameters:
        clusters:
          <alias-1>:
            uri: <pai-uri-1> 
            user: <username-1>
          <alias-2>:
            uri: <pai-uri-2>
            user: <username-2>
        guardTimeRunning: 10 # 10 minutes
        timeScale: 1 # 1 minute
        params: # define key-values for each parameter and each cluster
          gpuNum:
            <alias-1>: <gpu-num-1>
            <alias-2>: <gpu-num-2>
          storageConfigs:
            <alias-1>: 
              - <storage-config-1-1>
              - <storage-config-1-2>
            <alias-2>:
              - <storage-config-2-1>
"""  # noqa: W291 - the seed's trailing spaces, kept


def test_the_seeds_storage_example_specialises_as_the_seed_shows() -> None:
    job = read_multicluster_text(SEED, "seed.yaml")
    assert job.form is JobForm.SUPER_2 and job.aliases == ("<alias-1>", "<alias-2>")
    assert (job.guard_time_running_s, job.time_scale_s) == (600.0, 60.0)
    copy = specialise_document(job, "<alias-1>")
    assert copy.data() == {
        "protocolVersion": "2",
        "name": "mc-job-name-alias-1",  # the seed's `<alias-1>` in its name-safe form
        "taskRoles": {"main": {"resourcePerInstance": {"gpu": "<gpu-num-1>"}}},
        "extras": {"com.microsoft.pai.runtimeplugin": [
            {"plugin": "teamwiase_storage",
             "parameters": {"storageConfigNames": ["<storage-config-1-1>",
                                                   "<storage-config-1-2>"]}}]},
    }
    assert copy.secrets == (("token-<alias-1>", "<token-1>"),)
    assert specialise_document(job, "<alias-2>").data()["extras"][
        "com.microsoft.pai.runtimeplugin"][0]["parameters"]["storageConfigNames"] == [
        "<storage-config-2-1>"]


def test_the_seeds_example_is_no_complete_openpai_job_and_says_where() -> None:
    job = read_multicluster_text(SEED, "seed.yaml")
    with pytest.raises(SpecError) as caught:
        specialise(job, "<alias-1>")
    paths = {i.path for i in caught.value.issues}
    assert {"taskRoles.main.dockerImage", "taskRoles.main.commands",
            "taskRoles.main.resourcePerInstance.gpu",
            "taskRoles.main.resourcePerInstance.cpu"} <= paths


# ---- Shoal's own form -------------------------------------------------------------------

SHOAL_FORM = textwrap.dedent("""\
    apiVersion: shoal/v1
    kind: MultiClusterJob
    metadata: {name: mc, user: alice}
    spec:
      clusters: {big: {uri: 'http://big'}, small: {uri: 'http://small'}}
      guardTimeRunning: 30s
      timeScale: 2m
      policy: fac-priority
      secrets: {token-big: tb, token-small: ts}
      params:
        gpus: {big: 4, small: 1}
        cmd: {big: [python, big.py], small: [python, small.py]}
      template:
        taskGroups:
          - name: worker
            replicas: 2
            resources: {cpu: 500m, memory: 1Gi, gpu: <% $mcc.gpus %>}
            command: <% $mcc.cmd %>
            env: {GPUS: "n=<% $mcc.gpus %>"}
    """)


def test_shoals_form_specialises_into_a_job_the_loader_accepts() -> None:
    job = read_multicluster_text(SHOAL_FORM)
    assert (job.guard_time_running_s, job.time_scale_s) == (30.0, 120.0)
    request = specialise(job, "big")
    assert request.document_kind == "shoal" and request.name == "mc-big"
    assert dict(request.secrets) == {"token-big": "tb"}
    loaded = load_json(request.document, launchable=True).jobs
    assert [j.name for j in loaded] == ["mc-big"] and loaded[0].user == "alice"
    (group,) = loaded[0].groups
    assert (group.resources.gpu, group.command, dict(group.env)) == (
        4, ("python", "big.py"), {"GPUS": "n=4"})
    (role,) = request.roles
    assert (role.instances, role.gpu, role.cpu, role.memory_mib, role.commands,
            role.env) == (2, 4, 1, 1024, ("python big.py",), (("GPUS", "n=4"),))


def test_shoals_form_names_template_paths_as_written() -> None:
    text = SHOAL_FORM.replace("replicas: 2", "replicas: <% $mcc.gpus %>x")
    with pytest.raises(SpecError) as caught:
        specialise(read_multicluster_text(text), "small")
    (issue,) = caught.value.issues
    assert issue.path == "spec.template.taskGroups[0].replicas"
    assert issue.kind == "MultiClusterJob" and issue.name == "mc"


def test_a_value_object_missing_a_members_value_is_refused_by_specialise() -> None:
    """`specialise` checks what it is given, not only what reading made."""
    job = read_multicluster_text(super2())
    (gpu_num,) = job.params
    broken = dataclasses.replace(job, params=(dataclasses.replace(
        gpu_num, values=gpu_num.values[:1]),))
    with pytest.raises(SpecError) as caught:
        specialise(broken, "b")
    assert [(i.path, i.message) for i in caught.value.issues] == [
        (f"{PLUGINS}[0].parameters.params.gpuNum", "no value for cluster 'b'")]
    assert specialise(broken, "a").roles[0].gpu == 2
