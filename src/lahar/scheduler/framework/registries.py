"""Typed callback registries: one small class per callback family.

Plugins add callbacks in ``on_session_open`` with ``registry.add(plugin, fn)``; the
registry drops the callback when the plugin's enable flag for the family is off and files
it under the plugin's tier. Each class implements exactly one of Volcano's combination
rules (volcano-semantics §2.2), so the rule for a family is read in one place:

=====================  ==========================================================
OrderRegistry          first non-zero comparison over tiers, then plugins
PredicateRegistry      every plugin must pass (vectorized over all nodes)
NodeOrderRegistry      sum of the plugins' scores (vectorized over candidates)
AllRegistry            AND over plugins; no voter -> true
AnyRegistry            OR over plugins; no voter -> false
VoteRegistry           Reject wins at once; a Permit decides at the end of its tier
StarvingRegistry       the first tier with a fn decides (AND inside it); none -> false
ValidRegistry          first failing result (flags ignored)
VictimRegistry         per tier: intersection of the voters' lists; empty vetoes the tier
NotifyRegistry         call every plugin
=====================  ==========================================================
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import numpy as np

from lahar.scheduler.api.fit import NodeFilter

if TYPE_CHECKING:
    from lahar.scheduler.api.node import NodeTable
    from lahar.scheduler.api.task import TaskInfo
    from lahar.scheduler.framework.plugin import Plugin

F = TypeVar("F", bound=Callable[..., Any])

PERMIT, ABSTAIN, REJECT = 1, 0, -1


@dataclass(frozen=True, slots=True)
class ValidateResult:
    passed: bool
    reason: str = ""
    message: str = ""


class Registry(Generic[F]):
    """Callbacks of one family, grouped by tier, honouring one enable flag."""

    def __init__(self, family: str, flag: str | None) -> None:
        self.family = family
        self.flag = flag
        self.tiers: list[list[tuple[str, F]]] = []
        self._flat: list[F] = []

    def add(self, plugin: Plugin, fn: F) -> None:
        if not plugin.enabled(self.flag):
            return
        while len(self.tiers) <= plugin.tier:
            self.tiers.append([])
        self.tiers[plugin.tier].append((plugin.name, fn))
        self._flat = [f for tier in self.tiers for _, f in tier]

    def fns(self) -> list[F]:
        """Every callback in tier order (computed once; callbacks register at open)."""
        return self._flat

    def __bool__(self) -> bool:
        return bool(self._flat)


class OrderRegistry(Registry[Callable[[Any, Any], int]]):
    """Job/queue/task order: negative means ``left`` goes first.

    A plugin whose comparison only ever compares one fixed value per item may also give
    that value (:meth:`set_key`); when every callback has one, :meth:`sort_keys` lets a
    caller sort by key tuples instead of calling the comparisons (same order, far fewer
    Python calls)."""

    def __init__(self, family: str, flag: str | None) -> None:
        super().__init__(family, flag)
        self._keys: dict[Callable[[Any, Any], int], Callable[[Any], Any]] = {}

    def set_key(self, fn: Callable[[Any, Any], int], key: Callable[[Any], Any]) -> None:
        """``fn(a, b)`` is exactly ``(key(a) > key(b)) - (key(a) < key(b))``."""
        self._keys[fn] = key

    def sort_keys(self) -> list[Callable[[Any], Any]] | None:
        """The callbacks' keys in order, or ``None`` when one of them has no key."""
        keys = [self._keys.get(fn) for fn in self._flat]
        return None if any(k is None for k in keys) else keys  # type: ignore[return-value]

    def compare(self, left: Any, right: Any) -> int:
        for fn in self._flat:
            result = fn(left, right)
            if result:
                return result
        return 0


class VictimQueueOrderRegistry(Registry[Callable[[Any, Any, Any], int]]):
    def compare(self, left: Any, right: Any, preemptor_queue: Any) -> int:
        for fn in self.fns():
            result = fn(left, right, preemptor_queue)
            if result:
                return result
        return 0


PredicateFn = Callable[["TaskInfo", "NodeTable"], NodeFilter]


class PredicateRegistry(Registry[PredicateFn]):
    """``fn(task, nodes) -> NodeFilter`` over every node; all must pass."""

    def run(self, task: TaskInfo, nodes: NodeTable) -> NodeFilter:
        result = NodeFilter.all_pass(nodes.size)
        for fn in self.fns():
            result = result.combine(fn(task, nodes))
        return result


BatchNodeOrderFn = Callable[["TaskInfo", "NodeTable", np.ndarray], np.ndarray]


class NodeOrderRegistry(Registry[BatchNodeOrderFn]):
    """``fn(task, nodes, candidates: int[k]) -> float[k]``; scores are summed."""

    def score(self, task: TaskInfo, nodes: NodeTable, candidates: np.ndarray) -> np.ndarray:
        total = np.zeros(candidates.shape[0], dtype=np.float64)
        for fn in self.fns():
            total += np.asarray(fn(task, nodes, candidates), dtype=np.float64)
        return total


class AllRegistry(Registry[Callable[..., bool]]):
    def check(self, *args: Any) -> bool:
        return all(fn(*args) for fn in self._flat)


class AnyRegistry(Registry[Callable[..., bool]]):
    def check(self, *args: Any) -> bool:
        return any(fn(*args) for fn in self._flat)


class VoteRegistry(Registry[Callable[..., int]]):
    """Permit (+1) / Abstain (0) / Reject (-1) votes combined tier by tier."""

    def check(self, *args: Any) -> bool:
        for tier in self.tiers:
            permitted = False
            for _, fn in tier:
                vote = fn(*args)
                if vote < 0:
                    return False
                if vote > 0:
                    permitted = True
            if permitted:
                return True
        return True


class StarvingRegistry(Registry[Callable[..., bool]]):
    def check(self, *args: Any) -> bool:
        for tier in self.tiers:
            if tier:
                return all(fn(*args) for _, fn in tier)
        return False


class ValidRegistry(Registry[Callable[..., ValidateResult | None]]):
    def check(self, *args: Any) -> ValidateResult:
        for fn in self.fns():
            result = fn(*args)
            if result is not None and not result.passed:
                return result
        return ValidateResult(True)


VictimFn = Callable[["TaskInfo", list["TaskInfo"]], tuple[list["TaskInfo"], int]]


class VictimRegistry(Registry[VictimFn]):
    """Preemptable / Reclaimable: ``fn(preemptor, candidates) -> (victims, vote)``."""

    def select(self, preemptor: TaskInfo, candidates: list[TaskInfo]) -> list[TaskInfo]:
        for tier in self.tiers:
            victims: list[TaskInfo] | None = None
            for _, fn in tier:
                chosen, vote = fn(preemptor, candidates)
                if vote == ABSTAIN:
                    continue
                if not chosen:
                    victims = None
                    break
                if victims is None:
                    victims = list(chosen)
                else:
                    keep = {t.uid for t in chosen}
                    victims = [t for t in victims if t.uid in keep] or None
            if victims is not None:
                return victims
        return []


class NotifyRegistry(Registry[Callable[..., None]]):
    def notify(self, *args: Any) -> None:
        for fn in self.fns():
            fn(*args)


@dataclass(slots=True)
class EventHandler:
    """Allocate/deallocate notifications that keep plugin accounting in sync."""

    allocate: Callable[[TaskInfo], None] | None = None
    deallocate: Callable[[TaskInfo], None] | None = None
