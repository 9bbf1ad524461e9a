"""Launching and polling many attempts of the Ray engine at once: a cycle's launches, and the
polls of every running attempt, each in one round of Ray calls — one call per node — instead
of one call after the other (`RayExecutor.launch_many`, `poll_many`; `launch` and `poll` are
batches of one).

**Launch.** Each attempt's placement is recorded first (`RayExecutor._place`, an earlier
record wins), then the batch is split by node and each node's share goes to that node's
supervisor (`ray_worker.NodeSupervisor`, made if missing: get-if-exists by its name) in ONE
call, every node's call fired before one `ray.wait`, bounded by `CALL_TIMEOUT`, gathers the
answers. The supervisor's local executor claims each attempt on the node's disk before it
starts it, so what holds for one launch holds for each attempt of a batch: a batch launched
again (the same instance, a control plane restarted after a crash, or through a new
supervisor after the first died) gets the first launch's handles and starts no second
process. A spec on a node Ray does not know (or that is dead) starts nothing and its handle
polls LOST; a node whose answer is late gets handles without a process (pid 0) that poll as
its supervisor answers; a supervisor that died while launching is made again and asked
again, once, in a second round; a launch the node refused (a refused user, a bad name) is
that spec's result as the node's own exception. The others launch regardless.

**Poll.** Every attempt whose outcome this engine has not seen yet is asked at once, one
question per node, of the node's supervisor; one `ray.wait` bounded by `POLL_WAIT` gathers
the answers, and only when a new question was put: questions still in flight from an
earlier poll are taken as they stand. A late answer is RUNNING now, and its question stays
in flight for the next poll, never asked twice. A supervisor that died answers nothing: its
attempts are asked of their node's files next, in a second round (a short pinned task: an
attempt whose process is gone with no outcome recorded is LOST), and the next poll makes the
node a new supervisor, which adopts the attempts from those files. An error the node
answers (the call raised there) is logged and concluded nothing from: RUNNING, asked again.

**Beside the loop.** The control loop calls `launch_many` from a launch worker thread while
its own thread polls, stops and lists nodes. A batch touches only what belongs to the
attempts it launches (their placement records) and the map of supervisors (entries replaced
whole) and reads the node map, which `nodes` replaces whole; the polls' own state (the
questions in flight, the outcomes seen) is the poll side's alone. Ray's calls may come from
any thread of the driver.
"""

from __future__ import annotations

import logging
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

#: How long launch, adopt, stop requests and log reads wait for the node (a supervisor's
#: start included: a worker process on a busy machine can take seconds).
CALL_TIMEOUT = 120.0
#: How long a poll waits for a fresh answer before counting the attempt as RUNNING; the
#: question stays in flight and a later poll takes its answer without waiting, so a node
#: that stopped answering never holds the control loop for more than this once per attempt.
POLL_WAIT = 0.5

log = logging.getLogger(__name__)

LOST_NODE = TaskStatus(TaskPhase.LOST, detail="its Ray node is gone or unknown")


class NodeGoneError(Exception):
    """The node an attempt was placed on is unknown, dead, or did not answer."""


def supervisor_name(node: str) -> str:
    """The name of a node's supervisor actor in the engine's namespace: the node alone
    decides it (an attempt's name has no ":" first: a job name cannot hold one)."""
    return f"supervisor:{node}"


def attempt_name(job: str, group: str, index: int, attempt: int) -> str:
    """An attempt's key in the engine's maps: the attempt alone decides it."""
    return f"{job}:{group}:{index}:{attempt}"


def _task_name(task: RunningTask) -> str:
    return attempt_name(task.job, task.group, task.index, task.attempt)


# ---- launch -----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Launch:
    """One spec of a batch, placed: where its result goes, and its node."""

    slot: int
    spec: TaskLaunch
    node: str


def _placed(engine: RayExecutor, slot: int, spec: TaskLaunch) -> _Launch:
    """Check the spec (ValueError: it can never run, and nothing is claimed) and record its
    node (a relaunch goes where the first launch went)."""
    if not spec.command:
        raise ValueError("a task needs a command")
    check_name("job", spec.job)
    check_name("group", spec.group)
    check_name("node", spec.node)
    return _Launch(slot, spec, engine._place(spec))


def launch_many(engine: RayExecutor, specs: Sequence[TaskLaunch]
                ) -> list[RunningTask | BaseException]:
    """Launch the specs' attempts together (the module docstring): one result per spec, in
    order, its handle or the exception its launch raised."""
    results: list[RunningTask | BaseException | None] = [None] * len(specs)
    by_node: dict[str, list[_Launch]] = {}
    for slot, spec in enumerate(specs):
        try:
            item = _placed(engine, slot, spec)
        except Exception as error:  # the contract returns it, per spec
            results[slot] = error
            continue
        by_node.setdefault(item.node, []).append(item)
    for round_ in range(2):  # a second round for the nodes whose supervisor died
        fired: list[tuple[str, list[_Launch], Any]] = []
        for node, items in by_node.items():
            try:
                supervisor = engine._supervisor(node, fresh=round_ > 0)
                if supervisor is None:  # unknown or dead node: nothing starts, it is lost
                    for item in items:
                        results[item.slot] = _placeholder(engine, item.spec)
                    continue
                fired.append((node, items, supervisor.launch_many.remote(
                    engine._setup(node), [item.spec for item in items])))
            except Exception as error:  # the contract returns it, per spec
                for item in items:
                    results[item.slot] = error
        if fired:
            ray.wait([ref for _, _, ref in fired], num_returns=len(fired),
                     timeout=CALL_TIMEOUT)
        by_node = {}
        for node, items, ref in fired:
            try:
                answers: list[RunningTask | BaseException] = ray.get(ref, timeout=0)
            except GetTimeoutError:  # late: handles that poll as the supervisor answers
                answers = [_placeholder(engine, item.spec) for item in items]
            except RayActorError:
                engine._lose_supervisor(node)
                by_node[node] = items
                continue
            except RayTaskError as exc:  # the call itself failed: each spec's result
                answers = [exc.cause if exc.cause is not None else exc] * len(items)
            except RayError as exc:
                answers = [exc] * len(items)
            for item, answer in zip(items, answers, strict=True):
                results[item.slot] = answer
        if not by_node:
            break
    for items in by_node.values():  # its supervisor died twice: no launch was answered
        for item in items:
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
    """A poll in flight: where its answer goes, the call that carries it (one per node and
    poll), its place among that call's answers, and whether the node's supervisor (not its
    files, by a short pinned task) was asked."""

    slot: int
    name: str
    task: RunningTask
    ref: Any
    position: int
    of_supervisor: bool


def _ask_supervisors(engine: RayExecutor, asking: list[tuple[int, str, RunningTask]],
                     statuses: list[TaskStatus | None]) -> list[_Question]:
    """Put each node's questions to its supervisor in one call; a status at once where
    there is no node to ask."""
    by_node: dict[str, list[tuple[int, str, RunningTask]]] = {}
    for slot, name, task in asking:
        node = engine._placed(task.job, task.group, task.index, task.attempt)
        if node is None:
            statuses[slot] = LOST_ACTOR
            continue
        by_node.setdefault(node, []).append((slot, name, task))
    questions: list[_Question] = []
    for node, items in by_node.items():
        supervisor = engine._supervisor(node)
        if supervisor is None:
            for slot, _, _ in items:
                statuses[slot] = LOST_NODE
            continue
        ref = supervisor.poll_many.remote(engine._setup(node), [task for _, _, task in items])
        questions += [_Question(slot, name, task, ref, position, True)
                      for position, (slot, name, task) in enumerate(items)]
    return questions


def _ask_files(engine: RayExecutor, question: _Question) -> _Question | TaskStatus:
    """Ask the attempt's node's files (a short pinned task); a status at once when its
    node is gone."""
    task = question.task
    node = engine._placed(task.job, task.group, task.index, task.attempt)
    try:
        ref = engine._submit_on(node, "poll", engine._record(task))
    except NodeGoneError:
        return LOST_NODE if node is not None else LOST_ACTOR
    return _Question(question.slot, question.name, task, ref, -1, False)


def poll_many(engine: RayExecutor, tasks: Sequence[RunningTask]) -> list[TaskStatus]:
    """Where each attempt stands (the module docstring), one status per task, in order."""
    statuses: list[TaskStatus | None] = [None] * len(tasks)
    questions: list[_Question] = []
    asking: list[tuple[int, str, RunningTask]] = []
    for slot, task in enumerate(tasks):
        name = _task_name(task)
        ended = engine._ended.get(name)
        if ended is not None:
            statuses[slot] = ended
            continue
        asked = engine._asked.get(name)
        if asked is not None:
            questions.append(_Question(slot, name, task, *asked))
            continue
        asking.append((slot, name, task))
    fresh = bool(asking)
    questions += _ask_supervisors(engine, asking, statuses)
    while questions:
        questions = _gather(engine, questions, statuses, POLL_WAIT if fresh else 0.0)
        fresh = True
    for slot, task in enumerate(tasks):
        status = statuses[slot]
        if status is not None and not status.running:
            engine._ended[_task_name(task)] = status
    return [RUNNING if status is None else status for status in statuses]


def _gather(engine: RayExecutor, questions: list[_Question],
            statuses: list[TaskStatus | None], wait: float) -> list[_Question]:
    """Take the answers that came within `wait` (the others stay in flight, RUNNING now);
    returns the questions to put to the files of attempts whose supervisor died."""
    refs = list(dict.fromkeys(question.ref for question in questions))
    ready, _ = ray.wait(refs, num_returns=len(refs), timeout=wait)
    answered = set(ready)
    again: list[_Question] = []
    for question in questions:
        if question.ref not in answered:
            engine._asked[question.name] = (question.ref, question.position,
                                            question.of_supervisor)
            continue
        engine._asked.pop(question.name, None)
        task = question.task
        try:
            answer = ray.get(question.ref)
            status: TaskStatus = answer[question.position] if question.of_supervisor \
                else answer
        except RayActorError:
            node = engine._placed(task.job, task.group, task.index, task.attempt)
            engine._lose_supervisor(node or "")
            asked = _ask_files(engine, question)
            if isinstance(asked, TaskStatus):
                statuses[question.slot] = asked
            else:
                again.append(asked)
            continue
        except RayTaskError as exc:
            # The node answered with an error (its files unreadable for a moment, say):
            # nothing is concluded from it, and the attempt is asked again next poll.
            log.warning("polling %s failed on its node: %s", question.name, exc)
            continue
        except RayError as exc:
            node = engine._placed(task.job, task.group, task.index, task.attempt)
            engine._forget_node(node or "", exc)
            status = LOST_NODE
        statuses[question.slot] = status
    return again
