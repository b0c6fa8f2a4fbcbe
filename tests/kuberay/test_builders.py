"""Builder details not covered by the samples (kuberay-semantics.md §3.2, §3.3)."""

from __future__ import annotations

from typing import Any

import pytest

from lahar.kuberay import naming, services
from lahar.kuberay.render import render_raycluster
from tests.kuberay.helpers import env, head_pod, minimal_cluster, service, worker_pods


def _head(obj: dict[str, Any]) -> dict[str, Any]:
    return obj["spec"]["headGroupSpec"]


def _head_container(obj: dict[str, Any]) -> dict[str, Any]:
    return _head(obj)["template"]["spec"]["containers"][0]


def test_http_probe_from_ray_2_53_and_user_probes_kept() -> None:
    obj = minimal_cluster(rayVersion="2.53.0")
    _head(obj)["rayStartParams"] = {"dashboard-agent-listen-port": "52000"}
    _head_container(obj)["readinessProbe"] = {"tcpSocket": {"port": 1}}
    ray = head_pod(render_raycluster(obj))["spec"]["containers"][0]
    assert ray["livenessProbe"]["httpGet"] == {"path": "/api/healthz", "port": 52000}
    assert ray["readinessProbe"] == {"tcpSocket": {"port": 1}}


@pytest.mark.parametrize("version", ["", "nightly", "2.52.9"])
def test_exec_probe_for_old_or_unparsable_versions(version: str) -> None:
    ray = head_pod(render_raycluster(minimal_cluster(rayVersion=version)))["spec"]["containers"][0]
    assert "exec" in ray["livenessProbe"]


def test_shm_skipped_for_plasma_directory_or_existing_mount() -> None:
    obj = minimal_cluster()
    _head(obj)["rayStartParams"] = {"plasma-directory": "/data"}
    obj["spec"]["workerGroupSpecs"][0]["template"]["spec"]["containers"][0]["volumeMounts"] = [
        {"name": "mine", "mountPath": "/dev/shm"}
    ]
    r = render_raycluster(obj)
    assert "volumes" not in head_pod(r)["spec"]
    (worker,) = worker_pods(r)
    assert worker["spec"]["containers"][0]["volumeMounts"] == [
        {"name": "mine", "mountPath": "/dev/shm"}
    ]


def test_labels_user_wins_except_protected_and_group_labels_beat_template() -> None:
    obj = minimal_cluster()
    group = obj["spec"]["workerGroupSpecs"][0]
    group["template"]["metadata"] = {
        "labels": {"ray.io/cluster": "x", "ray.io/group": "x", "ray.io/is-ray-node": "no", "a": "t"}
    }
    group["labels"] = {"a": "g"}
    (worker,) = worker_pods(render_raycluster(obj))
    labels = worker["metadata"]["labels"]
    assert labels["ray.io/cluster"] == "demo" and labels["ray.io/group"] == "wg"
    assert labels["ray.io/is-ray-node"] == "no"
    assert labels["a"] == "g"
    assert " --labels=a=g " in worker["spec"]["containers"][0]["args"][0]


def test_pod_name_prefix_cut_to_50_and_lowercased() -> None:
    assert naming.pod_generate_name("A" * 60, "worker") == "a" * 50 + "-worker-"
    obj = minimal_cluster()
    obj["metadata"]["name"] = "c" * 53
    obj["spec"]["workerGroupSpecs"][0]["groupName"] = "group"
    (worker,) = worker_pods(render_raycluster(obj))
    assert worker["metadata"]["generateName"] == "c" * 50 + "-worker-"
    assert len(worker["metadata"]["name"]) == 63


def test_head_port_and_custom_service_name_flow_to_workers() -> None:
    obj = minimal_cluster()
    _head(obj)["rayStartParams"] = {"port": "6380"}
    _head(obj)["headService"] = {"metadata": {"name": "my-head"}}
    (worker,) = worker_pods(render_raycluster(obj))
    ray = worker["spec"]["containers"][0]
    assert " --address=my-head.ns1.svc.cluster.local:6380 " in ray["args"][0]
    assert env(ray)["RAY_PORT"] == "6380"
    assert env(ray)["RAY_IP"] == "my-head"


def test_default_service_ports_and_non_headless_types() -> None:
    obj = minimal_cluster()
    _head(obj)["serviceType"] = "NodePort"
    svc = service(render_raycluster(obj), "demo-head-svc")
    assert svc["spec"]["type"] == "NodePort" and "clusterIP" not in svc["spec"]
    assert [(p["name"], p["port"]) for p in svc["spec"]["ports"]] == [
        ("client", 10001),
        ("dashboard", 8265),
        ("gcs-server", 6379),
        ("metrics", 8080),
        ("serve", 8000),
    ]


def test_unnamed_port_and_template_app_name_in_selector() -> None:
    obj = minimal_cluster()
    _head_container(obj)["ports"] = [{"containerPort": 9999}]
    _head(obj)["template"]["metadata"] = {"labels": {"app.kubernetes.io/name": "mine"}}
    r = render_raycluster(obj)
    svc = service(r, "demo-head-svc")
    assert [p["name"] for p in svc["spec"]["ports"]] == ["9999-port", "metrics"]
    assert svc["spec"]["selector"]["app.kubernetes.io/name"] == "mine"
    assert head_pod(r)["metadata"]["labels"]["app.kubernetes.io/name"] == "mine"


def test_serve_service() -> None:
    obj = minimal_cluster()
    obj["metadata"]["annotations"] = {"ray.io/enable-serve-service": "true"}
    _head_container(obj)["ports"] = [
        {"name": "serve", "containerPort": 8000},
        {"name": "serve-grpc", "containerPort": 9000},
        {"name": "dashboard", "containerPort": 8265},
    ]
    svc = service(render_raycluster(obj), "demo-serve-svc")
    assert svc["spec"]["selector"] == {"ray.io/cluster": "demo"}
    assert svc["metadata"]["labels"] == {
        "ray.io/originated-from-cr-name": "demo",
        "ray.io/originated-from-crd": "RayCluster",
        "ray.io/serve": "demo-serve",
    }
    assert [p["port"] for p in svc["spec"]["ports"]] == [8000, 9000]
    _head_container(obj)["ports"] = [{"name": "dashboard", "containerPort": 8265}]
    r = render_raycluster(obj)
    assert not [s for s in r.objects if s["metadata"]["name"] == "demo-serve-svc"]
    assert any("serve" in n for n in r.notes)
    with pytest.raises(services.ServiceError):
        services.build_serve_service(r.objects[0])


def test_group_resources_field_becomes_ray_params() -> None:
    obj = minimal_cluster()
    obj["spec"]["workerGroupSpecs"][0]["resources"] = {"cpu": "3", "custom": "2"}
    (worker,) = worker_pods(render_raycluster(obj))
    args = worker["spec"]["containers"][0]["args"][0]
    assert " --num-cpus=3 " in args and " --resources='{\"custom\":2}' " in args


def test_suspended_group_and_zero_hosts_create_no_pods() -> None:
    obj = minimal_cluster()
    obj["spec"]["workerGroupSpecs"][0].update(replicas=2, numOfHosts=0)
    assert worker_pods(render_raycluster(obj)) == []
    obj["spec"]["workerGroupSpecs"][0].update(numOfHosts=1, suspend=True)
    assert worker_pods(render_raycluster(obj)) == []


def test_autoscaler_options_override_and_own_service_account() -> None:
    obj = minimal_cluster(
        enableInTreeAutoscaling=True,
        autoscalerOptions={
            "version": "v1",
            "image": "custom:1",
            "env": [{"name": "X", "value": "1"}],
            "resources": {"requests": {"cpu": "1"}},
        },
    )
    _head(obj)["template"]["spec"]["serviceAccountName"] = "mine"
    r = render_raycluster(obj)
    assert [o["kind"] for o in r.objects[1:3]] == ["Role", "RoleBinding"]  # no ServiceAccount
    spec = head_pod(r)["spec"]
    assert spec["serviceAccountName"] == "mine"
    ray, sidecar = spec["containers"]
    assert env(ray)["RAY_enable_autoscaler_v2"] == "false"
    assert sidecar["image"] == "custom:1"
    assert sidecar["resources"] == {"requests": {"cpu": "1"}}
    assert env(sidecar)["X"] == "1" and env(sidecar)["KUBERAY_CRD_VER"] == "v1"


def test_suffixes_are_deterministic_and_from_the_alphabet() -> None:
    a = naming.Suffixes(3)
    assert a.suffix("k") == naming.Suffixes(3).suffix("k")
    assert a.suffix("k") != a.suffix("other")
    assert all(ch in naming.ALPHABET for ch in naming.Suffixes(None).suffix("k"))
    assert naming.check_name("9" + "x" * 10) == "r" + "x" * 10
    assert naming.check_name("a" * 10 + "b" * 50) == "b" * 50  # keeps the last 50


def test_operator_options() -> None:
    from lahar.kuberay.options import OperatorOptions

    options = OperatorOptions.from_env(
        {
            "CLUSTER_DOMAIN": "example.org",
            "ENABLE_LOGIN_SHELL": "TRUE",
            "ENABLE_INIT_CONTAINER_INJECTION": "false",
            "ENABLE_PROBES_INJECTION": "False",
            "ENABLE_RAY_HEAD_CLUSTER_IP_SERVICE": "true",
            "ENABLE_DETERMINISTIC_HEAD_POD_NAME": "true",
        }
    )
    r = render_raycluster(minimal_cluster(), options=options)
    head = head_pod(r)
    assert head["metadata"]["name"] == "demo-head" and "generateName" not in head["metadata"]
    assert "livenessProbe" not in head["spec"]["containers"][0]
    assert head["spec"]["containers"][0]["command"] == ["/bin/bash", "-cl", "--"]
    (worker,) = worker_pods(r)
    assert "initContainers" not in worker["spec"]
    assert env(worker["spec"]["containers"][0])["FQ_RAY_IP"] == "demo-head-svc.ns1.svc.example.org"
    assert "clusterIP" not in service(r, "demo-head-svc")["spec"]
    assert OperatorOptions.from_env({}) == OperatorOptions()
    assert OperatorOptions(login_shell=True).submitter_shell() == ["/bin/bash", "-cel", "--"]


def test_suspended_cluster_and_rayjob_create_no_pods() -> None:
    from lahar.kuberay.render import render_rayjob
    from tests.kuberay.helpers import minimal_job

    r = render_raycluster(minimal_cluster(suspend=True), batch_scheduler="volcano")
    assert [o["kind"] for o in r.objects] == ["RayCluster", "Service"]
    assert any("suspend" in n for n in r.notes)
    job = render_rayjob(minimal_job(suspend=True, shutdownAfterJobFinishes=True))
    assert [o["kind"] for o in job.objects] == ["RayJob"]
    assert job.objects[0]["status"] == {"jobDeploymentStatus": "Suspended"}


def test_autoscaler_v1_worker_restart_policy_warning() -> None:
    from lahar.kuberay.validation import cluster_warnings

    obj = minimal_cluster(enableInTreeAutoscaling=True)
    obj["spec"]["workerGroupSpecs"][0]["template"]["spec"]["restartPolicy"] = "Always"
    (warning,) = cluster_warnings(obj["spec"])
    assert warning.startswith("spec.workerGroupSpecs[0].template.spec.restartPolicy")
