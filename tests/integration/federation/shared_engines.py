"""The folder's started engines (conftest.py holds the one instance): a real Slurm and a
real Ray head, each started on first use and stopped together by `close`."""

from __future__ import annotations

from contextlib import ExitStack

from ray_member_cluster import RayMemberCluster, ray_member_cluster
from slurm_member_cluster import SlurmMemberCluster, slurm_member_cluster


class SharedEngines:
    """The folder's started engines, each started on first use."""

    def __init__(self) -> None:
        self._stack = ExitStack()
        self._slurm: SlurmMemberCluster | None = None
        self._ray: RayMemberCluster | None = None

    def slurm(self) -> SlurmMemberCluster:
        if self._slurm is None:
            self._slurm = self._stack.enter_context(slurm_member_cluster())
        return self._slurm

    def ray(self) -> RayMemberCluster:
        if self._ray is None:
            self._ray = self._stack.enter_context(ray_member_cluster())
        return self._ray

    def close(self) -> None:
        self._slurm = self._ray = None
        self._stack.close()
