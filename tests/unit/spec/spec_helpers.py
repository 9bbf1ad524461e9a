"""Helpers shared by the spec error tests: build documents, collect the issues of a load."""

from __future__ import annotations

import textwrap
from collections.abc import Collection

import pytest

from shoal.spec import SpecError, SpecIssue, load_text

SOURCE = "spec.yaml"


def yaml(text: str) -> str:
    return textwrap.dedent(text).strip() + "\n"


JOB = yaml("""
    apiVersion: shoal/v1
    kind: Job
    metadata: {name: train-a}
    spec:
      taskGroups:
        - name: worker
          replicas: 4
          resources: {cpu: 8, memory: 32Gi, gpu: 2}
    """)

NODE = yaml("""
    apiVersion: shoal/v1
    kind: Node
    metadata: {name: n1}
    spec:
      capacity: {cpu: 64, memory: 512Gi, gpu: 8}
    """)


def vc(name: str, spec: str = "{}") -> str:
    return yaml(f"""
        apiVersion: shoal/v1
        kind: VirtualCluster
        metadata: {{name: {name}}}
        spec: {spec}
        """)


def docs(*parts: str) -> str:
    return "---\n".join(parts)


def issues(text: str, known_nodes: Collection[str] = ()) -> list[SpecIssue]:
    with pytest.raises(SpecError) as info:
        load_text(text, SOURCE, known_nodes=known_nodes)
    assert str(info.value) == "\n".join(str(i) for i in info.value.issues)
    return info.value.issues


def one_issue(text: str, known_nodes: Collection[str] = ()) -> str:
    found = issues(text, known_nodes)
    assert len(found) == 1, "\n".join(map(str, found))
    return str(found[0])


def expect(line: str, prefix: str, *fragments: str) -> None:
    assert line.startswith(prefix), line
    for fragment in fragments:
        assert fragment in line, f"{fragment!r} not in {line!r}"


JOB_1 = f"{SOURCE}: document 1 (Job 'train-a'): "
