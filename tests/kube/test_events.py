"""Event recorder: core/v1 Events with the right fields, and repeats within the
window aggregated into one Event whose count goes up."""

from __future__ import annotations

from typing import Any

import lightkube
import pytest

from lahar.kube import rest
from lahar.kube.events import EVENTS, EventRecorder
from tests.kube.conftest import create_cm


async def events_of(client: lightkube.AsyncClient, ns: str = "default") -> list[dict[str, Any]]:
    return (await rest.request(client, "GET", EVENTS.path(ns)))["items"]


async def test_event_fields(client: lightkube.AsyncClient) -> None:
    cm = await create_cm(client, "target")
    rec = EventRecorder(client, "lahar-operator", host="node-a")
    try:
        rec.normal(cm, "Created", "created the head pod")
        await rec.flush()
        [ev] = await events_of(client)
        assert ev["involvedObject"] == {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "name": "target",
            "namespace": "default",
            "uid": cm["metadata"]["uid"],
            "resourceVersion": cm["metadata"]["resourceVersion"],
        }
        assert (ev["reason"], ev["message"], ev["type"], ev["count"]) == (
            "Created",
            "created the head pod",
            "Normal",
            1,
        )
        assert ev["source"] == {"component": "lahar-operator", "host": "node-a"}
        assert ev["reportingComponent"] == "lahar-operator"
        assert ev["firstTimestamp"] == ev["lastTimestamp"]
        assert ev["metadata"]["name"].startswith("target.")
    finally:
        await rec.close()


async def test_repeats_within_window_aggregate(client: lightkube.AsyncClient) -> None:
    cm = await create_cm(client, "target")
    other = await create_cm(client, "other")
    now = [0.0]
    rec = EventRecorder(client, "c", clock=lambda: now[0])
    try:
        for _ in range(5):
            rec.warning(cm, "FailedScheduling", "0/3 nodes are available")
        rec.warning(cm, "FailedScheduling", "0/4 nodes are available")  # other message
        rec.warning(other, "FailedScheduling", "0/3 nodes are available")  # other object
        rec.normal(cm, "FailedScheduling", "0/3 nodes are available")  # other type
        await rec.flush()
        evs = await events_of(client)
        counts = sorted(
            (e["involvedObject"]["name"], e["type"], e["message"], e["count"]) for e in evs
        )
        assert counts == [
            ("other", "Warning", "0/3 nodes are available", 1),
            ("target", "Normal", "0/3 nodes are available", 1),
            ("target", "Warning", "0/3 nodes are available", 5),
            ("target", "Warning", "0/4 nodes are available", 1),
        ]
        agg = next(e for e in evs if e["count"] == 5)
        assert agg["lastTimestamp"] >= agg["firstTimestamp"]
        now[0] += 601  # past the ten-minute window: a new Event
        rec.warning(cm, "FailedScheduling", "0/3 nodes are available")
        await rec.flush()
        assert len(await events_of(client)) == 5
    finally:
        await rec.close()


async def test_deleted_event_is_recreated(client: lightkube.AsyncClient) -> None:
    cm = await create_cm(client, "target")
    rec = EventRecorder(client, "c")
    try:
        rec.normal(cm, "R", "m")
        await rec.flush()
        [ev] = await events_of(client)
        await rest.request(client, "DELETE", EVENTS.path("default", ev["metadata"]["name"]))
        rec.normal(cm, "R", "m")
        await rec.flush()
        [ev2] = await events_of(client)
        assert ev2["count"] == 1 and ev2["metadata"]["name"] != ev["metadata"]["name"]
    finally:
        await rec.close()


async def test_cluster_scoped_objects_get_events_in_default(client: lightkube.AsyncClient) -> None:
    ns = await rest.request(client, "GET", "/api/v1/namespaces/kube-system")
    rec = EventRecorder(client, "c")
    try:
        rec.normal(ns, "Seen", "hello")
        await rec.flush()
        [ev] = await events_of(client)
        assert ev["involvedObject"]["kind"] == "Namespace"
        assert "namespace" not in ev["involvedObject"]
    finally:
        await rec.close()


async def test_bad_type_is_refused_and_failures_do_not_raise(client: lightkube.AsyncClient) -> None:
    rec = EventRecorder(client, "c")
    try:
        with pytest.raises(ValueError):
            rec.event({"metadata": {"name": "x"}}, "Error", "R", "m")
        rec.normal({"kind": "ConfigMap", "metadata": {"name": "x", "namespace": "nope"}}, "R", "m")
        await rec.flush()  # the namespace does not exist: logged and dropped
        assert rec.dropped == 1
    finally:
        await rec.close()


async def test_spam_filter_limits_one_object(client: lightkube.AsyncClient) -> None:
    cm = await create_cm(client, "noisy")
    quiet = await create_cm(client, "quiet")
    now = [0.0]
    rec = EventRecorder(client, "c", spam_burst=5, spam_qps=1 / 300, clock=lambda: now[0])
    try:
        for i in range(8):
            rec.normal(cm, "Tick", f"tick {i}")
        rec.normal(quiet, "Tick", "tick")  # other objects have their own budget
        await rec.flush()
        names = sorted(e["involvedObject"]["name"] for e in await events_of(client))
        assert names == ["noisy"] * 5 + ["quiet"] and rec.filtered == 3
        now[0] += 300  # one token back
        rec.normal(cm, "Tick", "again")
        rec.normal(cm, "Tick", "and again")
        await rec.flush()
        assert len(await events_of(client)) == 7 and rec.filtered == 4
    finally:
        await rec.close()


async def test_a_full_queue_drops_and_says_so_once_per_interval(
    client: lightkube.AsyncClient, caplog: pytest.LogCaptureFixture
) -> None:
    cms = [await create_cm(client, f"busy-{i}") for i in range(6)]
    now = [0.0]
    rec = EventRecorder(client, "c", queue_size=2, clock=lambda: now[0])
    try:
        with caplog.at_level("WARNING", logger="lahar.kube.events"):
            for cm in cms:  # no await in between: the writer cannot take any yet
                rec.normal(cm, "Tick", "tick")
            now[0] += 11  # past DROP_LOG_INTERVAL: the next drop is reported with the count
            rec.normal(cms[0], "Tock", "tock")
            await rec.flush()
        assert rec.dropped == 5
        lines = [r.getMessage() for r in caplog.records if "queue full" in r.message]
        assert lines == [
            "event queue full; dropped 1 event(s), the latest Normal Tick on busy-2",
            "event queue full; dropped 4 event(s), the latest Normal Tock on busy-0",
        ]
        assert len(await events_of(client)) == 2  # what was queued is written
    finally:
        await rec.close()
