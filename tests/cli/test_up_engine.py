"""`shoal up --engine`: what is refused before anything starts (no Ray cluster is needed):
a value that is no engine, declared Nodes with the Ray engine, and the Ray engine without
Ray installed. That `--engine ray` runs jobs on a real Ray cluster is tests/e2e/test_ray_up.py."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from shoal_documents import node_yaml, virtual_cluster_yaml
from typer.testing import CliRunner

from shoal.cli.main import app

runner = CliRunner()

NODE_AND_QUEUE = node_yaml("gpu-01") + "---\n" + virtual_cluster_yaml("team-a")


def test_an_unknown_engine_is_a_usage_error(tmp_path: Path) -> None:
    result = runner.invoke(app, ["up", "--data-dir", str(tmp_path / "d"), "--engine", "slurm"])
    assert result.exit_code == 2, result.output
    assert "--engine" in result.output and "slurm" in result.output
    assert not (tmp_path / "d").exists()  # refused before anything started


def test_ray_with_declared_nodes_is_a_usage_error_naming_the_flag(tmp_path: Path) -> None:
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(NODE_AND_QUEUE)
    result = runner.invoke(app, ["up", "--data-dir", str(tmp_path / "d"), "--engine", "ray",
                                 "--cluster", str(cluster), "--port", "0",
                                 "--work-dir", str(tmp_path / "work"),
                                 "--insecure-same-user"])
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    assert "--cluster" in result.output and "gpu-01" in result.output
    assert not (tmp_path / "d" / "shoal.db").exists()  # no store was opened


def test_ray_without_ray_installed_says_what_to_install(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch
                                                        ) -> None:
    # None in sys.modules makes every import of the module fail, as a missing extra does.
    monkeypatch.setitem(sys.modules, "shoal.executors.ray_engine", None)
    result = runner.invoke(app, ["up", "--data-dir", str(tmp_path / "d"), "--engine", "ray",
                                 "--port", "0", "--work-dir", str(tmp_path / "work"),
                                 "--insecure-same-user"])
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    assert "shoal[ray]" in result.output
