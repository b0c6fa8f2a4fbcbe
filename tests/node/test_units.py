"""The simulator's small parts on their own: durations, options, addresses, the write
queue, the loopback log endpoint and the ``lahar node`` command line."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable

import httpx2
import pytest

from lahar.apiserver.logs import LogRequest
from lahar.cli.main import main as lahar_main
from lahar.kube import rest
from lahar.node.logserver import LogServer, parse_request
from lahar.node.podstatus import merge_conditions
from lahar.node.sim import SimOptions, parse_duration
from lahar.node.sim.addresses import SimNode, node_ips
from lahar.node.writer import WriteQueue


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("30", 30.0),
        ("2.5", 2.5),
        ("0", 0.0),
        ("500ms", 0.5),
        ("1m30s", 90.0),
        ("1h2m3.5s", 3723.5),
        ("1.5h", 5400.0),
        ("250us", 0.00025),
        (" 10s ", 10.0),
    ],
)
def test_parse_duration(text: str, seconds: float) -> None:
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["", "ten", "10x", "-1", "-5s", "1m-3s", "s", "1 m"])
def test_parse_duration_rejects(text: str) -> None:
    with pytest.raises(ValueError):
        parse_duration(text)


def test_options_validate() -> None:
    for bad in (
        {"count": -1},
        {"cpu": "lots"},
        {"memory": "0"},
        {"gpu": -2},
        {"pods": 0},
        {"heartbeat": 0},
        {"concurrency": 0},
    ):
        with pytest.raises(ValueError):
            SimOptions(**bad)
    opts = SimOptions(count=3, cpu="500m", memory="1536Mi", gpu=1, name_prefix="n")
    assert opts.node_names() == ["n0", "n1", "n2"]
    assert opts.instance_type_label() == "sim.500mcpu-1536Mi-1gpu"
    assert opts.capacity()["nvidia.com/gpu"] == "1"


def test_node_addresses_are_unique() -> None:
    ips, cidrs = zip(*(node_ips(i) for i in range(5000)), strict=True)
    assert len(set(ips)) == 5000 and len(set(cidrs)) == 5000
    assert all(not ip.endswith((".0", ".255")) for ip in ips)


def test_pod_ips_are_reused_after_release() -> None:
    node = SimNode("n", 0, "10.0.0.2", "10.64.0.0/24")
    ips = [node.allocate_ip() for _ in range(253)]
    assert len(set(ips)) == 253 and "10.64.0.1" not in ips
    node.release_ip(ips[10])
    assert node.allocate_ip() == ips[10]


def test_merge_conditions_keeps_transition_times() -> None:
    old = [
        {"type": "PodScheduled", "status": "True", "lastTransitionTime": "T0"},
        {"type": "Ready", "status": "False", "lastTransitionTime": "T0"},
        {"type": "Custom", "status": "True", "lastTransitionTime": "T0"},
    ]
    new = merge_conditions(old, {"PodScheduled": ("True", ""), "Ready": ("True", "")}, "T1")
    by_type = {c["type"]: c for c in new}
    assert by_type["PodScheduled"]["lastTransitionTime"] == "T0"
    assert by_type["Ready"]["lastTransitionTime"] == "T1"
    assert by_type["Custom"] == old[2]


async def test_write_queue_coalesces_and_orders_per_key() -> None:
    q = WriteQueue(concurrency=4)
    seen: list[str] = []
    gate = asyncio.Event()

    def write(tag: str, wait: bool = False) -> Callable[[], Awaitable[None]]:
        async def run() -> None:
            if wait:
                await gate.wait()
            seen.append(tag)

        return run

    q.start()
    try:
        q.submit("a", write("a1", wait=True))
        await asyncio.sleep(0.01)  # a1 is in flight
        q.submit("a", write("a2"))
        q.submit("a", write("a3"))  # replaces a2, which never ran
        q.submit("b", write("b1"))
        await asyncio.sleep(0.01)
        assert seen == ["b1"]  # a3 waits for a1
        gate.set()
        await asyncio.wait_for(q.wait_idle(), 5)
        assert seen == ["b1", "a1", "a3"]
    finally:
        await q.stop()


async def test_write_queue_retries_and_gives_up_on_404() -> None:
    q = WriteQueue(concurrency=1)
    calls = {"flaky": 0, "gone": 0}

    async def flaky() -> None:
        calls["flaky"] += 1
        if calls["flaky"] < 3:
            raise ConnectionError("down")

    async def gone() -> None:
        calls["gone"] += 1
        raise rest.api_error(404, b"")

    q.start()
    try:
        q.submit("flaky", flaky)
        q.submit("gone", gone)
        await asyncio.sleep(1.5)
        await asyncio.wait_for(q.wait_idle(), 5)
        assert calls == {"flaky": 3, "gone": 1}
        assert q.failed == 0
    finally:
        await q.stop()


class _Source:
    async def stream(self, request: LogRequest) -> AsyncIterator[bytes]:
        if request.pod != "known":
            raise LookupError(f"no pod {request.pod}")
        for i in range(3):
            yield f"line {i} of {request.container}\n".encode()


async def test_log_server_serves_and_refuses() -> None:
    server = LogServer(_Source())
    port = await server.start()
    try:
        async with httpx2.AsyncClient(base_url=f"http://127.0.0.1:{port}") as http:
            ok = await http.get("/containerLogs/default/known/main?follow=true")
            assert ok.status_code == 200
            assert ok.text == "line 0 of main\nline 1 of main\nline 2 of main\n"
            assert (await http.get("/containerLogs/default/other/main")).status_code == 404
            assert (await http.get("/elsewhere")).status_code == 404
    finally:
        await server.stop()


def test_parse_log_request() -> None:
    req = parse_request("/containerLogs/ns/p%2Dx/c?tailLines=5&timestamps=true&follow=true")
    assert req is not None
    assert (req.namespace, req.pod, req.container) == ("ns", "p-x", "c")
    assert req.tail_lines == 5 and req.timestamps and req.follow
    assert parse_request("/containerLogs/ns/p") is None


def test_cli_usage_errors(capsys: pytest.CaptureFixture[str]) -> None:
    assert lahar_main(["node"]) == 2
    assert "sim" in capsys.readouterr().out
    assert lahar_main(["node", "sim", "--count", "-1", "--kubeconfig", "/dev/null"]) == 2
    assert "count must not be negative" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:
        lahar_main(["node", "sim", "--ready-delay", "soon"])
    assert exc.value.code == 2
    assert lahar_main(["node", "sim", "--kubeconfig", "/nonexistent/kubeconfig"]) == 2
