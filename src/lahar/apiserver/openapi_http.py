"""Serving ``/openapi/v3`` from the registry, rebuilt when the set of kinds changes."""

from __future__ import annotations

import json
from typing import Any

from starlette.datastructures import QueryParams
from starlette.responses import Response

from lahar.apiserver.errors import APIError
from lahar.apiserver.registry import Registry
from lahar.apiserver.schema import openapi


class OpenAPIService:
    def __init__(self, registry: Registry) -> None:
        self.registry = registry
        self._generation = -1
        self._docs: dict[str, dict[str, Any]] = {}
        self._bodies: dict[str, bytes] = {}
        self._hashes: dict[str, str] = {}
        self._gvs: dict[str, str] = {}  # group-version -> document path

    def _refresh(self) -> None:
        if self._generation == self.registry.generation:
            return
        docs: dict[str, dict[str, Any]] = {}
        self._gvs = {}
        for group, versions in self.registry.group_versions().items():
            for version in versions:
                gv = f"{group}/{version}" if group else version
                key = f"apis/{gv}" if group else f"api/{version}"
                docs[key] = openapi.openapi_v3_document(
                    gv, self.registry.in_group_version(group, version)
                )
                self._gvs[gv] = key
        self._docs = docs
        self._bodies = {k: json.dumps(v, separators=(",", ":")).encode() for k, v in docs.items()}
        self._hashes = {k: openapi.document_hash(v) for k, v in docs.items()}
        self._generation = self.registry.generation

    def respond(self, path: str, query: QueryParams) -> Response:
        self._refresh()
        rest = path[len("/openapi/") :].strip("/")
        if rest == "v3":
            index = openapi.openapi_v3_index(sorted(self._gvs), self._hashes)
            return Response(json.dumps(index), media_type="application/json")
        if rest.startswith("v3/"):
            key = rest[len("v3/") :]
            body = self._bodies.get(key)
            if body is not None:
                headers = {
                    "Cache-Control": "public, immutable" if query.get("hash") else "no-cache"
                }
                return Response(body, media_type="application/json", headers=headers)
        raise APIError(404, "NotFound", "the server could not find the requested resource")
