"""Informer behaviour on server replies that a healthy embedded server rarely gives:
an ERROR 410 event in the middle of a watch, and a server answering 500 for a while.
A scripted ASGI app plays the server."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from lahar.kube import client as kclient
from lahar.kube.informer import Backoff, Informer
from tests.kube.conftest import CONFIGMAPS, eventually, running
from tests.kube.eventlog import EventLog


def cm(name: str, rv: int, uid: str | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": name,
            "namespace": "default",
            "uid": uid or f"uid-{name}",
            "resourceVersion": str(rv),
        },
    }


class ScriptedServer:
    """Lists come from ``lists`` (one per list call, the last repeats); each watch plays
    the next entry of ``watches`` (a list of events) and then hangs."""

    def __init__(
        self,
        lists: list[list[dict[str, Any]]],
        watches: list[list[dict[str, Any]]],
        fail_first: int = 0,
    ) -> None:
        self.lists = lists
        self.watches = watches
        self.fail_first = fail_first
        self.requests: list[str] = []

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        query = scope["query_string"].decode()
        self.requests.append(query)
        if self.fail_first > 0:
            self.fail_first -= 1
            await self._send(
                send,
                500,
                {
                    "kind": "Status",
                    "apiVersion": "v1",
                    "status": "Failure",
                    "code": 500,
                    "message": "boom",
                },
            )
            return
        if "watch=true" in query:
            script = self.watches.pop(0) if self.watches else []
            await send(
                {
                    "type": "http.response.start",
                    "status": 200,
                    "headers": [(b"content-type", b"application/json")],
                }
            )
            for event in script:
                await send(
                    {
                        "type": "http.response.body",
                        "more_body": True,
                        "body": json.dumps(event).encode() + b"\n",
                    }
                )
            await asyncio.Event().wait()
        items = self.lists.pop(0) if len(self.lists) > 1 else self.lists[0]
        rv = max((int(o["metadata"]["resourceVersion"]) for o in items), default=1)
        await self._send(
            send,
            200,
            {
                "kind": "ConfigMapList",
                "apiVersion": "v1",
                "metadata": {"resourceVersion": str(rv)},
                "items": items,
            },
        )

    async def _send(self, send: Any, status: int, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [(b"content-type", b"application/json")],
            }
        )
        await send({"type": "http.response.body", "body": data})


async def test_error_410_mid_stream_relists_and_diffs() -> None:
    expired = {
        "type": "ERROR",
        "object": {
            "kind": "Status",
            "apiVersion": "v1",
            "status": "Failure",
            "code": 410,
            "reason": "Expired",
            "message": "too old resource version",
        },
    }
    app = ScriptedServer(
        lists=[[cm("a", 1), cm("b", 2)], [cm("b", 5), cm("c", 6)]],
        watches=[[{"type": "MODIFIED", "object": cm("a", 3)}, expired]],
    )
    c = kclient.in_process(app)
    inf = Informer(c, CONFIGMAPS, backoff=Backoff(initial=0.01, maximum=0.05))
    log = EventLog(inf)
    try:
        async with running(inf):
            await eventually(lambda: inf.lists == 2 and inf.watches >= 2)
        assert [(k, key) for k, key, _, _ in log.events] == [
            ("ADD", "default/a"),
            ("ADD", "default/b"),
            ("UPDATE", "default/a"),
            ("DELETE", "default/a"),
            ("UPDATE", "default/b"),
            ("ADD", "default/c"),
        ]
        log.check()
        assert "resourceVersion=3" in app.requests[1] or "resourceVersion=2" in app.requests[1]
        assert "allowWatchBookmarks=true" in app.requests[1]
    finally:
        await c.close()


async def test_server_errors_back_off_then_recover() -> None:
    app = ScriptedServer(lists=[[cm("a", 1)]], watches=[], fail_first=4)
    c = kclient.in_process(app)
    inf = Informer(c, CONFIGMAPS, backoff=Backoff(initial=0.05, maximum=1.0))
    loop = asyncio.get_running_loop()
    try:
        start = loop.time()
        async with running(inf):
            assert await inf.wait_for_sync(10)
            took = loop.time() - start
        # four failures back off about 0.05+0.1+0.2+0.4 (each jittered to half or more)
        assert took >= 0.3, took
        assert len(inf.cache) == 1
    finally:
        await c.close()


async def test_stale_events_cause_no_duplicates() -> None:
    """A watch replaying versions the list already showed is ignored."""
    app = ScriptedServer(
        lists=[[cm("a", 4), cm("b", 2)]],
        watches=[
            [
                {"type": "ADDED", "object": cm("a", 4)},
                {"type": "MODIFIED", "object": cm("b", 2)},
                {"type": "DELETED", "object": cm("z", 3)},
                {
                    "type": "BOOKMARK",
                    "object": {
                        "kind": "ConfigMap",
                        "apiVersion": "v1",
                        "metadata": {"resourceVersion": "9"},
                    },
                },
            ]
        ],
    )
    c = kclient.in_process(app)
    inf = Informer(c, CONFIGMAPS, backoff=Backoff(initial=0.01, maximum=0.05))
    log = EventLog(inf)
    try:
        async with running(inf):
            await eventually(lambda: inf.resource_version == "9")
        assert [k for k, *_ in log.events] == ["ADD", "ADD"]
    finally:
        await c.close()
