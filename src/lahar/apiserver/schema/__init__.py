"""OpenAPI schemas for the API server: built-in kinds, structural validation, documents.

- :mod:`.builtin`: schemas of the built-in kinds, generated from lightkube-models.
- :mod:`.structural`: validate / unknown fields / prune / defaults, as the apiserver
  does them for CRD schemas (and for built-ins through the generated schemas).
- :mod:`.openapi`: the ``/openapi/v3`` index and per-group-version documents.

All functions are pure (no I/O); compiled schemas and generated definitions are cached.

The write path the real server follows, for a CRD schema or ``schema_for(apiVersion, kind)``:

1. ``unknown_fields(obj, schema)`` -> ``fieldValidation=Strict``: 400 BadRequest
   ``strict decoding error: unknown field "spec.foo", ...``; ``Warn``: one ``Warning``
   header per entry; ``Ignore``: nothing.
2. ``obj = prune(obj, schema)`` (drops those fields; copy-on-write).
3. ``obj = apply_defaults(obj, schema)`` (also drops non-nullable nulls).
4. ``causes = validate(obj, schema)`` -> 422 ``errors.invalid(kind, name, causes, group)``.

Schemas are cached by identity: never mutate a schema dict after first use.
"""

from .builtin import definition_name, definitions, inline_schema, schema_for
from .openapi import document_hash, openapi_v3_document, openapi_v3_index
from .structural import apply_defaults, prune, unknown_fields, validate

__all__ = [
    "apply_defaults",
    "definition_name",
    "definitions",
    "document_hash",
    "inline_schema",
    "openapi_v3_document",
    "openapi_v3_index",
    "prune",
    "schema_for",
    "unknown_fields",
    "validate",
]
