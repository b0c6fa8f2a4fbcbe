"""The local node's log provider: kubectl-logs semantics over per-run CRI log files."""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path

import httpx2
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lahar.apiserver.logs import LogRequest
from lahar.node.local import logs as logsmod
from lahar.node.local.crilog import LineSplitter, format_line
from lahar.node.local.logs import ContainerLogs, PodLogs, log_path
from lahar.node.logserver import LogServer

NOW = 1_700_000_000.0


class Pod:
    """A fake pod for ``locate``: containers, restart counts and a running flag each."""

    def __init__(self, pod_dir: Path, containers: tuple[str, ...] = ("app",)) -> None:
        self.dir = pod_dir
        self.containers = containers
        self.restarts = dict.fromkeys(containers, 0)
        self.running = dict.fromkeys(containers, True)

    def info(self) -> PodLogs:
        return PodLogs(self.dir, self.containers, self.restarts, lambda c: self.running[c])

    def write(self, container: str, restart: int, *lines: bytes) -> None:
        path = log_path(self.dir, container, restart)
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "ab") as f:
            f.write(b"".join(lines))


def line(ts: float, text: str, stream: str = "stdout", partial: bool = False) -> bytes:
    return format_line(ts, stream, text.encode(), partial)


@pytest.fixture
def pod(tmp_path: Path) -> Pod:
    return Pod(tmp_path / "pod", ("init", "app"))


def provider(pod: Pod, **kw: float) -> ContainerLogs:
    return ContainerLogs(
        lambda ns, name: pod.info() if (ns, name) == ("ns", "p") else None,
        poll=kw.get("poll", 0.01),
        clock=lambda: kw.get("now", NOW),
    )


def req(container: str = "app", **kw: object) -> LogRequest:
    return LogRequest("ns", "p", container, **kw)  # type: ignore[arg-type]


async def read(logs: ContainerLogs, request: LogRequest) -> bytes:
    return b"".join([chunk async for chunk in logs.stream(request)])


async def test_log_path_layout(tmp_path: Path) -> None:
    assert log_path(tmp_path, "c", 3) == tmp_path / "logs" / "c" / "3.log"


@pytest.mark.parametrize(
    ("request_", "message"),
    [
        (LogRequest("ns", "nope", "app"), 'pod "nope" cannot be found - no logs available'),
        (LogRequest("other", "p", "app"), 'pod "p" cannot be found - no logs available'),
        (req("ghost"), 'container "ghost" in pod "p" is not available'),
        (req(previous=True), 'previous terminated container "app" in pod "p" not found'),
        (req("init"), 'container "init" in pod "p" is waiting to start: ContainerCreating'),
    ],
)
async def test_lookup_errors(pod: Pod, request_: LogRequest, message: str) -> None:
    pod.write("app", 0, line(NOW, "hi"))
    with pytest.raises(LookupError) as err:
        await read(provider(pod), request_)
    assert str(err.value) == message


async def test_reads_whole_file_joining_partials_per_stream(pod: Pod) -> None:
    pod.write(
        "app",
        0,
        line(NOW, "one"),
        line(NOW, "lo", partial=True),
        line(NOW, "E1", "stderr", partial=True),
        line(NOW, "ng ", partial=True),
        line(NOW, "err", "stderr"),
        line(NOW, "line"),
        b"not a cri line\n",
        line(NOW, ""),
    )
    assert await read(provider(pod), req()) == b"one\nE1err\nlong line\n\n"


async def test_timestamps_prefix_each_whole_line_with_its_first_piece_time(pod: Pod) -> None:
    pod.write("app", 0, line(NOW + 0.5, "a", partial=True), line(NOW + 1, "b"), line(NOW + 2, "c"))
    out = await read(provider(pod), req(timestamps=True))
    assert out == (b"2023-11-14T22:13:20.500000000Z ab\n2023-11-14T22:13:22.000000000Z c\n")


async def test_tail_lines(pod: Pod) -> None:
    pod.write("app", 0, *(line(NOW + i, f"l{i}") for i in range(10)))
    logs = provider(pod)
    assert await read(logs, req(tail_lines=3)) == b"l7\nl8\nl9\n"
    assert await read(logs, req(tail_lines=0)) == b""
    assert await read(logs, req(tail_lines=50)) == b"".join(f"l{i}\n".encode() for i in range(10))
    assert await read(logs, req(tail_lines=-1)) == await read(logs, req())


async def test_tail_across_partials_and_a_small_window(
    pod: Pod, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The backwards window grows until the whole last lines are inside it."""
    monkeypatch.setattr(logsmod, "_BLOCK", 64)
    long = [line(NOW, "x" * 30, partial=True) for _ in range(6)]
    pod.write("app", 0, line(NOW, "first"), *long, line(NOW, "end"), line(NOW, "short"))
    assert await read(provider(pod), req(tail_lines=2)) == b"x" * 180 + b"end\nshort\n"
    assert await read(provider(pod), req(tail_lines=3)) == b"first\n" + b"x" * 180 + b"end\nshort\n"


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    pieces=st.lists(
        st.tuples(st.sampled_from(["stdout", "stderr"]), st.text("ab", max_size=12), st.booleans()),
        max_size=40,
    ),
    tail=st.integers(min_value=0, max_value=45),
    block=st.sampled_from([48, 97, 1 << 16]),
)
def test_tail_is_the_end_of_the_full_read(
    tmp_path: Path, pieces: list[tuple[str, str, bool]], tail: int, block: int
) -> None:
    """Whatever the interleaving of partial pieces and the window size, tail N is the
    last N lines of the whole log. (Every line is finished by the end: a line still
    open at the end whose pieces all lie before the window that tail reads is not seen,
    a documented limitation.)"""
    for stream in ("stdout", "stderr"):
        last = [p for s, _, p in pieces if s == stream][-1:]
        if last == [True]:
            pieces = [*pieces, (stream, "end", False)]
    pod = Pod(Path(tempfile.mkdtemp(dir=tmp_path)))
    pod.write("app", 0, *(line(NOW + i, t, s, p) for i, (s, t, p) in enumerate(pieces)))
    pod.running["app"] = False
    original = logsmod._BLOCK
    logsmod._BLOCK = block
    try:
        full = asyncio.run(read(provider(pod), req()))
        tailed = asyncio.run(read(provider(pod), req(tail_lines=tail)))
    finally:
        logsmod._BLOCK = original
    lines = full.splitlines(keepends=True)  # lines cut off at the end count too
    assert tailed == b"".join(lines[-tail:] if tail else [])


async def test_since_seconds(pod: Pod) -> None:
    pod.write("app", 0, *(line(NOW - 100 + 10 * i, f"l{i}") for i in range(11)))
    logs = provider(pod)
    assert await read(logs, req(since_seconds=25)) == b"l8\nl9\nl10\n"
    assert await read(logs, req(since_seconds=25, tail_lines=2)) == b"l9\nl10\n"
    assert await read(logs, req(since_seconds=25, tail_lines=5)) == b"l8\nl9\nl10\n"


async def test_limit_bytes_counts_timestamps(pod: Pod) -> None:
    pod.write("app", 0, line(NOW, "hello"), line(NOW, "world"))
    logs = provider(pod)
    assert await read(logs, req(limit_bytes=8)) == b"hello\nwo"
    assert await read(logs, req(limit_bytes=12)) == b"hello\nworld\n"
    assert await read(logs, req(limit_bytes=1000)) == b"hello\nworld\n"
    assert await read(logs, req(limit_bytes=0)) == b""
    assert await read(logs, req(limit_bytes=4, timestamps=True)) == b"2023"


async def test_previous_and_current_runs(pod: Pod) -> None:
    pod.write("app", 0, line(NOW, "run0"))
    pod.write("app", 1, line(NOW, "run1"))
    pod.write("app", 2, line(NOW, "run2"))
    pod.restarts["app"] = 2
    logs = provider(pod)
    assert await read(logs, req()) == b"run2\n"
    assert await read(logs, req(previous=True)) == b"run1\n"
    # restarted (count 3) but the new run has no file yet: the last run is shown, and
    # is also the previous one, as with a kubelet in CrashLoopBackOff
    pod.restarts["app"] = 3
    assert await read(logs, req()) == b"run2\n"
    assert await read(logs, req(previous=True)) == b"run2\n"
    # files of runs newer than the restart count the agent reports are ignored
    pod.restarts["app"] = 1
    assert await read(logs, req()) == b"run1\n"


async def test_unterminated_last_line_is_shown(pod: Pod) -> None:
    pod.write("app", 0, line(NOW, "done"), line(NOW, "half", partial=True))
    assert await read(provider(pod), req()) == b"done\nhalf\n"
    pod.write("app", 0, line(NOW, "torn")[:-1])  # a writer caught mid-line
    assert await read(provider(pod), req()) == b"done\nhalftorn\n"
    assert await read(provider(pod), req(tail_lines=1)) == b"halftorn\n"
    assert await read(provider(pod), req(tail_lines=5)) == b"done\nhalftorn\n"


async def collect(stream: AsyncIterator[bytes], into: list[bytes]) -> None:
    async for chunk in stream:
        into.append(chunk)


async def wait_for(cond: object, timeout: float = 5.0) -> None:
    async with asyncio.timeout(timeout):
        while not cond():  # type: ignore[operator]
            await asyncio.sleep(0.005)


async def test_follow_streams_until_the_container_stops(pod: Pod) -> None:
    pod.write("app", 0, line(NOW, "early"))
    got: list[bytes] = []
    task = asyncio.create_task(collect(provider(pod).stream(req(follow=True)), got))
    await wait_for(lambda: b"".join(got) == b"early\n")
    pod.write("app", 0, line(NOW, "par", partial=True))
    await asyncio.sleep(0.05)
    assert b"".join(got) == b"early\n"  # a partial line waits for the rest
    pod.write("app", 0, line(NOW, "tial"), line(NOW, "x", "stderr")[:10])
    await wait_for(lambda: b"".join(got) == b"early\npartial\n")
    pod.write("app", 0, line(NOW, "x", "stderr")[10:], line(NOW, "last"))
    pod.running["app"] = False
    await asyncio.wait_for(task, 5)
    assert b"".join(got) == b"early\npartial\nx\nlast\n"


async def test_follow_with_tail_and_timestamps(pod: Pod) -> None:
    pod.write("app", 0, *(line(NOW + i, f"l{i}") for i in range(5)))
    got: list[bytes] = []
    task = asyncio.create_task(
        collect(provider(pod).stream(req(follow=True, tail_lines=1, timestamps=True)), got)
    )
    await wait_for(lambda: got)
    pod.write("app", 0, line(NOW + 9, "new"))
    await wait_for(lambda: b"new" in b"".join(got))
    pod.running["app"] = False
    await asyncio.wait_for(task, 5)
    assert b"".join(got) == (
        b"2023-11-14T22:13:24.000000000Z l4\n2023-11-14T22:13:29.000000000Z new\n"
    )


async def test_follow_tail_zero_shows_only_new_lines(pod: Pod) -> None:
    pod.write("app", 0, line(NOW, "old"))
    got: list[bytes] = []
    task = asyncio.create_task(collect(provider(pod).stream(req(follow=True, tail_lines=0)), got))
    await asyncio.sleep(0.05)
    pod.write("app", 0, line(NOW, "new"))
    await wait_for(lambda: got)
    pod.running["app"] = False
    await asyncio.wait_for(task, 5)
    assert b"".join(got) == b"new\n"


async def test_follow_ends_when_a_newer_run_starts(pod: Pod) -> None:
    pod.write("app", 0, line(NOW, "first run"))
    got: list[bytes] = []
    task = asyncio.create_task(collect(provider(pod).stream(req(follow=True)), got))
    await wait_for(lambda: got)
    pod.write("app", 0, line(NOW, "dying words"))
    pod.write("app", 1, line(NOW, "second run"))  # running stays true: the new run is
    await asyncio.wait_for(task, 5)
    assert b"".join(got) == b"first run\ndying words\n"


async def test_follow_a_finished_run_returns_at_once(pod: Pod) -> None:
    pod.write("app", 0, line(NOW, "a"))
    pod.write("app", 1, line(NOW, "b"))
    pod.restarts["app"] = 1
    logs = provider(pod)
    got = await asyncio.wait_for(read(logs, req(follow=True, previous=True)), 5)
    assert got == b"a\n"
    pod.running["app"] = False
    assert await asyncio.wait_for(read(logs, req(follow=True)), 5) == b"b\n"


async def test_follow_stops_at_limit_bytes(pod: Pod) -> None:
    pod.write("app", 0, line(NOW, "abc"))
    got: list[bytes] = []
    task = asyncio.create_task(collect(provider(pod).stream(req(follow=True, limit_bytes=6)), got))
    await wait_for(lambda: got)
    pod.write("app", 0, line(NOW, "defgh"))
    await asyncio.wait_for(task, 5)  # ends although the container still runs
    assert b"".join(got) == b"abc\nde"


async def test_follow_waits_for_a_file_that_is_not_written_yet(pod: Pod) -> None:
    """The run's file exists but is empty; following shows lines once they come."""
    path = log_path(pod.dir, "app", 0)
    path.parent.mkdir(parents=True)
    path.touch()
    got: list[bytes] = []
    task = asyncio.create_task(collect(provider(pod).stream(req(follow=True)), got))
    await asyncio.sleep(0.05)
    pod.write("app", 0, line(NOW, "hello"))
    await wait_for(lambda: got)
    pod.running["app"] = False
    await asyncio.wait_for(task, 5)
    assert b"".join(got) == b"hello\n"


async def test_splitter_output_reads_back(pod: Pod) -> None:
    """What the shim writes (via LineSplitter) reads back as the program's output."""
    output = b"x" * 40_000 + b"\nsmall\n" + b"tail without newline"
    out, err = LineSplitter("stdout"), LineSplitter("stderr")
    data = b""
    for i in range(0, len(output), 777):
        data += out.feed(output[i : i + 777])
        data += err.feed(b"ERR\n")
    data += out.close() + err.close()
    pod.write("app", 0, data)
    got = await read(provider(pod), req())
    assert got.replace(b"ERR\n", b"") == output + b"\n"
    assert got.count(b"ERR\n") == len(range(0, len(output), 777))


async def test_served_through_the_log_endpoint(pod: Pod) -> None:
    """Plugged into the loopback log server: lines as 200, LookupError as 404."""
    pod.write("app", 0, line(NOW, "over http"))
    pod.running["app"] = False
    server = LogServer(provider(pod))
    port = await server.start()
    try:
        async with httpx2.AsyncClient(timeout=5) as client:
            ok = await client.get(f"http://127.0.0.1:{port}/containerLogs/ns/p/app?follow=true")
            missing = await client.get(f"http://127.0.0.1:{port}/containerLogs/ns/p/ghost")
    finally:
        await server.stop()
    assert (ok.status_code, ok.content) == (200, b"over http\n")
    assert missing.status_code == 404
    assert 'container "ghost" in pod "p" is not available' in missing.text


async def test_pod_logs_runs_ignores_other_files(pod: Pod) -> None:
    for name in ("0.log", "2.log", "10.log", "x.log", "1.log.tmp", "3.txt", "٣.log"):
        p = pod.dir / "logs" / "app" / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.touch()
    assert pod.info().runs("app") == [0, 2, 10]
    assert replace(pod.info(), pod_dir=pod.dir / "nowhere").runs("app") == []
