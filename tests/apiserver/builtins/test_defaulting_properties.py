"""Property tests: defaulting is idempotent and defaulted valid objects stay valid."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from lahar.apiserver.builtins import default, validate_create

from .helpers import RT, context

NAME = st.from_regex(r"\A[a-z]([-a-z0-9]{0,10}[a-z0-9])?\Z", fullmatch=True)
IMAGE = st.sampled_from(
    ["busybox", "busybox:1.36", "nginx:latest", "reg:5000/a/b", "x@sha256:" + "0" * 64]
)
QUANTITY = st.sampled_from(
    ["100m", "0.5", "1", "2", "1500m", "1Gi", "1.5Gi", "512Mi", "1e3", "1000M", "7"]
)


@st.composite
def containers(draw: st.DrawFn) -> list[dict[str, Any]]:
    names = draw(st.lists(NAME, min_size=1, max_size=3, unique=True))
    out = []
    for name in names:
        ctr: dict[str, Any] = {"name": name, "image": draw(IMAGE)}
        if draw(st.booleans()):
            ctr["ports"] = [{"containerPort": draw(st.integers(1, 65535))}]
        limits = draw(st.dictionaries(st.sampled_from(["cpu", "memory"]), QUANTITY, max_size=2))
        requests = draw(st.dictionaries(st.sampled_from(["cpu", "memory"]), QUANTITY, max_size=2))
        resources = {k: v for k, v in (("limits", limits), ("requests", requests)) if v}
        if resources:
            ctr["resources"] = resources
        out.append(ctr)
    return out


@st.composite
def pods(draw: st.DrawFn) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": draw(containers())}
    if draw(st.booleans()):
        spec["restartPolicy"] = draw(st.sampled_from(["Always", "OnFailure", "Never"]))
    if draw(st.booleans()):
        spec["tolerations"] = [{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}]
    if draw(st.booleans()):
        spec["volumes"] = [{"name": "scratch"}]
    return {"metadata": {"name": draw(NAME), "namespace": "default", "uid": "u"}, "spec": spec}


@st.composite
def jobs(draw: st.DrawFn) -> dict[str, Any]:
    pod = draw(pods())
    pod["spec"]["restartPolicy"] = draw(st.sampled_from(["OnFailure", "Never"]))
    spec: dict[str, Any] = {"template": {"spec": pod["spec"]}}
    for field in ("parallelism", "completions"):
        if draw(st.booleans()):
            spec[field] = draw(st.integers(0, 10))
    if draw(st.booleans()):
        spec["template"]["metadata"] = {"labels": {"app": draw(NAME)}}
    return {"metadata": {"name": draw(NAME), "namespace": "default", "uid": "u-1"}, "spec": spec}


@st.composite
def services(draw: st.DrawFn) -> dict[str, Any]:
    count = draw(st.integers(1, 3))
    ports = [{"port": 80 + i, "name": f"p{i}"} for i in range(count)]
    spec: dict[str, Any] = {"ports": ports, "selector": {"app": draw(NAME)}}
    if draw(st.booleans()):
        spec["type"] = draw(st.sampled_from(["ClusterIP", "NodePort", "LoadBalancer"]))
    if draw(st.booleans()):
        spec["sessionAffinity"] = draw(st.sampled_from(["None", "ClientIP"]))
    return {"metadata": {"name": draw(NAME), "namespace": "default"}, "spec": spec}


def twice(obj: dict[str, Any], kind: str) -> tuple[dict[str, Any], dict[str, Any]]:
    rt = RT[kind]
    once = default(obj, rt, context())
    # The second pass sees a stored object (an update), like every later write.
    return once, default(once, rt, context(), old=once)


@settings(max_examples=60, deadline=None)
@given(pods())
def test_pod_defaulting_is_idempotent(obj: dict[str, Any]) -> None:
    once, again = twice(obj, "Pod")
    assert again == once
    assert default(once, RT["Pod"], context()) == once


@settings(max_examples=60, deadline=None)
@given(jobs())
def test_job_defaulting_is_idempotent(obj: dict[str, Any]) -> None:
    once, again = twice(obj, "Job")
    assert again == once
    assert default(once, RT["Job"], context()) == once


@settings(max_examples=60, deadline=None)
@given(services())
def test_service_defaulting_is_idempotent(obj: dict[str, Any]) -> None:
    once, again = twice(obj, "Service")
    assert again == once


@settings(max_examples=60, deadline=None)
@given(pods())
def test_defaulted_pods_only_fail_on_resource_bounds(obj: dict[str, Any]) -> None:
    out = default(obj, RT["Pod"], context())
    for cause in validate_create(out, RT["Pod"]):
        assert cause.field.endswith("resources.requests"), cause
