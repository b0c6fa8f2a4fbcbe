"""Keeping a local cache of one kind in step with the API server: list, then watch.

An informer lists the kind (page by page), then watches from the list's
resourceVersion and applies each event to its :class:`~lahar.kube.cache.Cache`,
calling its handlers with what changed. It must never lose a change, even though
connections break, servers restart and a watch can fall out of the server's event
window. The rules that guarantee it:

* A broken or refused watch is retried from the last resourceVersion seen (each event
  and each bookmark moves it forward), with exponential backoff and jitter, so a
  flapping server is not hammered. Bookmarks keep that version fresh on a quiet kind,
  so a reconnect rarely falls out of the window.
* When the server answers 410 Gone (on connect, or as an ERROR event mid-stream) the
  version is too old: the informer lists again and diffs the new list against its
  cache. Objects that vanished are reported deleted (with their last known state),
  new ones added, changed ones updated, unchanged ones not at all. So no delete is
  missed and nothing is added twice.
* An event whose object already has the cached resourceVersion is dropped, and a
  delete of an object the cache does not hold is ignored: replays that overlap what
  the list showed (servers whose pages are read at different times do this) cause no
  duplicate.

Handlers are plain functions called in the informer's task; they must be quick (the
usual one adds a key to a workqueue). A handler added after the first list gets an
"add" for every cached object, so it starts from the same picture as the others.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import lightkube

from lahar.kube import rest
from lahar.kube.cache import Cache, IndexFunc, compact, strip_managed_fields
from lahar.kube.ratelimit import Backoff
from lahar.kube.resource import Resource, as_resource, object_key

__all__ = ["Backoff", "EventHandler", "Informer", "compact", "strip_managed_fields"]

log = logging.getLogger("lahar.kube.informer")
Obj = dict[str, Any]
Transform = Callable[[Obj], Obj]

# A watch that ends cleanly this fast without a single event counts as a failure (a
# server that is shutting down ends every watch at once; retrying at once would spin).
_SHORT_WATCH = 1.0


@dataclass(eq=False)
class EventHandler:
    """What an informer calls on a change. Any of the three may be None."""

    on_add: Callable[[Obj], None] | None = None
    on_update: Callable[[Obj, Obj], None] | None = None
    on_delete: Callable[[Obj], None] | None = None


class _Expired(Exception):
    """The watch's resourceVersion fell out of the server's window: relist."""


class _ShortWatch(Exception):
    pass


class Informer:
    """List-then-watch one kind into a :class:`Cache` and call handlers on changes."""

    def __init__(
        self,
        client: lightkube.AsyncClient,
        resource: Resource | type[Any],
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        page_size: int = 500,
        watch_timeout: int = 300,
        bookmarks: bool = True,
        transform: Transform | None = compact,
        indexers: Mapping[str, IndexFunc] | None = None,
        backoff: Backoff | None = None,
        resync_period: float | None = None,
    ) -> None:
        self.client = client
        self.resource = as_resource(resource)
        self.namespace = namespace
        self.page_size = page_size
        self.watch_timeout = watch_timeout
        self.bookmarks = bookmarks
        self.transform = transform
        self.backoff = backoff or Backoff()
        self.resync_period = resync_period
        self.cache = Cache(indexers)
        self.resource_version: str | None = None
        self.lists = 0  # how many full lists ran (1 + relists)
        self.watches = 0  # how many watch requests were sent
        self._params: dict[str, str] = {}
        if label_selector:
            self._params["labelSelector"] = label_selector
        if field_selector:
            self._params["fieldSelector"] = field_selector
        self._path = self.resource.path(namespace)
        self._handlers: list[EventHandler] = []
        self._synced = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._log = logging.LoggerAdapter(log, {"resource": str(self.resource)})

    def __repr__(self) -> str:
        return f"Informer({self.resource}, namespace={self.namespace!r})"

    # -- handlers and indexes ----------------------------------------------------------

    def add_handler(
        self,
        handler: EventHandler | None = None,
        *,
        on_add: Callable[[Obj], None] | None = None,
        on_update: Callable[[Obj, Obj], None] | None = None,
        on_delete: Callable[[Obj], None] | None = None,
    ) -> EventHandler:
        """Register a handler; if the cache is already synced, replay it an add per object."""
        handler = handler or EventHandler(on_add, on_update, on_delete)
        self._handlers.append(handler)
        if self._synced.is_set() and handler.on_add is not None:
            for obj in self.cache:
                self._call(handler.on_add, obj)
        return handler

    def remove_handler(self, handler: EventHandler) -> None:
        with contextlib.suppress(ValueError):
            self._handlers.remove(handler)

    def add_indexer(self, name: str, func: IndexFunc) -> None:
        self.cache.add_indexer(name, func)

    # -- lifecycle ---------------------------------------------------------------------

    @property
    def has_synced(self) -> bool:
        return self._synced.is_set()

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    def start(self) -> asyncio.Task[None]:
        """Run in a background task (idempotent)."""
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self.run(), name=f"informer {self.resource}")
        return self._task

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None and not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def wait_for_sync(self, timeout: float | None = None) -> bool:
        """Wait until the first list is in the cache; False on timeout."""
        try:
            await asyncio.wait_for(self._synced.wait(), timeout)
        except TimeoutError:
            return False
        return True

    async def run(self) -> None:
        """List and watch until cancelled (and resync, if a period is set)."""
        resync = asyncio.create_task(self._resync()) if self.resync_period else None
        try:
            await self._list_and_watch()
        finally:
            if resync is not None:
                resync.cancel()

    async def _resync(self) -> None:
        """Every ``resync_period``, hand every cached object to the update handlers
        again (old and new the same), so controllers re-check the whole world now and
        then even if nothing changed."""
        assert self.resync_period is not None
        while True:
            await asyncio.sleep(self.resync_period)
            if self._synced.is_set():
                for obj in self.cache:
                    self._updated(obj, obj)

    async def _list_and_watch(self) -> None:
        expired_in_a_row = 0
        while True:
            try:
                if self.resource_version is None:
                    await self._list()
                await self._watch()
                expired_in_a_row = 0
            except asyncio.CancelledError:
                raise
            except _Expired:
                self._log.info(
                    "watch of %s expired at resourceVersion %s; relisting",
                    self.resource,
                    self.resource_version,
                )
                self.resource_version = None
                expired_in_a_row += 1
                if expired_in_a_row > 1:  # the window is shorter than a list: slow down
                    await asyncio.sleep(self.backoff.next())
            except Exception as exc:  # broken connection, server down, 5xx, 403 ...
                delay = self.backoff.next()
                self._log.warning(
                    "list/watch of %s failed (%s: %s); retrying in %.2fs",
                    self.resource,
                    type(exc).__name__,
                    exc,
                    delay,
                )
                await asyncio.sleep(delay)

    # -- list --------------------------------------------------------------------------

    async def _list(self) -> None:
        items: dict[str, Obj] = {}
        rv: str | None = None
        cont: str | None = None
        while True:
            try:
                page = await rest.list_page(
                    self.client, self._path, limit=self.page_size, cont=cont, params=self._params
                )
            except rest.ApiError as exc:
                if cont and rest.is_status(exc, 410):  # continue token expired: start over
                    items, rv, cont = {}, None, None
                    continue
                raise
            if rv is None:
                rv = page["metadata"].get("resourceVersion") or "0"
            for obj in page.get("items") or ():
                obj = self._prepare(obj)
                items[object_key(obj)] = obj
            cont = page["metadata"].get("continue")
            if not cont:
                break
        self.lists += 1
        self._replace(items)
        self.resource_version = rv
        self.backoff.reset()
        self._synced.set()

    def _prepare(self, obj: Obj) -> Obj:
        obj.setdefault("apiVersion", self.resource.api_version)
        obj.setdefault("kind", self.resource.kind)
        return self.transform(obj) if self.transform is not None else obj

    def _replace(self, items: dict[str, Obj]) -> None:
        """Make the cache equal ``items``, calling handlers for the differences."""
        cache = self.cache
        for key in cache.list_keys():
            if key not in items:
                old = cache.remove(key)
                if old is not None:
                    self._deleted(old)
        for obj in items.values():
            self._store(obj, _rv(obj))

    def _store(self, obj: Obj, rv: str | None) -> None:
        """Add or update ``obj``; an object that replaced a deleted one of the same name
        (another uid) is reported as a delete and an add, not as an update."""
        cache = self.cache
        old = cache.get_by_key(object_key(obj))
        if old is not None and _rv(old) == rv:
            return  # the very version the cache holds: nothing happened
        cache.upsert(obj)
        if old is None:
            self._added(obj)
        elif old["metadata"].get("uid") != obj["metadata"].get("uid"):
            self._deleted(old)
            self._added(obj)
        else:
            self._updated(old, obj)

    # -- watch -------------------------------------------------------------------------

    async def _watch(self) -> None:
        assert self.resource_version is not None
        loop = asyncio.get_running_loop()
        started = loop.time()
        seen = False
        self.watches += 1
        try:
            async for event in rest.watch_events(
                self.client,
                self._path,
                resource_version=self.resource_version,
                params=self._params,
                bookmarks=self.bookmarks,
                # spread reconnects out, so informers do not all come back at once
                timeout_seconds=int(self.watch_timeout * (1 + random.random())),
            ):
                seen = True
                self._apply(event)
        except rest.ApiError as exc:
            if rest.is_status(exc, 410):
                raise _Expired() from exc
            raise
        if not seen and loop.time() - started < _SHORT_WATCH:
            raise _ShortWatch("the watch ended at once without any event")

    def _apply(self, event: Obj) -> None:
        kind = event.get("type")
        obj = event.get("object") or {}
        if kind == "ERROR":
            if obj.get("code") == 410:
                raise _Expired()
            raise RuntimeError(f"watch error: {obj.get('code')} {obj.get('message')}")
        rv = obj.get("metadata", {}).get("resourceVersion")
        if kind == "BOOKMARK":
            if rv:
                self.resource_version = rv
            return
        obj = self._prepare(obj)
        key = object_key(obj)
        cache = self.cache
        if kind == "DELETED":
            old = cache.remove(key)
            if old is not None:
                self._deleted(obj)
        elif kind in ("ADDED", "MODIFIED"):
            self._store(obj, rv)
        else:
            self._log.warning("unknown watch event type %r for %s", kind, key)
            return
        if rv:
            self.resource_version = rv
        self.backoff.reset()

    # -- dispatch ----------------------------------------------------------------------

    def _added(self, obj: Obj) -> None:
        for h in self._handlers:
            if h.on_add is not None:
                self._call(h.on_add, obj)

    def _updated(self, old: Obj, new: Obj) -> None:
        for h in self._handlers:
            if h.on_update is not None:
                self._call(h.on_update, old, new)

    def _deleted(self, obj: Obj) -> None:
        for h in self._handlers:
            if h.on_delete is not None:
                self._call(h.on_delete, obj)

    def _call(self, fn: Callable[..., None], *args: Obj) -> None:
        try:
            fn(*args)
        except Exception:
            self._log.exception("event handler %r failed on %s", fn, object_key(args[-1]))


def _rv(obj: Obj) -> str | None:
    return obj["metadata"].get("resourceVersion")
