"""Tier combination rules of the callback registries (volcano-semantics §2.2)."""

from __future__ import annotations

from typing import Any

import numpy as np

from lahar.scheduler.api.task import TaskInfo, TaskStatus
from lahar.scheduler.framework.conf import PluginOption
from lahar.scheduler.framework.plugin import Plugin
from lahar.scheduler.framework.registries import (
    ABSTAIN,
    PERMIT,
    REJECT,
    AllRegistry,
    OrderRegistry,
    StarvingRegistry,
    VictimRegistry,
    VoteRegistry,
)


def plugin(name: str, tier: int, **flags: bool) -> Plugin:
    class P(Plugin):
        pass

    P.name = name
    return P(PluginOption(name, flags=dict(flags)), tier)


def task(uid: str) -> TaskInfo:
    return TaskInfo(uid, "ns", uid, "ns/j", np.array([1.0, 1.0, 1.0]), TaskStatus.RUNNING)


def votes(*tiers: list[int]) -> VoteRegistry:
    reg = VoteRegistry("jobPipelined", "enableJobPipelined")
    for t, tier in enumerate(tiers):
        for i, vote in enumerate(tier):
            reg.add(plugin(f"p{t}{i}", t), lambda *_a, v=vote: v)
    return reg


def test_votes_reject_in_same_tier_wins_even_after_permit() -> None:
    assert not votes([PERMIT, REJECT]).check(None)


def test_votes_permit_ends_before_later_tier_reject() -> None:
    assert votes([PERMIT], [REJECT]).check(None)


def test_votes_all_abstain_or_none_is_true() -> None:
    assert votes([ABSTAIN], [ABSTAIN]).check(None)
    assert votes().check(None)


def test_disabled_flag_drops_callback() -> None:
    reg = AllRegistry("jobReady", "enableJobReady")
    reg.add(plugin("gang", 0, enableJobReady=False), lambda _j: False)
    assert reg.check(None)


def test_order_first_nonzero_wins() -> None:
    reg = OrderRegistry("jobOrder", "enableJobOrder")
    reg.add(plugin("a", 0), lambda _l, _r: 0)
    reg.add(plugin("b", 1), lambda _l, _r: 1)
    reg.add(plugin("c", 1), lambda _l, _r: -1)
    assert reg.compare(1, 2) == 1


def test_starving_first_tier_with_fn_decides_and_none_is_false() -> None:
    reg = StarvingRegistry("jobStarving", "enableJobStarving")
    assert not reg.check(None)
    reg.add(plugin("a", 1), lambda _j: True)
    reg.add(plugin("b", 2), lambda _j: False)
    assert reg.check(None)


def victims_reg(*tiers: list[Any]) -> VictimRegistry:
    reg = VictimRegistry("preemptable", "enablePreemptable")
    for t, tier in enumerate(tiers):
        for i, fn in enumerate(tier):
            reg.add(plugin(f"p{t}{i}", t), fn)
    return reg


def test_victims_intersection_within_tier() -> None:
    a, b, c = task("a"), task("b"), task("c")
    reg = victims_reg([lambda _p, cs: (cs[:2], PERMIT), lambda _p, cs: (cs[1:], PERMIT)])
    assert [t.uid for t in reg.select(a, [a, b, c])] == ["b"]


def test_victims_empty_list_vetoes_tier_then_next_tier_asked() -> None:
    a, b = task("a"), task("b")
    reg = victims_reg(
        [lambda _p, cs: (cs, PERMIT), lambda _p, _cs: ([], PERMIT)],
        [lambda _p, cs: (cs[1:], PERMIT)],
    )
    assert [t.uid for t in reg.select(a, [a, b])] == ["b"]


def test_victims_abstain_is_ignored_and_no_tier_gives_none() -> None:
    a = task("a")
    reg = victims_reg([lambda _p, _cs: ([], ABSTAIN)])
    assert reg.select(a, [a]) == []
