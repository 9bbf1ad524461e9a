"""The cluster registry: a clusters file read into members and credential references, every
problem told by field path, tokens read only when an adapter is built and never quoted."""

from __future__ import annotations

from pathlib import Path

import pytest

from shoal.api.federation import ClusterKind
from shoal.federation.members.openpai import OpenPaiMember
from shoal.federation.members.shoal_member import ShoalMember
from shoal.federation.registry import (
    MAX_CLUSTERS_FILE_BYTES,
    MAX_MEMBERS,
    MAX_TOKEN_BYTES,
    CredentialsError,
    load_registry,
    load_registry_file,
)
from shoal.spec.errors import SpecError

EXAMPLE = Path(__file__).parents[3] / "examples" / "multicluster" / "clusters.yaml"
SECRET = "s3cr3t-t0ken.value"


def cluster(name: str | None = "a", *, uri: str = "http://127.0.0.1:1", kind: str = "shoal",
            extra: str = "", credentials: str = "{}") -> str:
    meta = f"metadata: {{name: {name}}}\n" if name is not None else ""
    return (f"apiVersion: shoal/v1\nkind: Cluster\n{meta}spec:\n  uri: {uri}\n  kind: {kind}\n"
            f"  credentials: {credentials}\n{extra}")


def issues(text: str) -> list[tuple[int, str, str]]:
    with pytest.raises(SpecError) as caught:
        load_registry(text, "clusters.yaml")
    return [(i.document, i.path, i.message) for i in caught.value.issues]


def test_the_example_file_declares_its_members_in_order() -> None:
    registry = load_registry_file(EXAMPLE)
    assert [(m.alias, m.kind, m.priority, m.gpu_type) for m in registry.members] == [
        ("big", ClusterKind.SHOAL, 80, "A100"), ("small", ClusterKind.SHOAL, 20, "V100"),
        ("pai", ClusterKind.OPENPAI, 10, "K80")]
    big = registry.get("big").credentials
    assert big.token_file == EXAMPLE.parent / "tokens" / "big.token"  # relative to the file
    assert registry.get("pai").credentials.user == "alice"
    assert registry.get("small").credentials.token_env == "SHOAL_SMALL_TOKEN"


def test_the_alias_defaults_to_the_uri() -> None:
    registry = load_registry(cluster(None, uri="http://10.0.0.5:8765"))
    assert registry.members[0].alias == "http://10.0.0.5:8765"


def test_an_alias_is_unique() -> None:
    text = cluster("a") + "---\n" + cluster("b") + "---\n" + cluster("a", uri="http://x:2")
    assert issues(text) == [(3, "metadata.name", "alias 'a' is already the alias of document "
                                                 "1; aliases are unique")]


def test_a_plaintext_token_is_refused_without_being_quoted() -> None:
    found = issues(cluster(credentials=f"{{token: {SECRET}, user: bob}}"))
    assert [(d, p) for d, p, _ in found] == [(1, "spec.credentials.token")]
    message = found[0][2]
    assert "tokenFile" in message and "tokenEnv" in message
    assert SECRET not in message


def test_a_token_in_the_wrong_credentials_field_is_not_quoted() -> None:
    found = issues(cluster(credentials=f"{{tokenEnv: {SECRET}}}"))
    assert [(d, p) for d, p, _ in found] == [(1, "spec.credentials.tokenEnv")]
    assert SECRET not in found[0][2]
    found = issues(cluster(credentials=f"{{password: {SECRET}}}"))
    assert found[0][1] == "spec.credentials.password"
    assert SECRET not in str(found)


def test_every_problem_of_a_file_is_told_by_field_path() -> None:
    text = (cluster("a", extra="  priority: 101\n") + "---\n" + cluster("b", kind="kubernetes")
            + "---\n" + cluster("c d") + "---\n" + cluster("e", uri="ftp://x"))
    found = issues(text)
    assert [(d, p) for d, p, _ in found] == [
        (1, "spec.priority"), (2, "spec.kind"), (3, "metadata.name"), (4, "spec.uri")]
    assert "at most 100" in found[0][2]
    assert "'openpai'" in found[1][2]


def test_one_token_source_at_most() -> None:
    found = issues(cluster(credentials="{tokenFile: t, tokenEnv: T}"))
    assert found == [(1, "spec.credentials", "give tokenFile or tokenEnv, not both")]


def test_an_openpai_member_names_its_user() -> None:
    found = issues(cluster(kind="openpai", credentials="{tokenEnv: T}"))
    assert [(d, p) for d, p, _ in found] == [(1, "spec.credentials.user")]


def test_other_kinds_and_empty_files_are_refused() -> None:
    assert issues("apiVersion: shoal/v1\nkind: Job\n")[0][1:] == ("kind", "must be 'Cluster', "
                                                                  "got 'Job'")
    assert issues("# nothing\n")[0][0] == 0


def test_a_registry_is_bounded() -> None:
    text = "---\n".join(cluster(f"m{i}") for i in range(MAX_MEMBERS + 1))
    found = issues(text)
    assert [(d, m) for d, _, m in found] == [
        (MAX_MEMBERS + 1, f"more than {MAX_MEMBERS} clusters in one registry")]
    assert issues("#" * (MAX_CLUSTERS_FILE_BYTES + 1))[0][2].startswith("is longer than")


def test_a_token_is_read_from_its_file_only_when_resolved(tmp_path: Path) -> None:
    (tmp_path / "clusters.yaml").write_text(cluster(credentials="{tokenFile: a.token}"))
    registry = load_registry_file(tmp_path / "clusters.yaml")
    ref = registry.get("a").credentials
    with pytest.raises(CredentialsError) as caught:
        ref.resolve()
    assert "cluster 'a': spec.credentials.tokenFile: cannot read" in str(caught.value)
    (tmp_path / "a.token").write_text(f"  {SECRET}\n")
    credentials = ref.resolve()
    assert credentials.token == SECRET
    assert SECRET not in repr(credentials) and SECRET not in repr(ref)


def test_a_token_file_is_bounded_and_never_quoted(tmp_path: Path) -> None:
    (tmp_path / "a.token").write_text(SECRET * (MAX_TOKEN_BYTES // len(SECRET) + 1))
    (tmp_path / "c.yaml").write_text(cluster(credentials="{tokenFile: a.token}"))
    with pytest.raises(CredentialsError) as caught:
        load_registry_file(tmp_path / "c.yaml").get("a").credentials.resolve()
    assert f"longer than {MAX_TOKEN_BYTES} bytes" in str(caught.value)
    assert SECRET not in str(caught.value)


def test_a_token_is_read_from_its_environment_variable() -> None:
    ref = load_registry(cluster(credentials="{tokenEnv: A_TOKEN, user: bob}")).get("a").credentials
    with pytest.raises(CredentialsError, match="A_TOKEN is not set or empty"):
        ref.resolve({})
    credentials = ref.resolve({"A_TOKEN": SECRET})
    assert (credentials.user, credentials.token) == ("bob", SECRET)


def test_the_registry_builds_each_members_adapter_without_quoting_its_token() -> None:
    text = (cluster("s", credentials="{tokenEnv: S_TOKEN}") + "---\n"
            + cluster("p", kind="openpai", credentials="{tokenEnv: P_TOKEN, user: alice}"))
    registry = load_registry(text)
    env = {"S_TOKEN": SECRET, "P_TOKEN": SECRET + "2"}
    shoal = registry.adapter("s", environ=env)
    pai = registry.adapter("p", environ=env)
    assert isinstance(shoal, ShoalMember) and isinstance(pai, OpenPaiMember)
    assert (shoal.alias, pai.alias) == ("s", "p")
    assert SECRET not in repr(shoal) + repr(pai)
    with pytest.raises(KeyError, match="no cluster 'x' in the registry \\(known: 's', 'p'\\)"):
        registry.get("x")
