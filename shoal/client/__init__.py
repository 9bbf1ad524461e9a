"""`shoal.client`: a typed Python client of a running Shoal server (`shoal up`).

    from shoal.client import ShoalClient
    with ShoalClient("http://127.0.0.1:8765", token) as shoal:
        job = shoal.submit(Path("job.yaml"))
        print(shoal.wait(job.name).state)

`client.py` holds the calls, `models.py` the frozen views they return, `errors.py` the
exceptions (all `ShoalError`).
"""

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
    NodeView,
    PendingReasonView,
    PriorityClassView,
    ResourceFlavorView,
    TaskGroupView,
    TaskPage,
    TaskView,
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
    "JobPage",
    "JobView",
    "LogStream",
    "NodeView",
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
    "spec_body",
    "spec_text",
    "wait_until_healthy",
]
