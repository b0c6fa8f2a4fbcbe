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
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import orjson

from lahar.apiserver.errors import bad_request
from lahar.apiserver.jsoncopy import clone
from lahar.apiserver.patch.fieldsv1 import from_fields_v1, to_fields_v1
from lahar.apiserver.patch.lists import ListSemantics, ListType

__all__ = [  # FieldsV1 encoding lives in fieldsv1.py; named here too, as it always was
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

Path = tuple[str, ...]
FieldSet = set[Path]


class _Missing:
    """Type of the absent-value marker (falsy, so ``lhs or rhs`` means "has content")."""

    def __bool__(self) -> bool:
        return False


_MISSING: Any = _Missing()


def _dump(value: Any) -> str:
    """Compact JSON with sorted keys, as path elements spell list keys and set items.

    Every list item of every compared object is named this way, mostly by a small
    map of plain strings (``{"type":"Ready"}``, ``{"name":"main"}``): those are spelled
    directly, exactly as ``json.dumps`` would (it escapes nothing but ``"``, ``\\``
    and control characters when ``ensure_ascii`` is off); anything else goes to it."""
    kind = type(value)
    if kind is str and _PLAIN(value):
        return f'"{value}"'
    if kind is dict and all(
        type(k) is str and type(v) is str and _PLAIN(k) and _PLAIN(v) for k, v in value.items()
    ):
        return "{" + ",".join(f'"{k}":"{v}"' for k, v in sorted(value.items())) + "}"
    return json.dumps(value, separators=(",", ":"), sort_keys=True, ensure_ascii=False)


# Strings json.dumps(ensure_ascii=False) writes as they are, between quotes.
_PLAIN = re.compile(r'[^"\\\x00-\x1f]*\Z').match


def item_element(lt: ListType, item: Any, where: str = "") -> str | None:
    """The path element of a list item: ``k:{..}`` for map-lists, ``v:..`` for sets."""
    if lt.kind == "map":
        if not isinstance(item, dict):
            return None
        key = lt.key_of(item)
        if key is None:
            return None
        return "k:" + _dump(key)
    if lt.kind == "set":
        return "v:" + _dump(item)
    return None


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
# Comparing two objects.


@dataclass
class Comparison:
    added: FieldSet = field(default_factory=set)
    removed: FieldSet = field(default_factory=set)
    modified: FieldSet = field(default_factory=set)

    def empty(self) -> bool:
        return not (self.added or self.removed or self.modified)

    def changed(self) -> FieldSet:
        return self.added | self.modified


def compare(old: Any, new: Any, lists: ListSemantics) -> Comparison:
    """Fields added, removed and modified going from ``old`` to ``new``."""
    result = Comparison()
    _cmp(old, new, (), (), lists, result)
    return result


def compare_field(old: Any, new: Any, key: str, lists: ListSemantics) -> Comparison:
    """:func:`compare` of the top-level field ``key`` of two objects only (the paths
    under ``f:<key>``, exactly as the whole comparison would report them)."""
    result = Comparison()
    lval = old.get(key, _MISSING) if isinstance(old, dict) else _MISSING
    rval = new.get(key, _MISSING) if isinstance(new, dict) else _MISSING
    if lval is _MISSING and rval is _MISSING:
        return result
    if _same(lval, rval):
        return result
    _cmp(lval, rval, ("f:" + key,), (key,), lists, result)
    return result


# Above this depth, equal subtrees (a status write's untouched spec) are skipped whole.
_SAME_DEPTH = 2


def _same(lhs: Any, rhs: Any) -> bool:
    """Whether two containers are identical down to the types of their leaves (so
    walking them would find no difference): the same object, or the same orjson bytes,
    which tell ``1`` from ``1.0`` and ``true`` and keep list order. False when unsure."""
    if lhs is rhs:
        return True
    if type(lhs) is not type(rhs) or not isinstance(lhs, dict | list):
        return False
    try:
        return orjson.dumps(lhs) == orjson.dumps(rhs)
    except (TypeError, orjson.JSONEncodeError):
        return False


def _items(lt: ListType, value: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if isinstance(value, list):
        for item in value:
            element = item_element(lt, item)
            if element is not None and element not in out:
                out[element] = item
    return out


def _collect(
    value: Any, fpath: Path, spath: tuple[str, ...], lists: ListSemantics, out: FieldSet
) -> None:
    """Every path of ``value`` and below into ``out``: what :func:`_cmp` reports for a
    subtree present on one side only (all added, or all removed), without comparing.
    A create, and most of a pod's first status write, are nothing but such subtrees."""
    if isinstance(value, dict):
        if value and lists.object_kind(spath) != "atomic":
            for key, sub in value.items():
                _collect(sub, (*fpath, "f:" + key), (*spath, key), lists, out)
    elif isinstance(value, list) and value:
        lt = lists.resolve(spath)
        if lt.kind != "atomic":
            for element, item in _items(lt, value).items():
                _collect(item, (*fpath, element), spath, lists, out)
    if fpath:
        out.add(fpath)


def _cmp(
    lhs: Any, rhs: Any, fpath: Path, spath: tuple[str, ...], lists: ListSemantics, out: Comparison
) -> None:
    if lhs is _MISSING:
        _collect(rhs, fpath, spath, lists, out.added)
        return
    if rhs is _MISSING:
        _collect(lhs, fpath, spath, lists, out.removed)
        return
    container = None
    if isinstance(lhs, dict | _Missing) and isinstance(rhs, dict | _Missing):
        container = "dict"
    elif isinstance(lhs, list | _Missing) and isinstance(rhs, list | _Missing):
        container = "list"
    if container == "dict" and lists.object_kind(spath) != "atomic" and (lhs or rhs):
        left = lhs if isinstance(lhs, dict) else {}
        right = rhs if isinstance(rhs, dict) else {}
        shallow = len(fpath) < _SAME_DEPTH
        for key in {**left, **right}:
            lval, rval = left.get(key, _MISSING), right.get(key, _MISSING)
            if shallow and _same(lval, rval):
                continue
            _cmp(
                lval,
                rval,
                (*fpath, "f:" + key),
                (*spath, key),
                lists,
                out,
            )
    elif container == "list" and lists.resolve(spath).kind != "atomic" and (lhs or rhs):
        lt = lists.resolve(spath)
        left_items, right_items = _items(lt, lhs), _items(lt, rhs)
        for element in {**left_items, **right_items}:
            _cmp(
                left_items.get(element, _MISSING),
                right_items.get(element, _MISSING),
                (*fpath, element),
                spath,
                lists,
                out,
            )
    else:
        if not fpath:
            return
        if lhs is _MISSING:
            out.added.add(fpath)
        elif rhs is _MISSING:
            out.removed.add(fpath)
        elif lhs != rhs or type(lhs) is not type(rhs):
            out.modified.add(fpath)
        return
    if fpath:
        if lhs is _MISSING:
            out.added.add(fpath)
        elif rhs is _MISSING:
            out.removed.add(fpath)


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
