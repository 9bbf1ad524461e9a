"""Profiles as users name them on the command line: a built-in name or a YAML file."""

from __future__ import annotations

from pathlib import Path

from shoal.scheduler.profile import BUILTIN_PROFILES, Profile, ProfileError


def load_profile(name_or_path: str) -> Profile:
    """A built-in profile by name, or a profile file."""
    if name_or_path in BUILTIN_PROFILES:
        return Profile.load(name_or_path)
    path = Path(name_or_path)
    if not path.is_file():
        raise ProfileError(f"no built-in profile {name_or_path!r} (built-in: "
                           f"{', '.join(sorted(BUILTIN_PROFILES))}) and no such file")
    return Profile.from_yaml(path.read_text(encoding="utf-8"), str(path))
