"""Shared test settings: hypothesis profiles."""

from __future__ import annotations

import os
from typing import Any

import uvloop
from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci", max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile("dev", max_examples=30, deadline=None)
settings.load_profile("ci" if os.environ.get("CI") else "dev")


def pytest_asyncio_loop_factories(config: Any, item: Any) -> dict[str, Any]:
    """Async tests run on uvloop, the loop every lahar command runs on (lahar.eventloop)."""
    return {"uvloop": uvloop.new_event_loop}
