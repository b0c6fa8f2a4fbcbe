"""Server-side tables: the columns and cells kube-apiserver 1.32 sends to kubectl get."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml

from lahar.apiserver.resources import BUILTINS, ResourceType, from_crd
from lahar.apiserver.tables import find, human_duration, parse_jsonpath, to_table

NOW = datetime(2026, 11, 29, 12, 0, 0, tzinfo=UTC)
CRDS = Path(__file__).resolve().parents[2] / "src" / "lahar" / "manifests" / "crds"
RT = {rt.group_resource: rt for rt in BUILTINS}


def ago(**delta: float) -> str:
    return (NOW - timedelta(**delta)).strftime("%Y-%m-%dT%H:%M:%SZ")


def meta(name: str, **extra: Any) -> dict[str, Any]:
    return {"name": name, "namespace": "default", "creationTimestamp": ago(minutes=5), **extra}


def table(resource: str, *objects: dict[str, Any], **kw: Any) -> dict[str, Any]:
    return to_table(RT[resource], list(objects), now=NOW, **kw)


def cells(resource: str, obj: dict[str, Any]) -> list[Any]:
    return table(resource, obj)["rows"][0]["cells"]


def headers(resource: str) -> list[tuple[str, int]]:
    return [(c["name"], c["priority"]) for c in table(resource)["columnDefinitions"]]


@pytest.mark.parametrize(
    ("delta", "text"),
    [
        (timedelta(seconds=-5), "<invalid>"),
        (timedelta(seconds=-1), "0s"),
        (timedelta(0), "0s"),
        (timedelta(seconds=59), "59s"),
        (timedelta(seconds=119), "119s"),
        (timedelta(minutes=2), "2m"),
        (timedelta(minutes=5, seconds=30), "5m30s"),
        (timedelta(minutes=10, seconds=30), "10m"),
        (timedelta(minutes=179), "179m"),
        (timedelta(hours=3), "3h"),
        (timedelta(hours=3, minutes=5), "3h5m"),
        (timedelta(hours=8, minutes=5), "8h"),
        (timedelta(hours=47), "47h"),
        (timedelta(days=2), "2d"),
        (timedelta(days=2, hours=3), "2d3h"),
        (timedelta(days=8, hours=3), "8d"),
        (timedelta(days=730), "2y"),
        (timedelta(days=735), "2y5d"),
        (timedelta(days=365 * 9), "9y"),
    ],
)
def test_human_duration(delta: timedelta, text: str) -> None:
    assert human_duration(delta) == text


def test_table_shape_and_include_object() -> None:
    ns = {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": meta("dev"),
        "status": {"phase": "Active"},
    }
    out = table("namespaces", ns)
    assert out["kind"] == "Table" and out["apiVersion"] == "meta.k8s.io/v1"
    assert out["columnDefinitions"][0] == {
        "name": "Name", "type": "string", "format": "name",
        "description": out["columnDefinitions"][0]["description"], "priority": 0,
    }  # fmt: skip
    assert out["rows"][0]["cells"] == ["dev", "Active", "5m"]
    assert out["rows"][0]["object"] == {
        "kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": ns["metadata"],
    }  # fmt: skip
    assert table("namespaces", ns, include_object="Object")["rows"][0]["object"] is ns
    assert "object" not in table("namespaces", ns, include_object="None")["rows"][0]
    assert table("namespaces")["rows"] == []


# --- pods ---------------------------------------------------------------------------------


def pod(phase: str, statuses: list[dict[str, Any]], **kw: Any) -> dict[str, Any]:
    spec = {
        "containers": [{"name": s["name"], "image": "ray"} for s in statuses] or [{"name": "c"}]
    }
    spec.update(kw.pop("spec", {}))
    status = {"phase": phase, "containerStatuses": statuses, **kw.pop("status", {})}
    return {"metadata": meta("p", **kw.pop("metadata", {})), "spec": spec, "status": status}


def state_of(**state: Any) -> dict[str, Any]:
    return {"name": "c", "ready": False, "restartCount": 0, "state": state}


def running(name: str = "c", ready: bool = True, restarts: int = 0) -> dict[str, Any]:
    return {"name": name, "ready": ready, "restartCount": restarts, "state": {"running": {}}}


def test_pod_columns() -> None:
    assert headers("pods") == [
        ("Name", 0), ("Ready", 0), ("Status", 0), ("Restarts", 0), ("Age", 0),
        ("IP", 1), ("Node", 1), ("Nominated Node", 1), ("Readiness Gates", 1),
    ]  # fmt: skip


def test_pod_running_and_wide_cells() -> None:
    p = pod(
        "Running",
        [running()],
        spec={"nodeName": "node-1"},
        status={"podIP": "10.0.0.5", "podIPs": [{"ip": "10.0.0.5"}],
                "conditions": [{"type": "Ready", "status": "True"}]},
    )  # fmt: skip
    assert cells("pods", p) == [
        "p",
        "1/1",
        "Running",
        "0",
        "5m",
        "10.0.0.5",
        "node-1",
        "<none>",
        "<none>",
    ]


def test_pod_pending_and_container_creating() -> None:
    pending = pod("Pending", [])
    assert cells("pods", pending)[:5] == ["p", "0/1", "Pending", "0", "5m"]
    assert cells("pods", pending)[5:] == ["<none>", "<none>", "<none>", "<none>"]
    creating = pod("Pending", [state_of(waiting={"reason": "ContainerCreating"})])
    assert cells("pods", creating)[1:3] == ["0/1", "ContainerCreating"]
    gated = pod("Pending", [], status={"conditions": [
        {"type": "PodScheduled", "status": "False", "reason": "SchedulingGated"}]})  # fmt: skip
    assert cells("pods", gated)[2] == "SchedulingGated"


def test_pod_completed_and_error() -> None:
    done = pod("Succeeded", [state_of(terminated={"reason": "Completed", "exitCode": 0})])
    row = table("pods", done)["rows"][0]
    assert row["cells"][1:4] == ["0/1", "Completed", "0"]
    assert row["conditions"] == [{"type": "Completed", "status": "True", "reason": "Succeeded",
                                  "message": "The pod has completed successfully."}]  # fmt: skip
    failed = pod("Failed", [state_of(terminated={"reason": "Error", "exitCode": 1})])
    row = table("pods", failed)["rows"][0]
    assert row["cells"][2] == "Error" and row["conditions"][0]["reason"] == "Failed"
    no_reason = pod("Failed", [{"name": "c", "state": {"terminated": {"exitCode": 137}}}])
    assert cells("pods", no_reason)[2] == "ExitCode:137"
    signal = pod("Failed", [{"name": "c", "state": {"terminated": {"exitCode": 0, "signal": 9}}}])
    assert cells("pods", signal)[2] == "Signal:9"


def test_pod_crash_loop_with_restart_age() -> None:
    crash = {
        "name": "c", "ready": False, "restartCount": 5,
        "state": {"waiting": {"reason": "CrashLoopBackOff", "message": "back-off"}},
        "lastState": {"terminated": {"exitCode": 1, "finishedAt": ago(minutes=5)}},
    }  # fmt: skip
    assert cells("pods", pod("Running", [crash]))[1:4] == ["0/1", "CrashLoopBackOff", "5 (5m ago)"]
    # Restarts without a recorded termination time show the bare count.
    crash.pop("lastState")
    assert cells("pods", pod("Running", [crash]))[3] == "5"


def test_pod_terminating_and_node_lost() -> None:
    p = pod("Running", [running()], metadata={"deletionTimestamp": ago(seconds=3)})
    assert cells("pods", p)[2] == "Terminating"
    done = pod("Succeeded", [], metadata={"deletionTimestamp": ago(seconds=3)})
    assert cells("pods", done)[2] == "Succeeded"
    lost = pod("Running", [running()], metadata={"deletionTimestamp": ago(seconds=3)},
               status={"reason": "NodeLost"})  # fmt: skip
    assert cells("pods", lost)[2] == "Unknown"


def test_pod_init_containers() -> None:
    init = {"initContainers": [{"name": "init"}, {"name": "init2"}]}

    def with_init(state: dict[str, Any], **kw: Any) -> dict[str, Any]:
        p = pod("Pending", [{"name": "c", "state": {"waiting": {"reason": "PodInitializing"}}}],
                spec=init)  # fmt: skip
        p["status"]["initContainerStatuses"] = [{"name": "init", "state": state, **kw}]
        return p

    assert cells("pods", with_init({"waiting": {"reason": "PodInitializing"}}))[2] == "Init:0/2"
    assert cells("pods", with_init({"running": {}}))[2] == "Init:0/2"
    assert cells("pods", with_init({"waiting": {"reason": "ImagePullBackOff"}}))[2] == (
        "Init:ImagePullBackOff"
    )
    failed = with_init({"terminated": {"exitCode": 1, "reason": "Error"}}, restartCount=2)
    assert cells("pods", failed)[2:4] == ["Init:Error", "2"]
    assert cells("pods", with_init({"terminated": {"exitCode": 3}}))[2] == "Init:ExitCode:3"
    # A finished init container moves on to the next one.
    p = with_init({"terminated": {"exitCode": 0, "reason": "Completed"}})
    p["status"]["initContainerStatuses"].append(
        {"name": "init2", "state": {"waiting": {"reason": "PodInitializing"}}}
    )
    assert cells("pods", p)[2] == "Init:1/2"


def test_pod_sidecar_counts_as_container() -> None:
    sidecar = {"initContainers": [{"name": "side", "restartPolicy": "Always"}]}
    initialized = {"conditions": [{"type": "Initialized", "status": "True"}]}
    p = pod("Running", [running()], spec=sidecar, status=initialized)
    p["status"]["initContainerStatuses"] = [
        {
            "name": "side",
            "ready": True,
            "started": True,
            "restartCount": 1,
            "state": {"running": {}},
        }
    ]
    assert cells("pods", p)[1:4] == ["2/2", "Running", "1"]


def test_pod_partially_ready_and_not_ready() -> None:
    p = pod("Running", [running("a"), running("b", ready=False)])
    assert cells("pods", p)[1:3] == ["1/2", "Running"]
    finished = {"name": "a", "ready": False, "restartCount": 0,
                "state": {"terminated": {"reason": "Completed", "exitCode": 0}}}  # fmt: skip
    p = pod("Running", [finished, running("b")],
            status={"conditions": [{"type": "Ready", "status": "False"}]})  # fmt: skip
    assert cells("pods", p)[2] == "NotReady"
    p["status"]["conditions"] = [{"type": "Ready", "status": "True"}]
    assert cells("pods", p)[2] == "Running"


def test_pod_readiness_gates() -> None:
    p = pod("Running", [running()],
            spec={"readinessGates": [{"conditionType": "a"}, {"conditionType": "b"}]},
            status={"conditions": [{"type": "a", "status": "True"},
                                   {"type": "b", "status": "False"}]})  # fmt: skip
    assert cells("pods", p)[8] == "1/2"


# --- other built-ins ------------------------------------------------------------------------


def test_node_rows() -> None:
    assert [h for h, _ in headers("nodes")] == [
        "Name", "Status", "Roles", "Age", "Version",
        "Internal-IP", "External-IP", "OS-Image", "Kernel-Version", "Container-Runtime",
    ]  # fmt: skip
    node = {
        "metadata": meta("node-1", labels={"node-role.kubernetes.io/control-plane": "",
                                           "node-role.kubernetes.io/worker": ""}),
        "spec": {"unschedulable": True},
        "status": {
            "conditions": [{"type": "MemoryPressure", "status": "False"},
                           {"type": "Ready", "status": "True"}],
            "addresses": [{"type": "InternalIP", "address": "10.1.0.1"},
                          {"type": "Hostname", "address": "node-1"}],
            "nodeInfo": {"kubeletVersion": "v1.32.0", "osImage": "lahar", "kernelVersion": "6.1",
                         "containerRuntimeVersion": "lahar://0.1"},
        },
    }  # fmt: skip
    assert cells("nodes", node) == [
        "node-1", "Ready,SchedulingDisabled", "control-plane,worker", "5m", "v1.32.0",
        "10.1.0.1", "<none>", "lahar", "6.1", "lahar://0.1",
    ]  # fmt: skip
    bare = {
        "metadata": meta("n2"),
        "status": {"conditions": [{"type": "Ready", "status": "Unknown"}]},
    }
    assert cells("nodes", bare)[1:3] == ["NotReady", "<none>"]
    assert cells("nodes", {"metadata": meta("n3")})[1] == "Unknown"
    assert cells("nodes", {"metadata": meta("n3")})[7:] == ["<unknown>"] * 3


def test_service_rows() -> None:
    assert [h for h, _ in headers("services")] == [
        "Name", "Type", "Cluster-IP", "External-IP", "Port(s)", "Age", "Selector",
    ]  # fmt: skip
    svc = {
        "metadata": meta("head-svc"),
        "spec": {"type": "ClusterIP", "clusterIP": "10.96.0.10", "clusterIPs": ["10.96.0.10"],
                 "ports": [{"name": "gcs", "port": 6379, "protocol": "TCP"},
                           {"name": "dashboard", "port": 8265}],
                 "selector": {"ray.io/node-type": "head", "ray.io/cluster": "c"}},
    }  # fmt: skip
    assert cells("services", svc) == [
        "head-svc", "ClusterIP", "10.96.0.10", "<none>", "6379/TCP,8265/TCP", "5m",
        "ray.io/cluster=c,ray.io/node-type=head",
    ]  # fmt: skip
    node_port = {"metadata": meta("np"), "spec": {"type": "NodePort", "clusterIPs": ["10.96.0.11"],
                 "ports": [{"port": 80, "nodePort": 30080, "protocol": "TCP"}]}}  # fmt: skip
    assert cells("services", node_port)[1:5] == ["NodePort", "10.96.0.11", "<none>", "80:30080/TCP"]
    headless = {"metadata": meta("h"), "spec": {"clusterIP": "None", "clusterIPs": ["None"]}}
    assert cells("services", headless)[1:5] == ["ClusterIP", "None", "<none>", "<none>"]
    assert cells("services", headless)[6] == "<none>"
    lb = {"metadata": meta("lb"), "spec": {"type": "LoadBalancer", "clusterIPs": ["10.96.0.12"]}}
    assert cells("services", lb)[3] == "<pending>"
    lb["status"] = {"loadBalancer": {"ingress": [{"ip": "1.2.3.4"}, {"hostname": "x.example"}]}}
    assert cells("services", lb)[3] == "1.2.3.4,x.example"
    ext = {"metadata": meta("e"), "spec": {"type": "ExternalName", "externalName": "db.example"}}
    assert cells("services", ext)[2:4] == ["<none>", "db.example"]


def test_endpoints_configmaps_secrets_serviceaccounts() -> None:
    addresses = [{"ip": f"10.0.0.{i}"} for i in range(1, 5)]
    eps = {
        "metadata": meta("svc"),
        "subsets": [{"addresses": addresses, "ports": [{"port": 8080}]}],
    }
    assert cells("endpoints", eps) == [
        "svc", "10.0.0.1:8080,10.0.0.2:8080,10.0.0.3:8080 + 1 more...", "5m",
    ]  # fmt: skip
    assert cells("endpoints", {"metadata": meta("empty")})[1] == "<none>"
    headless = {"metadata": meta("h"), "subsets": [{"addresses": addresses[:2]}]}
    assert cells("endpoints", headless)[1] == "10.0.0.1,10.0.0.2"
    cm = {"metadata": meta("cm"), "data": {"a": "1", "b": "2"}, "binaryData": {"c": "AA=="}}
    assert cells("configmaps", cm) == ["cm", 3, "5m"]
    assert [c["type"] for c in table("configmaps")["columnDefinitions"]] == [
        "string",
        "integer",
        "string",
    ]
    secret = {"metadata": meta("s"), "type": "Opaque", "data": {"password": "cGFzcw=="}}
    assert cells("secrets", secret) == ["s", "Opaque", 1, "5m"]
    sa = {"metadata": meta("default"), "secrets": [{"name": "t"}]}
    assert cells("serviceaccounts", sa) == ["default", 1, "5m"]
    assert cells("serviceaccounts", {"metadata": meta("x")}) == ["x", 0, "5m"]


def test_event_rows() -> None:
    assert headers("events") == [
        ("Last Seen", 0), ("Type", 0), ("Reason", 0), ("Object", 0), ("Subobject", 1),
        ("Source", 1), ("Message", 0), ("First Seen", 1), ("Count", 1), ("Name", 1),
    ]  # fmt: skip
    ev = {
        "metadata": meta("p.1"), "type": "Warning", "reason": "BackOff",
        "message": " restarting \n",
        "involvedObject": {"kind": "Pod", "name": "p", "fieldPath": "spec.containers{c}"},
        "source": {"component": "kubelet", "host": "node-1"}, "count": 4,
        "firstTimestamp": ago(hours=1), "lastTimestamp": ago(seconds=30),
    }  # fmt: skip
    assert cells("events", ev) == [
        "30s", "Warning", "BackOff", "pod/p", "spec.containers{c}", "kubelet, node-1",
        "restarting", "60m", 4, "p.1",
    ]  # fmt: skip
    new_style = {"metadata": meta("e2"), "type": "Normal", "reason": "Scheduled",
                 "involvedObject": {"kind": "Pod", "name": "p"}, "reportingController": "volcano",
                 "eventTime": "2026-11-29T11:59:50.123456Z"}  # fmt: skip
    assert cells("events", new_style)[:9] == [
        "9s", "Normal", "Scheduled", "pod/p", "", "volcano", "", "9s", 1,
    ]  # fmt: skip
    series = {
        **new_style,
        "series": {"count": 7, "lastObservedTime": "2026-11-29T11:59:58.000000Z"},
    }
    assert cells("events", series)[0] == "2s" and cells("events", series)[8] == 7


def test_lease_rows() -> None:
    lease = {"metadata": meta("lahar-scheduler"), "spec": {"holderIdentity": "sched-1"}}
    assert cells("leases.coordination.k8s.io", lease) == ["lahar-scheduler", "sched-1", "5m"]
    assert cells("leases.coordination.k8s.io", {"metadata": meta("x"), "spec": {}})[1] == ""


def job(status: dict[str, Any], **spec: Any) -> dict[str, Any]:
    template = {"spec": {"containers": [{"name": "submit", "image": "rayproject/ray:2.52.0"}]}}
    selector = {"matchLabels": {"batch.kubernetes.io/controller-uid": "u1"}}
    return {"metadata": meta("j"), "spec": {"template": template, "selector": selector, **spec},
            "status": status}  # fmt: skip


def test_job_rows() -> None:
    assert [h for h, _ in headers("jobs.batch")] == [
        "Name", "Status", "Completions", "Duration", "Age", "Containers", "Images", "Selector",
    ]  # fmt: skip
    complete = job({"succeeded": 1, "startTime": ago(minutes=4),
                    "completionTime": ago(minutes=3, seconds=30),
                    "conditions": [{"type": "SuccessCriteriaMet", "status": "True"},
                                   {"type": "Complete", "status": "True"}]},
                   completions=1)  # fmt: skip
    assert cells("jobs.batch", complete) == [
        "j", "Complete", "1/1", "30s", "5m", "submit", "rayproject/ray:2.52.0",
        "batch.kubernetes.io/controller-uid=u1",
    ]  # fmt: skip
    run = job({"active": 1, "startTime": ago(minutes=2)}, completions=3, parallelism=3)
    assert cells("jobs.batch", run)[1:4] == ["Running", "0/3", "2m"]
    failed = job({"failed": 3, "startTime": ago(minutes=4), "conditions": [
        {"type": "FailureTarget", "status": "True"},
        {"type": "Failed", "status": "True"}]})  # fmt: skip
    assert cells("jobs.batch", failed)[1:3] == ["Failed", "0/1"]
    suspended = job({"conditions": [{"type": "Suspended", "status": "True"}]}, parallelism=4)
    assert cells("jobs.batch", suspended)[1:4] == ["Suspended", "0/1 of 4", ""]
    deleting = job({"startTime": ago(minutes=1)})
    deleting["metadata"]["deletionTimestamp"] = ago(seconds=1)
    assert cells("jobs.batch", deleting)[1] == "Terminating"
    exprs = job({})
    exprs["spec"]["selector"] = {"matchLabels": {"b": "2"}, "matchExpressions": [
        {"key": "a", "operator": "In", "values": ["y", "x"]},
        {"key": "c", "operator": "DoesNotExist"}]}  # fmt: skip
    assert cells("jobs.batch", exprs)[7] == "a in (x,y),b=2,!c"


def test_priorityclass_and_crd_rows() -> None:
    assert [h for h, _ in headers("priorityclasses.scheduling.k8s.io")] == [
        "Name", "Value", "Global-Default", "Age", "PreemptionPolicy",
    ]  # fmt: skip
    pc = {
        "metadata": meta("high"),
        "value": 1000,
        "globalDefault": False,
        "preemptionPolicy": "Never",
    }
    assert cells("priorityclasses.scheduling.k8s.io", pc) == ["high", 1000, False, "5m", "Never"]
    crd = {"metadata": {"name": "rayclusters.ray.io", "creationTimestamp": "2026-11-29T10:00:00Z"}}
    out = table("customresourcedefinitions.apiextensions.k8s.io", crd)
    assert [c["name"] for c in out["columnDefinitions"]] == ["Name", "Created At"]
    assert [c["type"] for c in out["columnDefinitions"]] == ["string", "date"]
    assert out["rows"][0]["cells"] == ["rayclusters.ray.io", "2026-11-29T10:00:00Z"]
    binding = table("bindings", {"metadata": meta("b")})
    assert binding["rows"][0]["cells"] == ["b", ago(minutes=5)]


def test_naive_now_and_missing_timestamps() -> None:
    out = to_table(RT["namespaces"], [{"metadata": {"name": "x"}}], now=NOW.replace(tzinfo=None))
    assert out["rows"][0]["cells"] == ["x", "", "<unknown>"]
    odd = {"metadata": {"name": "y", "creationTimestamp": "not a time"}}
    assert table("configmaps", odd)["rows"][0]["cells"][2] == "<invalid>"


# --- custom resources --------------------------------------------------------------------------


def crd_type(name: str) -> ResourceType:
    (rt,) = from_crd(
        yaml.load((CRDS / name).read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    )
    return rt


def test_raycluster_printer_columns() -> None:
    rt = crd_type("ray.io_rayclusters.yaml")
    cluster = {
        "metadata": {"name": "raycluster-kuberay", "creationTimestamp": ago(hours=2, minutes=3)},
        "status": {"desiredWorkerReplicas": 1, "availableWorkerReplicas": 1, "desiredCPU": "2",
                   "desiredMemory": "3G", "desiredGPU": "0", "desiredTPU": "0", "state": "ready",
                   "head": {"podIP": "10.0.0.7", "serviceIP": "10.96.0.20"}},
    }  # fmt: skip
    out = to_table(rt, [cluster], now=NOW)
    defs = out["columnDefinitions"]
    assert [(d["name"], d["type"], d["priority"]) for d in defs] == [
        ("Name", "string", 0), ("desired workers", "integer", 0),
        ("available workers", "integer", 0), ("cpus", "string", 0), ("memory", "string", 0),
        ("gpus", "string", 0), ("tpus", "string", 1),
        ("status", "string", 0), ("age", "date", 0), ("head pod IP", "string", 1),
        ("head service IP", "string", 1),
    ]  # fmt: skip
    assert out["rows"][0]["cells"] == [
        "raycluster-kuberay", 1, 1, "2", "3G", "0", "0", "ready", "123m", "10.0.0.7", "10.96.0.20",
    ]  # fmt: skip
    fresh = {"metadata": {"name": "new", "creationTimestamp": ago(seconds=3)}}
    assert to_table(rt, [fresh], now=NOW)["rows"][0]["cells"] == ["new"] + [None] * 7 + [
        "3s",
        None,
        None,
    ]


def test_volcano_printer_columns() -> None:
    pg = {"metadata": {"name": "ray-c-pg", "creationTimestamp": ago(minutes=1)},
          "spec": {"minMember": 3, "queue": "team-a"},
          "status": {"phase": "Inqueue", "running": 0}}  # fmt: skip
    out = to_table(crd_type("scheduling.volcano.sh_podgroups.yaml"), [pg], now=NOW)
    assert [d["name"] for d in out["columnDefinitions"]] == [
        "Name",
        "STATUS",
        "minMember",
        "RUNNINGS",
        "AGE",
        "QUEUE",
    ]
    assert out["rows"][0]["cells"] == ["ray-c-pg", "Inqueue", 3, 0, "60s", "team-a"]
    queue = {"metadata": {"name": "root", "creationTimestamp": ago(days=3)}, "spec": {}}
    out = to_table(crd_type("scheduling.volcano.sh_queues.yaml"), [queue], now=NOW)
    assert out["rows"][0]["cells"] == ["root", None]


def custom(columns: list[dict[str, Any]]) -> ResourceType:
    return ResourceType("example.com", "v1", "Widget", "widgets", "widget", True, builtin=False,
                        printer_columns=tuple(columns))  # fmt: skip


def test_crd_without_columns_gets_name_and_age() -> None:
    out = to_table(
        custom([]),
        [{"metadata": {"name": "w", "creationTimestamp": ago(days=2, hours=3)}}],
        now=NOW,
    )
    assert [(d["name"], d["type"], d["format"]) for d in out["columnDefinitions"]] == [
        ("Name", "string", "name"), ("Age", "date", ""),
    ]  # fmt: skip
    assert out["rows"][0]["cells"] == ["w", "2d3h"]


READY_PATH = '.status.conditions[?(@.type=="Ready")].status'


def test_crd_columns_with_jsonpath_and_types() -> None:
    columns = [
        {"name": "Ready", "type": "string", "jsonPath": READY_PATH},
        {"name": "First", "type": "string", "jsonPath": ".spec.items[0].name"},
        {"name": "Last", "type": "string", "jsonPath": ".spec.items[-1].name"},
        {"name": "All", "type": "string", "jsonPath": ".spec.items[*].name"},
        {"name": "Count", "type": "integer", "jsonPath": ".spec.count", "priority": 1,
         "description": "how many", "format": "int32"},
        {"name": "Ratio", "type": "number", "jsonPath": ".spec.ratio"},
        {"name": "On", "type": "boolean", "jsonPath": ".spec.on"},
        {"name": "Labels", "type": "string", "jsonPath": ".metadata.labels"},
        {"name": "Big", "type": "string", "jsonPath": ".spec.big"},
        {"name": "Wrong", "type": "integer", "jsonPath": ".spec.on"},
        {"name": "Dotted", "type": "string", "jsonPath": ".metadata.annotations['a.b/c']"},
        {"name": "Since", "type": "date", "jsonPath": ".status.startTime"},
    ]  # fmt: skip
    obj = {
        "metadata": {"name": "w", "labels": {"z": "1", "a": "2"}, "annotations": {"a.b/c": "dot"}},
        "spec": {"items": [{"name": "one"}, {"name": "two"}], "count": 4.0, "ratio": 2,
                 "on": True, "big": 1234567.5},
        "status": {"conditions": [{"type": "Synced", "status": "False"},
                                  {"type": "Ready", "status": "True"}],
                   "startTime": ago(hours=5)},
    }  # fmt: skip
    out = to_table(custom(columns), [obj], now=NOW)
    count = out["columnDefinitions"][5]
    assert count == {
        "name": "Count",
        "type": "integer",
        "format": "int32",
        "description": "how many",
        "priority": 1,
    }
    assert out["rows"][0]["cells"] == [
        "w", "True", "one", "two", "one", 4, 2.0, True, '{"a":"2","z":"1"}', "1.2345675e+06",
        None, "dot", "5h",
    ]  # fmt: skip
    assert (
        to_table(custom(columns), [{"metadata": {"name": "e"}}], now=NOW)["rows"][0]["cells"]
        == ["e"] + [None] * 12
    )


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        (".a.b", [1]),
        ("{.a.b}", [1]),
        ("$.a.b", [1]),
        (".list[1].x", ["q"]),
        (".list[*].x", ["p", "q"]),
        (".list[5].x", []),
        (".missing.x", []),
        (".list[?(@.x=='q')].y", [2]),
        (".list[?(@.y>1)].x", ["q"]),
        (".list[?(@.y)].x", ["q"]),
        ('.list[?(@.x!="p")].x', ["q"]),
        (".a.*", [1]),
        (".a[*]", []),
        (".list.*", []),
        (".a[?(@.b)]", []),
    ],
)
def test_jsonpath_subset(path: str, expected: list[Any]) -> None:
    data = {"a": {"b": 1}, "list": [{"x": "p"}, {"x": "q", "y": 2}]}
    assert find(data, parse_jsonpath(path)) == expected


def test_jsonpath_rejects_garbage() -> None:
    with pytest.raises(ValueError):
        parse_jsonpath("status")
    with pytest.raises(ValueError):
        parse_jsonpath(".a[?(@.x ~ 1)]")
    bad = custom([{"name": "Bad", "type": "string", "jsonPath": "status"}])
    assert to_table(bad, [{"metadata": {"name": "w"}}], now=NOW)["rows"][0]["cells"] == ["w", None]
