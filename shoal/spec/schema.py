"""Entry point that prints the published JSON Schema of `shoal/v1` documents:

    python -m shoal.spec.schema > schema/shoal-v1.schema.json

The schema itself is built by `shoal.spec.json_schema`; `json_schema` and `write_schema`
are re-exported here for callers that look for them under this name.
"""

from __future__ import annotations

import sys

from shoal.spec.json_schema import json_schema, schema_text, write_schema

__all__ = ["json_schema", "main", "schema_text", "write_schema"]


def main() -> None:
    sys.stdout.write(schema_text())


if __name__ == "__main__":
    main()
