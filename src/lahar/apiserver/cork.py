"""One socket write per connection per event-loop turn, instead of one per ASGI message.

uvicorn writes a response's headers and its body with two ``transport.write`` calls,
and a watch stream's every event with one more. Over TLS each write is a record of its
own and, on uvloop, a ``send`` system call at once; on loopback that call also runs
the receiver's TCP processing. Measured in ``lahar bench e2e``, those writes were a
sixth of the API server's CPU, and the client woke once per part.

:class:`CorkedHttpToolsProtocol` is uvicorn's HTTP protocol with its transport
wrapped: writes made during one turn of the loop are gathered and handed to the real
transport together at the end of that turn (``call_soon``), so a response leaves as
one record, and events that reach a watcher together leave together. Nothing waits
for a timer: the data goes out before the loop next polls for I/O. ``close`` and
``abort`` flush or drop what is gathered first, in order.
"""

from __future__ import annotations

import asyncio
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol


class CorkedTransport:
    """A transport whose writes go out once per loop turn; everything else is the
    wrapped transport's own."""

    __slots__ = ("_loop", "_pending", "_transport")

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop) -> None:
        self._transport = transport
        self._loop = loop
        self._pending: list[bytes] | None = None

    def write(self, data: bytes | bytearray | memoryview) -> None:
        if not data:
            return
        if self._pending is None:
            self._pending = [bytes(data)]
            self._loop.call_soon(self.flush)
        else:
            self._pending.append(bytes(data))

    def writelines(self, chunks: Any) -> None:
        for chunk in chunks:
            self.write(chunk)

    def flush(self) -> None:
        """Hand what was gathered to the real transport (a no-op when there is none)."""
        pending, self._pending = self._pending, None
        if not pending or self._transport.is_closing():
            return
        self._transport.write(pending[0] if len(pending) == 1 else b"".join(pending))

    def close(self) -> None:
        self.flush()
        self._transport.close()

    def abort(self) -> None:
        self._pending = None
        self._transport.abort()

    def get_write_buffer_size(self) -> int:
        pending = sum(map(len, self._pending)) if self._pending else 0
        return pending + self._transport.get_write_buffer_size()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)


class CorkedHttpToolsProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol writing through a :class:`CorkedTransport`."""

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)  # flow control keeps the real transport
        self.transport = CorkedTransport(transport, self.loop)  # type: ignore[assignment]
