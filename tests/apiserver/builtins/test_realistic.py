"""Objects shaped like the ones KubeRay and Volcano create must pass untouched."""

from __future__ import annotations

from .helpers import create

HEAD_POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {
        "name": "raycluster-kuberay-head-x7k2p",
        "generateName": "raycluster-kuberay-head-",
        "namespace": "default",
        "labels": {
            "ray.io/cluster": "raycluster-kuberay",
            "ray.io/node-type": "head",
            "app.kubernetes.io/created-by": "kuberay-operator",
        },
        "annotations": {"ray.io/ft-enabled": "false", "scheduling.k8s.io/group-name": "ray-pg"},
        "ownerReferences": [
            {
                "apiVersion": "ray.io/v1",
                "kind": "RayCluster",
                "name": "raycluster-kuberay",
                "uid": "6b1f3c52-0000-4000-8000-000000000001",
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ],
    },
    "spec": {
        "schedulerName": "volcano",
        "containers": [
            {
                "name": "ray-head",
                "image": "rayproject/ray:2.60.0",
                "command": ["/bin/bash", "-lc", "--"],
                "args": ["ulimit -n 65536; ray start --head --block"],
                "ports": [
                    {"containerPort": 6379, "name": "gcs-server"},
                    {"containerPort": 8265, "name": "dashboard"},
                    {"containerPort": 10001, "name": "client"},
                    {"containerPort": 8080, "name": "metrics"},
                ],
                "env": [
                    {"name": "RAY_CLUSTER_NAME", "value": "raycluster-kuberay"},
                    {"name": "MY_POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
                    {
                        "name": "RAY_CPU",
                        "valueFrom": {
                            "resourceFieldRef": {
                                "containerName": "ray-head",
                                "resource": "limits.cpu",
                            }
                        },
                    },
                ],
                "resources": {
                    "limits": {"cpu": "1", "memory": "2G", "nvidia.com/gpu": 1},
                    "requests": {"cpu": "500m", "memory": "2G"},
                },
                "volumeMounts": [{"mountPath": "/dev/shm", "name": "shared-mem"}],
                "lifecycle": {"preStop": {"exec": {"command": ["/bin/sh", "-c", "ray stop"]}}},
                "readinessProbe": {
                    "exec": {
                        "command": [
                            "bash",
                            "-c",
                            "wget -T 2 -q -O- http://localhost:52365/api/local_raylet_healthz",
                        ]
                    },
                    "initialDelaySeconds": 10,
                    "periodSeconds": 5,
                    "timeoutSeconds": 2,
                    "failureThreshold": 10,
                },
            }
        ],
        "volumes": [{"name": "shared-mem", "emptyDir": {"medium": "Memory", "sizeLimit": "2G"}}],
        "affinity": {
            "nodeAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "weight": 10,
                        "preference": {"matchExpressions": [{"key": "gpu", "operator": "Exists"}]},
                    }
                ]
            }
        },
        "priorityClassName": "high",
    },
}

HEAD_SERVICE = {
    "apiVersion": "v1",
    "kind": "Service",
    "metadata": {"name": "raycluster-kuberay-head-svc", "namespace": "default"},
    "spec": {
        "selector": {"ray.io/cluster": "raycluster-kuberay", "ray.io/node-type": "head"},
        "ports": [
            {"name": "gcs-server", "port": 6379, "targetPort": 6379},
            {"name": "dashboard", "port": 8265, "targetPort": "dashboard"},
            {"name": "client", "port": 10001, "appProtocol": "tcp"},
        ],
    },
}

SUBMITTER_JOB = {
    "apiVersion": "batch/v1",
    "kind": "Job",
    "metadata": {"name": "rayjob-sample", "namespace": "default", "uid": "0000-1111"},
    "spec": {
        "backoffLimit": 2,
        "template": {
            "metadata": {"labels": {"ray.io/originated-from-crd": "RayJob"}},
            "spec": {
                "restartPolicy": "Never",
                "containers": [
                    {
                        "name": "ray-job-submitter",
                        "image": "rayproject/ray:2.60.0",
                        "command": [
                            "ray",
                            "job",
                            "submit",
                            "--address",
                            "http://head:8265",
                            "--",
                            "python",
                            "x.py",
                        ],
                        "resources": {"limits": {"cpu": "1", "memory": "1Gi"}},
                    }
                ],
            },
        },
    },
}


def test_kuberay_head_pod() -> None:
    assert create(HEAD_POD, "Pod") == []


def test_kuberay_head_service() -> None:
    assert create(HEAD_SERVICE, "Service") == []


def test_rayjob_submitter_job() -> None:
    assert create(SUBMITTER_JOB, "Job") == []
