"""One HTTP conversation with a member cluster, for every adapter that speaks HTTP (Shoal,
OpenPAI, slurmrestd, Ray Jobs): a bounded timeout, the member's credentials as headers, and
each failure turned into the contract's two errors — `MemberUnavailableError` when no usable
answer came (a timeout, a refused connection, a 5xx), `MemberRefusedError` for a 4xx, with
the member's own message cut to a bounded length and never the request's headers.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import httpx

from shoal.federation.members.contract import MemberRefusedError, MemberUnavailableError

DEFAULT_TIMEOUT_S = 10.0
MAX_ERROR_CHARS = 300
"""The most of a member's error body quoted in an error: enough to say why, bounded."""


class MemberHttp:
    """An `httpx.Client` bound to one member: its base URL, headers and timeout."""

    def __init__(self, alias: str, base_url: str, *, headers: Mapping[str, str] | None = None,
                 timeout_s: float = DEFAULT_TIMEOUT_S,
                 transport: httpx.BaseTransport | None = None) -> None:
        self.alias = alias
        self._client = httpx.Client(base_url=base_url, headers=dict(headers or {}),
                                    timeout=timeout_s, transport=transport)
        self._timeout_s = timeout_s

    def request(self, method: str, path: str, *, ok_statuses: frozenset[int] = frozenset(),
                **kwargs: Any) -> httpx.Response:
        """Send one request; return the response when it is a success (2xx) or one of
        `ok_statuses` (a 404 an idempotent cancel accepts), raise the contract's error
        otherwise."""
        try:
            response = self._client.request(method, path, **kwargs)
        except httpx.TimeoutException as exc:
            raise MemberUnavailableError(
                self.alias, f"{method} {path}: no answer within {self._timeout_s:g} s") from exc
        except httpx.TransportError as exc:
            raise MemberUnavailableError(
                self.alias, f"{method} {path}: cannot connect ({type(exc).__name__})") from exc
        if response.is_success or response.status_code in ok_statuses:
            return response
        said = _quoted(response)
        if response.status_code >= 500:
            raise MemberUnavailableError(
                self.alias, f"{method} {path}: server error {response.status_code}{said}")
        raise MemberRefusedError(
            self.alias, f"{method} {path}: refused with {response.status_code}{said}")

    def close(self) -> None:
        self._client.close()


def _quoted(response: httpx.Response) -> str:
    text = response.text.strip()
    if not text:
        return ""
    if len(text) > MAX_ERROR_CHARS:
        text = text[:MAX_ERROR_CHARS] + "…"
    return f": {text}"
