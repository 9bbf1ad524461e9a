"""Profiles and registries: names resolved, duplicates and unknowns refused, args checked."""

from pathlib import Path

import pytest

from shoal.scheduler import ACTIONS, PLUGINS, Profile, ProfileError
from shoal.scheduler.plugins.gang import Gang, GangArguments
from shoal.scheduler.registry import DuplicateNameError


def test_builtin_profiles_load() -> None:
    for name, first, last in (("default", ["services"], ["elastic"]),
                              ("strict-fifo", [], []), ("spread", [], [])):
        profile = Profile.load(name)
        assert profile.name == name
        assert [a.name for a in profile.actions()] == [*first, "enqueue", "allocate",
                                                       "backfill", *last]


def test_registry_refuses_duplicate_names() -> None:
    Profile.default()  # registers the built-ins
    with pytest.raises(DuplicateNameError, match="gang"):
        PLUGINS.register("gang", GangArguments, Gang)
    assert "allocate" in ACTIONS.names()


def test_actions_accept_comma_string_or_list() -> None:
    p = Profile.from_dict({"actions": ["enqueue", "allocate"], "tiers": []})
    assert [a.name for a in p.actions()] == ["enqueue", "allocate"]


@pytest.mark.parametrize(("doc", "message"), [
    ({"actions": "enqueue, nosuch"}, "actions[1]: unknown action 'nosuch'"),
    ({"actions": "allocate", "tiers": [{"plugins": [{"name": "gang"}, {"name": "gang"}]}]},
     "tiers[0].plugins[1].name: plugin 'gang' is listed twice"),
    ({"actions": "allocate", "tiers": [{"plugins": [{"name": "nope"}]}]},
     "unknown plugin 'nope'"),
    ({"actions": "allocate", "tiers": [{"plugins": [
        {"name": "placement", "arguments": {"strategy": "diagonal"}}]}]}, "strategy"),
    ({"actions": "allocate", "tiers": [{"plugins": [
        {"name": "gang", "arguments": {"bogus": 1}}]}]}, "bogus"),
    ({"actions": "allocate", "configurations": [{"name": "backfill"}]},
     "configurations[0].name: 'backfill' is not in actions"),
    ({"actions": "allocate", "extra": 1}, "extra"),
])
def test_bad_profiles_name_the_field(doc: dict[str, object], message: str) -> None:
    with pytest.raises(ProfileError, match=None) as info:
        Profile.from_dict(doc)
    assert message in str(info.value)


def test_unknown_profile_name() -> None:
    with pytest.raises(ProfileError, match="built-in"):
        Profile.load("no-such-profile")


def test_profile_files_are_read_at_the_edge(tmp_path: Path) -> None:
    from shoal.cli.profiles import load_profile

    path = tmp_path / "mine.yaml"
    path.write_text("name: mine\nactions: allocate\ntiers: [{plugins: [{name: gang}]}]\n")
    assert load_profile(str(path)).name == "mine"
    assert load_profile("spread").name == "spread"
    with pytest.raises(ProfileError, match="no such file"):
        load_profile(str(tmp_path / "absent.yaml"))
    with pytest.raises(ProfileError, match="built-in"):
        Profile.load(str(path))  # the scheduler itself reads no files
