"""Hypothesis properties of the builders over generated RayClusters/RayJobs."""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from lahar.api.quantity import parse_quantity
from lahar.kuberay import volcano
from lahar.kuberay.render import render_raycluster, render_rayjob
from tests.kuberay.helpers import minimal_cluster, minimal_job

NAMES = st.from_regex(r"[a-z][a-z0-9]{0,10}", fullmatch=True)


@st.composite
def groups(draw: st.DrawFn) -> list[dict[str, Any]]:
    base = minimal_cluster()["spec"]["workerGroupSpecs"][0]
    names = draw(st.lists(NAMES, min_size=0, max_size=3, unique=True))
    out = []
    for name in names:
        group = copy.deepcopy(base)
        lo = draw(st.integers(0, 3))
        hi = draw(st.integers(lo, 5))
        group.update(
            groupName=name,
            minReplicas=lo,
            maxReplicas=hi,
            replicas=draw(st.integers(0, 7)),
            numOfHosts=draw(st.integers(0, 3)),
        )
        cpu = draw(st.sampled_from(["100m", "1", "1500m", "2"]))
        group["template"]["spec"]["containers"][0]["resources"] = {"requests": {"cpu": cpu}}
        out.append(group)
    return out


def _clamp(g: dict[str, Any]) -> int:
    return max(g["minReplicas"], min(g["replicas"], g["maxReplicas"]))


@given(groups(), st.booleans(), st.integers(0, 10**6))
def test_cluster_render_invariants(
    workers: list[dict[str, Any]], autoscaling: bool, seed: int
) -> None:
    obj = minimal_cluster(workerGroupSpecs=workers, enableInTreeAutoscaling=autoscaling)
    result = render_raycluster(obj, seed=seed, batch_scheduler="volcano")
    cluster = result.objects[0]
    uid = cluster["metadata"]["uid"]
    pods = [o for o in result.objects if o["kind"] == "Pod"]
    # one head plus clamp(replicas) x numOfHosts workers per group
    assert len(pods) == 1 + sum(_clamp(g) * g["numOfHosts"] for g in workers)
    names = [p["metadata"]["name"] for p in pods]
    assert len(set(names)) == len(names)
    for obj_ in result.objects[1:]:
        (ref,) = obj_["metadata"]["ownerReferences"]
        assert ref["uid"] == uid and ref["controller"] is True
    for pod in pods:
        labels = pod["metadata"]["labels"]
        assert labels["ray.io/cluster"] == "demo"
        assert labels["ray.io/is-ray-node"] == "yes"
        assert pod["metadata"]["namespace"] == "ns1"
        assert pod["metadata"]["name"].startswith(pod["metadata"]["generateName"])
        assert len(pod["metadata"]["name"]) <= 63
        ray = pod["spec"]["containers"][0]
        assert "--block " in ray["args"][0]
        assert pod["metadata"]["annotations"]["scheduling.k8s.io/group-name"] == "ray-demo-pg"
    (pg,) = [o for o in result.objects if o["kind"] == "PodGroup"]
    count = (lambda g: g["minReplicas"]) if autoscaling else _clamp
    assert pg["spec"]["minMember"] == 1 + sum(count(g) * g["numOfHosts"] for g in workers)
    factor = (lambda g: g["minReplicas"]) if autoscaling else (lambda g: g["replicas"])
    expected_cpu = 1 + sum(
        parse_quantity(g["template"]["spec"]["containers"][0]["resources"]["requests"]["cpu"])
        * factor(g)
        * g["numOfHosts"]
        for g in workers
    )
    assert parse_quantity(pg["spec"]["minResources"]["cpu"]) == expected_cpu


@given(
    st.sampled_from(["K8sJobMode", "HTTPMode", "InteractiveMode", "SidecarMode"]),
    groups(),
    st.integers(0, 100),
)
def test_rayjob_podgroup_excludes_submitter_from_members(
    mode: str, workers: list[dict[str, Any]], seed: int
) -> None:
    job = minimal_job(submissionMode=mode)
    job["spec"]["rayClusterSpec"]["workerGroupSpecs"] = workers
    result = render_rayjob(job, seed=seed, batch_scheduler="volcano")
    (pg,) = [o for o in result.objects if o["kind"] == "PodGroup"]
    (cluster,) = [o for o in result.objects if o["kind"] == "RayCluster"]
    members, resources = volcano.cluster_sizing(job["spec"]["rayClusterSpec"])
    assert pg["spec"]["minMember"] == members
    extra = parse_quantity("500m") if mode in ("K8sJobMode", "SidecarMode") else 0
    assert parse_quantity(pg["spec"]["minResources"]["cpu"]) == resources.values["cpu"] + extra
    assert cluster["metadata"]["labels"]["ray.io/job-submission-mode"] == mode
    pods = [o for o in result.objects if o["kind"] == "Pod"]
    assert all(
        p["metadata"]["annotations"]["scheduling.k8s.io/group-name"] == "ray-job-pg" for p in pods
    )
    jobs = [o for o in result.objects if o["kind"] == "Job"]
    assert len(jobs) == (1 if mode == "K8sJobMode" else 0)


PARAM_KEYS = st.from_regex(r"[a-z][a-z-]{0,12}[a-z]", fullmatch=True)
PARAM_VALUES = st.one_of(
    st.sampled_from(["true", "false", "TRUE", "False"]),
    st.from_regex(r"[a-zA-Z0-9./:]{1,10}", fullmatch=True),
)


@given(st.dictionaries(PARAM_KEYS, PARAM_VALUES, max_size=8))
def test_flags_round_trip(params: dict[str, str]) -> None:
    from lahar.kuberay.raystart import render_flags

    rendered = render_flags(params)
    tokens = rendered.split()
    assert tokens == sorted(tokens, key=lambda t: t[2:].split("=", 1)[0])
    parsed: dict[str, str] = {}
    for token in tokens:
        key, _, value = token[2:].partition("=")
        parsed[key] = value or "true"
    special = ("log-color", "include-dashboard", "include-log-monitor")
    expected = {
        k: ("true" if v.lower() == "true" and k not in special else v)
        for k, v in params.items()
        if v.lower() != "false" or k in special
    }
    assert parsed == expected
    assert rendered == "" or (rendered.startswith(" --") and rendered.endswith(" "))


@given(NAMES, st.integers(0, 50))
def test_rayjob_children_share_namespace_and_dns_names(name: str, seed: int) -> None:
    import re

    job = minimal_job()
    job["metadata"]["name"] = name
    result = render_rayjob(job, seed=seed, batch_scheduler="volcano")
    for obj in result.objects:
        meta = obj["metadata"]
        assert meta["namespace"] == "ns1"
        assert re.fullmatch(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?", meta["name"]), meta["name"]
        assert len(meta["name"]) <= 63
    status = result.objects[0]["status"]
    assert status["rayClusterName"].startswith(f"{name}-")
    assert status["jobId"].startswith(f"{name}-")
