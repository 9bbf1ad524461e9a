"""`shoal schedule` of imported job files beside native nodes: images are accepted (nothing
runs), and a Volcano gang is placed whole."""

from __future__ import annotations

import json
from pathlib import Path

from shoal_documents import node_yaml
from typer.testing import CliRunner

from shoal.cli.main import app

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "imports"
runner = CliRunner()


def test_schedule_places_imported_jobs_with_images(tmp_path: Path) -> None:
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(node_yaml())
    kueue = tmp_path / "kueue.yaml"
    kueue.write_text((EXAMPLES / "kueue-job.yaml").read_text().replace(
        "        - name: main\n", "        - name: main\n          image: busybox:1.36\n"))
    result = runner.invoke(app, ["schedule", str(cluster), str(EXAMPLES / "volcano-job.yaml"),
                                 str(kueue), "-o", "json"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    bound = {(b["job"], b["group"]) for cycle in out["cycles"] for b in cycle["binds"]}
    assert bound == {("mnist-volcano", "ps"), ("mnist-volcano", "worker"),
                     ("sample-kueue", "main")}
    assert out["pending"] == []
