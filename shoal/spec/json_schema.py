"""The published JSON Schema of `shoal/v1` documents, generated from the pydantic models.

`schema/shoal-v1.schema.json` in the repository is this module's output, kept current by a
test; editors use it to check and complete specs (one document at a time, selected by
`kind`). Regenerate it with `python -m shoal.spec.schema > schema/shoal-v1.schema.json`
(`shoal.spec.schema` is only that entry point, so running it does not import itself twice).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Annotated, Any

from pydantic import Field, TypeAdapter

from shoal.spec.documents import Document

SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"

_ADAPTER: TypeAdapter[Document] = TypeAdapter(
    Annotated[Document, Field(discriminator="kind")])


def json_schema() -> dict[str, Any]:
    """One document of any kind, discriminated by `kind` (draft 2020-12)."""
    body = _ADAPTER.json_schema(by_alias=True, mode="validation")
    # A document that names no kind cannot be validated against anything, so `kind` is the
    # discriminator: editors then report errors against the one model the document means.
    return {
        "$schema": SCHEMA_DIALECT,
        "title": "Shoal v1 document",
        "description": "One document of a Shoal job spec file; a file holds several, "
                       "separated by '---'.",
        **body,
    }


def schema_text() -> str:
    """The schema exactly as the repository's file holds it."""
    return json.dumps(json_schema(), indent=2, ensure_ascii=False) + "\n"


def write_schema(path: str | os.PathLike[str]) -> None:
    Path(path).write_text(schema_text(), encoding="utf-8")
