"""The queue between event handlers and reconcile workers.

Handlers add keys; workers take them, reconcile, and say when they are done. What the
queue guarantees, and why controllers need it:

* **Dedup.** A key added many times before a worker takes it is handed out once: the
  reconciler reads the current state anyway, so ten changes need one reconcile.
* **One worker per key.** A key being processed is not handed to another worker. If it
  is added meanwhile, it is queued again when the first worker calls :meth:`done`, so
  the change is not lost and two reconciles of one object never race.
* **Delays.** :meth:`add_after` queues a key later (a requeue-after); only the earliest
  pending time of a key is kept. :meth:`add_rate_limited` delays by the rate limiter
  (per-key exponential backoff and an overall token bucket); :meth:`forget` resets the
  key's backoff after a success.
* **Shutdown.** :meth:`shutdown` stops at once (waiting workers get :class:`ShutDown`);
  :meth:`shutdown_with_drain` refuses new keys but lets the workers finish what is
  queued and in flight, then stops them.

All of it runs on one asyncio loop (no locks); times come from the loop's monotonic
clock.
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import itertools
from collections import deque
from collections.abc import Hashable
from typing import Generic, TypeVar

from lahar.kube.ratelimit import RateLimiter, default_rate_limiter

__all__ = ["QueueMetrics", "ShutDown", "WorkQueue"]

K = TypeVar("K", bound=Hashable)


class ShutDown(Exception):
    """The queue is shut down: the worker should return."""


class QueueMetrics:
    """Hooks a queue calls as keys move through it; this base class records nothing."""

    def added(self, key: Hashable) -> None:
        """``key`` entered the queue (it was not already waiting)."""

    def taken(self, key: Hashable) -> None:
        """A worker took ``key``."""

    def finished(self, key: Hashable) -> None:
        """A worker is done with ``key``."""

    def retried(self, key: Hashable) -> None:
        """``key`` was re-added through the rate limiter."""


class WorkQueue(Generic[K]):
    """A deduplicating, per-key exclusive, delaying and rate-limited asyncio work queue."""

    def __init__(
        self,
        name: str = "",
        *,
        rate_limiter: RateLimiter | None = None,
        metrics: QueueMetrics | None = None,
    ) -> None:
        self.name = name
        self.rate_limiter = rate_limiter or default_rate_limiter()
        self.metrics = metrics or QueueMetrics()
        self._queue: deque[K] = deque()
        self._dirty: set[K] = set()
        self._processing: set[K] = set()
        self._getters: deque[asyncio.Future[None]] = deque()
        self._waiting: dict[K, float] = {}
        self._heap: list[tuple[float, int, K]] = []
        self._seq = itertools.count()
        # The timer and the time it was armed for (uvloop's call_at hands back a plain
        # Handle, without when(), for a time already past).
        self._timer: asyncio.Handle | None = None
        self._timer_when = 0.0
        self._shutting_down = False
        self._draining = False
        self._idle: asyncio.Event | None = None

    # -- state -------------------------------------------------------------------------

    def __len__(self) -> int:
        """Keys ready to be taken (not those in flight or waiting for a delay)."""
        return len(self._queue)

    @property
    def processing(self) -> int:
        return len(self._processing)

    @property
    def waiting(self) -> int:
        """Keys waiting for a delay to pass."""
        return len(self._waiting)

    @property
    def shutting_down(self) -> bool:
        return self._shutting_down

    # -- adding ------------------------------------------------------------------------

    def add(self, key: K) -> None:
        """Queue ``key`` unless it is already queued (ignored after shutdown)."""
        if self._shutting_down or key in self._dirty:
            return
        self.metrics.added(key)
        self._dirty.add(key)
        if key in self._processing:
            return  # queued again by done()
        self._queue.append(key)
        self._wake_one()

    def add_after(self, key: K, delay: float) -> None:
        """Queue ``key`` once ``delay`` seconds have passed."""
        if self._shutting_down:
            return
        if delay <= 0:
            self.add(key)
            return
        loop = asyncio.get_running_loop()
        ready = loop.time() + delay
        previous = self._waiting.get(key)
        if previous is not None and previous <= ready:
            return
        self._waiting[key] = ready
        heapq.heappush(self._heap, (ready, next(self._seq), key))
        self._arm(loop)

    def add_rate_limited(self, key: K) -> None:
        """Queue ``key`` after the delay its rate limiter gives (a retry)."""
        if self._shutting_down:
            return
        self.metrics.retried(key)
        self.add_after(key, self.rate_limiter.when(key))

    def forget(self, key: K) -> None:
        """Reset ``key``'s backoff (call after it succeeded)."""
        self.rate_limiter.forget(key)

    def num_requeues(self, key: K) -> int:
        return self.rate_limiter.retries(key)

    # -- taking ------------------------------------------------------------------------

    async def get(self) -> K:
        """The next key, once one is ready; it is yours until :meth:`done`.

        Raises :class:`ShutDown` when the queue is shut down (and, when draining, once
        nothing is left to hand out)."""
        loop = asyncio.get_running_loop()
        while True:
            if self._shutting_down and not self._draining:
                raise ShutDown()
            if self._queue:
                key = self._queue.popleft()
                self._dirty.discard(key)
                self._processing.add(key)
                self.metrics.taken(key)
                return key
            if self._shutting_down:
                raise ShutDown()
            waiter: asyncio.Future[None] = loop.create_future()
            self._getters.append(waiter)
            try:
                await waiter
            except asyncio.CancelledError:
                with contextlib.suppress(ValueError):
                    self._getters.remove(waiter)
                if waiter.done() and not waiter.cancelled():
                    self._wake_one()  # pass the wake-up on to another worker
                raise

    def done(self, key: K) -> None:
        """The worker finished ``key``; if it was added meanwhile, queue it again."""
        if key not in self._processing:
            return
        self._processing.discard(key)
        self.metrics.finished(key)
        if key in self._dirty:
            self._queue.append(key)
            self._wake_one()
        elif self._idle is not None and not self._processing and not self._queue:
            self._idle.set()

    # -- shutdown ----------------------------------------------------------------------

    def shutdown(self) -> None:
        """Stop now: refuse adds, drop what is queued, wake every waiting worker."""
        self._stop(drain=False)
        self._queue.clear()
        self._dirty.clear()

    async def shutdown_with_drain(self, timeout: float | None = None) -> bool:
        """Refuse adds and delayed keys, let workers finish everything already queued
        and in flight, then stop them. False if ``timeout`` passed first."""
        self._stop(drain=True)
        self._idle = asyncio.Event()
        if not self._queue and not self._processing:
            self._idle.set()
        try:
            await asyncio.wait_for(self._idle.wait(), timeout)
            return True
        except TimeoutError:
            return False
        finally:
            self._draining = False
            self._wake_all()

    def _stop(self, *, drain: bool) -> None:
        self._shutting_down = True
        self._draining = drain
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._waiting.clear()
        self._heap.clear()
        self._wake_all()

    # -- internals ---------------------------------------------------------------------

    def _wake_one(self) -> None:
        while self._getters:
            waiter = self._getters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return

    def _wake_all(self) -> None:
        while self._getters:
            waiter = self._getters.popleft()
            if not waiter.done():
                waiter.set_result(None)

    def _arm(self, loop: asyncio.AbstractEventLoop) -> None:
        """Point the timer at the earliest live delayed key."""
        heap = self._heap
        while heap and self._waiting.get(heap[0][2]) != heap[0][0]:
            heapq.heappop(heap)  # superseded by an earlier time, or already fired
        if not heap:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
            return
        when = heap[0][0]
        if self._timer is not None:
            if self._timer_when == when:
                return
            self._timer.cancel()
        self._timer = loop.call_at(when, self._fire, loop)
        self._timer_when = when

    def _fire(self, loop: asyncio.AbstractEventLoop) -> None:
        self._timer = None
        now = loop.time() + 1e-4  # the loop may run a timer a hair before its time
        heap = self._heap
        while heap and heap[0][0] <= now:
            ready, _, key = heapq.heappop(heap)
            if self._waiting.get(key) == ready:
                del self._waiting[key]
                self.add(key)
        self._arm(loop)
