"""Live scheduling, end to end: kubectl against ``lahar up`` with simulated nodes.

Everything goes through real processes and the real protocol: Queues and Volcano
Jobs applied with kubectl, the Volcano controllers making PodGroups and pods, the
scheduler binding them, the simulated nodes running them. Each test gets its own
cluster (4 nodes of 4 CPU / 8 Gi unless it says otherwise) so that queue shares and
evictions of one test cannot leak into another; the admission tests share one
cluster without nodes.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.e2e.cluster import KUBECTL, Cluster
from tests.e2e.faultproxy import FaultProxy
from tests.e2e.simcluster import SimCluster, wait_for
from tests.e2e.volcano_objects import (
    PREEMPT_RECLAIM_CONF,
    PRIORITY_CLASSES,
    gang_pod,
    podgroup,
    queue,
    vcjob,
)

pytestmark = pytest.mark.skipif(not os.path.exists(KUBECTL), reason="kubectl not installed")


def pods_of(c: SimCluster, job: str) -> list[dict[str, Any]]:
    items = c.get_json("pods", "-n", "default", "-l", f"volcano.sh/job-name={job}")["items"]
    return [p for p in items if not p["metadata"].get("deletionTimestamp")]


def running(c: SimCluster, job: str, n: int) -> bool:
    pods = pods_of(c, job)
    return sum((p.get("status") or {}).get("phase") == "Running" for p in pods) >= n


def podgroup_of(c: SimCluster, job: str) -> dict[str, Any]:
    items = c.get_json("podgroups", "-n", "default", "-l", f"volcano.sh/job-name={job}")["items"]
    assert len(items) == 1, items
    return items[0]  # type: ignore[no-any-return]


def condition(obj: dict[str, Any], kind: str) -> dict[str, Any] | None:
    for cond in (obj.get("status") or {}).get("conditions") or ():
        if cond.get("type") == kind and cond.get("status") == "True":
            return cond  # type: ignore[no-any-return]
    return None


def evict_events(c: SimCluster) -> list[dict[str, Any]]:
    return c.get_json("events", "-n", "default", "--field-selector", "reason=Evict")["items"]  # type: ignore[no-any-return]


@pytest.fixture
def tmp_data() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="lahar-live-"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def sim(tmp_data: Path) -> Iterator[SimCluster]:
    c = SimCluster(tmp_data / "data")
    try:
        yield c.start()
    finally:
        c.cleanup()


@pytest.fixture
def sim_preempt(tmp_data: Path) -> Iterator[SimCluster]:
    conf = tmp_data / "volcano-scheduler.conf"
    conf.write_text(PREEMPT_RECLAIM_CONF)
    c = SimCluster(tmp_data / "data", up_args=("--scheduler-conf", str(conf)))
    try:
        yield c.start()
    finally:
        c.cleanup()


def test_two_queues_run_and_a_gang_is_never_partly_placed(sim: SimCluster) -> None:
    c = sim
    c.cluster.apply_yaml([queue("qa", 1), queue("qb", 3)])
    c.cluster.apply_yaml([vcjob("ja", "qa", 2, 2, "1"), vcjob("jb", "qb", 2, 2, "1")])
    wait_for(lambda: running(c, "ja", 2) and running(c, "jb", 2), 30, "ja and jb Running")
    # 14 CPU idle, but in pieces of 3 and 4: four 2.5-CPU pods fit, a gang of five does not.
    c.cluster.apply_yaml(vcjob("frag", "qb", 5, 5, "2500m"))
    wait_for(lambda: len(pods_of(c, "frag")) == 5, 30, "the frag pods to be created")
    # The condition first says the pods do not exist yet, then why the gang cannot be placed.
    cond = wait_for(
        lambda: (
            "placed"
            in (condition(podgroup_of(c, "frag"), "Unschedulable") or {}).get("message", "")
            and condition(podgroup_of(c, "frag"), "Unschedulable")
        ),
        30,
        "the Unschedulable condition to explain the placement",
    )
    assert "gang short by 5 tasks (0 of minMember 5 placed)" in cond["message"], cond
    assert cond["reason"] == "Unschedulable", cond
    for _ in range(5):  # several sessions later, still not one pod of the gang bound
        assert not any(p["spec"].get("nodeName") for p in pods_of(c, "frag"))
        time.sleep(0.5)
    assert podgroup_of(c, "frag")["status"]["phase"] in ("Pending", "Inqueue")
    # The pods say it too, in kube-scheduler's words.
    pod = pods_of(c, "frag")[0]
    sched = [x for x in pod["status"].get("conditions") or () if x["type"] == "PodScheduled"]
    assert sched and sched[0]["status"] == "False" and sched[0]["reason"] == "Unschedulable"
    assert running(c, "ja", 2) and running(c, "jb", 2)


def test_a_gang_larger_than_the_cluster_explains_itself(sim: SimCluster) -> None:
    c = sim
    c.cluster.apply_yaml(vcjob("huge", "default", 5, 5, "4"))  # 20 CPU on a 16-CPU cluster
    time.sleep(3)
    assert pods_of(c, "huge") == [] or not any(
        p["spec"].get("nodeName") for p in pods_of(c, "huge")
    )
    pg = podgroup_of(c, "huge")
    assert pg["status"]["phase"] == "Pending"
    cond = wait_for(lambda: condition(podgroup_of(c, "huge"), "Unschedulable"), 5, "condition")
    # lahar writes the same explanation `lahar schedule -o text` gives.
    assert "enqueue rejected the PodGroup" in cond["message"], cond


def test_queue_shares_follow_the_weights(sim: SimCluster, tmp_data: Path) -> None:
    c = sim
    c.cluster.apply_yaml([queue("qa", 1), queue("qb", 3)])
    # Each queue asks for the whole cluster (8 x 2 CPU = 16 CPU): saturated. Plain
    # PodGroups and pods (a vcjob makes its pods only once enqueued, so most of the
    # demand would not exist as pods for proportion to see).
    docs = []
    for q in ("qa", "qb"):
        for i in range(8):
            docs.append(podgroup(f"{q}-{i}", q, 1))
            docs.append(gang_pod(f"{q}-{i}", f"{q}-{i}-0", "2"))
    c.cluster.apply_yaml(docs)
    wait_for(lambda: len(c.get_json("pods", "-n", "default")["items"]) == 16, 30, "16 pods")
    dump = tmp_data / "dump.yaml"
    dump.write_text(
        c.kubectl("get", "nodes,pods,podgroups,queues,priorityclasses", "-A", "-o", "yaml").stdout
    )
    out = subprocess.run(
        [sys.executable, "-m", "lahar.cli.main", "schedule", "-f", str(dump), "-o", "json"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    queues = json.loads(out.stdout)["queues"]
    from lahar.api.quantity import parse_quantity

    qa = parse_quantity(queues["qa"]["deserved"]["cpu"])
    qb = parse_quantity(queues["qb"]["deserved"]["cpu"])
    assert (qa, qb) == (4, 12), queues  # 16 CPU split 1:3
    # The live cluster never gives a queue more CPU than the cluster has, and every
    # pod that runs belongs to a whole gang (minAvailable 1 here: each pod is one).
    total = 0.0
    for p in c.get_json("pods", "-n", "default")["items"]:
        if p["spec"].get("nodeName"):
            total += float(
                parse_quantity(p["spec"]["containers"][0]["resources"]["requests"]["cpu"])
            )
    assert total <= 16


def test_preemption_evicts_low_priority_pods_of_the_same_queue(sim_preempt: SimCluster) -> None:
    c = sim_preempt
    c.cluster.apply_yaml([*PRIORITY_CLASSES, queue("qp", 1)])
    c.cluster.apply_yaml(vcjob("low", "qp", 4, 1, "3", priority="low"))
    wait_for(lambda: running(c, "low", 4), 30, "4 low pods Running")
    c.cluster.apply_yaml(vcjob("high", "qp", 2, 2, "3", priority="high"))
    wait_for(lambda: running(c, "high", 2), 40, "the high-priority gang Running")
    events = evict_events(c)
    evicted = {e["involvedObject"]["name"] for e in events if e["involvedObject"]["kind"] == "Pod"}
    assert len(evicted) >= 2 and all(n.startswith("low-") for n in evicted), events
    assert any("preempt" in e["message"] for e in events), events
    assert sum(p["spec"].get("nodeName") is not None for p in pods_of(c, "low")) <= 2


def test_reclaim_takes_back_from_an_overused_reclaimable_queue(sim_preempt: SimCluster) -> None:
    c = sim_preempt
    c.cluster.apply_yaml([queue("lender", 1, reclaimable=True), queue("owner", 1)])
    c.cluster.apply_yaml(vcjob("hog", "lender", 4, 1, "3"))
    wait_for(lambda: running(c, "hog", 4), 30, "4 hog pods Running")
    c.cluster.apply_yaml(vcjob("claim", "owner", 2, 2, "3"))
    wait_for(lambda: running(c, "claim", 2), 40, "the reclaiming gang Running")
    events = evict_events(c)
    evicted = {e["involvedObject"]["name"] for e in events if e["involvedObject"]["kind"] == "Pod"}
    assert len(evicted) >= 2 and all(n.startswith("hog-") for n in evicted), events
    assert any("reclaim" in e["message"] for e in events), events


def test_a_killed_scheduler_binds_nothing_twice_and_leaves_no_gang_half_bound(
    tmp_data: Path,
) -> None:
    c = SimCluster(tmp_data / "data", nodes=8, cpu="16", up_args=("--disable", "scheduler"))
    try:
        c.start()
        slow = c.scheduler("--schedule-period", "200ms", "--bind-workers", "1")
        groups, size = 12, 10
        docs: list[dict[str, Any]] = []
        for g in range(groups):
            docs.append(podgroup(f"g{g}", "default", size))
            docs.extend(gang_pod(f"g{g}", f"g{g}-{i}", "500m") for i in range(size))
        total = groups * size
        c.cluster.apply_yaml(docs)
        wait_for(lambda: c.binds()[0] >= 5, 40, "binds to start", 0.02)
        slow.kill9()
        at_kill = c.binds()[0]
        c.scheduler("--schedule-period", "200ms")

        def bound() -> dict[str, str | None]:
            items = c.get_json("pods", "-n", "default")["items"]
            return {p["metadata"]["name"]: p["spec"].get("nodeName") for p in items}

        wait_for(lambda: all(bound().values()), 60, "every pod bound")
        time.sleep(1.0)  # more sessions: nothing may be bound again
        ok, refused = c.binds()
        assert at_kill < total, "the first scheduler finished before it was killed"
        assert ok == total, f"{ok} binds accepted for {total} pods (killed at {at_kill})"
        placements = bound()
        for g in range(groups):
            members = [placements[f"g{g}-{i}"] for i in range(size)]
            assert all(members), (g, members)  # whole gangs, no half-bound one left
        per_node: dict[str, float] = {}
        for node in placements.values():
            assert node is not None
            per_node[node] = per_node.get(node, 0.0) + 0.5
        assert max(per_node.values()) <= 16, per_node
        wait_for(
            lambda: all(
                p["status"].get("phase") == "Running"
                for p in c.get_json("pods", "-n", "default")["items"]
            ),
            30,
            "every pod Running on its simulated node",
        )
        del refused  # 409s from a lost answer are allowed; double 201s are not
    finally:
        c.cleanup()


def test_a_failed_bind_is_retried(tmp_data: Path) -> None:
    """The API server refuses one pod's binding once (a fault proxy between the
    scheduler process and the server answers 500): the scheduler says so on the pod
    and binds it in a later session; the rest of the gang stays bound."""
    c = SimCluster(tmp_data / "data", nodes=2, cpu="8", up_args=("--disable", "scheduler"))
    refused: list[str] = []

    def fail(method: str, path: str) -> int | None:
        if method == "POST" and path.endswith("/pods/r-1/binding") and not refused:
            refused.append(path)
            return 500
        return None

    try:
        c.start()
        with FaultProxy(c.cluster.server_url(), c.cluster.ca_file(), fail) as proxy:
            config = proxy.kubeconfig(c.kubeconfig, tmp_data / "via-proxy.kubeconfig")
            c.spawn("scheduler", "scheduler", "--kubeconfig", str(config),
                    "--health-port", "-1", "--schedule-period", "200ms")  # fmt: skip
            docs = [podgroup("r", "default", 3)]
            docs += [gang_pod("r", f"r-{i}", "1") for i in range(3)]
            c.cluster.apply_yaml(docs)

            def placements() -> dict[str, str | None]:
                items = c.get_json("pods", "-n", "default")["items"]
                return {p["metadata"]["name"]: p["spec"].get("nodeName") for p in items}

            wait_for(lambda: all(placements().values()), 30, "every pod of the gang bound")
            assert refused, "the refusal was not injected"
            assert proxy.calls("POST", "/pods/r-1/binding") == [500, 201]
            assert proxy.calls("POST", "/pods/r-0/binding") == [201]
            assert proxy.calls("POST", "/pods/r-2/binding") == [201]
        assert c.binds() == (3, 0)  # the server saw each pod bound once
        fails = c.get_json("events", "-n", "default", "--field-selector",
                           "reason=FailedScheduling,involvedObject.name=r-1")["items"]  # fmt: skip
        assert fails and "failed to bind" in fails[0]["message"], fails
    finally:
        c.cleanup()


# -- admission: a cluster without nodes is enough ----------------------------------------


@pytest.fixture(scope="module")
def plain(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    c = Cluster(tmp_path_factory.mktemp("lahar-admission") / "data", "up")
    try:
        yield c.start()
    finally:
        c.cleanup()


def create_error(c: Cluster, doc: dict[str, Any]) -> str:
    res = c.kubectl("create", "-f", "-", input=yaml.safe_dump(doc), check=False)
    assert res.returncode != 0, f"{doc['kind']} {doc['metadata']['name']} was accepted"
    return res.stderr


def test_a_closed_queue_admits_nothing_new(plain: Cluster) -> None:
    c = plain
    c.apply_yaml(queue("shut", 1))
    wait_for(
        lambda: (c.get_json("queue", "shut").get("status") or {}).get("state") == "Open",
        30,
        "queue shut Open",
    )
    subprocess.run(
        [sys.executable, "-m", "lahar.cli.main", "queue", "close", "shut",
         "--kubeconfig", str(c.kubeconfig), "--wait", "30"],
        check=True, capture_output=True, timeout=60,
    )  # fmt: skip
    assert c.get_json("queue", "shut")["status"]["state"] == "Closed"
    err = create_error(c, vcjob("late", "shut", 1, 1, "1"))
    assert 'admission webhook "validatejob.volcano.sh" denied the request' in err, err
    assert "can only submit job to queue with state `Open`, queue `shut` status is `Closed`" in err
    pg = {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
          "metadata": {"name": "late-pg", "namespace": "default"},
          "spec": {"minMember": 1, "queue": "shut"}}  # fmt: skip
    err = create_error(c, pg)
    assert "can only submit PodGroup to queue with state `Open`" in err, err
    assert c.get_json("vcjob", "-n", "default")["items"] == []


def _dup_tasks() -> dict[str, Any]:
    job = vcjob("dup", "default", 1, 1, "1")
    job["spec"]["tasks"].append(dict(job["spec"]["tasks"][0]))
    return job


INVALID = [
    ("duplicate-task-names", _dup_tasks(), "duplicated task name w"),
    (
        "min-available-above-replicas",
        vcjob("toomany", "default", 2, 3, "1"),
        "job 'minAvailable' should not be greater than total replicas in tasks",
    ),
    (
        "negative-min-available",
        vcjob("neg", "default", 1, -1, "1"),
        "spec.minAvailable in body should be greater than or equal to 0",
    ),
    ("missing-queue", vcjob("lost", "nowhere", 1, 1, "1"), "unable to find job queue"),
    (
        "queue-weight-0",
        {**queue("zero"), "spec": {"weight": 0}},
        "spec.weight",
    ),
]


@pytest.mark.parametrize(("doc", "message"), [(d, m) for _, d, m in INVALID],
                         ids=[i for i, _, _ in INVALID])  # fmt: skip
def test_invalid_jobs_and_queues_are_refused_with_volcanos_words(
    plain: Cluster, doc: dict[str, Any], message: str
) -> None:
    err = create_error(plain, doc)
    assert message in err, err
