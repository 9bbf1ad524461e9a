"""The multi-cluster vocabulary (seed 000): a member cluster, the kind of engine it runs,
the states a job's copy on a member goes through, and the request a member is sent.

Pure data, shared by the super-2 parser (`shoal.spec.multicluster`), the dispatch policy
(`shoal.federation.dispatch`), the member adapters (`shoal.federation.members`) and the
simulator's multi-cluster what-if. Secrets never live here in plain sight: a request's
secrets are kept out of its `repr`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

MAX_PRIORITY = 100
"""A member's priority is a number in [0, 100] (seed 000); higher is preferred."""


class ClusterKind(StrEnum):
    """The engine a member cluster runs, which decides the adapter that speaks to it."""

    SHOAL = "shoal"
    """Another `shoal up`, over its REST API and a token."""
    SLURM = "slurm"
    """A Slurm cluster, through slurmrestd."""
    RAY = "ray"
    """A Ray cluster, through its Jobs API."""
    OPENPAI = "openpai"
    """OpenPAI's REST server, job protocol v2."""


class CopyState(StrEnum):
    """Where one copy of a multi-cluster job stands on its member, whatever the member's own
    state names are (each adapter maps them; an OpenPAI `STOPPING` is still RUNNING until it
    has stopped, a Slurm `PENDING` or a Ray `PENDING` is WAITING)."""

    WAITING = "WAITING"
    RUNNING = "RUNNING"
    SUCCEEDED = "SUCCEEDED"
    FAILED = "FAILED"
    STOPPED = "STOPPED"

    @property
    def is_final(self) -> bool:
        return self in _FINAL


_FINAL = frozenset({CopyState.SUCCEEDED, CopyState.FAILED, CopyState.STOPPED})


class DispatchPolicy(StrEnum):
    """How a multi-cluster job chooses its member (seed 000)."""

    FAC = "fac"
    """First-Available-Cluster: submit everywhere, keep the copy that entered RUNNING
    earliest once it has stayed RUNNING for the guard time, cancel the others."""
    FAC_PRIORITY = "fac-priority"
    """FAC with cluster priorities: a running copy on Cᵢ cancels every copy on a cluster of
    lower priority at once; a copy on Cⱼ with pⱼ > pᵢ survives (pⱼ − pᵢ) × timeScale."""


@dataclass(frozen=True, slots=True)
class MemberCluster:
    """One member of the federation, as the dispatcher and the simulator see it: no
    credentials (those stay with the registry and the adapter that uses them)."""

    alias: str
    """Unique among members; defaults to the URI."""
    uri: str
    kind: ClusterKind
    priority: int = 0
    gpu_type: str | None = None

    def __post_init__(self) -> None:
        if not 0 <= self.priority <= MAX_PRIORITY:
            raise ValueError(f"priority: must be between 0 and {MAX_PRIORITY}, not {self.priority}")
        if not self.alias:
            raise ValueError("alias: must not be empty")


@dataclass(frozen=True, slots=True)
class RoleRequest:
    """One task role of a copy, in the terms every engine understands: how many instances,
    what each needs, and the command each runs."""

    name: str
    instances: int
    commands: tuple[str, ...]
    """Shell command lines run in order in each instance (OpenPAI's `commands`)."""
    gpu: int = 0
    cpu: int = 1
    """Cores per instance."""
    memory_mib: int = 1024
    image: str | None = None
    """A container image, where the job names one; engines without containers say they
    ignore it."""
    env: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, slots=True)
class CopyRequest:
    """What one member is sent for one multi-cluster job: the job specialised for that
    member (every `<% $mcc.x %>` replaced, renamed `<name>-<alias>`), as a document for the
    members that take one whole (OpenPAI, Shoal) and as roles for those that take a command
    (Slurm, Ray)."""

    job_name: str
    alias: str
    name: str
    """`<job_name>-<alias>`: the copy's name on its member, unique per job and member, so a
    submission whose answer was lost can be found again by name."""
    roles: tuple[RoleRequest, ...]
    document: str
    """The specialised job as JSON text: OpenPAI protocol v2 for a `super-2` job, a Shoal
    `Job` for a `MultiClusterJob`."""
    document_kind: str
    """`openpai-v2` or `shoal`: what `document` is."""
    secrets: tuple[tuple[str, str], ...] = field(default=(), repr=False)
    """This member's secrets only (the other members' `token-*` were dropped)."""
