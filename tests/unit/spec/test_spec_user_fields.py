"""Issue 17's `maxPerUser` as documents write it, and the errors that name it."""

from __future__ import annotations

from spec_helpers import SOURCE, expect, issues, vc

from shoal.api import ResourceLimit
from shoal.spec import load_text


def test_max_per_user_is_read_in_canonical_units() -> None:
    text = vc("team", "{flexibleResourceMax: {gpu: 8}, maxPerUser: {gpu: 4, cpu: 16, "
                      "memory: 64Gi}}")
    team = next(v for v in load_text(text, SOURCE).virtual_clusters if v.name == "team")
    assert team.max_per_user == ResourceLimit.of({"gpu": 4, "cpu": 16000, "memory": 65536})
    plain = next(v for v in load_text(vc("plain"), SOURCE).virtual_clusters
                 if v.name == "plain")
    assert plain.max_per_user.is_unlimited()


def test_bad_max_per_user_is_named() -> None:
    where = f"{SOURCE}: document 1 (VirtualCluster 'team'): "
    [line] = [str(i) for i in issues(vc("team", "{maxPerUser: {gpu: lots}}"))]
    expect(line, f"{where}spec.maxPerUser.gpu: ")
    [line] = [str(i) for i in issues(vc("team", "{maxPerUser: {pods: 3}}"))]
    expect(line, f"{where}spec.maxPerUser.pods: ", "not a resource")
    [line] = [str(i) for i in issues(vc("team", "{max: {gpu: 2, cpu: 8}, "
                                                "maxPerUser: {gpu: 4, cpu: 4}}"))]
    expect(line, f"{where}spec.maxPerUser: ", "at most the cluster's max", "gpu 4 > 2")
    assert "cpu" not in line.split("over in")[1]
    # Fixed-size nodes raise the ceiling a user may reach.
    text = vc("team", "{max: {gpu: 2}, maxPerUser: {gpu: 4}, fixedSizeNodes: "
                      "[{nodes: [{resources: {gpu: 2}}]}]}")
    team = next(v for v in load_text(text, SOURCE).virtual_clusters if v.name == "team")
    assert team.max_per_user == ResourceLimit.of({"gpu": 4})
