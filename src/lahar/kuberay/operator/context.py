"""What both reconcilers share: the client, the caches, events, metrics, options.

One :class:`OperatorContext` is built per running operator (see :mod:`.run`); the
reconcilers only read from its caches and write through its client, which is what
lets tests build a context on an in-process API server and drive reconciles one
pass at a time.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import lightkube

from lahar.kube.cache import Cache
from lahar.kube.events import EventRecorder
from lahar.kuberay.operator.dashboard import DashboardPool
from lahar.kuberay.operator.expectations import ScaleExpectations
from lahar.kuberay.operator.metrics import OperatorMetrics
from lahar.kuberay.operator.options import OperatorOptions

CLUSTER_INDEX = "ray-cluster"  # pods by "<namespace>/<ray.io/cluster>"


def by_ray_cluster(obj: dict[str, Any]) -> list[str]:
    md = obj["metadata"]
    cluster = (md.get("labels") or {}).get("ray.io/cluster")
    return [f"{md.get('namespace')}/{cluster}"] if cluster else []


@dataclass
class Caches:
    clusters: Cache
    jobs: Cache
    pods: Cache
    services: Cache
    batch_jobs: Cache
    podgroups: Cache | None = None


@dataclass
class OperatorContext:
    client: lightkube.AsyncClient
    caches: Caches
    recorder: EventRecorder
    metrics: OperatorMetrics
    options: OperatorOptions
    dashboards: DashboardPool
    expectations: ScaleExpectations = field(default_factory=ScaleExpectations)
    served_rbac: set[str] = field(default_factory=set)  # kinds: ServiceAccount, Role, ...

    def now(self) -> float:
        return self.options.clock()

    def cluster_pods(self, namespace: str, cluster: str) -> list[dict[str, Any]]:
        return self.caches.pods.by_index(CLUSTER_INDEX, f"{namespace}/{cluster}")
