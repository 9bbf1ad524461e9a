"""Pending reasons that say why nothing was evicted (`shoal.scheduler.held_back`): the note
appears only when the action runs and could otherwise have evicted, once per cause, and the
reason's kind is left as it was."""

from __future__ import annotations

from shoal.api.decisions import PendingKind
from shoal.scenario import run_scenario
from shoal.scheduler.profile import Profile
from shoal.scheduler.session import MAX_HELD_BACK_NOTES
from shoal.spec import load_text

PREEMPT = "enqueue, allocate, preempt"
BOTH = "enqueue, allocate, preempt, reclaim"
NO_EVICTION = "enqueue, allocate, backfill"

NEVER_WITHIN = "virtual cluster 'team' preempts nothing within itself (withinQueue: Never)"
NEVER_CLASS = "its priority class 'patient' never preempts (preemptionPolicy: Never)"


def documents(*, policy: str = "", low_gpus: int = 8, low_class: str = "experiment",
              urgent_class: str = "production", other: bool = False) -> str:
    """One 8-GPU node; `low` runs in `team` on `low_gpus` GPUs (and, with `other`, a
    production job on the rest); `urgent` of `team` wants the whole node."""
    low_range = ", ".join(str(i) for i in range(low_gpus))
    rest = ", ".join(str(i) for i in range(low_gpus, 8))
    text = f"""
apiVersion: shoal/v1
kind: Node
metadata: {{name: node-0}}
spec:
  capacity: {{cpu: 64, memory: 512Gi, gpu: 8}}
---
apiVersion: shoal/v1
kind: VirtualCluster
metadata: {{name: team}}
spec:
  flexibleResourceMin: {{gpu: 8}}
  {policy}
---
apiVersion: shoal/v1
kind: PriorityClass
metadata: {{name: patient}}
value: 100000
preemptionPolicy: Never
---
apiVersion: shoal/v1
kind: PriorityClass
metadata: {{name: vip}}
value: 1000000
---
apiVersion: shoal/v1
kind: Job
metadata: {{name: low, creationTimestamp: 0}}
spec:
  queue: team
  schedulerName: shoal
  priorityClassName: {low_class}
  taskGroups:
    - {{name: w, replicas: 1, resources: {{cpu: 8, memory: 32Gi, gpu: {low_gpus}}}}}
status:
  tasks:
    - {{group: w, index: 0, node: node-0, gpus: [{low_range}], startTime: 0}}
---
apiVersion: shoal/v1
kind: Job
metadata: {{name: urgent, creationTimestamp: 1}}
spec:
  queue: team
  schedulerName: shoal
  priorityClassName: {urgent_class}
  taskGroups:
    - {{name: w, replicas: 1, resources: {{cpu: 8, memory: 32Gi, gpu: 8}}}}
"""
    if other:
        text += f"""---
apiVersion: shoal/v1
kind: Job
metadata: {{name: keeper, creationTimestamp: 0}}
spec:
  queue: team
  schedulerName: shoal
  priorityClassName: vip
  taskGroups:
    - {{name: w, replicas: 1, resources: {{cpu: 8, memory: 32Gi, gpu: {8 - low_gpus}}}}}
status:
  tasks:
    - {{group: w, index: 0, node: node-0, gpus: [{rest}], startTime: 0}}
"""
    return text


def urgent_reason(text: str, actions: str) -> tuple[PendingKind, str]:
    profile = Profile.from_dict({"actions": actions, "tiers": [
        {"plugins": [{"name": "priority"}, {"name": "gang"}]},
        {"plugins": [{"name": "predicates"},
                     {"name": "capacity", "arguments": {"reclaimMode": "reclaim"}},
                     {"name": "placement"}]}]}, "test.profileSpec")
    result = run_scenario(load_text(text, source="test.yaml"), profile, 3)
    assert not result.evictions
    reasons = {p.job: p.reason for p in result.pending}
    return reasons["urgent"].kind, reasons["urgent"].message


def test_within_queue_never_says_why_low_was_spared() -> None:
    kind, message = urgent_reason(documents(policy="preemption: {withinQueue: Never}"), PREEMPT)
    assert kind is PendingKind.INSUFFICIENT_RESOURCES
    assert message.endswith("; " + NEVER_WITHIN)


def test_no_note_without_a_preempting_action() -> None:
    _, message = urgent_reason(documents(policy="preemption: {withinQueue: Never}"),
                               NO_EVICTION)
    assert "withinQueue" not in message


def test_no_note_when_the_default_policy_would_take_nothing_either() -> None:
    # low outranks urgent: LowerPriority (the default) would not take it either.
    _, message = urgent_reason(documents(policy="preemption: {withinQueue: Never}",
                                         low_class="vip"), PREEMPT)
    assert "withinQueue" not in message


def test_no_note_when_the_excluded_victim_frees_too_little() -> None:
    # low frees 2 GPUs; the other 6 are held by a job nobody could preempt.
    _, message = urgent_reason(documents(policy="preemption: {withinQueue: Never}",
                                         low_gpus=2, other=True), PREEMPT)
    assert "withinQueue" not in message
    assert "0 gpu free" in message


def test_priority_class_never_noted_once_across_preempt_and_reclaim() -> None:
    kind, message = urgent_reason(documents(urgent_class="patient"), BOTH)
    assert kind is PendingKind.INSUFFICIENT_RESOURCES
    assert message.count(NEVER_CLASS) == 1


def test_priority_class_never_with_nothing_to_take_says_nothing() -> None:
    _, message = urgent_reason(documents(urgent_class="patient",
                                         low_class="vip"), PREEMPT)
    assert "preemptionPolicy" not in message


def test_notes_are_bounded() -> None:
    # withinQueue Never and a priority class that never preempts, in both actions: the
    # class's note comes once, and no more than the bound are appended.
    _, message = urgent_reason(documents(policy="preemption: {withinQueue: Never}",
                                         urgent_class="patient"), BOTH)
    assert message.count(NEVER_CLASS) == 1
    assert message.count("; ") <= MAX_HELD_BACK_NOTES
