"""Each Sedna kind's lowering (`shoal.spec.imports.sedna_common` holds what they share), and what
its workers are told.

Sedna's controllers hand their workers environment variables; the ones Shoal can give are
given under the same names: `JOB_NAME`, `NAMESPACE`, `MODEL_NAME`, `DATASET_NAME`,
`PARTICIPANTS_COUNT`, `HEM_NAME`/`HEM_PARAMETERS`. Addresses are known only at launch, so a
worker with a command runs it through `sh -c` that exports them first from Shoal's own
variables (`SHOAL_<GROUP>_HOSTS`, `SHOAL_TASK_PORT`): a federated trainer gets `AGG_IP` and
`AGG_PORT` (the aggregator's first endpoint), the aggregator `AGG_BIND_PORT`; an inference
edge worker gets `BIG_MODEL_IP`/`BIG_MODEL_PORT`, its cloud worker `BIG_MODEL_BIND_PORT`.

Triggers are not Shoal's to watch (it sees no dataset grow, no metric): a phase starts when
the phase before it has succeeded, and a trigger is handed to the phase it gates, for its
program to honour — the train trigger to train (`TRIGGER_CHECK_PERIOD_SECONDS`,
`TRIGGER_TIMER`, `TRIGGER_CONDITION`), the deploy trigger to eval (`DEPLOY_CONDITION`): eval
exits non-zero when the new model should not be deployed, and deploy is then cancelled
(`dependsOn`'s afterok).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from shoal.api.objects import NodeRole
from shoal.spec.errors import DocRef, IssueLog, join_path, quote
from shoal.spec.imports import Lowered
from shoal.spec.imports.sedna_common import (
    INCREMENTAL,
    Header,
    Worker,
    lowered,
    mapping,
    ref_name,
    refuse_unknown,
    worker,
)

#: Training workers of one federated job: with the aggregator, the most task groups a job has.
MAX_TRAINING_WORKERS = 63
_SCHEDULING = ("schedulerName", "schedulingPolicy")
AGGREGATOR_EXPORTS = 'export AGG_BIND_PORT="$SHOAL_TASK_PORT"'
TRAINER_EXPORTS = ('a="${SHOAL_AGGREGATOR_HOSTS%%,*}"; '
                   'export AGG_IP="${a%:*}" AGG_PORT="${a##*:}"')
CLOUD_EXPORTS = 'export BIG_MODEL_BIND_PORT="$SHOAL_TASK_PORT"'
EDGE_EXPORTS = ('a="${SHOAL_CLOUD_HOSTS%%,*}"; '
                'export BIG_MODEL_IP="${a%:*}" BIG_MODEL_PORT="${a##*:}"')
_OPERATORS = frozenset({">", ">=", "<", "<=", "=", "=="})
#: The longest trigger or parameter text handed on in one variable.
_MAX_TEXT = 4096


def federated(log: IssueLog, doc: DocRef, header: Header, data: Mapping[str, Any]
              ) -> list[Lowered] | None:
    spec = data["spec"]
    refuse_unknown(log, doc, "spec", spec, ("aggregationWorker", "trainingWorkers",
                                            "pretrainedModel", "transmitter", *_SCHEDULING))
    _transmitter(log, doc, spec)
    pretrained = ref_name(log, doc, "spec", spec, "pretrainedModel")
    aggregation = mapping(log, doc, "spec", spec, "aggregationWorker", required=True)
    trainers = spec.get("trainingWorkers")
    if not isinstance(trainers, list) or not trainers:
        log.add(doc, "spec.trainingWorkers", "must list at least one training worker")
        return None
    if len(trainers) > MAX_TRAINING_WORKERS:
        log.add(doc, "spec.trainingWorkers", f"must list at most {MAX_TRAINING_WORKERS} "
                f"training workers (one task group each), got {len(trainers)}")
        return None
    if aggregation is None:
        return None
    shared = {**_base_env(header), "PARTICIPANTS_COUNT": str(len(trainers))}
    if pretrained is not None:
        shared["PRETRAINED_MODEL_NAME"] = pretrained
    path = "spec.aggregationWorker"
    refuse_unknown(log, doc, path, aggregation, ("model", "template", "workerSpec"))
    model = ref_name(log, doc, path, aggregation, "model")
    if model is not None:
        shared["MODEL_NAME"] = model
    workers: list[Worker] = []
    # Sedna's controller runs both kinds of federated worker with restartPolicy OnFailure:
    # a trainer started before its aggregator listens fails, and is tried again.
    agg = worker(log, doc, path, aggregation, NodeRole.CLOUD, group="aggregator",
                 native="spec.taskGroups[0]", restart="OnFailure")
    if agg is not None:
        _tell(agg, shared, AGGREGATOR_EXPORTS, "sedna-aggregator")
        workers.append(agg)
    for i, trainer in enumerate(trainers):
        where = f"spec.trainingWorkers[{i}]"
        if not isinstance(trainer, Mapping):
            log.add(doc, where, f"must be a training worker (dataset, template), got "
                                f"{quote(trainer)}")
            continue
        refuse_unknown(log, doc, where, trainer, ("dataset", "template", "workerSpec"))
        dataset = ref_name(log, doc, where, trainer, "dataset")
        found = worker(log, doc, where, trainer, NodeRole.EDGE, group=f"trainer-{i}",
                       native=f"spec.taskGroups[{i + 1}]", restart="OnFailure")
        if found is not None:
            env = dict(shared) if dataset is None else {**shared, "DATASET_NAME": dataset}
            _tell(found, env, TRAINER_EXPORTS, "sedna-trainer")
            workers.append(found)
    if len(workers) != len(trainers) + 1:
        return None
    job = header.job(header.name, [w.group for w in workers])
    return [lowered(doc, data, job, workers)]


def _transmitter(log: IssueLog, doc: DocRef, spec: Mapping[str, Any]) -> None:
    transmitter = mapping(log, doc, "spec", spec, "transmitter")
    if transmitter is None:
        return
    for key in transmitter:
        if key == "s3":
            log.add(doc, "spec.transmitter.s3",
                    "is not supported: it names a Kubernetes secret (credentialName), and "
                    "Shoal has none; the workers reach the aggregator directly (ws)")
        elif key != "ws":
            log.add(doc, join_path("spec.transmitter", str(key)), "unknown field; allowed "
                                                                  "here: ws")


def phases(log: IssueLog, doc: DocRef, header: Header, data: Mapping[str, Any]
           ) -> list[Lowered] | None:
    """Incremental and lifelong learning: train, then eval, then deploy (a service)."""
    spec = data["spec"]
    incremental = data["kind"] == INCREMENTAL
    refuse_unknown(log, doc, "spec", spec, (
        "dataset", "trainSpec", "evalSpec", "deploySpec", "outputDir", "credentialName",
        "nodeName", *_SCHEDULING, *(("initialModel",) if incremental else ())))
    if "credentialName" in spec:
        log.add(doc, "spec.credentialName",
                "is not supported: it names a Kubernetes secret, and Shoal has none; give "
                "the workers what they need to write outputDir in their env")
    if "nodeName" in spec:
        log.add(doc, "spec.nodeName", "is Sedna's pre-v0.3 form: pin each phase in its "
                                      "template (template.spec.nodeName)")
    env = _base_env(header)
    dataset = mapping(log, doc, "spec", spec, "dataset")
    if dataset is not None:
        name = ref_name(log, doc, "spec", spec, "dataset")
        if name is not None:
            env["DATASET_NAME"] = name
        prob = dataset.get("trainProb")
        if prob is not None:
            if isinstance(prob, bool) or not isinstance(prob, int | float) or not 0 <= prob <= 1:
                log.add(doc, "spec.dataset.trainProb", f"must be a number in [0, 1], got "
                                                       f"{quote(prob)}")
            else:
                env["TRAIN_PROB"] = str(prob)
    output = spec.get("outputDir")
    if output is not None:
        if not isinstance(output, str) or len(output) > _MAX_TEXT:
            log.add(doc, "spec.outputDir", f"must be a path, got {quote(output)}")
        else:
            env["OUTPUT_DIR"] = output
    if incremental:
        model = ref_name(log, doc, "spec", spec, "initialModel")
        if model is not None:
            env["MODEL_NAME"] = model
    train = _phase(log, doc, spec, "trainSpec", ("template", "trigger"), NodeRole.CLOUD)
    evaluate = _phase(log, doc, spec, "evalSpec", ("template",), NodeRole.CLOUD)
    deploy = _phase(log, doc, spec, "deploySpec", (
        "template", *(("model", "trigger", "hardExampleMining") if incremental else ())),
        NodeRole.EDGE, service=True)
    if train is None or evaluate is None or deploy is None:
        return None
    train_env = {**env, **_trigger(log, doc, "spec.trainSpec", spec["trainSpec"])}
    _tell(train, train_env)
    deploy_spec = spec["deploySpec"]
    deploy_env = dict(env)
    condition = None
    if incremental:  # lifelong learning's deploySpec is its template only
        condition = _trigger(log, doc, "spec.deploySpec", deploy_spec).get("TRIGGER_CONDITION")
        deployed = ref_name(log, doc, "spec.deploySpec", deploy_spec, "model")
        if deployed is not None:
            deploy_env["DEPLOY_MODEL_NAME"] = deployed
        deploy_env.update(_mining(log, doc, "spec.deploySpec", deploy_spec))
    _tell(evaluate, env if condition is None else {**env, "DEPLOY_CONDITION": condition})
    _tell(deploy, deploy_env)
    name = header.name
    return [
        lowered(doc, data, header.job(f"{name}-train", [train.group]), [train]),
        lowered(doc, data, header.job(f"{name}-eval", [evaluate.group],
                                      dependsOn=[f"{name}-train"]), [evaluate]),
        lowered(doc, data, header.job(f"{name}-deploy", [deploy.group],
                                      dependsOn=[f"{name}-eval"], service=True), [deploy]),
    ]


def _phase(log: IssueLog, doc: DocRef, spec: Mapping[str, Any], key: str,
           allowed: tuple[str, ...], role: NodeRole, *, service: bool = False
           ) -> Worker | None:
    phase = mapping(log, doc, "spec", spec, key, required=True)
    if phase is None:
        return None
    path = f"spec.{key}"
    refuse_unknown(log, doc, path, phase, allowed + (("workerSpec",) if "workerSpec" in phase
                                                     else ()))
    group = key.removesuffix("Spec")
    return worker(log, doc, path, phase, role, group=group, native="spec.taskGroups[0]",
                  service=service)


def _trigger(log: IssueLog, doc: DocRef, path: str, phase: Mapping[str, Any]
             ) -> dict[str, str]:
    """A Sedna trigger as the variables its phase's program reads."""
    trigger = mapping(log, doc, path, phase, "trigger")
    if trigger is None:
        return {}
    at = join_path(path, "trigger")
    refuse_unknown(log, doc, at, trigger, ("checkPeriodSeconds", "timer", "condition"))
    out: dict[str, str] = {}
    period = trigger.get("checkPeriodSeconds")
    if period is not None:
        if isinstance(period, bool) or not isinstance(period, int) or period < 1:
            log.add(doc, join_path(at, "checkPeriodSeconds"),
                    f"must be a whole number of seconds, at least 1, got {quote(period)}")
        else:
            out["TRIGGER_CHECK_PERIOD_SECONDS"] = str(period)
    timer = mapping(log, doc, at, trigger, "timer")
    if timer is not None:
        refuse_unknown(log, doc, join_path(at, "timer"), timer, ("start", "end"))
        ends = [_time_of_day(timer.get("start")), _time_of_day(timer.get("end"))]
        if not all(isinstance(e, str) and 0 < len(e) <= 8 for e in ends):
            log.add(doc, join_path(at, "timer"), f"must give start and end as HH:MM, got "
                                                 f"{quote(dict(timer))}")
        else:
            out["TRIGGER_TIMER"] = f"{ends[0]}-{ends[1]}"
    condition = mapping(log, doc, at, trigger, "condition")
    if condition is not None:
        where = join_path(at, "condition")
        refuse_unknown(log, doc, where, condition, ("operator", "threshold", "metric"))
        operator, threshold, metric = (condition.get(k)
                                       for k in ("operator", "threshold", "metric"))
        if operator not in _OPERATORS:
            log.add(doc, join_path(where, "operator"),
                    f"must be one of {', '.join(sorted(_OPERATORS))}, got {quote(operator)}")
        elif isinstance(threshold, bool) or not isinstance(threshold, int | float):
            log.add(doc, join_path(where, "threshold"), f"must be a number, got "
                                                        f"{quote(threshold)}")
        elif not isinstance(metric, str) or not 0 < len(metric) <= 253:
            log.add(doc, join_path(where, "metric"), f"must be a metric's name, got "
                                                     f"{quote(metric)}")
        else:
            out["TRIGGER_CONDITION"] = f"{metric} {operator} {threshold:g}"
    return out


def _time_of_day(value: Any) -> Any:
    """HH:MM as written; YAML 1.1 reads an unquoted `20:00` as the sexagesimal 1200."""
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= 24 * 60:
        return f"{value // 60:02d}:{value % 60:02d}"
    return value


def _mining(log: IssueLog, doc: DocRef, path: str, owner: Mapping[str, Any]
            ) -> dict[str, str]:
    """Sedna's hard example mining, as its workers read it: HEM_NAME and HEM_PARAMETERS (a
    JSON object of the parameters' keys and values)."""
    mining = mapping(log, doc, path, owner, "hardExampleMining")
    if mining is None:
        return {}
    at = join_path(path, "hardExampleMining")
    refuse_unknown(log, doc, at, mining, ("name", "parameters"))
    name = mining.get("name")
    if not isinstance(name, str) or not 0 < len(name) <= 253:
        log.add(doc, join_path(at, "name"), f"must be the algorithm's name, got {quote(name)}")
        return {}
    parameters: dict[str, str] = {}
    given = mining.get("parameters") or []
    if not isinstance(given, list):
        log.add(doc, join_path(at, "parameters"), f"must be a list of {{key, value}}, got "
                                                  f"{quote(given)}")
        return {}
    for i, item in enumerate(given):
        if not (isinstance(item, Mapping) and set(item) == {"key", "value"}
                and isinstance(item["key"], str) and isinstance(item["value"], str)):
            log.add(doc, f"{at}.parameters[{i}]",
                    f"must be a {{key, value}} of strings, got {quote(item)}")
            return {}
        parameters[item["key"]] = item["value"]
    text = json.dumps(parameters, sort_keys=True)
    if len(text) > _MAX_TEXT:
        log.add(doc, join_path(at, "parameters"), f"must be at most {_MAX_TEXT} characters "
                                                  f"as JSON, got {len(text)}")
        return {}
    return {"HEM_NAME": name, "HEM_PARAMETERS": text}


def joint_inference(log: IssueLog, doc: DocRef, header: Header, data: Mapping[str, Any]
                    ) -> list[Lowered] | None:
    """A cloud model and an edge model, one online service."""
    spec = data["spec"]
    refuse_unknown(log, doc, "spec", spec, ("cloudWorker", "edgeWorker", *_SCHEDULING))
    cloud_spec = mapping(log, doc, "spec", spec, "cloudWorker", required=True)
    edge_spec = mapping(log, doc, "spec", spec, "edgeWorker", required=True)
    if cloud_spec is None or edge_spec is None:
        return None
    env = _base_env(header)
    refuse_unknown(log, doc, "spec.cloudWorker", cloud_spec,
                   ("model", "template", "workerSpec"))
    refuse_unknown(log, doc, "spec.edgeWorker", edge_spec,
                   ("model", "template", "hardExampleMining", "workerSpec"))
    cloud = worker(log, doc, "spec.cloudWorker", cloud_spec, NodeRole.CLOUD, group="cloud",
                   native="spec.taskGroups[0]", service=True)
    edge = worker(log, doc, "spec.edgeWorker", edge_spec, NodeRole.EDGE, group="edge",
                  native="spec.taskGroups[1]", service=True)
    big = ref_name(log, doc, "spec.cloudWorker", cloud_spec, "model")
    little = ref_name(log, doc, "spec.edgeWorker", edge_spec, "model")
    mining = _mining(log, doc, "spec.edgeWorker", edge_spec)
    if cloud is None or edge is None:
        return None
    _tell(cloud, env if big is None else {**env, "MODEL_NAME": big}, CLOUD_EXPORTS,
          "sedna-cloud")
    _tell(edge, {**env, **mining, **({} if little is None else {"MODEL_NAME": little})},
          EDGE_EXPORTS, "sedna-edge")
    job = header.job(header.name, [cloud.group, edge.group], service=True)
    return [lowered(doc, data, job, [cloud, edge])]


def _base_env(header: Header) -> dict[str, str]:
    return {"JOB_NAME": header.name,
            "NAMESPACE": header.annotations.get("sedna.io/namespace", "default")}


def _tell(worker: Worker, env: Mapping[str, str], exports: str | None = None,
          label: str = "sedna-worker") -> None:
    """Give the worker Sedna's variables (its own env wins) and, when it has a command,
    run it through `sh -c` that exports the addresses known only at launch."""
    group = worker.group
    group["env"] = {**env, **group.get("env", {})}
    command = group.get("command")
    if exports is not None and command:
        group["command"] = ["sh", "-c", f'{exports}; exec "$@"', label, *command]
