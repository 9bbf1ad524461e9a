"""The real engines the federation tests share: ONE Slurm (slurm_member_cluster.py) and ONE
Ray head (ray_member_cluster.py) for the whole folder, each started by the first test that
asks for it and stopped when the folder's last test is done — the adapters' own tests and
the end-to-end dispatcher tests use the same ones, so a CI run of 2 cores starts each engine
once, not once per module.

pytest's `package` scope needs an `__init__.py`, which this suite does not have; the engines
are held here instead, and `pytest_runtest_teardown` stops them as soon as the next test is
not in this folder (or there is none), so the rest of a whole-suite run does not share its
cores with an idle Ray head. A test that asks again after that starts them again.

No test may break a shared engine: one that needs a Slurm whose controller is down gets a
second slurmrestd in front of no controller (`slurm_member_cluster.controller_down`).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from ray_member_cluster import RayMemberCluster
from shared_engines import SharedEngines
from slurm_member_cluster import SlurmMemberCluster

FOLDER = Path(__file__).resolve().parent


ENGINES = SharedEngines()


@pytest.fixture(scope="session")
def engines() -> SharedEngines:
    """The holder itself, for a module-scoped fixture: it starts an engine on first use."""
    return ENGINES


@pytest.fixture()
def slurm_cluster() -> SlurmMemberCluster:
    """The folder's one real Slurm (two fake nodes, slurmrestd with JWT)."""
    return ENGINES.slurm()


@pytest.fixture()
def ray_head() -> RayMemberCluster:
    """The folder's one real Ray head (one fake GPU, its Jobs API behind a token)."""
    return ENGINES.ray()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    # After the test's own teardown: a module's super scheduler stops before its members.
    try:
        yield
    finally:
        if nextitem is None or FOLDER not in Path(nextitem.path).resolve().parents:
            ENGINES.close()


def pytest_sessionfinish(session: pytest.Session) -> None:
    ENGINES.close()  # an interrupted run
