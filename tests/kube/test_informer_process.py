"""Informer over real HTTPS against a ``lahar apiserver`` process that is killed and
restarted on the same port and data dir: changes made while the informer was cut off
reach it exactly once."""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from lahar.kube import client as kclient
from lahar.kube import rest
from lahar.kube.informer import Backoff, Informer
from tests.kube.conftest import CONFIGMAPS, create_cm, delete_cm, eventually, patch_cm, running
from tests.kube.eventlog import EventLog
from tests.kube.procs import ApiServerProcess


@pytest.fixture
def apiserver(tmp_path: Path) -> Iterator[ApiServerProcess]:
    srv = ApiServerProcess(tmp_path / "api")
    try:
        yield srv.start()
    finally:
        srv.stop()


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM], ids=["kill9", "term"])
async def test_informer_survives_server_restart(apiserver: ApiServerProcess, sig: int) -> None:
    c = kclient.from_kubeconfig(apiserver.kubeconfig)
    inf = Informer(c, CONFIGMAPS, backoff=Backoff(initial=0.05, maximum=0.5))
    log = EventLog(inf)
    try:
        for i in range(5):
            await create_cm(c, f"c{i}")
        async with running(inf):
            await inf.wait_for_sync(10)
            await patch_cm(c, "c0", "1")
            await eventually(lambda: log.of("UPDATE") == ["default/c0"])
            port = apiserver.port
            await asyncio.to_thread(apiserver.stop if sig == signal.SIGTERM else apiserver.kill9)
            await asyncio.sleep(0.5)  # the informer fails and backs off meanwhile
            await asyncio.to_thread(apiserver.start, port)
            c2 = kclient.from_kubeconfig(apiserver.kubeconfig)
            try:
                await delete_cm(c2, "c1")
                await delete_cm(c2, "c2")
                await patch_cm(c2, "c3", "x")
                await create_cm(c2, "new")
                items = (await rest.request(c2, "GET", CONFIGMAPS.path("default")))["items"]
                want = {o["metadata"]["name"] for o in items}
            finally:
                await c2.close()
            await eventually(lambda: {o["metadata"]["name"] for o in inf.cache} == want, timeout=15)
            await eventually(lambda: inf.cache.get("c3", "default")["data"] == {"v": "x"})
            await asyncio.sleep(0.3)
        log.check()
        assert sorted(log.of("DELETE")) == ["default/c1", "default/c2"]
        assert {k.split("/")[1] for k in log.live()} == want
        assert inf.watches >= 2
    finally:
        await c.close()
