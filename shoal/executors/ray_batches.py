"""Launching and polling many attempts of the Ray engine at once: a cycle's launches, and the
polls of every running attempt, each in one round of Ray calls instead of one call after the
other (`RayExecutor.launch_many`, `poll_many`; `launch` and `poll` are batches of one).

**Launch.** Each attempt's placement is recorded first (`RayExecutor._place`, an earlier
record wins), then every attempt's actor is made (get-if-exists, by the attempt's name) and
every `launch` call is fired before any answer is awaited, so the actors' worker processes
start side by side; one `ray.wait`, bounded by `CALL_TIMEOUT`, gathers the answers. What
holds for one launch holds for each attempt of a batch: an attempt's actor is found again by
its name and the node's on-disk claim answers a second launch with the first one's handle,
so a batch launched again (the same instance, or a control plane restarted after a crash)
starts no second process. A spec on a node Ray does not know (or that is dead) starts
nothing and its handle polls LOST; a launch whose answer is late gets a handle without a
process (pid 0) that polls as its actor answers; an actor found while it was being ended is
made again, once, in a second round; a launch the node refused (a refused user, a bad name)
is that spec's result as the node's own exception. The others launch regardless.

**Poll.** Every attempt whose outcome this engine has not seen yet is asked at once, of its
actor (or, once that has ended, of its node, by a short pinned task); one `ray.wait` bounded
by `POLL_WAIT` gathers the answers, and only when a new question was put: answers still in
flight from an earlier poll are taken as they stand. A late answer is RUNNING now, and its
question stays in flight for the next poll, never asked twice. An actor that died answers
nothing: its attempts' nodes are asked next, in a second round. A known outcome ends the
attempt's actor (it costs a Ray worker process).

**Beside the loop.** The control loop calls `launch_many` from a launch worker thread while
its own thread polls, stops and lists nodes. A batch touches only what belongs to the
attempts it launches (their placement records, their actors' entries in the engine's map of
actors) and reads the node map, which `nodes` replaces whole; the polls' own state (the
questions in flight, the outcomes seen) is the poll side's alone. Ray's calls may come from
any thread of the driver.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import ray
from ray.exceptions import GetTimeoutError, RayActorError, RayError, RayTaskError

from shoal.executors.local_files import check_name
from shoal.executors.ray_worker import LOST_ACTOR
from shoal.executors.task import RUNNING, RunningTask, TaskLaunch, TaskPhase, TaskStatus

if TYPE_CHECKING:
    from shoal.executors.ray_engine import RayExecutor

#: How long launch, adopt, stop requests and log reads wait for the actor (its start
#: included: a worker process on a busy machine can take seconds).
CALL_TIMEOUT = 120.0
#: How long a poll waits for a fresh answer before counting the attempt as RUNNING; the
#: question stays in flight and a later poll takes its answer without waiting, so a node
#: that stopped answering never holds the control loop for more than this once per attempt.
POLL_WAIT = 0.5

LOST_NODE = TaskStatus(TaskPhase.LOST, detail="its Ray node is gone or unknown")


class NodeGoneError(Exception):
    """The node an attempt was placed on is unknown, dead, or did not answer."""


def actor_name(job: str, group: str, index: int, attempt: int) -> str:
    """The name of an attempt's actor: the attempt alone decides it."""
    return f"{job}:{group}:{index}:{attempt}"


def _task_name(task: RunningTask) -> str:
    return actor_name(task.job, task.group, task.index, task.attempt)


# ---- launch -----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Launch:
    """One spec of a batch, placed: where its result goes, its actor's name, its node."""

    slot: int
    spec: TaskLaunch
    name: str
    node: str


def _placed(engine: RayExecutor, slot: int, spec: TaskLaunch) -> _Launch:
    """Check the spec (ValueError: it can never run, and nothing is claimed) and record its
    node (a relaunch goes where the first launch went)."""
    if not spec.command:
        raise ValueError("a task needs a command")
    check_name("job", spec.job)
    check_name("group", spec.group)
    check_name("node", spec.node)
    node = engine._place(spec)
    return _Launch(slot, spec, actor_name(spec.job, spec.group, spec.index, spec.attempt),
                   node)


def launch_many(engine: RayExecutor, specs: Sequence[TaskLaunch]
                ) -> list[RunningTask | BaseException]:
    """Launch the specs' attempts together (the module docstring): one result per spec, in
    order, its handle or the exception its launch raised."""
    results: list[RunningTask | BaseException | None] = [None] * len(specs)
    pending: list[_Launch] = []
    for slot, spec in enumerate(specs):
        try:
            pending.append(_placed(engine, slot, spec))
        except Exception as error:  # the contract returns it, per spec
            results[slot] = error
    for _ in range(2):  # a second round for the actors found while being ended
        fired: list[tuple[_Launch, Any]] = []
        for item in pending:
            try:
                actor = engine._actors.get(item.name) or engine._create_actor(item.name,
                                                                              item.node)
                if actor is None:  # unknown or dead node: nothing starts, the attempt is lost
                    results[item.slot] = _placeholder(engine, item.spec)
                    continue
                fired.append((item, actor.launch.remote(item.spec)))
            except Exception as error:  # the contract returns it, per spec
                results[item.slot] = error
        if fired:
            ray.wait([ref for _, ref in fired], num_returns=len(fired), timeout=CALL_TIMEOUT)
        pending = []
        for item, ref in fired:
            try:
                results[item.slot] = ray.get(ref, timeout=0)
            except GetTimeoutError:  # late: a handle that polls as its actor answers
                results[item.slot] = _placeholder(engine, item.spec)
            except RayActorError:
                engine._actors.pop(item.name, None)
                pending.append(item)
            except RayTaskError as exc:
                # The node refused the launch and started nothing: the caller gets the
                # node's own error, not Ray's traceback.
                engine._retire(item.name)
                results[item.slot] = exc.cause if exc.cause is not None else exc
            except Exception as error:  # the contract returns it, per spec
                results[item.slot] = error
        if not pending:
            break
        engine._wait_name_free([item.name for item in pending])
    for item in pending:  # its actor was being ended twice: no launch was answered
        results[item.slot] = _placeholder(engine, item.spec)
    return [_result(result) for result in results]


def _placeholder(engine: RayExecutor, spec: TaskLaunch) -> RunningTask:
    return engine._placeholder(spec.job, spec.group, spec.index, spec.attempt)


def _result(result: RunningTask | BaseException | None) -> RunningTask | BaseException:
    if result is None:  # every slot is filled above; a gap would be a bug of this module
        raise AssertionError("a launch of the batch has no result")
    return result


# ---- poll -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Question:
    """A poll in flight: where its answer goes, and whether its attempt's actor or its node
    (a short pinned task) was asked."""

    slot: int
    name: str
    task: RunningTask
    ref: Any
    of_actor: bool


def _ask(engine: RayExecutor, slot: int, name: str, task: RunningTask, *,
         of_actor: bool) -> _Question | TaskStatus:
    """Put the question to the attempt's actor (unless it just died), else to its node; a
    status at once when there is nobody to ask."""
    actor = engine._actor(name) if of_actor else None
    if actor is not None:
        return _Question(slot, name, task, actor.poll.remote(task), True)
    node = engine._placed(task.job, task.group, task.index, task.attempt)
    try:
        ref = engine._submit_on(node, "poll", engine._record(task))
    except NodeGoneError:
        return LOST_NODE if node is not None else LOST_ACTOR
    return _Question(slot, name, task, ref, False)


def poll_many(engine: RayExecutor, tasks: Sequence[RunningTask]) -> list[TaskStatus]:
    """Where each attempt stands (the module docstring), one status per task, in order."""
    statuses: list[TaskStatus | None] = [None] * len(tasks)
    questions: list[_Question] = []
    fresh = False
    for slot, task in enumerate(tasks):
        name = _task_name(task)
        ended = engine._ended.get(name)
        if ended is not None:
            statuses[slot] = ended
            continue
        asked = engine._asked.get(name)
        if asked is not None:
            questions.append(_Question(slot, name, task, asked[0], asked[1]))
            continue
        question = _ask(engine, slot, name, task, of_actor=True)
        if isinstance(question, TaskStatus):
            statuses[slot] = question
        else:
            questions.append(question)
            fresh = True
    while questions:
        questions = _gather(engine, questions, statuses, POLL_WAIT if fresh else 0.0)
        fresh = True
    for slot, task in enumerate(tasks):
        status = statuses[slot]
        if status is not None and not status.running:
            name = _task_name(task)
            engine._ended[name] = status
            engine._retire(name)
    return [RUNNING if status is None else status for status in statuses]


def _gather(engine: RayExecutor, questions: list[_Question],
            statuses: list[TaskStatus | None], wait: float) -> list[_Question]:
    """Take the answers that came within `wait` (the others stay in flight, RUNNING now);
    returns the questions to put to the nodes of attempts whose actor died."""
    # One question per attempt, but a task polled twice in one batch shares its question.
    refs = list(dict.fromkeys(question.ref for question in questions))
    ready, _ = ray.wait(refs, num_returns=len(refs), timeout=wait)
    answered = set(ready)
    again: list[_Question] = []
    for question in questions:
        if question.ref not in answered:
            engine._asked[question.name] = (question.ref, question.of_actor)
            continue
        engine._asked.pop(question.name, None)
        task = question.task
        try:
            status: TaskStatus = ray.get(question.ref)
        except RayActorError:
            engine._actors.pop(question.name, None)
            if not question.of_actor:
                statuses[question.slot] = LOST_ACTOR
                continue
            asked = _ask(engine, question.slot, question.name, task, of_actor=False)
            if isinstance(asked, TaskStatus):
                statuses[question.slot] = asked
            else:
                again.append(asked)
            continue
        except RayError as exc:
            node = engine._placed(task.job, task.group, task.index, task.attempt)
            engine._forget_node(node or "", exc)
            status = LOST_NODE
        statuses[question.slot] = status
    return again
