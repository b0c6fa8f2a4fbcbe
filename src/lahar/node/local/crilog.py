"""The CRI container log format: one file line per output line, as kubelet reads it.

Every container of a local pod has a small shim process that reads the container's
stdout and stderr pipes and appends to ``<restart>.log`` lines of the form
``<timestamp> <stream> <tag> <content>\\n``, the format containerd and CRI-O write and
kubelet parses:

* ``timestamp``: RFC 3339 with nanoseconds, in UTC (we always write nine fraction
  digits, so lines sort as text; parsing accepts any number of digits);
* ``stream``: ``stdout`` or ``stderr``;
* ``tag``: ``F`` for a full line, ``P`` for a partial one: a line longer than the
  maximum line size (16 KiB by default) is cut into ``P`` pieces and ends with an
  ``F`` piece; readers join them back. Further tags may follow, ``:``-separated;
* ``content``: the bytes of the line, without its newline.

The shim imports this module, so it must stay cheap: the standard library only, and
no lahar or third-party import, ever.
"""

from __future__ import annotations

import time
from collections.abc import Callable

STREAMS = ("stdout", "stderr")
MAX_LINE = 16 * 1024


def format_timestamp(ts: float) -> str:
    """``ts`` (seconds since the epoch) as ``2006-01-02T15:04:05.123456789Z``."""
    seconds = int(ts // 1)
    nanos = round((ts - seconds) * 1e9)
    if nanos >= 1_000_000_000:
        seconds, nanos = seconds + 1, nanos - 1_000_000_000
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)) + f".{nanos:09d}Z"


def _days_from_civil(year: int, month: int, day: int) -> int:
    """Days from 1970-01-01 to a proleptic Gregorian date."""
    year -= month <= 2
    era = year // 400
    yoe = year - era * 400
    doy = (153 * (month + (-3 if month > 2 else 9)) + 2) // 5 + day - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


def parse_timestamp(text: str) -> float | None:
    """The epoch seconds of an RFC 3339 timestamp (any fraction, ``Z`` or an offset)."""
    if len(text) < 20 or text[10] not in "Tt" or text[4] + text[7] + text[13] + text[16] != "--::":
        return None
    fields = (text[0:4], text[5:7], text[8:10], text[11:13], text[14:16], text[17:19])
    if not all(f.isdigit() and f.isascii() for f in fields):
        return None
    year, month, day, hour, minute, second = (int(f) for f in fields)
    if not (1 <= month <= 12 and 1 <= day <= 31 and hour < 24 and minute < 60 and second < 61):
        return None
    rest = text[19:]
    frac = 0.0
    if rest.startswith("."):
        digits = len(rest) - len(rest[1:].lstrip("0123456789"))
        if digits == 1:
            return None
        frac = float("0" + rest[:digits])
        rest = rest[digits:]
    if rest in ("Z", "z"):
        offset = 0
    elif len(rest) == 6 and rest[0] in "+-" and rest[3] == ":":
        hours, minutes = rest[1:3], rest[4:6]
        if not (hours.isdigit() and minutes.isdigit() and hours.isascii() and minutes.isascii()):
            return None
        offset = (int(hours) * 60 + int(minutes)) * 60 * (1 if rest[0] == "+" else -1)
    else:
        return None
    days = _days_from_civil(year, month, day)
    return days * 86400 + hour * 3600 + minute * 60 + second - offset + frac


def format_line(ts: float, stream: str, content: bytes, partial: bool = False) -> bytes:
    """One CRI log line, newline included. ``content`` must not contain a newline."""
    if stream not in STREAMS:
        raise ValueError(f"stream must be stdout or stderr, not {stream!r}")
    if b"\n" in content:
        raise ValueError("a CRI log line's content cannot contain a newline")
    head = f"{format_timestamp(ts)} {stream} {'P' if partial else 'F'} ".encode("ascii")
    return head + content + b"\n"


def parse_line(line: bytes) -> tuple[float, str, bool, bytes] | None:
    """``(timestamp, stream, partial, content)`` of one CRI line, with or without its
    newline; None when the line is not in the format."""
    if line.endswith(b"\n"):
        line = line[:-1]
    parts = line.split(b" ", 3)
    if len(parts) < 3:
        return None
    raw_ts, raw_stream, raw_tag = parts[0], parts[1], parts[2]
    try:
        stream = raw_stream.decode("ascii")
        ts = parse_timestamp(raw_ts.decode("ascii"))
    except UnicodeDecodeError:
        return None
    if ts is None or stream not in STREAMS:
        return None
    tag = raw_tag.split(b":", 1)[0]
    if tag not in (b"F", b"P"):
        return None
    return ts, stream, tag == b"P", parts[3] if len(parts) == 4 else b""


class LineSplitter:
    """Turns the bytes read from one stream's pipe, in chunks of any size, into CRI
    lines: complete lines as ``F`` lines, lines longer than ``max_line`` as ``P``
    pieces of ``max_line`` bytes and a final ``F`` one, and (at EOF, from
    :meth:`close`) an unterminated last line as an ``F`` line.

    A piece is only cut once more than ``max_line`` bytes are waiting without a
    newline, so a line of exactly ``max_line`` bytes is always one ``F`` line, however
    the pipe delivered it. Lines are stamped when they are emitted.
    """

    def __init__(
        self,
        stream: str,
        *,
        max_line: int = MAX_LINE,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if stream not in STREAMS:
            raise ValueError(f"stream must be stdout or stderr, not {stream!r}")
        if max_line < 1:
            raise ValueError("max_line must be at least 1")
        self.stream = stream
        self.max_line = max_line
        self.clock = clock
        self._buf = bytearray()

    @property
    def pending(self) -> int:
        """How many bytes wait for the rest of their line."""
        return len(self._buf)

    def feed(self, chunk: bytes, ts: float | None = None) -> bytes:
        """The CRI lines ``chunk`` completes, stamped ``ts`` (default: now); maybe none."""
        self._buf += chunk
        out: list[bytes] = []
        stamp = self.clock() if ts is None else ts
        start = 0
        buf = self._buf
        while True:
            newline = buf.find(b"\n", start, start + self.max_line + 1)
            if newline >= 0:
                out.append(format_line(stamp, self.stream, bytes(buf[start:newline])))
                start = newline + 1
            elif len(buf) - start > self.max_line:
                end = start + self.max_line
                out.append(format_line(stamp, self.stream, bytes(buf[start:end]), partial=True))
                start = end
            else:
                break
        del buf[:start]
        return b"".join(out)

    def close(self, ts: float | None = None) -> bytes:
        """At EOF: the unterminated remainder as a full line (empty if there is none)."""
        if not self._buf:
            return b""
        stamp = self.clock() if ts is None else ts
        line = format_line(stamp, self.stream, bytes(self._buf))
        self._buf.clear()
        return line
