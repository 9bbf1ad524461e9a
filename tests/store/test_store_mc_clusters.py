"""Member clusters declared through the API (issue 19), on SQLite and PostgreSQL: added in
order, an alias once, changed field by field (a token left out kept), removed — and a token
stored only sealed, never in plain text in the database."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import select

from shoal.api.federation import ClusterKind
from shoal.federation.directory import SealedCredentials, seal_token
from shoal.federation.registry import CredentialsError
from shoal.store import AlreadyExistsError, NotFoundError, Store
from shoal.store.federation_members import DeclaredMember, MemberChange, MemberRecords
from shoal.store.federation_secrets import key_box
from shoal.store.models import MemberClusterRow

TOKEN = "member-token-SECRET-9c1d"


def _member(alias: str, at: float, sealed: str | None = None) -> DeclaredMember:
    return DeclaredMember(alias=alias, uri=f"http://{alias}.example", kind=ClusterKind.SHOAL,
                          gpu_type="V100", priority=50, user="alice", sealed_token=sealed,
                          created=at, updated=at, updated_by="root")


def test_members_are_listed_in_declaration_order_and_survive_a_new_records_object(
        store: Store) -> None:
    records = MemberRecords(store)
    records.add_member(_member("zeta", 1.0))
    records.add_member(_member("alpha", 2.0))
    again = MemberRecords(store)  # a restart: nothing kept in memory
    assert [m.alias for m in again.list_members()] == ["zeta", "alpha"]
    got = again.get_member("alpha")
    assert got is not None and got.kind is ClusterKind.SHOAL and got.priority == 50
    assert again.get_member("nope") is None


def test_an_alias_is_declared_once(store: Store) -> None:
    records = MemberRecords(store)
    records.add_member(_member("big", 1.0))
    with pytest.raises(AlreadyExistsError, match="'big' already exists"):
        records.add_member(_member("big", 2.0))


def test_a_change_sets_only_what_it_names(store: Store, tmp_path: Path) -> None:
    box = key_box(tmp_path)
    records = MemberRecords(store)
    records.add_member(_member("big", 1.0, seal_token(box, TOKEN)))
    changed = records.change_member("big", MemberChange(priority=90), 5.0, "carol")
    assert (changed.priority, changed.uri, changed.gpu_type, changed.user) == (
        90, "http://big.example", "V100", "alice")
    assert (changed.updated, changed.updated_by, changed.created) == (5.0, "carol", 1.0)
    creds = SealedCredentials("big", changed.user, changed.sealed_token, box).resolve()
    assert creds.token == TOKEN  # a token left out is kept
    cleared = records.change_member("big", MemberChange(clear_gpu_type=True,
                                                        sealed_token=seal_token(box, "new")),
                                    6.0, "carol")
    assert cleared.gpu_type is None
    assert SealedCredentials("big", None, cleared.sealed_token, box).resolve().token == "new"
    with pytest.raises(NotFoundError, match="no cluster 'other'"):
        records.change_member("other", MemberChange(priority=1), 7.0, "carol")


def test_remove(store: Store) -> None:
    records = MemberRecords(store)
    records.add_member(_member("big", 1.0))
    records.remove_member("big")
    assert records.list_members() == []
    with pytest.raises(NotFoundError):
        records.remove_member("big")


def test_the_token_is_stored_sealed_never_in_plain_text(store: Store, tmp_path: Path) -> None:
    box = key_box(tmp_path)
    MemberRecords(store).add_member(_member("big", 1.0, seal_token(box, TOKEN)))
    with store.reads.begin() as s:
        row = s.scalars(select(MemberClusterRow)).one()
        assert row.sealed_token is not None and TOKEN not in row.sealed_token
    member = MemberRecords(store).get_member("big")
    assert member is not None and "sealed_token" not in repr(member)
    if store.url.startswith("sqlite"):
        db = Path(store.url.removeprefix("sqlite:///"))
        raw = b"".join(p.read_bytes() for p in db.parent.glob(db.name + "*"))
        assert b"big.example" in raw  # the check can fail: the file holds the row
        assert TOKEN.encode() not in raw


def test_a_token_sealed_with_another_key_is_named_not_shown(tmp_path: Path) -> None:
    (tmp_path / "old").mkdir()
    (tmp_path / "new").mkdir()
    sealed = seal_token(key_box(tmp_path / "old"), TOKEN)
    creds = SealedCredentials("big", "alice", sealed, key_box(tmp_path / "new"))
    with pytest.raises(CredentialsError, match=r"cluster 'big': spec\.credentials\.token: "
                                               r"sealed with another key") as caught:
        creds.resolve()
    assert TOKEN not in str(caught.value) and sealed not in repr(creds)
