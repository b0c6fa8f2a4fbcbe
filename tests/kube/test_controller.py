"""Controller runner: For/Owns/Watches wiring, outcomes (success, error with backoff,
terminal error, requeue-after), concurrency, logs carrying the key, and metrics."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
from collections.abc import AsyncIterator

import lightkube
import pytest

from lahar.kube import rest
from lahar.kube.controller import Controller, controller_owner, generation_changed
from lahar.kube.factory import InformerFactory
from lahar.kube.informer import Backoff
from lahar.kube.metrics import ControllerMetrics
from lahar.kube.ratelimit import ExponentialRateLimiter
from lahar.kube.reconcile import Request, Result, TerminalError, logger
from lahar.kube.resource import Resource
from tests.kube.conftest import CONFIGMAPS, PODS, create_cm, eventually

SECRETS = Resource("", "v1", "secrets", "Secret")


@contextlib.asynccontextmanager
async def run(ctrl: Controller) -> AsyncIterator[None]:
    task = asyncio.create_task(ctrl.run())
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        await ctrl.informers.stop()


def value(metrics: ControllerMetrics, metric: str, **labels: str) -> float:
    return metrics.registry.get_sample_value(metric, labels) or 0.0


async def test_for_owns_and_watches_enqueue_the_right_requests(
    client: lightkube.AsyncClient,
) -> None:
    seen: list[Request] = []

    async def reconcile(req: Request) -> Result:
        seen.append(req)
        return Result()

    informers = InformerFactory(client, backoff=Backoff(0.02, 0.2))
    ctrl = (
        Controller("parents", reconcile, informers)
        .for_(CONFIGMAPS)
        .owns(SECRETS)
        .watches(PODS, lambda pod: [Request("default", pod["metadata"]["labels"]["parent"])])
    )
    parent = await create_cm(client, "parent")
    async with run(ctrl):
        await eventually(lambda: Request("default", "parent") in seen)
        seen.clear()
        ref = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "name": "parent",
            "uid": parent["metadata"]["uid"],
            "controller": True,
        }
        await rest.request(
            client,
            "POST",
            SECRETS.path("default"),
            body={"metadata": {"name": "owned", "ownerReferences": [ref]}},
        )
        await rest.request(
            client, "POST", SECRETS.path("default"), body={"metadata": {"name": "orphan"}}
        )
        await eventually(lambda: seen == [Request("default", "parent")])
        await rest.request(
            client,
            "POST",
            PODS.path("default"),
            body={
                "metadata": {"name": "p", "labels": {"parent": "via-pod"}},
                "spec": {"containers": [{"name": "c", "image": "x"}]},
            },
        )
        await eventually(lambda: Request("default", "via-pod") in seen)
        await asyncio.sleep(0.1)
        assert Request("default", "orphan") not in seen and Request("default", "owned") not in seen


def test_controller_owner_needs_controller_true_and_matching_kind() -> None:
    parent = Resource("ray.io", "v1", "rayclusters", "RayCluster")
    refs = [
        {"apiVersion": "ray.io/v1", "kind": "RayCluster", "name": "a", "uid": "1"},
        {
            "apiVersion": "ray.io/v1",
            "kind": "RayCluster",
            "name": "b",
            "uid": "2",
            "controller": True,
        },
    ]
    pod = {"metadata": {"name": "p", "namespace": "ns", "ownerReferences": refs}}
    assert controller_owner(pod, parent) == Request("ns", "b")
    other = Resource("batch", "v1", "jobs", "Job")
    assert controller_owner(pod, other) is None
    refs[1]["apiVersion"] = "other.io/v1"
    assert controller_owner(pod, parent) is None


async def test_errors_are_retried_with_growing_backoff(client: lightkube.AsyncClient) -> None:
    loop = asyncio.get_running_loop()
    times: list[float] = []

    async def reconcile(req: Request) -> Result:
        times.append(loop.time())
        if len(times) <= 4:
            raise RuntimeError("not yet")
        return Result()

    metrics = ControllerMetrics()
    ctrl = Controller(
        "flaky",
        reconcile,
        InformerFactory(client),
        metrics=metrics,
        rate_limiter=ExponentialRateLimiter(0.05, 10.0),
    ).for_(CONFIGMAPS)
    await create_cm(client, "x")
    async with run(ctrl):
        await eventually(lambda: len(times) == 5)
        await asyncio.sleep(0.3)
    assert len(times) == 5  # success stops the retries
    gaps = [b - a for a, b in itertools.pairwise(times)]
    for gap, want in zip(gaps, [0.05, 0.1, 0.2, 0.4], strict=True):
        assert want * 0.9 <= gap < want + 0.25, gaps
    assert (
        value(metrics, "controller_runtime_reconcile_total", controller="flaky", result="error")
        == 4
    )
    assert (
        value(metrics, "controller_runtime_reconcile_total", controller="flaky", result="success")
        == 1
    )
    assert value(metrics, "controller_runtime_reconcile_errors_total", controller="flaky") == 4
    assert value(metrics, "workqueue_retries_total", name="flaky", controller="flaky") == 4


async def test_terminal_error_is_not_retried(
    client: lightkube.AsyncClient, caplog: pytest.LogCaptureFixture
) -> None:
    calls: list[Request] = []

    async def reconcile(req: Request) -> Result:
        calls.append(req)
        raise TerminalError("bad spec")

    metrics = ControllerMetrics()
    ctrl = Controller(
        "term",
        reconcile,
        InformerFactory(client),
        metrics=metrics,
        rate_limiter=ExponentialRateLimiter(0.01, 0.1),
    ).for_(CONFIGMAPS)
    await create_cm(client, "x")
    with caplog.at_level(logging.ERROR, logger="lahar.kube.controller"):
        async with run(ctrl):
            await eventually(lambda: len(calls) == 1)
            await asyncio.sleep(0.3)
    assert len(calls) == 1
    assert (
        value(metrics, "controller_runtime_terminal_reconcile_errors_total", controller="term") == 1
    )
    rec = next(r for r in caplog.records if "terminal" in r.getMessage())
    assert rec.key == "default/x" and rec.controller == "term" and "default/x" in rec.getMessage()


async def test_requeue_after_and_requeue(client: lightkube.AsyncClient) -> None:
    loop = asyncio.get_running_loop()
    times: dict[str, list[float]] = {"after": [], "now": []}

    async def reconcile(req: Request) -> Result:
        times[req.name].append(loop.time())
        if req.name == "after" and len(times["after"]) < 3:
            return Result(requeue_after=0.25)
        if req.name == "now" and len(times["now"]) < 3:
            return Result(requeue=True)
        return Result()

    metrics = ControllerMetrics()
    ctrl = Controller(
        "rq",
        reconcile,
        InformerFactory(client),
        metrics=metrics,
        rate_limiter=ExponentialRateLimiter(0.01, 1.0),
    ).for_(CONFIGMAPS)
    await create_cm(client, "after")
    await create_cm(client, "now")
    async with run(ctrl):
        await eventually(lambda: len(times["after"]) == 3 and len(times["now"]) == 3)
    gaps = [b - a for a, b in zip(times["after"], times["after"][1:], strict=False)]
    assert all(0.24 <= g < 0.6 for g in gaps), gaps
    assert (
        value(
            metrics, "controller_runtime_reconcile_total", controller="rq", result="requeue_after"
        )
        == 2
    )
    assert (
        value(metrics, "controller_runtime_reconcile_total", controller="rq", result="requeue") == 2
    )


async def test_workers_run_concurrently_but_never_on_one_key(client: lightkube.AsyncClient) -> None:
    active: set[str] = set()
    overlap: list[str] = []
    peak = [0]
    count = [0]

    async def reconcile(req: Request) -> Result:
        if req.name in active:
            overlap.append(req.name)
        active.add(req.name)
        peak[0] = max(peak[0], len(active))
        await asyncio.sleep(0.05)
        active.discard(req.name)
        count[0] += 1
        return Result()

    ctrl = Controller("par", reconcile, InformerFactory(client), max_concurrent_reconciles=4).for_(
        CONFIGMAPS
    )
    for i in range(8):
        await create_cm(client, f"c{i}")
    async with run(ctrl):
        await eventually(lambda: count[0] >= 8)
        for i in range(8):  # changes while reconciling: queued again, never in parallel
            for j in range(3):
                await rest.request(
                    client,
                    "PATCH",
                    CONFIGMAPS.path("default", f"c{i}"),
                    body={"data": {"v": str(j)}},
                    content_type="application/merge-patch+json",
                )
        await asyncio.sleep(0.5)
    assert peak[0] == 4 and not overlap


async def test_reconciler_logger_carries_the_key(
    client: lightkube.AsyncClient, caplog: pytest.LogCaptureFixture
) -> None:
    async def reconcile(req: Request) -> Result:
        logger("lahar.test").info("working")
        return Result()

    ctrl = Controller("logs", reconcile, InformerFactory(client)).for_(CONFIGMAPS)
    await create_cm(client, "x")
    with caplog.at_level(logging.INFO, logger="lahar.test"):
        async with run(ctrl):
            await eventually(lambda: any(r.name == "lahar.test" for r in caplog.records))
    rec = next(r for r in caplog.records if r.name == "lahar.test")
    assert (rec.controller, rec.namespace, rec.key) == ("logs", "default", "default/x")
    assert "default/x" in rec.getMessage()


async def test_predicates_filter_events(client: lightkube.AsyncClient) -> None:
    seen: list[str] = []

    async def reconcile(req: Request) -> Result:
        seen.append(req.name)
        return Result()

    ctrl = Controller("pred", reconcile, InformerFactory(client)).for_(
        CONFIGMAPS,
        predicate=lambda o: not o["metadata"]["name"].startswith("skip"),
        update_predicate=lambda old, new: old.get("data") != new.get("data"),
    )
    await create_cm(client, "keep")
    await create_cm(client, "skip-me")
    async with run(ctrl):
        await eventually(lambda: seen == ["keep"])
        await rest.request(
            client,
            "PATCH",
            CONFIGMAPS.path("default", "keep"),
            body={"metadata": {"labels": {"a": "b"}}},
            content_type="application/merge-patch+json",
        )
        await asyncio.sleep(0.2)
        assert seen == ["keep"]  # a label change does not pass the update predicate
        await rest.request(
            client,
            "PATCH",
            CONFIGMAPS.path("default", "keep"),
            body={"data": {"v": "new"}},
            content_type="application/merge-patch+json",
        )
        await eventually(lambda: seen == ["keep", "keep"])


def test_generation_changed() -> None:
    old = {"metadata": {"generation": 1}}
    assert not generation_changed(old, {"metadata": {"generation": 1}})
    assert generation_changed(old, {"metadata": {"generation": 2}})
