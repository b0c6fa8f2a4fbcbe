"""Everything that configures one running operator, in one value.

The CLI flags (``--batch-scheduler``, ``--reconcile-concurrency``,
``--leader-elect``, ``--health-port``), KubeRay's operator env vars (the builder
switches in :class:`lahar.kuberay.options.OperatorOptions`, held here as
``build``, plus the RayJob timers and ``DELETE_RAYJOB_CR_AFTER_JOB_FINISHES``) and
the test seams: the wall clock every deadline reads, the HTTP transport of the Ray
dashboard client, and how a dashboard URL becomes an address.

One seam reaches the ``lahar operator`` process through its environment, for tests
only: ``LAHAR_DASHBOARD_OVERRIDE=host:port`` sends every dashboard call to that
address once the head pod is Running with an IP (simulated nodes run no Ray, so an
end-to-end test serves a stand-in Ray Jobs API there). Never set it in production.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import httpx2

from lahar.kuberay.naming import Suffixes
from lahar.kuberay.options import OperatorOptions as BuildOptions

BATCH_SCHEDULERS = ("volcano",)
DASHBOARD_OVERRIDE_ENV = "LAHAR_DASHBOARD_OVERRIDE"  # test seam: "host:port"
LEASE_NAME = "kuberay-operator"


def _seconds(value: str | None, default: float, *, allow_non_positive: bool) -> float:
    try:
        number = float(int(value)) if value is not None else default
    except ValueError:
        return default
    if not allow_non_positive and number <= 0:
        return default
    return number


@dataclass(frozen=True)
class OperatorOptions:
    batch_scheduler: str | None = None
    reconcile_concurrency: int = 4  # KubeRay's default is 1 (pain point 7)
    rayjob_concurrency: int | None = None  # None: same as reconcile_concurrency
    leader_elect: bool = False
    lease_name: str = LEASE_NAME
    lease_namespace: str = "kube-system"
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    health_port: int | None = 0
    build: BuildOptions = field(default_factory=BuildOptions)
    # RayJob timers (KubeRay env vars; seconds)
    submitter_grace: float = 30.0
    transition_grace: float = 300.0  # RAYJOB_DEPLOYMENT_STATUS_TRANSITION_GRACE_PERIOD_SECONDS
    status_check_timeout: float = 300.0  # RAYJOB_STATUS_CHECK_TIMEOUT_SECONDS
    delete_rayjob_after_finish: bool = False  # DELETE_RAYJOB_CR_AFTER_JOB_FINISHES
    # requeue periods (seconds)
    cluster_requeue: float = 300.0  # RAYCLUSTER_DEFAULT_REQUEUE_SECONDS_ENV
    cluster_status_requeue: float = 2.0
    job_requeue: float = 3.0
    # the Ray dashboard
    dashboard_timeout: float = 2.0
    dashboard_max_concurrency: int = 32
    dashboard_transport: httpx2.AsyncBaseTransport | None = None
    prefer_cluster_ip: bool = False
    pod_address: Callable[[dict[str, Any], int], tuple[str, int]] | None = None
    resolve: Callable[[str], Awaitable[str]] | None = None  # replaces the Service resolver
    # test seams
    clock: Callable[[], float] = time.time
    suffixes: Suffixes = field(default_factory=lambda: Suffixes(None))

    def __post_init__(self) -> None:
        if self.batch_scheduler is not None and self.batch_scheduler not in BATCH_SCHEDULERS:
            raise ValueError(
                f"unknown batch scheduler {self.batch_scheduler!r}; supported: {BATCH_SCHEDULERS}"
            )
        if self.reconcile_concurrency < 1:
            raise ValueError("reconcile_concurrency must be at least 1")

    @property
    def volcano(self) -> bool:
        return self.batch_scheduler == "volcano"

    @property
    def job_workers(self) -> int:
        return self.rayjob_concurrency or self.reconcile_concurrency

    @classmethod
    def from_env(cls, env: Mapping[str, str], **overrides: Any) -> OperatorOptions:
        values: dict[str, Any] = {
            "build": BuildOptions.from_env(env),
            "transition_grace": _seconds(
                env.get("RAYJOB_DEPLOYMENT_STATUS_TRANSITION_GRACE_PERIOD_SECONDS"),
                300.0,
                allow_non_positive=True,
            ),
            "status_check_timeout": _seconds(
                env.get("RAYJOB_STATUS_CHECK_TIMEOUT_SECONDS"), 300.0, allow_non_positive=False
            ),
            "cluster_requeue": _seconds(
                env.get("RAYCLUSTER_DEFAULT_REQUEUE_SECONDS_ENV"), 300.0, allow_non_positive=False
            ),
            "delete_rayjob_after_finish": (
                env.get("DELETE_RAYJOB_CR_AFTER_JOB_FINISHES", "").lower() == "true"
            ),
        }
        override = env.get(DASHBOARD_OVERRIDE_ENV)
        if override:
            values["pod_address"] = dashboard_override(override)
        values.update(overrides)
        return cls(**values)


def dashboard_override(address: str) -> Callable[[dict[str, Any], int], tuple[str, int]]:
    """A ``pod_address`` that maps every head pod to ``host:port`` (the test seam)."""
    host, sep, port = address.rpartition(":")
    if not sep or not host or not port.isdigit():
        raise ValueError(f"{DASHBOARD_OVERRIDE_ENV} must be host:port, got {address!r}")

    def pod_address(_pod: dict[str, Any], _port: int) -> tuple[str, int]:
        return host, int(port)

    return pod_address
