"""The store's tables: SQLAlchemy 2 declarative models for jobs, tasks, events, nodes, virtual
clusters, priority classes, users and tokens.

This module owns the schema and nothing else; `migrations/` creates it (a test checks that the
two agree) and `repository` reads and writes it. Only portable types are used, so the same
models run on SQLite and PostgreSQL. Times are seconds since the epoch (floats); resource
vectors are stored as `Resources.to_dict()` (canonical units) in JSON columns.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    Double,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Text,
    UniqueConstraint,
    false,
    true,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship

#: Constraint names are fixed so that migrations and both backends agree on them.
NAMING_CONVENTION = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

NAME = 253
"""Longest name (job, node, queue, user …): a DNS subdomain, as Kubernetes allows."""
HISTORY_SUFFIX = 20
"""Room for the `.N` of an ended job kept in history under `NAME.N`."""


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)


class JobRow(Base):
    __tablename__ = "jobs"
    __table_args__ = (
        Index("ix_jobs_submitted_name", "submitted", "name"),
        # Serves a page of jobs filtered by state in submission order, and the snapshot of
        # unfinished jobs.
        Index("ix_jobs_state_submitted_name", "state", "submitted", "name"),
        Index("ix_jobs_ended", "ended"),
        # Per user: another user's key is another key (and must not reveal this job).
        UniqueConstraint("user", "idempotency_key"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    name: Mapped[str] = mapped_column(String(NAME + HISTORY_SUFFIX), unique=True)
    """A job name, or `NAME.N` for the N-th earlier job of NAME (`shoal.store.job_names`)."""
    user: Mapped[str | None] = mapped_column(String(NAME))
    queue: Mapped[str] = mapped_column(String(NAME))
    priority_class: Mapped[str | None] = mapped_column(String(NAME))
    scheduler_name: Mapped[str] = mapped_column(String(64))
    min_available: Mapped[int | None] = mapped_column(Integer)
    min_resources: Mapped[dict[str, int] | None] = mapped_column(JSON)
    spec: Mapped[list[dict[str, Any]]] = mapped_column(JSON)
    """The task groups as canonical dicts (see `convert.group_to_dict`)."""
    state: Mapped[str] = mapped_column(String(32))
    submitted: Mapped[float] = mapped_column(Double)
    runtime_estimate: Mapped[float | None] = mapped_column(Double)
    attained_gpu_seconds: Mapped[float] = mapped_column(Double, default=0.0)
    min_succeeded: Mapped[int | None] = mapped_column(Integer)
    """`spec.completion.minSucceeded`; None: every task."""
    min_failed: Mapped[int | None] = mapped_column(Integer)
    """`spec.completion.minFailed`; None: 1."""
    job_retry_count: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    retries: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    """How many times the whole job was restarted (job retries done)."""
    virtual_cluster: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    """Its own virtual cluster (`convert.job_vc_to_json`), carving included; NULL: none."""
    elastic: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    """Its elasticity (`convert.elastic_to_json`); NULL: a rigid job."""
    protect_for: Mapped[float] = mapped_column(Double, default=0.0, server_default="0")
    preemptable: Mapped[bool] = mapped_column(Boolean, default=True, server_default=true())
    """False: never preempted, reclaimed nor shrunk for others (`spec.preemptable`)."""
    freezing_window: Mapped[float | None] = mapped_column(Double, nullable=True)
    """`spec.freezingWindow` (seconds); NULL: the profile's default (seed 002)."""
    checkpoint_interval: Mapped[float | None] = mapped_column(Double, nullable=True)
    """Seconds between its checkpoints (`spec.checkpointInterval`); NULL: none."""
    service: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    """An online service's settings (`convert.service_to_json`); NULL: a training job."""
    annotations: Mapped[dict[str, str] | None] = mapped_column(JSON, nullable=True)
    """`metadata.annotations`; NULL: none."""
    labels: Mapped[dict[str, str] | None] = mapped_column(JSON, nullable=True)
    """`metadata.labels`; NULL: none."""
    time_limit: Mapped[float | None] = mapped_column(Double, nullable=True)
    """`spec.timeLimit` in seconds; NULL: none."""
    depends_on: Mapped[list[str] | None] = mapped_column(JSON, nullable=True)
    """`spec.dependsOn`: names of the jobs it waits to see succeed; NULL: none."""
    held: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    """Held: not considered until released."""
    stopping: Mapped[str | None] = mapped_column(String(32))
    """While the job's tasks are being stopped: the job state it gets once they all have
    (Succeeded, Failed, Cancelled, or Pending for a job retry); None otherwise."""
    stop_cause: Mapped[str | None] = mapped_column(Text)
    idempotency_key: Mapped[str | None] = mapped_column(String(255))
    """Unique per user (`uq_jobs_user_idempotency_key`)."""
    created: Mapped[float] = mapped_column(Double)
    updated: Mapped[float] = mapped_column(Double)
    ended: Mapped[float | None] = mapped_column(Double)
    """When the job reached its terminal state (what `--job-ttl` counts from); None while
    it has not."""
    files_of: Mapped[str | None] = mapped_column(String(NAME), nullable=True)
    """Set on a job just moved into history: the name its engine files are still kept
    under, until the control loop has moved them to its history name."""
    delete_requested: Mapped[bool] = mapped_column(Boolean, default=False,
                                                   server_default=false())
    """`DELETE` was asked while it ran: it is removed once its tasks have stopped."""

    tasks: Mapped[list[TaskRow]] = relationship(
        back_populates="job", order_by="TaskRow.id", cascade="all, delete-orphan")


class TaskRow(Base):
    __tablename__ = "tasks"
    __table_args__ = (
        UniqueConstraint("job_id", "group_name", "task_index"),
        # Covers the count of a job's tasks per group and state (`job_queries`): a page of
        # job summaries reads this index only, never the task rows.
        Index("ix_tasks_job_id_group_name_state", "job_id", "group_name", "state"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    job_id: Mapped[int] = mapped_column(ForeignKey("jobs.id", ondelete="CASCADE"))
    group_name: Mapped[str] = mapped_column(String(NAME))
    task_index: Mapped[int] = mapped_column(Integer)
    state: Mapped[str] = mapped_column(String(32))
    node: Mapped[str | None] = mapped_column(String(NAME))
    gpus: Mapped[list[int]] = mapped_column(JSON)
    started: Mapped[float | None] = mapped_column(Double)
    pid: Mapped[int | None] = mapped_column(Integer)
    pid_start_time: Mapped[float | None] = mapped_column(Double)
    """The process's start time: with `pid` it names the process even after pid reuse."""
    exit_code: Mapped[int | None] = mapped_column(Integer)
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    """How many times the task was bound (launched or about to be)."""
    retries: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    """How many times the task was restarted in place since its job (re)started."""

    job: Mapped[JobRow] = relationship(back_populates="tasks")


class EventRow(Base):
    """One entry of a job's history: submission, every state change and its cause."""

    __tablename__ = "events"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    job_id: Mapped[int] = mapped_column(
        ForeignKey("jobs.id", ondelete="CASCADE"), index=True)
    task: Mapped[str | None] = mapped_column(String(600))
    """`job/group/index` when the event concerns one task."""
    time: Mapped[float] = mapped_column(Double)
    kind: Mapped[str] = mapped_column(String(64))
    source_state: Mapped[str | None] = mapped_column(String(32))
    target_state: Mapped[str | None] = mapped_column(String(32))
    cause: Mapped[str] = mapped_column(Text)


class JobOriginalRow(Base):
    """The document an imported job was converted from (a Volcano or Kubernetes Job, an
    OpenPAI job, a batch script, a Ray job, a Sedna kind), kept apart from its job's row so
    that scheduling never reads it; `shoal get -o yaml --original` does."""

    __tablename__ = "job_originals"

    job_id: Mapped[int] = mapped_column(
        ForeignKey("jobs.id", ondelete="CASCADE"), primary_key=True)
    format: Mapped[str] = mapped_column(String(64))
    """`shoal.spec.imports.ImportFormat`'s value."""
    document: Mapped[Any] = mapped_column(JSON)
    """The document as parsed (a mapping), or a batch script's text (a string)."""


class NodeRow(Base):
    __tablename__ = "nodes"

    name: Mapped[str] = mapped_column(String(NAME), primary_key=True)
    capacity: Mapped[dict[str, int]] = mapped_column(JSON)
    allocatable: Mapped[dict[str, int] | None] = mapped_column(JSON)
    labels: Mapped[dict[str, str]] = mapped_column(JSON)
    schedulable: Mapped[bool] = mapped_column(Boolean)
    ready: Mapped[bool] = mapped_column(Boolean, default=True, server_default=true())
    """What the engine reports now (`shoal.control.node_watch`); `schedulable` is what was
    declared."""
    reason: Mapped[str] = mapped_column(Text, default="", server_default="")
    """Why it is not ready (dead, drained …); empty when it is."""
    reserved: Mapped[dict[str, int] | None] = mapped_column(JSON, nullable=True)
    """Used outside Shoal (`status.reserved`); NULL: nothing."""
    draining: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    """`shoal node drain`: cordoned, its tasks evicted as their protection ends; cleared
    once none is left on it, or by an uncordon."""


class VirtualClusterRow(Base):
    __tablename__ = "virtual_clusters"

    name: Mapped[str] = mapped_column(String(NAME), primary_key=True)
    parent: Mapped[str] = mapped_column(String(NAME))
    min: Mapped[dict[str, int]] = mapped_column(JSON)
    max: Mapped[dict[str, int]] = mapped_column(JSON)
    """Only the limited dimensions; an empty dict is unlimited."""
    weight: Mapped[int] = mapped_column(Integer)
    queueing: Mapped[str] = mapped_column(String(32))
    fixed_size_nodes: Mapped[list[dict[str, Any]]] = mapped_column(
        JSON, default=list, server_default="[]")
    """Groups of fixed-size virtual nodes (see `convert.fixed_groups_to_json`)."""
    reservation: Mapped[list[dict[str, Any]] | None] = mapped_column(JSON, nullable=True)
    """Where the fixed-size nodes are carved (status written by the scheduler); NULL while
    they are not."""
    created: Mapped[float] = mapped_column(Double, default=0.0, server_default="0")
    idle_timeout: Mapped[float] = mapped_column(Double, default=0.0, server_default="0")
    """`flexibleIdleTimeout`, seconds."""
    state: Mapped[str] = mapped_column(String(16), default="Open", server_default="Open")
    priority: Mapped[int] = mapped_column(BigInteger, default=0, server_default="0")
    queue_policy: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    """Its preemption policies and borrowing/lending limits (`convert.queue_policy_to_json`);
    NULL: the defaults."""
    max_per_user: Mapped[dict[str, int]] = mapped_column(JSON, default=dict,
                                                         server_default="{}")
    """`maxPerUser` (issue 17): only the limited dimensions; empty: no per-user limit."""
    deleting: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    """`shoal vc delete --drain`: closed, and deleted by the control loop once its last
    job has ended."""


class PriorityClassRow(Base):
    __tablename__ = "priority_classes"

    name: Mapped[str] = mapped_column(String(NAME), primary_key=True)
    value: Mapped[int] = mapped_column(Integer)
    description: Mapped[str] = mapped_column(Text)
    global_default: Mapped[bool] = mapped_column(Boolean)
    preemption_policy: Mapped[str] = mapped_column(
        String(32), default="PreemptLowerPriority", server_default="PreemptLowerPriority")


class ResourceFlavorRow(Base):
    """A resource flavor (issue 16): a node pool named by labels."""

    __tablename__ = "resource_flavors"

    name: Mapped[str] = mapped_column(String(NAME), primary_key=True)
    node_labels: Mapped[dict[str, str]] = mapped_column(JSON)


class UsageRow(Base):
    """Decayed usage of one user in one virtual cluster (issue 17, `shoal.core.usage`): the
    control plane's ledger, rewritten as it charges it, read back at a restart. One row per
    (virtual cluster, user) that used anything recently: bounded by `MAX_ENTRIES`."""

    __tablename__ = "usage"

    vc: Mapped[str] = mapped_column(String(NAME), primary_key=True)
    user: Mapped[str] = mapped_column(String(NAME), primary_key=True)
    """'' for jobs without a user (`NO_USER`)."""
    gpu_seconds: Mapped[float] = mapped_column(Double)
    cpu_seconds: Mapped[float] = mapped_column(Double)
    """Core-seconds."""
    memory_seconds: Mapped[float] = mapped_column(Double)
    """GiB-seconds."""
    at: Mapped[float] = mapped_column(Double)
    """When the values were last charged (they decay from then on)."""
    half_life: Mapped[float] = mapped_column(Double)


class UserRow(Base):
    __tablename__ = "users"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    name: Mapped[str] = mapped_column(String(NAME), unique=True)
    admin: Mapped[bool] = mapped_column(Boolean)
    queues: Mapped[list[str]] = mapped_column(JSON)
    """The virtual clusters the user may submit to."""
    created: Mapped[float] = mapped_column(Double)


class TokenRow(Base):
    """A bearer token, stored only as the sha256 hex digest of its text."""

    __tablename__ = "tokens"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    user_id: Mapped[int] = mapped_column(
        ForeignKey("users.id", ondelete="CASCADE"), index=True)
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    job: Mapped[str | None] = mapped_column(String(NAME), index=True)
    """Set for a job's token (its tasks'), revoked when the job ends."""
    created: Mapped[float] = mapped_column(Double)
    last_used: Mapped[float | None] = mapped_column(Double)


class MultiClusterJobRow(Base):
    """A multi-cluster job (issue 19, seed 000) the live dispatcher drives
    (`shoal.federation.dispatcher`): what was submitted (its document without its secrets),
    the rules it runs under, and where it stands — stored before anything is acted on, so a
    restarted dispatcher resumes it."""

    __tablename__ = "mc_jobs"

    name: Mapped[str] = mapped_column(String(NAME), primary_key=True)
    owner: Mapped[str] = mapped_column(String(NAME), index=True)
    document: Mapped[str] = mapped_column(Text)
    """The job as submitted, as JSON text, its `secrets` taken out (`mc_secrets`)."""
    policy: Mapped[str] = mapped_column(String(32))
    guard_time_s: Mapped[float] = mapped_column(Double)
    time_scale_s: Mapped[float] = mapped_column(Double)
    retries: Mapped[int] = mapped_column(Integer)
    round: Mapped[int] = mapped_column(Integer, default=0)
    """The dispatch round now under way (0: the first)."""
    state: Mapped[str] = mapped_column(String(32), index=True)
    kept: Mapped[str | None] = mapped_column(String(NAME))
    """The member whose copy was chosen, once one was."""
    reason: Mapped[str] = mapped_column(Text, default="")
    submitted: Mapped[float] = mapped_column(Double)
    updated: Mapped[float] = mapped_column(Double)
    ended: Mapped[float | None] = mapped_column(Double)
    stop_requested: Mapped[bool] = mapped_column(Boolean, default=False)


class MultiClusterCopyRow(Base):
    """One copy of a multi-cluster job on one member in one dispatch round. The row is the
    submission's intent: written before the member is called, its `remote_id` NULL until
    the member answered, so a copy whose answer was lost is looked up by name, never sent
    twice."""

    __tablename__ = "mc_copies"
    __table_args__ = (UniqueConstraint("job", "round", "alias"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    job: Mapped[str] = mapped_column(
        ForeignKey("mc_jobs.name", ondelete="CASCADE"), index=True)
    round: Mapped[int] = mapped_column(Integer)
    alias: Mapped[str] = mapped_column(String(NAME))
    name: Mapped[str] = mapped_column(String(NAME))
    """The copy's name on its member (`<job>-<alias>`, `-r<round>` after the first)."""
    remote_id: Mapped[str | None] = mapped_column(String(NAME))
    state: Mapped[str] = mapped_column(String(32))
    member_state: Mapped[str] = mapped_column(String(64), default="")
    lost: Mapped[bool] = mapped_column(Boolean, default=False)
    intended_at: Mapped[float] = mapped_column(Double)
    submitted_at: Mapped[float | None] = mapped_column(Double)
    running_since: Mapped[float | None] = mapped_column(Double)
    ended_at: Mapped[float | None] = mapped_column(Double)
    verdict: Mapped[str | None] = mapped_column(String(16))
    """`kept` or `cancelled`, once the policy said; NULL while the race goes on."""
    verdict_reason: Mapped[str] = mapped_column(Text, default="")
    cancel_requested_at: Mapped[float | None] = mapped_column(Double)
    cancels_issued: Mapped[int] = mapped_column(Integer, default=0)
    last_error: Mapped[str] = mapped_column(Text, default="")


class MultiClusterSecretRow(Base):
    """A multi-cluster job's secrets (its `token-<alias>` credentials among them), sealed
    with the server's key (`shoal.store.federation_secrets`): needed after a restart to
    cancel copies, never stored or returned in plain text."""

    __tablename__ = "mc_secrets"

    job: Mapped[str] = mapped_column(
        ForeignKey("mc_jobs.name", ondelete="CASCADE"), primary_key=True)
    sealed: Mapped[str] = mapped_column(Text)


class MemberClusterRow(Base):
    """A member cluster an admin declared through the API (issue 19), beside those of the
    clusters file: what everyone may see, and its token sealed with the server's key
    (`shoal.store.federation_secrets`) — never in plain text."""

    __tablename__ = "mc_clusters"

    alias: Mapped[str] = mapped_column(String(NAME), primary_key=True)
    uri: Mapped[str] = mapped_column(Text)
    kind: Mapped[str] = mapped_column(String(32))
    gpu_type: Mapped[str | None] = mapped_column(String(63))
    priority: Mapped[int] = mapped_column(Integer)
    user: Mapped[str | None] = mapped_column(String(255))
    sealed_token: Mapped[str | None] = mapped_column(Text)
    created: Mapped[float] = mapped_column(Double)
    updated: Mapped[float] = mapped_column(Double)
    updated_by: Mapped[str] = mapped_column(String(NAME))


class AuditRow(Base):
    """One admin change: who made it, when, what and on what (`shoal.store.audit`)."""

    __tablename__ = "audit_log"
    __table_args__ = (Index("ix_audit_log_actor_id", "actor", "id"),
                      Index("ix_audit_log_action_id", "action", "id"))

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    at: Mapped[float] = mapped_column(Double)
    actor: Mapped[str] = mapped_column(String(NAME))
    action: Mapped[str] = mapped_column(String(64))
    target: Mapped[str] = mapped_column(String(NAME + HISTORY_SUFFIX))
    detail: Mapped[str] = mapped_column(Text, default="", server_default="")


class _UsageBucket:
    """The columns an hour's or a day's usage bucket shares (issue 21, `shoal.store.
    accounting`): keyed by where and for whom the resources were used and how the attempt
    ended; summed resource-seconds. Never decays, never forgets."""

    queue: Mapped[str] = mapped_column(String(NAME), primary_key=True)
    user: Mapped[str] = mapped_column(String(NAME), primary_key=True)
    """'' for jobs without a user."""
    gpu_type: Mapped[str] = mapped_column(String(NAME), primary_key=True)
    """The node's `gpu-type` label; '' when it has none."""
    node: Mapped[str] = mapped_column(String(NAME), primary_key=True)
    outcome: Mapped[str] = mapped_column(String(16), primary_key=True)
    """`shoal.api.accounting.Outcome`: useful, preempted or failed."""
    tasks: Mapped[int] = mapped_column(Integer)
    """Attempts that ended in this bucket."""
    gpu_seconds: Mapped[float] = mapped_column(Double)
    cpu_seconds: Mapped[float] = mapped_column(Double)
    """Core-seconds."""
    memory_byte_seconds: Mapped[float] = mapped_column(Double)


class UsageHourRow(_UsageBucket, Base):
    """One hour's usage of one key. The hour leads the primary key, so a report's span is
    one range of it; on SQLite the rows are stored in that key's order (no rowid)."""

    __tablename__ = "usage_hours"
    __table_args__ = ({"sqlite_with_rowid": False},)

    hour: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    """The hour's first second since the epoch (UTC)."""


class UsageDayRow(_UsageBucket, Base):
    """The same sums by UTC day: a report over months reads these, 24 times fewer rows,
    and the hours only for the partial days at its ends."""

    __tablename__ = "usage_days"
    __table_args__ = ({"sqlite_with_rowid": False},)

    day: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    """The day's first second since the epoch (UTC midnight)."""


class UsagePeriodRow(_UsageBucket, Base):
    """The same sums by 30-day period since the epoch: a report over a year without a
    series reads a dozen of these per key, the days and hours only at its ends."""

    __tablename__ = "usage_periods"
    __table_args__ = ({"sqlite_with_rowid": False},)

    period: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    """The period's first second since the epoch (a multiple of 30 days)."""


class UsageAttemptRow(Base):
    """One ended task attempt (issue 21): what a report by job reads. Kept
    `ATTEMPT_RETENTION` (`shoal.store.accounting`) after it ended, the hour buckets for
    good. No foreign key and no unique key: the record outlives its job's row, whose id
    and name a later job may have again."""

    __tablename__ = "usage_attempts"
    __table_args__ = (Index("ix_usage_attempts_ended", "ended"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    job_id: Mapped[int] = mapped_column(Integer)
    job: Mapped[str] = mapped_column(String(NAME + HISTORY_SUFFIX))
    task: Mapped[str] = mapped_column(String(600))
    """`group/index`."""
    attempt: Mapped[int] = mapped_column(Integer)
    queue: Mapped[str] = mapped_column(String(NAME))
    user: Mapped[str] = mapped_column(String(NAME))
    gpu_type: Mapped[str] = mapped_column(String(NAME))
    node: Mapped[str] = mapped_column(String(NAME))
    outcome: Mapped[str] = mapped_column(String(16))
    started: Mapped[float] = mapped_column(Double)
    ended: Mapped[float] = mapped_column(Double)
    gpus: Mapped[int] = mapped_column(Integer)
    cpu_millis: Mapped[int] = mapped_column(BigInteger)
    memory_mib: Mapped[int] = mapped_column(BigInteger)
