"""`shoal.client`: a typed Python client of a running Shoal server (`shoal up`).

    from shoal.client import ShoalClient
    with ShoalClient("http://127.0.0.1:8765", token) as shoal:
        job = shoal.submit(Path("job.yaml"))
        print(shoal.wait(job.name).state)

`client.py` holds the calls, `models.py` and `cluster_views.py` the frozen views they
return, `errors.py` the exceptions (all `ShoalError`). The cluster's views load when first
asked for (PEP 562), as the calls returning them load them: `shoal jobs` defines none.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from shoal.client.client import (
    DEFAULT_SERVER,
    LogStream,
    ShoalClient,
    Spec,
    spec_body,
    spec_text,
    wait_until_healthy,
)
from shoal.client.errors import (
    ErrorItem,
    ShoalApiError,
    ShoalConnectionError,
    ShoalError,
    ShoalServerTimeoutError,
    ShoalTimeoutError,
)
from shoal.client.models import (
    TERMINAL_STATES,
    EventView,
    JobDeletion,
    JobPage,
    JobView,
    OriginalView,
    PendingReasonView,
    TaskGroupView,
    TaskPage,
    TaskView,
)
from shoal.client.watch import JobEvent, JobEvents, WatchEventType

if TYPE_CHECKING:
    from shoal.client.cluster_views import (
        NodeView,
        PriorityClassView,
        ResourceFlavorView,
        UserView,
        VirtualClusterStatusView,
        VirtualClusterView,
    )

__all__ = [
    "DEFAULT_SERVER",
    "TERMINAL_STATES",
    "ErrorItem",
    "EventView",
    "JobDeletion",
    "JobEvent",
    "JobEvents",
    "JobPage",
    "JobView",
    "LogStream",
    "NodeView",
    "OriginalView",
    "PendingReasonView",
    "PriorityClassView",
    "ResourceFlavorView",
    "ShoalApiError",
    "ShoalClient",
    "ShoalConnectionError",
    "ShoalError",
    "ShoalServerTimeoutError",
    "ShoalTimeoutError",
    "Spec",
    "TaskGroupView",
    "TaskPage",
    "TaskView",
    "UserView",
    "VirtualClusterStatusView",
    "VirtualClusterView",
    "WatchEventType",
    "spec_body",
    "spec_text",
    "wait_until_healthy",
]

if not TYPE_CHECKING:  # to the type checker, the import above is the names
    def __getattr__(name: str) -> object:
        if name not in ("NodeView", "PriorityClassView", "ResourceFlavorView", "UserView",
                        "VirtualClusterStatusView", "VirtualClusterView"):
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        value = getattr(importlib.import_module("shoal.client.cluster_views"), name)
        globals()[name] = value
        return value
