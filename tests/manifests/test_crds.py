"""The shipped CRD manifests: valid structural CRDs, the upstream facts, the samples.

These files are applied unchanged to real clusters and served by lahar's own API
server, so the tests check what a real kube-apiserver would reject (non-structural
schemas, names that do not match), what ``from_crd`` makes of them (short names,
printer columns, subresources), and that every KubeRay sample manifest uses only
fields our schemas know (``kubectl apply`` validates strictly).
"""

from __future__ import annotations

import copy
import functools
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from lahar.apiserver.resources import ResourceType, from_crd

ROOT = Path(__file__).resolve().parents[2]
CRD_DIR = ROOT / "src" / "lahar" / "manifests" / "crds"
# shared/ sits beside the work tree (in CI too: a copy beside the fresh clone).
SAMPLES = ROOT.parent / "shared" / "samples" / "kuberay"
FILES = {
    "ray.io_rayclusters.yaml": ("rayclusters.ray.io", "RayCluster"),
    "ray.io_rayjobs.yaml": ("rayjobs.ray.io", "RayJob"),
    "scheduling.volcano.sh_podgroups.yaml": ("podgroups.scheduling.volcano.sh", "PodGroup"),
    "scheduling.volcano.sh_queues.yaml": ("queues.scheduling.volcano.sh", "Queue"),
    "batch.volcano.sh_jobs.yaml": ("jobs.batch.volcano.sh", "Job"),
}


@functools.cache
def _load(name: str) -> dict[str, Any]:
    return yaml.load(
        (CRD_DIR / name).read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    )


def load(name: str) -> dict[str, Any]:
    return copy.deepcopy(_load(name))


def resource(name: str) -> ResourceType:
    (rt,) = from_crd(load(name))
    return rt


def schema_of(name: str) -> dict[str, Any]:
    return load(name)["spec"]["versions"][0]["schema"]["openAPIV3Schema"]


def test_the_directory_holds_exactly_the_five_crds() -> None:
    assert sorted(p.name for p in CRD_DIR.glob("*.yaml")) == sorted(FILES)
    assert (ROOT / "deploy" / "crds").resolve() == CRD_DIR.resolve()


@pytest.mark.parametrize("name", sorted(FILES))
def test_crd_names_and_version(name: str) -> None:
    crd = load(name)
    expected_name, kind = FILES[name]
    assert crd["apiVersion"] == "apiextensions.k8s.io/v1"
    assert crd["kind"] == "CustomResourceDefinition"
    spec = crd["spec"]
    assert crd["metadata"]["name"] == f"{spec['names']['plural']}.{spec['group']}" == expected_name
    assert name == f"{spec['group']}_{spec['names']['plural']}.yaml"
    assert spec["names"]["kind"] == kind
    assert spec["names"]["listKind"] == f"{kind}List"
    assert spec["names"]["singular"] == kind.lower()
    (version,) = spec["versions"]
    assert version["served"] is True and version["storage"] is True
    assert set(crd) == {"apiVersion", "kind", "metadata", "spec"}
    text = (CRD_DIR / name).read_text()
    assert len(text) < 1_000_000
    assert "&id0" not in text  # no YAML anchors: every sub-schema written out


def _walk(node: dict[str, Any], path: str, problems: list[str]) -> None:
    """Collect violations of the structural-schema rules kube-apiserver enforces."""
    if "$ref" in node:
        problems.append(f"{path}: $ref")
    open_ = node.get("x-kubernetes-preserve-unknown-fields") or node.get(
        "x-kubernetes-int-or-string"
    )
    if "type" not in node and not open_:
        problems.append(f"{path}: no type")
    if "properties" in node and "additionalProperties" in node:
        problems.append(f"{path}: properties with additionalProperties")
    if "enum" in node and "default" in node and node["default"] not in node["enum"]:
        problems.append(f"{path}: default outside enum")
    if node.get("x-kubernetes-list-type") == "map":
        item = node["items"]
        for key in node.get("x-kubernetes-list-map-keys", []):
            keyed = item["properties"][key]
            if key not in item.get("required", []) and "default" not in keyed:
                problems.append(f"{path}: list-map key {key} neither required nor defaulted")
    for key, sub in (node.get("properties") or {}).items():
        _walk(sub, f"{path}.{key}", problems)
    for key in ("items", "additionalProperties"):
        if isinstance(node.get(key), dict):
            _walk(node[key], f"{path}[{key}]", problems)
    for key in ("anyOf", "allOf", "oneOf"):
        for sub in node.get(key) or []:
            if "type" in sub and not node.get("x-kubernetes-int-or-string"):
                problems.append(f"{path}: type inside {key}")


@pytest.mark.parametrize("name", sorted(FILES))
def test_schemas_are_structural(name: str) -> None:
    schema = schema_of(name)
    problems: list[str] = []
    _walk(schema, "", problems)
    assert problems == []
    assert schema["properties"]["metadata"] == {"type": "object"}
    assert set(schema["properties"]) == {"apiVersion", "kind", "metadata", "spec", "status"}


def test_generated_files_are_up_to_date() -> None:
    result = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "gen_crds.py"), "--check"],
        capture_output=True,
        text=True,
        check=False,
        timeout=240,
    )
    assert result.returncode == 0, result.stderr


# --- upstream facts, as from_crd sees them ----------------------------------------------


def _columns(rt: ResourceType) -> list[tuple[str, str, str, int]]:
    return [(c["name"], c["type"], c["jsonPath"], c.get("priority", 0)) for c in rt.printer_columns]


def test_raycluster_resource_type() -> None:
    rt = resource("ray.io_rayclusters.yaml")
    assert (rt.group, rt.version, rt.kind, rt.plural) == (
        "ray.io",
        "v1",
        "RayCluster",
        "rayclusters",
    )
    assert rt.namespaced and rt.short_names == () and rt.categories == ("all",)
    assert rt.subresources == ("status",) and rt.scale is None
    assert [c[0] for c in _columns(rt)] == [
        "desired workers", "available workers", "cpus", "memory", "gpus", "tpus", "status",
        "age", "head pod IP", "head service IP",
    ]  # fmt: skip
    assert [c[0] for c in _columns(rt) if c[3] == 1] == ["tpus", "head pod IP", "head service IP"]
    worker = rt.schema["properties"]["spec"]["properties"]["workerGroupSpecs"]["items"]
    props = worker["properties"]
    assert props["replicas"]["default"] == 0 and props["minReplicas"]["default"] == 0
    assert props["maxReplicas"]["default"] == 2147483647 and props["numOfHosts"]["default"] == 1
    assert sorted(worker["required"]) == ["groupName", "maxReplicas", "minReplicas", "template"]


def test_rayjob_resource_type_and_defaults() -> None:
    rt = resource("ray.io_rayjobs.yaml")
    assert rt.kind == "RayJob" and rt.categories == ("all",) and rt.subresources == ("status",)
    assert [c[0] for c in _columns(rt)] == [
        "job status", "deployment status", "ray cluster name", "start time", "end time", "age",
    ]  # fmt: skip
    spec = rt.schema["properties"]["spec"]["properties"]
    assert spec["submissionMode"]["default"] == "K8sJobMode"
    assert spec["backoffLimit"]["default"] == 0
    assert spec["ttlSecondsAfterFinished"]["default"] == 0
    assert spec["preRunningDeadlineSeconds"]["minimum"] == 1
    assert spec["shutdownAfterJobFinishes"] == {"type": "boolean"}
    # The embedded cluster spec is the RayCluster spec itself.
    cluster = resource("ray.io_rayclusters.yaml").schema["properties"]["spec"]
    assert spec["rayClusterSpec"] == cluster
    status = rt.schema["properties"]["status"]["properties"]
    assert status["succeeded"]["default"] == 0 and status["failed"]["default"] == 0


def test_volcano_resource_types() -> None:
    pg = resource("scheduling.volcano.sh_podgroups.yaml")
    assert pg.short_names == ("pg", "podgroup-v1beta1") and pg.namespaced
    # Upstream Volcano declares no status subresource for PodGroup.
    assert pg.subresources == ()
    assert [c[0] for c in _columns(pg)] == ["STATUS", "minMember", "RUNNINGS", "AGE", "QUEUE"]
    assert _columns(pg)[-1] == ("QUEUE", "string", ".spec.queue", 1)
    pg_spec = pg.schema["properties"]["spec"]["properties"]
    assert pg_spec["minMember"]["default"] == 1 and pg_spec["queue"]["default"] == "default"

    queue = resource("scheduling.volcano.sh_queues.yaml")
    assert not queue.namespaced and queue.short_names == ("q", "queue-v1beta1")
    assert queue.subresources == ("status",)
    q_spec = queue.schema["properties"]["spec"]["properties"]
    assert q_spec["weight"]["default"] == 1 and q_spec["reclaimable"]["default"] is True
    for field in ("capability", "deserved", "extendClusters", "guarantee", "parent", "priority"):
        assert field in q_spec
    q_status = set(queue.schema["properties"]["status"]["properties"])
    assert {"state", "inqueue", "pending", "running", "unknown", "completed"} <= q_status
    assert {"allocated", "reservation"} <= q_status

    job = resource("batch.volcano.sh_jobs.yaml")
    assert (job.group, job.version, job.kind) == ("batch.volcano.sh", "v1alpha1", "Job")
    assert job.short_names == ("vcjob", "vj") and job.subresources == ("status",)
    assert [c[0] for c in _columns(job)] == ["STATUS", "minAvailable", "RUNNINGS", "AGE", "QUEUE"]
    j_spec = job.schema["properties"]["spec"]["properties"]
    assert j_spec["maxRetry"]["default"] == 3 and j_spec["queue"]["default"] == "default"


def _has_inlined_pod_templates() -> bool:
    try:
        from lahar.apiserver.schema.builtin import inline_schema  # noqa: F401
    except ImportError:
        return False
    return True


@pytest.mark.skipif(not _has_inlined_pod_templates(), reason="inline_schema not available")
def test_pod_templates_carry_the_full_schema() -> None:
    cluster = schema_of("ray.io_rayclusters.yaml")["properties"]["spec"]["properties"]
    job = schema_of("ray.io_rayjobs.yaml")["properties"]["spec"]["properties"]
    vcjob = schema_of("batch.volcano.sh_jobs.yaml")["properties"]["spec"]["properties"]
    templates = [
        cluster["headGroupSpec"]["properties"]["template"],
        cluster["workerGroupSpecs"]["items"]["properties"]["template"],
        job["submitterPodTemplate"],
        vcjob["tasks"]["items"]["properties"]["template"],
    ]
    for template in templates:
        containers = template["properties"]["spec"]["properties"]["containers"]
        assert containers["x-kubernetes-list-map-keys"] == ["name"]
        assert "image" in containers["items"]["properties"]
        assert "labels" in template["properties"]["metadata"]["properties"]


# --- the KubeRay samples -----------------------------------------------------------------


def _unknown(value: Any, node: dict[str, Any], path: str, out: list[str]) -> None:
    """Our own walk, used when the structural module is not there yet."""
    if node.get("x-kubernetes-preserve-unknown-fields") and "properties" not in node:
        return
    if isinstance(value, dict) and "properties" in node:
        for key, sub in value.items():
            if key in node["properties"]:
                _unknown(sub, node["properties"][key], f"{path}.{key}", out)
            elif not node.get("x-kubernetes-preserve-unknown-fields"):
                out.append(f"{path}.{key}")
    elif isinstance(value, dict) and isinstance(node.get("additionalProperties"), dict):
        for key, sub in value.items():
            _unknown(sub, node["additionalProperties"], f"{path}[{key}]", out)
    elif isinstance(value, list) and isinstance(node.get("items"), dict):
        for i, sub in enumerate(value):
            _unknown(sub, node["items"], f"{path}[{i}]", out)


def unknown_fields(obj: dict[str, Any], schema: dict[str, Any]) -> list[str]:
    try:
        from lahar.apiserver.schema.structural import unknown_fields as strict
    except ImportError:
        out: list[str] = []
        body = {k: v for k, v in obj.items() if k not in ("apiVersion", "kind", "metadata")}
        _unknown(body, schema, "", out)
        return out
    return strict(obj, schema)


def _sample_docs() -> list[tuple[str, dict[str, Any]]]:
    docs = []
    for path in sorted(SAMPLES.glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if doc and doc.get("apiVersion") in ("ray.io/v1", "scheduling.volcano.sh/v1beta1"):
                docs.append((f"{path.name}:{doc['kind']}", doc))
    return docs


SAMPLE_DOCS = _sample_docs()
KIND_FILES = {
    "RayCluster": "ray.io_rayclusters.yaml",
    "RayJob": "ray.io_rayjobs.yaml",
    "Queue": "scheduling.volcano.sh_queues.yaml",
}


@pytest.mark.skipif(not SAMPLES.exists(), reason="shared samples not mounted")
def test_there_are_samples() -> None:
    kinds = [doc["kind"] for _, doc in SAMPLE_DOCS]
    assert kinds.count("RayCluster") >= 10 and kinds.count("RayJob") >= 10


@pytest.mark.skipif(not SAMPLES.exists(), reason="shared samples not mounted")
@pytest.mark.parametrize(("label", "doc"), SAMPLE_DOCS, ids=[label for label, _ in SAMPLE_DOCS])
def test_samples_have_no_unknown_fields(label: str, doc: dict[str, Any]) -> None:
    assert unknown_fields(doc, schema_of(KIND_FILES[doc["kind"]])) == []


@pytest.mark.skipif(not SAMPLES.exists(), reason="shared samples not mounted")
@pytest.mark.parametrize(("label", "doc"), SAMPLE_DOCS, ids=[label for label, _ in SAMPLE_DOCS])
def test_samples_validate_after_defaulting(label: str, doc: dict[str, Any]) -> None:
    structural = pytest.importorskip("lahar.apiserver.schema.structural")
    schema = schema_of(KIND_FILES[doc["kind"]])
    defaulted = structural.apply_defaults(doc, schema)
    assert structural.validate(defaulted, schema) == []
    if doc["kind"] == "RayJob":
        assert defaulted["spec"].get("submissionMode", "K8sJobMode") in (
            "K8sJobMode", "HTTPMode", "InteractiveMode", "SidecarMode",
        )  # fmt: skip
        assert defaulted["spec"]["backoffLimit"] == 0


def test_unknown_fields_are_found() -> None:
    doc = {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {"name": "x"},
        "spec": {
            "headGroupSpec": {"template": {"spec": {"containers": []}}, "rayStartParam": {}},
            "workerGroupSpecs": [{"groupName": "w", "replica": 1}],
        },
    }
    found = unknown_fields(doc, schema_of("ray.io_rayclusters.yaml"))
    assert len(found) == 2
    assert "headGroupSpec.rayStartParam" in found[0] + found[1]
    assert "workerGroupSpecs[0].replica" in found[0] + found[1]


def test_volcano_scheduler_conf() -> None:
    conf = yaml.safe_load(
        (ROOT / "src" / "lahar" / "manifests" / "volcano-scheduler.conf").read_text()
    )
    assert [a.strip() for a in conf["actions"].split(",")] == ["enqueue", "allocate", "backfill"]
    tiers = [[p["name"] for p in tier["plugins"]] for tier in conf["tiers"]]
    assert tiers == [
        ["priority", "gang", "conformance"],
        ["overcommit", "drf", "predicates", "proportion", "nodeorder"],
    ]
