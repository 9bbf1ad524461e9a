"""The shoal/v1 YAML documents the tests submit and declare, written once: a Job (`job_yaml`), a
Node (`node_yaml`) and a VirtualCluster (`virtual_cluster_yaml`); join several with
`---\\n`."""

from __future__ import annotations


def job_yaml(name: str = "train", *, queue: str | None = "default", replicas: int = 2,
             gpu: int = 1, cpu: str = "2", memory: str = "4Gi",
             command: str = "[python, train.py]", extra_spec: str = "", extra_group: str = "",
             user: str | None = None) -> str:
    """A gang job (`schedulerName: shoal`) of one task group, `worker`, whose tasks run
    `command` (a YAML flow sequence). `queue` None: no `queue` (the default queue);
    `extra_spec` and `extra_group`: more lines (each starting with a newline) at the end of the
    spec's fields before `taskGroups`, and of the group's."""
    user_line = f"\n  user: {user}" if user else ""
    queue_line = f"\n  queue: {queue}" if queue is not None else ""
    return f"""\
apiVersion: shoal/v1
kind: Job
metadata:
  name: {name}{user_line}
spec:
  schedulerName: shoal{queue_line}{extra_spec}
  taskGroups:
    - name: worker
      replicas: {replicas}
      resources: {{cpu: "{cpu}", memory: {memory}, gpu: {gpu}}}
      command: {command}{extra_group}
"""


def node_yaml(name: str = "local") -> str:
    """A Node of 4 CPUs, 8Gi and 2 GPUs, labelled `gpu-type: fake`."""
    return f"""\
apiVersion: shoal/v1
kind: Node
metadata: {{name: {name}, labels: {{gpu-type: fake}}}}
spec:
  capacity: {{cpu: 4, memory: 8Gi, gpu: 2}}
"""


def virtual_cluster_yaml(name: str, spec: str = "{}") -> str:
    return f"""\
apiVersion: shoal/v1
kind: VirtualCluster
metadata: {{name: {name}}}
spec: {spec}
"""


def multicluster_job_yaml(name: str, clusters: dict[str, str], *, policy: str = "fac",
                          guard: str = "1s", scale: str | None = None,
                          resources: str = "{cpu: 100m, memory: 64Mi}",
                          command: str = "[sleep, '600']") -> str:
    """A MultiClusterJob of one one-task group over `clusters` (alias → the URI the job
    names), running `command` (a YAML flow sequence) with `resources` (a YAML flow mapping);
    `scale` None: no `timeScale`."""
    listed = ", ".join(f"{alias}: {{uri: '{uri}'}}" for alias, uri in clusters.items())
    scale_line = f"\n  timeScale: {scale}" if scale is not None else ""
    return f"""\
apiVersion: shoal/v1
kind: MultiClusterJob
metadata: {{name: {name}}}
spec:
  clusters: {{{listed}}}
  policy: {policy}
  guardTimeRunning: {guard}{scale_line}
  template:
    taskGroups:
      - {{name: w, replicas: 1, resources: {resources}, command: {command}}}
"""
