"""Field sets: which fields of an object a manager owns, in Kubernetes' FieldsV1 form.

Server-side apply records ownership as sets of field paths. A path is a tuple
of path elements already spelled the FieldsV1 way: ``f:<name>`` for a field or
map key, ``k:{"name":"c"}`` for the item of a map-list with those key values
(keys sorted by name, compact JSON), ``v:<json>`` for an item of a set. A path
in a set means that node is owned; when an owned node also has owned children,
FieldsV1 marks the node itself with a ``.`` entry.

This module turns objects into field sets (:func:`field_set`), compares two
objects into added/removed/modified sets (:func:`compare`, the basis of
conflicts and of ``Update`` ownership), removes owned fields from objects and
converts sets to and from FieldsV1 and to the ``.spec.containers[name="c"]``
strings used in conflict messages.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from lahar.apiserver.errors import bad_request
from lahar.apiserver.jsoncopy import clone
from lahar.apiserver.patch.compare import (  # comparison lives in compare.py
    _MISSING as _MISSING,
)
from lahar.apiserver.patch.compare import (
    Comparison,
    FieldSet,
    Path,
    _dump,
    compare,
    compare_field,
    item_element,
)
from lahar.apiserver.patch.compare import _cmp as _cmp
from lahar.apiserver.patch.compare import _collect as _collect
from lahar.apiserver.patch.compare import _items as _items
from lahar.apiserver.patch.compare import _Missing as _Missing
from lahar.apiserver.patch.compare import _same as _same
from lahar.apiserver.patch.fieldsv1 import from_fields_v1, to_fields_v1
from lahar.apiserver.patch.lists import ListSemantics, ListType

__all__ = [  # FieldsV1 encoding (fieldsv1.py) and comparison (compare.py) named here too
    "Comparison",
    "FieldSet",
    "Path",
    "compare",
    "compare_field",
    "field_set",
    "from_fields_v1",
    "human_path",
    "item_element",
    "remove_paths",
    "to_fields_v1",
    "under",
]


def _require_element(lt: ListType, item: Any, index: int, where: str) -> str:
    element = item_element(lt, item)
    if element is None:
        missing = [k for k in lt.keys if not isinstance(item, dict) or k not in item]
        name = missing[0] if missing else lt.keys[0]
        raise bad_request(
            f"failed to create typed patch object: {where}: element {index}: associative list "
            f'with keys has an element that omits key field "{name}" '
            "(and doesn't have default value)"
        )
    return element


def human_path(path: Path) -> str:
    """``.spec.containers[name="c"].image``, the way conflict messages print a path."""
    out = []
    for element in path:
        kind, _, rest = element.partition(":")
        if kind == "f":
            out.append("." + rest)
        elif kind == "k":
            values = json.loads(rest)
            out.append("[" + ",".join(f"{k}={_dump(v)}" for k, v in values.items()) + "]")
        elif kind == "v":
            out.append(f"[={rest}]")
        elif kind == "i":
            out.append(f"[{rest}]")
    return "".join(out)


def _schema_path(path: Path) -> tuple[str, ...]:
    return tuple(e[2:] for e in path if e.startswith("f:"))


# ---------------------------------------------------------------------------
# Objects to sets.


def field_set(obj: Any, lists: ListSemantics, *, strict: bool = True) -> FieldSet:
    """Every leaf, list item and map entry of ``obj`` (what an applier owns)."""
    out: FieldSet = set()
    _walk(obj, (), (), lists, out, strict)
    return out


def _walk(
    value: Any,
    fpath: Path,
    spath: tuple[str, ...],
    lists: ListSemantics,
    out: FieldSet,
    strict: bool,
) -> None:
    if isinstance(value, dict):
        kind = lists.object_kind(spath)
        if fpath and (kind == "atomic" or not value):
            out.add(fpath)
            return
        for key, sub in value.items():
            child = (*fpath, "f:" + key)
            _walk(sub, child, (*spath, key), lists, out, strict)
            if kind == "map":
                out.add(child)
    elif isinstance(value, list):
        lt = lists.resolve(spath)
        if lt.kind == "atomic" or not value:
            out.add(fpath)
            return
        seen: set[str] = set()
        for index, item in enumerate(value):
            if strict:
                element = _require_element(lt, item, index, human_path(fpath))
            else:
                element = item_element(lt, item)
                if element is None:
                    continue
            if element in seen:
                if strict:
                    raise bad_request(
                        f"failed to create typed patch object: {human_path(fpath)}: "
                        f"duplicate entries for key {human_path((element,))}"
                    )
                continue
            seen.add(element)
            child = (*fpath, element)
            _walk(item, child, spath, lists, out, strict)
            out.add(child)
    elif fpath:
        out.add(fpath)


# ---------------------------------------------------------------------------
# Editing objects by path.


def _find_item(items: list[Any], element: str, lt: ListType) -> int:
    for index, item in enumerate(items):
        if item_element(lt, item) == element:
            return index
    return -1


def remove_paths(
    obj: dict, paths: Iterable[Path], lists: ListSemantics, keep: FieldSet | None = None
) -> dict:
    """A copy of ``obj`` without the nodes at ``paths`` (and what they contain).

    Maps and lists the removal leaves empty are dropped too, unless their own
    path is in ``keep`` (someone owns them) or they are top-level fields.
    """
    out = clone(obj)
    wanted = set(paths)
    # Removing a node removes its children; removing a child first could erase
    # the key that locates its list item, so only the topmost paths are used.
    tops = [p for p in wanted if not any(p[:i] in wanted for i in range(1, len(p)))]
    for path in sorted(tops, key=len, reverse=True):
        _remove(out, path, lists, keep or set())
    return out


def _remove(root: dict, path: Path, lists: ListSemantics, keep: FieldSet) -> None:
    chain: list[tuple[Any, Any]] = []  # (container, key-or-index) down to the target
    node: Any = root
    for depth, element in enumerate(path):
        spath = _schema_path(path[:depth])
        if element.startswith("f:") and isinstance(node, dict):
            name = element[2:]
            if name not in node:
                return
            chain.append((node, name))
            node = node[name]
        elif isinstance(node, list):
            index = _find_item(node, element, lists.resolve(spath))
            if index < 0:
                return
            chain.append((node, index))
            node = node[index]
        else:
            return
    depth = len(path)
    while chain:
        container, key = chain.pop()
        del container[key]
        depth -= 1
        if container or depth <= 1 or path[:depth] in keep:
            break


def under(path: Path, prefix: Path) -> bool:
    return path[: len(prefix)] == prefix
