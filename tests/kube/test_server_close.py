"""Closing the embedded API server while its garbage collector runs (as ``lahar up``
and ``lahar apiserver`` run it): close() right after a write returns."""

from __future__ import annotations

import asyncio
from pathlib import Path

from tests.kube.conftest import new_server


async def test_close_right_after_a_write_stops_the_collector(tmp_path: Path) -> None:
    """The write wakes the collector; close() cancels it before it has run. On Python
    3.11 asyncio.wait_for swallowed that cancellation: the collector went on, and
    close() waited for it forever."""
    server = new_server(tmp_path / "data")
    server.gc.start()
    await asyncio.sleep(0.1)  # the collector is waiting for a write

    async def write_then_close() -> None:
        cm = {"metadata": {"name": "x", "namespace": "default"}}
        server.state.store.create("configmaps", cm)
        await server.close()

    closing = asyncio.create_task(write_then_close())
    done, _ = await asyncio.wait({closing}, timeout=5)
    try:
        assert done, "close() did not return: the garbage collector ignored its cancellation"
        closing.result()
        assert server.gc._task is not None and server.gc._task.cancelled()
    finally:
        if server.gc._task is not None:
            server.gc._task.cancel()
        await asyncio.wait({closing}, timeout=5)
