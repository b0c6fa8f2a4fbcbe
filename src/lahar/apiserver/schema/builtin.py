"""OpenAPI schemas of the built-in kinds, generated from lightkube-models.

The server needs the schemas of Pod, Job, Lease, ... three times: to validate and
report unknown fields (``fieldValidation=Strict``), to publish ``/openapi/v3`` so
``kubectl explain`` and kubectl's query-param check work, and to embed a
PodTemplateSpec into our own CRD manifests. Writing them by hand would drift from
Kubernetes; lightkube-models is generated from the Kubernetes OpenAPI document of
one release, so we rebuild the definitions from it on first use: names in
Kubernetes' style (``io.k8s.api.core.v1.Pod``), the model docstrings as
descriptions, and the few facts the models lose (list types, map value types,
key defaults) from ``_tables``.

Two shapes come out: :func:`definitions` (``$ref``-linked, for OpenAPI documents)
and fully inlined structural schemas (:func:`schema_for`, :func:`inline_schema`).
"""

from __future__ import annotations

import copy
import re
from functools import cache
from typing import Any

from . import _tables
from ._lightkube import ModelType, model_types, prefix_and_group

# Model modules whose types we publish; modules they reference are added.
MODULES: tuple[str, ...] = (
    "core_v1",
    "meta_v1",
    "batch_v1",
    "apps_v1",
    "policy_v1",
    "autoscaling_v1",
    "coordination_v1",
    "scheduling_v1",
    "apiextensions_v1",
)
REF_PREFIX = "#/components/schemas/"

_SPECIAL: dict[str, dict[str, Any]] = {
    "Quantity": {"x-kubernetes-int-or-string": True},
    "IntOrString": {"x-kubernetes-int-or-string": True},
    "datetime": {"type": "string", "format": "date-time"},
    "Dict": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
    "Any": {"x-kubernetes-preserve-unknown-fields": True},
}
_SCALARS: dict[str, dict[str, Any]] = {
    "str": {"type": "string"},
    "int": {"type": "integer"},
    "float": {"type": "number", "format": "double"},
    "bool": {"type": "boolean"},
    "datetime": {"type": "string", "format": "date-time"},
}
_GENERIC = re.compile(r"^(Optional|List)\[(.*)\]$")
# ObjectMeta as controller-gen embeds it in CRDs (generateEmbeddedObjectMeta): the
# fields a template may carry, so they survive pruning.
_EMBEDDED_META_FIELDS = ("annotations", "finalizers", "labels", "name", "namespace")


class _Builder:
    """Collects definitions from the model modules, following cross-module refs."""

    def __init__(self) -> None:
        self.defs: dict[str, dict[str, Any]] = {}
        self.types: dict[str, dict[str, ModelType | str]] = {}
        self.pending: list[str] = []

    def module(self, name: str) -> dict[str, ModelType | str]:
        if name not in self.types:
            self.types[name] = model_types(name)
            self.pending.append(name)
        return self.types[name]

    def build(self, modules: tuple[str, ...]) -> dict[str, dict[str, Any]]:
        for name in modules:
            self.module(name)
        while self.pending:
            module = self.pending.pop()
            for type_name, model in list(self.types[module].items()):
                self.define(module, type_name, model)
        return dict(sorted(self.defs.items()))

    def ref(self, module: str, type_name: str) -> str:
        """The definition name a type annotation in ``module`` points at."""
        if "." in type_name:
            module, type_name = type_name.split(".", 1)
        self.module(module)
        return f"{prefix_and_group(module)[0]}.{type_name}"

    def define(self, module: str, type_name: str, model: ModelType | str) -> None:
        name = f"{prefix_and_group(module)[0]}.{type_name}"
        if isinstance(model, str):
            if type_name in ("Dict", "Any"):
                return  # typing helpers imported by the module, not API types
            schema = dict(_SPECIAL[model])
            text = _tables.SPECIAL_DESCRIPTIONS.get(type_name)
            if text:
                schema["description"] = text
            self.defs[name] = schema
            return
        props: dict[str, Any] = {}
        required: list[str] = []
        for f in model.fields:
            prop = self.annotation(module, name, f.json_name, f.annotation)
            if "$ref" in prop:
                prop = {"allOf": [prop]}
            if f.description:
                prop["description"] = f.description
            default = _tables.DEFAULTS.get((name, f.json_name))
            if default is not None:
                prop["default"] = default
            props[f.json_name] = prop
            if f.required:
                required.append(f.json_name)
        schema: dict[str, Any] = {"description": model.description, "type": "object"}
        schema["properties"] = props
        if required:
            schema["required"] = required
        if model.gvk is not None:
            group, version, kind = model.gvk
            schema["x-kubernetes-group-version-kind"] = [
                {"group": group, "kind": kind, "version": version}
            ]
        self.defs[name] = schema

    def annotation(self, module: str, owner: str, field: str, text: str) -> dict[str, Any]:
        match = _GENERIC.match(text)
        if match and match.group(1) == "Optional":
            return self.annotation(module, owner, field, match.group(2))
        if match:
            out: dict[str, Any] = {
                "type": "array",
                "items": self.annotation(module, owner, field, match.group(2)),
            }
            list_type = _tables.LIST_TYPES.get((owner, field))
            if list_type is not None:
                out["x-kubernetes-list-type"] = list_type[0]
                if list_type[1]:
                    out["x-kubernetes-list-map-keys"] = list(list_type[1])
            strategy = _tables.PATCH_STRATEGIES.get((owner, field))
            if strategy is not None:
                out["x-kubernetes-patch-strategy"] = strategy[0]
                if strategy[1]:
                    out["x-kubernetes-patch-merge-key"] = strategy[1]
            return out
        if text == "dict":
            return {"type": "object", "additionalProperties": _tables.map_values(owner, field)}
        if text in _SCALARS:
            return dict(_SCALARS[text])
        if text in ("Any", "Dict"):
            return dict(_SPECIAL[text])
        return {"$ref": REF_PREFIX + self.ref(module, text)}


@cache
def _definitions() -> dict[str, dict[str, Any]]:
    return _Builder().build(MODULES)


def definitions() -> dict[str, dict[str, Any]]:
    """All built-in definitions by Kubernetes name (cached; treat as read-only)."""
    return _definitions()


@cache
def _gvk_index() -> dict[tuple[str, str], str]:
    index: dict[tuple[str, str], str] = {}
    for name, schema in _definitions().items():
        for gvk in schema.get("x-kubernetes-group-version-kind", ()):
            api_version = f"{gvk['group']}/{gvk['version']}" if gvk["group"] else gvk["version"]
            index.setdefault((api_version, gvk["kind"]), name)
    return index


def definition_name(api_version: str, kind: str) -> str:
    """``("v1", "Pod")`` -> ``io.k8s.api.core.v1.Pod``; KeyError for unknown kinds."""
    try:
        return _gvk_index()[(api_version, kind)]
    except KeyError:
        raise KeyError(f"no built-in schema for {api_version}, Kind={kind}") from None


class _Inliner:
    """Expands ``$ref`` links into one self-contained structural schema."""

    def __init__(self, descriptions: bool, full_metadata: bool, lenient: bool) -> None:
        self.defs = _definitions()
        self.descriptions = descriptions
        self.full_metadata = full_metadata
        self.lenient = lenient
        self.stack: list[str] = []

    def definition(self, name: str) -> dict[str, Any]:
        if name not in self.defs:
            raise KeyError(f"unknown definition {name!r}")
        if name in self.stack:
            # A recursive type (JSONSchemaProps): keep the value as given.
            return {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
        if name == _tables.OBJECT_META and self.stack and not self.full_metadata:
            return self.embedded_meta()
        self.stack.append(name)
        try:
            return self.node(self.defs[name], name)
        finally:
            self.stack.pop()

    def embedded_meta(self) -> dict[str, Any]:
        meta = self.definition_with_full_meta(_tables.OBJECT_META)
        props = {k: v for k, v in meta["properties"].items() if k in _EMBEDDED_META_FIELDS}
        out: dict[str, Any] = {"type": "object", "properties": props}
        return out

    def definition_with_full_meta(self, name: str) -> dict[str, Any]:
        saved, self.full_metadata = self.full_metadata, True
        try:
            return self.definition(name)
        finally:
            self.full_metadata = saved

    def node(self, schema: dict[str, Any], owner: str = "") -> dict[str, Any]:
        if "$ref" in schema:
            return self.definition(schema["$ref"].removeprefix(REF_PREFIX))
        out: dict[str, Any] = {}
        all_of = schema.get("allOf")
        if all_of and len(all_of) == 1 and "$ref" in all_of[0]:
            out.update(self.node(all_of[0]))
            if not self.descriptions:
                out.pop("description", None)
        for key, value in schema.items():
            if key == "allOf":
                continue
            if key == "description" and not self.descriptions:
                continue
            if key == "properties":
                props = {}
                for prop, sub in value.items():
                    props[prop] = self.node(sub)
                    if self.lenient and (owner, prop) in _tables.TOLERATES_DUPLICATES:
                        props[prop].pop("x-kubernetes-list-type", None)
                        props[prop].pop("x-kubernetes-list-map-keys", None)
                out[key] = props
            elif key in ("items", "additionalProperties") and isinstance(value, dict):
                out[key] = self.node(value)
            elif key == "x-kubernetes-group-version-kind":
                continue
            else:
                out[key] = copy.deepcopy(value) if isinstance(value, (dict, list)) else value
        return out


@cache
def _inline(name: str, descriptions: bool, full_metadata: bool, lenient: bool) -> dict[str, Any]:
    return _Inliner(descriptions, full_metadata, lenient).definition(name)


def inline_schema(
    definition_name: str, *, descriptions: bool = True, full_metadata: bool = False
) -> dict[str, Any]:
    """A fully inlined structural schema of one definition (a fresh copy).

    Suitable for embedding into a CRD's openAPIV3Schema: no ``$ref``, never
    ``additionalProperties`` beside ``properties``, recursive types cut off with
    ``x-kubernetes-preserve-unknown-fields``. Nested ``metadata`` (ObjectMeta) is
    a ``type: object`` with name, namespace, labels, annotations and finalizers,
    as controller-gen emits it, unless ``full_metadata`` asks for all of ObjectMeta.
    """
    return copy.deepcopy(_inline(definition_name, descriptions, full_metadata, False))


def schema_for(api_version: str, kind: str) -> dict[str, Any]:
    """The validation schema of a built-in kind: inlined, full ObjectMeta, no
    descriptions. Cached and shared: callers must not modify it."""
    return _inline(definition_name(api_version, kind), False, True, True)


def object_meta_schema() -> dict[str, Any]:
    """Full ObjectMeta as a validation schema (cached and shared: do not modify)."""
    return _inline(_tables.OBJECT_META, False, True, True)
