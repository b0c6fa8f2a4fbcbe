"""The queue between an agent's decisions and its API writes.

An agent decides many things about a pod in quick succession (started, then finished,
then being deleted), and with ten thousand pods the API server, not the agent, is the
limit. So writes are queued per object key, and only the newest not-yet-sent write of
a key is kept: a pod that went Running and then Succeeded before the first write left
sends one write, its final state. Writes to one key never overlap or reorder (the next
one waits for the one in flight), and a fixed number of workers send them, which
bounds the load an agent puts on the server and lets writes to different keys overlap
their round trips over a real network.

A write is a coroutine function that builds its body when it runs, from the state of
that moment. Failures are logged and retried a few times with a growing delay; a
404 (the object is gone) or 409 (it was replaced) ends the write silently.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable

from lahar.kube import rest

log = logging.getLogger("lahar.node.writer")

Write = Callable[[], Awaitable[None]]

_GIVE_UP = (404, 409, 422)


class WriteQueue:
    """Per-key coalescing writes, sent by ``concurrency`` workers."""

    def __init__(self, *, concurrency: int = 32, retries: int = 5) -> None:
        self.concurrency = concurrency
        self.retries = retries
        self.sent = 0  # writes completed (ok or given up)
        self.failed = 0
        self._pending: dict[str, tuple[Write, int]] = {}
        self._inflight: set[str] = set()
        self._queue: asyncio.Queue[str] = asyncio.Queue()
        self._workers: list[asyncio.Task[None]] = []
        self._idle = asyncio.Event()
        self._idle.set()

    def submit(self, key: str, write: Write, *, attempt: int = 0) -> None:
        """Queue ``write`` for ``key``, replacing a queued one that has not started."""
        queued = key in self._pending
        self._pending[key] = (write, attempt)
        self._idle.clear()
        if not queued and key not in self._inflight:
            self._queue.put_nowait(key)

    def cancel(self, key: str) -> None:
        """Drop the queued (not the in-flight) write of ``key``."""
        self._pending.pop(key, None)

    def __len__(self) -> int:
        return len(self._pending) + len(self._inflight)

    async def wait_idle(self) -> None:
        """Wait until nothing is queued or in flight."""
        while self._pending or self._inflight:
            self._idle.clear()
            await self._idle.wait()

    def start(self) -> None:
        if not self._workers:
            self._workers = [
                asyncio.create_task(self._work(), name=f"node writer {i}")
                for i in range(self.concurrency)
            ]

    async def stop(self) -> None:
        workers, self._workers = self._workers, []
        for w in workers:
            w.cancel()
        for w in workers:
            with contextlib.suppress(asyncio.CancelledError):
                await w

    async def _work(self) -> None:
        while True:
            key = await self._queue.get()
            item = self._pending.pop(key, None)
            if item is None:
                self._check_idle()
                continue
            write, attempt = item
            self._inflight.add(key)
            try:
                await write()
                self.sent += 1
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                self._failed(key, write, attempt, exc)
            finally:
                self._inflight.discard(key)
                if key in self._pending:
                    self._queue.put_nowait(key)
                self._check_idle()

    def _failed(self, key: str, write: Write, attempt: int, exc: Exception) -> None:
        code = rest.status_code(exc)
        if code in _GIVE_UP:
            self.sent += 1
            log.debug("write for %s ended: %s", key, exc)
            return
        if attempt >= self.retries:
            self.failed += 1
            log.warning("write for %s failed %d times, giving up: %s", key, attempt + 1, exc)
            return
        delay = min(0.2 * 2**attempt, 5.0)
        log.info("write for %s failed (%s); retrying in %.1fs", key, exc, delay)
        loop = asyncio.get_running_loop()

        def again() -> None:
            if key not in self._pending:  # a newer write supersedes the retry
                self.submit(key, write, attempt=attempt + 1)

        self._idle.clear()
        loop.call_later(delay, again)

    def _check_idle(self) -> None:
        if not self._pending and not self._inflight:
            self._idle.set()
