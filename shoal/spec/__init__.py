"""The native job spec: `shoal/v1` YAML documents (Node, VirtualCluster, PriorityClass, Job,
SchedulerProfile) loaded, validated as a whole and turned into `shoal.api` objects.

    bundle = load_file("cluster.yaml")       # raises SpecError listing every issue
"""

from shoal.spec.bundle import SpecBundle
from shoal.spec.document_types import API_VERSION
from shoal.spec.errors import SpecError, SpecIssue
from shoal.spec.json_schema import json_schema, schema_text, write_schema
from shoal.spec.loader import load_file, load_files, load_json, load_text

__all__ = [
    "API_VERSION",
    "SpecBundle",
    "SpecError",
    "SpecIssue",
    "json_schema",
    "load_file",
    "load_files",
    "load_json",
    "load_text",
    "schema_text",
    "write_schema",
]
