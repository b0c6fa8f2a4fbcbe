"""The operator's Prometheus metrics, under KubeRay's names (KubeRay >= 1.4).

Dashboards built for KubeRay read ``kuberay_cluster_info``,
``kuberay_cluster_condition_provisioned``,
``kuberay_cluster_provisioned_duration_seconds``, ``kuberay_job_info``,
``kuberay_job_deployment_status`` and ``kuberay_job_execution_duration_seconds``
with the same labels; they are registered on the manager's registry, so they are
served on its ``/metrics`` next to the ``controller_runtime_*`` ones. Series of a
deleted object are removed when its reconcile finds it gone. lahar adds two of its
own: dashboard calls by outcome and submissions made by the operator.
"""

from __future__ import annotations

import contextlib

from prometheus_client import CollectorRegistry, Counter, Gauge

DEPLOYMENT_STATUSES = (
    "New", "Initializing", "Running", "Complete", "Failed", "Suspending", "Suspended",
    "Retrying", "Waiting", "ValidationFailed",
)  # fmt: skip


class OperatorMetrics:
    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        r = registry or CollectorRegistry()
        self.registry = r
        self.cluster_info = Gauge(
            "kuberay_cluster_info",
            "Metadata information about RayCluster custom resources",
            ["name", "namespace", "owner_kind"],
            registry=r,
        )
        self.cluster_provisioned = Gauge(
            "kuberay_cluster_condition_provisioned",
            "Whether the RayCluster is provisioned",
            ["name", "namespace", "condition"],
            registry=r,
        )
        self.cluster_provisioned_duration = Gauge(
            "kuberay_cluster_provisioned_duration_seconds",
            "Seconds from the RayCluster's creation until RayClusterProvisioned turned true",
            ["name", "namespace"],
            registry=r,
        )
        self.job_info = Gauge(
            "kuberay_job_info",
            "Metadata information about RayJob custom resources",
            ["name", "namespace"],
            registry=r,
        )
        self.job_deployment_status = Gauge(
            "kuberay_job_deployment_status",
            "The RayJob's current deployment status",
            ["name", "namespace", "deployment_status"],
            registry=r,
        )
        self.job_execution_duration = Gauge(
            "kuberay_job_execution_duration_seconds",
            "Seconds from Initializing to Retrying or a terminal deployment status",
            ["name", "namespace", "job_deployment_status", "retry_count"],
            registry=r,
        )
        self.dashboard_calls = Counter(
            "lahar_operator_dashboard_calls_total",
            "Ray dashboard calls made by the operator, by call and outcome",
            ["call", "outcome"],
            registry=r,
        )
        self.submissions = Counter(
            "lahar_operator_job_submissions_total",
            "Ray job submissions made by the operator (HTTPMode)",
            registry=r,
        )
        self._job_series: dict[tuple[str, str], set[tuple[str, str]]] = {}

    def observe_cluster(
        self, name: str, namespace: str, owner_kind: str, provisioned: bool
    ) -> None:
        self.cluster_info.labels(name, namespace, owner_kind).set(1)
        self.cluster_provisioned.labels(name, namespace, "true" if provisioned else "false").set(1)
        with contextlib.suppress(KeyError):
            self.cluster_provisioned.remove(name, namespace, "false" if provisioned else "true")

    def forget_cluster(self, name: str, namespace: str) -> None:
        for owner in ("RayJob", "RayService", "None"):
            with contextlib.suppress(KeyError):
                self.cluster_info.remove(name, namespace, owner)
        for cond in ("true", "false"):
            with contextlib.suppress(KeyError):
                self.cluster_provisioned.remove(name, namespace, cond)
        with contextlib.suppress(KeyError):
            self.cluster_provisioned_duration.remove(name, namespace)

    def observe_job(self, name: str, namespace: str, deployment_status: str) -> None:
        self.job_info.labels(name, namespace).set(1)
        for status in DEPLOYMENT_STATUSES:
            value = 1 if status == (deployment_status or "New") else 0
            self.job_deployment_status.labels(name, namespace, status).set(value)

    def job_finished_attempt(
        self, name: str, namespace: str, status: str, retry_count: int, seconds: float
    ) -> None:
        labels = (status, str(retry_count))
        self.job_execution_duration.labels(name, namespace, *labels).set(seconds)
        self._job_series.setdefault((name, namespace), set()).add(labels)

    def forget_job(self, name: str, namespace: str) -> None:
        with contextlib.suppress(KeyError):
            self.job_info.remove(name, namespace)
        for status in DEPLOYMENT_STATUSES:
            with contextlib.suppress(KeyError):
                self.job_deployment_status.remove(name, namespace, status)
        for labels in self._job_series.pop((name, namespace), set()):
            with contextlib.suppress(KeyError):
                self.job_execution_duration.remove(name, namespace, *labels)
