"""`private_dirs`, which every launch runs for its attempt's and its logs' directories: the
directory and its parents up to the engine's root are made 0700, nothing above the root is
touched, and a directory outside the root is made private alone."""

from __future__ import annotations

from pathlib import Path

from shoal.executors.processes import private_dirs


def _mode(path: Path) -> int:
    return path.stat().st_mode & 0o777


def test_a_directory_and_its_parents_up_to_the_root_are_private(tmp_path: Path) -> None:
    above = tmp_path / "above"
    root = above / "root"
    path = root / "tasks" / "job" / "worker-0" / "attempt-1"
    root.mkdir(parents=True, mode=0o755)
    above.chmod(0o755)
    (root / "tasks").mkdir(mode=0o755)
    root.chmod(0o751)
    private_dirs(root, path)
    assert [_mode(d) for d in (path, *path.parents[:4])] == [0o700] * 5
    assert path.parents[3] == root
    assert _mode(above) == 0o755  # above the root: not ours to change
    private_dirs(root, path)  # again, on directories that exist: nothing changes
    assert _mode(path) == _mode(root) == 0o700 and _mode(above) == 0o755


def test_a_directory_outside_the_root_is_made_private_alone(tmp_path: Path) -> None:
    root = tmp_path / "root"
    outside = tmp_path / "elsewhere" / "logs"
    (tmp_path / "elsewhere").mkdir(mode=0o755)
    tmp_path.chmod(0o755)
    private_dirs(root, outside)
    assert _mode(outside) == 0o700
    assert _mode(outside.parent) == _mode(tmp_path) == 0o755
    assert not root.exists()
