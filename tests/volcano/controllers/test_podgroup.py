"""The podgroup controller: plain Volcano pods get a PodGroup of their own."""

from __future__ import annotations

from lahar.kube.resource import Resource
from lahar.volcano import constants as c
from lahar.volcano.controllers.common import NAMESPACES, PODGROUPS, PODS, QUEUES
from lahar.volcano.controllers.podgroup import build_podgroup, podgroup_name
from tests.volcano.controllers.conftest import VC, eventually

Obj = dict


def pod(name: str, scheduler: str = "volcano", **annotations: str) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "annotations": dict(annotations)},
        "spec": {
            "schedulerName": scheduler,
            "containers": [
                {
                    "name": "main",
                    "image": "busybox",
                    "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}},
                }
            ],
        },
    }


async def test_volcano_pod_gets_a_podgroup(vc: VC) -> None:
    created = await vc.create(PODS, pod("p1"))
    uid = created["metadata"]["uid"]
    name = f"podgroup-{uid}"

    async def annotated() -> bool:
        p = await vc.get(PODS, "p1")
        return (p or {}).get("metadata", {}).get("annotations", {}).get(c.GROUP_NAME_KEY) == name

    await eventually(annotated)
    pg = await vc.get(PODGROUPS, name)
    assert pg is not None
    assert pg["spec"]["minMember"] == 1
    assert pg["spec"]["queue"] == "default"
    assert pg["spec"]["minResources"] == {"cpu": "500m", "memory": "1Gi"}
    assert pg["status"]["phase"] == "Pending"
    owner = pg["metadata"]["ownerReferences"][0]
    assert (owner["kind"], owner["name"], owner["uid"]) == ("Pod", "p1", uid)


async def test_other_schedulers_and_grouped_pods_are_left_alone(vc: VC) -> None:
    await vc.create(PODS, pod("plain", scheduler="default-scheduler"))
    await vc.create(PODS, pod("watched"))
    await eventually(lambda: _annotated(vc, "watched"))
    plain = await vc.get(PODS, "plain")
    assert c.GROUP_NAME_KEY not in (plain["metadata"].get("annotations") or {})
    assert len(await vc.list(PODGROUPS)) == 1


async def _annotated(vc: VC, name: str) -> bool:
    p = await vc.get(PODS, name)
    return c.GROUP_NAME_KEY in ((p or {}).get("metadata", {}).get("annotations") or {})


async def test_queue_from_pod_annotation_and_namespace(vc: VC) -> None:
    await vc.create(
        QUEUES,
        {
            "apiVersion": "scheduling.volcano.sh/v1beta1",
            "kind": "Queue",
            "metadata": {"name": "q1"},
        },
        None,
    )
    await eventually(lambda: _state_is(vc, "q1", "Open"))
    await vc.create(PODS, pod("p2", **{c.QUEUE_ANNOTATION: "q1"}))
    await vc.create(
        NAMESPACES,
        {"metadata": {"name": "team", "annotations": {c.QUEUE_ANNOTATION: "q1"}}},
        None,
    )
    await vc.create(PODS, pod("p3"), "team")
    await eventually(lambda: _annotated(vc, "p2"))
    await eventually(lambda: _annotated_in(vc, "p3", "team"))
    for ns, name in (("default", "p2"), ("team", "p3")):
        p = await vc.get(PODS, name, ns)
        pg = await vc.get(PODGROUPS, p["metadata"]["annotations"][c.GROUP_NAME_KEY], ns)
        assert pg["spec"]["queue"] == "q1"


async def _annotated_in(vc: VC, name: str, ns: str) -> bool:
    p = await vc.get(PODS, name, ns)
    return c.GROUP_NAME_KEY in ((p or {}).get("metadata", {}).get("annotations") or {})


async def _state_is(vc: VC, name: str, state: str) -> bool:
    return await vc.queue_state(name) == state


def test_owned_pods_share_their_owners_group() -> None:
    owner = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "name": "etl",
        "uid": "job-uid",
        "controller": True,
    }
    p = pod("etl-abc", **{"volcano.sh/preemptable": "true"})
    p["metadata"].update(namespace="ns", uid="pod-uid", ownerReferences=[owner])
    p["spec"]["priorityClassName"] = "high"
    pg = build_podgroup(
        p,
        owner_annotations={"scheduling.volcano.sh/group-min-member": "3", "other": "x"},
        namespace_queue="team-q",
    )
    assert podgroup_name(p) == "podgroup-job-uid"
    assert pg["metadata"]["name"] == "podgroup-job-uid"
    assert pg["metadata"]["ownerReferences"] == [owner]
    assert pg["spec"] == {
        "minMember": 3,
        "queue": "team-q",
        "minResources": {"cpu": "1500m", "memory": "3Gi"},
        "priorityClassName": "high",
    }
    assert pg["metadata"]["annotations"] == {
        "scheduling.volcano.sh/group-min-member": "3",
        "volcano.sh/preemptable": "true",
    }


BATCH_JOBS = Resource("batch", "v1", "jobs", "Job")


async def test_pods_of_a_batch_job_share_one_podgroup(vc: VC) -> None:
    owner = await vc.create(
        BATCH_JOBS,
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {
                "name": "etl",
                "annotations": {"scheduling.volcano.sh/group-min-member": "2"},
            },
            "spec": {
                "template": {
                    "spec": {
                        "restartPolicy": "Never",
                        "schedulerName": "volcano",
                        "containers": [{"name": "main", "image": "busybox"}],
                    }
                }
            },
        },
    )
    ref = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "name": "etl",
        "uid": owner["metadata"]["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }
    for name in ("etl-a", "etl-b"):
        p = pod(name)
        p["metadata"]["ownerReferences"] = [ref]
        await vc.create(PODS, p)
    for name in ("etl-a", "etl-b"):
        await eventually(lambda n=name: _annotated(vc, n))
    pgs = await vc.list(PODGROUPS)
    assert [pg["metadata"]["name"] for pg in pgs] == [f"podgroup-{owner['metadata']['uid']}"]
    assert pgs[0]["spec"]["minMember"] == 2
    assert pgs[0]["spec"]["minResources"] == {"cpu": "1", "memory": "2Gi"}
    assert pgs[0]["metadata"]["ownerReferences"][0]["uid"] == owner["metadata"]["uid"]
