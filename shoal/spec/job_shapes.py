"""Jobs converted once per shape: a Job document that differs from one already converted
only in its `metadata.name` becomes that job under its own name, without being validated,
checked against the limits and converted again (issue 18).

A burst of submissions is one document many times over, each with its own name; checking
each copy through the document model, the limits, the launch checks and the conversion was
about half of the API's own CPU per submission. What those steps read of a Job document is
its data, the load's `Limits` and whether it must be launchable, and (for its default
submission time) its place among the load's jobs; of the name they read only whether it is
a valid job name, and they put it in the job's `name` — in nothing else, for the jobs
remembered here: a job with its own virtual cluster (named after the job) or with status
tasks (which name their job) is never remembered, and neither is a document that logged
any issue. So a remembered job, renamed, is what the steps would have made of the copy.

Only the first Job document of a load is looked up (a submission's one job: its place is
0); the checks across documents (`shoal.spec.checks`: names, queues, references) still run
on every load. A name that is not plainly valid goes the whole way, which reports it.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from shoal.api import Job
from shoal.spec.document_types import JOB_NAME_PATTERN
from shoal.spec.limits import Limits

SHAPES = 256
"""How many shapes are remembered (then the memory starts afresh)."""
MAX_NAME = 253
"""`JobMetadata.name`'s max_length."""
_NAME = re.compile(JOB_NAME_PATTERN)


@dataclass(frozen=True, slots=True)
class Shape:
    """A Job document's data but its name, with what its checks read besides."""

    key: tuple[str, Limits, bool]
    name: str


def shape_of(data: Mapping[str, Any], limits: Limits, launchable: bool) -> Shape | None:
    """The document's shape; None when its name is missing or not plainly a valid job name
    (the whole way then says what is wrong)."""
    metadata = data.get("metadata")
    if type(metadata) is not dict:
        return None
    name = metadata.get("name")
    if type(name) is not str or len(name) > MAX_NAME or _NAME.fullmatch(name) is None:
        return None
    # repr tells 1, 1.0, True and "1" apart; the name's place keeps its key in order.
    return Shape((repr({**data, "metadata": {**metadata, "name": None}}), limits, launchable),
                 name)


class ConvertedJobs:
    """The jobs converted from each shape (one a shape), renamed on the way out."""

    def __init__(self, most: int = SHAPES) -> None:
        self._most = most
        self._jobs: dict[tuple[str, Limits, bool], Job] = {}

    def get(self, shape: Shape) -> Job | None:
        job = self._jobs.get(shape.key)
        return None if job is None else dataclasses.replace(job, name=shape.name)

    def remember(self, shape: Shape, job: Job) -> None:
        """`job`, converted from a document of `shape` with no issue, for the next copy."""
        if job.tasks or job.virtual_cluster is not None or job.sub_clusters:
            return  # they name the job: see the module's docstring
        if len(self._jobs) >= self._most:
            self._jobs.clear()
        self._jobs[shape.key] = job


CONVERTED = ConvertedJobs()
"""The process's memory of converted jobs (the API's loads and the offline tools' share it:
the result is the same whoever converted it first)."""
