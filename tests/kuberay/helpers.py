"""Shared helpers for the KubeRay tests: load samples, render, pick objects."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml

from lahar.kuberay.render import Rendered, render

SAMPLES = Path("/work/shared/samples/kuberay")


def sample(name: str, kind: str | None = None) -> dict[str, Any]:
    """The first RayCluster/RayJob (or ``kind``) document of a sample file."""
    for doc in yaml.safe_load_all((SAMPLES / name).read_text()):
        if doc and doc.get("kind") in ((kind,) if kind else ("RayCluster", "RayJob")):
            return doc
    raise LookupError(name)


def rendered(name: str, scheduler: str | None = None, seed: int = 0) -> Rendered:
    return render(sample(name), seed=seed, batch_scheduler=scheduler)


def of_kind(result: Rendered, kind: str) -> list[dict[str, Any]]:
    return [o for o in result.objects if o["kind"] == kind]


def one(result: Rendered, kind: str) -> dict[str, Any]:
    found = of_kind(result, kind)
    assert len(found) == 1, [o["metadata"]["name"] for o in found]
    return found[0]


def head_pod(result: Rendered) -> dict[str, Any]:
    (pod,) = [
        p for p in of_kind(result, "Pod") if p["metadata"]["labels"]["ray.io/node-type"] == "head"
    ]
    return pod


def worker_pods(result: Rendered) -> list[dict[str, Any]]:
    return [
        p for p in of_kind(result, "Pod") if p["metadata"]["labels"]["ray.io/node-type"] == "worker"
    ]


def env(container: dict[str, Any]) -> dict[str, Any]:
    """name -> value (or the valueFrom dict); the last entry wins."""
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in container.get("env") or []}


def env_names(container: dict[str, Any]) -> list[str]:
    return [e["name"] for e in container.get("env") or []]


def service(result: Rendered, name: str) -> dict[str, Any]:
    (svc,) = [s for s in of_kind(result, "Service") if s["metadata"]["name"] == name]
    return svc


def minimal_cluster(**spec_overrides: Any) -> dict[str, Any]:
    """A small valid RayCluster (head 1 CPU/2Gi, one group of 1 CPU/1Gi workers)."""
    obj: dict[str, Any] = {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {"name": "demo", "namespace": "ns1"},
        "spec": {
            "rayVersion": "2.52.0",
            "headGroupSpec": {
                "rayStartParams": {},
                "template": {
                    "spec": {
                        "containers": [
                            {
                                "name": "ray-head",
                                "image": "rayproject/ray:2.52.0",
                                "resources": {
                                    "limits": {"cpu": "1", "memory": "2Gi"},
                                    "requests": {"cpu": "1", "memory": "2Gi"},
                                },
                            }
                        ]
                    }
                },
            },
            "workerGroupSpecs": [
                {
                    "groupName": "wg",
                    "replicas": 1,
                    "minReplicas": 0,
                    "maxReplicas": 4,
                    "rayStartParams": {},
                    "template": {
                        "spec": {
                            "containers": [
                                {
                                    "name": "ray-worker",
                                    "image": "rayproject/ray:2.52.0",
                                    "resources": {
                                        "limits": {"cpu": "1", "memory": "1Gi"},
                                        "requests": {"cpu": "1", "memory": "1Gi"},
                                    },
                                }
                            ]
                        }
                    },
                }
            ],
        },
    }
    obj["spec"].update(copy.deepcopy(spec_overrides))
    return obj


def minimal_job(**spec_overrides: Any) -> dict[str, Any]:
    cluster = minimal_cluster()
    obj: dict[str, Any] = {
        "apiVersion": "ray.io/v1",
        "kind": "RayJob",
        "metadata": {"name": "job", "namespace": "ns1"},
        "spec": {"entrypoint": "python main.py", "rayClusterSpec": cluster["spec"]},
    }
    obj["spec"].update(copy.deepcopy(spec_overrides))
    return obj
