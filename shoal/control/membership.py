"""A job's membership file: which of its tasks run now and where each is reached (elastic
and multi-role jobs), its world size (elastic jobs), and the notice of an eviction under way
(every job).

Seed 001's elastic jobs change size while they run. A task learns the world size through its
environment when it (re)starts (`WORLD_SIZE`, `SHOAL_WORLD_SIZE`: the size the job has with
it placed), and while it runs through this file, whose path every task of an elastic job
gets as `SHOAL_MEMBERSHIP_FILE`. The file is rewritten atomically (write, then rename)
whenever the job's set of placed tasks changes, with a `version` that grows by one each
time; a task that polls it sees every size the job passes through. A framework with its own
rendezvous (torchrun's c10d backend, Horovod's elastic driver) needs no file: its agents
meet in the rendezvous. The file serves scripts that scale their own way (a data loader
resharding, a parameter server).

The document (JSON)::

    {"job": "bert", "version": 3, "worldSize": 4,
     "elasticGroup": "worker", "replicas": {"worker": 4},
     "members": [{"group": "worker", "index": 0, "rank": 0, "node": "local",
                  "endpoint": "127.0.0.1:41234"}, ...],
     "endpoints": {"worker": ["127.0.0.1:41234", ...]}}

`members` are the tasks placed now (bound or running), ranked as their launch is
(`shoal.control.launching.rank_of`); tasks being stopped after an eviction are not members.
`endpoints` lists, per task group (every one, even with none placed), the `host:port` of
its placed tasks by index, and each member its own (`shoal.control.endpoints`): seed 002's
trainers find the parameter servers there, and follow them as they come and go. A job of
several task groups that is not elastic gets the file too (`elasticGroup` null), for them.

Preemption notice (issue 17). When a cycle evicts tasks of a job — preempted, reclaimed,
shrunk —, the file gets a `notice` *before* any of them is signalled: why, by when it must
be done (its SIGTERM comes now, SIGKILL at `deadline`, epoch seconds: now + the control
plane's `--grace-period`), and which of its tasks go::

    "notice": {"reason": "preempted for job 'urgent', which ranks ahead of it in virtual
               cluster 'default'", "deadline": 1764120000.5,
               "tasks": [{"group": "worker", "index": 2}, ...]}

A task that traps SIGTERM reads it to know whether it is being taken (and why) or the job
is stopping, and checkpoints before the deadline. So that any job's tasks can read it,
every task gets `SHOAL_MEMBERSHIP_FILE`; the file of a job that is neither elastic nor of
several task groups exists only while it holds a notice and carries no `members`,
`worldSize` nor `replicas` (`{"job", "version", "notice"}`). The notice stays until the
job's tasks are placed again (then the file is rewritten without it, or such a job's is
removed) or another notice
replaces it. Several evictions of one job in one cycle make one notice: the first one's
reason, every task.

Where the file lives, and how it reaches the nodes, is the executor's call (its job files:
`job_file`, `write_job_file`, `remove_job_file` in `shoal.executors.contract`): tasks that
run as their own OS user cannot enter the server's data directory, so theirs is where only
their job's OS user can read it (the local executor's `job_file`), and an engine whose tasks
run on other machines writes it on each of them at the same path.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from shoal.api import Job
from shoal.api.decisions import Evict
from shoal.control.endpoints import Endpoints
from shoal.control.launching import rank_of, world_size
from shoal.executors.contract import Executor
from shoal.scheduler.jobs import JobInfo
from shoal.scheduler.model import SchedulerModel

#: The variable that tells a job's tasks where their job's membership file is.
MEMBERSHIP_ENV = "SHOAL_MEMBERSHIP_FILE"
#: The executor's kind of job file.
KIND = "membership"


Members = tuple[tuple[str, int, str], ...]
"""(group, index, node) of each task placed now, sorted."""


def has_file(job: Job) -> bool:
    """Whether the job's file lists its members all the time: an elastic job, or one of
    several roles (task groups), whose tasks look up each other's endpoints in it. Any other
    job's file exists only while it holds a notice."""
    return job.elastic is not None or len(job.groups) > 1


@dataclass(frozen=True, slots=True)
class Notice:
    """An eviction under way, as its job's tasks read it (the module's text)."""

    reason: str
    deadline: float
    """Epoch seconds: when the evicted tasks are killed if still running."""
    tasks: tuple[tuple[str, int], ...]
    """(group, index) of the tasks being evicted."""

    def to_json(self) -> dict[str, Any]:
        return {"reason": self.reason, "deadline": self.deadline,
                "tasks": [{"group": g, "index": i} for g, i in self.tasks]}


class Membership:
    """The membership files of the jobs of one control plane, kept by its executor;
    `endpoints`: where each task is reached, listed in the files."""

    def __init__(self, files: Executor, endpoints: Endpoints | None = None) -> None:
        self._files = files
        self._endpoints = endpoints
        self._paths: dict[str, Path] = {}
        self._written: dict[str, tuple[int, Members]] = {}
        """Per job: the version last written and the members it listed."""
        self._notices: dict[str, Notice] = {}
        """Per job: the notice its file carries."""

    def path(self, job: str, user: str | None = None) -> Path:
        known = self._paths.get(job)
        if known is None:
            known = self._files.job_file(KIND, job, user)
            self._paths[job] = known
        return known

    def env(self, info: JobInfo) -> dict[str, str]:
        """What a job's task is told about the file: every job's, for the notice."""
        return {MEMBERSHIP_ENV: str(self.path(info.name, info.job.user))}

    def notify(self, model: SchedulerModel, evictions: Sequence[Evict], deadline: float
               ) -> None:
        """Write the notice of this cycle's `evictions` into their jobs' files, before
        their tasks are signalled (`model`: after the cycle, without the evicted tasks)."""
        by_job: dict[str, list[Evict]] = {}
        for evict in evictions:
            by_job.setdefault(evict.task.job, []).append(evict)
        for name, evicts in by_job.items():
            info = model.jobs.get(name)
            if info is None:
                continue
            self._notices[name] = Notice(evicts[0].reason, deadline, tuple(
                sorted((e.task.group, e.task.index) for e in evicts)))
            self._write(model, info, _members(model, info),
                        self._written.get(name, (0, ()))[0] + 1)

    def refresh(self, model: SchedulerModel) -> None:
        """Rewrite the file of every job whose placed tasks changed since the last write —
        every elastic or multi-role job, and any job with a notice (dropped once a task is
        placed again) —, and remove those of jobs that left the model."""
        for name, info in model.jobs.items():
            if not has_file(info.job) and name not in self._written:
                continue
            members = _members(model, info)
            version, last = self._written.get(name, (0, None))
            if members == last:
                continue
            if last is not None and not set(members) <= set(last):
                self._notices.pop(name, None)  # placed again: the eviction is over
            if not has_file(info.job) and name not in self._notices:
                self.forget(name)
            else:
                self._write(model, info, members, version + 1)
        for name in [n for n in self._written if n not in model.jobs]:
            self.forget(name)

    def forget(self, job: str) -> None:
        self._written.pop(job, None)
        self._paths.pop(job, None)
        self._notices.pop(job, None)
        self._files.remove_job_file(KIND, job)

    def _write(self, model: SchedulerModel, info: JobInfo, members: Members,
               version: int) -> None:
        job, elastic = info.job, info.job.elastic
        document: dict[str, Any] = {"job": job.name, "version": version}
        if has_file(job):
            size = None if elastic is None else info.elastic_size()
            replicas = {g.name: size if elastic is not None and size is not None
                        and g.name == elastic.group else g.replicas for g in job.groups}
            document |= {
                "worldSize": world_size(job, size),
                "elasticGroup": None if elastic is None else elastic.group,
                "replicas": replicas,
                "members": [{"group": g, "index": i, "rank": rank_of(job, g, i, size),
                             "node": n} for g, i, n in members]}
            if self._endpoints is not None:
                endpoints = self._endpoints.of_job(model, info)
                where = {(g, i): e for g, placed in endpoints.items() for i, e in placed}
                for member in document["members"]:
                    member["endpoint"] = where[(member["group"], member["index"])]
                document["endpoints"] = {g: [e for _, e in placed]
                                         for g, placed in endpoints.items()}
        notice = self._notices.get(job.name)
        if notice is not None:
            document["notice"] = notice.to_json()
        self._paths[job.name] = self._files.write_job_file(
            KIND, job.name, job.user, (json.dumps(document, indent=1) + "\n").encode())
        self._written[job.name] = (version, members)


def _members(model: SchedulerModel, info: JobInfo) -> Members:
    return tuple(sorted((t.ref.group, t.ref.index, model.node(t.node).physical.name)
                        for t in info.running))
