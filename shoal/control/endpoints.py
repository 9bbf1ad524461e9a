"""Where a job's tasks reach each other: a port per task, and each role's addresses.

Seed 002's TrainingJob has roles — a master, parameter servers, trainers — that talk over
TCP: a trainer must know where every parameter server listens before it sends its first
gradient. MASTER_ADDR/MASTER_PORT (`shoal.control.launching`) name rank 0 only. Here every
task of a job gets a port of its own, and every task learns every role's addresses:

- `SHOAL_TASK_PORT`: the port this task binds (its endpoint is `SHOAL_TASK_ENDPOINT`,
  `host:port`, the host being its node's address).
- `SHOAL_<GROUP>_HOSTS`: for each task group (its name upper-cased, `-` as `_`), the
  `host:port` of each of its tasks that is placed when this one launches, by index, comma
  separated: `SHOAL_PSERVER_HOSTS=10.0.0.5:41234,10.0.0.6:41240`. A group of more than
  `MAX_HOSTS_IN_ENV` tasks is left out (an environment variable is bounded); the membership
  file lists it.
- The membership file (`shoal.control.membership`, `SHOAL_MEMBERSHIP_FILE`), which every job
  of more than one task group gets, lists the same endpoints and is rewritten whenever the
  placed tasks change: an elastic trainer group that grows or shrinks, a task placed later
  (a job without a gang places its tasks one by one).

Ports are chosen when the job's first task launches, one per task of each group (its
largest size for an elastic group), so that a task's port is known before it, or any peer,
starts; a retried task, a job retry or a restart of the control plane keeps them (the
journal of `<root>/control/task-ports`: `shoal.control.port_journal`). They are ports
free on the control plane's machine at that moment, never two alike among the live jobs'
task ports and master ports (the control loop draws MASTER_PORT through `TaskPorts.fresh`
too): on the local executor, whose nodes are this machine, two tasks of Shoal never get
one port.
On other machines a port is probably free too, and a clash fails the attempt, which is
retried under the task's policy — MASTER_PORT's rule.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path

from shoal.api import Job, TaskRef
from shoal.control.launching import NodeAddresses
from shoal.control.port_journal import PortJournal, read_directory
from shoal.control.records import MasterPorts
from shoal.executors.processes import free_port
from shoal.scheduler.jobs import JobInfo
from shoal.scheduler.model import SchedulerModel

#: The port the task binds.
TASK_PORT_ENV = "SHOAL_TASK_PORT"
#: `host:port` of the task itself, as its peers see it.
TASK_ENDPOINT_ENV = "SHOAL_TASK_ENDPOINT"
#: Groups of more tasks than this get no `SHOAL_<GROUP>_HOSTS` (the membership file has them).
MAX_HOSTS_IN_ENV = 256
#: How many ports `TaskPorts.fresh` draws before it gives up finding one not handed out.
_DRAWS = 200


def hosts_env(group: str) -> str:
    """The variable that lists the endpoints of `group`'s tasks: `SHOAL_PSERVER_HOSTS`."""
    return f"SHOAL_{group.upper().replace('-', '_')}_HOSTS"


class TaskPorts:
    """The port of every task of each live job: in memory, and kept in `directory`'s
    journal (`shoal.control.port_journal`; read back after a restart),
    `{"trainer/0": 41234, ...}` per job."""

    def __init__(self, directory: Path, pick: Callable[[], int] = free_port,
                 also_taken: Iterable[Path] = ()) -> None:
        """`also_taken`: directories of other ports kept by job (`records.MasterPorts`'),
        taken too after a restart."""
        self.directory = Path(directory)
        self._pick = pick
        self._journal = PortJournal(self.directory)
        self._taken: set[int] = set()
        for ports in self._journal.jobs().values():
            self._taken.update(ports.values())
        for where in also_taken:
            for ports in read_directory(Path(where))[0].values():
                self._taken.update(ports.values())

    def port(self, job: Job, ref: TaskRef, avoid: Iterable[int] = ()) -> int:
        """The port of task `ref` of `job`; every task of the job gets one on first use."""
        return self.ports(job, avoid)[_key(ref.group, ref.index)]

    def ports(self, job: Job, avoid: Iterable[int] = ()) -> dict[str, int]:
        """`group/index` → port for every task of `job`, chosen on first use (never one of
        `avoid`: its MASTER_PORT) and kept."""
        known = self._journal.get(job.name) or {}
        wanted = [_key(g.name, i) for g in job.groups for i in range(g.replicas)]
        missing = [k for k in wanted if k not in known]
        if missing:  # first use, or a task group that was not there when they were chosen
            avoided = set(avoid)
            for key in missing:
                known[key] = self.fresh(avoided)
            self._journal.put(job.name, known)
        return known

    def fresh(self, avoid: Iterable[int] = ()) -> int:
        """A port free now that no live job's task was given (nor one of `avoid`); marked
        taken."""
        avoided = set(avoid)
        for _ in range(_DRAWS):
            port = self._pick()
            if port not in self._taken and port not in avoided:
                self._taken.add(port)
                return port
        raise OSError(f"no free port left that is not already a task's ({_DRAWS} tries)")

    def forget(self, job: str, also: Iterable[int] = ()) -> None:
        """The job ended: its ports are free again, and `also` (its master port, drawn
        through `fresh`)."""
        self._taken.difference_update((self._journal.get(job) or {}).values())
        self._taken.difference_update(also)
        self._journal.drop(job)

    def deferred(self) -> AbstractContextManager[None]:
        """The journal's lines held back within, written at once on leaving
        (`PortJournal.deferred`)."""
        return self._journal.deferred()


class Endpoints:
    """Each task's port and each role's `host:port` list, for launches and the membership
    file: the ports of `TaskPorts`, the hosts of `NodeAddresses` (the node the model places
    a task on)."""

    def __init__(self, ports: TaskPorts, addresses: NodeAddresses,
                 master_port: Callable[[str], int],
                 master_known: Callable[[str], int | None] = lambda _job: None) -> None:
        """`master_port`: a job's MASTER_PORT (chosen if need be), which its tasks' ports
        avoid; `master_known`: that port if it was chosen (`records.MasterPorts`), freed
        with them when the job ends, for master ports drawn through `TaskPorts.fresh`."""
        self.ports = ports
        self._addresses = addresses
        self._master_port = master_port
        self._master_known = master_known

    def of_job(self, model: SchedulerModel, info: JobInfo,
               ports: dict[str, int] | None = None) -> dict[str, list[tuple[int, str]]]:
        """Per task group (every one, in the job's order), the (index, `host:port`) of each
        of its placed tasks, by index. `ports`: the job's, as `TaskPorts.ports` gave them
        just now (else asked)."""
        job = info.job
        out: dict[str, list[tuple[int, str]]] = {g.name: [] for g in job.groups}
        if not info.running:  # a waiting job is given no ports (nor files) yet
            return out
        if ports is None:
            ports = self.ports.ports(job, (self._master_port(job.name),))
        for task in info.running:
            ref = task.ref
            host = self._addresses.address(model.node(task.node).physical.name)
            out[ref.group].append((ref.index, f"{host}:{ports[_key(ref.group, ref.index)]}"))
        for placed in out.values():
            placed.sort()
        return out

    def env(self, model: SchedulerModel, info: JobInfo, ref: TaskRef, node: str) -> dict[str, str]:
        """What task `ref`, launched on `node` (its physical node), is told."""
        job = info.job
        # The job's ports asked once for the task's own and its peers' (every launch).
        ports = self.ports.ports(job, (self._master_port(job.name),))
        port = ports[_key(ref.group, ref.index)]
        env = {TASK_PORT_ENV: str(port),
               TASK_ENDPOINT_ENV: f"{self._addresses.address(node)}:{port}"}
        for group, placed in self.of_job(model, info, ports).items():
            if job.group(group).replicas <= MAX_HOSTS_IN_ENV:
                env[hosts_env(group)] = ",".join(endpoint for _, endpoint in placed)
        return env

    def forget(self, job: str) -> None:
        """The job ended: its tasks' ports, and its master port, are free again."""
        master = self._master_known(job)
        self.ports.forget(job, () if master is None else (master,))


@contextmanager
def lines_held(endpoints: Endpoints, masters: MasterPorts) -> Iterator[None]:
    """The task ports' and master ports' journal lines of a batch (a cycle's launches, an
    exit batch's ended jobs) held back, then written in one `write` per journal: before the
    batch is handed to the launcher, which is when a task must find its ports on disk."""
    with endpoints.ports.deferred(), masters.deferred():
        yield


def _key(group: str, index: int) -> str:
    return f"{group}/{index}"
