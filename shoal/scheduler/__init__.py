"""Shoal's scheduler: profiles of actions and plugins run over a snapshot, Volcano-style.
`run_cycle(snapshot, profile)` is the whole public surface the drivers need."""

from shoal.scheduler.cycle import run_cycle
from shoal.scheduler.profile import ACTIONS, PLUGINS, Profile, ProfileError

__all__ = ["ACTIONS", "PLUGINS", "Profile", "ProfileError", "run_cycle"]
