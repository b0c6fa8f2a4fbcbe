"""How long to wait before trying again: workqueue retries and reconnects.

A workqueue's rate limiter combines two limits, combined by taking the larger delay (the same default as client-go's
controller rate limiter):

* per key, exponential: a key that keeps failing waits ``base * 2**failures`` (5 ms,
  10 ms, 20 ms, ... capped at 1000 s), so a broken object does not eat the workers;
  :meth:`forget` resets it once the key succeeds;
* overall, a token bucket (10 per second, bursts of 100), so that a storm of failures
  across many keys cannot flood the API server.

:class:`Backoff` is the simpler delay an informer waits between failed list or watch
attempts: exponential with jitter, reset once the connection works again.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Protocol

__all__ = [
    "Backoff",
    "BucketRateLimiter",
    "ExponentialRateLimiter",
    "MaxOfRateLimiter",
    "RateLimiter",
    "default_rate_limiter",
]


class RateLimiter(Protocol):
    def when(self, key: Hashable) -> float:
        """The delay before ``key`` may be retried (and count this retry)."""
        ...

    def forget(self, key: Hashable) -> None:
        """Stop tracking ``key`` (it succeeded)."""
        ...

    def retries(self, key: Hashable) -> int:
        """How many times ``key`` has been retried since it was last forgotten."""
        ...


class ExponentialRateLimiter:
    """``base * 2**n`` after the n-th failure of a key, at most ``maximum`` seconds."""

    def __init__(self, base: float = 0.005, maximum: float = 1000.0) -> None:
        self.base = base
        self.maximum = maximum
        self._failures: dict[Hashable, int] = {}

    def when(self, key: Hashable) -> float:
        n = self._failures.get(key, 0)
        self._failures[key] = n + 1
        if n > 62:
            return self.maximum
        return min(self.maximum, self.base * (1 << n))

    def forget(self, key: Hashable) -> None:
        self._failures.pop(key, None)

    def retries(self, key: Hashable) -> int:
        return self._failures.get(key, 0)


class BucketRateLimiter:
    """A token bucket over all keys: ``qps`` tokens a second, at most ``burst`` saved.

    Each retry takes a token, reserving a future one when the bucket is empty, so the
    delays it hands out space retries ``1/qps`` apart.
    """

    def __init__(
        self, qps: float = 10.0, burst: int = 100, clock: Callable[[], float] = time.monotonic
    ) -> None:
        if qps <= 0 or burst < 1:
            raise ValueError("qps must be positive and burst at least 1")
        self.qps = qps
        self.burst = burst
        self._clock = clock
        self._tokens = float(burst)
        self._last = clock()

    def when(self, key: Hashable) -> float:
        now = self._clock()
        self._tokens = min(float(self.burst), self._tokens + (now - self._last) * self.qps)
        self._last = now
        self._tokens -= 1.0
        return 0.0 if self._tokens >= 0 else -self._tokens / self.qps

    def forget(self, key: Hashable) -> None:
        pass

    def retries(self, key: Hashable) -> int:
        return 0


class MaxOfRateLimiter:
    """The longest delay of several limiters (each of them counts every retry)."""

    def __init__(self, *limiters: RateLimiter) -> None:
        self.limiters = limiters

    def when(self, key: Hashable) -> float:
        return max(lim.when(key) for lim in self.limiters)

    def forget(self, key: Hashable) -> None:
        for lim in self.limiters:
            lim.forget(key)

    def retries(self, key: Hashable) -> int:
        return max(lim.retries(key) for lim in self.limiters)


def default_rate_limiter(
    *, base: float = 0.005, maximum: float = 1000.0, qps: float = 10.0, burst: int = 100
) -> RateLimiter:
    """Per-key exponential backoff combined with an overall token bucket."""
    return MaxOfRateLimiter(ExponentialRateLimiter(base, maximum), BucketRateLimiter(qps, burst))


@dataclass
class Backoff:
    """Exponential backoff with jitter: delays grow ``initial * factor**n`` up to
    ``maximum``; each is drawn from [d/2, d] so that many clients spread out."""

    initial: float = 0.2
    maximum: float = 30.0
    factor: float = 2.0
    _current: float = 0.0

    def next(self) -> float:
        self._current = min(
            self.maximum, self._current * self.factor if self._current else self.initial
        )
        return self._current * (0.5 + random.random() / 2)

    def reset(self) -> None:
        self._current = 0.0
