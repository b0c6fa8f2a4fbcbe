"""The settings of the built-in controllers, with kube-controller-manager's defaults.

One dataclass, so that ``lahar kube-controllers`` flags, ``lahar up`` and tests that
want second-scale timings all configure the same thing in the same words.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from lahar.controllers.common import Clock, wall


@dataclass
class ControllerOptions:
    """Timings in seconds. Defaults are the upstream ones (flag names in comments)."""

    # --concurrent-job-syncs
    job_workers: int = 5
    # the delay before replacing a failed pod doubles from this, up to the cap
    job_backoff_base: float = 10.0
    job_backoff_cap: float = 360.0
    # how long an unobserved create/delete holds a key's syncs back
    expectations_timeout: float = 300.0
    # --node-monitor-grace-period: a node whose lease is this old is unreachable
    node_monitor_grace_period: float = 40.0
    # --node-startup-grace-period: the same, for a node that never reported Ready
    node_startup_grace_period: float = 60.0
    # how often node health is re-checked when nothing changes
    node_monitor_period: float = 5.0
    # --terminated-pod-gc-threshold (0 disables the terminated-pod part)
    terminated_pod_gc_threshold: int = 12500
    pod_gc_period: float = 20.0
    # how long a pod's node must have been missing before the pod is collected
    orphan_quarantine: float = 40.0
    # leader election on the Lease kube-system/lahar-controller-manager
    leader_elect: bool = True
    lease_name: str = "lahar-controller-manager"
    lease_namespace: str = "kube-system"
    # the probe/metrics endpoint's port (0: any free one; None: none)
    health_port: int | None = 0
    # which controllers to run
    controllers: tuple[str, ...] = ("job", "nodelifecycle", "podgc", "namespace")
    namespace_retry_period: float = 1.0  # re-check a namespace still being emptied
    clock: Clock = field(default=wall, repr=False)

    @classmethod
    def fast(cls, **overrides: object) -> ControllerOptions:
        """Sub-second timings for tests."""
        base: dict[str, object] = {
            "job_backoff_base": 0.05,
            "job_backoff_cap": 0.5,
            "expectations_timeout": 10.0,
            "node_monitor_grace_period": 1.0,
            "node_startup_grace_period": 1.0,
            "node_monitor_period": 0.2,
            "pod_gc_period": 0.2,
            "orphan_quarantine": 0.0,
            "leader_elect": False,
            "health_port": None,
        }
        base.update(overrides)
        return cls(**base)  # type: ignore[arg-type]
