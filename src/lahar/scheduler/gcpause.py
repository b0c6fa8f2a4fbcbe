"""Pause Python's cyclic garbage collector around one bounded burst of work.

A snapshot holds millions of small objects (every Pod as nested dicts), so each full
collection rescans all of them: building a snapshot or running a session would pay for
several such scans while creating almost no cyclic garbage (reference counting frees
the rest at once). Building and scheduling therefore run with the collector paused; it
is switched back on afterwards exactly when it was on before.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def paused_gc() -> Iterator[None]:
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
