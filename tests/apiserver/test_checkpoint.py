"""WAL checkpoints in a thread of their own: they run, bound the WAL, and stop cleanly."""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path

from lahar.apiserver.checkpoint import Checkpointer
from lahar.apiserver.store import Store


def _obj(name: str, payload: str = "x" * 2000) -> dict:
    return {"metadata": {"name": name, "namespace": "default"}, "data": {"v": payload}}


def _wait(predicate, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def _wal_frames(path: Path) -> int:
    db = sqlite3.connect(str(path))
    try:
        return int(db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()[1])
    finally:
        db.close()


def test_commits_wake_the_checkpointer_and_close_stops_it(tmp_path: Path) -> None:
    store = Store(tmp_path / "db.sqlite", checkpoint_every=5)
    checkpointer = store._checkpointer
    assert checkpointer is not None
    for i in range(30):
        store.create("things", _obj(f"t{i}"))
    _wait(lambda: checkpointer.runs >= 1)
    store.close()
    assert not checkpointer.alive()
    reopened = Store(tmp_path / "db.sqlite")
    try:
        assert len(reopened.list("things")[0]) == 30
    finally:
        reopened.close()


def test_the_wal_starts_over_once_past_its_bound(tmp_path: Path) -> None:
    path = tmp_path / "db.sqlite"
    store = Store(path, checkpoint_every=1)
    checkpointer = store._checkpointer
    assert checkpointer is not None
    checkpointer.restart_pages = 20
    try:
        for i in range(200):
            store.create("things", _obj(f"t{i}"))
        _wait(lambda: checkpointer.restarts >= 1)
        time.sleep(0.1)  # let the last poke finish
        store.create("things", _obj("last"))  # a write after a full checkpoint restarts
        assert _wal_frames(path) < 200  # without restarts: two or more frames a write
    finally:
        store.close()


def test_no_checkpointer_when_disabled(tmp_path: Path) -> None:
    store = Store(tmp_path / "db.sqlite", checkpoint_every=None)
    try:
        assert store._checkpointer is None
        store.create("things", _obj("a"))
    finally:
        store.close()


def test_close_while_the_thread_wants_the_lock_does_not_deadlock(tmp_path: Path) -> None:
    store = Store(tmp_path / "db.sqlite", checkpoint_every=1)
    assert store._checkpointer is not None
    store._checkpointer.restart_pages = 0  # every checkpoint finishes under the lock
    for i in range(50):
        store.create("things", _obj(f"t{i}"))
    closer = threading.Thread(target=store.close)
    closer.start()
    closer.join(10)
    assert not closer.is_alive()


def test_checkpointer_takes_the_lock_only_to_finish(tmp_path: Path) -> None:
    path = tmp_path / "db.sqlite"
    db = sqlite3.connect(str(path), isolation_level=None)
    db.execute("PRAGMA journal_mode = WAL")
    db.execute("PRAGMA wal_autocheckpoint = 0")
    db.execute("CREATE TABLE t (x BLOB)")
    for _ in range(20):
        db.execute("INSERT INTO t VALUES (?)", (b"y" * 3000,))
    lock = threading.RLock()
    checkpointer = Checkpointer(str(path), lock, every=1, restart_pages=10_000)
    try:
        with lock:  # a writer holds the store: a checkpoint below the bound still runs
            checkpointer.committed()
            _wait(lambda: checkpointer.runs >= 1)
        assert checkpointer.restarts == 0
    finally:
        checkpointer.close()
        db.close()


class _FakeDB:
    """Answers ``PRAGMA wal_checkpoint`` with a WAL of ``frames`` frames, all copied."""

    def __init__(self, frames: int, lock: _Lock) -> None:
        self.frames = frames
        self.lock = lock
        self.calls: list[bool] = []  # whether each checkpoint ran under the lock

    def execute(self, sql: str) -> _FakeDB:
        assert sql == "PRAGMA wal_checkpoint(PASSIVE)"
        self.calls.append(self.lock.held)
        return self

    def fetchone(self) -> tuple[int, int, int]:
        return (0, self.frames, self.frames)


class _Lock:
    held = False

    def __enter__(self) -> None:
        self.held = True

    def __exit__(self, *exc: object) -> None:
        self.held = False


def test_a_long_wal_gets_a_second_checkpoint_under_the_lock(tmp_path: Path) -> None:
    # Even "every frame copied" leaves the commits made during the checkpoint: past the
    # bound, the thread always finishes under the store's lock.
    lock = _Lock()
    checkpointer = Checkpointer(str(tmp_path / "db.sqlite"), lock, restart_pages=100)
    try:
        short, long = _FakeDB(100, lock), _FakeDB(101, lock)
        checkpointer._checkpoint(short)  # type: ignore[arg-type]
        checkpointer._checkpoint(long)  # type: ignore[arg-type]
        assert short.calls == [False]
        assert long.calls == [False, True]
        assert (checkpointer.runs, checkpointer.restarts) == (2, 1)
    finally:
        checkpointer.close()
