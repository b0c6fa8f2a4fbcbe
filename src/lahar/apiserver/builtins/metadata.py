"""Validation of ``metadata`` shared by every kind, built-in or custom.

The rules follow kube-apiserver's object-meta validation: names must be present
(``generateName`` is resolved before we run) and match the kind's name format;
namespaced objects need a valid namespace; labels, annotations, finalizers and
owner references must be well formed; on update the identity fields may not
change and no finalizer may be added once deletion has started.

Name formats differ per kind (Namespace is a DNS label, Service a DNS-1035 label,
most others a DNS subdomain), so they live in one table here. Cluster-scoped
objects carrying a ``metadata.namespace`` are not an error: the real server
drops the namespace before validating, and the REST layer is expected to do the
same.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from lahar.apiserver.builtins import fielderr as fe
from lahar.apiserver.builtins import names
from lahar.apiserver.errors import Cause
from lahar.apiserver.resources import ResourceType

ANNOTATIONS_SIZE_LIMIT = 256 * 1024

NameRule = Callable[[str], list[str]]

# (group, kind) -> name format; anything not listed is a DNS-1123 subdomain.
NAME_RULES: dict[tuple[str, str], NameRule] = {
    ("", "Namespace"): names.dns1123_label,
    ("", "Service"): names.dns1035_label,
    # core/v1 Events skip object-meta validation for compatibility; only the
    # path-segment rule (enforced by the storage layer) applies.
    ("", "Event"): names.path_segment,
}

_BANNED_OWNERS = {("", "v1", "Event")}
_ORPHAN = "orphan"
_FOREGROUND = "foregroundDeletion"


def name_rule(rt: ResourceType) -> NameRule:
    return NAME_RULES.get((rt.group, rt.kind), names.dns1123_subdomain)


def validate_metadata(
    obj: dict[str, Any], rt: ResourceType, *, old: dict | None = None
) -> list[Cause]:
    """Causes for ``obj.metadata`` on create (``old`` is None) or update."""
    meta = obj.get("metadata")
    if not isinstance(meta, dict):
        return (
            [fe.required("metadata")]
            if meta is None
            else [fe.invalid("metadata", meta, "must be an object")]
        )
    causes: list[Cause] = []
    lenient = rt.group == "" and rt.kind == "Event"
    name = meta.get("name") or ""
    generate_name = meta.get("generateName") or ""
    if generate_name and not lenient:
        # A prefix may end in "-": check it as if a suffix had been appended.
        masked = str(generate_name)
        if len(masked) > 1 and masked.endswith("-"):
            masked = masked[:-2] + "a"
        causes += [
            fe.invalid("metadata.generateName", generate_name, m) for m in name_rule(rt)(masked)
        ]
    if not name:
        causes.append(fe.required("metadata.name", "name or generateName is required"))
    else:
        causes += [fe.invalid("metadata.name", name, m) for m in name_rule(rt)(str(name))]
    if rt.namespaced:
        namespace = meta.get("namespace") or ""
        if not namespace:
            causes.append(fe.required("metadata.namespace"))
        elif not lenient:
            causes += [
                fe.invalid("metadata.namespace", namespace, m)
                for m in names.dns1123_label(namespace)
            ]
    if not lenient:
        causes += fe.nonnegative("metadata.generation", meta.get("generation"))
        causes += validate_labels(meta.get("labels"), "metadata.labels")
        causes += validate_annotations(meta.get("annotations"), "metadata.annotations")
        causes += validate_owner_references(meta.get("ownerReferences"), "metadata.ownerReferences")
        causes += validate_finalizers(meta.get("finalizers"), "metadata.finalizers")
    if old is not None:
        causes += _validate_update(meta, old.get("metadata") or {})
    return causes


def validate_labels(labels: Any, path: str) -> list[Cause]:
    """Keys are qualified names, values label values; errors point at the map."""
    if labels is None:
        return []
    if not isinstance(labels, dict):
        return [fe.invalid(path, labels, "must be a map of string keys to string values")]
    causes: list[Cause] = []
    for k in sorted(labels):
        causes += [fe.invalid(path, k, m) for m in names.qualified_name(k)]
        v = labels[k]
        if not isinstance(v, str):
            causes.append(fe.invalid(path, v, "label values must be strings"))
            continue
        causes += [fe.invalid(path, v, m) for m in names.label_value(v)]
    return causes


def validate_annotations(annotations: Any, path: str) -> list[Cause]:
    if annotations is None:
        return []
    if not isinstance(annotations, dict):
        return [fe.invalid(path, annotations, "must be a map of string keys to string values")]
    causes: list[Cause] = []
    size = 0
    for k in sorted(annotations):
        # Annotation keys are qualified names, but case does not matter.
        causes += [fe.invalid(path, k, m) for m in names.qualified_name(k.lower())]
        v = annotations[k]
        if not isinstance(v, str):
            causes.append(fe.invalid(fe.key(path, k), v, "annotation values must be strings"))
            v = str(v)
        size += len(k.encode()) + len(v.encode())
    if size > ANNOTATIONS_SIZE_LIMIT:
        causes.append(fe.too_long(path, ANNOTATIONS_SIZE_LIMIT))
    return causes


def _parse_api_version(api_version: str) -> tuple[str, str] | None:
    """(group, version), or None when the string is not a group/version."""
    if not api_version:
        return "", ""
    if api_version == "v1":
        return "", "v1"
    parts = api_version.split("/")
    if len(parts) == 1:
        return "", parts[0]
    if len(parts) == 2 and parts[0] and parts[1]:
        return parts[0], parts[1]
    return None


def validate_owner_references(refs: Any, path: str) -> list[Cause]:
    if refs is None:
        return []
    if not isinstance(refs, list):
        return [fe.invalid(path, refs, "must be a list")]
    causes: list[Cause] = []
    first_controller = ""
    for ref in refs:
        if not isinstance(ref, dict):
            causes.append(fe.invalid(path, ref, "must be an object"))
            continue
        api_version = str(ref.get("apiVersion") or "")
        kind = str(ref.get("kind") or "")
        parsed = _parse_api_version(api_version)
        group, version = parsed if parsed else ("", "")
        if not version:
            causes.append(
                fe.invalid(fe.child(path, "apiVersion"), api_version, "version must not be empty")
            )
        if not kind:
            causes.append(fe.invalid(fe.child(path, "kind"), kind, "must not be empty"))
        for field in ("name", "uid"):
            if not ref.get(field):
                causes.append(
                    fe.invalid(
                        fe.child(path, field), str(ref.get(field) or ""), "must not be empty"
                    )
                )
        if (group, version, kind) in _BANNED_OWNERS:
            causes.append(
                fe.invalid(
                    path, ref, f"{group}/{version}, Kind={kind} is disallowed from being an owner"
                )
            )
        if ref.get("controller") is True:
            current = f"{kind}/{ref.get('name', '')}"
            if first_controller:
                causes.append(
                    fe.invalid(
                        path,
                        refs,
                        'Only one reference can have Controller set to true. Found "true" in '
                        f"references for {first_controller} and {current}",
                    )
                )
            else:
                first_controller = current
    return causes


def validate_finalizers(finalizers: Any, path: str) -> list[Cause]:
    if finalizers is None:
        return []
    if not isinstance(finalizers, list):
        return [fe.invalid(path, finalizers, "must be a list of strings")]
    causes: list[Cause] = []
    for f in finalizers:
        causes += [fe.invalid(path, f, m) for m in names.qualified_name(str(f))]
    if _ORPHAN in finalizers and _FOREGROUND in finalizers:
        causes.append(
            fe.invalid(
                path, finalizers, f"finalizer {_ORPHAN} and {_FOREGROUND} cannot be both set"
            )
        )
    return causes


def _validate_update(meta: dict[str, Any], old_meta: dict[str, Any]) -> list[Cause]:
    causes: list[Cause] = []
    if old_meta.get("deletionTimestamp"):
        extra = sorted(set(meta.get("finalizers") or []) - set(old_meta.get("finalizers") or []))
        if extra:
            causes.append(
                fe.forbidden(
                    "metadata.finalizers",
                    "no new finalizers can be added if the object is being deleted, "
                    f"found new finalizers {fe.show(extra)}",
                )
            )
    generation, old_generation = meta.get("generation"), old_meta.get("generation")
    if (
        isinstance(generation, int)
        and isinstance(old_generation, int)
        and generation < old_generation
    ):
        causes.append(fe.invalid("metadata.generation", generation, "must not be decremented"))
    for field in ("name", "namespace"):
        if (meta.get(field) or "") != (old_meta.get(field) or ""):
            causes.append(fe.immutable(f"metadata.{field}", meta.get(field) or ""))
    # The REST layer copies these from the stored object when the request leaves
    # them out, so only a different explicit value is an error.
    for field in ("uid", "creationTimestamp", "deletionGracePeriodSeconds"):
        value = meta.get(field)
        if value not in (None, "") and value != old_meta.get(field):
            causes.append(fe.immutable(f"metadata.{field}", value))
    if old_meta.get("deletionTimestamp") and meta.get("deletionTimestamp") not in (
        None,
        old_meta["deletionTimestamp"],
    ):
        causes.append(fe.immutable("metadata.deletionTimestamp", meta["deletionTimestamp"]))
    return causes
