"""Executors: where the scheduler's decisions become running processes.

This package owns the machine-facing side of the control plane: the node inventory (what a
machine offers) and the local executor (tasks as subprocesses of this machine, with a wrapper
that records their outcome durably). The control loop calls it; it decides nothing itself.
"""

from shoal.executors.inventory import GpuInfo, detect_gpus, detect_local_node
from shoal.executors.local import LocalExecutor, free_port
from shoal.executors.task import RunningTask, TaskLaunch, TaskPhase, TaskStatus

__all__ = [
    "GpuInfo",
    "LocalExecutor",
    "RunningTask",
    "TaskLaunch",
    "TaskPhase",
    "TaskStatus",
    "detect_gpus",
    "detect_local_node",
    "free_port",
]
