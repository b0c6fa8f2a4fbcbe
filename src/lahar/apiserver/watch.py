"""Fan-out of committed store changes to many concurrent watches (asyncio).

A Kubernetes watch from resourceVersion N must deliver every change after N, in order,
exactly once, and then keep streaming. The store keeps a persisted event log (for
resuming) and calls its subscribers after each commit (for live changes). This hub joins
the two without polling and without letting one slow client hold anybody else up:

* Each watch registers a bounded buffer *before* it reads the replay from the store, then
  yields the replay and then the buffer, skipping anything with an RV it already passed.
  Every event is committed either before the replay read (so it is in the replay) or after
  the registration (so it reaches the buffer); the RV filter drops the overlap. Result: no
  gap, no duplicate, strictly increasing RVs.
* Store callbacks only schedule a dispatch on the hub's event loop (``call_soon``, or
  ``call_soon_threadsafe`` from another thread); both append to the same FIFO, so batches
  are dispatched in commit order. A dispatch appends to buffers and wakes waiters. It never
  awaits and never evaluates predicates (the watching coroutine does that), so writers pay
  almost nothing per watcher.
* A watch whose buffer is full is dropped: its next step raises :class:`Expired` (the
  events still buffered are discarded). That is what a real API server does to a client
  that cannot keep up; the client relists and watches again from the list's RV.

Expiry up front: ``watch`` is an async generator, so a too-old ``since_rv`` raises
:class:`Expired` on the first ``__anext__``, before any event. A caller that must decide
between a 410 response and a stream before iterating can test
``since_rv < store.oldest_rv()`` first (the same condition the store uses).
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncIterator, Callable

from lahar.apiserver.store import Expired, Store, WatchEvent

__all__ = ["WatchHub", "WatchProgress"]

Predicate = Callable[[WatchEvent], bool]


class _Watcher:
    """The live side of one watch: a bounded buffer and a waiter to wake."""

    __slots__ = ("buf", "closed", "limit", "namespace", "overflowed", "waiter")

    def __init__(self, namespace: str | None, limit: int) -> None:
        self.namespace = namespace
        self.limit = limit
        self.buf: deque[WatchEvent] = deque()
        self.waiter: asyncio.Future[None] | None = None
        self.overflowed = False
        self.closed = False

    def wake(self) -> None:
        waiter = self.waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)


class WatchProgress:
    """How far one watch has got, for a bookmark that never skips an event.

    A bookmark tells the client "you have everything up to RV x": it resumes from x
    after a reconnect. So x must not pass an event that is committed but not yet
    delivered to this watch (still waiting for the hub's dispatch, or in the watch's
    buffer). :meth:`safe_rv` is the last RV yielded, or the hub's dispatched RV when the
    watch is idle with an empty buffer (then every event up to it that concerns this
    watch has been yielded; a quiet kind's bookmarks still move forward)."""

    __slots__ = ("hub", "last", "watcher")

    def __init__(self) -> None:
        self.last = 0
        self.hub: WatchHub | None = None
        self.watcher: _Watcher | None = None

    def safe_rv(self) -> int:
        hub, watcher = self.hub, self.watcher
        if hub is None or watcher is None or watcher.waiter is None or watcher.buf:
            return self.last
        return max(self.last, hub.dispatched_rv)


class WatchHub:
    """Serves watches over one :class:`Store`. Use it from a single event loop."""

    def __init__(self, store: Store, *, queue_size: int = 10000) -> None:
        if queue_size < 1:
            raise ValueError("queue_size must be at least 1")
        self._store = store
        self._queue_size = queue_size
        self._loop: asyncio.AbstractEventLoop | None = None
        self._by_gr: dict[str, dict[_Watcher, None]] = {}  # insertion-ordered sets
        self._closed = False
        # every event with an RV up to this one has been handed to the watchers' buffers
        self.dispatched_rv = store.current_rv()
        store.subscribe(self._on_commit)

    def watcher_count(self, gr: str | None = None) -> int:
        """How many watches are live (on ``gr``, or in total)."""
        if gr is not None:
            return len(self._by_gr.get(gr, ()))
        return sum(len(ws) for ws in self._by_gr.values())

    async def watch(
        self,
        gr: str,
        namespace: str | None,
        since_rv: int,
        *,
        predicate: Predicate | None = None,
        progress: WatchProgress | None = None,
    ) -> AsyncIterator[WatchEvent]:
        """Yield every event of ``gr`` (in ``namespace``, or any if None) with RV greater
        than ``since_rv`` that ``predicate`` accepts, in RV order, until :meth:`close`.

        Raises :class:`Expired` if ``since_rv`` is older than the store's window, or later
        if this watch falls more than ``queue_size`` events behind. ``progress``, if
        given, follows the watch (see :class:`WatchProgress`).
        """
        if self._closed:
            return
        loop = asyncio.get_running_loop()
        if self._loop is None:
            self._loop = loop
        elif self._loop is not loop:
            raise RuntimeError("a WatchHub serves a single event loop")
        watcher = _Watcher(namespace, self._queue_size)
        watchers = self._by_gr.setdefault(gr, {})
        watchers[watcher] = None
        if progress is not None:
            progress.last = since_rv
        try:
            replay = self._store.events_after(since_rv, gr)  # may raise Expired
            last = replay[-1].rv if replay else since_rv
            for event in replay:
                if (namespace is None or event.namespace == namespace) and (
                    predicate is None or predicate(event)
                ):
                    yield event
                if progress is not None:
                    progress.last = event.rv
            if progress is not None:
                progress.last, progress.hub, progress.watcher = last, self, watcher
            buf = watcher.buf
            while True:
                if watcher.closed:
                    return
                if watcher.overflowed:
                    raise Expired(
                        f"watch of {gr} fell more than {self._queue_size} events behind;"
                        " relist and watch again"
                    )
                if buf:
                    event = buf.popleft()
                    if event.rv > last:
                        last = event.rv
                        if predicate is None or predicate(event):
                            yield event
                        if progress is not None:
                            progress.last = last
                    continue
                watcher.waiter = loop.create_future()
                try:
                    await watcher.waiter
                finally:
                    watcher.waiter = None
        finally:
            self._remove(gr, watcher)

    def close(self) -> None:
        """End every watch (their iterators finish normally) and refuse new ones."""
        if self._closed:
            return
        self._closed = True
        self._store.unsubscribe(self._on_commit)
        by_gr, self._by_gr = self._by_gr, {}
        for watchers in by_gr.values():
            for watcher in watchers:
                watcher.closed = True
                watcher.buf.clear()
                self._wake_soon(watcher)

    # -- internals ---------------------------------------------------------------------

    def _remove(self, gr: str, watcher: _Watcher) -> None:
        watchers = self._by_gr.get(gr)
        if watchers is not None:
            watchers.pop(watcher, None)
            if not watchers:
                del self._by_gr[gr]

    def _wake_soon(self, watcher: _Watcher) -> None:
        loop = self._loop
        if loop is None or loop.is_closed():
            return
        if _running_loop() is loop:
            watcher.wake()
        else:
            loop.call_soon_threadsafe(watcher.wake)

    def _on_commit(self, events: list[WatchEvent]) -> None:
        """Store subscriber: runs under the store's lock, in commit order, in any thread."""
        loop = self._loop
        if loop is None or self._closed or not self._by_gr or loop.is_closed():
            # Nobody is registered, so nobody can miss these: a watch registered later
            # reads them from the store's replay (which waits for this commit's lock).
            # They count as dispatched all the same, or an idle watch registered next
            # would send bookmarks stuck before them until some later write.
            if events:
                self.dispatched_rv = max(self.dispatched_rv, events[-1].rv)
            return
        if _running_loop() is loop:
            loop.call_soon(self._dispatch, events)
        else:
            loop.call_soon_threadsafe(self._dispatch, events)

    def _dispatch(self, events: list[WatchEvent]) -> None:
        by_gr = self._by_gr
        if events:
            self.dispatched_rv = max(self.dispatched_rv, events[-1].rv)
        for event in events:
            watchers = by_gr.get(event.gr)
            if not watchers:
                continue
            overflowed: list[_Watcher] = []
            for watcher in watchers:
                if watcher.namespace is not None and watcher.namespace != event.namespace:
                    continue
                if len(watcher.buf) >= watcher.limit:
                    watcher.overflowed = True
                    watcher.buf.clear()
                    overflowed.append(watcher)
                else:
                    watcher.buf.append(event)
                watcher.wake()
            for watcher in overflowed:
                self._remove(event.gr, watcher)


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None
