"""One scheduling cycle: a snapshot (or a model kept between cycles) and a profile in,
decisions out. Pure."""

from __future__ import annotations

from shoal.api.decisions import Decisions
from shoal.core.snapshot import Snapshot
from shoal.scheduler.model import SchedulerModel
from shoal.scheduler.profile import Profile
from shoal.scheduler.session import Session


def run_cycle(snapshot: Snapshot | SchedulerModel, profile: Profile | None = None
              ) -> Decisions:
    """Run the profile's actions once over the snapshot — or over a model, whose binds
    then stay in it (`shoal.scheduler.model`) — and return what they decided."""
    profile = profile or Profile.default()
    session = Session(snapshot, profile.plugins())
    for action in profile.actions():
        action.execute(session)
    return session.close()
