"""MASTER_ADDR is the address of the node a job's rank 0 runs on (`launching.rank_zero_node`,
`NodeAddresses`), as the executor's `nodes()` gives it; a node without an address is the
control plane's machine. The loop runs real processes on the local executor, whose nodes
here say they are other machines: what is checked is what each task is told."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from control_support import PY, finished, state_of, stdout_of, step_until

from shoal.api import Job, JobState, Node, Resources, SchedulerName, TaskGroup, TaskRef
from shoal.control import ControlPlane
from shoal.control.launching import MASTER_ADDR, NodeAddresses, rank_zero
from shoal.executors.contract import NodeHealth
from shoal.executors.local import LocalExecutor
from shoal.scheduler.profile import Profile
from shoal.store import Repository

ADDRESSES = {"node-a": "10.1.0.1", "node-b": "10.1.0.2"}


class _FarNodes(LocalExecutor):
    """The local executor, whose nodes report addresses of other machines."""

    def nodes(self) -> tuple[NodeHealth, ...]:
        return tuple(NodeHealth(name, ready=True, address=ADDRESSES[name])
                     for name in self.node_names)


def _nodes() -> Sequence[Node]:
    return [Node(name, Resources.of(cpu=4000, memory=4096, gpu=1)) for name in ADDRESSES]


def test_every_task_of_a_gang_is_told_rank_zeros_node(repo: Repository, tmp_path: Path
                                                      ) -> None:
    executor = _FarNodes(tmp_path / "shoal", grace_period=0.5, node_names=list(ADDRESSES))
    plane = ControlPlane(repo, executor, _nodes(), Profile.default(), interval=0.1)
    plane.start()
    # One GPU each and one per node: the two tasks run on different nodes.
    code = "import os; print(os.environ['RANK'], os.environ['MASTER_ADDR'])"
    plane.submit(Job("gang", (TaskGroup("worker", 2, Resources.of(cpu=1000, memory=128, gpu=1),
                                        command=(PY, "-c", code)),),
                     scheduler_name=SchedulerName.SHOAL))
    step_until(plane, finished(plane, "gang"))
    assert state_of(plane, "gang") is JobState.SUCCEEDED
    records = repo.task_records(["gang"])
    placed = {i: records[TaskRef("gang", "worker", i)].node for i in (0, 1)}
    assert sorted(str(n) for n in placed.values()) == sorted(ADDRESSES)
    told = [stdout_of(plane, "gang", "worker", i).split() for i in (0, 1)]
    rank_zero_address = ADDRESSES[str(placed[0])]
    assert told == [["0", rank_zero_address], ["1", rank_zero_address]]


def test_node_addresses_are_refreshed_for_a_node_not_known_yet() -> None:
    listings = [[NodeHealth("a", ready=True, address="10.0.0.1")],
                [NodeHealth("a", ready=True, address="10.0.0.1"),
                 NodeHealth("joined", ready=True, address="10.0.0.9"),
                 NodeHealth("here", ready=True)]]
    asked: list[int] = []

    def refresh() -> list[NodeHealth]:
        asked.append(1)
        return listings[1]

    addresses = NodeAddresses(refresh)
    addresses.update(listings[0])
    assert addresses.address("a") == "10.0.0.1" and not asked  # known: no listing
    assert addresses.address("joined") == "10.0.0.9" and len(asked) == 1
    assert addresses.address("here") == MASTER_ADDR  # no address: this machine
    assert addresses.address("gone") == MASTER_ADDR and len(asked) == 2  # looked again


def test_rank_zero_is_the_first_group_with_tasks() -> None:
    resources = Resources.of(cpu=100)
    job = Job("j", (TaskGroup("master", 1, resources), TaskGroup("worker", 3, resources)))
    assert rank_zero(job) == ("master", 0)
