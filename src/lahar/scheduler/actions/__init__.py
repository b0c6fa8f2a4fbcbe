"""Scheduler actions, run in the order the configuration lists them.

Each action module exposes ``execute(ssn)``. Volcano's gang-aware and descheduling
actions (gangpreempt, gangreclaim, shuffle) are accepted by the configuration loader but
not implemented yet; running them is a no-op reported in ``UNIMPLEMENTED``.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable

from lahar.scheduler.framework.session import Session

IMPLEMENTED: tuple[str, ...] = ("enqueue", "allocate", "backfill", "preempt", "reclaim")
UNIMPLEMENTED: tuple[str, ...] = ("gangpreempt", "gangreclaim", "shuffle")


def action(name: str) -> Callable[[Session], None] | None:
    if name not in IMPLEMENTED:
        return None
    module = importlib.import_module(f"lahar.scheduler.actions.{name}")
    return module.execute  # type: ignore[no-any-return]
