"""Job arrays end to end through a real `shoal up`: a batch script's `--array` and a native
`spec.array` each submitted once become one job per index, each running with its index.

Written against issue 20's contract for several jobs from one submission (the platform
slice): `POST /api/v1/jobs` answers the first job with `jobs: [names...]` and `shoal submit`
prints every name. Until that lands, the server refuses a body of several jobs."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from shoal_documents import node_yaml
from shoal_up_process import Up, shoal_up
from test_imports_live import stdout, submit, succeeded


@pytest.fixture(scope="module")
def up(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Up]:
    home = tmp_path_factory.mktemp("arrays")
    (home / "cluster.yaml").write_text(node_yaml())
    with shoal_up(home) as server:
        yield server


ARRAY_SCRIPT = """\
#!/bin/sh
#SBATCH -J live-array
#SBATCH --array=1,3-4
echo "element=$SLURM_ARRAY_TASK_ID shoal=$SHOAL_ARRAY_INDEX count=$SLURM_ARRAY_TASK_COUNT"
"""


def test_an_array_script_becomes_one_job_per_index(up: Up, tmp_path: Path) -> None:
    """Needs several jobs from one submission (issue 20's platform slice): the answer's
    `jobs`, every name printed by `shoal submit`."""
    path = tmp_path / "array.sbatch"
    path.write_text(ARRAY_SCRIPT)
    names = submit(up, path)
    assert names == ["live-array-1", "live-array-3", "live-array-4"]
    client = up.client()
    for index in (1, 3, 4):
        succeeded(client, f"live-array-{index}")
        out = stdout(client, f"live-array-{index}", "batch-0")
        assert f"element={index} shoal={index} count=3" in out, out


NATIVE = """\
apiVersion: shoal/v1
kind: Job
metadata: {name: native-array}
spec:
  array: "0-4:2"
  taskGroups:
    - name: main
      replicas: 1
      resources: {cpu: 1}
      command: [/bin/sh, -c, 'echo "index=$SHOAL_ARRAY_INDEX"']
"""


def test_a_native_array_becomes_one_job_per_index(up: Up, tmp_path: Path) -> None:
    path = tmp_path / "native.yaml"
    path.write_text(NATIVE)
    assert submit(up, path) == ["native-array-0", "native-array-2", "native-array-4"]
    client = up.client()
    for index in (0, 2, 4):
        succeeded(client, f"native-array-{index}")
        assert f"index={index}" in stdout(client, f"native-array-{index}", "main-0")


def test_the_answer_lists_every_job_of_the_array(up: Up) -> None:
    answer = httpx.post(f"{up.url}/api/v1/jobs", content=NATIVE.replace("native-array",
                                                                       "answered"),
                        headers={"Authorization": f"Bearer {up.token}",
                                 "Content-Type": "application/yaml"}, timeout=30)
    assert answer.status_code == 201, answer.text
    body = answer.json()
    assert body["metadata"]["name"] == "answered-0"
    assert body["jobs"] == ["answered-0", "answered-2", "answered-4"]
