"""The store's reads for metrics (`shoal.server.metrics`), made at every scrape and so kept to
one cheap query each: stored jobs counted by state (a grouped count the jobs' state index
serves)."""

from __future__ import annotations

from sqlalchemy import func, select

from shoal.api import JobState
from shoal.store.engine import Store
from shoal.store.models import JobRow


def job_counts(store: Store) -> dict[JobState, int]:
    """How many stored jobs are in each state (states with none are left out); jobs kept in
    history under an earlier name count too."""
    with store.reads.begin() as s:
        rows = s.execute(select(JobRow.state, func.count()).group_by(JobRow.state)).all()
    return {JobState(state): count for state, count in rows}
