"""The fields of a multi-cluster job that both of its forms share, and their rules: the
`super_scheduler` parameters (clusters, guardTimeRunning, timeScale, policy, params) as a
pydantic model, the `<% $mcc.x %>` placeholder, the bounds, the times, and the name-safe form
of a cluster alias.

The same model reads OpenPAI's `super_scheduler` plugin parameters (a `super-2` job) and the
`spec` of Shoal's `MultiClusterJob`, so the two forms cannot drift apart.
"""

from __future__ import annotations

import math
import re
from typing import Annotated, Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PlainValidator,
    StrictInt,
    StrictStr,
    WithJsonSchema,
)

from shoal.api.elastic import parse_duration
from shoal.api.federation import MAX_PRIORITY, DispatchPolicy
from shoal.spec.errors import quote

MAX_CLUSTERS = 32
"""Members one multi-cluster job may name: every member gets a copy, so each costs a
submission, a poll per period and a cancel."""
MAX_PARAMS = 64
"""Parameters (`params`) of one job."""
MAX_PARAM_ITEMS = 256
"""Items of one list value of a parameter."""
MAX_URI_LENGTH = 2048
MAX_DURATION_S = 30 * 24 * 3600.0
"""The longest guard time or time scale: a month; longer is a mistake in the unit."""

#: `<% $mcc.name %>`: OpenPAI's Mustache delimiters and a `$mcc` name, as the seed writes it.
PLACEHOLDER = re.compile(r"<%\s*\$mcc\.([A-Za-z_][A-Za-z0-9_]*)\s*%>")
#: Anything that still mentions `$mcc` inside `<% … %>` after the placeholders were replaced:
#: a misspelt one (`<% $mcc.gpu-num %>`, `<% $mcc %>`) that would reach a member as text.
LEFTOVER = re.compile(r"<%[^%]*\$mcc")
PARAM_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")

#: The characters an OpenPAI job name (and so a copy's name) may hold.
_NOT_NAME_SAFE = re.compile(r"[^A-Za-z0-9_-]+")
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")


def safe_alias(alias: str) -> str:
    """The form of `alias` that a copy's name `<name>-<alias>` uses: a URI's scheme dropped,
    every run of characters outside `[A-Za-z0-9_-]` made one `-`, and `-` trimmed at both
    ends (`https://pai.example.com:9090/` → `pai-example-com-9090`, `<alias-1>` →
    `alias-1`). Empty when nothing name-safe is left."""
    return _NOT_NAME_SAFE.sub("-", _SCHEME.sub("", alias)).strip("-")


def minutes_or_duration(value: float | str) -> float:
    """Seconds, from OpenPAI's number of minutes (`10`, as the seed writes it) or a duration
    with its unit (`10m`, `30s`, `1h30m`). Raises ValueError saying why."""
    if isinstance(value, str):
        text = value.strip()
        try:
            seconds = float(text) * 60.0
        except ValueError:
            seconds = parse_duration(text)
    else:
        seconds = float(value) * 60.0
    if not math.isfinite(seconds) or seconds < 0:
        raise ValueError(f"must be a non-negative number of minutes or a duration such as "
                         f"10m or 30s, got {quote(value)}")
    if seconds > MAX_DURATION_S:
        raise ValueError(f"must be at most {MAX_DURATION_S / 86400:.0f} days, got "
                         f"{quote(value)}")
    return seconds


class StrictModel(BaseModel):
    """Unknown fields are errors (a typo in a field name is the commonest mistake)."""

    model_config = ConfigDict(extra="forbid", frozen=True)


Priority = Annotated[StrictInt, Field(ge=0, le=MAX_PRIORITY)]
Uri = Annotated[StrictStr, Field(min_length=1, max_length=MAX_URI_LENGTH)]
def _time(value: Any) -> float | str:
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise ValueError(f"must be a number of minutes or a duration such as 10m or 30s, got "
                         f"{quote(value)}")
    return value


Time = Annotated[float | str, PlainValidator(_time),
                 WithJsonSchema({"anyOf": [{"type": "number"}, {"type": "string"}],
                                 "description": "Minutes, or a duration such as 10m or 30s."})]


class ClusterRefSpec(StrictModel):
    """One member as a job names it, under its alias (`clusters: {<alias>: {uri, user}}`)."""

    uri: Uri = Field(description="The member's REST address.")
    user: StrictStr | None = Field(default=None, max_length=253,
                                   description="The job's user on that member.")
    priority: Priority | None = Field(
        default=None, description="The user's preference for this member, 0-100 (a Shoal "
                                  "extension; seed 000's FAC with priority). Absent: the "
                                  "registry's.")


class ListedClusterSpec(ClusterRefSpec):
    """A member in the list form of `clusters`, where the alias defaults to the URI."""

    alias: StrictStr | None = Field(default=None, min_length=1, max_length=MAX_URI_LENGTH)


class MappedClusters(StrictModel):
    clusters: dict[StrictStr, ClusterRefSpec]


class ListedClusters(StrictModel):
    clusters: list[ListedClusterSpec]


class SuperSchedulerSpec(StrictModel):
    """What OpenPAI's `super_scheduler` plugin entry takes as `parameters`, and what a
    `MultiClusterJob`'s spec holds beside its template."""

    clusters: Any = Field(
        description="The members: {alias: {uri, user, priority}}, or a list of {alias, uri, "
                    "user, priority} whose alias defaults to the URI (checked as "
                    "MappedClusters or ListedClusters, by its form).")
    guard_time_running: Time = Field(
        default=10, alias="guardTimeRunning",
        description="How long the earliest running copy must stay RUNNING before the others "
                    "are cancelled: minutes (OpenPAI's unit), or a duration such as 30s.")
    time_scale: Time = Field(
        default=1, alias="timeScale",
        description="FAC with priority: a copy on a member of priority p_j outlives a running "
                    "copy of priority p_i by (p_j - p_i) x timeScale; minutes or a duration.")
    policy: DispatchPolicy = Field(
        default=DispatchPolicy.FAC,
        description="fac (default) or fac-priority (a Shoal extension).")
    params: dict[StrictStr, Any] = Field(
        default_factory=dict,
        description="{name: {alias: value}}: the value of `<% $mcc.name %>` on each member, "
                    "a scalar or a list.")
