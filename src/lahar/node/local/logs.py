"""The logs of local containers, served the way a kubelet serves ``kubectl logs``.

Each run of a container writes, through its shim, a CRI-format file (see
:mod:`lahar.node.local.crilog`) at ``<pod_dir>/logs/<container>/<restart>.log``, where
``restart`` is the container's restart count when that run started. Keeping every
run's file is what makes ``--previous`` work.

:class:`ContainerLogs` is the local agent's log provider (the API server's
``LogProvider``: ``stream(request)``). It finds a pod through a ``locate`` callable
that returns a :class:`PodLogs`, then reads the chosen file: partial (``P``) pieces are
joined back into whole lines; ``tail_lines``, ``since_seconds``, ``timestamps`` and
``limit_bytes`` behave as with a kubelet; ``follow`` polls the file for new lines and
ends once the container is no longer running and the file is drained, or once a newer
run's file appears. Errors for an unknown pod or container are ``LookupError`` with
kubelet's wording (the log endpoint answers them 404).
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from lahar.apiserver.logs import LogRequest
from lahar.node.local.crilog import format_timestamp, parse_line

_BLOCK = 64 * 1024


def log_path(pod_dir: Path, container: str, restart: int) -> Path:
    """Where run ``restart`` of ``container`` writes its log."""
    return Path(pod_dir) / "logs" / container / f"{restart}.log"


@dataclass(frozen=True)
class PodLogs:
    """What the provider needs to know about one pod, from the agent.

    ``restart_counts`` gives each container's restart count: the number of its latest
    run, the one writing ``<restart>.log``. ``is_running(container)`` is asked while
    following; it must stay true until that run's log is complete (its shim has
    exited), so that nothing written last is missed.
    """

    pod_dir: Path
    containers: tuple[str, ...]
    restart_counts: Mapping[str, int]
    is_running: Callable[[str], bool]

    def runs(self, container: str) -> list[int]:
        """The restart numbers that have a log file, oldest first."""
        try:
            names = os.listdir(Path(self.pod_dir) / "logs" / container)
        except OSError:
            return []
        out = []
        for name in names:
            stem, dot, ext = name.partition(".")
            if dot and ext == "log" and stem.isdigit() and stem.isascii():
                out.append(int(stem))
        return sorted(out)


@dataclass
class _Line:
    ts: float
    stream: str
    data: bytes  # the whole line, its newline included once complete
    certain: bool = True  # False: its first pieces may lie before where reading began


class _Joiner:
    """Joins P pieces (per stream) into whole lines, in the order they complete.

    When reading starts mid-file, the line a stream's first piece belongs to may have
    lost earlier pieces: ``uncertain`` names the streams whose next line is marked so.
    """

    def __init__(self, uncertain: tuple[str, ...] = ()) -> None:
        self.pending: dict[str, _Line] = {}
        self.uncertain = set(uncertain)

    def feed(self, raw: bytes) -> _Line | None:
        parsed = parse_line(raw)
        if parsed is None:
            return None
        ts, stream, partial, content = parsed
        line = self.pending.pop(stream, None)
        if line is None:
            line = _Line(ts, stream, content, stream not in self.uncertain)
            self.uncertain.discard(stream)
        else:
            line.data += content
        if partial:
            self.pending[stream] = line
            return None
        line.data += b"\n"
        return line

    def drain(self) -> list[_Line]:
        """Lines cut off by the end of the log, oldest first, ended as whole lines (as
        the shim ends an unterminated last line)."""
        out = [line for line in self.pending.values() if line.data]
        self.pending.clear()
        for line in out:
            line.data += b"\n"
        return sorted(out, key=lambda line: line.ts)


class _Reader:
    """Reads whole raw lines from a growing file, from an offset on."""

    def __init__(self, path: Path, offset: int = 0) -> None:
        self.path = path
        self.offset = offset
        self._rest = b""

    def read(self) -> tuple[list[bytes], bool]:
        """The raw lines completed by the next block, and whether there was one."""
        try:
            with open(self.path, "rb") as f:
                f.seek(self.offset)
                data = f.read(_BLOCK)
        except FileNotFoundError:
            return [], False
        if not data:
            return [], False
        self.offset += len(data)
        data = self._rest + data
        cut = data.rfind(b"\n") + 1
        self._rest = data[cut:]
        return data[:cut].splitlines(keepends=True), True

    def remainder(self) -> bytes:
        rest, self._rest = self._rest, b""
        return rest


def _tail_window(path: Path, count: int) -> tuple[list[_Line], _Joiner, int, bytes]:
    """The last ``count`` whole lines of ``path``, the joiner (holding pieces still open
    at the end), the offset of the end of the last whole raw line and what follows it (a
    line being written). Reads backwards, doubling the window until those lines and the
    open ones all certainly start inside it.

    One case is not seen: a line still open at the end whose pieces all lie before the
    window (the other stream wrote more than the window since). Reading the whole file to
    rule it out would make every tail cost the file's size."""
    size = path.stat().st_size
    span = _BLOCK
    while True:
        start = max(0, size - span)
        with open(path, "rb") as f:
            f.seek(start)
            data = f.read(size - start)
        end = data.rfind(b"\n") + 1
        body = data[:end]
        if start > 0:
            body = body[body.find(b"\n") + 1 :]
        joiner = _Joiner(uncertain=() if start == 0 else ("stdout", "stderr"))
        lines = [line for raw in body.splitlines(keepends=True) if (line := joiner.feed(raw))]
        joiner.uncertain.clear()  # a stream absent from the window lost nothing
        shown = [*(lines[-count:] if count else []), *joiner.pending.values()]
        if start == 0 or (len(lines) >= count and all(line.certain for line in shown)):
            return lines[-count:] if count else [], joiner, start + end, data[end:]
        span *= 2


class ContainerLogs:
    """A log provider over the local pods ``locate(namespace, pod)`` finds."""

    def __init__(
        self,
        locate: Callable[[str, str], PodLogs | None],
        *,
        poll: float = 0.1,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.locate = locate
        self.poll = poll
        self.clock = clock

    def _choose(self, request: LogRequest) -> tuple[PodLogs, Path, int]:
        """The pod, the file to read and its restart number, or LookupError."""
        pod, c = request.pod, request.container
        found = self.locate(request.namespace, pod)
        if found is None:
            raise LookupError(f'pod "{pod}" cannot be found - no logs available')
        if c not in found.containers:
            raise LookupError(f'container "{c}" in pod "{pod}" is not available')
        current = found.restart_counts.get(c, 0)
        runs = [n for n in found.runs(c) if n <= current]
        if request.previous:
            older = [n for n in runs if n < current]
            if not older:
                raise LookupError(f'previous terminated container "{c}" in pod "{pod}" not found')
            run = older[-1]
        elif runs:
            run = runs[-1]  # the latest run; an older one while the next has no file yet
        else:
            raise LookupError(
                f'container "{c}" in pod "{pod}" is waiting to start: ContainerCreating'
            )
        return found, log_path(found.pod_dir, c, run), run

    async def stream(self, request: LogRequest) -> AsyncIterator[bytes]:
        """The container's log as ``kubectl logs`` shows it (see the module docstring).
        Raises ``LookupError`` (before the first chunk) when there is nothing to read."""
        pod, path, run = self._choose(request)
        limit = request.limit_bytes
        if (limit is not None and limit <= 0) or (request.tail_lines == 0 and not request.follow):
            return
        cutoff = self.clock() - request.since_seconds if request.since_seconds is not None else None
        sent = 0

        def render(lines: list[_Line]) -> tuple[bytes, bool]:
            """The bytes to send for ``lines`` and whether the byte limit is reached."""
            nonlocal sent
            parts = []
            for line in lines:
                if cutoff is not None and line.ts < cutoff:
                    continue
                parts.append(
                    format_timestamp(line.ts).encode() + b" " if request.timestamps else b""
                )
                parts.append(line.data)
            out = b"".join(parts)
            if limit is not None and sent + len(out) >= limit:
                out = out[: limit - sent]
                sent = limit
                return out, True
            sent += len(out)
            return out, False

        tail = request.tail_lines
        if tail is not None and tail >= 0:
            try:
                lines, joiner, offset, torn = _tail_window(path, tail)
            except FileNotFoundError:
                lines, joiner, offset, torn = [], _Joiner(), 0, b""
            if not request.follow:  # lines cut off at the end count as lines too
                last = joiner.feed(torn) if torn else None
                lines = [*lines, *([last] if last else []), *joiner.drain()]
                out, _ = render(lines[-tail:] if tail else [])
                if out:
                    yield out
                return
            out, done = render(lines)
            if out:
                yield out
            if done:
                return
        else:
            joiner, offset = _Joiner(), 0
        reader = _Reader(path, offset)

        def take() -> tuple[list[_Line], bool]:
            raws, progressed = reader.read()
            return [line for raw in raws if (line := joiner.feed(raw))], progressed

        while True:
            lines, progressed = take()
            if progressed:
                out, done = render(lines)
                if out:
                    yield out
                if done:
                    return
                continue  # more may be waiting: read on before deciding anything
            if not request.follow or not self._more_coming(pod, request.container, run):
                # One last read: whatever was written before the run ended or moved on.
                lines = []
                while True:
                    more, progressed = take()
                    lines += more
                    if not progressed:
                        break
                leftover = reader.remainder()
                if leftover:
                    line = joiner.feed(leftover)
                    lines += [line] if line is not None else []
                out, _ = render(lines + joiner.drain())
                if out:
                    yield out
                return
            await asyncio.sleep(self.poll)

    @staticmethod
    def _more_coming(pod: PodLogs, container: str, run: int) -> bool:
        """Whether a followed file may still grow: its run is the latest and running."""
        if any(n > run for n in pod.runs(container)):
            return False
        return pod.restart_counts.get(container, 0) <= run and pod.is_running(container)
