"""The pure rules behind the controllers: tolerations, health taints, the order in
which a Job's extra pods go, the failure backoff, conditions, and the CLI's checks."""

from __future__ import annotations

import math

import pytest

from lahar.cli.main import main
from lahar.controllers import jobpods as jp
from lahar.controllers import taints as tt
from lahar.controllers.common import format_time, parse_time


def test_tolerations_match_taints() -> None:
    unreachable = {"key": tt.UNREACHABLE, "effect": "NoExecute"}
    assert tt.tolerates({"operator": "Exists"}, unreachable)
    assert tt.tolerates({"key": tt.UNREACHABLE, "operator": "Exists"}, unreachable)
    assert not tt.tolerates({"key": tt.NOT_READY, "operator": "Exists"}, unreachable)
    assert not tt.tolerates({"key": tt.UNREACHABLE, "effect": "NoSchedule"}, unreachable)
    valued = {"key": "k", "value": "v", "effect": "NoExecute"}
    assert tt.tolerates({"key": "k", "value": "v"}, valued)
    assert not tt.tolerates({"key": "k", "value": "w"}, valued)
    assert not tt.tolerates({"value": "v"}, valued)  # no key needs Exists


def test_toleration_seconds() -> None:
    taints = [{"key": tt.UNREACHABLE, "effect": "NoExecute"}]
    default = [{"key": tt.UNREACHABLE, "operator": "Exists", "effect": "NoExecute",
                "tolerationSeconds": 300}]  # fmt: skip
    assert tt.toleration_seconds(default, taints) == 300
    assert tt.toleration_seconds([{"operator": "Exists"}], taints) == math.inf
    assert tt.toleration_seconds([], taints) is None
    both = [*taints, {"key": "x", "effect": "NoExecute"}]
    assert tt.toleration_seconds(default, both) is None  # "x" is not tolerated


def test_health_taints_follow_ready() -> None:
    other = {"key": "example.com/x", "effect": "NoSchedule"}
    assert tt.wanted_key("True") is None
    unknown = tt.with_health_taints([other], tt.wanted_key("Unknown"), "T1")
    assert {(t["key"], t["effect"]) for t in unknown} == {
        ("example.com/x", "NoSchedule"),
        (tt.UNREACHABLE, "NoSchedule"),
        (tt.UNREACHABLE, "NoExecute"),
    }
    again = tt.with_health_taints(unknown, tt.UNREACHABLE, "T2")
    assert [t.get("timeAdded") for t in again if t["effect"] == "NoExecute"] == ["T1"]
    swapped = tt.with_health_taints(unknown, tt.wanted_key("False"), "T3")
    assert {t["key"] for t in swapped} == {"example.com/x", tt.NOT_READY}
    assert tt.with_health_taints(swapped, None, "T4") == [other]


def test_deletion_order_prefers_unscheduled_pending_unready_young() -> None:
    def pod(name: str, node: str | None, phase: str, ready: bool, created: str) -> dict:  # type: ignore[type-arg]
        return {
            "metadata": {"name": name, "creationTimestamp": created},
            "spec": {"nodeName": node} if node else {},
            "status": {
                "phase": phase,
                "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
            },
        }

    pods = [
        pod("ready-old", "n", "Running", True, "2026-01-01T00:00:00Z"),
        pod("ready-young", "n", "Running", True, "2026-01-02T00:00:00Z"),
        pod("unready", "n", "Running", False, "2026-01-01T00:00:00Z"),
        pod("pending", "n", "Pending", False, "2026-01-01T00:00:00Z"),
        pod("unscheduled", None, "Pending", False, "2026-01-01T00:00:00Z"),
    ]
    order = [p["metadata"]["name"] for p in sorted(pods, key=jp.deletion_order)]
    assert order == ["unscheduled", "pending", "unready", "ready-young", "ready-old"]


def test_backoff_doubles_up_to_the_cap() -> None:
    assert jp.backoff_delay(0, 10, 360) == 0
    assert [jp.backoff_delay(n, 10, 360) for n in (1, 2, 3, 6, 7)] == [10, 20, 40, 320, 360]


def test_conditions_keep_their_transition_time() -> None:
    status: dict = {}  # type: ignore[type-arg]
    assert jp.set_condition(status, jp.new_condition("Suspended", "JobSuspended", "m", 0))
    assert not jp.set_condition(status, jp.new_condition("Suspended", "JobSuspended", "m", 50))
    assert status["conditions"][0]["lastProbeTime"] == format_time(0)
    resumed = jp.new_condition("Suspended", "JobResumed", "r", 100, status="False")
    assert jp.set_condition(status, resumed)
    assert status["conditions"][0]["lastTransitionTime"] == format_time(100)
    assert parse_time(format_time(100)) == 100


def test_pod_from_template() -> None:
    job = {
        "metadata": {"name": "j", "namespace": "ns", "uid": "u-1"},
        "spec": {
            "template": {
                "metadata": {"labels": {"app": "x"}},
                "spec": {"containers": [{"name": "c", "image": "i"}]},
            }
        },
    }
    pod = jp.build_pod(job, None)
    assert pod["metadata"]["generateName"] == "j-"
    assert pod["metadata"]["labels"]["app"] == "x"
    assert pod["metadata"]["finalizers"] == [jp.TRACKING_FINALIZER]
    indexed = jp.build_pod(job, 3)
    assert indexed["metadata"]["generateName"] == "j-3-"
    assert indexed["spec"]["hostname"] == "j-3"
    assert job["spec"]["template"]["spec"]["containers"][0].get("env") is None  # not mutated


@pytest.mark.parametrize(
    "args",
    [
        ["--controllers", "job,nope"],
        ["--node-monitor-grace-period", "0"],
        ["--terminated-pod-gc-threshold", "-1"],
        ["--kubeconfig", "/nonexistent/kubeconfig"],
    ],
)
def test_cli_usage_errors(args: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["kube-controllers", *args]) == 2
    assert "lahar kube-controllers:" in capsys.readouterr().err
