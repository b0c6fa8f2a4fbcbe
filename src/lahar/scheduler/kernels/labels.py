"""Label interning and selector evaluation as array operations.

Every selector the scheduler evaluates (a pod's ``nodeSelector``, node-affinity terms,
pod-affinity and topology-spread label selectors) is a conjunction of requirements
``key <op> values``. Evaluating one requirement per object in Python would cost a loop
over all nodes (or all pods) per task; instead the labels of a fixed set of objects are
interned once per session into an integer matrix ``codes[key, object]`` (``-1`` = the
object lacks the key), so a requirement becomes one comparison over a row.

The same requirement objects can also be matched against a single label map
(:func:`matches`), which the incremental paths use when one pod is added to a node.

Semantics follow Kubernetes ``labels.Requirement``: ``NotIn`` and ``DoesNotExist`` match
objects without the key; ``Gt``/``Lt`` need the object's value to parse as a base-10
64-bit integer. A selector is a tuple of requirements (``()`` matches everything) or
``None`` (matches nothing: a nil ``LabelSelector`` or one that does not parse).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np

IN, NOT_IN, EXISTS, DOES_NOT_EXIST, GT, LT = "In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"
_SET_OPS = frozenset({IN, NOT_IN})
_EXIST_OPS = frozenset({EXISTS, DOES_NOT_EXIST})
_NUM_OPS = frozenset({GT, LT})
_INT64 = (-(2**63), 2**63 - 1)


class Requirement(NamedTuple):
    """``key op values``; ``values`` is sorted so equal requirements hash equally."""

    key: str
    op: str
    values: tuple[str, ...] = ()


Selector = tuple[Requirement, ...] | None
"""A conjunction of requirements; ``()`` matches everything, ``None`` nothing."""


def parse_int64(text: str) -> int | None:
    """``strconv.ParseInt(text, 10, 64)``: optional sign, decimal digits, in range."""
    body = text[1:] if text[:1] in "+-" else text
    if not body or not body.isascii() or not body.isdigit():
        return None
    value = int(text)
    return value if _INT64[0] <= value <= _INT64[1] else None


def make_requirement(key: Any, op: Any, values: Any) -> Requirement | None:
    """A validated requirement, or ``None`` when Kubernetes would reject it."""
    if not isinstance(key, str) or not key or not isinstance(op, str):
        return None
    if values is None:
        values = []
    if not isinstance(values, list | tuple):
        return None
    vals = [str(v) for v in values]
    if op in _SET_OPS:
        return Requirement(key, op, tuple(sorted(set(vals)))) if vals else None
    if op in _EXIST_OPS:
        return None if vals else Requirement(key, op)
    if op in _NUM_OPS:
        if len(vals) != 1 or parse_int64(vals[0]) is None:
            return None
        return Requirement(key, op, (vals[0],))
    return None


def label_selector(selector: Mapping[str, Any] | None) -> Selector:
    """A metav1 ``LabelSelector`` (``matchLabels`` + ``matchExpressions`` with
    In/NotIn/Exists/DoesNotExist). ``None`` -> matches nothing; ``{}`` -> everything;
    anything invalid -> nothing (Kubernetes reports an error and places no pod)."""
    if selector is None or not isinstance(selector, Mapping):
        return None
    reqs: list[Requirement] = []
    for key, value in (selector.get("matchLabels") or {}).items():
        reqs.append(Requirement(str(key), IN, (str(value),)))
    for expr in selector.get("matchExpressions") or []:
        if not isinstance(expr, Mapping) or expr.get("operator") in _NUM_OPS:
            return None
        req = make_requirement(expr.get("key"), expr.get("operator"), expr.get("values"))
        if req is None:
            return None
        reqs.append(req)
    return tuple(sorted(set(reqs)))


def set_selector(labels: Mapping[str, str] | None) -> Selector:
    """``labels.SelectorFromSet``: every ``key=value`` must be present (a nodeSelector)."""
    return tuple(sorted(Requirement(k, IN, (str(v),)) for k, v in (labels or {}).items()))


def matches(labels: Mapping[str, str], selector: Selector) -> bool:
    """Whether one label map satisfies ``selector`` (the scalar path)."""
    if selector is None:
        return False
    for key, op, values in selector:
        value = labels.get(key)
        if op == IN:
            ok = value is not None and value in values
        elif op == NOT_IN:
            ok = value is None or value not in values
        elif op == EXISTS:
            ok = value is not None
        elif op == DOES_NOT_EXIST:
            ok = value is None
        else:
            num = None if value is None else parse_int64(value)
            bound = int(values[0])
            ok = num is not None and (num > bound if op == GT else num < bound)
        if not ok:
            return False
    return True


class LabelIndex:
    """The labels of ``n`` objects interned into ``codes: int32[n_keys, n]``.

    ``value_ids[k]`` maps key ``k``'s values to their codes and ``values[k]`` is the
    reverse; ``-1`` in ``codes`` means "no such label". Rows for keys are added as the
    objects are read; the index is immutable afterwards.
    """

    __slots__ = ("_numeric", "codes", "key_ids", "keys", "size", "value_ids", "values")

    def __init__(self, label_maps: Sequence[Mapping[str, str] | None]) -> None:
        self.size = len(label_maps)
        self.key_ids: dict[str, int] = {}
        self.keys: list[str] = []
        self.value_ids: list[dict[str, int]] = []
        self.values: list[list[str]] = []
        rows: list[np.ndarray] = []
        for obj, labels in enumerate(label_maps):
            for key, value in (labels or {}).items():
                k = self.key_ids.get(key)
                if k is None:
                    k = self.key_ids[key] = len(self.keys)
                    self.keys.append(key)
                    self.value_ids.append({})
                    self.values.append([])
                    rows.append(np.full(self.size, -1, dtype=np.int32))
                ids = self.value_ids[k]
                code = ids.get(value)
                if code is None:
                    code = ids[value] = len(self.values[k])
                    self.values[k].append(value)
                rows[k][obj] = code
        self.codes = np.stack(rows) if rows else np.empty((0, self.size), dtype=np.int32)
        self._numeric: dict[int, np.ndarray] = {}

    def column(self, key: str) -> np.ndarray | None:
        """The codes of ``key`` for every object, or ``None`` if no object has it."""
        k = self.key_ids.get(key)
        return None if k is None else self.codes[k]

    def value_code(self, key: str, value: str) -> int:
        """The code of ``key=value``; ``-2`` when no object carries that pair."""
        k = self.key_ids.get(key)
        if k is None:
            return -2
        return self.value_ids[k].get(value, -2)

    def n_values(self, key: str) -> int:
        k = self.key_ids.get(key)
        return 0 if k is None else len(self.values[k])

    def numeric(self, key: str) -> np.ndarray:
        """``float64`` value of ``key`` per object; NaN when absent or not an integer."""
        k = self.key_ids.get(key)
        if k is None:
            return np.full(self.size, np.nan)
        cached = self._numeric.get(k)
        if cached is None:
            table = np.array(
                [np.nan if (n := parse_int64(v)) is None else float(n) for v in self.values[k]]
                + [np.nan]
            )
            cached = self._numeric[k] = table[self.codes[k]]  # code -1 -> trailing NaN
        return cached

    def requirement_mask(self, req: Requirement) -> np.ndarray:
        """bool per object: does it satisfy ``req``?"""
        key, op, values = req
        col = self.column(key)
        if op in _SET_OPS:
            if col is None:
                hit = np.zeros(self.size, dtype=bool)
            else:
                codes = [c for v in values if (c := self.value_code(key, v)) >= 0]
                if not codes:
                    hit = np.zeros(self.size, dtype=bool)
                elif len(codes) == 1:
                    hit = col == codes[0]
                else:
                    hit = np.isin(col, codes)
            return hit if op == IN else ~hit
        if op in _EXIST_OPS:
            present = np.zeros(self.size, dtype=bool) if col is None else col >= 0
            return present if op == EXISTS else ~present
        nums = self.numeric(key)
        bound = float(int(values[0]))
        with np.errstate(invalid="ignore"):
            return nums > bound if op == GT else nums < bound

    def selector_mask(self, selector: Selector) -> np.ndarray:
        """bool per object: does it satisfy every requirement of ``selector``?"""
        if selector is None:
            return np.zeros(self.size, dtype=bool)
        mask = np.ones(self.size, dtype=bool)
        for req in selector:
            mask &= self.requirement_mask(req)
        return mask
