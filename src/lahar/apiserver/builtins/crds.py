"""CustomResourceDefinitions: name consistency, versions, and a structural-schema check.

A CRD's name must be ``<plural>.<group>``, the group needs a dot, the scope is
``Namespaced`` or ``Cluster``, exactly one served version is the storage
version, and every version has an ``openAPIV3Schema`` whose root is an object
and whose properties all declare a type (a minimal form of upstream's
structural-schema rule). On create the status records the stored version and,
because lahar serves a CRD's kinds immediately, the ``NamesAccepted`` and
``Established`` conditions are set at once so ``kubectl wait
--for=condition=established`` returns without a controller round trip.
"""

from __future__ import annotations

from typing import Any

from lahar.apiserver.builtins import fielderr as fe
from lahar.apiserver.builtins import names
from lahar.apiserver.builtins.context import DefaultContext
from lahar.apiserver.errors import Cause

SCOPES = ["Cluster", "Namespaced"]
CONVERSION_STRATEGIES = ["None", "Webhook"]
COLUMN_TYPES = ["boolean", "date", "integer", "number", "string"]


def default_crd(
    obj: dict[str, Any], ctx: DefaultContext, old: dict[str, Any] | None
) -> dict[str, Any]:
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return obj
    crd_names = spec.get("names")
    if isinstance(crd_names, dict) and crd_names.get("kind"):
        crd_names.setdefault("singular", str(crd_names["kind"]).lower())
        crd_names.setdefault("listKind", f"{crd_names['kind']}List")
    if not spec.get("conversion"):
        spec["conversion"] = {"strategy": "None"}
    storage = [
        v.get("name")
        for v in spec.get("versions") or []
        if isinstance(v, dict) and v.get("storage")
    ]
    if old is None:
        now = ctx.now()
        obj["status"] = {
            "acceptedNames": dict(crd_names) if isinstance(crd_names, dict) else {},
            "conditions": [
                _condition("NamesAccepted", "NoConflicts", "no conflicts found", now),
                _condition(
                    "Established",
                    "InitialNamesAccepted",
                    "the initial names have been accepted",
                    now,
                ),
            ],
            "storedVersions": storage[:1],
        }
    elif isinstance(obj.get("status"), dict):
        stored = obj["status"].setdefault("storedVersions", [])
        for name in storage[:1]:
            if name not in stored:
                stored.append(name)
    return obj


def _condition(kind: str, reason: str, message: str, now: str) -> dict[str, str]:
    return {
        "type": kind,
        "status": "True",
        "lastTransitionTime": now,
        "reason": reason,
        "message": message,
    }


def validate_crd(obj: dict[str, Any]) -> list[Cause]:
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return [fe.required("spec")]
    causes: list[Cause] = []
    group = str(spec.get("group") or "")
    crd_names = spec.get("names") if isinstance(spec.get("names"), dict) else {}
    plural = str(crd_names.get("plural") or "")
    name = (obj.get("metadata") or {}).get("name") or ""
    if name != f"{plural}.{group}":
        causes.append(fe.invalid("metadata.name", name, 'must be spec.names.plural+"."+spec.group'))
    if not group:
        causes.append(fe.required("spec.group"))
    else:
        causes += [fe.invalid("spec.group", group, m) for m in names.dns1123_subdomain(group)]
        if len(group.split(".")) < 2:
            causes.append(
                fe.invalid("spec.group", group, "should be a domain with at least one dot")
            )
    scope = spec.get("scope")
    if not scope:
        causes.append(fe.required("spec.scope"))
    elif scope not in SCOPES:
        causes.append(fe.not_supported("spec.scope", scope, SCOPES))
    causes += _validate_names(crd_names)
    causes += _validate_versions(spec.get("versions"))
    conversion = spec.get("conversion") or {}
    strategy = conversion.get("strategy")
    if strategy is not None and strategy not in CONVERSION_STRATEGIES:
        causes.append(fe.not_supported("spec.conversion.strategy", strategy, CONVERSION_STRATEGIES))
    if strategy == "Webhook" and not conversion.get("webhook"):
        causes.append(
            fe.required("spec.conversion.webhook", "required when strategy is set to Webhook")
        )
    if spec.get("preserveUnknownFields") is True:
        causes.append(
            fe.invalid(
                "spec.preserveUnknownFields",
                True,
                "cannot set to true, set x-kubernetes-preserve-unknown-fields to true in "
                "spec.versions[*].schema instead",
            )
        )
    return causes


def _validate_names(crd_names: dict[str, Any]) -> list[Cause]:
    causes: list[Cause] = []
    path = "spec.names"
    for field in ("plural", "singular"):
        value = str(crd_names.get(field) or "")
        if not value:
            causes.append(fe.required(fe.child(path, field)))
        else:
            problems = names.dns1035_label(value)
            if problems:
                causes.append(fe.invalid(fe.child(path, field), value, ",".join(problems)))
    for field in ("kind", "listKind"):
        value = str(crd_names.get(field) or "")
        if not value:
            causes.append(fe.required(fe.child(path, field)))
            continue
        problems = names.dns1035_label(value.lower())
        if problems:
            detail = "may have mixed case, but should otherwise match: " + ",".join(problems)
            causes.append(fe.invalid(fe.child(path, field), value, detail))
    if crd_names.get("kind") and crd_names.get("kind") == crd_names.get("listKind"):
        causes.append(
            fe.invalid(
                fe.child(path, "listKind"),
                crd_names["listKind"],
                "kind and listKind may not be the same",
            )
        )
    for field in ("shortNames", "categories"):
        for i, value in enumerate(crd_names.get(field) or []):
            problems = names.dns1035_label(str(value))
            if problems:
                causes.append(
                    fe.invalid(fe.index(fe.child(path, field), i), value, ",".join(problems))
                )
    return causes


def _validate_versions(versions: Any) -> list[Cause]:
    if not isinstance(versions, list) or not versions:
        return [
            fe.invalid(
                "spec.versions",
                versions or [],
                "must have exactly one version marked as storage version",
            )
        ]
    causes: list[Cause] = []
    seen: set[str] = set()
    storage = 0
    for i, version in enumerate(versions):
        path = fe.index("spec.versions", i)
        if not isinstance(version, dict):
            causes.append(fe.invalid(path, version, "must be an object"))
            continue
        name = str(version.get("name") or "")
        problems = names.dns1035_label(name)
        if problems:
            causes.append(fe.invalid(fe.child(path, "name"), name, ",".join(problems)))
        if name in seen:
            causes.append(
                fe.invalid("spec.versions", versions, "must contain unique version names")
            )
        seen.add(name)
        storage += bool(version.get("storage"))
        schema = (version.get("schema") or {}).get("openAPIV3Schema")
        schema_path = fe.child(path, "schema", "openAPIV3Schema")
        if schema is None:
            causes.append(fe.required(schema_path, "schemas are required"))
        else:
            causes += _structural_root(schema, schema_path)
        causes += _validate_subresources(
            version.get("subresources"), fe.child(path, "subresources")
        )
        for j, column in enumerate(version.get("additionalPrinterColumns") or []):
            cpath = fe.index(fe.child(path, "additionalPrinterColumns"), j)
            for field in ("name", "jsonPath"):
                if not (column or {}).get(field):
                    causes.append(fe.required(fe.child(cpath, field)))
            ctype = (column or {}).get("type")
            if ctype not in COLUMN_TYPES:
                causes.append(fe.not_supported(fe.child(cpath, "type"), ctype, COLUMN_TYPES))
    if storage != 1:
        causes.append(
            fe.invalid(
                "spec.versions", versions, "must have exactly one version marked as storage version"
            )
        )
    return causes


def _structural_root(schema: Any, path: str) -> list[Cause]:
    if not isinstance(schema, dict):
        return [fe.invalid(path, schema, "must be an object")]
    kind = schema.get("type")
    if not kind:
        return [fe.required(fe.child(path, "type"), "must not be empty at the root")]
    if kind != "object":
        return [fe.invalid(fe.child(path, "type"), kind, "must be object at the root")]
    return _structural_children(schema, path)


def _structural_children(schema: dict[str, Any], path: str) -> list[Cause]:
    causes: list[Cause] = []
    for key, prop in (schema.get("properties") or {}).items():
        ppath = fe.key(fe.child(path, "properties"), key)
        causes += _structural_node(prop, ppath, "must not be empty for specified object fields")
    items = schema.get("items")
    if isinstance(items, dict):
        causes += _structural_node(
            items, fe.child(path, "items"), "must not be empty for specified array items"
        )
    extra = schema.get("additionalProperties")
    if isinstance(extra, dict):
        causes += _structural_node(
            extra,
            fe.child(path, "additionalProperties"),
            "must not be empty for specified object fields",
        )
    return causes


def _structural_node(schema: Any, path: str, missing_type: str) -> list[Cause]:
    if not isinstance(schema, dict):
        return [fe.invalid(path, schema, "must be an object")]
    lenient = schema.get("x-kubernetes-int-or-string") or schema.get(
        "x-kubernetes-preserve-unknown-fields"
    )
    causes: list[Cause] = []
    if not schema.get("type") and not lenient:
        causes.append(fe.required(fe.child(path, "type"), missing_type))
    return causes + _structural_children(schema, path)


def _validate_subresources(subresources: Any, path: str) -> list[Cause]:
    scale = (subresources or {}).get("scale") if isinstance(subresources, dict) else None
    if not isinstance(scale, dict):
        return []
    causes: list[Cause] = []
    for field, prefix in (("specReplicasPath", ".spec."), ("statusReplicasPath", ".status.")):
        value = str(scale.get(field) or "")
        fpath = fe.child(path, "scale", field)
        if not value:
            causes.append(fe.required(fpath))
        elif not value.startswith(prefix):
            causes.append(
                fe.invalid(fpath, value, f"should be a json path under {prefix.rstrip('.')}")
            )
    return causes


def validate_crd_update(new: dict[str, Any], old: dict[str, Any], subresource: str) -> list[Cause]:
    spec, old_spec = new.get("spec") or {}, old.get("spec") or {}
    causes: list[Cause] = []
    if subresource != "status":
        for field in ("group", "scope"):
            if spec.get(field) != old_spec.get(field):
                causes.append(fe.immutable(fe.child("spec", field), spec.get(field)))
        causes += validate_crd(new)
    stored = (new.get("status") or {}).get("storedVersions") or []
    version_names = {v.get("name") for v in spec.get("versions") or [] if isinstance(v, dict)}
    for i, name in enumerate(stored):
        if name not in version_names:
            causes.append(
                fe.invalid(
                    fe.index("status.storedVersions", i), name, "must appear in spec.versions"
                )
            )
    return causes
