"""Scenario tests: every RayCluster sample, expected values worked out by hand from
kuberay-semantics.md (§3.2 services, §3.3 pods, §5.2 Volcano)."""

from __future__ import annotations

import re

from tests.kuberay.helpers import (
    env,
    env_names,
    head_pod,
    of_kind,
    one,
    rendered,
    service,
    worker_pods,
)

SUFFIX = "[bcdfghjklmnpqrstvwxz2456789]{5}"
RAYLET = "wget --tries 1 -T 2 -q -O- http://localhost:52365/api/local_raylet_healthz | grep success"
GCS = "wget --tries 1 -T 10 -q -O- http://localhost:8265/api/gcs_healthz | grep success"
ULIMIT = "ulimit -n ${RAY_START_ULIMIT_OPEN_FILES:-65536}; "


def test_sample_minimal_cluster() -> None:
    r = rendered("ray-cluster.sample.yaml")
    assert [o["kind"] for o in r.objects] == ["RayCluster", "Service", "Pod", "Pod"]
    cluster = r.objects[0]
    group = cluster["spec"]["workerGroupSpecs"][0]
    assert group["numOfHosts"] == 1 and group["priority"] == 0  # CRD defaults applied
    head = head_pod(r)
    meta = head["metadata"]
    assert meta["generateName"] == "raycluster-kuberay-head-"
    assert re.fullmatch(f"raycluster-kuberay-head-{SUFFIX}", meta["name"])
    assert meta["namespace"] == "default"
    assert meta["labels"] == {
        "ray.io/is-ray-node": "yes",
        "ray.io/cluster": "raycluster-kuberay",
        "ray.io/node-type": "head",
        "ray.io/group": "headgroup",
        "ray.io/identifier": "raycluster-kuberay-head",
        "app.kubernetes.io/name": "kuberay",
        "app.kubernetes.io/created-by": "kuberay-operator",
    }
    assert meta["annotations"]["ray.io/ft-enabled"] == "false"
    assert meta["annotations"]["ray.io/kuberay-version"] == "v1.7.0"
    assert meta["ownerReferences"] == [
        {
            "apiVersion": "ray.io/v1",
            "kind": "RayCluster",
            "name": "raycluster-kuberay",
            "uid": cluster["metadata"]["uid"],
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    ray = head["spec"]["containers"][0]
    start = (
        "ray start --head  --block  --dashboard-agent-listen-port=52365  "
        "--dashboard-host=0.0.0.0  --memory=5368709120  --metrics-export-port=8080  --num-cpus=1 "
    )
    assert ray["command"] == ["/bin/bash", "-c", "--"]
    assert ray["args"] == [ULIMIT + start]
    e = env(ray)
    assert e["KUBERAY_GEN_RAY_START_CMD"] == start
    assert e["RAY_PORT"] == "6379"
    assert e["RAY_ADDRESS"] == "127.0.0.1:6379"
    assert e["RAY_USAGE_STATS_KUBERAY_IN_USE"] == "1"
    assert e["RAY_DASHBOARD_ENABLE_K8S_DISK_USAGE"] == "1"
    assert e["RAY_USAGE_STATS_EXTRA_TAGS"] == "kuberay_version=v1.7.0;kuberay_crd=RayCluster"
    assert e["RAY_CLUSTER_NAME"] == {"fieldRef": {"fieldPath": "metadata.labels['ray.io/cluster']"}}
    assert e["RAY_CLOUD_INSTANCE_ID"] == {"fieldRef": {"fieldPath": "metadata.name"}}
    assert e["RAY_NODE_TYPE_NAME"] == {"fieldRef": {"fieldPath": "metadata.labels['ray.io/group']"}}
    assert "FQ_RAY_IP" not in e
    assert ray["livenessProbe"]["exec"]["command"] == ["bash", "-c", f"{RAYLET} && {GCS}"]
    assert ray["livenessProbe"]["initialDelaySeconds"] == 30
    assert ray["livenessProbe"]["failureThreshold"] == 120
    assert ray["livenessProbe"]["timeoutSeconds"] == 5
    assert ray["readinessProbe"]["initialDelaySeconds"] == 10
    assert ray["readinessProbe"]["failureThreshold"] == 10
    assert ray["readinessProbe"]["periodSeconds"] == 5
    assert {"name": "metrics", "containerPort": 8080} in ray["ports"]
    assert {"mountPath": "/dev/shm", "name": "shared-mem"} in ray["volumeMounts"]
    assert {"name": "shared-mem", "emptyDir": {"medium": "Memory", "sizeLimit": "5Gi"}} in head[
        "spec"
    ]["volumes"]

    (worker,) = worker_pods(r)
    assert re.fullmatch(
        f"raycluster-kuberay-workergroup-worker-{SUFFIX}", worker["metadata"]["name"]
    )
    assert worker["metadata"]["labels"]["ray.io/group"] == "workergroup"
    assert worker["metadata"]["labels"]["ray.io/identifier"] == "raycluster-kuberay-worker"
    assert worker["metadata"]["labels"]["ray.io/worker-group-replica-index"] == "0"
    wray = worker["spec"]["containers"][0]
    fqdn = "raycluster-kuberay-head-svc.default.svc.cluster.local"
    wstart = (
        f"ray start  --address={fqdn}:6379  --block  --dashboard-agent-listen-port=52365  "
        "--memory=1073741824  --metrics-export-port=8080  --num-cpus=1 "
    )
    assert wray["args"] == [ULIMIT + wstart]
    we = env(wray)
    assert we["FQ_RAY_IP"] == fqdn
    assert we["RAY_IP"] == "raycluster-kuberay-head-svc"
    assert we["RAY_ADDRESS"] == f"{fqdn}:6379"
    assert "RAY_USAGE_STATS_EXTRA_TAGS" not in we
    assert env_names(wray)[:2] == ["FQ_RAY_IP", "RAY_IP"]
    assert wray["readinessProbe"]["exec"]["command"] == ["bash", "-c", RAYLET]
    assert wray["readinessProbe"]["timeoutSeconds"] == 2
    (init,) = worker["spec"]["initContainers"]
    assert init["name"] == "wait-gcs-ready"
    assert init["image"] == "rayproject/ray:2.52.0"
    assert f"ray health-check --address {fqdn}:6379" in init["args"][0]
    assert init["resources"]["requests"] == {"cpu": "200m", "memory": "256Mi"}
    assert init["resources"]["limits"] == {"cpu": "200m", "memory": "256Mi"}
    assert env(init) == {"FQ_RAY_IP": fqdn, "RAY_IP": "raycluster-kuberay-head-svc"}

    svc = service(r, "raycluster-kuberay-head-svc")
    assert svc["spec"]["clusterIP"] == "None"
    assert svc["spec"]["publishNotReadyAddresses"] is True
    assert [(p["name"], p["port"]) for p in svc["spec"]["ports"]] == [
        ("client", 10001),
        ("dashboard", 8265),
        ("gcs-server", 6379),
        ("metrics", 8080),
    ]
    assert all(p["appProtocol"] == "tcp" for p in svc["spec"]["ports"])
    assert svc["spec"]["selector"] == {
        "ray.io/cluster": "raycluster-kuberay",
        "ray.io/node-type": "head",
        "ray.io/identifier": "raycluster-kuberay-head",
        "app.kubernetes.io/name": "kuberay",
        "app.kubernetes.io/created-by": "kuberay-operator",
    }
    assert svc["metadata"]["labels"] == svc["spec"]["selector"]


def test_sample_with_volcano_podgroup() -> None:
    r = rendered("ray-cluster.sample.yaml", "volcano")
    kinds = [o["kind"] for o in r.objects]
    assert kinds == ["RayCluster", "Service", "PodGroup", "Pod", "Pod"]
    pg = one(r, "PodGroup")
    assert pg["metadata"]["name"] == "ray-raycluster-kuberay-pg"
    # head 1 CPU/5Gi + 1 worker x 1 CPU/1Gi
    assert pg["spec"]["minMember"] == 2
    assert pg["spec"]["minResources"] == {"cpu": "2", "memory": "6Gi"}
    assert pg["status"] == {"phase": "Pending"}
    for pod in of_kind(r, "Pod"):
        assert pod["spec"]["schedulerName"] == "volcano"
        assert (
            pod["metadata"]["annotations"]["scheduling.k8s.io/group-name"]
            == "ray-raycluster-kuberay-pg"
        )
    assert head_pod(r)["metadata"]["annotations"]["volcano.sh/task-spec"] == "headgroup"
    assert worker_pods(r)[0]["metadata"]["annotations"]["volcano.sh/task-spec"] == "workergroup"


def test_complete_sample() -> None:
    r = rendered("ray-cluster.complete.yaml", "volcano")
    head = head_pod(r)
    ray = head["spec"]["containers"][0]
    # CPU limit 1 wins over the 500m request; memory = the 5Gi limit.
    assert "--num-cpus=1 " in ray["args"][0] and "--memory=5368709120 " in ray["args"][0]
    # /tmp/ray is the user's ray-logs volume, left alone; /dev/shm added.
    mounts = [m["mountPath"] for m in ray["volumeMounts"]]
    assert mounts == ["/tmp/ray", "/dev/shm"]
    svc = service(r, "raycluster-complete-head-svc")
    assert svc["spec"]["type"] == "ClusterIP" and svc["spec"]["clusterIP"] == "None"
    pg = one(r, "PodGroup")
    # requests win: head 500m/2Gi + worker 500m/1Gi
    assert pg["spec"]["minMember"] == 2
    assert pg["spec"]["minResources"] == {"cpu": "1", "memory": "3Gi"}


def test_autoscaler_sample() -> None:
    r = rendered("ray-cluster.autoscaler.yaml", "volcano")
    kinds = [o["kind"] for o in r.objects]
    assert kinds == [
        "RayCluster",
        "ServiceAccount",
        "Role",
        "RoleBinding",
        "Service",
        "PodGroup",
        "Pod",
    ]
    assert any("RBAC" in n for n in r.notes)
    sa, role, binding = r.objects[1:4]
    assert sa["metadata"]["name"] == role["metadata"]["name"] == "raycluster-autoscaler"
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": "raycluster-autoscaler", "namespace": "default"}
    ]
    assert binding["roleRef"]["name"] == "raycluster-autoscaler"
    assert {
        "apiGroups": ["ray.io"],
        "resources": ["rayclusters"],
        "verbs": ["get", "patch"],
    } in role["rules"]
    head = head_pod(r)
    spec = head["spec"]
    assert spec["serviceAccountName"] == "raycluster-autoscaler"
    assert "restartPolicy" not in spec
    ray, sidecar = spec["containers"]
    assert "--no-monitor " in ray["args"][0] and "--num-cpus=0 " in ray["args"][0]
    assert "RAY_enable_autoscaler_v2" not in env(ray)
    assert sidecar["name"] == "autoscaler"
    assert sidecar["image"] == "rayproject/ray:2.52.0"
    assert sidecar["imagePullPolicy"] == "IfNotPresent"
    assert sidecar["args"] == [
        "ray kuberay-autoscaler --cluster-name $(RAY_CLUSTER_NAME) --cluster-namespace $(RAY_CLUSTER_NAMESPACE)"
    ]
    assert sidecar["resources"]["requests"] == {"cpu": "500m", "memory": "512Mi"}
    assert {"mountPath": "/tmp/ray", "name": "ray-logs"} in sidecar["volumeMounts"]
    assert {"mountPath": "/tmp/ray", "name": "ray-logs"} in ray["volumeMounts"]
    assert {"name": "ray-logs", "emptyDir": {}} in spec["volumes"]
    assert worker_pods(r) == []  # replicas 0
    pg = one(r, "PodGroup")
    # autoscaling: minReplicas (0); the sidecar is not counted (not in the template)
    assert pg["spec"]["minMember"] == 1
    assert pg["spec"]["minResources"] == {"cpu": "1", "memory": "2Gi"}


def test_autoscaler_v2_sample() -> None:
    r = rendered("ray-cluster.autoscaler-v2.yaml")
    spec = head_pod(r)["spec"]
    assert spec["restartPolicy"] == "Never"
    assert env(spec["containers"][0])["RAY_enable_autoscaler_v2"] == "true"


def test_custom_head_service_sample() -> None:
    r = rendered("ray-cluster.custom-head-service.yaml")
    svc = service(r, "custom-ray-head-service-name")
    assert svc["spec"]["type"] == "LoadBalancer"
    assert "clusterIP" not in svc["spec"]  # not made headless
    # the user's port first, then the operator's, unsorted (container order + metrics)
    assert [p["name"] for p in svc["spec"]["ports"]] == [
        "custom-ray-head-service-port",
        "gcs-server",
        "dashboard",
        "client",
        "metrics",
    ]
    assert svc["metadata"]["labels"]["custom-label"] == "custom-ray-head-service-label"
    assert svc["metadata"]["labels"]["ray.io/node-type"] == "head"
    assert svc["metadata"]["annotations"] == {
        "custom-annotation": "custom-ray-head-service-annotation"
    }
    assert svc["spec"]["selector"]["ray.io/cluster"] == "custom-head-svc"
    assert "--num-cpus=1 " in head_pod(r)["spec"]["containers"][0]["args"][0]


def test_external_redis_sample() -> None:
    r = rendered("ray-cluster.external-redis.yaml")
    cluster = r.objects[0]
    assert "ray.io/gcs-ft-redis-cleanup-finalizer" in cluster["metadata"]["finalizers"]
    head = head_pod(r)
    annotations = head["metadata"]["annotations"]
    assert annotations["ray.io/ft-enabled"] == "true"
    assert annotations["ray.io/external-storage-namespace"] == cluster["metadata"]["uid"]
    ray = head["spec"]["containers"][0]
    e = env(ray)
    assert e["RAY_REDIS_ADDRESS"] == "redis:6379"
    assert e["REDIS_PASSWORD"] == {
        "secretKeyRef": {"name": "redis-password-secret", "key": "password"}
    }
    assert e["RAY_external_storage_namespace"] == cluster["metadata"]["uid"]
    assert "--redis-password=$REDIS_PASSWORD " in ray["args"][0]
    (worker,) = worker_pods(r)
    assert env(worker["spec"]["containers"][0])["RAY_gcs_rpc_server_reconnect_timeout_s"] == "600"
    assert "ray.io/ft-enabled" not in (worker["metadata"].get("annotations") or {})


def test_head_command_sample() -> None:
    ray = head_pod(rendered("ray-cluster.head-command.yaml"))["spec"]["containers"][0]
    assert ray["command"] == ["/bin/bash", "-c", "--"]
    assert ray["args"][0].startswith(" echo 123  456  && " + ULIMIT + "ray start --head  --block ")


def test_overwrite_command_sample() -> None:
    r = rendered("ray-cluster.overwrite-command.yaml")
    for pod in of_kind(r, "Pod"):
        ray = pod["spec"]["containers"][0]
        assert pod["metadata"]["annotations"]["ray.io/overwrite-container-cmd"] == "true"
        assert ray["command"] == ["/bin/bash", "-c", "--"]
        assert ray["args"][0].endswith("$KUBERAY_GEN_RAY_START_CMD")
        assert env(ray)["KUBERAY_GEN_RAY_START_CMD"].startswith("ray start ")


def test_kai_sample_without_ray_start_params() -> None:
    r = rendered("ray-cluster.kai-scheduler.yaml")
    workers = worker_pods(r)
    assert len(workers) == 2  # replicas 2, min 2, max defaults to int32 max
    assert [w["metadata"]["labels"]["ray.io/worker-group-replica-index"] for w in workers] == [
        "0",
        "1",
    ]
    assert len({w["metadata"]["name"] for w in workers}) == 2
    # no rayVersion: exec probes
    assert "exec" in head_pod(r)["spec"]["containers"][0]["livenessProbe"]


def test_tpu_multihost_sample() -> None:
    r = rendered("ray-cluster.tpu-v4-multihost.yaml", "volcano")
    headless = service(r, "raycluster-tpu-v4-multihost-headless")
    assert headless["spec"] == {
        "type": "ClusterIP",
        "clusterIP": "None",
        "selector": {"ray.io/cluster": "raycluster-tpu-v4-multihost", "ray.io/node-type": "worker"},
        "publishNotReadyAddresses": True,
    }
    assert headless["metadata"]["labels"] == {
        "ray.io/headless-worker-svc": "raycluster-tpu-v4-multihost"
    }
    workers = worker_pods(r)
    assert len(workers) == 2  # 1 replica x 2 hosts
    labels = [w["metadata"]["labels"] for w in workers]
    assert {lab["ray.io/replica-host-index"] for lab in labels} == {"0", "1"}
    assert {lab["ray.io/worker-group-replica-index"] for lab in labels} == {"0"}
    (replica,) = {lab["ray.io/worker-group-replica-name"] for lab in labels}
    assert re.fullmatch(f"tpu-group-{SUFFIX}", replica)
    args = workers[0]["spec"]["containers"][0]["args"][0]
    assert "--resources='{\"TPU\":4}' " in args
    assert "--memory=40000000000 " in args and "--num-cpus=1 " in args
    pg = one(r, "PodGroup")
    assert pg["spec"]["minMember"] == 3
    assert pg["spec"]["minResources"] == {
        "cpu": "10",
        "ephemeral-storage": "30Gi",
        "google.com/tpu": "8",
        "memory": "120G",
    }


def test_volcano_head_only_sample() -> None:
    r = rendered("ray-cluster.volcano-scheduler.yaml", "volcano")
    pg = one(r, "PodGroup")
    assert pg["metadata"]["name"] == "ray-test-cluster-0-pg"
    assert pg["spec"]["minMember"] == 1
    assert pg["spec"]["minResources"] == {"cpu": "1", "memory": "2Gi"}
    assert pg["spec"]["queue"] == "default"  # the PodGroup CRD default (label absent)


def test_volcano_queue_sample() -> None:
    r = rendered("ray-cluster.volcano-scheduler-queue.yaml", "volcano")
    pg = one(r, "PodGroup")
    assert pg["spec"]["queue"] == "kuberay-test-queue"
    assert pg["spec"]["minMember"] == 3
    assert pg["spec"]["minResources"] == {"cpu": "3", "memory": "4Gi"}
    for pod in of_kind(r, "Pod"):
        assert pod["metadata"]["labels"]["volcano.sh/queue-name"] == "kuberay-test-queue"


def test_yunikorn_and_scheduler_plugins_samples_render_plainly() -> None:
    for name in ("ray-cluster.yunikorn-scheduler.yaml", "ray-cluster.scheduler-plugins.yaml"):
        r = rendered(name)
        assert len(worker_pods(r)) == 2
        assert "schedulerName" not in head_pod(r)["spec"]
        assert not of_kind(r, "PodGroup")
