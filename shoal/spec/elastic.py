"""A Job document's elasticity (seed 001): `spec.elastic`, or the seed's annotations.

`spec.elastic` names the elastic task group (default: the job's only one), its
`minReplicas`, its `maxReplicas` (the group's `replicas`: an elastic group's replicas are its
largest size), the `step` rule (`1`, `powerOfTwo`, `{factor: k}`), `scaleCooldown` and
`protectFor` (seconds, or Go durations such as `10m0s`).

The seed's annotations say the same on `metadata.annotations`, as a Volcano user writes
them: `volcano.sh/elastic-train: "true"` makes the job's only task group elastic, from
`spec.minAvailable` (default 1) to its `replicas`; `volcano.sh/elastic-train-power-of-two:
"true"` or `volcano.sh/elastic-train-factor: "k"` is the step rule;
`volcano.sh/elastic-cooldown-time` the scale cooldown; `volcano.sh/cooldown-time` the
protection, for any job (Volcano's `cdp` plugin). A job gives `spec.elastic` or the elastic
annotations, not both.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from shoal.api import TaskGroup
from shoal.api.elastic import Elasticity, ScaleStep, parse_duration, step_allows
from shoal.spec.documents import Duration, ElasticSpec, JobDocument
from shoal.spec.errors import DocRef, IssueLog, quote

ELASTIC_TRAIN = "volcano.sh/elastic-train"
POWER_OF_TWO = "volcano.sh/elastic-train-power-of-two"
FACTOR = "volcano.sh/elastic-train-factor"
ELASTIC_COOLDOWN = "volcano.sh/elastic-cooldown-time"
PROTECT = "volcano.sh/cooldown-time"
ELASTIC_ANNOTATIONS = (ELASTIC_TRAIN, POWER_OF_TWO, FACTOR, ELASTIC_COOLDOWN)


def elasticity(log: IssueLog, doc: DocRef, model: JobDocument, groups: Sequence[TaskGroup]
               ) -> tuple[Elasticity | None, float]:
    """The job's elasticity (None: rigid) and its protection time, problems logged."""
    notes = model.metadata.annotations
    spec = model.spec.elastic
    given = [a for a in ELASTIC_ANNOTATIONS if a in notes]
    if spec is not None and given:
        log.add(doc, _note(given[0]), "spec.elastic is given too: use one of them")
        return None, 0.0
    protect = _seconds(log, doc, _note(PROTECT), notes.get(PROTECT, 0))
    if spec is not None:
        if "protect_for" in spec.model_fields_set:
            if PROTECT in notes:
                log.add(doc, _note(PROTECT), "spec.elastic.protectFor is given too: use one "
                                             "of them")
            protect = _seconds(log, doc, "spec.elastic.protectFor", spec.protect_for)
        return _from_spec(log, doc, spec, groups, model.spec.min_available), protect
    if not given:
        return None, protect
    return _from_annotations(log, doc, notes, groups, model.spec.min_available), protect


def _from_spec(log: IssueLog, doc: DocRef, spec: ElasticSpec, groups: Sequence[TaskGroup],
               min_available: int | None) -> Elasticity | None:
    group = _group(log, doc, "spec.elastic.taskGroup", spec.task_group, groups)
    if isinstance(spec.step, int):
        step, factor = ScaleStep.ANY, 1
    elif spec.step == "powerOfTwo":
        step, factor = ScaleStep.POWER_OF_TWO, 1
    else:
        step, factor = ScaleStep.FACTOR, spec.step.factor
    cooldown = _seconds(log, doc, "spec.elastic.scaleCooldown", spec.scale_cooldown)
    if group is None:
        return None
    if spec.max_replicas is not None and spec.max_replicas != group.replicas:
        log.add(doc, "spec.elastic.maxReplicas",
                f"must equal task group {group.name!r}'s replicas ({group.replicas}): an "
                f"elastic group's replicas are its largest size; got {spec.max_replicas}")
        return None
    return _checked(log, doc, Elasticity(group.name, spec.min_replicas, group.replicas, step,
                                         factor, cooldown),
                    "spec.elastic.minReplicas", "spec.elastic.step", groups, min_available)


def _from_annotations(log: IssueLog, doc: DocRef, notes: Mapping[str, str],
                      groups: Sequence[TaskGroup], min_available: int | None
                      ) -> Elasticity | None:
    on = _flag(log, doc, notes, ELASTIC_TRAIN)
    two = _flag(log, doc, notes, POWER_OF_TWO)
    factor = 1
    if FACTOR in notes:
        text = notes[FACTOR]
        if not text.isdigit() or int(text) < 1:
            log.add(doc, _note(FACTOR), f"must be a whole number of at least 1, got {text!r}")
        else:
            factor = int(text)
    cooldown = _seconds(log, doc, _note(ELASTIC_COOLDOWN), notes.get(ELASTIC_COOLDOWN, 0))
    if not on:
        if ELASTIC_TRAIN not in notes or len([a for a in ELASTIC_ANNOTATIONS if a in notes]) > 1:
            log.add(doc, _note(ELASTIC_TRAIN),
                    'must be "true" for the other elastic annotations to mean anything')
        return None
    if two and factor > 1:
        log.add(doc, _note(FACTOR), f"{POWER_OF_TWO} is set too: give one step rule")
        return None
    group = _group(log, doc, _note(ELASTIC_TRAIN), None, groups)
    if group is None:
        return None
    step = ScaleStep.POWER_OF_TWO if two else ScaleStep.FACTOR if factor > 1 else ScaleStep.ANY
    minimum = 1 if min_available is None else min_available
    # The seed's min is minAvailable, which then counts the elastic group only.
    return _checked(log, doc, Elasticity(group.name, minimum, group.replicas, step, factor,
                                         cooldown),
                    "spec.minAvailable", _note(POWER_OF_TWO if two else FACTOR), groups,
                    None)


def _checked(log: IssueLog, doc: DocRef, found: Elasticity, min_path: str, step_path: str,
             groups: Sequence[TaskGroup], min_available: int | None) -> Elasticity | None:
    """Both ends allowed by the step rule, min within max, minAvailable within the tasks
    that are not elastic surplus."""
    ok = True
    if found.min_replicas > found.max_replicas:
        log.add(doc, min_path, f"must be at most the elastic group's replicas "
                               f"({found.max_replicas}), got {found.min_replicas}")
        return None
    for end, size, path in (("minimum", found.min_replicas, min_path),
                            ("maximum", found.max_replicas, step_path)):
        if not step_allows(found.step, found.factor, size):
            rule = ("a power of two" if found.step is ScaleStep.POWER_OF_TWO
                    else f"a multiple of {found.factor}")
            log.add(doc, path, f"the {end} size {size} is not {rule}: both ends of "
                                    f"[{found.min_replicas}, {found.max_replicas}] must be "
                                    "sizes the step allows")
            ok = False
    guaranteed = sum(g.replicas for g in groups) - (found.max_replicas - found.min_replicas)
    if min_available is not None and min_available > guaranteed:
        log.add(doc, "spec.minAvailable",
                f"must be at most {guaranteed}, the job's tasks less its elastic surplus "
                f"(tasks above minReplicas are never needed to start), got {min_available}")
        ok = False
    return found if ok else None


def _group(log: IssueLog, doc: DocRef, path: str, name: str | None,
           groups: Sequence[TaskGroup]) -> TaskGroup | None:
    names = ", ".join(repr(g.name) for g in groups)
    if name is None:
        if len(groups) == 1:
            return groups[0]
        log.add(doc, path, f"the job has several task groups ({names}): name the elastic one"
                + (" (spec.elastic.taskGroup)" if path != "spec.elastic.taskGroup" else ""))
        return None
    for group in groups:
        if group.name == name:
            return group
    log.add(doc, path, f"unknown task group {name!r}; expected one of {names}")
    return None


def _flag(log: IssueLog, doc: DocRef, notes: Mapping[str, str], key: str) -> bool:
    value = notes.get(key, "false").strip().lower()
    if value not in ("true", "false"):
        log.add(doc, _note(key), f'must be "true" or "false", got {notes[key]!r}')
    return value == "true"


def _seconds(log: IssueLog, doc: DocRef, path: str, value: Duration) -> float:
    try:
        seconds = parse_duration(value)
    except (ValueError, OverflowError) as exc:
        log.add(doc, path, str(exc))
        return 0.0
    if not math.isfinite(seconds):  # 'inf', 'nan', '1e999' read as floats
        log.add(doc, path, f"must be a finite number of seconds, got {quote(value)}")
        return 0.0
    return seconds


def _note(key: str) -> str:
    return f"metadata.annotations.{key}"
