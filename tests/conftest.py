"""Shared test settings: hypothesis profiles, the event loop, and a timeout that works on it."""

from __future__ import annotations

import asyncio
import functools
import inspect
import os
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import uvloop
from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci", max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile("dev", max_examples=30, deadline=None)
settings.load_profile("ci" if os.environ.get("CI") else "dev")

# Share of pytest-timeout's limit an async test body may take before it is cancelled.
ASYNC_BODY_SHARE = 0.8


def pytest_asyncio_loop_factories(config: Any, item: Any) -> dict[str, Any]:
    """Async tests run on uvloop, the loop every lahar command runs on (lahar.eventloop)."""
    return {"uvloop": uvloop.new_event_loop}


def _timeout_of(item: pytest.Item) -> float:
    marker = item.get_closest_marker("timeout")
    if marker is not None and marker.args:
        return float(marker.args[0])
    return float(item.config.getini("timeout") or 0)


def _with_deadline(func: Callable[..., Any], seconds: float, name: str) -> Callable[..., Any]:
    @functools.wraps(func)
    async def bounded(*args: Any, **kwargs: Any) -> Any:
        try:
            async with asyncio.timeout(seconds):
                return await func(*args, **kwargs)
        except TimeoutError as exc:
            raise pytest.fail.Exception(f"{name}: still running after {seconds:.0f} s") from exc

    return bounded


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    """Cancel an async test body that outlives its time, and fail that one test.

    pytest-timeout's signal method cannot interrupt an idle uvloop (libuv retries the
    interrupted poll without running Python's handlers), so a hung async test used to
    hang the whole run. The body now runs under ``asyncio.timeout``; pytest-timeout's
    thread method (pyproject) stays as the backstop for a blocked loop or a fixture."""
    target = getattr(item, "_synchronization_target_attr", None)
    limit = _timeout_of(item) * ASYNC_BODY_SHARE
    if target is None or limit <= 0:
        return (yield)
    owner, attr = target
    func = getattr(owner, attr)
    if not inspect.iscoroutinefunction(func):
        return (yield)
    setattr(owner, attr, _with_deadline(func, limit, item.nodeid))
    try:
        return (yield)
    finally:
        setattr(owner, attr, func)
