"""Container probes (liveness, readiness, startup) with the kubelet's semantics.

:func:`check` makes one attempt of a probe: ``exec`` (through an injected
:class:`ExecRunner`, which the agent runs inside the container's namespaces),
``httpGet`` (2xx and 3xx succeed; redirects to the same host are followed, one to
another host ends the probe as a success, as kubelet does), ``tcpSocket`` (a
connection is enough) and ``grpc`` (not supported: a failure). ``timeoutSeconds``
bounds each attempt; running out of time is a failure.

:class:`ProbeWorker` runs one probe on a schedule and thresholds its results: the state
flips only after ``successThreshold`` consecutive successes or ``failureThreshold``
consecutive failures. Readiness starts not ready and reports each flip. Liveness and
startup report a failure threshold through ``on_failure`` (the agent restarts the
container) and then start over, as for a restarted container; a startup probe stops
once it has succeeded. :class:`ContainerProbes` owns the workers of one container and
holds liveness and readiness back until the startup probe has succeeded.

Sleeping and the clock are injected so that the schedule can be tested without waiting.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Literal, Protocol
from urllib.parse import urljoin, urlsplit

import httpx2

Kind = Literal["startup", "liveness", "readiness"]
KINDS: tuple[Kind, ...] = ("startup", "liveness", "readiness")
_MAX_REDIRECTS = 10
_USER_AGENT = "kube-probe/1.33"


class ExecRunner(Protocol):
    """Runs a command in a container; ``(exit code, combined output)``. It may raise
    ``TimeoutError`` when ``timeout`` seconds pass."""

    async def run(self, argv: list[str], timeout: float) -> tuple[int, bytes]: ...


@dataclass(frozen=True)
class ProbeResult:
    ok: bool
    message: str = ""


async def check(
    probe: dict, *, pod_ip: str, container: dict, exec_runner: ExecRunner | None
) -> ProbeResult:
    """One attempt of ``probe`` (a Kubernetes Probe object) against a container."""
    timeout = float(probe.get("timeoutSeconds") or 1)
    try:
        if "exec" in probe:
            return await _exec(probe["exec"] or {}, timeout, exec_runner)
        if "httpGet" in probe:
            return await _http(probe["httpGet"] or {}, timeout, pod_ip, container)
        if "tcpSocket" in probe:
            return await _tcp(probe["tcpSocket"] or {}, timeout, pod_ip, container)
        if "grpc" in probe:
            return ProbeResult(False, "grpc probes are not supported")
    except ValueError as exc:  # a bad or unknown port
        return ProbeResult(False, str(exc))
    return ProbeResult(False, "probe has no handler (exec, httpGet, tcpSocket or grpc)")


def _port(spec: dict, container: dict) -> int:
    """The probe's port: a number, or the name of one of the container's ports."""
    value = spec.get("port")
    port: int | None = None
    if isinstance(value, int):
        port = value
    elif isinstance(value, str):
        for p in container.get("ports") or []:
            if p.get("name") == value:
                port = p.get("containerPort")
                break
        else:
            if value.isdigit():
                port = int(value)  # a number written as a string, as kubelet accepts
            else:
                raise ValueError(f"port {value!r} not found in container {container.get('name')}")
    if not isinstance(port, int) or not 0 < port < 65536:
        raise ValueError(f"invalid port number: {value!r}")
    return port


def _hostport(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


async def _exec(spec: dict, timeout: float, runner: ExecRunner | None) -> ProbeResult:
    argv = [str(a) for a in spec.get("command") or []]
    if runner is None:
        return ProbeResult(False, "exec probes are not supported here")
    if not argv:
        return ProbeResult(False, "exec probe has no command")
    try:
        async with asyncio.timeout(timeout):
            code, output = await runner.run(argv, timeout)
    except TimeoutError:
        return ProbeResult(False, f"command {' '.join(argv)!r} timed out")
    except OSError as exc:
        return ProbeResult(False, f"command {' '.join(argv)!r} failed: {exc}")
    text = output[-10240:].decode(errors="replace")
    if code == 0:
        return ProbeResult(True, text)
    return ProbeResult(False, text or f"command {' '.join(argv)!r} exited with {code}")


async def _http(spec: dict, timeout: float, pod_ip: str, container: dict) -> ProbeResult:
    scheme = str(spec.get("scheme") or "HTTP").lower()
    if scheme not in ("http", "https"):
        return ProbeResult(False, f"unsupported scheme {spec.get('scheme')!r}")
    host = spec.get("host") or pod_ip
    path = str(spec.get("path") or "/")
    url = f"{scheme}://{_hostport(host, _port(spec, container))}{'' if path.startswith('/') else '/'}{path}"
    headers = httpx2.Headers({"User-Agent": _USER_AGENT, "Accept": "*/*"})
    for h in spec.get("httpHeaders") or []:  # replacing ours whatever their case
        if h.get("name"):
            headers[h["name"]] = str(h.get("value", ""))
    try:
        async with (
            asyncio.timeout(timeout),
            httpx2.AsyncClient(verify=False, trust_env=False, timeout=None) as client,
        ):
            current = url
            for _ in range(_MAX_REDIRECTS + 1):
                resp = await client.get(current, headers=headers)
                location = resp.headers.get("location")
                if not (resp.is_redirect and location):
                    break
                target = urljoin(current, location)
                if urlsplit(target).hostname != urlsplit(url).hostname:
                    return ProbeResult(True, "Probe terminated redirects")
                current = target
            else:
                return ProbeResult(False, f'Get "{url}": stopped after {_MAX_REDIRECTS} redirects')
    except TimeoutError:
        return ProbeResult(
            False,
            f'Get "{url}": context deadline exceeded (Client.Timeout exceeded while awaiting headers)',
        )
    except httpx2.HTTPError as exc:
        return ProbeResult(False, f'Get "{url}": {_reason(exc)}')
    if 200 <= resp.status_code < 400:
        return ProbeResult(True, resp.content[:10240].decode(errors="replace"))
    return ProbeResult(False, f"HTTP probe failed with statuscode: {resp.status_code}")


def _reason(exc: BaseException) -> str:
    """The most telling message in an exception's chain."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, ConnectionRefusedError):
            return "connect: connection refused"
        seen = seen.__cause__ or seen.__context__
    return str(exc) or type(exc).__name__


async def _tcp(spec: dict, timeout: float, pod_ip: str, container: dict) -> ProbeResult:
    host, port = spec.get("host") or pod_ip, _port(spec, container)
    address = _hostport(host, port)
    try:
        async with asyncio.timeout(timeout):
            _, writer = await asyncio.open_connection(host, port)
    except TimeoutError:
        return ProbeResult(False, f"dial tcp {address}: i/o timeout")
    except OSError as exc:
        reason = "connect: connection refused" if isinstance(exc, ConnectionRefusedError) else exc
        return ProbeResult(False, f"dial tcp {address}: {reason}")
    writer.close()
    with contextlib.suppress(OSError):
        await writer.wait_closed()
    return ProbeResult(True)


Checker = Callable[..., Awaitable[ProbeResult]]
Callback = Callable[..., Any]  # may return an awaitable, which is awaited


async def _call(callback: Callback | None, *args: Any) -> None:
    if callback is not None:
        result = callback(*args)
        if inspect.isawaitable(result):
            await result


class ProbeWorker:
    """Runs one probe of one container on its schedule and thresholds the results.

    ``state`` is the thresholded result: readiness starts False, liveness True, startup
    False (not started). ``on_result(kind, ok, message)`` is called when it changes;
    ``on_failure(kind, message)`` when liveness or startup reaches ``failureThreshold``
    consecutive failures, after which the worker starts over as for a restarted
    container (``initialDelaySeconds`` again, counts cleared). A startup worker stops
    after its first thresholded success. Callbacks may be coroutines; they must not
    await :meth:`stop` of the worker that calls them.
    """

    def __init__(
        self,
        kind: Kind,
        probe: dict,
        *,
        container: dict,
        pod_ip: str,
        exec_runner: ExecRunner | None,
        on_result: Callback | None = None,
        on_failure: Callback | None = None,
        started_at: float | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        clock: Callable[[], float] = time.monotonic,
        checker: Checker = check,
    ) -> None:
        if kind not in KINDS:
            raise ValueError(f"unknown probe kind {kind!r}")
        self.kind = kind
        self.probe = probe
        self.container = container
        self.pod_ip = pod_ip
        self.exec_runner = exec_runner
        self.on_result = on_result
        self.on_failure = on_failure
        self.sleep = sleep
        self.clock = clock
        self.checker = checker
        self.initial_delay = float(probe.get("initialDelaySeconds") or 0)
        self.period = float(probe.get("periodSeconds") or 10)
        # liveness and startup must have successThreshold 1 (API validation)
        self.success_threshold = (
            1 if kind != "readiness" else int(probe.get("successThreshold") or 1)
        )
        self.failure_threshold = int(probe.get("failureThreshold") or 3)
        self.started_at = clock() if started_at is None else started_at
        self.state = kind == "liveness"
        self.message = ""
        self.attempts = 0
        self.finished = False  # a startup probe that has succeeded
        self._last: bool | None = None
        self._run = 0
        self._restart = False
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._loop(), name=f"probe-{self.kind}")

    async def stop(self) -> None:
        """Cancel the worker and wait for it to end."""
        task, self._task = self._task, None
        if task is None:
            return
        task.cancel()
        if task is not asyncio.current_task():
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def _loop(self) -> None:
        while not self.finished:
            delay = self.started_at + self.initial_delay - self.clock()
            if delay > 0:
                await self.sleep(delay)
            while True:
                began = self.clock()
                try:
                    result = await self.checker(
                        self.probe,
                        pod_ip=self.pod_ip,
                        container=self.container,
                        exec_runner=self.exec_runner,
                    )
                except Exception as exc:  # a broken checker is a failed probe, not a dead worker
                    result = ProbeResult(False, f"probe error: {exc!r}")
                await self.observe(result)
                if self.finished or self._task is None:  # done, or stopped by a callback
                    return
                if self._restart:
                    self._restart = False
                    self.started_at = self.clock()
                    break
                await self.sleep(max(0.0, began + self.period - self.clock()))

    async def observe(self, result: ProbeResult) -> None:
        """Count one attempt's result, as kubelet's worker does, and report changes."""
        self.attempts += 1
        ok = result.ok
        if ok == self._last:
            self._run += 1
        else:
            self._last, self._run = ok, 1
        if self._run < (self.success_threshold if ok else self.failure_threshold):
            return
        if not ok and self.kind != "readiness":
            self.message = result.message
            self._last, self._run, self._restart = None, 0, True
            self.state = self.kind == "liveness"
            await _call(self.on_failure, self.kind, result.message)
            return
        if self.kind == "startup":
            self.finished = True
        if ok != self.state:
            self.state, self.message = ok, result.message
            await _call(self.on_result, self.kind, ok, result.message)


class ContainerProbes:
    """The startup, liveness and readiness workers of one container (those it has).

    Liveness and readiness start once the startup probe has succeeded (at once without
    one); their initial delays count from the container's start, ``started_at``.
    :attr:`started` and :attr:`ready` give what the container status shows. Callbacks
    are those of :class:`ProbeWorker`.
    """

    def __init__(
        self,
        container: dict,
        *,
        pod_ip: str,
        exec_runner: ExecRunner | None,
        on_result: Callback | None = None,
        on_failure: Callback | None = None,
        started_at: float | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        clock: Callable[[], float] = time.monotonic,
        checker: Checker = check,
    ) -> None:
        self.on_result = on_result
        started_at = clock() if started_at is None else started_at
        self.workers: dict[Kind, ProbeWorker] = {}
        for kind in KINDS:
            probe = container.get(f"{kind}Probe")
            if probe:
                self.workers[kind] = ProbeWorker(
                    kind,
                    probe,
                    container=container,
                    pod_ip=pod_ip,
                    exec_runner=exec_runner,
                    on_result=self._result,
                    on_failure=on_failure,
                    started_at=started_at,
                    sleep=sleep,
                    clock=clock,
                    checker=checker,
                )
        self.started = "startup" not in self.workers
        self._running = False

    @property
    def ready(self) -> bool:
        """Started, and ready by its readiness probe if it has one."""
        readiness = self.workers.get("readiness")
        return self.started and (readiness is None or readiness.state)

    def start(self) -> None:
        self._running = True
        self._start_kinds(("liveness", "readiness") if self.started else ("startup",))

    def _start_kinds(self, kinds: tuple[Kind, ...]) -> None:
        for kind in kinds:
            if kind in self.workers:
                self.workers[kind].start()

    async def _result(self, kind: Kind, ok: bool, message: str) -> None:
        if kind == "startup" and ok:
            self.started = True
            if self._running:
                self._start_kinds(("liveness", "readiness"))
        await _call(self.on_result, kind, ok, message)

    async def stop(self) -> None:
        self._running = False
        for worker in self.workers.values():
            await worker.stop()
