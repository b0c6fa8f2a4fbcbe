"""Workqueue and rate limiters: dedup, one worker per key, delays, backoff, shutdown."""

from __future__ import annotations

import asyncio
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lahar.kube.ratelimit import (
    BucketRateLimiter,
    ExponentialRateLimiter,
    MaxOfRateLimiter,
    default_rate_limiter,
)
from lahar.kube.workqueue import ShutDown, WorkQueue


async def test_dedup_before_processing() -> None:
    q: WorkQueue[str] = WorkQueue("t")
    for key in ["a", "b", "a", "a", "b", "c"]:
        q.add(key)
    assert len(q) == 3
    assert [await q.get() for _ in range(3)] == ["a", "b", "c"]


async def test_key_readded_while_processing_comes_back_after_done() -> None:
    q: WorkQueue[str] = WorkQueue("t")
    q.add("a")
    key = await q.get()
    q.add("a")
    q.add("a")
    assert len(q) == 0  # not handed to anybody while in flight
    getter = asyncio.create_task(q.get())
    await asyncio.sleep(0.01)
    assert not getter.done()
    q.done(key)
    assert await asyncio.wait_for(getter, 1) == "a"
    q.done("a")
    assert len(q) == 0 and q.processing == 0


async def run_workers(adds: list[tuple[int, float]], workers: int) -> None:
    """Many workers, keys added at random moments; check exclusivity and completeness."""
    q: WorkQueue[int] = WorkQueue("t")
    active: set[int] = set()
    violations: list[int] = []
    last_processed: dict[int, float] = {}
    last_added: dict[int, float] = {}
    loop = asyncio.get_running_loop()

    async def worker() -> None:
        while True:
            try:
                key = await q.get()
            except ShutDown:
                return
            if key in active:
                violations.append(key)
            active.add(key)
            start = loop.time()
            await asyncio.sleep(random.random() * 0.002)
            active.discard(key)
            last_processed[key] = start
            q.done(key)

    tasks = [asyncio.create_task(worker()) for _ in range(workers)]
    for key, pause in adds:
        last_added[key] = loop.time()
        q.add(key)
        if pause:
            await asyncio.sleep(pause)
    await q.shutdown_with_drain(timeout=10)
    await asyncio.wait_for(asyncio.gather(*tasks), 10)
    assert not violations
    # every add is followed by a reconcile that started after it
    for key, added in last_added.items():
        assert last_processed.get(key, -1) >= added, key


@settings(max_examples=25, deadline=None)
@given(
    adds=st.lists(
        st.tuples(st.integers(0, 4), st.sampled_from([0, 0, 0, 0.001])), min_size=1, max_size=120
    ),
    workers=st.integers(1, 8),
)
def test_per_key_exclusivity_and_no_lost_adds(adds: list[tuple[int, float]], workers: int) -> None:
    asyncio.run(run_workers(adds, workers))


async def test_add_after_delays_and_keeps_the_earliest() -> None:
    q: WorkQueue[str] = WorkQueue("t")
    loop = asyncio.get_running_loop()
    start = loop.time()
    q.add_after("a", 0.6)
    q.add_after("a", 0.15)  # earlier: wins
    q.add_after("a", 1.0)  # later: ignored
    q.add_after("b", 0.05)
    assert len(q) == 0 and q.waiting == 2
    assert await asyncio.wait_for(q.get(), 2) == "b"
    assert await asyncio.wait_for(q.get(), 2) == "a"
    took = loop.time() - start
    assert 0.14 <= took < 0.55, took
    q.done("a")
    q.done("b")
    await asyncio.sleep(1.0)
    assert len(q) == 0  # the superseded times did not fire again


async def test_rate_limited_retries_back_off_exponentially() -> None:
    q: WorkQueue[str] = WorkQueue("t", rate_limiter=ExponentialRateLimiter(0.02, 1.0))
    loop = asyncio.get_running_loop()
    gaps = []
    q.add("k")
    key = await q.get()
    for _ in range(4):
        q.add_rate_limited(key)
        q.done(key)
        t = loop.time()
        key = await asyncio.wait_for(q.get(), 5)
        gaps.append(loop.time() - t)
    q.done(key)
    expected = [0.02, 0.04, 0.08, 0.16]
    for gap, want in zip(gaps, expected, strict=True):
        assert want * 0.9 <= gap < want + 0.3, (gaps, expected)
    assert q.num_requeues("k") == 4
    q.forget("k")
    assert q.num_requeues("k") == 0


def test_exponential_limiter_caps_and_forgets() -> None:
    lim = ExponentialRateLimiter()
    delays = [lim.when("k") for _ in range(20)]
    assert delays[:3] == [0.005, 0.01, 0.02]
    assert delays[-1] == 1000.0 and max(delays) == 1000.0
    assert [lim.when("k") for _ in range(100)][-1] == 1000.0
    lim.forget("k")
    assert lim.when("k") == 0.005
    assert lim.when("other") == 0.005  # keys are independent


def test_bucket_limiter_allows_burst_then_paces() -> None:
    now = [0.0]
    lim = BucketRateLimiter(qps=10, burst=100, clock=lambda: now[0])
    assert all(lim.when(i) == 0 for i in range(100))
    assert lim.when("x") == pytest.approx(0.1)
    assert lim.when("y") == pytest.approx(0.2)
    now[0] += 100  # refills to the burst, not beyond
    assert all(lim.when(i) == 0 for i in range(100))
    assert lim.when("z") > 0


def test_default_limiter_is_the_max_of_both() -> None:
    lim = default_rate_limiter()
    assert isinstance(lim, MaxOfRateLimiter)
    assert lim.when("a") == 0.005
    assert lim.retries("a") == 1


async def test_shutdown_stops_waiting_workers_and_refuses_adds() -> None:
    q: WorkQueue[str] = WorkQueue("t")
    getter = asyncio.create_task(q.get())
    await asyncio.sleep(0.01)
    q.add_after("later", 0.05)
    q.shutdown()
    with pytest.raises(ShutDown):
        await asyncio.wait_for(getter, 1)
    q.add("x")
    assert len(q) == 0
    with pytest.raises(ShutDown):
        await q.get()


async def test_shutdown_with_drain_finishes_queued_and_in_flight_work() -> None:
    q: WorkQueue[int] = WorkQueue("t")
    done: list[int] = []

    async def worker() -> None:
        while True:
            try:
                key = await q.get()
            except ShutDown:
                return
            await asyncio.sleep(0.01)
            done.append(key)
            q.done(key)

    for i in range(10):
        q.add(i)
    tasks = [asyncio.create_task(worker()) for _ in range(3)]
    await asyncio.sleep(0)
    assert await q.shutdown_with_drain(timeout=5)
    q.add(99)  # refused
    await asyncio.wait_for(asyncio.gather(*tasks), 5)
    assert sorted(done) == list(range(10))


async def test_drain_times_out_without_workers() -> None:
    q: WorkQueue[int] = WorkQueue("t")
    q.add(1)
    assert not await q.shutdown_with_drain(timeout=0.05)


def test_delays_on_uvloop() -> None:
    """Every lahar command runs on uvloop, whose ``call_at`` hands back a plain Handle
    (no ``when()``) for a time already past: delayed adds must not depend on it."""
    import uvloop

    async def main() -> set[str]:
        q: WorkQueue[str] = WorkQueue("t")
        rng = random.Random(7)
        keys = [f"k{i}" for i in range(200)]
        for key in keys:
            q.add_after(key, rng.random() * 0.02)
            await asyncio.sleep(rng.random() * 0.0005)
            q.add_after(rng.choice(keys), rng.random() * 0.01)
        got: set[str] = set()
        while len(got) < len(keys):
            key = await asyncio.wait_for(q.get(), 2)
            got.add(key)
            q.done(key)
        return got

    assert uvloop.run(main()) == {f"k{i}" for i in range(200)}
