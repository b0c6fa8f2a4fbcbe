"""kubectl 1.32 against `lahar up`: the verbs users type, on built-ins and lahar's CRDs."""

from __future__ import annotations

import json
import subprocess
import time

import yaml

from tests.e2e.cluster import KUBECTL, Cluster

POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "web", "labels": {"app": "web"}},
    "spec": {"containers": [{"name": "c", "image": "busybox:1.36", "command": ["sleep", "3600"]}]},
}


def test_readyz_version_and_discovery(cluster: Cluster) -> None:
    assert cluster.kubectl("get", "--raw", "/readyz").stdout.strip() == "ok"
    version = json.loads(cluster.kubectl("version", "-o", "json").stdout)
    assert version["serverVersion"]["major"] == "1"
    resources = cluster.kubectl("api-resources").stdout
    for name in (
        "pods",
        "rayclusters",
        "rayjobs",
        "podgroups",
        "queues",
        "leases",
        "priorityclasses",
    ):
        assert name in resources
    short = cluster.kubectl("api-resources", "-o", "wide").stdout
    assert "vcjob" in short and "pg" in short


def test_create_get_table_yaml_jsonpath(cluster: Cluster) -> None:
    cluster.kubectl("create", "-f", "-", input=yaml.safe_dump(POD))
    table = cluster.kubectl("get", "pods").stdout.splitlines()
    assert table[0].split()[:5] == ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
    assert table[1].split()[:3] == ["web", "0/1", "Pending"]
    obj = yaml.safe_load(cluster.kubectl("get", "pod", "web", "-o", "yaml").stdout)
    assert obj["spec"]["restartPolicy"] == "Always"  # defaulted by the server
    assert obj["metadata"]["uid"] and obj["metadata"]["creationTimestamp"]
    name = cluster.kubectl("get", "pod", "web", "-o", "jsonpath={.spec.containers[0].image}").stdout
    assert name == "busybox:1.36"
    dup = cluster.kubectl("create", "-f", "-", input=yaml.safe_dump(POD), check=False)
    assert dup.returncode != 0 and "AlreadyExists" in dup.stderr


def test_label_annotate_patch(cluster: Cluster) -> None:
    cluster.apply_yaml(
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cfg"}, "data": {"a": "1"}}
    )
    cluster.kubectl("label", "configmap", "cfg", "tier=backend")
    cluster.kubectl("annotate", "configmap", "cfg", "note=hello")
    cluster.kubectl("patch", "configmap", "cfg", "--type", "merge", "-p", '{"data":{"b":"2"}}')
    cluster.kubectl(
        "patch",
        "configmap",
        "cfg",
        "--type",
        "json",
        "-p",
        '[{"op":"replace","path":"/data/a","value":"9"}]',
    )
    cluster.kubectl("patch", "configmap", "cfg", "-p", '{"data":{"c":"3"}}')  # strategic
    cm = cluster.get_json("configmap", "cfg")
    assert cm["data"] == {"a": "9", "b": "2", "c": "3"}
    assert cm["metadata"]["labels"]["tier"] == "backend"
    assert cm["metadata"]["annotations"]["note"] == "hello"
    selected = cluster.kubectl("get", "cm", "-l", "tier in (backend,frontend)", "-o", "name").stdout
    assert selected.strip() == "configmap/cfg"
    assert (
        "configmap/cfg"
        not in cluster.kubectl("get", "cm", "-l", "tier!=backend", "-o", "name").stdout
    )


def test_apply_client_side_then_update(cluster: Cluster) -> None:
    svc = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "svc"},
        "spec": {"selector": {"app": "web"}, "ports": [{"name": "http", "port": 80}]},
    }
    out = cluster.apply_yaml(svc).stdout
    assert "created" in out
    svc["spec"]["ports"].append({"name": "https", "port": 443})
    assert "configured" in cluster.apply_yaml(svc).stdout
    assert "unchanged" in cluster.apply_yaml(svc).stdout
    live = cluster.get_json("service", "svc")
    assert [p["port"] for p in live["spec"]["ports"]] == [80, 443]
    assert live["spec"]["clusterIP"]
    assert live["spec"]["ports"][0]["targetPort"] == 80


def test_apply_server_side_and_conflicts(cluster: Cluster) -> None:
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "ssa"}, "data": {"k": "v1"}}
    cluster.apply_yaml(cm, "--server-side")
    live = json.loads(
        cluster.kubectl("get", "configmap", "ssa", "-o", "json", "--show-managed-fields").stdout
    )
    managers = {m["manager"]: m["operation"] for m in live["metadata"]["managedFields"]}
    assert managers.get("kubectl") == "Apply"
    cm["data"]["k"] = "v2"
    res = cluster.kubectl(
        "apply",
        "--server-side",
        "--field-manager",
        "other",
        "-f",
        "-",
        input=yaml.safe_dump(cm),
        check=False,
    )
    assert res.returncode != 0 and "conflict" in res.stderr.lower()
    cluster.kubectl(
        "apply",
        "--server-side",
        "--field-manager",
        "other",
        "--force-conflicts",
        "-f",
        "-",
        input=yaml.safe_dump(cm),
    )
    assert cluster.get_json("configmap", "ssa")["data"]["k"] == "v2"


def test_describe_and_events(cluster: Cluster) -> None:
    out = cluster.kubectl("describe", "pod", "web").stdout
    assert "Name:" in out and "web" in out and "busybox:1.36" in out


def test_get_watch_streams_changes(cluster: Cluster) -> None:
    proc = subprocess.Popen(
        [
            KUBECTL,
            "--kubeconfig",
            str(cluster.kubeconfig),
            "--cache-dir",
            str(cluster.cache_dir),
            "get",
            "configmaps",
            "-w",
            "--output-watch-events",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        time.sleep(1.5)
        cluster.kubectl("create", "configmap", "watched", "--from-literal=x=1")
        cluster.kubectl("delete", "configmap", "watched")
        time.sleep(1.5)
    finally:
        proc.terminate()
        out, _ = proc.communicate(timeout=10)
    rows = [line.split() for line in out.splitlines()]
    assert ["ADDED", "watched"] in [r[:2] for r in rows]
    assert ["DELETED", "watched"] in [r[:2] for r in rows]


def test_wait_and_delete(cluster: Cluster) -> None:
    cluster.kubectl("create", "namespace", "waits")
    cluster.kubectl("create", "configmap", "gone", "-n", "waits")
    waiter = subprocess.Popen(
        [
            KUBECTL,
            "--kubeconfig",
            str(cluster.kubeconfig),
            "--cache-dir",
            str(cluster.cache_dir),
            "wait",
            "--for=delete",
            "configmap/gone",
            "-n",
            "waits",
            "--timeout=30s",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        time.sleep(1)
        cluster.kubectl("delete", "configmap", "gone", "-n", "waits")
        _out, err = waiter.communicate(timeout=40)
    finally:
        if waiter.poll() is None:
            waiter.kill()
    assert waiter.returncode == 0, err
    cluster.kubectl(
        "patch",
        "pod",
        "web",
        "--subresource",
        "status",
        "--type",
        "merge",
        "-p",
        '{"status":{"conditions":[{"type":"Ready","status":"True"}]}}',
    )
    cluster.kubectl("wait", "--for=condition=Ready", "pod/web", "--timeout=20s")


def test_explain_builtin_and_crd(cluster: Cluster) -> None:
    pod = cluster.kubectl("explain", "pod.spec.containers").stdout
    assert "FIELD" in pod or "DESCRIPTION" in pod
    assert "image" in pod
    rayjob = cluster.kubectl("explain", "rayjob.spec").stdout
    assert "entrypoint" in rayjob


def test_strict_validation_names_the_field(cluster: Cluster) -> None:
    bad = {**POD, "metadata": {"name": "bad"}, "spec": {**POD["spec"], "bogus": 1}}
    res = cluster.kubectl("create", "-f", "-", input=yaml.safe_dump(bad), check=False)
    assert res.returncode != 0
    assert 'unknown field "spec.bogus"' in res.stderr
    rj = {
        "apiVersion": "ray.io/v1",
        "kind": "RayJob",
        "metadata": {"name": "bad"},
        "spec": {"entrypoint": "x", "nonsense": True},
    }
    res = cluster.kubectl("apply", "-f", "-", input=yaml.safe_dump(rj), check=False)
    assert res.returncode != 0 and 'unknown field "spec.nonsense"' in res.stderr
    invalid = {**POD, "metadata": {"name": "Bad_Name"}}
    res = cluster.kubectl("create", "-f", "-", input=yaml.safe_dump(invalid), check=False)
    assert res.returncode != 0 and "metadata.name" in res.stderr and "Invalid value" in res.stderr


def test_crd_objects_printer_columns_and_status(cluster: Cluster) -> None:
    q = {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {"name": "team-a"},
        "spec": {"weight": 2},
    }
    cluster.apply_yaml(q)
    live = cluster.get_json("queue", "team-a")
    assert live["spec"]["reclaimable"] is True  # CRD default
    cluster.kubectl("get", "q")  # short name works
    cluster.kubectl(
        "patch",
        "queue",
        "team-a",
        "--subresource",
        "status",
        "--type",
        "merge",
        "-p",
        '{"status":{"state":"Open"}}',
    )
    assert cluster.get_json("queue", "team-a")["status"]["state"] == "Open"
    generation = cluster.get_json("queue", "team-a")["metadata"]["generation"]
    # a write to the main resource does not touch status
    cluster.kubectl(
        "patch",
        "queue",
        "team-a",
        "--type",
        "merge",
        "-p",
        '{"status":{"state":"Closed"},"spec":{"weight":3}}',
    )
    after = cluster.get_json("queue", "team-a")
    assert after["status"]["state"] == "Open" and after["spec"]["weight"] == 3
    assert after["metadata"]["generation"] == generation + 1
    res = cluster.kubectl("patch", "queue", "team-a", "-p", '{"spec":{"weight":4}}', check=False)
    assert res.returncode != 0  # strategic merge patch is refused for CRDs (415)


def test_kubectl_verbs_on_lahar_crds(cluster: Cluster) -> None:
    job = {
        "apiVersion": "ray.io/v1",
        "kind": "RayJob",
        "metadata": {"name": "verbs"},
        "spec": {
            "entrypoint": "python -c 'print(1)'",
            "clusterSelector": {"ray.io/cluster": "shared"},
        },
    }
    proc = subprocess.Popen(
        [
            KUBECTL,
            "--kubeconfig",
            str(cluster.kubeconfig),
            "--cache-dir",
            str(cluster.cache_dir),
            "get",
            "rayjobs",
            "-w",
            "--output-watch-events",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        time.sleep(1.5)
        cluster.apply_yaml(job)
        cluster.kubectl("label", "rayjob", "verbs", "team=ml")
        cluster.kubectl("annotate", "rayjob", "verbs", "owner=me")
        cluster.kubectl(
            "patch",
            "rayjob",
            "verbs",
            "--type=merge",
            "-p",
            '{"spec":{"entrypoint":"python -c 1"}}',
        )
        described = cluster.kubectl("describe", "rayjob", "verbs").stdout
        assert "team=ml" in described and "Entrypoint:" in described
        cluster.kubectl(
            "patch",
            "rayjob",
            "verbs",
            "--subresource=status",
            "--type=merge",
            "-p",
            '{"status":{"jobDeploymentStatus":"Complete"}}',
        )
        cluster.kubectl(
            "wait",
            "--for=jsonpath={.status.jobDeploymentStatus}=Complete",
            "rayjob/verbs",
            "--timeout=10s",
        )
        cluster.kubectl("delete", "rayjob", "verbs")
        time.sleep(1.5)
    finally:
        proc.terminate()
        out, _ = proc.communicate(timeout=10)
    events = [line.split()[:2] for line in out.splitlines()]
    assert ["ADDED", "verbs"] in events and ["DELETED", "verbs"] in events
    assert cluster.kubectl("get", "rayjob", "verbs", check=False).returncode != 0
