"""The objects a vcjob turns into: pods, PodGroup and the svc/env plugin objects."""

from __future__ import annotations

from lahar.volcano.jobs import plan
from lahar.volcano.jobs.plugins import hosts, svc_objects
from lahar.volcano.jobs.podgroup import desired_podgroup, min_resources, podgroup_update
from lahar.volcano.jobs.pods import build_pod
from tests.volcano.helpers import container, task
from tests.volcano.jobfix import NOW, podgroup, vcjob


def sized(
    name: str, replicas: int, cpu: str, min_available: int | None = None, pc: str = ""
) -> dict:
    t = task(name, replicas, min_available)
    t["template"]["spec"]["containers"] = [container(requests={"cpu": cpu, "memory": "1Gi"})]
    if pc:
        t["template"]["spec"]["priorityClassName"] = pc
    return t


def test_pod_name_labels_annotations_and_owner() -> None:
    j = vcjob(task("ps", 1), task("worker", 3), queue="team", priorityClassName="high")
    j["status"] = {"version": 2, "retryCount": 1}
    j["metadata"]["annotations"] = {
        "volcano.sh/preemptable": "true",
        "volcano.sh/jdb-min-available": "1",
    }
    pod = build_pod(j, 1, 2)
    meta = pod["metadata"]
    assert meta["name"] == "j-worker-2"
    assert meta["namespace"] == "ns"
    assert meta["labels"] == {
        "volcano.sh/task-index": "2",
        "volcano.sh/job-name": "j",
        "volcano.sh/task-spec": "worker",
        "volcano.sh/job-namespace": "ns",
        "volcano.sh/queue-name": "team",
    }
    assert meta["annotations"] == {
        "volcano.sh/task-spec": "worker",
        "scheduling.k8s.io/group-name": "j-u1",
        "volcano.sh/job-name": "j",
        "volcano.sh/queue-name": "team",
        "volcano.sh/job-version": "2",
        "volcano.sh/job-retry-count": "1",
        "volcano.sh/template-uid": "j-worker",
        "volcano.sh/task-index": "2",
        "volcano.sh/preemptable": "true",
        "volcano.sh/jdb-min-available": "1",
    }
    assert meta["ownerReferences"] == [
        {
            "apiVersion": "batch.volcano.sh/v1alpha1",
            "kind": "Job",
            "name": "j",
            "uid": "u1",
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    assert pod["spec"]["schedulerName"] == "volcano"
    assert pod["spec"]["priorityClassName"] == "high"


def test_template_scheduler_name_and_labels_survive() -> None:
    t = task("w", 1)
    t["template"]["metadata"] = {"labels": {"app": "x"}}
    t["template"]["spec"]["schedulerName"] = "custom"
    pod = build_pod(vcjob(t), 0, 0)
    assert pod["metadata"]["labels"]["app"] == "x"
    assert pod["spec"]["schedulerName"] == "custom"


def test_env_plugin() -> None:
    t = task("w", 2)
    t["template"]["spec"]["initContainers"] = [container("init")]
    pod = build_pod(vcjob(t, plugins={"env": []}), 0, 1)
    for c in (pod["spec"]["containers"][0], pod["spec"]["initContainers"][0]):
        assert c["env"] == [
            {"name": "VK_TASK_INDEX", "value": "1"},
            {"name": "VC_TASK_INDEX", "value": "1"},
        ]


def test_svc_plugin_hosts_and_env() -> None:
    j = vcjob(task("ps", 1), task("my-worker", 2), plugins={"svc": []})
    assert hosts(j) == {
        "ps.host": "j-ps-0.j",
        "VC_PS_HOSTS": "j-ps-0.j",
        "VC_PS_NUM": "1",
        "my_worker.host": "j-my-worker-0.j\nj-my-worker-1.j",
        "VC_MY_WORKER_HOSTS": "j-my-worker-0.j,j-my-worker-1.j",
        "VC_MY_WORKER_NUM": "2",
    }
    pod = build_pod(j, 1, 0)
    assert (pod["spec"]["hostname"], pod["spec"]["subdomain"]) == ("j-my-worker-0", "j")
    env = {
        e["name"]: e["valueFrom"]["configMapKeyRef"] for e in pod["spec"]["containers"][0]["env"]
    }
    assert env["VC_MY_WORKER_HOSTS"] == {"name": "j-svc", "key": "VC_MY_WORKER_HOSTS"}
    assert set(env) == {"VC_PS_HOSTS", "VC_PS_NUM", "VC_MY_WORKER_HOSTS", "VC_MY_WORKER_NUM"}
    assert pod["spec"]["volumes"] == [{"name": "j-svc", "configMap": {"name": "j-svc"}}]
    assert pod["spec"]["containers"][0]["volumeMounts"] == [
        {"name": "j-svc", "mountPath": "/etc/volcano"}
    ]


def test_svc_objects() -> None:
    cm, svc, netpol = svc_objects(vcjob(plugins={"svc": ["--publish-not-ready-addresses"]}))
    assert (cm["kind"], cm["metadata"]["name"]) == ("ConfigMap", "j-svc")
    assert svc["metadata"]["name"] == "j"
    assert svc["spec"]["clusterIP"] == "None"
    assert svc["spec"]["publishNotReadyAddresses"] is True
    assert svc["spec"]["selector"] == {"volcano.sh/job-name": "j", "volcano.sh/job-namespace": "ns"}
    assert netpol["kind"] == "NetworkPolicy"
    assert netpol["spec"]["policyTypes"] == ["Ingress"]
    assert [
        o["kind"] for o in svc_objects(vcjob(plugins={"svc": ["--disable-network-policy"]}))
    ] == [
        "ConfigMap",
        "Service",
    ]


def test_podgroup_shape() -> None:
    j = vcjob(
        sized("ps", 1, "1"), sized("worker", 4, "2", 2), queue="team", priorityClassName="high"
    )
    pg = desired_podgroup(j)
    assert pg["metadata"]["name"] == "j-u1"
    assert pg["metadata"]["ownerReferences"][0]["uid"] == "u1"
    assert pg["spec"] == {
        "minMember": 3,
        "minTaskMember": {"ps": 1, "worker": 2},
        "queue": "team",
        "priorityClassName": "high",
        "minResources": {"cpu": "5", "memory": "3Gi"},
    }


def test_podgroup_name_without_uid_is_the_job_name() -> None:
    j = vcjob()
    del j["metadata"]["uid"]
    assert desired_podgroup(j)["metadata"]["name"] == "j"


def test_min_resources_below_task_minimums_takes_high_priority_first() -> None:
    # job minAvailable 2 < 1 + 3: the first two replicas in priority order count.
    j = vcjob(sized("low", 3, "1", 3, "low"), sized("high", 1, "4", 1, "high"), minAvailable=2)
    assert min_resources(j, {"high": 100, "low": 1}) == {"cpu": "5", "memory": "2Gi"}


def test_min_resources_tops_up_to_job_min_available() -> None:
    # task minimums 1 + 1, job minAvailable 4: two more replicas from the top-priority task.
    j = vcjob(sized("a", 3, "1", 1, "high"), sized("b", 3, "500m", 1), minAvailable=4)
    assert min_resources(j, {"high": 10}) == {"cpu": "3500m", "memory": "4Gi"}


def test_podgroup_update_on_scaling() -> None:
    j = vcjob(sized("w", 2, "1"))
    pg = {**desired_podgroup(j), "status": {"phase": "Running"}}
    assert podgroup_update(pg, j) is None
    j["spec"]["tasks"][0].update(replicas=4, minAvailable=4)
    j["spec"]["minAvailable"] = 4
    updated = podgroup_update(pg, j)
    assert updated is not None
    assert updated["spec"]["minMember"] == 4
    assert updated["spec"]["minResources"] == {"cpu": "4", "memory": "4Gi"}
    assert updated["status"] == {"phase": "Running"}


def test_plan_creates_podgroup_first_and_pods_after_enqueue() -> None:
    j = vcjob(plugins={"svc": []})
    first = plan(j, [], None, NOW)
    assert first.create_podgroup is not None and first.create_pods == []
    assert [o["kind"] for o in first.apply_objects] == ["ConfigMap", "Service", "NetworkPolicy"]
    assert first.status["controlledResources"] == {"plugin-svc": "svc"}
    assert plan(j, [], podgroup("Pending"), NOW).create_pods == []
    assert plan(j, [], podgroup(""), NOW).create_pods == []
    enqueued = plan(j, [], podgroup("Inqueue"), NOW)
    assert [p["metadata"]["name"] for p in enqueued.create_pods] == [
        "j-ps-0",
        "j-worker-0",
        "j-worker-1",
    ]
    assert enqueued.status["pending"] == 3
