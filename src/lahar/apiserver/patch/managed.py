"""``metadata.managedFields``: reading, writing and updating it after ordinary writes.

Every write records who owns which fields. Entries are identified by manager
name, operation (``Apply`` or ``Update``), subresource and, for ``Update``
only, the API version — the same identity kube-apiserver uses, so an entry is
never duplicated. Some fields are never tracked: ``apiVersion``, ``kind``,
``metadata`` itself and the system-set metadata fields (name, namespace, uid,
resourceVersion, generation, creationTimestamp, selfLink, clusterName,
managedFields). Writes to the main resource of a kind with a status
subresource do not track ``.status`` (it is reset by the server), and writes
to ``/status`` track only ``.status``.

:func:`record_update` computes the new managedFields after a create, update or
patch: the fields the write changed become owned by the writer (operation
``Update``) and are taken away from everyone else.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

import orjson

from lahar.apiserver.jsoncopy import clone
from lahar.apiserver.patch.fieldset import (
    FieldSet,
    Path,
    compare,
    compare_field,
    from_fields_v1,
    to_fields_v1,
)
from lahar.apiserver.patch.lists import ListSemantics

STRIPPED: frozenset[Path] = frozenset(
    {
        ("f:apiVersion",),
        ("f:kind",),
        ("f:metadata",),
        *(
            ("f:metadata", "f:" + name)
            for name in (
                "name",
                "namespace",
                "creationTimestamp",
                "selfLink",
                "uid",
                "clusterName",
                "generation",
                "managedFields",
                "resourceVersion",
            )
        ),
    }
)


@dataclass
class Entry:
    """One managedFields entry, with its FieldsV1 decoded into a set of paths."""

    manager: str
    operation: str
    api_version: str
    subresource: str = ""
    time: str | None = None
    fields: FieldSet = field(default_factory=set)
    raw: dict[str, Any] | None = None  # the stored form, reused while unchanged

    @property
    def identity(self) -> tuple[str, str, str, str]:
        version = "" if self.operation == "Apply" else self.api_version
        return (self.manager, self.operation, version, self.subresource)

    def describe(self) -> str:
        """How conflict messages name this manager."""
        text = f'"{self.manager}"'
        if self.subresource:
            text += f' with subresource "{self.subresource}"'
        if self.operation == "Update":
            text += f" using {self.api_version}"
        return text

    def encode(self) -> dict[str, Any]:
        if self.raw is not None:
            return clone(self.raw)
        out: dict[str, Any] = {
            "manager": self.manager,
            "operation": self.operation,
            "apiVersion": self.api_version,
        }
        if self.time is not None:
            out["time"] = self.time
        out["fieldsType"] = "FieldsV1"
        out["fieldsV1"] = to_fields_v1(self.fields)
        if self.subresource:
            out["subresource"] = self.subresource
        return out


def decode_managed_fields(entries: Any) -> list[Entry]:
    """Parse a managedFields list; entries sharing an identity are merged."""
    out: dict[tuple[str, str, str, str], Entry] = {}
    if not isinstance(entries, list):
        return []
    for raw in entries:
        if not isinstance(raw, dict) or not raw:
            continue
        entry = Entry(
            manager=str(raw.get("manager", "")),
            operation=str(raw.get("operation", "Update")),
            api_version=str(raw.get("apiVersion", "")),
            subresource=str(raw.get("subresource", "") or ""),
            time=raw.get("time"),
            fields=_decode_fields(raw.get("fieldsV1") or {}),
            raw=raw,
        )
        previous = out.get(entry.identity)
        if previous is not None:
            previous.fields |= entry.fields
            previous.raw = None
        else:
            out[entry.identity] = entry
    return list(out.values())


def _decode_fields(fields_v1: Any) -> FieldSet:
    """``from_fields_v1``, memoised by the entry's JSON: every update decodes every
    entry of the object it replaces, and most entries are alike (pods of one template,
    the Leases of many nodes) or unchanged since the last write. The caller may change
    the set it gets: it is a copy."""
    try:
        key = orjson.dumps(fields_v1)
    except (TypeError, orjson.JSONEncodeError):
        return from_fields_v1(fields_v1)
    cached = _DECODED.get(key)
    if cached is None:
        cached = frozenset(from_fields_v1(fields_v1))
        if len(_DECODED) >= _MAX_DECODED:
            _DECODED.clear()
        _DECODED[key] = cached
    return set(cached)


_DECODED: dict[bytes, frozenset[Path]] = {}
_MAX_DECODED = 2048


def encode_managed_fields(entries: list[Entry]) -> list[dict[str, Any]]:
    """Serialize entries in the server's order (Apply before Update, then by time)."""
    kept = [e for e in entries if e.fields]
    kept.sort(key=lambda e: (e.operation, e.time or "", e.manager, e.api_version, e.subresource))
    return [e.encode() for e in kept]


def is_reset(entries: Any) -> bool:
    """``managedFields: [{}]`` asks the server to drop all ownership records."""
    return isinstance(entries, list) and len(entries) == 1 and entries[0] == {}


def tracked(path: Path, subresource: str, status_subresource: bool) -> bool:
    """Whether a write through ``subresource`` records ownership of ``path``."""
    if path in STRIPPED or not path:
        return False
    if subresource == "status":
        return path[0] == "f:status"
    return not (status_subresource and path[0] == "f:status")


def only_tracked(paths: FieldSet, subresource: str, status_subresource: bool) -> FieldSet:
    """The paths of ``paths`` that are :func:`tracked` (inlined: a create filters every
    path of the object)."""
    if subresource == "status":
        return {p for p in paths if p and p[0] == "f:status" and p not in STRIPPED}
    if status_subresource:
        return {p for p in paths if p and p[0] != "f:status" and p not in STRIPPED}
    return {p for p in paths if p and p not in STRIPPED}


def without_managed_fields(obj: dict | None) -> dict:
    """A copy of ``obj`` minus ``metadata.managedFields`` (never part of comparisons)."""
    if not obj:
        return {}
    out = copy.copy(obj)
    meta = out.get("metadata")
    if isinstance(meta, dict) and "managedFields" in meta:
        meta = dict(meta)
        del meta["managedFields"]
        out["metadata"] = meta
    return out


def _managed_list(obj: dict | None) -> Any:
    if not obj:
        return None
    meta = obj.get("metadata")
    return meta.get("managedFields") if isinstance(meta, dict) else None


def record_update(
    old: dict | None,
    new: dict,
    *,
    manager: str,
    operation: str = "Update",
    lists: ListSemantics,
    now: str,
    subresource: str = "",
    status_subresource: bool = True,
) -> list[dict]:
    """The managedFields ``new`` should carry after a non-apply write replacing ``old``.

    ``old`` is None for a create. If the writer sent its own managedFields (and
    this is not a subresource write) they replace the stored ones, ``[{}]``
    clearing them; an empty list keeps the stored ones. A write that changes no
    tracked field leaves managedFields as they were.
    """
    old_list = _managed_list(old)
    new_list = _managed_list(new)
    if not subresource and is_reset(new_list):
        entries: list[Entry] = []
        from_client = True
    elif not subresource and isinstance(new_list, list) and new_list and new_list != old_list:
        entries = decode_managed_fields(new_list)
        from_client = True
    else:
        entries = decode_managed_fields(old_list)
        from_client = False

    if subresource == "status":  # only .status is tracked: compare nothing else
        diff = compare_field(old, new, "status", lists)
    else:
        diff = compare(without_managed_fields(old), without_managed_fields(new), lists)
    changed = only_tracked(diff.changed(), subresource, status_subresource)
    removed = only_tracked(diff.removed, subresource, status_subresource)
    if not changed and not removed and not from_client:
        return clone(old_list) if isinstance(old_list, list) else []

    api_version = str(new.get("apiVersion", ""))
    writer = Entry(manager or "unknown", operation, api_version, subresource)
    lost = changed | removed
    for entry in entries:
        if entry.fields & lost:
            entry.fields -= lost
            entry.raw = None
    if changed:
        mine = next((e for e in entries if e.identity == writer.identity), None)
        if mine is None:
            entries.append(writer)
            mine = writer
        mine.fields |= changed
        mine.time = now
        mine.raw = None
    return encode_managed_fields(entries)
