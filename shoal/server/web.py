"""What `shoal up` serves to a browser: the dashboard at `/` (the static bundle under
`shoal/server/dashboard/`: HTML, vanilla JavaScript modules and CSS, checked in, no build
step) and the API documentation at `/docs` and `/redoc` with Swagger UI's and ReDoc's
assets served from the installed `fastapi-offline` package, so that both work on an
air-gapped cluster.

The dashboard's files are public, like `/docs`: they hold no data. Every page asks the JSON
API with the token its user logged in with, so it shows exactly what the API lets that
token see.
"""

from pathlib import Path
from typing import Any

from fastapi import FastAPI
from fastapi.responses import FileResponse
from fastapi.staticfiles import StaticFiles
from fastapi_offline import FastAPIOffline

BUNDLE = Path(__file__).parent / "dashboard"
"""The dashboard's files; `/dashboard/<file>` serves them."""
ASSETS = "/dashboard"
PAGE_HEADERS = {
    # Always revalidated: a new `shoal up` version's page must not meet old scripts.
    "Cache-Control": "no-cache",
    # Defence in depth: scripts and requests only to this server, never framed.
    "Content-Security-Policy": "default-src 'self'; style-src 'self' 'unsafe-inline'; "
                               "img-src 'self' data:; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
}
DOCS_ASSETS = "/docs-assets"
"""Where Swagger UI's and ReDoc's JavaScript and CSS are served from."""


def offline_app(**kwargs: Any) -> FastAPI:
    """A FastAPI app whose `/docs` and `/redoc` load nothing from outside the server. Swagger
    UI's validator badge (which asks an outside service) is off."""
    parameters = {"validatorUrl": None, **kwargs.pop("swagger_ui_parameters", {})}
    return FastAPIOffline(static_url=DOCS_ASSETS, favicon_url=f"{ASSETS}/favicon.svg",
                          swagger_ui_parameters=parameters, **kwargs)


def mount_dashboard(app: FastAPI) -> None:
    """`GET /` answers the dashboard's page; its scripts and styles are under ASSETS."""
    index = BUNDLE / "index.html"

    @app.get("/", include_in_schema=False)
    async def dashboard() -> FileResponse:
        return FileResponse(index, headers=PAGE_HEADERS)

    app.mount(ASSETS, StaticFiles(directory=BUNDLE), name="dashboard")
