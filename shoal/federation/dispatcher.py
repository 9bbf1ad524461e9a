"""The durable multi-cluster dispatcher (issue 19, seed 000): drives the pure dispatch
policy (`shoal.federation.dispatch.decide`) against real member clusters, every decision
stored before it is acted on, so that a `kill -9` at any point and a restart never leave an
orphan copy running, never keep two copies past the guard window, never lose the job.

One pass, `step(now)`, over the jobs not yet ended:

1. **Decide.** Each job's copies, as stored, are the policy's observations; its answer —
   the job's state, the kept member, every copy's verdict, every cancel — is stored
   (`FederationRecords.record_decision`), and every copy it wants submitted is stored as an
   *intent* (no remote id) before any member is called.
2. **Act, per member.** Each member's calls of the pass run on its own lane
   (`shoal.federation.lanes`), members in parallel: a copy with an intent but no remote id
   is first looked up by name (`find`) — it may have reached the member before a crash or a
   timeout — and submitted only if it is not there; a copy whose cancel was decided is
   cancelled (again at every pass until the member shows it final: cancels are idempotent);
   every live copy's `status` is read and stored. A member that does not answer is backed
   off and reported down, its copies wait; a member that answers that a copy does not exist
   (`find` confirms it) makes it *lost*, which the policy counts as FAILED (the retry rule).

Copies of round n > 0 (a retry) are named `<job>-<alias>-r<n>`, so that a member never
confuses them with the failed round's copy of the same name.

Credentials: a copy is sent with the job's own `token-<alias>` secret when it gives one —
the user's credential on that member, so the member enforces the user's own rights and
quotas — and with the registry's credentials otherwise (a member the operator shares).
Secrets are sealed in the store (`shoal.store.federation_secrets`) and never logged.

A member whose adapter cannot be built — its token file unreadable, a Slurm member without a
user — is *misconfigured* (`MemberMisconfiguredError`): reported like a member that is down
(its lane backs off, `/api/v1/clusters` and the job's reason say why) and tried again after
the backoff, since an operator may fix the file meanwhile; never a crash of the pass.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from shoal.api.federation import CopyRequest, CopyState, MemberCluster
from shoal.federation.dispatch import decide
from shoal.federation.dispatch_types import CopyObservation, Dispatch, DispatchRules
from shoal.federation.intake import members_of, restore
from shoal.federation.lanes import MemberHealth, MemberLanes
from shoal.federation.members.contract import (
    MAX_LOG_BYTES,
    MemberAdapter,
    MemberCredentials,
    MemberError,
    MemberRefusedError,
    MemberUnavailableError,
)
from shoal.federation.members.factory import adapter_for
from shoal.federation.members.http import DEFAULT_TIMEOUT_S
from shoal.federation.registry import ClusterRegistry, CredentialsError
from shoal.spec.multicluster import MultiClusterJob
from shoal.spec.specialise import TOKEN_PREFIX, specialise
from shoal.store.federation import (
    CopyVerdictRecord,
    Decision,
    FederationRecords,
    McCopy,
    McJob,
    Observation,
    cut_text,
)
from shoal.store.federation_secrets import SecretBox

log = logging.getLogger(__name__)

AdapterFactory = Callable[[MemberCluster, MemberCredentials], MemberAdapter]
SETTLE_S = 1.0
"""How long a pass waits for its members' calls before it returns (a slower member's calls
go on; their answers are read by a later pass)."""


class MemberMisconfiguredError(MemberUnavailableError):
    """The member's adapter could not be built from the registry's entry or credentials:
    no call can reach it until an operator fixes its configuration."""


@dataclass(frozen=True, slots=True)
class _Live:
    """A job being driven: its value (secrets inside) and its members."""

    job: MultiClusterJob
    members: tuple[MemberCluster, ...]


class Dispatcher:
    """Drives every multi-cluster job of a store over the registry's members."""

    def __init__(self, records: FederationRecords, registry: ClusterRegistry, box: SecretBox,
                 clock: Callable[[], float], *, adapters: AdapterFactory | None = None,
                 timeout_s: float = DEFAULT_TIMEOUT_S, settle_s: float = SETTLE_S,
                 lanes: MemberLanes | None = None,
                 directory: Callable[[], ClusterRegistry] | None = None) -> None:
        """`directory`: the registry now, read at every pass (members declared, changed or
        removed through the API); without it `registry` is fixed."""
        self.records = records
        self.registry = registry
        self._directory = directory
        self._retired: list[MemberAdapter] = []
        self.box = box
        self.clock = clock
        self.settle_s = settle_s
        self.lanes = lanes if lanes is not None else MemberLanes(clock)
        self._adapters_for = adapters if adapters is not None else (
            lambda member, creds: adapter_for(member, creds, timeout_s=timeout_s))
        self._live: dict[str, _Live] = {}
        self._adapters: dict[tuple[str, str], MemberAdapter] = {}
        self._failing: set[str] = set()

    # ---- one pass ---------------------------------------------------------------------

    def step(self, now: float) -> float | None:
        """One pass over the active jobs; the earliest instant a job's answer changes by
        time alone (None: only an observation can change one)."""
        wake: float | None = None
        self._refresh()
        for job in self.records.active_jobs():
            try:
                at = self._decide(job, now)
            except Exception:  # one broken job must not stop the others
                if job.name not in self._failing:  # once per job, not at every pass
                    log.exception("multi-cluster job %r: the dispatch pass failed", job.name)
                self._failing.add(job.name)
                continue
            self._failing.discard(job.name)
            if at is not None:
                wake = at if wake is None else min(wake, at)
        active = self._act(now)
        self.lanes.settle(self.settle_s)
        self._forget_ended(active)
        return wake

    def _decide(self, job: McJob, now: float) -> float | None:
        live = self._live_job(job)
        rules = DispatchRules(job.policy, job.guard_time_s, job.time_scale_s, job.retries)
        # The policy reads seconds since the job's submission: its reasons then say
        # "RUNNING since 12 s", not an epoch instant.
        origin = job.submitted
        answer = decide(live.members, rules, [observation_of(c, origin) for c in job.copies],
                        max(0.0, now - origin), stop_requested=job.stop_requested)
        decision = _decision(answer, now, self._down(live))
        if _changes(job, decision):  # cost follows change: an unchanged answer is not rewritten
            self.records.record_decision(job.name, decision)
        for submit in answer.submits:
            self.records.add_intent(job.name, submit.attempt, submit.alias,
                                    copy_name(live.job, submit.alias, submit.attempt), now)
        return None if answer.wake_at is None else answer.wake_at + origin

    def _act(self, now: float) -> set[str]:
        """Hand each member its calls; the names of the jobs still active."""
        work: dict[str, list[tuple[McJob, McCopy]]] = {}
        jobs = self.records.active_jobs()
        for job in jobs:
            for copy in job.copies:
                if copy.live:
                    work.setdefault(copy.alias, []).append((job, copy))
        for alias, items in work.items():
            if self.lanes.ready(alias, now):
                self.lanes.run(alias, lambda items=items: self._member_pass(items))  # type: ignore[misc]
        return {job.name for job in jobs}

    def _member_pass(self, items: list[tuple[McJob, McCopy]]) -> None:
        """One member's calls of a pass, in order; `MemberUnavailableError` ends the pass
        (the lane backs the member off)."""
        for job, copy in items:
            remote_id = copy.remote_id
            try:
                adapter = self._adapter(job, copy.alias)
                if remote_id is None:
                    remote_id = self._submit_once(job, copy, adapter)
                    if remote_id is None:
                        continue
                if copy.cancel_requested_at is not None:
                    adapter.cancel(remote_id)
                    self.records.count_cancel(job.name, copy.round, copy.alias)
                self._poll(job, copy, adapter, remote_id)
            except MemberRefusedError as exc:
                self.records.note_error(job.name, copy.round, copy.alias, str(exc))
            except MemberMisconfiguredError as exc:
                self.records.note_error(job.name, copy.round, copy.alias, str(exc))
                raise
            except MemberUnavailableError:
                raise
            except Exception as exc:  # a bug for one copy must not starve the member's others
                error = f"internal error: {type(exc).__name__}"
                if copy.last_error != error:  # logged once, not at every pass
                    log.exception("multi-cluster job %r: the copy on %r", job.name, copy.alias)
                self.records.note_error(job.name, copy.round, copy.alias, error)

    def _submit_once(self, job: McJob, copy: McCopy, adapter: MemberAdapter) -> str | None:
        """The copy's remote id: found by name if an earlier submission reached the member,
        else submitted now — or None when its cancel came first (nothing to cancel)."""
        found = adapter.find(copy.name)
        if found is None and copy.cancel_requested_at is not None:
            self.records.observe(job.name, copy.round, copy.alias, Observation(
                CopyState.STOPPED, "never submitted", self.clock()))
            return None
        if found is None:
            try:
                found = adapter.submit(self._request(job, copy))
            except MemberRefusedError as exc:
                self.records.note_error(job.name, copy.round, copy.alias, str(exc))
                self.records.observe(job.name, copy.round, copy.alias, Observation(
                    CopyState.FAILED, "refused", self.clock()))
                return None
        self.records.set_remote_id(job.name, copy.round, copy.alias, found, self.clock())
        return found

    def _poll(self, job: McJob, copy: McCopy, adapter: MemberAdapter, remote_id: str) -> None:
        try:
            status = adapter.status(remote_id)
        except MemberRefusedError as exc:
            if adapter.find(copy.name) is not None:
                raise  # the copy is there; the member refused the question
            self.records.observe(job.name, copy.round, copy.alias, Observation(
                CopyState.FAILED, "lost", self.clock(), lost=True))
            self.records.note_error(job.name, copy.round, copy.alias,
                                    f"the member no longer has the copy ({exc})")
            return
        if (status.state is copy.state and status.member_state == copy.member_state
                and not copy.last_error):
            return  # nothing new to store
        started = None if status.started_at is None else status.started_at.timestamp()
        self.records.observe(job.name, copy.round, copy.alias, Observation(
            status.state, status.member_state, self.clock(), started_at=started))

    # ---- what the interfaces read -----------------------------------------------------

    def health(self, alias: str) -> MemberHealth:
        return self.lanes.health(alias)

    def logs(self, name: str, *, limit_bytes: int = MAX_LOG_BYTES) -> str:
        """The tail of the log of the job's kept copy (its leading one while none is kept).
        `LookupError` when there is none yet; `MemberError` when its member fails."""
        job = self.records.get_job(name)
        if job is None:
            raise LookupError(f"no multi-cluster job {name!r}")
        leader = job.kept
        copy = None if leader is None else job.copy(job.round, leader)
        if copy is None or copy.remote_id is None:
            raise LookupError(f"multi-cluster job {name!r} has no kept copy yet")
        return self._adapter(job, copy.alias).logs(copy.remote_id, limit_bytes=limit_bytes)

    def close(self) -> None:
        self.lanes.close()
        for adapter in [*self._adapters.values(), *self._retired]:
            _close(adapter)

    def _refresh(self) -> None:
        """Read the registry anew; when it changed, every job's members are rebuilt from it,
        and the adapters of the members that changed or left (closed at `close`: a lane may
        be using one now)."""
        if self._directory is None:
            return
        current = self._directory()
        if current == self.registry:
            return
        before = {e.member.alias: e for e in self.registry}
        after = {e.member.alias: e for e in current}
        self.registry = current
        self._live.clear()
        for key in [k for k in self._adapters if before.get(k[1]) != after.get(k[1])]:
            self._retired.append(self._adapters.pop(key))

    # ---- helpers ----------------------------------------------------------------------

    def _live_job(self, job: McJob) -> _Live:
        live = self._live.get(job.name)
        if live is None:
            sealed = self.records.sealed_secrets(job.name)
            secrets = () if sealed is None else self.box.open(sealed)
            value = restore(job.document, secrets)
            live = _Live(value, members_of(value, self.registry))
            self._live[job.name] = live
        return live

    def _request(self, job: McJob, copy: McCopy) -> CopyRequest:
        return for_round(specialise(self._live_job(job).job, copy.alias), copy.round)

    def _adapter(self, job: McJob, alias: str) -> MemberAdapter:
        key = (job.name, alias)
        adapter = self._adapters.get(key)
        if adapter is None:
            live = self._live_job(job)
            entry = self.registry.get(alias)
            own = dict(live.job.secrets).get(TOKEN_PREFIX + alias)
            try:
                if own is not None:
                    ref = live.job.member(alias)
                    user = entry.credentials.user or (ref.user if ref is not None else None)
                    creds = MemberCredentials(user=user, token=own)
                else:
                    creds = entry.credentials.resolve()
                adapter = self._adapters_for(entry.member, creds)
            except (CredentialsError, ValueError) as exc:
                # Both messages name the member already and never hold a token.
                said = str(exc).removeprefix(f"cluster {alias!r}: ")
                raise MemberMisconfiguredError(alias, f"misconfigured: {said}") from None
            self._adapters[key] = adapter
        return adapter

    def _down(self, live: _Live) -> list[str]:
        down = []
        for member in live.members:
            health = self.lanes.health(member.alias)
            if health.reachable is False:
                down.append(f"cluster {member.alias!r} is down ({health.last_error}); "
                            f"retried with backoff")
        return down

    def _forget_ended(self, active: set[str]) -> None:
        for name in [n for n in self._live if n not in active]:
            del self._live[name]
        for key in [k for k in self._adapters if k[0] not in active]:
            _close(self._adapters.pop(key))


def copy_name(job: MultiClusterJob, alias: str, round_: int) -> str:
    """`<job>-<alias>` in round 0, `<job>-<alias>-r<n>` in round n (a retry)."""
    name = job.copy_name(alias)
    return name if round_ == 0 else f"{name}-r{round_}"


def for_round(request: CopyRequest, round_: int) -> CopyRequest:
    """The request of round `round_`: renamed, and its document with it."""
    if round_ == 0:
        return request
    name = f"{request.name}-r{round_}"
    data: Any = json.loads(request.document)
    if request.document_kind == "shoal":
        data["metadata"]["name"] = name
    else:
        data["name"] = name
    return dataclasses.replace(request, name=name, document=json.dumps(data))


def observation_of(copy: McCopy, origin: float = 0.0) -> CopyObservation:
    """What the policy is fed of a stored copy, its times in seconds since `origin`."""
    state = copy.state
    running = _since(copy.running_since, origin)
    if state is CopyState.WAITING and running is not None:
        state = CopyState.RUNNING  # seen running once; the member's flicker back is ignored
    return CopyObservation(copy.alias, state, running, _since(copy.ended_at, origin),
                           copy.round, lost=copy.lost and state is CopyState.FAILED)


def _since(t: float | None, origin: float) -> float | None:
    return None if t is None else max(0.0, t - origin)


def _decision(answer: Dispatch, now: float, down: list[str]) -> Decision:
    why = answer.why if not down else "; ".join([answer.why, *down])
    return Decision(answer.state, answer.winner, why, answer.attempt, now,
                    verdicts=tuple(CopyVerdictRecord(v.attempt, v.alias, v.kept, v.reason)
                                   for v in answer.verdicts),
                    cancels=tuple((c.attempt, c.alias) for c in answer.cancels))


def _changes(job: McJob, decision: Decision) -> bool:
    """Whether storing `decision` would change what is stored of `job`."""
    if (decision.state is not job.state or decision.kept != job.kept
            or cut_text(decision.reason) != job.reason or decision.round > job.round):
        return True
    if decision.state.is_final and all(c.state.is_final for c in job.copies):
        return True  # it ends now
    for v in decision.verdicts:
        copy = job.copy(v.round, v.alias)
        want = "kept" if v.kept else "cancelled"
        if copy is not None and (copy.verdict is None or copy.verdict.value != want
                                 or copy.verdict_reason != cut_text(v.reason)):
            return True
    return any((c := job.copy(r, a)) is not None and c.cancel_requested_at is None
               for r, a in decision.cancels)


def _close(adapter: MemberAdapter) -> None:
    close = getattr(adapter, "close", None)
    if callable(close):
        close()


__all__ = ["Dispatcher", "MemberError", "copy_name", "for_round"]
