"""CRD defaulting for the kinds the operator reads and writes.

The operator relies on the API server having filled CRD defaults (worker group
replicas 0, minReplicas 0, maxReplicas int32-max, numOfHosts 1, submissionMode
K8sJobMode, ...) before it computes anything (kuberay-semantics.md §7 item 3).
``lahar render`` reads files that never went through a server, so it applies the
same defaults from lahar's CRD schemas here, and validates against them.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from lahar.apiserver.errors import Cause
from lahar.apiserver.schema import apply_defaults, validate


@cache
def _schemas() -> dict[tuple[str, str], dict[str, Any]]:
    from lahar.embedded import crd_manifests

    out: dict[tuple[str, str], dict[str, Any]] = {}
    for crd in crd_manifests():
        group = crd["spec"]["group"]
        kind = crd["spec"]["names"]["kind"]
        for version in crd["spec"]["versions"]:
            out[(f"{group}/{version['name']}", kind)] = version["schema"]["openAPIV3Schema"]
    return out


def schema_for(api_version: str, kind: str) -> dict[str, Any] | None:
    return _schemas().get((api_version, kind))


def with_defaults(obj: dict[str, Any]) -> dict[str, Any]:
    """``obj`` with its CRD's defaults applied (unchanged for kinds lahar has no CRD for)."""
    schema = schema_for(obj.get("apiVersion", ""), obj.get("kind", ""))
    return apply_defaults(obj, schema) if schema else obj


def schema_errors(obj: dict[str, Any]) -> list[Cause]:
    schema = schema_for(obj.get("apiVersion", ""), obj.get("kind", ""))
    return validate(obj, schema) if schema else []
