"""The scheduler's Prometheus metrics, under Volcano's names (``volcano_*``).

Dashboards and alerts written for Volcano's scheduler read lahar's unchanged. The
families live in the daemon manager's own registry, so they are served on the same
``/metrics`` endpoint as the runtime's metrics and two schedulers in one process (tests)
never collide.

Names follow volcano-semantics §11 (Volcano's current source: latencies in
milliseconds). Older Volcano releases exported the action and plugin latencies in
microseconds (``..._latency_microseconds``); both spellings are exported, since
dashboards of either vintage exist. ``volcano_plugin_scheduling_latency_*`` carries one
series per ``OnSession`` phase with ``plugin="all"``: the session core has no per-plugin
timing hook yet.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

__all__ = ["SchedulerMetrics"]

# Volcano: prometheus.ExponentialBuckets(5, 2, 10) for latencies in ms
MS_BUCKETS = tuple(5.0 * 2**i for i in range(10))
US_BUCKETS = tuple(5.0 * 2**i for i in range(20))


class SchedulerMetrics:
    """Every ``volcano_*`` family the scheduler exports, registered in ``registry``."""

    def __init__(
        self, registry: CollectorRegistry | None = None, *, queue_counts: bool = True
    ) -> None:
        self.registry = r = registry or CollectorRegistry()
        self.e2e = Histogram(
            "volcano_e2e_scheduling_latency_milliseconds",
            "E2e scheduling latency in milliseconds (scheduling algorithm + binding)",
            buckets=MS_BUCKETS,
            registry=r,
        )
        self.open_session = Histogram(
            "volcano_open_session_duration_milliseconds",
            "Duration of opening a session (snapshot and plugins) in milliseconds",
            buckets=MS_BUCKETS,
            registry=r,
        )
        self.e2e_job = Histogram(
            "volcano_e2e_job_scheduling_latency_milliseconds",
            "E2e job scheduling latency in milliseconds",
            buckets=tuple(5.0 * 2**i for i in range(16)),
            registry=r,
        )
        job_labels = ["job_name", "queue", "job_namespace"]
        self.job_duration = Gauge(
            "volcano_e2e_job_scheduling_duration",
            "E2e job scheduling duration",
            job_labels,
            registry=r,
        )
        self.job_start = Gauge(
            "volcano_e2e_job_scheduling_start_time",
            "E2e job scheduling start time",
            job_labels,
            registry=r,
        )
        self.job_last = Gauge(
            "volcano_e2e_job_scheduling_last_time",
            "E2e job scheduling last time",
            job_labels,
            registry=r,
        )
        self.action_ms = Histogram(
            "volcano_action_scheduling_latency_milliseconds",
            "Action scheduling latency in milliseconds",
            ["action"],
            buckets=MS_BUCKETS,
            registry=r,
        )
        self.action_us = Histogram(
            "volcano_action_scheduling_latency_microseconds",
            "Action scheduling latency in microseconds (older Volcano name)",
            ["action"],
            buckets=US_BUCKETS,
            registry=r,
        )
        self.plugin_ms = Histogram(
            "volcano_plugin_scheduling_latency_milliseconds",
            "Plugin scheduling latency in milliseconds",
            ["plugin", "OnSession"],
            buckets=MS_BUCKETS,
            registry=r,
        )
        self.plugin_us = Histogram(
            "volcano_plugin_scheduling_latency_microseconds",
            "Plugin scheduling latency in microseconds (older Volcano name)",
            ["plugin", "OnSession"],
            buckets=US_BUCKETS,
            registry=r,
        )
        self.task_latency = Histogram(
            "volcano_task_scheduling_latency_milliseconds",
            "Task scheduling latency in milliseconds (from pod creation to each stage)",
            ["stage"],
            buckets=tuple(5.0 * 2**i for i in range(16)),
            registry=r,
        )
        self.stage = Histogram(
            "volcano_scheduling_stage_duration_milliseconds",
            "Duration of a scheduling stage in milliseconds",
            ["stage"],
            buckets=MS_BUCKETS,
            registry=r,
        )
        self.attempts = Counter(
            "volcano_schedule_attempts",
            "Number of attempts to schedule pods, by the result. 'unschedulable' means a pod "
            "could not be scheduled, while 'error' means an internal scheduler problem.",
            ["result"],
            registry=r,
        )
        for result in ("scheduled", "unschedulable", "error"):
            self.attempts.labels(result)
        self.victims = Gauge(
            "volcano_pod_preemption_victims",
            "Number of selected preemption victims",
            registry=r,
        )
        self.preemption_attempts = Counter(
            "volcano_total_preemption_attempts",
            "Total preemption attempts in the cluster till now",
            registry=r,
        )
        self.evictions = Counter(
            "volcano_eviction_transactions",
            "Evictions decided by the scheduler, by the action that decided them",
            ["action"],
            registry=r,
        )
        self.unschedule_tasks = Gauge(
            "volcano_unschedule_task_count",
            "Number of tasks that could not be scheduled",
            ["job_id"],
            registry=r,
        )
        self.unschedule_jobs = Gauge(
            "volcano_unschedule_job_count",
            "Number of jobs that could not be scheduled",
            registry=r,
        )
        q = ["queue_name"]
        qr = ["queue_name", "resource"]
        self.queue: dict[str, tuple[Gauge, Gauge, Gauge]] = {}
        for what in ("allocated", "request", "deserved", "capacity"):
            self.queue[what] = (
                Gauge(
                    f"volcano_queue_{what}_milli_cpu",
                    f"{what.title()} CPU of the queue in milli cores",
                    q,
                    registry=r,
                ),
                Gauge(
                    f"volcano_queue_{what}_memory_bytes",
                    f"{what.title()} memory of the queue in bytes",
                    q,
                    registry=r,
                ),
                Gauge(
                    f"volcano_queue_{what}_scalar_resources",
                    f"{what.title()} scalar resources of the queue (milli units)",
                    qr,
                    registry=r,
                ),
            )
        self.queue_share = Gauge("volcano_queue_share", "Share of the queue", q, registry=r)
        self.queue_weight = Gauge("volcano_queue_weight", "Weight of the queue", q, registry=r)
        self.queue_overused = Gauge(
            "volcano_queue_overused", "Whether the queue is overused (1) or not (0)", q, registry=r
        )
        # the queue controller's gauges; exported here only when the scheduler also
        # writes the counts (SchedulerOptions.queue_counts), so a registry shared with
        # the queue controller never holds them twice
        self.queue_pg: dict[str, Gauge] = (
            {
                phase: Gauge(
                    f"volcano_queue_pod_group_{phase}_count",
                    f"Number of {phase} PodGroups in the queue",
                    q,
                    registry=r,
                )
                for phase in ("inqueue", "pending", "running", "unknown", "completed")
            }
            if queue_counts
            else {}
        )
        # lahar's own figures about the daemon itself
        self.sessions = Counter(
            "lahar_scheduler_sessions", "Scheduling sessions run", ["result"], registry=r
        )
        self.binds_in_flight = Gauge(
            "lahar_scheduler_binds_in_flight", "Binds dispatched and not yet answered", registry=r
        )
        self.config_reloads = Counter(
            "lahar_scheduler_config_reloads",
            "Scheduler configuration reloads, by result",
            ["result"],
            registry=r,
        )
