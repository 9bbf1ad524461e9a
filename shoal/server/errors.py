"""Errors as the API returns them: `{"errors": [{"path": ..., "message": ...}]}`.

`ApiError` is raised by the routes; the handlers installed by `install_error_handlers` turn
it, FastAPI's request validation errors and bare HTTP errors into that one JSON shape, so a
client always finds the field path (when there is one) in the same place.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel
from starlette.exceptions import HTTPException as StarletteHTTPException


class ErrorItem(BaseModel):
    path: str | None = None
    """Where the problem is: a spec field path (`spec.taskGroups[0].replicas`), a query
    parameter (`query.limit`) or a header (`header.Idempotency-Key`); None for the request."""
    message: str


class ErrorBody(BaseModel):
    errors: list[ErrorItem]
    reason: dict[str, Any] | None = None
    """For a job refused as impossible: the scheduler's pending reason."""


class ApiError(Exception):
    def __init__(self, status: int, message: str, path: str | None = None, *,
                 errors: Sequence[ErrorItem] | None = None,
                 reason: dict[str, Any] | None = None,
                 headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.errors = list(errors) if errors else [ErrorItem(path=path, message=message)]
        self.reason = reason
        self.headers = headers


def _response(status: int, errors: list[ErrorItem], reason: dict[str, Any] | None = None,
              headers: dict[str, str] | None = None) -> JSONResponse:
    body = ErrorBody(errors=errors, reason=reason).model_dump(exclude_none=True)
    body["errors"] = [e.model_dump() for e in errors]
    return JSONResponse(body, status_code=status, headers=headers)


def _location(loc: Sequence[int | str]) -> str | None:
    if not loc:
        return None
    head, *rest = loc
    path = str(head)
    for part in rest:
        path += f"[{part}]" if isinstance(part, int) else f".{part}"
    return path


async def _api_error(_request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, ApiError)
    return _response(exc.status, exc.errors, exc.reason, exc.headers)


async def _validation_error(_request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    errors = [ErrorItem(path=_location(e.get("loc", ())), message=str(e.get("msg", "")))
              for e in exc.errors()]
    return _response(422, errors)


async def _http_error(_request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, StarletteHTTPException)
    return _response(exc.status_code, [ErrorItem(message=str(exc.detail))],
                     headers=dict(exc.headers) if exc.headers else None)


def install_error_handlers(app: FastAPI) -> None:
    app.add_exception_handler(ApiError, _api_error)
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_exception_handler(StarletteHTTPException, _http_error)


#: For route declarations: the error responses, documented in the OpenAPI document.
def responses(*statuses: int) -> dict[int | str, dict[str, Any]]:
    return {status: {"model": ErrorBody} for status in statuses}
