"""What the client returns of `GET /api/v1/usage`: the report as `shoal.api.accounting`'s
values, and the JSON it was read from."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from shoal.api.accounting import UsageReport
from shoal.api.accounting_io import report_from_json
from shoal.client.errors import ShoalError


@dataclass(frozen=True)
class UsageView:
    report: UsageReport
    raw: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @staticmethod
    def from_json(data: Any) -> UsageView:
        try:
            return UsageView(report_from_json(data), dict(data))
        except (KeyError, TypeError, ValueError) as exc:
            raise ShoalError(f"the server's usage report is not one this client reads: "
                             f"{exc!r}"[:300]) from None
