"""Executors: where the scheduler's decisions become running processes.

This package owns the machine-facing side of the control plane: the executor contract every
engine meets (`contract.Executor`), the node inventory (what a machine offers) and the local
executor, one engine (tasks as subprocesses of this machine, with a wrapper that records
their outcome durably). The Ray engine (`ray_engine`, the optional extra `shoal[ray]`) is
another, imported only where it is used. The control loop calls them; they decide nothing.
"""

from shoal.executors.contract import Executor, LogChunk, NodeHealth, RecordedAttempt
from shoal.executors.inventory import GpuInfo, detect_gpus, detect_local_node
from shoal.executors.local import LocalExecutor
from shoal.executors.processes import free_port
from shoal.executors.task import RunningTask, TaskLaunch, TaskPhase, TaskStatus

__all__ = [
    "Executor",
    "GpuInfo",
    "LocalExecutor",
    "LogChunk",
    "NodeHealth",
    "RecordedAttempt",
    "RunningTask",
    "TaskLaunch",
    "TaskPhase",
    "TaskStatus",
    "detect_gpus",
    "detect_local_node",
    "free_port",
]
