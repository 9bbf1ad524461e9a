"""Seed 001's elastic job spec: `spec.elastic` and the seed's annotations, the sizes each
step rule allows, durations as Kubernetes writes them, and every refusal with its field."""

from __future__ import annotations

import pytest

from shoal.api import Elasticity, Job, ScaleStep, parse_duration
from shoal.spec import SpecError, load_text


def job(elastic: str = "", annotations: str = "", groups: str = "", min_available: str = ""
        ) -> str:
    groups = groups or "    - {name: worker, replicas: 8, resources: {cpu: 1}}\n"
    notes = f", annotations: {{{annotations}}}" if annotations else ""
    return (f"apiVersion: shoal/v1\nkind: Job\nmetadata: {{name: train{notes}}}\n"
            f"spec:\n  schedulerName: shoal\n{min_available}"
            + (f"  elastic: {elastic}\n" if elastic else "") + f"  taskGroups:\n{groups}")


def loaded(text: str) -> Job:
    [found] = load_text(text, "job.yaml").jobs
    return found


def issues(text: str) -> list[tuple[str, str]]:
    with pytest.raises(SpecError) as caught:
        load_text(text, "job.yaml")
    return [(i.path, i.message) for i in caught.value.issues]


@pytest.mark.parametrize(("step", "expected", "sizes"), [
    ("1", Elasticity("worker", 2, 8, ScaleStep.ANY, 1, 600.0), (2, 3, 4, 5, 6, 7, 8)),
    ("powerOfTwo", Elasticity("worker", 2, 8, ScaleStep.POWER_OF_TWO, 1, 600.0), (2, 4, 8)),
    ("{factor: 2}", Elasticity("worker", 2, 8, ScaleStep.FACTOR, 2, 600.0), (2, 4, 6, 8)),
])
def test_spec_elastic_gives_the_sizes_its_step_allows(step: str, expected: Elasticity,
                                                      sizes: tuple[int, ...]) -> None:
    found = loaded(job(f"{{minReplicas: 2, maxReplicas: 8, step: {step}, "
                       "scaleCooldown: 10m0s, protectFor: 30}"))
    assert found.elastic == expected
    assert found.elastic.sizes() == sizes
    assert found.protect_for == 30.0
    assert found.gang_minimum == 2  # the elastic surplus is never needed to start
    assert (found.elastic.grown(2), found.elastic.shrunk(sizes[-1])) == (sizes[1], sizes[-2])
    assert found.elastic.grown(8) is None and found.elastic.shrunk(2) is None
    assert [found.elastic.is_surplus("worker", i) for i in (1, 2)] == [False, True]


def test_the_seed_annotations_mean_the_same() -> None:
    found = loaded(job(annotations='volcano.sh/elastic-train: "true", '
                                   'volcano.sh/elastic-train-power-of-two: "true", '
                                   "volcano.sh/elastic-cooldown-time: 1h30m, "
                                   "volcano.sh/cooldown-time: 5s",
                       min_available="  minAvailable: 2\n"))
    assert found.elastic == Elasticity("worker", 2, 8, ScaleStep.POWER_OF_TWO, 1, 5400.0)
    assert found.protect_for == 5.0 and found.gang_minimum == 2
    factor = loaded(job(annotations='volcano.sh/elastic-train: "true", '
                                    'volcano.sh/elastic-train-factor: "4"',
                        min_available="  minAvailable: 4\n"))
    assert factor.elastic == Elasticity("worker", 4, 8, ScaleStep.FACTOR, 4, 0.0)
    protected = loaded(job(annotations="volcano.sh/cooldown-time: 2m"))
    assert protected.elastic is None and protected.protect_for == 120.0


def test_a_rigid_job_is_unchanged() -> None:
    found = loaded(job())
    assert found.elastic is None and found.protect_for == 0.0 and found.gang_minimum == 8


@pytest.mark.parametrize(("text", "path", "reason"), [
    (job("{minReplicas: 3, step: powerOfTwo}"), "spec.elastic.minReplicas",
     "the minimum size 3 is not a power of two"),
    (job("{minReplicas: 2, step: {factor: 3}}"), "spec.elastic.minReplicas",
     "the minimum size 2 is not a multiple of 3"),
    (job("{minReplicas: 2, step: {factor: 2}}",
         groups="    - {name: worker, replicas: 7, resources: {cpu: 1}}\n"),
     "spec.elastic.step", "the maximum size 7 is not a multiple of 2"),
    (job("{minReplicas: 9}"), "spec.elastic.minReplicas",
     "must be at most the elastic group's replicas (8), got 9"),
    (job("{minReplicas: 2, maxReplicas: 16}"), "spec.elastic.maxReplicas",
     "must equal task group 'worker''s replicas (8)"),
    (job("{minReplicas: 2, taskGroup: ps}"), "spec.elastic.taskGroup",
     "unknown task group 'ps'; expected one of 'worker'"),
    (job("{minReplicas: 1}", groups="    - {name: a, replicas: 1, resources: {cpu: 1}}\n"
                                    "    - {name: b, replicas: 4, resources: {cpu: 1}}\n"),
     "spec.elastic.taskGroup", "the job has several task groups ('a', 'b')"),
    (job("{minReplicas: 2, scaleCooldown: soon}"), "spec.elastic.scaleCooldown",
     "expected seconds or a duration such as 10m0s, got 'soon'"),
    (job("{minReplicas: 2, protectFor: -1}"), "spec.elastic.protectFor", "must not be negative"),
    (job("{minReplicas: 2}", min_available="  minAvailable: 4\n"), "spec.minAvailable",
     "must be at most 2, the job's tasks less its elastic surplus"),
    (job("{minReplicas: 2}", annotations='volcano.sh/elastic-train: "true"'),
     "metadata.annotations.volcano.sh/elastic-train", "spec.elastic is given too"),
    (job(annotations='volcano.sh/elastic-train: "yes"'),
     "metadata.annotations.volcano.sh/elastic-train", 'must be "true" or "false"'),
    (job(annotations='volcano.sh/elastic-train-factor: "2"'),
     "metadata.annotations.volcano.sh/elastic-train", 'must be "true" for the other'),
    (job(annotations='volcano.sh/elastic-train: "true", volcano.sh/elastic-train-factor: "x"'),
     "metadata.annotations.volcano.sh/elastic-train-factor", "must be a whole number"),
    (job(annotations='volcano.sh/elastic-train: "true", volcano.sh/elastic-train-factor: "2", '
                     'volcano.sh/elastic-train-power-of-two: "true"'),
     "metadata.annotations.volcano.sh/elastic-train-factor", "give one step rule"),
    (job(annotations='volcano.sh/elastic-train: "true", volcano.sh/elastic-train-factor: "4"'),
     "spec.minAvailable", "the minimum size 1 is not a multiple of 4"),
])
def test_what_is_refused_names_its_field(text: str, path: str, reason: str) -> None:
    found = issues(text)
    assert any(p == path and reason in m for p, m in found), found


@pytest.mark.parametrize(("text", "seconds"), [
    ("10m0s", 600.0), ("1h30m", 5400.0), ("500ms", 0.5), ("5s", 5.0), ("2.5", 2.5), (7, 7.0),
    ("1m30.5s", 90.5)])
def test_durations_read_as_kubernetes_writes_them(text: str | int, seconds: float) -> None:
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["", "5x", "m5", "1h 30m", "-5s"])
def test_a_bad_duration_says_what_was_expected(text: str) -> None:
    with pytest.raises(ValueError, match=r"expected seconds or a duration|must not be"):
        parse_duration(text)
