"""The driver of `examples/sub-clusters.yaml`: seed 003's multi-dataset example.

It runs as a task of a job that has a virtual cluster of its own, so Shoal gave it the API's
address, its job's token and its virtual cluster (`shoal.runtime`). It shows the cluster it
sees — only its own —, creates two sub-clusters inside it (`train-data`, 400m CPU guaranteed
and at most; `validation-data`, 200m guaranteed, up to 400m), submits one job into each, waits
for both, and exits 0 only if both succeeded. Each of those jobs prints the cluster *it* sees:
its sub-cluster. When the driver's job ends, the sub-clusters go with it.
"""

from __future__ import annotations

import json
import sys

from shoal import runtime
from shoal.api import JobState

#: What each piece of work runs: its view of the cluster, then a stand-in for the real work.
WORK = """\
import json
from shoal import runtime
cluster = runtime.current_cluster()
print(json.dumps({"job": runtime.job(), "cluster": cluster.name,
                  "resources": cluster.resources.to_quantities()}))
"""


def work(name: str, queue: str) -> dict[str, object]:
    return {"apiVersion": "shoal/v1", "kind": "Job", "metadata": {"name": name},
            "spec": {"schedulerName": "shoal", "queue": queue, "taskGroups": [{
                "name": "worker", "replicas": 1,
                "resources": {"cpu": "200m", "memory": "64Mi"},
                "command": [sys.executable, "-c", WORK]}]}}


def show(what: str, cluster: runtime.ClusterView) -> None:
    print(json.dumps({what: cluster.name, "parent": cluster.parent,
                      "children": list(cluster.children),
                      "resources": cluster.resources.to_quantities(),
                      "available": cluster.available.to_quantities(),
                      "nodes": [node.name for node in cluster.nodes]}), flush=True)


def main() -> int:
    me = runtime.job()
    show("cluster", runtime.current_cluster())
    train = runtime.create_sub_cluster("train-data", min={"cpu": "400m"},
                                       max={"cpu": "400m"})
    validation = runtime.create_sub_cluster("validation-data", min={"cpu": "200m"},
                                            max={"cpu": "400m"})
    show("cluster", runtime.current_cluster())  # now with its two children
    with runtime.client() as shoal:
        jobs = [shoal.submit(work(f"{me}-{part}", queue)).name
                for part, queue in (("train", train), ("validation", validation))]
        ended = {name: shoal.wait(name, timeout=300).state for name in jobs}
    print(json.dumps({name: state.value for name, state in ended.items()}), flush=True)
    return 0 if all(state is JobState.SUCCEEDED for state in ended.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
