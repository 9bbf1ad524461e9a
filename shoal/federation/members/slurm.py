"""A Slurm member cluster, through slurmrestd's REST API (openapi/v0.0.38, Slurm 22.05):
one copy is one batch job, named after the copy, in the member's own job id.

slurmrestd, not `sbatch`/`squeue`: a member cluster is remote, and slurmrestd is the one
interface Slurm serves over the network with a per-user credential (a JWT from
`scontrol token`, sent as `X-SLURM-USER-NAME` / `X-SLURM-USER-TOKEN`); the CLI would need
this machine inside the cluster's munge realm.

A copy's one role becomes the batch script (its commands, `set -e`); `instances` become
`tasks` (each instance runs the commands through `srun` when there are several), `gpu` GPUs
per instance become `gpus_per_task` (GRES `gpu`), `cpu` becomes `cpus_per_task` and
`memory_mib` is spread over the instance's CPUs as `memory_per_cpu`. The member's URI may
carry `?partition=P&workdir=DIR`: the job runs in `workdir` (default `/tmp`, present and
writable on every node) and writes its output to `<workdir>/<name>-<job id>.out`.

slurmctld forgets a finished job `MinJobAge` after it ends (300 s by default); without
accounting a later `status` is refused as an unknown job, so the dispatcher must poll faster
than that (it polls every few seconds). A copy's secrets are not sent: a Slurm job has no
secret store, and its environment is readable in `scontrol show job`.

A copy of several roles is refused: v0.0.38 takes a heterogeneous job (`jobs: [...]`), but
its one script would then have to start each role by `srun --het-group`, which is a launcher
of its own, not a submission; one role per copy is what the seed's jobs need.

slurmrestd answers a refusal from slurmctld (a bad token, an unknown job, a bad request) with
a 500 whose body lists Slurm's errors; such an answer is a refusal, not an outage, unless
those errors say slurmctld could not be reached — or say nothing ("Unspecified error", all a
read gets from 22.05 whether slurmctld is down or refused the token), which is taken as an
outage: retried, never a reason to give up on a copy.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import shlex
import time
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any
from urllib.parse import parse_qs, urlsplit, urlunsplit

import httpx

from shoal.api.federation import CopyRequest, CopyState, MemberCluster, RoleRequest
from shoal.federation.members.commands import only_role, script_of
from shoal.federation.members.contract import (
    MAX_LOG_BYTES,
    MemberCredentials,
    MemberRefusedError,
    MemberUnavailableError,
    RemoteStatus,
)
from shoal.federation.members.http import DEFAULT_TIMEOUT_S, MAX_ERROR_CHARS, MemberHttp

API = "/slurm/v0.0.38"
DEFAULT_WORKDIR = "/tmp"
JOB_PATH = "/usr/local/bin:/usr/bin:/bin"
"""The `PATH` a copy's script starts with: v0.0.38 requires an environment, and the
submitting side's own would mean nothing on the member."""

#: Slurm's own state names (`job_state_string()`, flags first) onto a copy's states.
#: COMPLETING, STAGE_OUT and SIGNALING jobs still hold their nodes, and a SUSPENDED or
#: STOPPED (SIGSTOP) one keeps its allocation and resumes: all RUNNING, as OpenPAI keeps a
#: STOPPING job RUNNING until it has stopped. A REVOKED job ran on a federation sibling.
STATES: Mapping[str, CopyState] = {
    **dict.fromkeys(("PENDING", "CONFIGURING", "REQUEUED", "REQUEUE_FED", "REQUEUE_HOLD",
                     "RESV_DEL_HOLD", "SPECIAL_EXIT"), CopyState.WAITING),
    **dict.fromkeys(("RUNNING", "COMPLETING", "STAGE_OUT", "SIGNALING", "RESIZING",
                     "SUSPENDED", "STOPPED"), CopyState.RUNNING),
    "COMPLETED": CopyState.SUCCEEDED,
    **dict.fromkeys(("FAILED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY", "BOOT_FAIL",
                     "DEADLINE"), CopyState.FAILED),
    **dict.fromkeys(("CANCELLED", "PREEMPTED", "REVOKED"), CopyState.STOPPED),
}

#: Slurm errors that mean slurmctld was not reached (SLURM_COMMUNICATIONS_*_ERROR,
#: SLURMCTLD_COMMUNICATIONS_*_ERROR — what a submit meets with slurmctld down —,
#: SLURM_PROTOCOL_SOCKET_IMPL_TIMEOUT, ESLURM_IN_STANDBY_MODE): the member is down.
UNREACHABLE_ERRORS = frozenset({1001, 1002, 1003, 1004, 1800, 1801, 1802, 1803, 5004, 2050})
UNSPECIFIED = -1
"""What slurmrestd 22.05 says when a read (`job/{id}`, `jobs`, `ping`) failed for *either*
reason: slurmctld down, or slurmctld turning the token away. Read as an outage: the
dispatcher retries it and reports the member, where a refusal would give up on a copy that
may still be running."""
ZERO_BYTES = 5005
"""SLURM_PROTOCOL_SOCKET_ZERO_BYTES_SENT: slurmctld took the connection and closed it
unanswered, which is how it turns away a JWT it rejects (forged, expired, another user's):
a refusal, said so."""
INVALID_JOB_ID = 2017
"""ESLURM_INVALID_JOB_ID: slurmctld has no such job (never had, or purged it after
`MinJobAge`)."""


class SlurmMember:
    """A Slurm cluster behind slurmrestd, as a `MemberAdapter`."""

    def __init__(self, member: MemberCluster, credentials: MemberCredentials, *,
                 timeout_s: float = DEFAULT_TIMEOUT_S,
                 transport: httpx.BaseTransport | None = None) -> None:
        if not credentials.user or not credentials.token:
            raise ValueError(f"cluster {member.alias!r}: a slurm member needs a user and a "
                             "token (a JWT from `scontrol token`)")
        parts = urlsplit(member.uri)
        query = {key: values[-1] for key, values in parse_qs(parts.query).items()}
        unknown = sorted(set(query) - {"partition", "workdir"})
        if unknown:
            raise ValueError(f"cluster {member.alias!r}: uri: unknown parameter "
                             f"{unknown[0]!r} (a slurm member takes partition and workdir)")
        self._member = member
        self._user = credentials.user
        self._expires_at = _token_expiry(member.alias, credentials.user, credentials.token)
        self._partition = query.get("partition")
        self._workdir = query.get("workdir", DEFAULT_WORKDIR)
        base = urlunsplit((parts.scheme, parts.netloc, parts.path.rstrip("/"), "", ""))
        self._http = MemberHttp(member.alias, base + API, timeout_s=timeout_s,
                                transport=transport,
                                headers={"X-SLURM-USER-NAME": credentials.user,
                                         "X-SLURM-USER-TOKEN": credentials.token})

    @property
    def alias(self) -> str:
        return self._member.alias

    def submit(self, request: CopyRequest) -> str:
        role = only_role(self.alias, request, engine="slurm",
                         why="a batch job is one script (see shoal.federation.members.slurm)")
        body = {"script": self._script(role), "job": self._job(request.name, role)}
        said = self._call("POST", "/job/submit", json=body)
        job_id = said.get("job_id")
        if not isinstance(job_id, int):
            raise MemberRefusedError(self.alias, f"submit of {request.name!r}: no job id in "
                                                 "the answer")
        return str(job_id)

    def status(self, remote_id: str) -> RemoteStatus:
        job = self._job_record(remote_id)
        member_state = str(job.get("job_state", ""))
        state = STATES.get(member_state)
        if state is None:
            raise MemberRefusedError(self.alias, f"job {remote_id}: unknown job_state "
                                                 f"{member_state[:40]!r}")
        start = job.get("start_time")
        # A pending job's start_time is Slurm's forecast, not a start.
        started = (datetime.fromtimestamp(start, UTC)
                   if state is not CopyState.WAITING and isinstance(start, int) and start > 0
                   else None)
        reason = str(job.get("state_reason") or "")
        return RemoteStatus(state, member_state, started,
                            "" if reason in ("", "None") else reason)

    def cancel(self, remote_id: str) -> None:
        # Slurm answers a cancel of a finished job with success, and of a purged one with
        # "invalid job id": either way nothing of it runs.
        self._call("DELETE", f"/job/{_job_id(self.alias, remote_id)}",
                   ok_errors=frozenset({INVALID_JOB_ID}))

    def find(self, name: str) -> str | None:
        jobs = self._call("GET", "/jobs").get("jobs", [])
        ids = [job["job_id"] for job in jobs
               if isinstance(job, dict) and job.get("name") == name
               and job.get("user_name") == self._user and isinstance(job.get("job_id"), int)]
        return str(max(ids)) if ids else None

    def logs(self, remote_id: str, *, limit_bytes: int = MAX_LOG_BYTES) -> str:
        job = self._job_record(remote_id)
        path = _output_path(str(job.get("standard_output") or ""), job, remote_id)
        text = (f"slurmrestd serves no job output: job {remote_id}'s output is in {path} on "
                f"cluster {self.alias!r}\n")
        return text.encode()[-limit_bytes:].decode(errors="ignore")

    def close(self) -> None:
        self._http.close()

    def _script(self, role: RoleRequest) -> str:
        if role.instances == 1:
            return "#!/bin/sh\n" + script_of(role)
        # Each instance runs the commands: the batch script starts them as one step.
        return f"#!/bin/sh\nexec srun /bin/sh -c {shlex.quote(script_of(role))}\n"

    def _job(self, name: str, role: RoleRequest) -> dict[str, Any]:
        job: dict[str, Any] = {
            "name": name,
            "tasks": role.instances,
            "cpus_per_task": role.cpu,
            "memory_per_cpu": math.ceil(role.memory_mib / max(role.cpu, 1)),
            "current_working_directory": self._workdir,
            "standard_output": f"{self._workdir.rstrip('/')}/%x-%j.out",
            "environment": {"PATH": JOB_PATH, **dict(role.env)},
        }
        if role.gpu:
            job["gpus_per_task"] = role.gpu
        if self._partition:
            job["partition"] = self._partition
        return job

    def _job_record(self, remote_id: str) -> dict[str, Any]:
        jobs = self._call("GET", f"/job/{_job_id(self.alias, remote_id)}").get("jobs", [])
        if not jobs or not isinstance(jobs[0], dict):
            raise MemberRefusedError(self.alias, f"job {remote_id}: no such job")
        return jobs[0]

    def _call(self, method: str, path: str, *, ok_errors: frozenset[int] = frozenset(),
              **kwargs: Any) -> dict[str, Any]:
        """One slurmrestd call; its answer, after Slurm's own errors in it are judged."""
        if self._expires_at is not None and time.time() >= self._expires_at:
            # slurmctld would turn it away with an error that does not say why.
            raise MemberRefusedError(self.alias, f"{method} {path}: the token for "
                                                 f"{self._user!r} has expired; make a new one "
                                                 "(`scontrol token`)")
        response = self._http.request(method, path, ok_statuses=frozenset({500}), **kwargs)
        try:
            said = response.json()
        except ValueError:
            said = None
        if not isinstance(said, dict):
            if response.status_code >= 500:
                raise MemberUnavailableError(self.alias, f"{method} {path}: server error "
                                                         f"{response.status_code}")
            raise MemberRefusedError(self.alias, f"{method} {path}: not a slurmrestd answer")
        errors = [e for e in said.get("errors") or [] if isinstance(e, dict)]
        numbers = {e.get("error_number", e.get("error_code")) for e in errors}
        if not errors or numbers <= ok_errors:
            return said
        reason = _errors_text(errors)
        if ZERO_BYTES in numbers:
            reason += " (slurmctld turned the request away: is the token valid?)"
        if UNSPECIFIED in numbers:
            raise MemberUnavailableError(
                self.alias, f"{method} {path}: {reason} (slurmctld did not answer, or turned "
                            "the token away: slurmrestd 22.05 does not say which)")
        if numbers & UNREACHABLE_ERRORS:
            raise MemberUnavailableError(self.alias, f"{method} {path}: {reason}")
        raise MemberRefusedError(self.alias, f"{method} {path}: refused: {reason}")


def _token_expiry(alias: str, user: str, token: str) -> float | None:
    """When a Slurm JWT expires (its `exp`), after checking it names `user` (`sun`): both
    read without the key, since slurmctld answers an expired token or another user's with
    an error that does not say so. A token that is not a readable JWT is left to slurmctld."""
    parts = token.split(".")
    if len(parts) != 3:
        return None
    try:
        claims = json.loads(base64.urlsafe_b64decode(parts[1] + "=" * (-len(parts[1]) % 4)))
    except (ValueError, binascii.Error):
        return None
    if not isinstance(claims, dict):
        return None
    named = claims.get("sun")
    if isinstance(named, str) and named != user:
        raise ValueError(f"cluster {alias!r}: credentials: the token is for user {named!r}, "
                         f"not {user!r}")
    expiry = claims.get("exp")
    return float(expiry) if isinstance(expiry, int | float) else None


def _job_id(alias: str, remote_id: str) -> int:
    if not remote_id.isdigit():
        raise MemberRefusedError(alias, f"{remote_id[:40]!r} is not a Slurm job id")
    return int(remote_id)


def _errors_text(errors: list[dict[str, Any]]) -> str:
    text = "; ".join(
        " ".join(str(e[key]) for key in ("description", "error") if e.get(key))
        for e in errors)
    return text[:MAX_ERROR_CHARS] + ("…" if len(text) > MAX_ERROR_CHARS else "")


def _output_path(pattern: str, job: Mapping[str, Any], remote_id: str) -> str:
    """The output file as the job sees it: Slurm's `%j` (job id) and `%x` (name)."""
    return (pattern.replace("%j", remote_id).replace("%x", str(job.get("name", "")))
            or "the job's working directory (slurm-<id>.out)")
