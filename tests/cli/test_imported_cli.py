"""`shoal submit` of a document Shoal imports, and `shoal get NAME --original` (YAML, or
JSON with -o json) against one real `shoal up`; the human view of `shoal get` shows the
labels, annotations and where the job came from."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from live_shoal import Server

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "imports"


@pytest.fixture(autouse=True)
def isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in ("SHOAL_SERVER", "SHOAL_TOKEN", "XDG_CONFIG_HOME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("SHOAL_CONFIG", str(tmp_path / "config" / "shoal.yaml"))


def test_submit_get_and_original_of_a_volcano_job(server: Server) -> None:
    path = EXAMPLES / "volcano-job.yaml"
    submitted = server.shoal("submit", str(path))
    assert submitted.exit_code == 0, submitted.output
    assert submitted.stdout.split() == ["mnist-volcano"]

    as_yaml = server.shoal("get", "mnist-volcano", "-o", "yaml", "--original")
    assert as_yaml.exit_code == 0, as_yaml.output
    assert yaml.safe_load(as_yaml.stdout) == yaml.safe_load(path.read_text())
    as_json = server.shoal("get", "mnist-volcano", "-o", "json", "--original")
    assert json.loads(as_json.stdout) == yaml.safe_load(path.read_text())

    shown = server.shoal("get", "mnist-volcano", "-o", "json")
    body = json.loads(shown.stdout)
    assert body["metadata"]["imported"] == "volcano-job"
    assert body["metadata"]["labels"] == {"team": "vision"}
    human = server.shoal("get", "mnist-volcano")
    assert human.exit_code == 0, human.output
    for text in ("team=vision", "example.com/owner=ana", "from volcano-job"):
        assert text in human.stdout, human.stdout


def test_original_of_a_native_job_is_a_clear_error(server: Server, tmp_path: Path) -> None:
    path = tmp_path / "native.yaml"
    path.write_text("""\
apiVersion: shoal/v1
kind: Job
metadata: {name: native-one}
spec:
  taskGroups:
    - {name: main, replicas: 1, command: ["true"], resources: {cpu: 100m, memory: 64Mi}}
""")
    assert server.shoal("submit", str(path)).exit_code == 0
    result = server.shoal("get", "native-one", "--original")
    assert result.exit_code != 0
    assert "was submitted as shoal/v1; it has no other original" in result.output
    assert "Traceback" not in result.output
