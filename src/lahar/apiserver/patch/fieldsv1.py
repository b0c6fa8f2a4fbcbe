"""FieldsV1, the JSON form of a field set in ``metadata.managedFields``.

A field set is a set of paths (tuples of ``f:``/``k:``/``v:``/``i:`` elements, see
``fieldset.py``); FieldsV1 nests them as objects, a ``.`` key marking a node that is
owned itself as well as through children. Kept apart from the comparison code: every
write encodes (and decodes) these, so they are written for speed.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import orjson

Path = tuple[str, ...]
FieldSet = set[Path]

# field set -> its FieldsV1 as JSON bytes. The sets written are few: each pod status
# write, Lease renewal or PodGroup update of a bench owns the same fields as the last
# one, so the tree is built once and decoded afresh (a private copy) for every write.
_ENCODED: dict[frozenset[Path], bytes] = {}
_MAX_ENCODED = 1024


def to_fields_v1(paths: Iterable[Path]) -> dict[str, Any]:
    """Encode a field set as a FieldsV1 object (keys in sorted order, ``.`` first):
    :func:`build_fields_v1`, memoised by the set. The caller owns what it gets."""
    key = frozenset(paths)
    data = _ENCODED.get(key)
    if data is not None:
        return orjson.loads(data)  # type: ignore[no-any-return]
    tree = build_fields_v1(key)  # a new set (a pod's IPs are list keys): built, kept
    try:
        data = orjson.dumps(tree)
    except orjson.JSONEncodeError:  # a lone surrogate in a name: not memoised
        return tree
    if len(_ENCODED) >= _MAX_ENCODED:
        _ENCODED.clear()
    _ENCODED[key] = data
    return tree


def build_fields_v1(paths: Iterable[Path]) -> dict[str, Any]:
    """Encode a field set as a FieldsV1 object (keys in sorted order, ``.`` first).

    Paths are sorted as tuples: a node comes before everything under it and siblings
    come in the order of their elements, so one pass builds each level in order. A
    member starts out with its ``.`` marker, dropped again if nothing is added under it
    (a leaf is ``{}``)."""
    tree: dict[str, Any] = {}
    members: list[dict[str, Any]] = []
    ordered = sorted(set(paths))
    if ordered and not ordered[0]:  # the root itself (never produced by this server)
        tree["."] = {}
        members.append(tree)
    for path in ordered:
        node = tree
        for element in path[:-1]:
            child = node.get(element)
            if child is None:
                child = node[element] = {}
            node = child
        if path:
            leaf: dict[str, Any] = {".": {}}
            node[path[-1]] = leaf
            members.append(leaf)
    for leaf in members:
        if len(leaf) == 1:
            leaf.clear()
    return tree


def from_fields_v1(fields: Any) -> FieldSet:
    """Decode a FieldsV1 object into a field set (malformed parts are skipped)."""
    out: FieldSet = set()

    def walk(node: Any, prefix: Path) -> None:
        if not isinstance(node, dict):
            return
        if not node and prefix:
            out.add(prefix)
            return
        for element, sub in node.items():
            if element == ".":
                if prefix:
                    out.add(prefix)
            else:
                walk(sub, (*prefix, element))

    walk(fields, ())
    return out
