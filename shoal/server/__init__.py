"""Shoal's REST API (`/api/v1`, FastAPI): `create_app(repository, scheduler)`.

    app = create_app(Repository(store), control_plane)   # serve with uvicorn

The server stores nothing itself: jobs go to the `Scheduler` it is given (the control plane),
everything else to the store's `Repository`.
"""

from shoal.server.app import create_app
from shoal.server.scheduler import Scheduler

__all__ = ["Scheduler", "create_app"]
