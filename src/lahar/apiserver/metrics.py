"""Prometheus metrics of the API server, with the real server's metric names."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST

if TYPE_CHECKING:
    from lahar.apiserver.routing import Route
    from lahar.apiserver.state import ServerState

_MAX_CHILDREN = 10_000  # label sets remembered (each is a metric series anyway)
_VERBS = {"GET": "GET", "POST": "POST", "PUT": "PUT", "PATCH": "PATCH", "DELETE": "DELETE"}


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter(
            "apiserver_request_total",
            "Requests by verb, group, resource, subresource and HTTP code.",
            ["verb", "group", "resource", "subresource", "code"],
            registry=self.registry,
        )
        self.latency = Histogram(
            "apiserver_request_duration_seconds",
            "Response latency by verb and resource.",
            ["verb", "group", "resource"],
            buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 60),
            registry=self.registry,
        )
        self.watchers = Gauge(
            "apiserver_registered_watchers",
            "Open watches by resource.",
            ["group", "resource"],
            registry=self.registry,
        )
        self.objects = Gauge(
            "apiserver_storage_objects",
            "Stored objects by resource.",
            ["resource"],
            registry=self.registry,
        )
        self._children: dict[tuple[str, str, str, str, int], tuple[Any, Any]] = {}
        self.rv = Gauge(
            "lahar_apiserver_resource_version",
            "Current global resourceVersion.",
            registry=self.registry,
        )

    def observe(self, method: str, route: Route | None, code: int, seconds: float) -> None:
        rt = route.resource if route else None
        group, resource = (rt.group, rt.plural) if rt else ("", "")
        sub = route.subresource if route else ""
        verb = _VERBS.get(method, method)
        key = (verb, group, resource, sub, code)
        children = self._children.get(key)
        if children is None:
            # ``labels()`` validates and stringifies its arguments and takes a lock on
            # every call; the children for a label set never change, so keep them.
            counter = self.requests.labels(verb, group, resource, sub, str(code))
            latency = self.latency.labels(verb, group, resource) if rt is not None else None
            children = (counter, latency)
            if len(self._children) < _MAX_CHILDREN:
                self._children[key] = children
        children[0].inc()
        if children[1] is not None:
            children[1].observe(seconds)

    def render(self, state: ServerState) -> tuple[bytes, str]:
        for gr in state.store.list_resources():
            self.objects.labels(gr).set(state.store.count(gr))
        self.rv.set(state.store.current_rv())
        return generate_latest(self.registry), CONTENT_TYPE_LATEST
