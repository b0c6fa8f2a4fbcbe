"""Group commit: the writes of one loop turn share one SQLite transaction, each in a
savepoint of its own; nothing is visible to other connections, watchers or the watch
log's replay before the commit; a failed commit fails them all and leaves no trace."""

from __future__ import annotations

import asyncio
import pathlib
import sqlite3
from collections.abc import Iterator
from typing import Any

import pytest

from lahar.apiserver.store import KeyExists, Store, StoreError, WatchEvent


def pod(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "d"}}


def committed_names(path: pathlib.Path) -> list[str]:
    """What another connection sees: only committed rows."""
    db = sqlite3.connect(str(path))
    try:
        return sorted(r[0] for r in db.execute("SELECT name FROM objects WHERE gr = 'pods'"))
    finally:
        db.close()


@pytest.fixture
def path(tmp_path: pathlib.Path) -> pathlib.Path:
    return tmp_path / "db"


@pytest.fixture
def store(path: pathlib.Path) -> Iterator[Store]:
    s = Store(path)
    try:
        yield s
    finally:
        s.close()


async def test_writes_of_one_turn_commit_together_then_publish(
    store: Store, path: pathlib.Path
) -> None:
    batches: list[list[WatchEvent]] = []
    store.subscribe(batches.append)
    store.group_commits(asyncio.get_running_loop())
    for name in ("a", "b", "c"):
        store.create("pods", pod(name))
    assert store.get("pods", "d", "b") is not None  # this connection reads its own writes
    assert committed_names(path) == [] and batches == []  # nobody else sees them yet
    assert [e.rv for e in store.events_after(0)] == []  # nor a watch's replay
    await store.settled()
    assert committed_names(path) == ["a", "b", "c"]
    assert [[e.object["metadata"]["name"] for e in b] for b in batches] == [["a", "b", "c"]]
    store.create("pods", pod("d"))  # a later turn: a batch of its own
    await store.settled()
    assert len(batches) == 2 and committed_names(path) == ["a", "b", "c", "d"]
    assert [e.rv for e in store.events_after(0)] == [1, 2, 3, 4]


async def test_a_failed_write_rolls_back_only_itself(store: Store, path: pathlib.Path) -> None:
    store.group_commits(asyncio.get_running_loop())
    store.create("pods", pod("a"))
    with pytest.raises(KeyExists):
        store.create("pods", pod("a"))
    with pytest.raises(RuntimeError), store.transaction():
        store.create("pods", pod("gone"))
        raise RuntimeError("the request failed")
    store.create("pods", pod("b"))
    await store.settled()
    assert committed_names(path) == ["a", "b"]
    assert [e.rv for e in store.events_after(0)] == [1, 2] and store.current_rv() == 2


class FailingCommit:
    """A connection whose COMMIT fails (a full disk, say); everything else is real."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db

    def execute(self, sql: str, *args: Any) -> Any:
        if sql == "COMMIT":
            raise sqlite3.OperationalError("database or disk is full")
        return self.db.execute(sql, *args)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.db, name)


async def test_a_failed_commit_fails_every_waiter_and_leaves_nothing(
    store: Store, path: pathlib.Path
) -> None:
    store.create("pods", pod("kept"))
    published: list[WatchEvent] = []
    store.subscribe(published.extend)
    store.group_commits(asyncio.get_running_loop())
    real = store._db
    store._db = FailingCommit(real)  # type: ignore[assignment]
    store.create("pods", pod("a"))
    store.create("pods", pod("b"))
    waiters = [asyncio.ensure_future(store.settled()) for _ in range(2)]
    results = await asyncio.gather(*waiters, return_exceptions=True)
    store._db = real
    assert all(isinstance(r, StoreError) for r in results), results
    assert published == [] and store.current_rv() == 1
    assert store.get("pods", "d", "a") is None  # the cache forgot them too
    assert committed_names(path) == ["kept"]
    store.create("pods", pod("c"))  # the store goes on
    await store.settled()
    assert committed_names(path) == ["c", "kept"] and store.current_rv() == 2


async def test_a_write_from_another_thread_commits_the_batch_first(
    store: Store, path: pathlib.Path
) -> None:
    order: list[str] = []
    store.subscribe(lambda evs: order.extend(e.object["metadata"]["name"] for e in evs))
    store.group_commits(asyncio.get_running_loop())
    store.create("pods", pod("loop"))
    await asyncio.to_thread(store.create, "pods", pod("thread"))
    assert committed_names(path) == ["loop", "thread"]  # both durable on its return
    assert order == ["loop", "thread"]
    await store.settled()  # nothing left open


async def test_close_commits_an_open_batch(path: pathlib.Path) -> None:
    store = Store(path)
    store.group_commits(asyncio.get_running_loop())
    store.create("pods", pod("a"))
    store.close()
    assert committed_names(path) == ["a"]
