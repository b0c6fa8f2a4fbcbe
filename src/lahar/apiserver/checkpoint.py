"""WAL checkpoints of the store, off the event loop.

In WAL mode every commit appends pages to the ``-wal`` file; a checkpoint copies them
back into the database file, and with ``synchronous=NORMAL`` it is also the moment
SQLite fsyncs. Left to SQLite's automatic checkpoint (every 1,000 pages), the commit
that crosses the threshold runs it: on the API server's event loop thread, a few
milliseconds of copying and an fsync every couple of hundred writes (measured: about a
tenth of the wall time of a replay of ``lahar bench e2e``'s request mix).

:class:`Checkpointer` runs them in a thread of its own instead, on its own
connection, in PASSIVE mode: it copies what is committed without taking any lock a
writer needs, and the sqlite3 module lets go of the GIL while SQLite works, so writes
go on meanwhile. The store pokes it every ``every`` commits.

A WAL file only starts over from its beginning when a write begins with every frame
copied back, and under a steady stream of writes a checkpoint running beside them is
always a few commits behind: the file would grow without end. So once it holds more
than ``restart_pages`` pages, the thread runs a second checkpoint holding the store's
lock: it copies only what was committed during the first one, and the next write
restarts the WAL. The connection of the store keeps an automatic checkpoint as a
safety net, at a threshold well above that, should the thread ever fall behind.

Durability is unchanged: a commit is in the WAL when it returns, checkpointed or not.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from contextlib import AbstractContextManager

log = logging.getLogger(__name__)

CHECKPOINT_EVERY = 200  # commits between two checkpoints (a few MB of WAL)
RESTART_PAGES = 2_000  # WAL pages (8 MB) beyond which the WAL is made to start over
SAFETY_NET_PAGES = 20_000  # the store's own automatic checkpoint, if the thread lags


class Checkpointer:
    """A thread that checkpoints the WAL of ``path`` when poked (see the module doc)."""

    def __init__(
        self,
        path: str,
        lock: AbstractContextManager[object],
        *,
        every: int = CHECKPOINT_EVERY,
        restart_pages: int = RESTART_PAGES,
    ) -> None:
        if every < 1:
            raise ValueError("every must be at least 1")
        self.path = path
        self.lock = lock  # the store's: held by writers, and by the finishing checkpoint
        self.every = every
        self.restart_pages = restart_pages
        self.runs = 0  # checkpoints done (for tests and curiosity)
        self.restarts = 0  # of them, finished under the store's lock
        self._commits = 0
        self._wake = threading.Event()
        self._stopping = False
        self._thread = threading.Thread(target=self._run, name="lahar-store-checkpoint")
        self._thread.daemon = True  # never keeps a process alive; close() joins it
        self._thread.start()

    def committed(self) -> None:
        """One more commit; every ``every`` of them wakes the thread. Cheap: called
        after each commit, under the store's lock."""
        self._commits += 1
        if self._commits >= self.every:
            self._commits = 0
            self._wake.set()

    def close(self) -> None:
        """Stop the thread (after the checkpoint it may be running) and wait for it."""
        self._stopping = True
        self._wake.set()
        self._thread.join()

    def alive(self) -> bool:
        return self._thread.is_alive()

    def _run(self) -> None:
        try:
            db = sqlite3.connect(self.path, isolation_level=None)
        except sqlite3.Error:
            log.exception("the WAL checkpointer cannot open %s; SQLite's own will do", self.path)
            return
        try:
            while True:
                self._wake.wait()
                self._wake.clear()
                if self._stopping:
                    return
                try:
                    self._checkpoint(db)
                except sqlite3.Error:  # the store's automatic checkpoint still runs
                    log.exception("WAL checkpoint of %s failed", self.path)
        finally:
            db.close()

    def _checkpoint(self, db: sqlite3.Connection) -> None:
        _busy, frames, _copied = db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
        self.runs += 1
        # ``frames`` is the WAL as the checkpoint started: commits made while it ran
        # are left, even when it reports every frame copied.
        if frames > self.restart_pages:
            with self.lock:  # no write meanwhile: this one copies the rest
                db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
            self.restarts += 1
