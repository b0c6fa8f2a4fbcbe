"""A controller: informer events in, a workqueue of requests, N workers reconciling.

Wiring says which changes matter to the reconciler and which object each one names:

* ``for_(kind)``: a change to an object of the primary kind queues that object;
* ``owns(kind)``: a change to an object queues its *controller* owner (the owner
  reference with ``controller: true``) when that owner is of the primary kind, so a
  RayCluster is reconciled when one of its pods changes;
* ``watches(kind, mapper)``: a change queues whatever ``mapper(obj)`` returns.

Each takes an optional ``predicate(obj)`` (events whose object fails it are dropped)
and ``update_predicate(old, new)`` (updates that fail it are dropped; see
:func:`generation_changed`).

Workers take requests from the queue (never two at once for one key, see
:mod:`lahar.kube.workqueue`) and call the reconciler. The outcome decides what
happens next: success forgets the key's backoff; an exception retries with backoff;
:class:`~lahar.kube.reconcile.TerminalError` is logged and not retried;
``Result(requeue_after=s)`` looks again in ``s`` seconds; ``Result(requeue=True)``
retries through the rate limiter. Every outcome is counted in the
``controller_runtime_*`` metrics and every log line carries the object's key.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Iterable
from typing import Any, Self

from lahar.kube.factory import InformerFactory
from lahar.kube.informer import EventHandler, Informer
from lahar.kube.metrics import ControllerMetrics
from lahar.kube.ratelimit import RateLimiter
from lahar.kube.reconcile import Reconciler, Request, Result, TerminalError, current_request
from lahar.kube.reconcile import key_fields as _key_fields
from lahar.kube.resource import Resource, as_resource
from lahar.kube.workqueue import ShutDown, WorkQueue

__all__ = [
    "Controller",
    "Mapper",
    "Predicate",
    "UpdatePredicate",
    "controller_owner",
    "generation_changed",
]

log = logging.getLogger("lahar.kube.controller")
Obj = dict[str, Any]
Mapper = Callable[[Obj], Iterable[Request]]
Predicate = Callable[[Obj], bool]
UpdatePredicate = Callable[[Obj, Obj], bool]


def generation_changed(old: Obj, new: Obj) -> bool:
    """An update predicate: only spec changes (``metadata.generation``) count, not
    status or metadata writes (the controller's own status updates, say)."""
    return old["metadata"].get("generation") != new["metadata"].get("generation")


def controller_owner(obj: Obj, owner: Resource) -> Request | None:
    """The request for ``obj``'s controller owner, if that owner is of kind ``owner``."""
    for ref in obj["metadata"].get("ownerReferences") or ():
        if not ref.get("controller"):
            continue
        group = ref.get("apiVersion", "").rpartition("/")[0]
        if ref.get("kind") == owner.kind and group == owner.group:
            ns = (obj["metadata"].get("namespace") or "") if owner.namespaced else ""
            return Request(ns, ref["name"])
        return None  # there is only one controller reference
    return None


class Controller:
    """Reconcile one primary kind with ``max_concurrent_reconciles`` workers."""

    def __init__(
        self,
        name: str,
        reconciler: Reconciler,
        informers: InformerFactory,
        *,
        max_concurrent_reconciles: int = 1,
        rate_limiter: RateLimiter | None = None,
        metrics: ControllerMetrics | None = None,
        sync_timeout: float | None = None,
    ) -> None:
        if max_concurrent_reconciles < 1:
            raise ValueError("max_concurrent_reconciles must be at least 1")
        self.name = name
        self.reconciler = reconciler
        self.informers = informers
        self.max_concurrent_reconciles = max_concurrent_reconciles
        self.sync_timeout = sync_timeout
        self.metrics = metrics or ControllerMetrics()
        self.metrics.controller(name, max_concurrent_reconciles)
        self.queue: WorkQueue[Request] = WorkQueue(
            name, rate_limiter=rate_limiter, metrics=self.metrics.queue(name)
        )
        self._primary: Resource | None = None
        self._watches: list[tuple[Informer, EventHandler]] = []
        self._registered = False
        self._total = {
            r: self.metrics.reconcile_total.labels(name, r)
            for r in ("success", "error", "requeue", "requeue_after")
        }

    # -- wiring ------------------------------------------------------------------------

    def for_(
        self,
        kind: Resource | type[Any],
        *,
        predicate: Predicate | None = None,
        update_predicate: UpdatePredicate | None = None,
        **informer_options: Any,
    ) -> Self:
        """Reconcile objects of ``kind`` (the primary kind) when they change."""
        if self._primary is not None:
            raise ValueError(f"controller {self.name} already reconciles {self._primary}")
        self._primary = as_resource(kind)
        informer = self.informers.informer(self._primary, **informer_options)
        return self._watch(informer, lambda obj: (Request.of(obj),), predicate, update_predicate)

    def owns(
        self,
        kind: Resource | type[Any],
        *,
        predicate: Predicate | None = None,
        update_predicate: UpdatePredicate | None = None,
        **informer_options: Any,
    ) -> Self:
        """Reconcile the controller owner (of the primary kind) of ``kind`` objects."""

        def owner(obj: Obj) -> Iterable[Request]:
            if self._primary is None:
                raise RuntimeError(f"controller {self.name}: owns() needs for_()")
            req = controller_owner(obj, self._primary)
            return (req,) if req is not None else ()

        informer = self.informers.informer(kind, **informer_options)
        return self._watch(informer, owner, predicate, update_predicate)

    def watches(
        self,
        kind: Resource | type[Any],
        mapper: Mapper,
        *,
        predicate: Predicate | None = None,
        update_predicate: UpdatePredicate | None = None,
        **informer_options: Any,
    ) -> Self:
        """Reconcile the requests ``mapper`` derives from changed ``kind`` objects."""
        informer = self.informers.informer(kind, **informer_options)
        return self._watch(informer, mapper, predicate, update_predicate)

    # controller-runtime's builder spelling
    For = for_
    Owns = owns
    Watches = watches

    def _watch(
        self,
        informer: Informer,
        mapper: Mapper,
        predicate: Predicate | None,
        update_predicate: UpdatePredicate | None,
    ) -> Self:
        queue = self.queue

        def enqueue(obj: Obj) -> None:
            if predicate is None or predicate(obj):
                for req in mapper(obj):
                    queue.add(req)

        def update(old: Obj, new: Obj) -> None:
            if update_predicate is not None and not update_predicate(old, new):
                return
            if predicate is None or predicate(new):
                for req in {*mapper(old), *mapper(new)}:
                    queue.add(req)

        handler = EventHandler(on_add=enqueue, on_update=update, on_delete=enqueue)
        self._watches.append((informer, handler))
        if self._registered:
            informer.add_handler(handler)
        return self

    # -- running -----------------------------------------------------------------------

    async def run(self) -> None:
        """Wait for the caches, then reconcile until cancelled (the queue shuts down)."""
        if self._primary is None and not self._watches:
            raise RuntimeError(f"controller {self.name} watches nothing")
        if not self._registered:
            self._registered = True
            for informer, handler in self._watches:
                informer.add_handler(handler)
        if not self.informers.started:
            self.informers.start()
        if not await self.informers.wait_for_sync(self.sync_timeout):
            raise TimeoutError(f"controller {self.name}: caches did not sync")
        log.info(
            "starting %d workers for controller %s",
            self.max_concurrent_reconciles,
            self.name,
            extra={"controller": self.name},
        )
        workers = [
            asyncio.create_task(self._worker(), name=f"{self.name} worker {i}")
            for i in range(self.max_concurrent_reconciles)
        ]
        try:
            await asyncio.gather(*workers)
        finally:
            self.queue.shutdown()
            for task in workers:
                task.cancel()
            for task in workers:
                with contextlib.suppress(asyncio.CancelledError):
                    await task
            for informer, handler in self._watches:
                informer.remove_handler(handler)
            self._registered = False
            log.info("controller %s stopped", self.name, extra={"controller": self.name})

    async def _worker(self) -> None:
        queue = self.queue
        while True:
            try:
                req = await queue.get()
            except ShutDown:
                return
            try:
                await self.reconcile_one(req)
            finally:
                queue.done(req)

    async def reconcile_one(self, req: Request) -> None:
        """Reconcile ``req`` once and decide, from the outcome, when to see it again."""
        name, queue, metrics = self.name, self.queue, self.metrics
        fields = _key_fields(name, req)
        token = current_request.set((name, req))
        active = metrics.active_workers.labels(name)
        active.inc()
        started = time.perf_counter()
        try:
            result = await self.reconciler(req) or Result()
        except asyncio.CancelledError:
            raise
        except TerminalError as exc:
            self._total["error"].inc()
            metrics.reconcile_errors.labels(name).inc()
            metrics.terminal_errors.labels(name).inc()
            queue.forget(req)
            log.error(
                "[%s %s] terminal reconciler error, not retrying: %s", name, req, exc, extra=fields
            )
        except Exception as exc:
            self._total["error"].inc()
            metrics.reconcile_errors.labels(name).inc()
            queue.add_rate_limited(req)
            # A 409 means the cache was behind another writer: routine, retried with the
            # fresh object; it is not worth a traceback.
            conflict = getattr(getattr(exc, "status", None), "code", None) == 409
            log.log(
                logging.INFO if conflict else logging.ERROR,
                "[%s %s] reconciler %s (retry %d): %s",
                name,
                req,
                "conflict" if conflict else "error",
                queue.num_requeues(req),
                exc,
                exc_info=not conflict,
                extra=fields,
            )
        else:
            if result.requeue_after is not None and result.requeue_after > 0:
                self._total["requeue_after"].inc()
                queue.forget(req)
                queue.add_after(req, result.requeue_after)
            elif result.requeue:
                self._total["requeue"].inc()
                queue.add_rate_limited(req)
            else:
                self._total["success"].inc()
                queue.forget(req)
            log.debug("[%s %s] reconciled: %s", name, req, result, extra=fields)
        finally:
            metrics.reconcile_time.labels(name).observe(time.perf_counter() - started)
            active.dec()
            current_request.reset(token)
