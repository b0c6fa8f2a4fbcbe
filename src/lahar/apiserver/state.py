"""Everything one running API server holds, wired together in one place."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from lahar.apiserver.admission import AdmissionChain
from lahar.apiserver.deletion import DeletionService
from lahar.apiserver.logs import LogRouter
from lahar.apiserver.metrics import Metrics
from lahar.apiserver.objects import ObjectService
from lahar.apiserver.openapi_http import OpenAPIService
from lahar.apiserver.registry import Registry
from lahar.apiserver.store import Store
from lahar.apiserver.watch import WatchHub


@dataclass
class ServerState:
    store: Store
    hub: WatchHub
    registry: Registry
    objects: ObjectService
    deletion: DeletionService
    openapi: OpenAPIService
    logs: LogRouter
    metrics: Metrics
    token: str | None
    bookmark_interval: float = 5.0
    ready: bool = False
    extra: dict[str, object] = field(default_factory=dict)

    @classmethod
    def open(
        cls,
        data_dir: Path,
        *,
        token: str | None,
        admission: AdmissionChain | None = None,
        window: int = 20000,
    ) -> ServerState:
        data_dir.mkdir(parents=True, exist_ok=True)
        store = Store(data_dir / "lahar.db", window=window)
        registry = Registry()
        for crd in store.list("customresourcedefinitions.apiextensions.k8s.io")[0]:
            registry.set_crd(crd)
        objects = ObjectService(store, registry, admission or AdmissionChain())
        return cls(
            store=store,
            hub=WatchHub(store),
            registry=registry,
            objects=objects,
            deletion=DeletionService(objects),
            openapi=OpenAPIService(registry),
            logs=LogRouter(),
            metrics=Metrics(),
            token=token,
        )
