"""The las plugin's kept attained-service classes (issue 18) answer as a fresh reading.

`shoal.scheduler.service_classes` keeps each job's queue index between cycles with the
instant before which it cannot move, and the plugin's `next_change` works out exactly only
the jobs whose estimated crossing comes near the soonest. Here one plugin instance is kept
across a random sequence of cycles — the clock moving by random steps, often landing on or
right by a threshold crossing, tasks starting and stopping, earlier runs' service carried
into a job's spec as the simulator does on eviction — and every cycle its queue indices and
`next_change` must equal the plain definitions: the index of `attained(now)` among the
thresholds, and the soonest crossing over every running job at its current rate.
"""

from __future__ import annotations

import bisect
from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from shoal.api import Job, Node, Resources, SchedulerName, Task, TaskGroup, TaskState
from shoal.scheduler.model import SchedulerModel
from shoal.scheduler.plugins.las import LasArguments, LeastAttainedService
from shoal.scheduler.session import Session

THRESHOLDS = [3600.0, 36000.0]


def plain_next_change(model: SchedulerModel) -> float | None:
    best: float | None = None
    for job in model.jobs.values():
        if not job.running:
            continue
        rate = sum(job.job.group(t.ref.group).resources.gpu for t in job.running)
        attained = job.attained(model.now)
        index = bisect.bisect_right(THRESHOLDS, attained)
        if rate <= 0 or index >= len(THRESHOLDS):
            continue
        at = model.now + (THRESHOLDS[index] - attained) / rate
        best = at if best is None else min(best, at)
    return best


def spec(name: str, tasks: int, gpu: int, attained: float) -> Job:
    return Job(name, (TaskGroup("w", tasks, Resources.of(cpu=100, gpu=gpu)),),
               scheduler_name=SchedulerName.SHOAL, attained_gpu_seconds=attained)


steps = st.lists(st.tuples(
    st.sampled_from(["tick", "to-crossing", "start", "stop", "carry"]),
    st.integers(0, 5), st.floats(0.0, 5000.0, allow_nan=False)), min_size=1, max_size=25)


@settings(max_examples=200, deadline=None)
@given(shapes=st.lists(st.tuples(st.integers(1, 3), st.integers(0, 8),
                                 st.sampled_from([0.0, 100.0, 3599.0, 3600.0, 20000.0])),
                       min_size=1, max_size=6),
       steps=steps)
def test_kept_classes_answer_as_a_fresh_reading(
        shapes: list[tuple[int, int, float]], steps: list[tuple[str, int, float]]) -> None:
    model = SchedulerModel([Node(f"n{i}", Resources.of(cpu=64_000, memory=65_536, gpu=64))
                            for i in range(2)])
    for i, (tasks, gpu, attained) in enumerate(shapes):
        model.add_job(spec(f"j{i}", tasks, gpu, attained))
    las = LeastAttainedService(LasArguments(thresholds=THRESHOLDS))
    names = sorted(model.jobs)
    for kind, pick, amount in steps:
        name = names[pick % len(names)]
        info = model.jobs[name]
        if kind == "tick":
            model.now += amount
        elif kind == "to-crossing":
            # Land on, or a hair either side of, the next crossing the plain reading sees.
            at = plain_next_change(model)
            if at is not None:
                model.now = max(model.now, at + (amount % 3 - 1) * 1e-9 * max(1.0, at))
        elif kind == "start" and info.pending:
            group = next(iter(info.pending))
            index = info.pending[group][0]
            model.remove_job(name)
            job = info.job
            done = [t for t in job.tasks if t.state is TaskState.RUNNING]
            tasks = (*[replace(t) for t in done],
                     Task(name, group, index, TaskState.RUNNING, f"n{index % 2}",
                          started=model.now))
            model.add_job(replace(job, tasks=tasks))
        elif kind == "stop" and info.running:
            model.release_task(info.running[-1].ref)
        elif kind == "carry":
            info.job = replace(info.job, attained_gpu_seconds=info.job.attained_gpu_seconds
                               + amount)
            info.note_change()  # as the simulator does (`shoal.scheduler.job_changes`)
        session = Session(model, [las])
        for job in model.jobs.values():
            want = bisect.bisect_right(THRESHOLDS, job.attained(model.now))
            assert las.queue_index(job) == want, (job.name, model.now)
        assert las.next_change(session) == plain_next_change(model)
