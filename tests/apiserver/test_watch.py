"""Behaviour of the watch hub: replay + live without gaps or duplicates, isolation."""

from __future__ import annotations

import asyncio
import contextlib
import pathlib
import random
import threading
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from lahar.apiserver.store import Expired, Store, WatchEvent
from lahar.apiserver.watch import WatchHub


def obj(name: str, namespace: str = "default", **spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": namespace}, "spec": spec}


@pytest.fixture
def store(tmp_path: pathlib.Path) -> Iterator[Store]:
    s = Store(tmp_path / "store.sqlite", window=5000)
    try:
        yield s
    finally:
        s.close()


@pytest.fixture
async def hub(store: Store) -> AsyncIterator[WatchHub]:
    h = WatchHub(store)
    try:
        yield h
    finally:
        h.close()


async def collect(it: AsyncIterator[WatchEvent], n: int, timeout: float = 10) -> list[WatchEvent]:
    out: list[WatchEvent] = []

    async def run() -> None:
        async for ev in it:
            out.append(ev)
            if len(out) == n:
                return

    await asyncio.wait_for(run(), timeout)
    return out


async def until_registered(hub: WatchHub, gr: str, n: int) -> None:
    for _ in range(1000):
        if hub.watcher_count(gr) >= n:
            return
        await asyncio.sleep(0.001)
    raise AssertionError("watchers did not register")


async def test_replay_then_live(store: Store, hub: WatchHub) -> None:
    store.create("pods", obj("a"))
    store.create("pods", obj("b"))
    store.update("pods", obj("a", x=1))
    it = hub.watch("pods", None, 1)
    first = await collect(it, 2)
    assert [(e.type, e.name, e.rv) for e in first] == [("ADDED", "b", 2), ("MODIFIED", "a", 3)]
    store.delete("pods", "default", "b")
    store.create("services", obj("s"))
    store.create("pods", obj("c"))
    live = await collect(it, 2)
    assert [(e.type, e.name, e.rv) for e in live] == [("DELETED", "b", 4), ("ADDED", "c", 6)]
    assert live[0].object["metadata"]["resourceVersion"] == "4"
    await it.aclose()  # type: ignore[attr-defined]
    assert hub.watcher_count() == 0


async def test_namespace_and_predicate_filters(store: Store, hub: WatchHub) -> None:
    store.create("pods", obj("a", namespace="one", keep=True))
    store.create("pods", obj("b", namespace="two", keep=True))
    it = hub.watch("pods", "one", 0, predicate=lambda e: bool(e.object.get("spec", {}).get("keep")))
    task = asyncio.ensure_future(collect(it, 3))
    await until_registered(hub, "pods", 1)
    store.create("pods", obj("c", namespace="one", keep=False))
    store.create("pods", obj("d", namespace="two", keep=True))
    store.create("pods", obj("e", namespace="one", keep=True))
    store.update("pods", obj("c", namespace="one", keep=True))
    got = await task
    assert [(e.name, e.rv) for e in got] == [("a", 1), ("e", 5), ("c", 6)]


async def test_expired_up_front(tmp_path: pathlib.Path) -> None:
    s = Store(tmp_path / "small.sqlite", window=3)
    h = WatchHub(s)
    try:
        for i in range(10):
            s.create("pods", obj(f"p{i}"))
        oldest = s.oldest_rv()
        assert oldest > 0
        with pytest.raises(Expired):
            await h.watch("pods", None, oldest - 1).__anext__()
        assert h.watcher_count() == 0
        replay = await collect(h.watch("pods", None, oldest), 10 - oldest)
        assert [e.rv for e in replay] == list(range(oldest + 1, 11))
    finally:
        h.close()
        s.close()


async def test_watch_resumes_across_restart(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "restart.sqlite"
    s = Store(path)
    try:
        s.create("pods", obj("a"))
        resume_from = s.current_rv()
        s.update("pods", obj("a", x=1))
    finally:
        s.close()
    s = Store(path)
    h = WatchHub(s)
    try:
        it = h.watch("pods", None, resume_from)
        task = asyncio.ensure_future(collect(it, 2))
        await until_registered(h, "pods", 1)
        s.delete("pods", "default", "a")
        got = await task
        assert [(e.type, e.rv) for e in got] == [("MODIFIED", 2), ("DELETED", 3)]
    finally:
        h.close()
        s.close()


@pytest.mark.parametrize("seed", range(6))
async def test_no_gaps_or_duplicates_under_concurrent_writers(
    store: Store, hub: WatchHub, seed: int
) -> None:
    """Writers (tasks and a thread) run while watches start at random RVs and moments."""
    rng = random.Random(seed)
    names = [f"n{i}" for i in range(8)]
    stop = threading.Event()
    thread_errors: list[BaseException] = []

    def mutate(r: random.Random, prefix: str) -> None:
        ns, name = r.choice(["a", "b"]), prefix + r.choice(names)
        with contextlib.suppress(Exception):
            action = r.random()
            if action < 0.4:
                store.create(r.choice(["pods", "services"]), obj(name, ns))
            elif action < 0.7:
                store.update("pods", obj(name, ns, v=r.random()))
            elif action < 0.85:
                store.delete("pods", ns, name)
            else:
                with store.transaction():
                    store.create("pods", obj(name + "x", ns))
                    store.delete("pods", ns, name + "x")

    def thread_writer() -> None:
        r = random.Random(seed + 1000)
        try:
            while not stop.is_set():
                mutate(r, "t")
                stop.wait(r.random() * 0.002)
        except BaseException as exc:
            thread_errors.append(exc)

    async def task_writer(k: int) -> None:
        r = random.Random(seed * 10 + k)
        for _ in range(150):
            mutate(r, f"w{k}")
            await asyncio.sleep(r.random() * 0.002)

    progress: list[tuple[str | None, int, list[WatchEvent]]] = []

    async def watcher() -> None:
        await asyncio.sleep(rng.random() * 0.2)
        ns = rng.choice([None, "a", "b"])
        since = rng.randint(max(0, store.current_rv() - 50), store.current_rv())
        got: list[WatchEvent] = []
        progress.append((ns, since, got))
        async for ev in hub.watch("pods", ns, since):
            got.append(ev)

    def expected(ns: str | None, since: int) -> list[WatchEvent]:
        return [e for e in truth if e.rv > since and (ns is None or e.namespace == ns)]

    thread = threading.Thread(target=thread_writer)
    thread.start()
    try:
        watchers = [asyncio.ensure_future(watcher()) for _ in range(12)]
        await asyncio.gather(*(task_writer(k) for k in range(3)))
    finally:
        stop.set()
        await asyncio.to_thread(thread.join)
    assert thread_errors == []
    truth = store.events_after(0, "pods")
    for _ in range(2000):  # wait for delivery, then end the watches
        if len(progress) == 12 and all(
            len(got) >= len(expected(ns, since)) for ns, since, got in progress
        ):
            break
        await asyncio.sleep(0.005)
    await asyncio.sleep(0.02)  # anything extra (a duplicate) would arrive now
    hub.close()
    await asyncio.wait_for(asyncio.gather(*watchers), 5)
    assert len(truth) > 100
    for ns, since, got in progress:
        assert [e.rv for e in got] == [e.rv for e in expected(ns, since)]
        assert got == expected(ns, since)


async def test_overflowing_watcher_expires_without_blocking_others(store: Store) -> None:
    hub = WatchHub(store, queue_size=5)
    try:
        slow = hub.watch("pods", None, 0)
        fast = hub.watch("pods", None, 0)
        store.create("pods", obj("first"))
        # Both register and take the first event; then the slow one stops reading.
        assert (await collect(slow, 1))[0].name == "first"
        fast_task = asyncio.ensure_future(collect(fast, 41))
        await until_registered(hub, "pods", 2)
        for i in range(40):
            store.create("pods", obj(f"p{i}"))  # writers never wait for watchers
            if i % 4 == 0:
                await asyncio.sleep(0)
        got = await fast_task
        assert [e.rv for e in got] == list(range(1, 42))
        assert hub.watcher_count("pods") == 1  # the slow watch was dropped
        with pytest.raises(Expired):
            await slow.__anext__()
        # A new watch from a recent RV works again (the client's relist + watch).
        again = await collect(hub.watch("pods", None, 38), 3)
        assert [e.rv for e in again] == [39, 40, 41]
    finally:
        hub.close()


async def test_close_ends_watches_cleanly(store: Store) -> None:
    hub = WatchHub(store)
    iters = [hub.watch("pods", None, 0) for _ in range(50)]
    tasks = [asyncio.ensure_future(collect(it, 10**6)) for it in iters]
    await until_registered(hub, "pods", 50)
    store.create("pods", obj("a"))
    await asyncio.sleep(0.01)
    hub.close()
    done, pending = await asyncio.wait(tasks, timeout=5)
    assert not pending
    for t in done:
        assert t.exception() is None
    assert hub.watcher_count() == 0
    assert [e async for e in hub.watch("pods", None, 0)] == []
    store.create("pods", obj("b"))  # the store no longer feeds the closed hub


async def test_fifty_watchers_all_get_every_event(store: Store, hub: WatchHub) -> None:
    start = store.current_rv()
    tasks = [asyncio.ensure_future(collect(hub.watch("pods", None, start), 200)) for _ in range(50)]
    await until_registered(hub, "pods", 50)
    for i in range(200):
        store.create("pods", obj(f"p{i}"))
        if i % 10 == 0:
            await asyncio.sleep(0)
    results = await asyncio.gather(*tasks)
    for got in results:
        assert [e.rv for e in got] == list(range(start + 1, start + 201))


async def test_progress_never_passes_an_undelivered_event(store: Store, hub: WatchHub) -> None:
    """A bookmark's RV (WatchProgress.safe_rv) covers only what the watch has yielded,
    or, while it is idle with nothing buffered, what the hub has dispatched: a client
    resuming from it misses nothing."""
    from lahar.apiserver.watch import WatchProgress

    store.create("pods", obj("a"))
    progress = WatchProgress()
    it = hub.watch("pods", None, store.current_rv(), progress=progress)
    pending = asyncio.ensure_future(it.__anext__())
    await until_registered(hub, "pods", 1)
    await asyncio.sleep(0)  # the watch is idle now
    store.create("services", obj("s"))  # another kind: nothing for this watch
    await asyncio.sleep(0)  # dispatched
    assert progress.safe_rv() == store.current_rv()  # a quiet kind's bookmark moves on
    store.create("pods", obj("b"))  # committed; its dispatch is only scheduled
    committed = store.current_rv()
    assert progress.safe_rv() < committed
    await asyncio.sleep(0)  # dispatched into the watch's buffer, not yet yielded
    assert progress.safe_rv() < committed
    event = await asyncio.wait_for(pending, 5)
    assert event.rv == committed and progress.safe_rv() <= committed
    pending = asyncio.ensure_future(it.__anext__())  # the consumer took it: idle again
    await asyncio.sleep(0)
    assert progress.safe_rv() == committed
    pending.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await pending


async def test_progress_counts_writes_made_while_nobody_watched(
    store: Store, hub: WatchHub
) -> None:
    """Writes committed while no watch is registered are dispatched to nobody, but they
    are dispatched: an idle watch started next must not keep bookmarking an RV before
    them (an informer's bookmarks would stay stale until some later write)."""
    from lahar.apiserver.watch import WatchProgress

    store.create("pods", obj("a"))
    since = store.current_rv()
    for name in ("s1", "s2", "s3"):  # nobody watches: no dispatch is scheduled
        store.create("services", obj(name))
    progress = WatchProgress()
    it = hub.watch("pods", None, since, progress=progress)
    pending = asyncio.ensure_future(it.__anext__())
    await until_registered(hub, "pods", 1)
    await asyncio.sleep(0)  # idle, nothing for it
    assert progress.safe_rv() == store.current_rv()
    pending.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await pending
