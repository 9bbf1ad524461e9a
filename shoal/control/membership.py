"""An elastic or multi-role job's membership file: which of its tasks run now, where each is
reached, and its world size.

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

Where the file lives, and how it reaches the nodes, is the executor's call (its job files:
`job_file`, `write_job_file`, `remove_job_file` in `shoal.executors.contract`): tasks that
run as their own OS user cannot enter the server's data directory, so theirs is where only
their job's OS user can read it (the local executor's `job_file`), and an engine whose tasks
run on other machines writes it on each of them at the same path.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from shoal.api import Job
from shoal.control.endpoints import Endpoints
from shoal.control.launching import rank_of, world_size
from shoal.executors.contract import Executor
from shoal.scheduler.jobs import JobInfo
from shoal.scheduler.model import SchedulerModel

#: The variable that tells an elastic job's tasks where their job's membership file is.
MEMBERSHIP_ENV = "SHOAL_MEMBERSHIP_FILE"
#: The executor's kind of job file.
KIND = "membership"


def has_file(job: Job) -> bool:
    """Whether the job's tasks get a membership file: an elastic job, or one of several
    roles (task groups), whose tasks look up each other's endpoints in it."""
    return job.elastic is not None or len(job.groups) > 1


class Membership:
    """The membership files of the elastic and multi-role jobs of one control plane, kept
    by its executor; `endpoints`: where each task is reached, listed in the files."""

    def __init__(self, files: Executor, endpoints: Endpoints | None = None) -> None:
        self._files = files
        self._endpoints = endpoints
        self._paths: dict[str, Path] = {}
        self._written: dict[str, tuple[int, tuple[tuple[str, int, str], ...]]] = {}
        """Per job: the version last written and the members it listed."""

    def path(self, job: str, user: str | None = None) -> Path:
        known = self._paths.get(job)
        if known is None:
            known = self._files.job_file(KIND, job, user)
            self._paths[job] = known
        return known

    def env(self, info: JobInfo) -> dict[str, str]:
        """What an elastic or multi-role job's task is told about the file (nothing for
        a rigid job of one task group)."""
        return {} if not has_file(info.job) \
            else {MEMBERSHIP_ENV: str(self.path(info.name, info.job.user))}

    def refresh(self, model: SchedulerModel) -> None:
        """Rewrite the file of every elastic or multi-role job whose placed tasks changed
        since the last write, and remove those of jobs that left the model."""
        for name, info in model.jobs.items():
            if not has_file(info.job):
                continue
            members = tuple(sorted((t.ref.group, t.ref.index, model.node(t.node).physical.name)
                                   for t in info.running))
            version, last = self._written.get(name, (0, None))
            if members != last:
                self._write(model, info, members, version + 1)
        for name in [n for n in self._written if n not in model.jobs]:
            self.forget(name)

    def forget(self, job: str) -> None:
        self._written.pop(job, None)
        self._paths.pop(job, None)
        self._files.remove_job_file(KIND, job)

    def _write(self, model: SchedulerModel, info: JobInfo,
               members: tuple[tuple[str, int, str], ...], version: int) -> None:
        job, elastic = info.job, info.job.elastic
        size = None if elastic is None else info.elastic_size()
        replicas = {g.name: size if elastic is not None and size is not None
                    and g.name == elastic.group else g.replicas for g in job.groups}
        document: dict[str, Any] = {
            "job": job.name, "version": version, "worldSize": world_size(job, size),
            "elasticGroup": None if elastic is None else elastic.group, "replicas": replicas,
            "members": [{"group": g, "index": i, "rank": rank_of(job, g, i, size), "node": n}
                        for g, i, n in members]}
        if self._endpoints is not None:
            endpoints = self._endpoints.of_job(model, info)
            where = {(g, i): e for g, placed in endpoints.items() for i, e in placed}
            for member in document["members"]:
                member["endpoint"] = where[(member["group"], member["index"])]
            document["endpoints"] = {g: [e for _, e in placed]
                                     for g, placed in endpoints.items()}
        self._paths[job.name] = self._files.write_job_file(
            KIND, job.name, job.user, (json.dumps(document, indent=1) + "\n").encode())
        self._written[job.name] = (version, members)
