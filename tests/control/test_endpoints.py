"""A job's endpoints (`shoal.control.endpoints`): a port per task, chosen once, never two
alike among live jobs nor the job's MASTER_PORT, kept across a restart and freed when the
job ends; and what a task is told of every role's `host:port`."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from shoal.api import Job, Node, Resources, SchedulerName, TaskGroup, TaskRef
from shoal.control.endpoints import (
    MAX_HOSTS_IN_ENV,
    TASK_ENDPOINT_ENV,
    TASK_PORT_ENV,
    Endpoints,
    TaskPorts,
    hosts_env,
)
from shoal.control.launching import NodeAddresses
from shoal.executors.contract import NodeHealth
from shoal.scheduler import run_cycle
from shoal.scheduler.model import SchedulerModel

CPU = Resources.of(cpu=1000)


def roles(name: str = "tj", pservers: int = 2, trainers: int = 3) -> Job:
    return Job(name, (TaskGroup("master", 1, CPU), TaskGroup("pserver", pservers, CPU),
                      TaskGroup("trainer", trainers, CPU)), scheduler_name=SchedulerName.SHOAL)


def picker(ports: list[int]) -> Callable[[], int]:
    """A `free_port` stand-in that answers `ports` over and over (the OS may repeat one)."""
    cycle: Iterator[int] = itertools.cycle(ports)
    return lambda: next(cycle)


def test_every_task_gets_its_own_port_never_the_master_port(tmp_path: Path) -> None:
    ports = TaskPorts(tmp_path, picker([5000, 5000, 5001, 5002, 5001, 5003, 5004, 5005, 5006]))
    got = ports.ports(roles(), avoid=(5002,))
    assert sorted(got) == ["master/0", "pserver/0", "pserver/1", "trainer/0", "trainer/1",
                           "trainer/2"]
    assert len(set(got.values())) == 6 and 5002 not in got.values()
    assert ports.port(roles(), TaskRef("tj", "pserver", 1)) == got["pserver/1"]


def test_ports_are_kept_across_a_restart_and_never_given_to_another_job(tmp_path: Path) -> None:
    first = TaskPorts(tmp_path, picker(list(range(6000, 6012))))
    kept = first.ports(roles("a"))
    again = TaskPorts(tmp_path, picker(list(range(6000, 6012))))  # the control plane restarted
    assert again.ports(roles("a")) == kept
    other = again.ports(roles("b"))
    assert not set(other.values()) & set(kept.values())


def test_forget_frees_the_ports_and_the_file(tmp_path: Path) -> None:
    ports = TaskPorts(tmp_path, picker([7000, 7001]))
    job = Job("one", (TaskGroup("w", 2, CPU),))
    assert sorted(ports.ports(job).values()) == [7000, 7001]
    with pytest.raises(OSError, match="no free port left"):
        ports.fresh()
    ports.forget("one")
    assert not (tmp_path / "one").exists()
    assert ports.fresh() in (7000, 7001)


def test_a_group_added_later_keeps_the_ports_already_given(tmp_path: Path) -> None:
    ports = TaskPorts(tmp_path, picker(list(range(8000, 8010))))
    small = ports.ports(roles(trainers=1))
    grown = ports.ports(roles(trainers=2))
    assert {k: grown[k] for k in small} == small and "trainer/1" in grown


def test_a_task_is_told_every_roles_placed_endpoints(tmp_path: Path) -> None:
    nodes = (Node("n0", Resources.of(cpu=2000)), Node("n1", Resources.of(cpu=4000)))
    model = SchedulerModel(nodes)
    job = roles(trainers=2)
    model.add_job(job)
    run_cycle(model)
    info = model.jobs["tj"]
    where = {t.ref: model.node(t.node).physical.name for t in info.running}
    assert len(where) == 5
    addresses = NodeAddresses()
    addresses.update([NodeHealth("n0", True, address="10.0.0.1"),
                      NodeHealth("n1", True, address="10.0.0.2")])
    host = {"n0": "10.0.0.1", "n1": "10.0.0.2"}
    endpoints = Endpoints(TaskPorts(tmp_path), addresses, lambda _job: 1)
    ports = endpoints.ports.ports(job)
    ref = TaskRef("tj", "trainer", 1)
    env = endpoints.env(model, info, ref, where[ref])
    assert env[TASK_PORT_ENV] == str(ports["trainer/1"])
    assert env[TASK_ENDPOINT_ENV] == f"{host[where[ref]]}:{ports['trainer/1']}"

    def listed(group: str, count: int) -> str:
        return ",".join(f"{host[where[TaskRef('tj', group, i)]]}:{ports[f'{group}/{i}']}"
                        for i in range(count))

    assert (env[hosts_env("master")], env[hosts_env("pserver")], env[hosts_env("trainer")]) \
        == (listed("master", 1), listed("pserver", 2), listed("trainer", 2))
    assert hosts_env("param-server") == "SHOAL_PARAM_SERVER_HOSTS"


def test_a_group_too_large_for_the_environment_is_left_to_the_file(tmp_path: Path) -> None:
    big = MAX_HOSTS_IN_ENV + 1
    model = SchedulerModel((Node("n0", Resources.of(cpu=1000 * (big + 1))),))
    job = Job("wide", (TaskGroup("master", 1, CPU), TaskGroup("worker", big, CPU)),
              scheduler_name=SchedulerName.SHOAL)
    model.add_job(job)
    run_cycle(model)
    endpoints = Endpoints(TaskPorts(tmp_path, picker(list(range(20000, 20000 + big + 1)))),
                          NodeAddresses(), lambda _job: 1)
    info = model.jobs["wide"]
    env = endpoints.env(model, info, TaskRef("wide", "master", 0), "n0")
    assert hosts_env("master") in env and hosts_env("worker") not in env
    assert len(endpoints.of_job(model, info)["worker"]) == big


def test_master_ports_drawn_through_fresh_are_taken_until_their_job_ends(
        tmp_path: Path) -> None:
    """The control loop draws MASTER_PORT through `fresh`: no task gets it while its job
    lives, after a restart too (`also_taken`), and it is freed with the job."""
    masters = tmp_path / "master-ports"
    masters.mkdir()
    ports = TaskPorts(tmp_path / "task-ports", picker([9000, 9001, 9002]),
                      also_taken=(masters,))
    master = ports.fresh()
    (masters / "one").write_text(str(master))
    endpoints = Endpoints(ports, NodeAddresses(), lambda _job: master,
                          lambda _job: master)
    job = Job("one", (TaskGroup("w", 2, CPU),))
    assert master not in endpoints.ports.ports(job).values()
    restarted = TaskPorts(tmp_path / "task-ports", picker([9000, 9001, 9002]),
                          also_taken=(masters,))
    with pytest.raises(OSError):
        restarted.fresh()  # all three are a live job's
    endpoints.forget("one")
    assert sorted(ports.fresh() for _ in range(3)) == [9000, 9001, 9002]


def test_a_waiting_job_is_given_no_ports(tmp_path: Path) -> None:
    model = SchedulerModel((Node("n0", Resources.of(cpu=1000)),))
    model.add_job(roles())  # five tasks of a CPU each: it waits
    run_cycle(model)
    endpoints = Endpoints(TaskPorts(tmp_path), NodeAddresses(), lambda _job: 1)
    assert endpoints.of_job(model, model.jobs["tj"]) == {"master": [], "pserver": [],
                                                         "trainer": []}
    assert not (tmp_path / "tj").exists()
