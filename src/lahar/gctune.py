"""Tuning CPython's cyclic garbage collector for a long-lived controller process.

Every lahar process keeps tens of thousands of small dicts alive (informer caches,
the API server's decoded objects) and allocates many short-lived ones per request.
With CPython's default thresholds (700, 10, 10) the collector runs a young
collection every 700 net allocations and keeps re-walking the long-lived caches in
the older generations: measured on ``lahar bench e2e`` (1,000 nodes, 10,000 pods),
``gc_collect_main`` was about a quarter of all CPU samples. Most of what lahar keeps
is JSON trees, freed by reference counting alone; collecting less often only delays
the reclaiming of the rarer reference cycles.
"""

from __future__ import annotations

import gc

# Young collections every 50,000 net allocations instead of 700; the middle and old
# generations after 20 and 100 collections of the one below.
THRESHOLDS = (50_000, 20, 100)


def tune() -> None:
    """Raise the collector's thresholds and move what exists now (imported modules,
    the process's startup objects) out of its reach (``gc.freeze``). Idempotent."""
    gc.set_threshold(*THRESHOLDS)
    gc.freeze()
