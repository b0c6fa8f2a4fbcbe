"""The corked transport: writes of one loop turn leave together, in order, and none is
lost or sent after the connection closes. (Every HTTPS test of the server, kubectl's
included, goes through it too.)"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import ssl

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lahar.apiserver.cork import CorkedTransport
from lahar.apiserver.server import APIServer


class Recorder:
    """The parts of a transport the cork uses, recording what reaches the socket."""

    def __init__(self) -> None:
        self.writes: list[bytes] = []
        self.closed = False
        self.aborted = False

    def write(self, data: bytes) -> None:
        assert not self.closed
        self.writes.append(bytes(data))

    def is_closing(self) -> bool:
        return self.closed

    def close(self) -> None:
        self.closed = True

    def abort(self) -> None:
        self.closed = self.aborted = True

    def get_write_buffer_size(self) -> int:
        return 0

    def get_extra_info(self, name: str) -> str:
        return f"extra:{name}"


async def test_writes_of_one_turn_leave_as_one() -> None:
    raw = Recorder()
    cork = CorkedTransport(raw, asyncio.get_running_loop())  # type: ignore[arg-type]
    cork.write(b"HTTP/1.1 200 OK\r\n\r\n")
    cork.writelines([b"body", b"", b"-more"])
    assert raw.writes == [] and cork.get_write_buffer_size() == len(
        b"HTTP/1.1 200 OK\r\n\r\nbody-more"
    )
    await asyncio.sleep(0)
    assert raw.writes == [b"HTTP/1.1 200 OK\r\n\r\nbody-more"]
    cork.write(b"next")
    await asyncio.sleep(0)
    assert raw.writes[1:] == [b"next"]
    assert cork.get_extra_info("peername") == "extra:peername"  # the rest is the transport's


async def test_close_flushes_first_and_abort_drops() -> None:
    loop = asyncio.get_running_loop()
    raw = Recorder()
    cork = CorkedTransport(raw, loop)  # type: ignore[arg-type]
    cork.write(b"last words")
    cork.close()
    assert raw.writes == [b"last words"] and raw.closed
    await asyncio.sleep(0)  # the scheduled flush finds nothing and the transport closed
    assert raw.writes == [b"last words"]

    raw2 = Recorder()
    cork2 = CorkedTransport(raw2, loop)  # type: ignore[arg-type]
    cork2.write(b"never")
    cork2.abort()
    await asyncio.sleep(0)
    assert raw2.writes == [] and raw2.aborted


@given(st.lists(st.lists(st.binary(max_size=64), max_size=6), max_size=6))
def test_bytes_arrive_in_order_one_write_per_turn(turns: list[list[bytes]]) -> None:
    async def scenario() -> None:
        raw = Recorder()
        cork = CorkedTransport(raw, asyncio.get_running_loop())  # type: ignore[arg-type]
        for chunks in turns:
            for chunk in chunks:
                cork.write(chunk)
            await asyncio.sleep(0)
        assert b"".join(raw.writes) == b"".join(b"".join(c) for c in turns)
        assert len(raw.writes) == sum(1 for chunks in turns if any(chunks))

    asyncio.run(scenario())


@pytest.fixture
async def served(tmp_path):  # type: ignore[no-untyped-def]
    server = APIServer(tmp_path / "data", port=0)
    server.bind()
    task = asyncio.create_task(server.serve(handle_signals=False))
    try:
        yield server
    finally:
        server.shutdown()
        await asyncio.wait_for(task, 10)


def _records_per_response(port: int, cafile: str, token: str, requests: int) -> list[int]:
    """TLS application-data records that carried each of ``requests`` responses on one
    keep-alive connection, read off the socket below the TLS layer."""
    ctx = ssl.create_default_context(cafile=cafile)
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    tls = ctx.wrap_bio(incoming, outgoing, server_hostname="127.0.0.1")
    raw = bytearray()
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:

        def record() -> bytes:
            while len(raw) < 5 or len(raw) < 5 + int.from_bytes(raw[3:5], "big"):
                chunk = sock.recv(65536)
                assert chunk, "the server closed the connection"
                raw.extend(chunk)
            size = 5 + int.from_bytes(raw[3:5], "big")
            rec = bytes(raw[:size])
            del raw[:size]
            return rec

        while True:
            try:
                tls.do_handshake()
                break
            except ssl.SSLWantReadError:
                sock.sendall(outgoing.read())
                incoming.write(record())
        sock.sendall(outgoing.read())
        counts = []
        for _ in range(requests):
            tls.write(
                b"GET /api/v1/namespaces/default HTTP/1.1\r\nHost: x\r\n"
                + f"Authorization: Bearer {token}\r\n\r\n".encode()
            )
            sock.sendall(outgoing.read())
            plain, records = b"", 0
            while True:
                rec = record()
                records += rec[0] == 23  # application data
                incoming.write(rec)
                with contextlib.suppress(ssl.SSLWantReadError):
                    plain += tls.read(1 << 20)
                head, sep, body = plain.partition(b"\r\n\r\n")
                if sep:
                    length = next(
                        int(line.split(b":")[1])
                        for line in head.split(b"\r\n")
                        if line.lower().startswith(b"content-length")
                    )
                    if len(body) >= length:
                        assert head.startswith(b"HTTP/1.1 200"), head
                        break
            counts.append(records)
    return counts


async def test_a_response_over_tls_is_one_record(served: APIServer) -> None:
    """Headers and body of a response leave in one TLS record (uvicorn alone sends
    two). The first response may also carry TLS 1.3 session tickets: not counted."""
    counts = await asyncio.to_thread(
        _records_per_response,
        served.port,
        str(served.creds.ca_cert),
        served.creds.token,
        4,
    )
    assert counts[1:] == [1, 1, 1], counts
