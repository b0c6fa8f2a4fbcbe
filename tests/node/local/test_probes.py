"""Container probes: single attempts against real local servers and a fake exec runner,
and the kubelet's scheduling and threshold semantics with a fake clock."""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import heapq
import ssl
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lahar.node.local.probes import (
    ContainerProbes,
    ExecRunner,
    ProbeResult,
    ProbeWorker,
    check,
)

# --- single attempts -------------------------------------------------------------


class FakeExec:
    def __init__(self, code: int = 0, output: bytes = b"", delay: float = 0.0) -> None:
        self.code, self.output, self.delay = code, output, delay
        self.calls: list[tuple[list[str], float]] = []

    async def run(self, argv: list[str], timeout: float) -> tuple[int, bytes]:
        self.calls.append((argv, timeout))
        await asyncio.sleep(self.delay)
        return self.code, self.output


async def attempt(probe: dict, runner: ExecRunner | None = None, **container: Any) -> ProbeResult:
    return await check(probe, pod_ip="127.0.0.1", container=container, exec_runner=runner)


async def test_exec_success_failure_and_arguments() -> None:
    runner = FakeExec(0, b"fine")
    result = await attempt({"exec": {"command": ["cat", "/tmp/x"]}, "timeoutSeconds": 4}, runner)
    assert result == ProbeResult(True, "fine")
    assert runner.calls == [(["cat", "/tmp/x"], 4.0)]
    bad = await attempt({"exec": {"command": ["false"]}}, FakeExec(1, b"nope\n"))
    assert bad == ProbeResult(False, "nope\n")
    silent = await attempt({"exec": {"command": ["false"]}}, FakeExec(2))
    assert silent == ProbeResult(False, "command 'false' exited with 2")


async def test_exec_timeout_and_errors() -> None:
    slow = await attempt(
        {"exec": {"command": ["sleep", "9"]}, "timeoutSeconds": 0.05}, FakeExec(delay=5)
    )
    assert slow == ProbeResult(False, "command 'sleep 9' timed out")

    class Broken:
        async def run(self, argv: list[str], timeout: float) -> tuple[int, bytes]:
            raise FileNotFoundError(2, "No such file or directory")

    broken = await attempt({"exec": {"command": ["nothing"]}}, Broken())
    assert not broken.ok and "No such file" in broken.message
    assert not (await attempt({"exec": {"command": []}}, FakeExec())).ok
    assert not (await attempt({"exec": {"command": ["x"]}}, None)).ok


class HTTPServer:
    """A tiny HTTP/1.1 server on 127.0.0.1: answers by path, records request headers."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, dict[str, str]]] = []
        self.port = 0

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(Exception):
            head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
            path = head[0].split(" ")[1]
            headers = {k.lower(): v for k, _, v in (h.partition(": ") for h in head[1:] if h)}
            self.requests.append((path, headers))
            status, extra = 200, ""
            if path == "/fail":
                status = 500
            elif path == "/slow":
                await asyncio.sleep(5)
            elif path == "/moved":
                status, extra = 302, "Location: /ok\r\n"
            elif path == "/moved-to-fail":
                status, extra = 301, f"Location: http://127.0.0.1:{self.port}/fail\r\n"
            elif path == "/elsewhere":
                status, extra = 302, "Location: http://elsewhere.invalid/\r\n"
            elif path == "/loop":
                status, extra = 302, "Location: /loop\r\n"
            elif path == "/notmodified":
                status = 304
            body = f"path {path}".encode()
            writer.write(
                f"HTTP/1.1 {status} X\r\n{extra}Content-Length: {len(body)}\r\n"
                "Connection: close\r\n\r\n".encode()
                + body
            )
            await writer.drain()
        writer.close()


@contextlib.asynccontextmanager
async def serve(ssl_ctx: ssl.SSLContext | None = None) -> AsyncIterator[HTTPServer]:
    app = HTTPServer()
    server = await asyncio.start_server(app.handle, "127.0.0.1", 0, ssl=ssl_ctx)
    app.port = server.sockets[0].getsockname()[1]
    try:
        yield app
    finally:
        server.close()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(server.wait_closed(), 2)


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def test_http_get_status_codes_and_body() -> None:
    async with serve() as srv:
        ok = await attempt({"httpGet": {"path": "/ok", "port": srv.port}})
        assert ok == ProbeResult(True, "path /ok")
        assert await attempt({"httpGet": {"path": "/notmodified", "port": srv.port}}) == (
            ProbeResult(True, "")
        )
        fail = await attempt({"httpGet": {"path": "/fail", "port": srv.port}})
        assert fail == ProbeResult(False, "HTTP probe failed with statuscode: 500")
        # no path is "/", a path without its slash gets one
        assert (await attempt({"httpGet": {"port": srv.port}})).message == "path /"
        assert (await attempt({"httpGet": {"path": "ok", "port": srv.port}})).message == "path /ok"


async def test_http_get_redirects() -> None:
    async with serve() as srv:
        moved = await attempt({"httpGet": {"path": "/moved", "port": srv.port}})
        assert moved == ProbeResult(True, "path /ok")
        to_fail = await attempt({"httpGet": {"path": "/moved-to-fail", "port": srv.port}})
        assert to_fail.message == "HTTP probe failed with statuscode: 500"
        elsewhere = await attempt({"httpGet": {"path": "/elsewhere", "port": srv.port}})
        assert elsewhere == ProbeResult(True, "Probe terminated redirects")
        loop = await attempt({"httpGet": {"path": "/loop", "port": srv.port}})
        assert not loop.ok and "stopped after 10 redirects" in loop.message
        assert [p for p, _ in srv.requests].count("/loop") == 11


async def test_http_get_headers_host_and_named_port() -> None:
    async with serve() as srv:
        probe = {
            "httpGet": {
                "host": "127.0.0.1",
                "port": "web",
                "path": "/ok",
                "httpHeaders": [
                    {"name": "X-Probe", "value": "yes"},
                    {"name": "user-agent", "value": "mine"},
                    {"name": "Host", "value": "example.test"},
                ],
            }
        }
        result = await check(
            probe,
            pod_ip="192.0.2.1",  # not used: the probe names its host
            container={"name": "c", "ports": [{"name": "web", "containerPort": srv.port}]},
            exec_runner=None,
        )
        assert result.ok
        _, headers = srv.requests[-1]
        assert headers["x-probe"] == "yes"
        assert headers["host"] == "example.test"
        assert headers["user-agent"] == "mine"
        assert headers["accept"] == "*/*"


async def test_http_get_failures() -> None:
    async with serve() as srv:
        slow = await attempt(
            {"httpGet": {"path": "/slow", "port": srv.port}, "timeoutSeconds": 0.1}
        )
        assert not slow.ok and "context deadline exceeded" in slow.message
    port = free_port()
    refused = await attempt({"httpGet": {"path": "/x", "port": port}})
    assert refused == ProbeResult(
        False, f'Get "http://127.0.0.1:{port}/x": connect: connection refused'
    )
    missing = await attempt({"httpGet": {"port": "web"}}, name="c")
    assert missing == ProbeResult(False, "port 'web' not found in container c")
    assert not (await attempt({"httpGet": {"port": 70000}})).ok
    assert not (await attempt({"httpGet": {"port": 80, "scheme": "FTP"}})).ok


@pytest.fixture(scope="module")
def tls_context(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ssl.SSLContext]:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "probe-test")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(1)
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .sign(key, hashes.SHA256())
    )
    d: Path = tmp_path_factory.mktemp("tls")
    (d / "cert.pem").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    (d / "key.pem").write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.load_cert_chain(d / "cert.pem", d / "key.pem")
    yield ctx


async def test_https_without_verification(tls_context: ssl.SSLContext) -> None:
    async with serve(tls_context) as srv:
        result = await attempt({"httpGet": {"path": "/ok", "port": srv.port, "scheme": "HTTPS"}})
        assert result == ProbeResult(True, "path /ok")


async def test_tcp_socket() -> None:
    async with serve() as srv:
        assert await attempt({"tcpSocket": {"port": srv.port}}) == ProbeResult(True)
        named = await attempt(
            {"tcpSocket": {"port": "svc", "host": "127.0.0.1"}},
            ports=[{"name": "svc", "containerPort": srv.port}],
        )
        assert named.ok
    port = free_port()
    refused = await attempt({"tcpSocket": {"port": port}})
    assert refused == ProbeResult(False, f"dial tcp 127.0.0.1:{port}: connect: connection refused")


async def test_default_user_agent() -> None:
    async with serve() as srv:
        assert (await attempt({"httpGet": {"port": srv.port}})).ok
        assert srv.requests[-1][1]["user-agent"].startswith("kube-probe/")


async def test_grpc_and_no_handler() -> None:
    assert await attempt({"grpc": {"port": 9000}}) == ProbeResult(
        False, "grpc probes are not supported"
    )
    assert not (await attempt({"periodSeconds": 3})).ok


# --- scheduling, with a fake clock -------------------------------------------------


class Clock:
    """Virtual time for concurrent sleepers: when every task has settled, time jumps to
    the earliest wake-up and that sleeper runs. Start :meth:`drive` in the background."""

    def __init__(self) -> None:
        self.now = 1000.0
        self._sleepers: list[tuple[float, int, asyncio.Future[None]]] = []
        self._seq = 0

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        fut = asyncio.get_running_loop().create_future()
        self._seq += 1
        heapq.heappush(self._sleepers, (self.now + seconds, self._seq, fut))
        await fut

    async def drive(self) -> None:
        while True:
            for _ in range(20):
                await asyncio.sleep(0)
            while self._sleepers and self._sleepers[0][2].done():  # cancelled sleepers
                heapq.heappop(self._sleepers)
            if not self._sleepers:
                await asyncio.sleep(0.001)
                continue
            wake, _, fut = heapq.heappop(self._sleepers)
            self.now = max(self.now, wake)
            fut.set_result(None)


@pytest.fixture
async def clock() -> AsyncIterator[Clock]:
    c = Clock()
    driver = asyncio.create_task(c.drive())
    try:
        yield c
    finally:
        driver.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await driver


class Script:
    """A checker that answers from a script per probe kind, recording when it was
    asked; once a kind's script is used up it blocks (the test then stops)."""

    def __init__(self, clock: Clock, **scripts: str) -> None:
        self.clock = clock
        self.scripts = {k: list(v) for k, v in scripts.items()}
        self.calls: list[tuple[str, float]] = []
        self.idle = {k: asyncio.Event() for k in scripts}

    def for_kind(self, kind: str) -> Any:
        async def checker(probe: dict, **_: Any) -> ProbeResult:
            self.calls.append((kind, self.clock.now))
            if not self.scripts[kind]:
                self.idle[kind].set()
                await asyncio.Event().wait()
            ok = self.scripts[kind].pop(0) == "+"
            return ProbeResult(ok, f"{kind} {'ok' if ok else 'bad'}")

        return checker

    async def wait(self, *kinds: str) -> None:
        async with asyncio.timeout(5):
            for kind in kinds:
                await self.idle[kind].wait()


class Events:
    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self.log: list[tuple[Any, ...]] = []

    def result(self, kind: str, ok: bool, message: str) -> None:
        self.log.append(("result", kind, ok, self.clock.now))

    async def failure(self, kind: str, message: str) -> None:  # a coroutine callback works too
        self.log.append(("failure", kind, message, self.clock.now))


def worker(kind: str, probe: dict, clock: Clock, script: Script, events: Events) -> ProbeWorker:
    return ProbeWorker(
        kind,  # type: ignore[arg-type]
        probe,
        container={"name": "c"},
        pod_ip="127.0.0.1",
        exec_runner=None,
        on_result=events.result,
        on_failure=events.failure,
        started_at=clock.now,
        sleep=clock.sleep,
        clock=clock,
        checker=script.for_kind(kind),
    )


async def test_readiness_schedule_and_thresholds(clock: Clock) -> None:
    script = Script(clock, readiness="+-+----+")
    events = Events(clock)
    w = worker(
        "readiness",
        {"initialDelaySeconds": 5, "periodSeconds": 10, "successThreshold": 2},
        clock,
        script,
        events,
    )
    assert w.state is False
    w.start()
    await script.wait("readiness")
    await w.stop()
    times = [t - 1000 for _, t in script.calls]
    assert times == [5, 15, 25, 35, 45, 55, 65, 75, 85]
    # "+-+" never makes 2 in a row; "----" flips nothing (already not ready); then one "+"
    assert events.log == []
    script2 = Script(clock, readiness="++---+")
    w2 = worker("readiness", {"successThreshold": 2, "periodSeconds": 1}, clock, script2, events)
    start = clock.now
    w2.start()
    await script2.wait("readiness")
    await w2.stop()
    assert events.log == [
        ("result", "readiness", True, start + 1),
        ("result", "readiness", False, start + 4),
    ]
    assert w2.state is False and w2.message == "readiness bad"


async def test_liveness_failure_restarts_the_count_and_the_delay(clock: Clock) -> None:
    script = Script(clock, liveness="--+---+--")
    events = Events(clock)
    w = worker(
        "liveness",
        {"initialDelaySeconds": 30, "periodSeconds": 10, "failureThreshold": 3},
        clock,
        script,
        events,
    )
    assert w.state is True
    w.start()
    await script.wait("liveness")
    await w.stop()
    # a success breaks the run; after the third failure in a row on_failure fires once,
    # then the worker waits initialDelaySeconds again, as for a restarted container
    assert events.log == [("failure", "liveness", "liveness bad", 1000 + 30 + 50)]
    assert [t - 1000 for _, t in script.calls] == [30, 40, 50, 60, 70, 80, 110, 120, 130, 140]
    assert w.state is True


async def test_startup_success_ends_the_worker_and_failure_restarts(clock: Clock) -> None:
    events = Events(clock)
    script = Script(clock, startup="--+")
    w = worker("startup", {"periodSeconds": 2, "failureThreshold": 3}, clock, script, events)
    w.start()
    assert w._task is not None
    await asyncio.wait_for(w._task, 5)
    assert w.finished and w.state is True
    assert events.log == [("result", "startup", True, 1004)]
    script = Script(clock, startup="---")
    w = worker("startup", {"periodSeconds": 2, "failureThreshold": 3}, clock, script, events)
    w.start()
    await script.wait("startup")
    await w.stop()
    assert events.log[-1] == ("failure", "startup", "startup bad", clock.now)
    assert w.state is False and not w.finished


async def test_container_probes_gate_on_startup(clock: Clock) -> None:
    events = Events(clock)
    script = Script(clock, startup="-+", liveness="++", readiness="+")
    container = {
        "name": "c",
        "startupProbe": {"periodSeconds": 5, "failureThreshold": 10},
        "livenessProbe": {"periodSeconds": 10, "initialDelaySeconds": 3},
        "readinessProbe": {"periodSeconds": 10, "initialDelaySeconds": 20},
    }
    probes = ContainerProbes(
        container,
        pod_ip="127.0.0.1",
        exec_runner=None,
        on_result=events.result,
        on_failure=events.failure,
        started_at=clock.now,
        sleep=clock.sleep,
        clock=clock,
        checker=lambda probe, **kw: script.for_kind(
            next(k for k in ("startup", "liveness", "readiness") if container[f"{k}Probe"] is probe)
        )(probe, **kw),
    )
    assert not probes.started and not probes.ready
    probes.start()
    await script.wait("liveness", "readiness")
    await probes.stop()
    # startup succeeds at t=5; liveness's delay (3 s from the container's start) has
    # passed, so it probes at once; readiness waits until t=20
    kinds = [(k, t - 1000) for k, t in script.calls]
    assert kinds[:3] == [("startup", 0), ("startup", 5), ("liveness", 5)]
    assert ("readiness", 20) in kinds
    assert not any(k != "startup" and t < 5 for k, t in kinds)
    assert probes.started and probes.ready
    assert [e[:3] for e in events.log] == [
        ("result", "startup", True),
        ("result", "readiness", True),
    ]


async def test_container_without_probes_is_ready() -> None:
    probes = ContainerProbes({"name": "c"}, pod_ip="127.0.0.1", exec_runner=None)
    probes.start()
    assert probes.started and probes.ready and probes.workers == {}
    await probes.stop()


async def test_container_with_readiness_only_is_started_but_not_ready() -> None:
    probes = ContainerProbes(
        {"name": "c", "readinessProbe": {"exec": {"command": ["x"]}}},
        pod_ip="127.0.0.1",
        exec_runner=FakeExec(0),
    )
    assert probes.started and not probes.ready
    probes.start()
    async with asyncio.timeout(5):
        while not probes.ready:  # real time and the real check: the first attempt is at once
            await asyncio.sleep(0.01)
    await probes.stop()


async def test_stop_cancels_a_running_attempt_and_is_idempotent(clock: Clock) -> None:
    events = Events(clock)
    script = Script(clock, readiness="")
    w = worker("readiness", {}, clock, script, events)
    await w.stop()  # before start: nothing to do
    w.start()
    await script.wait("readiness")  # blocked inside an attempt
    task = w._task
    await w.stop()
    assert task is not None and task.cancelled()
    await w.stop()


async def test_a_callback_may_stop_its_own_worker(clock: Clock) -> None:
    script = Script(clock, liveness="-" * 10)
    holder: list[ProbeWorker] = []

    async def on_failure(kind: str, message: str) -> None:
        await holder[0].stop()

    w = ProbeWorker(
        "liveness",
        {"failureThreshold": 1},
        container={},
        pod_ip="127.0.0.1",
        exec_runner=None,
        on_failure=on_failure,
        sleep=clock.sleep,
        clock=clock,
        checker=script.for_kind("liveness"),
    )
    holder.append(w)
    w.start()
    task = w._task
    assert task is not None
    with contextlib.suppress(asyncio.CancelledError):
        await asyncio.wait_for(task, 5)
    assert task.done() and len(script.calls) == 1


async def test_a_raising_checker_counts_as_a_failure(clock: Clock) -> None:
    async def broken(probe: dict, **_: Any) -> ProbeResult:
        raise RuntimeError("boom")

    failures: list[str] = []
    w = ProbeWorker(
        "liveness",
        {"failureThreshold": 2},
        container={},
        pod_ip="127.0.0.1",
        exec_runner=None,
        on_failure=lambda kind, message: failures.append(message),
        sleep=clock.sleep,
        clock=clock,
        checker=broken,
    )
    w.start()
    async with asyncio.timeout(5):
        while not failures:
            await asyncio.sleep(0)
    await w.stop()
    assert "boom" in failures[0]


# --- the threshold invariant --------------------------------------------------------


@given(
    results=st.lists(st.booleans(), max_size=60),
    success=st.integers(min_value=1, max_value=4),
    failure=st.integers(min_value=1, max_value=4),
)
def test_readiness_changes_only_after_threshold_consecutive_opposite_results(
    results: list[bool], success: int, failure: int
) -> None:
    """The state flips exactly at the attempt that completes ``threshold`` consecutive
    results opposite to it, never otherwise."""
    changes: list[tuple[int, bool]] = []
    w = ProbeWorker(
        "readiness",
        {"successThreshold": success, "failureThreshold": failure},
        container={},
        pod_ip="127.0.0.1",
        exec_runner=None,
        on_result=lambda kind, ok, message: changes.append((w.attempts, ok)),
    )

    async def run() -> None:
        for ok in results:
            await w.observe(ProbeResult(ok))

    asyncio.run(run())
    expected: list[tuple[int, bool]] = []
    state = False
    for i in range(1, len(results) + 1):
        want = not state
        need = success if want else failure
        window = results[max(0, i - need) : i]
        if len(window) == need and all(r == want for r in window):
            state = want
            expected.append((i, state))
    assert changes == expected
    assert w.state == state


@given(results=st.lists(st.booleans(), max_size=60), failure=st.integers(min_value=1, max_value=4))
def test_liveness_fails_once_per_threshold_run(results: list[bool], failure: int) -> None:
    fired: list[int] = []
    w = ProbeWorker(
        "liveness",
        {"failureThreshold": failure},
        container={},
        pod_ip="127.0.0.1",
        exec_runner=None,
        on_failure=lambda kind, message: fired.append(w.attempts),
    )

    async def run() -> None:
        for ok in results:
            await w.observe(ProbeResult(ok))

    asyncio.run(run())
    expected, run_length = [], 0
    for i, ok in enumerate(results, 1):
        run_length = 0 if ok else run_length + 1
        if run_length == failure:
            expected.append(i)
            run_length = 0  # the count starts over after a failure
    assert fired == expected
    assert w.state is True
