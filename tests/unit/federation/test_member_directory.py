"""The registry the dispatcher reads (issue 19): the clusters file's members first, then the
API-declared ones in declaration order; an alias declared in both (declared before a restart
with another file) yields to the file's, said once in the log."""

from __future__ import annotations

import logging
import textwrap
from pathlib import Path

import pytest

from shoal.api.federation import ClusterKind
from shoal.federation.directory import MemberDirectory, SealedCredentials, seal_token
from shoal.federation.registry import CredentialsRef, load_registry
from shoal.store import Store
from shoal.store.federation_members import DeclaredMember, MemberRecords
from shoal.store.federation_secrets import key_box


def _declared(alias: str, at: float, sealed: str) -> DeclaredMember:
    return DeclaredMember(alias=alias, uri=f"http://{alias}.api", kind=ClusterKind.SLURM,
                          gpu_type=None, priority=5, user="bob", sealed_token=sealed,
                          created=at, updated=at, updated_by="root")


def test_file_members_first_then_declared_ones_the_file_wins_a_shared_alias(
        store: Store, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    box = key_box(tmp_path)
    registry = load_registry(textwrap.dedent("""\
        apiVersion: shoal/v1
        kind: Cluster
        metadata: {name: big}
        spec: {uri: 'http://big.example', kind: shoal}
        """))
    records = MemberRecords(store)
    records.add_member(_declared("zz", 1.0, seal_token(box, "tok-zz")))
    records.add_member(_declared("big", 2.0, seal_token(box, "tok-big")))
    records.add_member(_declared("aa", 3.0, seal_token(box, "tok-aa")))
    directory = MemberDirectory(registry, records, box)
    with caplog.at_level(logging.WARNING):
        current = directory.current()
        assert directory.current() == current  # read again: equal, so no rebuild
    assert [m.alias for m in current.members] == ["big", "zz", "aa"]
    assert current.get("big").member.uri == "http://big.example"
    assert isinstance(current.get("big").credentials, CredentialsRef)
    creds = current.get("zz").credentials
    assert isinstance(creds, SealedCredentials)
    assert creds.resolve().token == "tok-zz" and creds.resolve().user == "bob"
    assert "tok-zz" not in repr(current)
    shadowed = [r for r in caplog.records if "declared both" in r.getMessage()]
    assert len(shadowed) == 1 and "'big'" in shadowed[0].getMessage()
    assert directory.in_file("big") and not directory.in_file("zz")
