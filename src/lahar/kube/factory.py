"""One informer per kind per process, shared by every component that needs it.

When the scheduler, the Volcano controllers and the Ray operator run in one process
(``lahar up``), each of them watches pods. Three informers would mean three lists,
three watches and three copies of every pod. The factory hands out one informer per
(kind, namespace, selectors) and everybody registers handlers and indexes on it. Pass
the same factory to every manager of the process to share.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import lightkube

from lahar.kube.cache import Cache
from lahar.kube.informer import Informer
from lahar.kube.resource import Resource, as_resource

__all__ = ["InformerFactory"]

_Key = tuple[Resource, str | None, str | None, str | None]


class InformerFactory:
    """Shared informers over one client. Informers asked for after :meth:`start` start
    at once; options given here apply to every informer the factory builds."""

    def __init__(
        self,
        client: lightkube.AsyncClient,
        *,
        namespace: str | None = None,
        **informer_options: Any,
    ) -> None:
        self.client = client
        self.namespace = namespace
        self._options = informer_options
        self._informers: dict[_Key, Informer] = {}
        self._started = False

    def informer(
        self,
        resource: Resource | type[Any],
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
    ) -> Informer:
        """The shared informer of ``resource`` (created on first use)."""
        res = as_resource(resource)
        ns = namespace if namespace is not None else self.namespace
        if not res.namespaced:
            ns = None
        key = (res, ns, label_selector, field_selector)
        inf = self._informers.get(key)
        if inf is None:
            inf = Informer(
                self.client,
                res,
                namespace=ns,
                label_selector=label_selector,
                field_selector=field_selector,
                **self._options,
            )
            self._informers[key] = inf
            if self._started:
                inf.start()
        return inf

    def cache(self, resource: Resource | type[Any], **kwargs: Any) -> Cache:
        """The cache of the shared informer of ``resource``."""
        return self.informer(resource, **kwargs).cache

    def __iter__(self) -> Iterator[Informer]:
        return iter(list(self._informers.values()))

    def __len__(self) -> int:
        return len(self._informers)

    @property
    def started(self) -> bool:
        return self._started

    def start(self) -> None:
        """Start every informer (and any asked for later). Needs a running loop."""
        self._started = True
        for inf in self:
            inf.start()

    @property
    def has_synced(self) -> bool:
        return all(inf.has_synced for inf in self)

    async def wait_for_sync(self, timeout: float | None = None) -> bool:
        """Wait until every informer has listed once; False on timeout."""
        informers = list(self)
        if not informers:
            return True
        results = await asyncio.gather(*(inf.wait_for_sync(timeout) for inf in informers))
        return all(results)

    async def stop(self) -> None:
        self._started = False
        await asyncio.gather(*(inf.stop() for inf in self))
