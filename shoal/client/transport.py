"""What `ShoalClient`'s verb mixins (`shoal.client.multicluster`, `shoal.client.admin`) ask
of it: the four HTTP helpers `ShoalClient` supplies, declared once so that each mixin type
checks on its own."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import httpx

if TYPE_CHECKING:
    from shoal.client.client import Spec


class Transport:
    """The HTTP helpers of `ShoalClient`, which overrides every one of them."""

    def _get(self, path: str, params: Mapping[str, Any] | None = None) -> Any:
        raise NotImplementedError

    def _send(self, method: str, path: str, *, retry: bool, stream: bool = False,
              timeout: httpx.Timeout | None = None, **kwargs: Any) -> httpx.Response:
        raise NotImplementedError

    def _json(self, response: httpx.Response) -> Any:
        raise NotImplementedError

    def _post_spec(self, path: str, spec: Spec, headers: Mapping[str, str] | None = None,
                   *, retry: bool = False) -> Any:
        raise NotImplementedError
