"""When cycles start: one period apart, and at once after a cycle that overran."""

from __future__ import annotations

import asyncio
import itertools
import time

import lightkube
import pytest
from hypothesis import given
from hypothesis import strategies as st

from lahar.scheduler.daemon.loop import CycleReport, Scheduler, next_cycle_in
from tests.scheduler.daemon.conftest import eventually, fast_options, running

times = st.floats(min_value=0, max_value=1e6, allow_nan=False)


@given(began=times, took=st.floats(min_value=0, max_value=100), period=st.floats(0.01, 10))
def test_the_wait_fills_the_period_and_never_goes_negative(
    began: float, took: float, period: float
) -> None:
    wait = next_cycle_in(began, began + took, period)
    assert 0.0 <= wait <= period + 1e-9
    assert wait == pytest.approx(max(0.0, period - took), abs=1e-6)


async def test_a_cycle_that_overran_is_followed_at_once(
    client: lightkube.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    starts: list[float] = []
    real = Scheduler.run_once

    async def slow(self: Scheduler) -> CycleReport:
        starts.append(time.monotonic())
        report = await real(self)
        if len(starts) == 2:  # this one overruns the 0.5 s period by far
            await asyncio.sleep(1.0)
        return report

    monkeypatch.setattr(Scheduler, "run_once", slow)
    async with running(client, fast_options(schedule_period=0.5)):
        await eventually(lambda: len(starts) >= 4, timeout=10)
    gaps = [b - a for a, b in itertools.pairwise(starts)]
    assert 0.45 <= gaps[0] < 0.9  # a quick cycle: the rest of the period
    assert 1.0 <= gaps[1] < 1.3  # the overrun: the next one starts right away (not 1.5 s)
    assert 0.45 <= gaps[2] < 0.9
