"""The gpu-discipline plugin's arguments and its submission rule."""

import pytest

from shoal.api import Job, Node, PendingKind, Resources, TaskGroup
from shoal.scheduler.actions.enqueue import admission_check
from shoal.scheduler.plugins.gpu_discipline import GpuDiscipline, GpuDisciplineArguments
from shoal.scheduler.profile import Profile, ProfileError

NODES = [Node("n0", Resources.of(cpu=64_000, memory=65_536, gpu=8))]


def profile(**arguments: object) -> Profile:
    return Profile.from_dict({
        "name": "p", "actions": "enqueue, allocate",
        "tiers": [{"plugins": [{"name": "predicates"}, {"name": "placement"},
                               {"name": "gpu-discipline", "arguments": arguments}]}]})


def test_arguments_are_cpu_quantities_and_the_reserve_defaults_to_the_minimum() -> None:
    plugin = GpuDiscipline(GpuDisciplineArguments.model_validate({"minCpuPerGpu": "1500m"}))
    assert (plugin.min_cpu_per_gpu, plugin.cpu_reserve) == (1500, 1500)
    plugin = GpuDiscipline(GpuDisciplineArguments.model_validate(
        {"minCpuPerGpu": 2, "cpuReservedPerIdleGpu": 0}))
    assert (plugin.min_cpu_per_gpu, plugin.cpu_reserve) == (2000, 0)
    default = GpuDiscipline(GpuDisciplineArguments())
    assert (default.min_cpu_per_gpu, default.cpu_reserve) == (1000, 1000)


@pytest.mark.parametrize(("arguments", "field"), [
    ({"minCpuPerGpu": "two"}, "minCpuPerGpu"),
    ({"minCpuPerGpu": -1}, "minCpuPerGpu"),
    ({"cpuReservedPerIdleGpu": "1Gi"}, "cpuReservedPerIdleGpu"),
    ({"cpuReservedPerIdleGpu": 5000}, "cpuReservedPerIdleGpu"),
    ({"minCpuPerGpus": 1}, "minCpuPerGpus"),
])
def test_bad_arguments_name_the_field(arguments: dict[str, object], field: str) -> None:
    with pytest.raises(ProfileError, match=field):
        profile(**arguments)


def test_the_first_group_below_the_minimum_is_named_by_its_path() -> None:
    job = Job("j", (TaskGroup("reader", 2, Resources.of(cpu=500)),
                    TaskGroup("ps", 1, Resources.of(cpu=2000, gpu=2)),
                    TaskGroup("trainer", 4, Resources.of(cpu=3000, gpu=2))))
    reason = admission_check(job, NODES, [], profile=profile(minCpuPerGpu=2))
    assert reason is not None and reason.kind is PendingKind.UNSCHEDULABLE
    assert reason.field == "spec.taskGroups[1].resources.cpu"
    assert "task group 'ps' asks 2 GPUs with 2 CPU" in reason.message
    assert "cpu: 4 or more" in reason.message
    assert reason.to_dict()["field"] == reason.field
    # Without a minimum, or with the plugin off, the same job is admissible.
    assert admission_check(job, NODES, [], profile=profile(minCpuPerGpu=0)) is None
    assert admission_check(job, NODES, [], profile=Profile.load("las")) is None
