"""Running the scheduler: configuration reload, metrics on the manager's endpoint, leader
election (only the leader binds), binds answered 409 for bound pods, and the cache's
assumed-bind overlay."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path

import httpx2
import lightkube
import pytest

from lahar.apiserver.server import APIServer
from lahar.kube import client as kclient
from lahar.kube import rest
from lahar.kube.events import EventRecorder
from lahar.kube.factory import InformerFactory
from lahar.kube.leaderelection import LeaderElectionConfig
from lahar.kube.metrics import ControllerMetrics
from lahar.scheduler.api.task import TaskStatus
from lahar.scheduler.daemon.binder import Binder, BindRequest
from lahar.scheduler.daemon.cache import PODS, SchedulerCache, build
from lahar.scheduler.daemon.config import ConfigSource
from lahar.scheduler.daemon.metrics import SchedulerMetrics
from lahar.scheduler.framework.conf import ConfigError
from tests.scheduler.daemon.conftest import (
    Switch,
    eventually,
    fast_options,
    gang,
    node,
    pod,
    podgroup,
    pods_on_nodes,
    running,
)

ENQUEUE_ONLY = """\
actions: "enqueue"
tiers:
- plugins:
  - name: priority
  - name: gang
- plugins:
  - name: predicates
  - name: proportion
"""
ALLOCATE = ENQUEUE_ONLY.replace('"enqueue"', '"enqueue, allocate"')


async def metrics_text(port: int) -> str:
    async with httpx2.AsyncClient() as http:
        return (await http.get(f"http://127.0.0.1:{port}/metrics")).text


def sample(text: str, line_start: str) -> float | None:
    for line in text.splitlines():
        if line.startswith(line_start + " "):
            return float(line.rsplit(" ", 1)[1])
    return None


def test_config_source_keeps_the_old_configuration_on_a_bad_file(tmp_path: Path) -> None:
    conf = tmp_path / "volcano-scheduler.conf"
    conf.write_text(ENQUEUE_ONLY)
    results: list[str] = []
    src = ConfigSource(str(conf), on_reload=results.append)
    assert src.current().actions == ["enqueue"]
    conf.write_text('actions: "enqueue, teleport"\n')
    assert src.current().actions == ["enqueue"]
    assert src.error and "teleport" in src.error and results == ["error"]
    assert src.current().actions == ["enqueue"] and results == ["error"]  # said once
    conf.unlink()
    assert src.current().actions == ["enqueue"]
    conf.write_text(ALLOCATE)
    assert src.current().actions == ["enqueue", "allocate"]
    assert src.error is None and results[-1] == "success"
    bad = tmp_path / "bad.conf"
    bad.write_text("tiers: 3\n")
    with pytest.raises(ConfigError):
        ConfigSource(str(bad))  # a daemon does not start on a bad file


async def test_configuration_reloaded_while_running(
    client: lightkube.AsyncClient, tmp_path: Path
) -> None:
    conf = tmp_path / "volcano-scheduler.conf"
    conf.write_text(ENQUEUE_ONLY)
    await node(client, "n1", cpu="8")
    await gang(client, "g", 2)
    async with running(client, fast_options(scheduler_conf=str(conf))) as daemon:
        await eventually(lambda: daemon.scheduler.cycles >= 3)
        assert not any((await pods_on_nodes(client)).values())  # no allocate action
        conf.write_text("actions: [not, a, string]\n")
        await eventually(lambda: daemon.scheduler.config.error is not None)
        await eventually(lambda: daemon.scheduler.cycles >= 6)
        assert not any((await pods_on_nodes(client)).values())  # old conf still in force
        conf.write_text(ALLOCATE)

        async def bound() -> bool:
            return all((await pods_on_nodes(client)).values())

        await eventually(bound)
        text = await metrics_text(daemon.port or 0)
    assert sample(text, 'lahar_scheduler_config_reloads_total{result="error"}') == 1.0
    assert sample(text, 'lahar_scheduler_config_reloads_total{result="success"}') == 1.0


async def test_metrics_on_the_manager_endpoint(client: lightkube.AsyncClient) -> None:
    await node(client, "n1", cpu="8")
    await gang(client, "g", 3, cpu="500m")
    async with running(client) as daemon:

        async def bound() -> bool:
            return all((await pods_on_nodes(client)).values())

        await eventually(bound)
        later = daemon.scheduler.cycles + 3
        await eventually(lambda: daemon.scheduler.cycles >= later)
        text = await metrics_text(daemon.port or 0)
    assert (sample(text, "volcano_e2e_scheduling_latency_milliseconds_count") or 0) >= 1
    assert (
        sample(text, 'volcano_action_scheduling_latency_milliseconds_count{action="allocate"}') or 0
    ) >= 1
    assert (
        sample(text, 'volcano_action_scheduling_latency_microseconds_count{action="enqueue"}') or 0
    ) >= 1
    assert sample(text, 'volcano_schedule_attempts_total{result="scheduled"}') == 3.0
    assert sample(text, 'volcano_schedule_attempts_total{result="error"}') == 0.0
    assert sample(text, 'volcano_queue_allocated_milli_cpu{queue_name="default"}') == 1500.0
    assert sample(text, 'volcano_queue_allocated_memory_bytes{queue_name="default"}') == 3 * 2**30
    assert sample(text, 'volcano_queue_pod_group_running_count{queue_name="default"}') == 1.0
    assert (
        sample(text, 'volcano_task_scheduling_latency_milliseconds_count{stage="Bound"}') or 0
    ) == 3
    assert "volcano_pod_preemption_victims 0.0" in text
    assert "volcano_open_session_duration_milliseconds_count" in text
    assert (
        'volcano_plugin_scheduling_latency_milliseconds_count{OnSession="OnSessionOpen",plugin="all"}'
        in text
    )
    assert "volcano_e2e_job_scheduling_latency_milliseconds_count 1.0" in text
    assert "controller_runtime_" in text or "workqueue_" in text or "leader" in text


def election(identity: str) -> LeaderElectionConfig:
    return LeaderElectionConfig(
        name="volcano",
        namespace="kube-system",
        identity=identity,
        lease_duration=2.0,  # short, yet not lost to a busy CI machine's hiccup
        renew_deadline=1.2,
        retry_period=0.2,
    )


async def test_only_the_leader_binds(server: APIServer, client: lightkube.AsyncClient) -> None:
    switches = [Switch(server.app), Switch(server.app)]
    clients = [kclient.in_process(s, token=server.creds.token) for s in switches]
    await node(client, "n1", cpu="16")
    await gang(client, "first", 3)
    try:
        async with contextlib.AsyncExitStack() as stack:
            daemons = [
                await stack.enter_async_context(
                    running(c, fast_options(leader_election=election(f"s{i}")))
                )
                for i, c in enumerate(clients)
            ]

            async def bound() -> bool:
                return all((await pods_on_nodes(client)).values())

            await eventually(bound)
            await eventually(lambda: any(d.is_leader for d in daemons))
            leader = next(i for i, d in enumerate(daemons) if d.is_leader)
            other = 1 - leader
            assert len(switches[leader].binds()) == 3
            assert switches[other].binds() == []
            assert daemons[other].scheduler.cycles == 0
            # the leader goes away (clean stop, Lease released): the other takes over
            daemons[leader].stop()
            # it may finish a last cycle; the Lease is released only after that
            await eventually(lambda: daemons[other].is_leader)
            await gang(client, "second", 2)
            await eventually(bound)
            assert len(switches[other].binds()) == 2
            assert len(switches[leader].binds()) == 3
    finally:
        for c in clients:
            await c.close()


async def test_bind_of_an_already_bound_pod_counts_as_done(
    client: lightkube.AsyncClient, switch: Switch
) -> None:
    await node(client, "n1")
    await node(client, "n2")
    await podgroup(client, "g", 1)
    created = await pod(client, "p", "g")
    uid = created["metadata"]["uid"]
    factory = InformerFactory(client)
    cache = SchedulerCache(factory, ("volcano",))
    factory.start()
    recorder = EventRecorder(client, "volcano")
    binder = Binder(client, cache, recorder, SchedulerMetrics(ControllerMetrics().registry))
    try:
        assert await cache.wait_for_sync(10)
        # a bind that landed before a restart: the pod is on n1 already
        await rest.request(
            client,
            "POST",
            PODS.path("default", "p", "binding"),
            body={"metadata": {"name": "p"}, "target": {"kind": "Node", "name": "n1"}},
        )
        binder.submit([BindRequest("default", "p", uid, "n2", "default/g")])
        await binder.wait_idle(10)
        assert binder.failed == 0 and binder.bound == 0
        assert cache.assumed.get("default/p") is None or cache.assumed["default/p"].node == "n1"
        assert (await pods_on_nodes(client))["p"] == "n1"
        # the informer confirms: the overlay is dropped and the pod is Bound in a session
        await eventually(
            lambda: (cache.pods.get("p", "default") or {}).get("spec", {}).get("nodeName")
        )
        snap = cache.snapshot()
        assert "default/p" not in cache.assumed and not snap.binding
    finally:
        await binder.close()
        await recorder.close()
        await factory.stop()


async def test_assumed_bind_shows_as_binding_until_confirmed_or_forgotten(
    client: lightkube.AsyncClient,
) -> None:
    await node(client, "n1", cpu="2")
    await podgroup(client, "g", 1)
    created = await pod(client, "p", "g")
    uid = created["metadata"]["uid"]
    factory = InformerFactory(client)
    cache = SchedulerCache(factory, ("volcano",))
    factory.start()
    try:
        assert await cache.wait_for_sync(10)
        cache.assume("default/p", uid, "n1")
        cluster, bad = build(cache.snapshot())
        task = cluster.jobs["default/g"].tasks[uid]
        assert not bad and task.status == TaskStatus.BINDING and task.node == "n1"
        assert cluster.nodes.used[cluster.nodes.index["n1"]][0] == 1000  # cpu counted
        cache.forget("default/p", uid)  # the bind failed
        cluster, _ = build(cache.snapshot())
        assert cluster.jobs["default/g"].tasks[uid].status == TaskStatus.PENDING
        cache.assume("default/p", "someone-else", "n1")  # a stale uid: dropped
        assert not cache.snapshot().binding and "default/p" not in cache.assumed
    finally:
        await factory.stop()


async def test_a_pod_the_core_cannot_read_is_set_aside(client: lightkube.AsyncClient) -> None:
    await node(client, "n1", cpu="4")
    await gang(client, "ok", 1)
    await podgroup(client, "odd", 1)
    await pod(client, "odd-0", "odd")
    factory = InformerFactory(client)
    cache = SchedulerCache(factory, ("volcano",))
    factory.start()
    try:
        assert await cache.wait_for_sync(10)
        snap = cache.snapshot()
        for i, obj in enumerate(snap.objects):
            if obj["metadata"]["name"] == "odd-0":
                broken = {**obj, "spec": {**obj["spec"], "containers": "not a list"}}
                snap.objects[i] = broken
        cluster, bad = build(snap)
        assert list(bad) == ["Pod/default/odd-0"]
        assert "default/ok" in cluster.jobs
        assert any(t.name == "ok-0" for t in cluster.jobs["default/ok"].tasks.values())
    finally:
        await factory.stop()


def test_cli_durations_and_usage_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from lahar.cli.common import UsageError
    from lahar.cli.main import main
    from lahar.cli.scheduler import parse_duration

    assert parse_duration("1s") == 1.0
    assert parse_duration("500ms") == 0.5
    assert parse_duration("2m") == 120.0
    assert parse_duration("3") == 3.0
    for bad in ("soon", "0s", "-1s"):
        with pytest.raises(UsageError):
            parse_duration(bad)
    missing = tmp_path / "nope.yaml"
    assert main(["scheduler", "--kubeconfig", str(missing), "--health-port", "-1"]) == 2
    assert "--kubeconfig" in capsys.readouterr().err
    assert main(["scheduler", "--schedule-period", "fast"]) == 2
    assert "not a duration" in capsys.readouterr().err


async def test_a_failed_eviction_puts_the_pod_back(
    client: lightkube.AsyncClient, switch: Switch
) -> None:
    from lahar.scheduler.daemon.evictor import Evictor, EvictRequest

    await node(client, "n1")
    await podgroup(client, "g", 1)
    created = await pod(client, "p", "g")
    uid = created["metadata"]["uid"]
    factory = InformerFactory(client)
    cache = SchedulerCache(factory, ("volcano",))
    factory.start()
    recorder = EventRecorder(client, "volcano")
    metrics = SchedulerMetrics(ControllerMetrics().registry)
    evictor = Evictor(client, cache, recorder, metrics)
    try:
        assert await cache.wait_for_sync(10)
        switch.fail = lambda scope: 500 if scope["path"].endswith("/eviction") else None
        evictor.submit([EvictRequest("default", "p", uid, "preempt", "g")], {})
        assert cache.evicting == {"default/p": uid}  # Releasing at once
        await evictor.wait_idle(10)
        assert cache.evicting == {} and evictor.evicted == 0  # failed: as it was
        cluster, _ = build(cache.snapshot())
        assert cluster.jobs["default/g"].tasks[uid].status == TaskStatus.PENDING
        switch.fail = lambda scope: None
        evictor.submit([EvictRequest("default", "p", uid, "preempt", "g")], {})
        await evictor.wait_idle(10)
        assert evictor.evicted == 1
    finally:
        await evictor.close()
        await recorder.close()
        await factory.stop()


def test_lease_named_as_volcano_names_it() -> None:
    from lahar.cli.main import build_parser
    from lahar.cli.scheduler import options_from
    from lahar.scheduler.daemon import SchedulerOptions

    cfg = SchedulerOptions(leader_elect=True).election()
    assert cfg is not None and (cfg.namespace, cfg.name) == ("kube-system", "volcano")
    assert SchedulerOptions().election() is None
    two = SchedulerOptions(scheduler_names=("a", "b"), leader_elect=True).election()
    assert two is not None and two.name == "volcano"
    args = build_parser().parse_args(
        ["scheduler", "--leader-elect", "--scheduler-name", "batch", "--schedule-period", "250ms"]
    )
    opts = options_from(args)
    assert opts.schedule_period == 0.25 and opts.scheduler_names == ("batch",)
    election = opts.election()
    assert election is not None and election.name == "batch"


async def test_queue_counts_can_be_left_to_the_queue_controller(
    client: lightkube.AsyncClient,
) -> None:
    from lahar.scheduler.daemon.cache import QUEUES
    from tests.scheduler.daemon.conftest import get, queue

    await node(client, "n1", cpu="8")
    await queue(client, "team")
    await podgroup(client, "a", 1, queue="team")
    await pod(client, "a-0", "a")
    async with running(client, fast_options(queue_counts=False)) as daemon:

        async def allocated() -> dict | None:
            q = await get(client, QUEUES.path(None, "team"))
            status = q.get("status") or {}
            return status if (status.get("allocated") or {}).get("cpu") == "1" else None

        status = await eventually(allocated)
        text = await metrics_text(daemon.port or 0)
    assert not any(k in status for k in ("pending", "inqueue", "running", "unknown"))
    assert "volcano_queue_pod_group_running_count" not in text
    assert 'volcano_queue_allocated_milli_cpu{queue_name="team"} 1000.0' in text


async def test_cancelled_status_writes_leave_nothing_unawaited() -> None:
    """Writes a stopping scheduler never started are closed, not leaked un-awaited."""
    from lahar.scheduler.daemon.writes import bounded_gather

    gate = asyncio.Event()

    async def write() -> bool:
        await gate.wait()
        return True

    writes = [write() for _ in range(10)]
    task = asyncio.create_task(bounded_gather(writes, 2))
    await asyncio.sleep(0.01)  # two started, eight waiting for the semaphore
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    assert all(w.cr_frame is None for w in writes)  # finished or closed, none pending
