"""End-to-end flows: a tiny in-memory executor applies each Plan, like the reconciler will,
and a stand-in scheduler/kubelet moves PodGroups and pods along."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

from lahar.volcano.jobs import Plan, Request, plan
from tests.volcano.helpers import task
from tests.volcano.jobfix import NOW, vcjob

Obj = dict[str, Any]


@dataclass
class World:
    job: Obj
    pods: dict[str, Obj] = field(default_factory=dict)
    podgroup: Obj | None = None
    objects: dict[tuple[str, str], Obj] = field(default_factory=dict)
    deleted_podgroups: int = 0

    def reconcile(self, *requests: Request) -> Plan:
        p = plan(self.job, list(self.pods.values()), self.podgroup, NOW, requests)
        if p.create_podgroup is not None:
            self.podgroup = copy.deepcopy(p.create_podgroup)
        if p.update_podgroup is not None:
            self.podgroup = copy.deepcopy(p.update_podgroup)
        if p.delete_podgroup:
            self.podgroup = None
            self.deleted_podgroups += 1
        for obj in p.apply_objects:
            self.objects[(obj["kind"], obj["metadata"]["name"])] = obj
        for obj in p.delete_objects:
            self.objects.pop((obj["kind"], obj["metadata"]["name"]), None)
        for pod in p.create_pods:
            self.pods[pod["metadata"]["name"]] = {
                **copy.deepcopy(pod),
                "status": {"phase": "Pending"},
            }
        for name in p.delete_pods:
            self.pods[name]["metadata"]["deletionTimestamp"] = "2026-11-29T12:00:00Z"
        self.job = {**self.job, "status": p.status}
        return p

    def enqueue(self) -> None:
        assert self.podgroup is not None
        self.podgroup["status"] = {"phase": "Inqueue"}

    def set_phase(self, phase: str, *names: str) -> None:
        for name in names or list(self.pods):
            if not self.pods[name]["metadata"].get("deletionTimestamp"):
                self.pods[name]["status"] = {"phase": phase}

    def finish_deletions(self) -> None:
        self.pods = {
            n: p for n, p in self.pods.items() if not p["metadata"].get("deletionTimestamp")
        }

    @property
    def phase(self) -> str:
        return self.job["status"]["state"]["phase"]


def test_happy_path_to_completed() -> None:
    w = World(vcjob(task("ps", 1), task("worker", 2), plugins={"svc": [], "env": []}))
    w.reconcile()
    assert w.phase == "Pending" and w.podgroup is not None and not w.pods
    assert set(w.objects) == {("ConfigMap", "j-svc"), ("Service", "j"), ("NetworkPolicy", "j")}
    w.enqueue()
    w.reconcile()
    assert sorted(w.pods) == ["j-ps-0", "j-worker-0", "j-worker-1"]
    w.set_phase("Running")
    w.reconcile()
    assert w.phase == "Running" and w.job["status"]["running"] == 3
    w.set_phase("Succeeded")
    w.reconcile()
    assert w.phase == "Completed"
    assert w.job["status"]["succeeded"] == 3
    # The first reconcile in Completed cleans up like Volcano's kill: the PodGroup and
    # the svc objects go; after that Completed is a fixed point.
    p = w.reconcile()
    assert p.delete_podgroup and w.podgroup is None and not w.objects
    before = copy.deepcopy(w.job["status"])
    p = w.reconcile()
    assert not p.create_pods and not p.delete_pods
    assert w.job["status"] == before


def test_eviction_restarts_the_gang_until_max_retry() -> None:
    w = World(
        vcjob(
            task("worker", 2),
            maxRetry=2,
            policies=[{"event": "PodEvicted", "action": "RestartJob"}],
        )
    )
    w.reconcile()
    for attempt in (1, 2):
        w.enqueue()
        w.reconcile()
        w.set_phase("Running")
        w.reconcile()
        assert w.phase == "Running"
        w.reconcile(Request(event="PodEvicted", task="worker", pod="j-worker-0"))
        assert w.phase == "Restarting"
        assert w.job["status"]["retryCount"] == attempt
        assert w.podgroup is None  # the gang is enqueued again from scratch
        w.finish_deletions()
        w.reconcile()
        if attempt == 1:
            assert w.phase == "Pending" and w.podgroup is not None
            assert not w.pods  # new pods wait for the new PodGroup to be enqueued
    assert w.phase == "Failed"
    assert w.deleted_podgroups == 2


def test_abort_then_resume() -> None:
    w = World(vcjob(task("worker", 2)))
    w.reconcile()
    w.enqueue()
    w.reconcile()
    w.set_phase("Running")
    w.reconcile()
    w.reconcile(Request(action="AbortJob"))
    assert w.phase == "Aborting"
    w.reconcile()
    assert w.phase == "Aborting"  # pods still terminating
    w.finish_deletions()
    w.reconcile()
    assert w.phase == "Aborted"
    w.reconcile(Request(action="ResumeJob"))
    assert w.phase == "Restarting"
    w.reconcile()
    assert w.phase == "Pending"
    w.enqueue()
    w.reconcile()
    assert len(w.pods) == 2
