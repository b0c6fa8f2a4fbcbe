"""sla: waiting-time deadlines order jobs and force admission once passed."""

from __future__ import annotations

from datetime import datetime

from lahar.scheduler.framework.conf import default_conf
from lahar.scheduler.plugins.sla import parse_duration
from lahar.scheduler.run import run_session
from lahar.scheduler.snapshot import build_cluster
from tests.scheduler.builders import conf, node, pod, podgroup, queue

NOW = datetime.fromisoformat("2026-06-01T12:00:00+00:00").timestamp()
SLA = conf("enqueue, allocate", ["priority", "gang", "sla"], ["overcommit", "drf", "proportion"])


def with_sla(pg: dict, wait: str) -> dict:
    pg["metadata"]["annotations"] = {"volcano.sh/sla-waiting-time": wait}
    return pg


def test_parse_go_durations() -> None:
    assert parse_duration("1h30m") == 5400
    assert parse_duration("250ms") == 0.25
    assert parse_duration("1x") is None and parse_duration("") is None


def test_deadline_passed_overrides_queue_quota_in_later_tier() -> None:
    objs = [
        node("n1", cpu="8"),
        queue("q", capability={"cpu": "1"}),
        with_sla(
            podgroup(
                "late", 1, queue="q", min_resources={"cpu": "2"}, created="2026-06-01T10:00:00Z"
            ),
            "1h",
        ),
        pod("late-0", "late", cpu="2"),
        podgroup("fresh", 1, queue="q", min_resources={"cpu": "2"}, created="2026-06-01T11:59:00Z"),
        pod("fresh-0", "fresh", cpu="2"),
    ]
    ssn, result = run_session(build_cluster(objs), SLA, now=NOW)
    assert result.pod_groups["default/late"]["phase"] == "Inqueue"
    assert result.pod_groups["default/fresh"]["phase"] == "Pending"
    assert default_conf()  # the default configuration has no sla
    del ssn


def test_jobs_with_deadlines_go_first() -> None:
    objs = [
        node("n1", cpu="1"),
        podgroup("plain", 1, phase="Inqueue", created="2026-01-01T00:00:00Z"),
        pod("plain-0", "plain", cpu="1"),
        with_sla(podgroup("urgent", 1, phase="Inqueue", created="2026-06-01T11:00:00Z"), "10m"),
        pod("urgent-0", "urgent", cpu="1"),
    ]
    cfg = conf("allocate", ["sla", "gang"], ["drf"])
    _ssn, result = run_session(build_cluster(objs), cfg, now=NOW)
    assert result.binds == {"default/urgent-0": "n1"}
