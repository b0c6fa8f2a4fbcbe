"""Server-side apply (``application/apply-patch+yaml``, ``kubectl apply --server-side``).

An apply sends a partial object, the *configuration*: the fields the manager
wants to own and their values. The server

1. merges the configuration into the live object (maps key by key, atomic
   lists and objects replaced whole, map-lists merged on their keys, sets
   unioned);
2. removes the fields this manager applied last time but no longer applies,
   unless another manager also owns them;
3. refuses, with 409 ``Conflict`` and one ``FieldManagerConflict`` cause per
   field, to change a value another manager owns — unless ``force`` is set, in
   which case ownership moves to the applier;
4. records the configuration's fields as the applier's ``Apply`` entry in
   ``metadata.managedFields``, taking changed fields away from other managers.

An object that does not exist yet is created from the configuration. An
object that predates field tracking has its fields attributed to a
``before-first-apply`` manager first, as Kubernetes does.
"""

from __future__ import annotations

from typing import Any

from lahar.apiserver.errors import APIError, Cause, bad_request
from lahar.apiserver.jsoncopy import clone
from lahar.apiserver.patch.fieldset import (
    FieldSet,
    Path,
    compare,
    field_set,
    human_path,
    item_element,
    remove_paths,
)
from lahar.apiserver.patch.lists import ListSemantics
from lahar.apiserver.patch.managed import (
    Entry,
    decode_managed_fields,
    encode_managed_fields,
    only_tracked,
    without_managed_fields,
)

BEFORE_FIRST_APPLY = "before-first-apply"


def server_side_apply(
    live: dict | None,
    config: dict,
    *,
    manager: str,
    force: bool,
    lists: ListSemantics,
    now: str,
    subresource: str = "",
    status_subresource: bool = True,
) -> dict:
    """Apply ``config`` for ``manager`` to ``live`` (None = create); returns the new object.

    With ``subresource="status"`` only the configuration's ``status`` is applied;
    on the main resource of a kind with a status subresource the configuration's
    ``status`` is ignored (pass ``status_subresource=False`` for kinds without one).
    """
    if not isinstance(config, dict):
        raise bad_request("error decoding YAML: apply configuration must be an object")
    meta = config.get("metadata")
    if meta is not None and not isinstance(meta, dict):
        raise bad_request(
            "failed to create typed patch object: .metadata: expected map, got "
            + type(meta).__name__
        )
    if isinstance(meta, dict) and meta.get("managedFields"):
        raise bad_request("metadata.managedFields must be nil")
    if not manager:
        raise bad_request(
            'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: '
            "is required for apply patch"
        )

    live_obj = without_managed_fields(live)
    live_meta = (live or {}).get("metadata")
    entries = decode_managed_fields(
        live_meta.get("managedFields") if isinstance(live_meta, dict) else None
    )
    if live is not None and not entries and live_obj:
        owned = field_set(live_obj, lists, strict=False)
        first = Entry(BEFORE_FIRST_APPLY, "Update", str(live_obj.get("apiVersion", "")))
        first.fields = only_tracked(owned, subresource, status_subresource)
        first.time = now
        if first.fields:
            entries.append(first)

    applier = Entry(manager, "Apply", str(config.get("apiVersion", live_obj.get("apiVersion", ""))))
    applier.subresource = subresource
    previous = next((e for e in entries if e.identity == applier.identity), None)
    others = [e for e in entries if e.identity != applier.identity]

    config = without_managed_fields(config)
    applied = only_tracked(field_set(config, lists), subresource, status_subresource)
    merged = _merge(live_obj, config, (), lists)

    # Fields applied last time but not now go away unless someone else holds them.
    if previous is not None:
        keep = applied.union(*(e.fields for e in others))
        held_below = {p[:i] for p in keep for i in range(1, len(p))}
        dropped = {p for p in previous.fields - keep if p not in held_below}
        merged = remove_paths(merged, dropped, lists, keep)

    merged = _restrict(live_obj, merged, live is None, subresource, status_subresource)
    result = _strip_nulls(merged)

    # Conflicts: values another manager owns that this apply changes.
    diff_with_nulls = compare(live_obj, merged, lists)
    changed = only_tracked(diff_with_nulls.changed(), subresource, status_subresource)
    conflicts: list[tuple[Entry, Path]] = []
    for entry in others:
        for path in sorted(entry.fields & changed):
            conflicts.append((entry, path))
    if conflicts and not force:
        raise _conflict_error(conflicts)

    diff = compare(live_obj, result, lists)
    removed = only_tracked(diff.removed, subresource, status_subresource)
    lost = changed | removed
    for entry in others:
        if entry.fields & lost:
            entry.fields -= lost
            entry.raw = None

    if previous is None or previous.fields != applied or not diff.empty():
        applier.fields = applied
        applier.time = now if (previous is None or not diff.empty()) else previous.time
        entries = [*others, applier]
    else:
        entries = [*others, previous]

    metadata = result.get("metadata")
    if not isinstance(metadata, dict):
        metadata = result["metadata"] = {}
    metadata["managedFields"] = encode_managed_fields(entries)
    return result


def _restrict(
    live: dict, merged: dict, creating: bool, subresource: str, status_subresource: bool
) -> dict:
    """Keep only the part of ``merged`` this endpoint may write."""
    if subresource == "status":
        out = clone(live)
        if "status" in merged:
            out["status"] = merged["status"]
        else:
            out.pop("status", None)
        return out
    if status_subresource:
        if "status" in live and not creating:
            merged["status"] = clone(live["status"])
        else:
            merged.pop("status", None)
    return merged


def _merge(lhs: Any, rhs: Any, spath: tuple[str, ...], lists: ListSemantics) -> Any:
    """Merge configuration value ``rhs`` into live value ``lhs`` (inputs untouched)."""
    if isinstance(lhs, dict) and isinstance(rhs, dict) and lists.object_kind(spath) != "atomic":
        out = dict(lhs)
        for key, value in rhs.items():
            if key in lhs:
                out[key] = _merge(lhs[key], value, (*spath, key), lists)
            else:
                out[key] = clone(value)
        return out
    if isinstance(lhs, list) and isinstance(rhs, list):
        lt = lists.resolve(spath)
        if lt.kind == "atomic":
            return clone(rhs)
        left: dict[str, Any] = {}
        for index, item in enumerate(lhs):
            element = item_element(lt, item)
            if element is None or element in left:
                # Keyless or duplicate live items cannot be addressed; keep them as they are.
                element = f"\x00{index}"
            left[element] = item
        right: dict[str, Any] = {}
        for item in rhs:
            element = item_element(lt, item)
            if element is not None and element not in right:
                right[element] = item
        out_list = []
        for element in _merged_order(list(left), list(right)):
            if element in left and element in right:
                out_list.append(_merge(left[element], right[element], spath, lists))
            elif element in right:
                out_list.append(clone(right[element]))
            else:
                out_list.append(clone(left[element]))
        return out_list
    return clone(rhs)


def _merged_order(lhs: list[str], rhs: list[str]) -> list[str]:
    """Order of a merged list: the configuration's order for the items it names,
    live items it does not name staying where they were relative to those."""
    in_rhs = set(rhs)
    shared = [e for e in rhs if e in set(lhs)]
    out: list[str] = []
    emitted: set[str] = set()
    li = ri = si = 0
    while li < len(lhs) or ri < len(rhs):
        while si < len(shared) and shared[si] in emitted:
            si += 1
        if li < len(lhs) and lhs[li] in emitted:
            li += 1
        elif li < len(lhs) and ri < len(rhs) and lhs[li] == rhs[ri]:
            out.append(lhs[li])
            emitted.add(lhs[li])
            li += 1
            ri += 1
        elif li < len(lhs) and lhs[li] not in in_rhs:
            out.append(lhs[li])
            emitted.add(lhs[li])
            li += 1
        elif li < len(lhs) and si < len(shared) and shared[si] != lhs[li] and ri < len(rhs):
            li += 1  # a shared item the configuration places later
        elif ri < len(rhs):
            if rhs[ri] not in emitted:
                out.append(rhs[ri])
                emitted.add(rhs[ri])
            ri += 1
        else:
            li += 1
    return out


def _strip_nulls(value: Any) -> Any:
    """Drop ``null`` map values: an applied null means "owned, and unset"."""
    if isinstance(value, dict):
        return {k: _strip_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_strip_nulls(v) for v in value]
    return value


def _conflict_error(conflicts: list[tuple[Entry, Path]]) -> APIError:
    conflicts = sorted(conflicts, key=lambda c: (c[0].manager, c[0].operation, c[1]))
    causes = [
        Cause("FieldManagerConflict", f"conflict with {e.describe()}", human_path(p))
        for e, p in conflicts
    ]
    if len(conflicts) == 1:
        entry, path = conflicts[0]
        message = (
            f"Apply failed with 1 conflict: conflict with {entry.describe()}: {human_path(path)}"
        )
    else:
        lines: list[str] = []
        current = None
        for entry, path in conflicts:
            if entry.describe() != current:
                current = entry.describe()
                lines.append(f"conflicts with {current}:")
            lines.append(f"- {human_path(path)}")
        message = f"Apply failed with {len(conflicts)} conflicts: " + "\n".join(lines)
    return APIError(409, "Conflict", message, causes=causes)


def owned_by(obj: dict, manager: str, operation: str = "Apply") -> FieldSet:
    """The fields ``manager`` owns in ``obj`` (a helper for callers and tests)."""
    entries = decode_managed_fields(obj.get("metadata", {}).get("managedFields"))
    out: FieldSet = set()
    for entry in entries:
        if entry.manager == manager and entry.operation == operation:
            out |= entry.fields
    return out
