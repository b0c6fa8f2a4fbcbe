"""Watch responses: newline-delimited JSON events, streamed as they happen.

A watch from resourceVersion ``""``/``"0"`` (or with ``sendInitialEvents``) first
sends the current objects as ADDED; one from a given resourceVersion replays what
happened since. Label and field selectors are applied per watcher; an object that
stops matching is reported DELETED and one that starts matching ADDED, as the
real server's watch cache does. Bookmarks (when asked for) carry the latest
resourceVersion; ``timeoutSeconds`` ends the stream cleanly; an expired version
is a 410, either as the HTTP status or as an ERROR event mid-stream.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import random
from collections.abc import AsyncIterator
from typing import Any

from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from lahar.apiserver import jsoncopy, selectors, tables
from lahar.apiserver import store as storemod
from lahar.apiserver.errors import bad_request, expired
from lahar.apiserver.meta import meta
from lahar.apiserver.routing import Route
from lahar.apiserver.state import ServerState
from lahar.apiserver.watch import WatchProgress

Obj = dict[str, Any]


# At most this many events in one chunk of the stream.
_BATCH = 256


def _line(event_type: str, obj: Obj) -> bytes:
    return jsoncopy.dumps({"type": event_type, "object": obj}) + b"\n"


_PREFIXES = {
    t: b'{"type":"' + t.encode() + b'","object":' for t in ("ADDED", "MODIFIED", "DELETED")
}


def _stored_line(event_type: str, data: bytes) -> bytes:
    """:func:`_line` of an object from its stored bytes (the same bytes, no encoding)."""
    return _PREFIXES[event_type] + data + b"}\n"


async def serve(state: ServerState, request: Request, route: Route, as_table: bool) -> Response:
    rt = route.resource
    assert rt is not None
    q = request.query_params
    labels = selectors.parse_label_selector(q.get("labelSelector"))
    fields = selectors.parse_field_selector(q.get("fieldSelector"), rt.group_resource)
    key = state.objects.storage_key(rt)
    ns = route.namespace or None
    if route.name:
        fields = [
            *fields,
            *selectors.parse_field_selector(f"metadata.name={route.name}", rt.group_resource),
        ]
    rv_text = q.get("resourceVersion") or ""
    if rv_text and not rv_text.isdigit():
        raise bad_request(f"resourceVersion: Invalid value: {rv_text!r}: must be an integer")
    bookmarks = q.get("allowWatchBookmarks") in ("true", "1")
    send_initial = q.get("sendInitialEvents") == "true" or rv_text in ("", "0")
    timeout_text = q.get("timeoutSeconds")
    timeout = (
        float(timeout_text)
        if timeout_text and timeout_text.isdigit()
        else 1800 * (1 + random.random())
    )
    matches = lambda o: selectors.labels_match(labels, o) and selectors.fields_match(fields, o)  # noqa: E731

    if send_initial:
        with state.store.transaction():
            initial, since = state.store.list(key, ns)
        initial = [o for o in initial if matches(o)]
    else:
        since, initial = int(rv_text), []
        if since < state.store.oldest_rv():
            raise expired(f"too old resource version: {since} ({state.store.oldest_rv()})")

    plain = not as_table

    def encode(event_type: str, obj: Obj) -> bytes:
        obj = state.objects.present(rt, obj)
        if as_table and event_type != "BOOKMARK" and event_type != "ERROR":
            obj = tables.to_table(
                rt,
                [obj],
                include_object=q.get("includeObject") or "Metadata",
                now=dt.datetime.now(dt.UTC),
            )
        return _line(event_type, obj)

    def line(ev: storemod.WatchEvent, event_type: str, obj: Obj) -> bytes:
        """The watch line of ``obj``: the event's stored bytes when they are exactly what
        the line carries (no encoding per event and watcher), else encoded."""
        if (
            plain
            and obj is ev.object
            and ev.data is not None
            and state.objects.presents_as_stored(rt, obj)
        ):
            return _stored_line(event_type, ev.data)
        return encode(event_type, obj)

    async def events() -> AsyncIterator[bytes]:
        present: set[tuple[str, str]] | None = set() if (labels or fields) else None
        for obj in initial:
            if present is not None:
                present.add((meta(obj).get("namespace", "") or "", meta(obj)["name"]))
            yield encode("ADDED", obj)
        if send_initial and bookmarks and q.get("sendInitialEvents") == "true":
            mark = {
                "kind": rt.kind,
                "apiVersion": rt.api_version,
                "metadata": {
                    "resourceVersion": str(since),
                    "annotations": {"k8s.io/initial-events-end": "true"},
                },
            }
            yield _line("BOOKMARK", mark)
        queue: asyncio.Queue[storemod.WatchEvent | Exception | None] = asyncio.Queue(maxsize=1000)
        progress = WatchProgress()

        async def pump() -> None:
            try:
                async for ev in state.hub.watch(key, ns, since, progress=progress):
                    await queue.put(ev)
            except Exception as exc:  # Expired, or the hub closing
                await queue.put(exc)
            else:
                await queue.put(None)

        task = asyncio.create_task(pump())
        state.metrics.watchers.labels(rt.group, rt.plural).inc()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        last_rv = since
        try:
            while True:
                remaining = deadline - loop.time()
                if remaining <= 0:
                    break
                wait = min(remaining, state.bookmark_interval) if bookmarks else remaining
                # asyncio.timeout, not wait_for: cheaper (no task per event), and on
                # Python 3.11 wait_for can drop the cancellation of a closing stream
                try:
                    async with asyncio.timeout(wait):
                        item = await queue.get()
                except TimeoutError:
                    if bookmarks and queue.empty():  # else the next round delivers them
                        # Never past an event not yet sent: a client resumes from here.
                        rv = max(last_rv, progress.safe_rv())
                        mark = {
                            "kind": rt.kind,
                            "apiVersion": rt.api_version,
                            "metadata": {"resourceVersion": str(rv)},
                        }
                        yield _line("BOOKMARK", mark)
                    continue
                # Events already waiting go out in one chunk (one write, one TLS record):
                # the same lines, fewer sends when the kind is busy.
                lines: list[bytes] = []
                end = False
                while True:
                    if item is None:
                        end = True
                        break
                    if isinstance(item, Exception):
                        if isinstance(item, storemod.Expired):
                            status = expired(f"too old resource version: {since}").to_status()
                            lines.append(_line("ERROR", status))
                        end = True
                        break
                    last_rv = item.rv
                    out = _filter(item, matches, present)
                    if out is not None:
                        lines.append(line(item, *out))
                    if queue.empty() or len(lines) >= _BATCH:
                        break
                    item = queue.get_nowait()
                if lines:
                    yield b"".join(lines)
                if end:
                    break
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
            state.metrics.watchers.labels(rt.group, rt.plural).dec()

    return StreamingResponse(events(), media_type="application/json")


def _filter(
    ev: storemod.WatchEvent, matches: Any, present: set[tuple[str, str]] | None
) -> tuple[str, Obj] | None:
    """What a filtered watcher sees of one change, as the real watch cache decides it:
    an object that starts matching is ADDED, one that stops matching is DELETED."""
    if present is None:
        return ev.type, ev.object
    key = (ev.namespace, ev.name)
    now_ok = matches(ev.object)
    if ev.type == "ADDED":
        if now_ok:
            present.add(key)
            return "ADDED", ev.object
        return None
    if ev.type == "DELETED":
        if now_ok or key in present:
            present.discard(key)
            return "DELETED", ev.object
        return None
    was_ok = matches(ev.prev) if ev.prev is not None else key in present
    if now_ok:
        present.add(key)
        return ("MODIFIED" if was_ok else "ADDED"), ev.object
    present.discard(key)
    return ("DELETED", ev.object) if was_ok else None
