"""Comparing two objects into added/removed/modified field sets, and naming list items.

Every write compares the object it replaces with the new one (``managed.record_update``:
the writer owns what it changed) and every create collects the whole object's paths, so
this is the hottest code of the write path. It lives apart from ``fieldset.py`` (which
re-exports all of it) to keep each module small; the reference algorithm it must agree
with is in ``tests/apiserver/patch/test_fieldset_fastpaths.py``.

Paths are tuples of FieldsV1 elements (``f:<name>``, ``k:{..}``, ``v:..``), see
``fieldset.py``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

import orjson

from lahar.apiserver.patch.lists import ListSemantics, ListType

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

# (list keys, their string values) -> the item's path element. A map-list item is named
# by the values of its key fields: the same few names (container "main", condition
# "Ready") come back on every write, so each is spelled once. Bounded (pod IPs are keys
# too): emptied when full.
_ELEMENTS: dict[tuple[tuple[str, ...], tuple[str, ...]], str] = {}
_MAX_ELEMENTS = 8192


def item_element(lt: ListType, item: Any, where: str = "") -> str | None:
    """The path element of a list item: ``k:{..}`` for map-lists, ``v:..`` for sets."""
    if lt.kind == "map":
        if not isinstance(item, dict):
            return None
        keys = lt.keys
        values = tuple(item.get(name) for name in keys)
        if all(type(v) is str for v in values):  # no key missing or null: no defaults
            memo = (keys, values)
            element = _ELEMENTS.get(memo)
            if element is None:
                element = "k:" + _dump(dict(zip(keys, values, strict=True)))
                if len(_ELEMENTS) >= _MAX_ELEMENTS:
                    _ELEMENTS.clear()
                _ELEMENTS[memo] = element
            return element
        key = lt.key_of(item)
        if key is None:
            return None
        return "k:" + _dump(key)
    if lt.kind == "set":
        return "v:" + _dump(item)
    return None


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


_CONTAINERS = (dict, list)


def _collect(
    value: Any, fpath: Path, spath: tuple[str, ...], lists: ListSemantics, out: FieldSet
) -> None:
    """Every path of ``value`` and below into ``out``: what :func:`_cmp` reports for a
    subtree present on one side only (all added, or all removed), without comparing.
    A create, and most of a pod's first status write, are nothing but such subtrees.
    (A leaf or an empty container adds just its own path: added here without a call.)"""
    if isinstance(value, dict):
        if value and lists.object_kind(spath) != "atomic":
            for key, sub in value.items():
                child = (*fpath, "f:" + key)
                if isinstance(sub, _CONTAINERS) and sub:
                    _collect(sub, child, (*spath, key), lists, out)
                else:
                    out.add(child)
    elif isinstance(value, list) and value:
        lt = lists.resolve(spath)
        if lt.kind != "atomic":
            for element, item in _items(lt, value).items():
                child = (*fpath, element)
                if isinstance(item, _CONTAINERS) and item:
                    _collect(item, child, spath, lists, out)
                else:
                    out.add(child)
    if fpath:
        out.add(fpath)


def _cmp(
    lhs: Any, rhs: Any, fpath: Path, spath: tuple[str, ...], lists: ListSemantics, out: Comparison
) -> None:
    """The differences between ``lhs`` and ``rhs`` (either may be ``_MISSING``) at
    ``fpath`` into ``out``. Keys (or list items) on one side only are collected whole;
    the order subtrees are visited in does not matter (the results are sets)."""
    if lhs is _MISSING:
        _collect(rhs, fpath, spath, lists, out.added)
        return
    if rhs is _MISSING:
        _collect(lhs, fpath, spath, lists, out.removed)
        return
    if isinstance(lhs, dict):
        if isinstance(rhs, dict) and (lhs or rhs) and lists.object_kind(spath) != "atomic":
            shallow = len(fpath) < _SAME_DEPTH
            for key, lval in lhs.items():
                rval = rhs.get(key, _MISSING)
                if shallow and _same(lval, rval):
                    continue
                if isinstance(lval, _CONTAINERS) or isinstance(rval, _CONTAINERS):
                    _cmp(lval, rval, (*fpath, "f:" + key), (*spath, key), lists, out)
                else:
                    _leaf(lval, rval, (*fpath, "f:" + key), out)
            added = out.added
            for key, rval in rhs.items():
                if key not in lhs:
                    if isinstance(rval, _CONTAINERS) and rval:
                        _collect(rval, (*fpath, "f:" + key), (*spath, key), lists, added)
                    else:
                        added.add((*fpath, "f:" + key))
            return
    elif isinstance(lhs, list) and isinstance(rhs, list) and (lhs or rhs):
        lt = lists.resolve(spath)
        if lt.kind != "atomic":
            left, right = _items(lt, lhs), _items(lt, rhs)
            for element, lval in left.items():
                rval = right.get(element, _MISSING)
                if isinstance(lval, _CONTAINERS) or isinstance(rval, _CONTAINERS):
                    _cmp(lval, rval, (*fpath, element), spath, lists, out)
                else:
                    _leaf(lval, rval, (*fpath, element), out)
            added = out.added
            for element, rval in right.items():
                if element not in left:
                    if isinstance(rval, _CONTAINERS) and rval:
                        _collect(rval, (*fpath, element), spath, lists, added)
                    else:
                        added.add((*fpath, element))
            return
    if fpath and (lhs != rhs or type(lhs) is not type(rhs)):
        out.modified.add(fpath)


def _leaf(lhs: Any, rhs: Any, fpath: Path, out: Comparison) -> None:
    """What :func:`_cmp` reports for a (non-empty) ``fpath`` where neither side is a
    container (``rhs`` may be ``_MISSING``), without its calls and the schema path it
    would build: most fields are such leaves, and every write compares them all."""
    if rhs is _MISSING:
        out.removed.add(fpath)
    elif lhs != rhs or type(lhs) is not type(rhs):
        out.modified.add(fpath)
