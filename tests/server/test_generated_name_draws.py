"""A generated name that is taken is drawn again, up to GENERATE_TRIES times (then 409); a
name the user gave is never redrawn."""

from __future__ import annotations

import pytest

from shoal.api import Job, Resources, TaskGroup, VirtualCluster
from shoal.api.objects import job_virtual_cluster
from shoal.server.jobs import GENERATE_TRIES, submit_named
from shoal.store import AlreadyExistsError


class Taken:
    """A scheduler whose first `clashes` submissions find the name taken."""

    def __init__(self, clashes: int) -> None:
        self.clashes = clashes
        self.tried: list[tuple[str, str | None, str | None]] = []

    def submit(self, job: Job, idempotency_key: str | None, *, wake: bool = True,
               generated_from: str | None = None, original: object = None
               ) -> tuple[Job, bool]:
        own = job.virtual_cluster
        self.tried.append((job.name, generated_from, None if own is None else own.name))
        if len(self.tried) <= self.clashes:
            raise AlreadyExistsError(f"job {job.name!r} exists already")
        return job, True


def job(name: str) -> Job:
    return Job(name, (TaskGroup("w", 1, Resources.of(cpu=100), command=("true",)),),
               virtual_cluster=VirtualCluster(job_virtual_cluster(name), parent="default"))


def test_a_taken_generated_name_is_drawn_again() -> None:
    scheduler = Taken(clashes=2)
    saved, created = submit_named(scheduler, job("gen-bbbbb"), "gen-", "key")  # type: ignore[arg-type]
    assert created and len(scheduler.tried) == 3
    names = [name for name, _, _ in scheduler.tried]
    assert len(set(names)) == 3 and all(n.startswith("gen-") for n in names)
    # Its own virtual cluster follows its name; the prefix goes with every try.
    assert all(vc == job_virtual_cluster(n) and p == "gen-" for n, p, vc in scheduler.tried)
    assert saved.name == names[-1]


def test_drawing_gives_up_after_so_many_tries() -> None:
    scheduler = Taken(clashes=GENERATE_TRIES)
    with pytest.raises(AlreadyExistsError):
        submit_named(scheduler, job("gen-bbbbb"), "gen-", None)  # type: ignore[arg-type]
    assert len(scheduler.tried) == GENERATE_TRIES


def test_a_given_name_is_never_redrawn() -> None:
    scheduler = Taken(clashes=1)
    with pytest.raises(AlreadyExistsError):
        submit_named(scheduler, job("mine"), None, None)  # type: ignore[arg-type]
    assert scheduler.tried == [("mine", None, job_virtual_cluster("mine"))]
