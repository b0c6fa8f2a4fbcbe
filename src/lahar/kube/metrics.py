"""The Prometheus metrics a manager exports, under controller-runtime's names.

Dashboards and alerts written for controller-runtime operators
(``controller_runtime_reconcile_total``, ``workqueue_depth``, ...) work unchanged on
lahar's daemons. Each manager owns its own ``CollectorRegistry``, so several managers
in one process (the embedded cluster, or tests) never collide on a metric name.
"""

from __future__ import annotations

import time
from collections.abc import Hashable

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from lahar.kube.workqueue import QueueMetrics

__all__ = ["ControllerMetrics", "PrometheusQueueMetrics"]

RECONCILE_BUCKETS = (
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.15,
    0.2,
    0.25,
    0.3,
    0.35,
    0.4,
    0.45,
    0.5,
    0.6,
    0.7,
    0.8,
    0.9,
    1.0,
    1.25,
    1.5,
    1.75,
    2.0,
    2.5,
    3.0,
    3.5,
    4.0,
    4.5,
    5,
    6,
    7,
    8,
    9,
    10,
    15,
    20,
    25,
    30,
    40,
    50,
    60,
)
QUEUE_BUCKETS = tuple(1e-8 * 10**i for i in range(10))
RESULTS = ("success", "error", "requeue", "requeue_after")


class ControllerMetrics:
    """Every metric family of one manager, registered in ``registry``."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = r = registry or CollectorRegistry()
        c = ["controller"]
        self.reconcile_total = Counter(
            "controller_runtime_reconcile",
            "Total number of reconciliations per controller",
            [*c, "result"],
            registry=r,
        )
        self.reconcile_errors = Counter(
            "controller_runtime_reconcile_errors",
            "Total number of reconciliation errors per controller",
            c,
            registry=r,
        )
        self.terminal_errors = Counter(
            "controller_runtime_terminal_reconcile_errors",
            "Total number of terminal reconciliation errors per controller",
            c,
            registry=r,
        )
        self.reconcile_time = Histogram(
            "controller_runtime_reconcile_time_seconds",
            "Length of time per reconciliation per controller",
            c,
            buckets=RECONCILE_BUCKETS,
            registry=r,
        )
        self.max_concurrent = Gauge(
            "controller_runtime_max_concurrent_reconciles",
            "Maximum number of concurrent reconciles per controller",
            c,
            registry=r,
        )
        self.active_workers = Gauge(
            "controller_runtime_active_workers",
            "Number of currently used workers per controller",
            c,
            registry=r,
        )
        q = ["name", "controller"]
        self.depth = Gauge("workqueue_depth", "Current depth of workqueue", q, registry=r)
        self.adds = Counter(
            "workqueue_adds", "Total number of adds handled by workqueue", q, registry=r
        )
        self.queue_duration = Histogram(
            "workqueue_queue_duration_seconds",
            "How long in seconds an item stays in workqueue before being requested",
            q,
            buckets=QUEUE_BUCKETS,
            registry=r,
        )
        self.work_duration = Histogram(
            "workqueue_work_duration_seconds",
            "How long in seconds processing an item from workqueue takes",
            q,
            buckets=QUEUE_BUCKETS,
            registry=r,
        )
        self.unfinished = Gauge(
            "workqueue_unfinished_work_seconds",
            "How many seconds of work has been done that is in progress and hasn't been "
            "observed by work_duration",
            q,
            registry=r,
        )
        self.longest = Gauge(
            "workqueue_longest_running_processor_seconds",
            "How many seconds has the longest running processor for workqueue been running",
            q,
            registry=r,
        )
        self.retries = Counter(
            "workqueue_retries", "Total number of retries handled by workqueue", q, registry=r
        )
        self.leader = Gauge(
            "leader_election_master_status",
            "Gauge of if the reporting system is master of the relevant lease, "
            "0 indicates backup, 1 indicates master",
            ["name"],
            registry=r,
        )

    def controller(self, name: str, max_concurrent: int) -> None:
        """Create a controller's series at zero, so they show before the first reconcile."""
        for result in RESULTS:
            self.reconcile_total.labels(name, result)
        self.reconcile_errors.labels(name)
        self.terminal_errors.labels(name)
        self.max_concurrent.labels(name).set(max_concurrent)
        self.active_workers.labels(name).set(0)

    def queue(self, name: str) -> PrometheusQueueMetrics:
        return PrometheusQueueMetrics(self, name)


class PrometheusQueueMetrics(QueueMetrics):
    """Workqueue hooks that feed the ``workqueue_*`` families of one queue."""

    def __init__(self, metrics: ControllerMetrics, name: str) -> None:
        labels = (name, name)
        self._depth = metrics.depth.labels(*labels)
        self._adds = metrics.adds.labels(*labels)
        self._queue_duration = metrics.queue_duration.labels(*labels)
        self._work_duration = metrics.work_duration.labels(*labels)
        self._retries = metrics.retries.labels(*labels)
        self._added_at: dict[Hashable, float] = {}
        self._started_at: dict[Hashable, float] = {}
        metrics.unfinished.labels(*labels).set_function(self._unfinished)
        metrics.longest.labels(*labels).set_function(self._longest)

    def added(self, key: Hashable) -> None:
        self._adds.inc()
        self._depth.inc()
        self._added_at.setdefault(key, time.monotonic())

    def taken(self, key: Hashable) -> None:
        now = time.monotonic()
        self._depth.dec()
        added = self._added_at.pop(key, None)
        if added is not None:
            self._queue_duration.observe(now - added)
        self._started_at[key] = now

    def finished(self, key: Hashable) -> None:
        started = self._started_at.pop(key, None)
        if started is not None:
            self._work_duration.observe(time.monotonic() - started)

    def retried(self, key: Hashable) -> None:
        self._retries.inc()

    def _unfinished(self) -> float:
        now = time.monotonic()
        return sum(now - t for t in self._started_at.values())

    def _longest(self) -> float:
        if not self._started_at:
            return 0.0
        return time.monotonic() - min(self._started_at.values())
