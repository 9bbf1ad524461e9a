"""The suite's xdist schedule (`suite_schedule`): which tests share a worker, and that the
longest-first list names groups that exist (a renamed module would silently drop out of it)."""

from __future__ import annotations

from pathlib import Path

from suite_schedule import SHARED_FOLDERS, SLOWEST, group_of

TESTS = Path(__file__).resolve().parents[1]


def test_a_module_is_its_own_group_and_a_shared_folder_one_for_all_its_modules() -> None:
    assert group_of("tests/e2e/test_shoal_up.py::test_a[sqlite]") == "e2e/test_shoal_up.py"
    assert group_of("tests/e2e/test_shoal_up.py::Class::test_b") == "e2e/test_shoal_up.py"
    federation = {group_of(f"tests/integration/federation/{name}::test_x")
                  for name in ("test_slurm_member.py", "test_ray_member.py")}
    assert federation == {"integration/federation"}
    assert group_of("tests/integration/test_other.py::test_x") == "integration/test_other.py"


def test_every_listed_group_exists_once() -> None:
    assert len(set(SLOWEST)) == len(SLOWEST)
    for group in SLOWEST:
        path = TESTS / group
        assert path.is_dir() if group in SHARED_FOLDERS else path.is_file(), group
