"""The super scheduler as `shoal up` runs it (issue 19): the registry (the clusters file's
members and those admins declared through the API, `shoal.federation.directory`), the
multi-cluster jobs in the store, the secrets' key, and the dispatcher on its thread —
`Federation` is what the REST routes (`shoal.server.multicluster`, `shoal.server.mc_admin`)
are given.

A job runs under `DEFAULT_RETRIES`: a job whose kept copy fails or is lost is sent to every
member once more (round 1), then fails — one retry covers the common loss (a member
restarted, a node lost) without resending a job that fails by itself forever.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from shoal.federation.directory import MemberDirectory
from shoal.federation.dispatcher import SETTLE_S, AdapterFactory, Dispatcher
from shoal.federation.driver import DEFAULT_POLL_S, DispatchLoop
from shoal.federation.intake import take_in
from shoal.federation.lanes import MemberLanes
from shoal.federation.member_admin import MemberAdmin
from shoal.federation.members.http import DEFAULT_TIMEOUT_S
from shoal.federation.registry import ClusterRegistry
from shoal.spec.limits import DEFAULT_LIMITS, Limits
from shoal.store.engine import Store
from shoal.store.errors import NotFoundError
from shoal.store.federation import FederationRecords, McJob, NewMcJob
from shoal.store.federation_members import MemberRecords
from shoal.store.federation_secrets import SecretBox, key_box

DEFAULT_RETRIES = 1


class Federation:
    """What the super scheduler serves: submit, list, read, stop, logs, members."""

    def __init__(self, registry: ClusterRegistry, records: FederationRecords, box: SecretBox,
                 dispatcher: Dispatcher, *, clock: Callable[[], float] = time.time,
                 loop: DispatchLoop | None = None, retries: int = DEFAULT_RETRIES,
                 limits: Limits = DEFAULT_LIMITS, directory: MemberDirectory | None = None
                 ) -> None:
        """`directory`: members may be declared through the API (`admin`); without it the
        registry is `registry`, fixed."""
        self._registry = registry
        self.directory = directory
        self.admin = None if directory is None else MemberAdmin(directory, records, clock)
        self.records = records
        self.box = box
        self.dispatcher = dispatcher
        self.clock = clock
        self.loop = loop
        self.retries = retries
        self.limits = limits

    @classmethod
    def assemble(cls, registry: ClusterRegistry, store: Store, data_dir: Path, *,
                 clock: Callable[[], float] = time.time, adapters: AdapterFactory | None = None,
                 lanes: MemberLanes | None = None, settle_s: float = SETTLE_S,
                 timeout_s: float = DEFAULT_TIMEOUT_S, limits: Limits = DEFAULT_LIMITS,
                 loop_poll_s: float | None = None) -> Federation:
        """The super scheduler's parts over `store`: the key in `data_dir`, the members of
        `registry` and those declared through the API, and the dispatcher; with
        `loop_poll_s`, the dispatcher's thread too (not started)."""
        records = FederationRecords(store)
        box = key_box(data_dir)
        directory = MemberDirectory(registry, MemberRecords(store), box)
        dispatcher = Dispatcher(records, directory.current(), box, clock, adapters=adapters,
                                timeout_s=timeout_s, settle_s=settle_s, lanes=lanes,
                                directory=directory.current)
        loop = None if loop_poll_s is None else DispatchLoop(dispatcher, poll_s=loop_poll_s)
        return cls(registry, records, box, dispatcher, clock=clock, loop=loop, limits=limits,
                   directory=directory)

    @classmethod
    def start(cls, registry: ClusterRegistry, store: Store, data_dir: Path, *,
              poll_s: float = DEFAULT_POLL_S, timeout_s: float = DEFAULT_TIMEOUT_S,
              limits: Limits = DEFAULT_LIMITS) -> Federation:
        """The live super scheduler: the wall clock, the key in `data_dir`, the dispatcher's
        thread started (it resumes every job the store holds)."""
        federation = cls.assemble(registry, store, data_dir, timeout_s=timeout_s,
                                  limits=limits, loop_poll_s=poll_s)
        assert federation.loop is not None
        federation.loop.start()
        return federation

    @property
    def registry(self) -> ClusterRegistry:
        """The members now: the file's, then the API-declared ones."""
        return self._registry if self.directory is None else self.directory.current()

    def nudge(self) -> None:
        """Wake the dispatcher (a job was submitted or stopped, a member declared or
        changed)."""
        if self.loop is not None:
            self.loop.nudge()

    def close(self) -> None:
        if self.loop is not None:
            self.loop.stop()
        else:
            self.dispatcher.close()

    def submit(self, text: str, owner: str, *, limits: Limits | None = None) -> McJob:
        """Check and store a job (`SpecError` by field path, `AlreadyExistsError`), then
        wake the dispatcher."""
        intake = take_in(text, self.registry, limits=limits or self.limits)
        job = intake.job
        sealed = self.box.seal(intake.secrets) if intake.secrets else None
        stored = self.records.create_job(NewMcJob(
            job.name, owner, intake.document, job.policy, job.guard_time_running_s,
            job.time_scale_s, self.retries, sealed, self.clock()))
        self.nudge()
        return stored

    def get(self, name: str) -> McJob:
        job = self.records.get_job(name)
        if job is None:
            raise NotFoundError(f"no multi-cluster job {name!r}")
        return job

    def stop(self, name: str) -> McJob:
        job = self.records.request_stop(name, self.clock())
        self.nudge()
        return job
