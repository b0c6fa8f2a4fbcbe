"""Garbage collection through ownerReferences in all three propagation modes, and finalizers."""

from __future__ import annotations

import time

import yaml

from tests.e2e.cluster import Cluster


def _owner_and_child(cluster: Cluster, ns: str, owner: str, child: str) -> str:
    cluster.kubectl("create", "configmap", owner, "-n", ns)
    uid = cluster.get_json("configmap", owner, "-n", ns)["metadata"]["uid"]
    dependent = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": child,
            "namespace": ns,
            "ownerReferences": [
                {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "name": owner,
                    "uid": uid,
                    "blockOwnerDeletion": True,
                }
            ],
        },
    }
    cluster.kubectl("create", "-f", "-", input=yaml.safe_dump(dependent))
    return uid


def _gone(cluster: Cluster, *args: str, timeout: float = 15) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cluster.kubectl("get", *args, check=False).returncode != 0:
            return True
        time.sleep(0.2)
    return False


def test_background_foreground_orphan(cluster: Cluster) -> None:
    cluster.kubectl("create", "namespace", "gc")
    _owner_and_child(cluster, "gc", "bg", "bg-child")
    cluster.kubectl("delete", "configmap", "bg", "-n", "gc", "--cascade=background")
    assert _gone(cluster, "configmap", "bg-child", "-n", "gc")

    _owner_and_child(cluster, "gc", "fg", "fg-child")
    cluster.kubectl(
        "delete",
        "configmap",
        "fg",
        "-n",
        "gc",
        "--cascade=foreground",
        "--wait=true",
        "--timeout=30s",
    )
    assert _gone(cluster, "configmap", "fg-child", "-n", "gc", timeout=1)
    assert _gone(cluster, "configmap", "fg", "-n", "gc", timeout=1)

    _owner_and_child(cluster, "gc", "or", "or-child")
    cluster.kubectl(
        "delete", "configmap", "or", "-n", "gc", "--cascade=orphan", "--wait=true", "--timeout=30s"
    )
    time.sleep(1)
    child = cluster.get_json("configmap", "or-child", "-n", "gc")
    assert "ownerReferences" not in child["metadata"]


def test_finalizer_holds_deletion(cluster: Cluster) -> None:
    cm = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "held", "finalizers": ["example.com/hold"]},
    }
    cluster.kubectl("create", "-f", "-", input=yaml.safe_dump(cm))
    cluster.kubectl("delete", "configmap", "held", "--wait=false")
    live = cluster.get_json("configmap", "held")
    assert live["metadata"]["deletionTimestamp"]
    res = cluster.kubectl(
        "patch",
        "configmap",
        "held",
        "--type",
        "json",
        "-p",
        '[{"op":"add","path":"/metadata/finalizers/-","value":"example.com/more"}]',
        check=False,
    )
    assert res.returncode != 0  # no new finalizers once deleting
    cluster.kubectl(
        "patch", "configmap", "held", "--type", "merge", "-p", '{"metadata":{"finalizers":null}}'
    )
    assert _gone(cluster, "configmap", "held", timeout=5)


def test_namespace_deletion_empties_it(cluster: Cluster) -> None:
    cluster.kubectl("create", "namespace", "doomed")
    cluster.kubectl("create", "configmap", "x", "-n", "doomed")
    cluster.kubectl("delete", "namespace", "doomed", "--timeout=30s")
    assert _gone(cluster, "namespace", "doomed")
    res = cluster.kubectl("create", "configmap", "y", "-n", "doomed", check=False)
    assert res.returncode != 0 and 'namespaces "doomed" not found' in res.stderr


def test_pod_graceful_deletion_without_agent(cluster: Cluster) -> None:
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "graceful"},
        "spec": {
            "terminationGracePeriodSeconds": 2,
            "nodeName": "no-agent-node",
            "containers": [{"name": "c", "image": "x"}],
        },
    }
    cluster.kubectl("create", "-f", "-", input=yaml.safe_dump(pod))
    cluster.kubectl("delete", "pod", "graceful", "--wait=false")
    assert cluster.get_json("pod", "graceful")["metadata"]["deletionGracePeriodSeconds"] == 2
    assert _gone(cluster, "pod", "graceful", timeout=10)
    unbound = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "unbound"},
        "spec": {"containers": [{"name": "c", "image": "x"}]},
    }
    cluster.kubectl("create", "-f", "-", input=yaml.safe_dump(unbound))
    cluster.kubectl("delete", "pod", "unbound", "--wait=false")
    assert _gone(cluster, "pod", "unbound", timeout=1)
