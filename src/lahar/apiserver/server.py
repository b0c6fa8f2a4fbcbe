"""Running the embedded API server: open the data dir, serve HTTPS on loopback.

``APIServer`` owns the lifetime of everything the server needs: the SQLite store,
the watch hub, the garbage collector and the HTTPS listener. It binds its socket
before serving so that port 0 works and the kubeconfig names the real port.
Nothing listens beyond loopback unless the caller passes another address.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import uvicorn

from lahar.apiserver import crds, security
from lahar.apiserver.admission import AdmissionChain
from lahar.apiserver.app import APIApp
from lahar.apiserver.cork import CorkedHttpToolsProtocol
from lahar.apiserver.gc import GarbageCollector
from lahar.apiserver.meta import now_rfc3339
from lahar.apiserver.state import ServerState

log = logging.getLogger("lahar.apiserver")
SYSTEM_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")


def _bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    # Accepted connections inherit this: without it a response written in two parts
    # (headers, then body) waits for the client's delayed ACK, about 40 ms a request.
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.bind((host, port))
    sock.listen(1024)
    sock.set_inheritable(True)
    return sock


class APIServer:
    def __init__(
        self,
        data_dir: Path,
        *,
        host: str = "127.0.0.1",
        port: int = 6443,
        admission: AdmissionChain | None = None,
        auth: bool = True,
        watch_window: int = 20000,
    ) -> None:
        self.data_dir = Path(data_dir)
        self.host = host
        self.port = port
        extra = () if host in ("127.0.0.1", "::1", "localhost", "0.0.0.0", "::") else (host,)
        self.creds = security.ensure_credentials(self.data_dir, extra)
        self.state = ServerState.open(
            self.data_dir,
            token=self.creds.token if auth else None,
            admission=admission,
            window=watch_window,
        )
        try:
            self.app = APIApp(self.state)
            self.gc = GarbageCollector(self.state.deletion)
            self._uvicorn: uvicorn.Server | None = None
            self._sock: socket.socket | None = None
            self._ensure_namespaces()
            for crd in self.state.store.list(crds.CRD_KEY)[0]:
                crds.established(self.state, crd)
        except BaseException:  # no server to close later: its store (and thread) go now
            self.state.store.close()
            raise

    @property
    def kubeconfig_path(self) -> Path:
        return self.data_dir / "kubeconfig"

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        if host in ("0.0.0.0", "[::]"):
            host = "127.0.0.1"
        return f"https://{host}:{self.port}"

    def _ensure_namespaces(self) -> None:
        ns_type = self.state.registry.lookup("", "v1", "namespaces")
        assert ns_type is not None
        for name in SYSTEM_NAMESPACES:
            if self.state.store.get("namespaces", "", name) is None:
                self.state.objects.create(
                    ns_type, "", {"metadata": {"name": name}}, _system_write()
                )

    def bind(self) -> None:
        """Open the listening socket and write the kubeconfig naming its port."""
        self._sock = _bind(self.host, self.port)
        self.port = self._sock.getsockname()[1]
        security.write_kubeconfig(self.kubeconfig_path, self.url, self.creds)

    async def serve(self, *, handle_signals: bool = True) -> None:
        """Serve until :meth:`shutdown`; with ``handle_signals`` (and on the main
        thread), SIGINT/SIGTERM call :meth:`shutdown`. ``lahar up`` passes False and
        stops its components before the server, so none of them sees it vanish."""
        if handle_signals and threading.current_thread() is threading.main_thread():
            loop = asyncio.get_running_loop()
            for sig in (signal.SIGINT, signal.SIGTERM):
                loop.add_signal_handler(sig, self.shutdown)
        if self._sock is None:
            self.bind()
        config = uvicorn.Config(
            self.app,
            ssl_certfile=str(self.creds.server_cert),
            ssl_keyfile=str(self.creds.server_key),
            log_level="warning",
            lifespan="off",
            timeout_graceful_shutdown=3,
            access_log=False,
            # no proxy in front: uvicorn's default would take a loopback client's
            # X-Forwarded-For at its word, and parse it on every request
            proxy_headers=False,
            http=CorkedHttpToolsProtocol,  # one write per connection per loop turn
            loop="uvloop",
        )
        self._uvicorn = _QuietServer(config)
        self.state.store.group_commits(asyncio.get_running_loop())  # groupcommit.py
        self.gc.start()
        self.state.ready = True
        log.info("API server listening on %s (started %s)", self.url, now_rfc3339())
        try:
            await self._uvicorn.serve(sockets=[self._sock] if self._sock else None)
        finally:
            self.state.ready = False
            await self.close()

    def shutdown(self) -> None:
        if self._uvicorn is not None:
            self._uvicorn.should_exit = True
        self.state.hub.close()

    async def close(self) -> None:
        await self.gc.stop()
        self.state.hub.close()
        with contextlib.suppress(Exception):
            self.state.store.close()
        if self._sock is not None:
            with contextlib.suppress(OSError):
                self._sock.close()
            self._sock = None


class _QuietServer(uvicorn.Server):
    """uvicorn without its own signal handling: whoever runs the server decides what a
    signal stops first (uvicorn would also re-raise the signal after shutting down)."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


def _system_write():
    from lahar.apiserver.objects import WriteOptions

    return WriteOptions(field_manager="lahar-apiserver")


async def run_forever(server: APIServer) -> None:
    await server.serve()


def run(server: APIServer) -> None:
    asyncio.run(run_forever(server))
