"""Real Ray on the local node, end to end, driven with kubectl (issue 7, deliverable 3).

Each cluster is a ``lahar up`` subprocess whose local node runs pods as real
processes, on a bridge, pod CIDR and owner tag of its own (see ``raylocal``), so these
tests never touch a user's ``lahar up`` on the same machine. One cluster is shared by
the scenarios that can share it; the crash and capacity scenarios start their own.
The machine has 2 cores and a Ray head costs ~2 GB and 5-10 s, so every test deletes
its RayJobs and RayClusters before it ends, and at most two Ray clusters run at once.

The module ends by checking that nothing it created is left on the machine: no
process (by command line or by the PID namespace of any pod it ran), network
namespace, veth, bridge, nft table or temp dir.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from lahar.node.local.network import check_privileges
from tests.e2e.cluster import SAMPLES, Cluster
from tests.e2e.raylocal import (
    Prefixes,
    delete_all,
    in_namespaces,
    listed_nodes,
    pods,
    processes,
    ray_status,
    rayjob_status,
    small_rayjob,
    wait_for,
    wait_terminal,
)

pytestmark = pytest.mark.skipif(
    bool(check_privileges()), reason=f"the local node needs: {check_privileges()}"
)

ANSWER = 'python -c "import ray; ray.init(); print(ray.get(ray.remote(lambda: 42).remote()))"'


@pytest.fixture(scope="module")
def prefixes() -> Iterator[tuple[Prefixes, Path]]:
    """Unique names and a temp root; afterwards, asserts that nothing is left."""
    names = Prefixes()
    root = Path(tempfile.mkdtemp(prefix=f"rayt-{names.tag}-", dir="/tmp"))
    try:
        yield names, root
    finally:
        shutil.rmtree(root, ignore_errors=True)
        left = wait_for_clean(names, root)
        assert not left, f"left on the machine: {left}"


def wait_for_clean(
    names: Prefixes, root: Path, cluster: Cluster | None = None, timeout: float = 15
) -> dict[str, list[str]]:
    deadline = time.monotonic() + timeout
    while True:
        left = names.leftovers(root, cluster)
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.5)


@pytest.fixture(scope="module")
def cluster(prefixes: tuple[Prefixes, Path]) -> Iterator[Cluster]:
    """The shared ``lahar up`` (8 CPUs declared so samples fit; CPU is not enforced)."""
    names, root = prefixes
    c = names.cluster(root / "shared", "--local-node-cpu", "8")
    try:
        yield c.start(timeout=60)
    finally:
        c.cleanup()


@pytest.fixture
def ns(cluster: Cluster, prefixes: tuple[Prefixes, Path], request: Any) -> Iterator[str]:
    """A namespace of the test's own; its RayJobs and RayClusters are deleted after it."""
    name = request.node.name.replace("_", "-")[5:40].strip("-")
    cluster.kubectl("create", "namespace", name)
    try:
        yield name
    finally:
        prefixes[0].record(cluster)
        delete_all(cluster, name)


def apply(c: Cluster, ns: str, *docs: dict[str, Any]) -> None:
    c.kubectl("apply", "-n", ns, "-f", "-", input=yaml.safe_dump_all(list(docs)))


def test_rayjob_sample_succeeds(cluster: Cluster, ns: str) -> None:
    cluster.kubectl("apply", "-n", ns, "-f", str(SAMPLES / "ray-job.sample.yaml"))
    st = wait_terminal(cluster, ns, "rayjob-sample", timeout=360)
    assert (st["jobDeploymentStatus"], st["jobStatus"]) == ("Complete", "SUCCEEDED"), st
    logs = cluster.kubectl("logs", "-n", ns, "-l", "job-name=rayjob-sample", "--tail=-1").stdout
    assert "test_counter got 5" in logs, logs


def test_raycluster_sample_ready_with_worker(cluster: Cluster, ns: str) -> None:
    cluster.kubectl("apply", "-n", ns, "-f", str(SAMPLES / "ray-cluster.sample.yaml"))

    def ready() -> dict[str, Any] | None:
        rc = cluster.get_json("raycluster", "raycluster-kuberay", "-n", ns)
        return rc if (rc.get("status") or {}).get("state") == "ready" else None

    rc = wait_for("RayCluster raycluster-kuberay to be ready", ready, timeout=180)
    assert rc["status"].get("readyWorkerReplicas", 0) >= 1, rc["status"]
    heads = pods(cluster, ns, "ray.io/cluster=raycluster-kuberay,ray.io/node-type=head")
    assert len(heads) == 1
    head_ip = heads[0]["status"]["podIP"]
    text = ""

    def two_nodes() -> bool:
        nonlocal text
        text = ray_status(head_ip)
        return listed_nodes(text) == 2

    try:
        wait_for("ray status to list 2 nodes", two_nodes, timeout=60, every=3)
    except AssertionError as exc:
        raise AssertionError(f"{exc}:\n{text}") from None


def test_two_rayjobs_at_once(cluster: Cluster, ns: str) -> None:
    apply(cluster, ns, small_rayjob("answer-a", ANSWER), small_rayjob("answer-b", ANSWER))
    for name in ("answer-a", "answer-b"):
        st = wait_terminal(cluster, ns, name, timeout=300)
        assert (st["jobDeploymentStatus"], st["jobStatus"]) == ("Complete", "SUCCEEDED"), st
        logs = cluster.kubectl("logs", "-n", ns, "-l", f"job-name={name}", "--tail=-1").stdout
        assert "42" in logs, logs
    clusters = {rayjob_status(cluster, ns, n)["rayClusterName"] for n in ("answer-a", "answer-b")}
    assert len(clusters) == 2


def test_failing_entrypoint_ends_failed(cluster: Cluster, ns: str) -> None:
    apply(cluster, ns, small_rayjob("exit-three", 'python -c "import sys; sys.exit(3)"'))
    st = wait_terminal(cluster, ns, "exit-three", timeout=300)
    assert st["jobStatus"] == "FAILED", st
    assert st["jobDeploymentStatus"] == "Failed", st
    assert st.get("message"), st


def test_deleting_a_rayjob_leaves_no_process(
    cluster: Cluster, ns: str, prefixes: tuple[Prefixes, Path]
) -> None:
    names = prefixes[0]
    apply(cluster, ns, small_rayjob("to-delete", ANSWER))
    st = wait_terminal(cluster, ns, "to-delete", timeout=300)
    assert st["jobStatus"] == "SUCCEEDED", st
    rc_name = st["rayClusterName"]
    ray_pods = pods(cluster, ns, f"ray.io/cluster={rc_name}")
    assert len(ray_pods) == 2 and all(p["status"]["phase"] == "Running" for p in ray_pods)
    uids = {p["metadata"]["uid"] for p in pods(cluster, ns)}
    pidns = {ns_ for uid, ns_ in names.record(cluster).items() if uid in uids}
    assert len(pidns) >= 2, "the running pods' PID namespaces were not found"
    netns = {n for n in _netns() if any(n.endswith(_short(u)) for u in uids)}
    assert len(netns) >= 2, netns

    cluster.kubectl("delete", "rayjob", "to-delete", "-n", ns)
    wait_for("the pods to be gone", lambda: not pods(cluster, ns) or None, timeout=120)
    markers = [rc_name, *uids]

    def clean() -> bool:
        named = [pid for pid, cmd in processes() if any(m in cmd for m in markers)]
        return not named and not in_namespaces(pidns) and not (netns & set(_netns()))

    try:
        wait_for("the pods' processes and namespaces to be gone", clean, timeout=5, every=0.5)
    except AssertionError as exc:
        raise AssertionError(f"{exc}: {in_namespaces(pidns)} {netns & set(_netns())}") from None


def test_agent_kill9_mid_job_then_restart(prefixes: tuple[Prefixes, Path]) -> None:
    names, root = prefixes
    c = names.cluster(root / "crash", "--local-node-cpu", "8")
    ns = "crash"
    sleepy = (
        'python -c "import ray, time; ray.init(); time.sleep(20); '
        'print(ray.get(ray.remote(lambda: 42).remote()))"'
    )
    try:
        c.start(timeout=60)
        c.kubectl("create", "namespace", ns)
        apply(c, ns, small_rayjob("survivor", sleepy))
        wait_for(
            "the job to run",
            lambda: rayjob_status(c, ns, "survivor").get("jobStatus") == "RUNNING",
            timeout=180,
        )
        recorded = names.record(c)
        assert len(recorded) >= 2, recorded
        c.kill()
        alive = in_namespaces(set(recorded.values()))
        assert alive, "the pods' processes died with the agent"
        time.sleep(2)
        c.start(timeout=60)
        st = wait_terminal(c, ns, "survivor", timeout=240)
        assert (st["jobDeploymentStatus"], st["jobStatus"]) == ("Complete", "SUCCEEDED"), st
        names.record(c)
        delete_all(c, ns)
    finally:
        c.cleanup()
    left = wait_for_clean(names, root / "crash", c)
    left.pop("dirs", None)
    assert not left, f"left after the restart and stop: {left}"


def test_two_large_rayjobs_run_one_after_the_other(prefixes: tuple[Prefixes, Path]) -> None:
    names, root = prefixes
    # 3.5 CPUs: one RayJob (head 1 + worker 1 + its submitter 0.5) fits and leaves 1 CPU,
    # room for one pod of the second but not its whole gang.
    c = names.cluster(root / "gang", "--local-node-cpu", "3500m")
    ns = "gang"
    first = small_rayjob("first", 'python -c "import ray, time; ray.init(); time.sleep(15)"')
    first["spec"].update(shutdownAfterJobFinishes=True, ttlSecondsAfterFinished=0)
    try:
        c.start(timeout=60)
        c.kubectl("create", "namespace", ns)
        apply(c, ns, first)
        wait_for(
            "the first RayJob's pods to be bound",
            lambda: len([p for p in pods(c, ns) if p["spec"].get("nodeName")]) >= 2,
            timeout=120,
        )
        apply(c, ns, small_rayjob("second", ANSWER))
        seen_waiting = False
        deadline = time.monotonic() + 300
        while True:
            st = rayjob_status(c, ns, "second")
            if st.get("jobDeploymentStatus") in ("Complete", "Failed"):
                break
            all_pods = pods(c, ns)
            names.record(c)
            mine = [p for p in all_pods if p["metadata"]["name"].startswith("second-")]
            ray_pods = [p for p in mine if "ray.io/node-type" in p["metadata"].get("labels", {})]
            first_pods = [
                p
                for p in all_pods
                if p["metadata"]["name"].startswith("first-")
                and "ray.io/node-type" in p["metadata"].get("labels", {})
            ]
            bound = [p["metadata"]["name"] for p in mine if p["spec"].get("nodeName")]
            if first_pods and not any(p["metadata"].get("deletionTimestamp") for p in first_pods):
                assert not bound, f"second RayJob placed while the first holds the CPUs: {bound}"
                if len(ray_pods) == 2:
                    seen_waiting = True
            assert time.monotonic() < deadline, f"the second RayJob did not finish: {st}"
            time.sleep(0.5)
        assert seen_waiting, "the second RayJob's pods were never seen waiting"
        first_st = rayjob_status(c, ns, "first")
        assert first_st.get("jobStatus") == "SUCCEEDED", first_st
        assert st.get("jobStatus") == "SUCCEEDED", st
        delete_all(c, ns)
    finally:
        c.cleanup()


def _netns() -> list[str]:
    try:
        return os.listdir("/run/netns")
    except FileNotFoundError:
        return []


def _short(uid: str) -> str:
    return uid.replace("-", "")[:12]
