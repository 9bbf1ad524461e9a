"""The committed JSON Schema is what the document models generate, and it covers every kind."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from shoal.spec import json_schema, schema_text, write_schema
from shoal.spec.documents import DOCUMENT_MODELS
from shoal.spec.schema import main

SCHEMA_FILE = Path(__file__).parents[3] / "schema" / "shoal-v1.schema.json"


def test_committed_schema_is_current() -> None:
    assert SCHEMA_FILE.read_text(encoding="utf-8") == schema_text(), (
        "schema/shoal-v1.schema.json is stale: run "
        "`uv run python -m shoal.spec.schema > schema/shoal-v1.schema.json`")


def test_schema_is_a_union_of_every_kind_on_kind() -> None:
    schema = json_schema()
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["discriminator"]["propertyName"] == "kind"
    assert set(schema["discriminator"]["mapping"]) == set(DOCUMENT_MODELS)
    assert len(schema["oneOf"]) == len(DOCUMENT_MODELS)
    job_spec = schema["$defs"]["JobSpec"]
    assert job_spec["additionalProperties"] is False
    assert "taskGroups" in job_spec["properties"]  # fields appear under their YAML names
    assert job_spec["required"] == ["taskGroups"]


def test_entry_point_and_writer_produce_the_same_text(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    main()
    printed = capsys.readouterr().out
    write_schema(tmp_path / "s.json")
    assert printed == (tmp_path / "s.json").read_text(encoding="utf-8") == schema_text()
    assert json.loads(printed) == json_schema()
