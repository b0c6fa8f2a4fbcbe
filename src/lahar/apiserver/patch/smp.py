"""Strategic merge patch (``application/strategic-merge-patch+json``) for built-in kinds.

This is what ``kubectl patch`` sends by default and what client-side
``kubectl apply`` sends for built-in kinds (a three-way diff carrying
``$setElementOrder`` lists). It extends JSON merge patch with per-field list
semantics from :class:`~.lists.ListSemantics`: lists whose patch strategy is
``merge`` are merged item by item on their merge key (or as a set of scalars),
other lists are replaced whole. Directives understood:

* ``$patch: replace | merge | delete`` in an object, or as a list item
  (``{"$patch": "delete", "name": "c"}`` deletes the item keyed ``c``,
  ``{"$patch": "replace"}`` makes the rest of the patch list the new list);
* ``$retainKeys: [..]`` drops the original keys not listed (union types such
  as a volume's source);
* ``$deleteFromPrimitiveList/<field>: [..]`` removes scalars from a merged list;
* ``$setElementOrder/<field>: [..]`` fixes the order of a merged list;
* ``null`` deletes a key (nulls for absent keys are dropped, as the server does).

Failures are reported as the real server reports them: malformed directives
400, lists of lists and retainKeys mismatches 422.
"""

from __future__ import annotations

from typing import Any

from lahar.apiserver.errors import APIError, bad_request
from lahar.apiserver.jsoncopy import clone
from lahar.apiserver.patch.lists import ListSemantics, ListType

Path = tuple[str, ...]

PATCH = "$patch"
RETAIN_KEYS = "$retainKeys"
DELETE_FROM_PRIMITIVE = "$deleteFromPrimitiveList/"
SET_ELEMENT_ORDER = "$setElementOrder/"

_GENERIC_422 = "the server rejected our request due to an error in our request"


def _unprocessable(detail: str) -> APIError:
    # kube-apiserver wraps these with NewGenericServerResponse, which keeps no detail.
    return APIError(422, "Invalid", _GENERIC_422, causes=[])


def _go_map(value: dict[str, Any]) -> str:
    return "map[" + " ".join(f"{k}:{v}" for k, v in sorted(value.items())) + "]"


def apply_strategic_merge_patch(obj: dict, patch: object, lists: ListSemantics) -> dict:
    """Apply a strategic merge patch to a built-in object; returns a new dict."""
    if not isinstance(patch, dict):
        kind = "array" if isinstance(patch, list) else "non-object value"
        raise bad_request(
            f"json: cannot unmarshal {kind} into Go value of type map[string]interface {{}}"
        )
    result = _merge_map(clone(obj), patch, (), lists)
    return result if result is not None else {}


def _merge_map(
    original: dict[str, Any], patch: dict[str, Any], path: Path, lists: ListSemantics
) -> dict[str, Any] | None:
    """Merge ``patch`` into ``original`` (owned by the caller, mutated). None = delete."""
    directive = patch.get(PATCH)
    if directive is not None:
        if directive == "delete":
            return None
        if directive == "replace":
            rest = {k: v for k, v in patch.items() if k != PATCH}
            return _merge_map({}, rest, path, lists)
        if directive != "merge":
            raise bad_request(f"unknown patch type: {directive} in map: {_go_map(patch)}")

    if RETAIN_KEYS in patch:
        retain = patch[RETAIN_KEYS]
        if not isinstance(retain, list) or not all(isinstance(k, str) for k in retain):
            raise bad_request("invalid patch format of retainKeys")
        keep = set(retain)
        for key in patch:
            if not key.startswith("$") and key not in keep:
                raise _unprocessable("patch content doesn't match retainKeys list")
        for key in list(original):
            if key not in keep:
                del original[key]

    for key, value in patch.items():
        if key.startswith(DELETE_FROM_PRIMITIVE):
            field = key[len(DELETE_FROM_PRIMITIVE) :]
            if not isinstance(value, list):
                raise bad_request("invalid patch format of primitive list")
            current = original.get(field)
            if isinstance(current, list):
                original[field] = [item for item in current if item not in value]

    for key, value in patch.items():
        if key in (PATCH, RETAIN_KEYS) or key.startswith(
            (DELETE_FROM_PRIMITIVE, SET_ELEMENT_ORDER)
        ):
            continue
        child_path = (*path, key)
        if value is None:
            original.pop(key, None)
            continue
        current = original.get(key)
        if isinstance(value, dict):
            base = current if isinstance(current, dict) else {}
            merged = _merge_map(base, value, child_path, lists)
            if merged is None:
                original.pop(key, None)
            else:
                original[key] = merged
        elif isinstance(value, list):
            base_list = current if isinstance(current, list) else []
            original[key] = _merge_list(base_list, value, child_path, lists)
        else:
            original[key] = clone(value)

    for key, value in patch.items():
        if key.startswith(SET_ELEMENT_ORDER):
            field = key[len(SET_ELEMENT_ORDER) :]
            if not isinstance(value, list):
                raise bad_request("invalid patch format of setElementOrder list")
            current = original.get(field)
            if isinstance(current, list):
                lt = lists.resolve((*path, field))
                original[field] = _apply_order(current, value, lt)
    return original


def _merge_list(original: list[Any], patch: list[Any], path: Path, lists: ListSemantics) -> list:
    lt = lists.resolve(path)
    if not lt.smp_merges:
        return clone(patch)
    if any(isinstance(item, list) for item in patch) or any(
        isinstance(item, list) for item in original
    ):
        raise _unprocessable("lists of lists are not supported")
    if any(isinstance(item, dict) for item in patch) or (
        not patch and any(isinstance(item, dict) for item in original)
    ):
        return _merge_object_list(original, patch, path, lt, lists)
    # A merged list of scalars: union, keeping first occurrences.
    merged: list[Any] = []
    for item in [*original, *patch]:
        if item not in merged:
            merged.append(clone(item))
    in_patch = [item for item in merged if item in patch]
    server_only = [item for item in merged if item not in patch]
    return _interleave(in_patch, server_only, original, lambda item: item)


def _merge_object_list(
    original: list[Any], patch: list[Any], path: Path, lt: ListType, lists: ListSemantics
) -> list[Any]:
    key = lt.merge_key
    if not key:
        return clone(patch)
    items = [item for item in original]
    plain: list[dict[str, Any]] = []
    replace = False
    for item in patch:
        if not isinstance(item, dict):
            raise bad_request("invalid JSON document")
        directive = item.get(PATCH)
        if directive is None:
            if key not in item:
                raise bad_request(
                    f"map: {_go_map(item)} does not contain declared merge key: {key}"
                )
            plain.append(item)
        elif directive == "delete":
            if key not in item:
                raise bad_request(
                    f"map: {_go_map(item)} does not contain declared merge key: {key}"
                )
            items = [o for o in items if not (isinstance(o, dict) and o.get(key) == item[key])]
        elif directive == "replace":
            replace = True
        elif directive == "merge":
            raise bad_request("merging lists cannot yet be specified in the patch")
        else:
            raise bad_request(f"unknown patch type: {directive} in map: {_go_map(item)}")
    if replace:
        return [_merge_map({}, item, path, lists) or {} for item in plain]

    def key_of(item: Any) -> Any:
        return item.get(key) if isinstance(item, dict) else None

    for item in plain:
        for index, existing in enumerate(items):
            if isinstance(existing, dict) and existing.get(key) == item[key]:
                merged = _merge_map(existing, item, path, lists)
                items[index] = merged if merged is not None else {}
                break
        else:
            merged = _merge_map({}, item, path, lists)
            if merged is not None:
                items.append(merged)
    patch_keys = [item[key] for item in plain]
    in_patch = sorted(
        (item for item in items if key_of(item) in patch_keys),
        key=lambda item: patch_keys.index(key_of(item)),
    )
    server_only = [item for item in items if key_of(item) not in patch_keys]
    return _interleave(in_patch, server_only, original, key_of)


def _interleave(left: list[Any], right: list[Any], server: list[Any], key_of: Any) -> list[Any]:
    """Merge patch-ordered ``left`` and server-ordered ``right`` into one list.

    An item of ``left`` goes before the head of ``right`` only when both were in
    the server's list and ``left``'s came first there; otherwise the server's
    item goes first, so items the patch does not mention keep their place.
    """
    server_keys = [key_of(item) for item in server]

    def position(item: Any) -> int:
        k = key_of(item)
        return server_keys.index(k) if k in server_keys else -1

    out: list[Any] = []
    i = j = 0
    while i < len(left) or j < len(right):
        if i >= len(left):
            out.append(right[j])
            j += 1
        elif j >= len(right):
            out.append(left[i])
            i += 1
        else:
            li, rj = position(left[i]), position(right[j])
            if li >= 0 and rj >= 0 and li < rj:
                out.append(left[i])
                i += 1
            else:
                out.append(right[j])
                j += 1
    return out


def _apply_order(current: list[Any], order: list[Any], lt: ListType) -> list[Any]:
    """Reorder ``current`` to follow a ``$setElementOrder`` list."""
    key = lt.merge_key
    objects = any(isinstance(item, dict) for item in current)
    if objects:
        if not key:
            return current
        for entry in order:
            if not isinstance(entry, dict) or key not in entry:
                raise bad_request("invalid patch format of setElementOrder list")
        wanted = [entry[key] for entry in order]

        def key_of(item: Any) -> Any:
            return item.get(key) if isinstance(item, dict) else None

    else:
        wanted = list(order)

        def key_of(item: Any) -> Any:
            return item

    listed = sorted(
        (item for item in current if key_of(item) in wanted),
        key=lambda item: wanted.index(key_of(item)),
    )
    unlisted = [item for item in current if key_of(item) not in wanted]
    return _interleave(listed, unlisted, current, key_of)
