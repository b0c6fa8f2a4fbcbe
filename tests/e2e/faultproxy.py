"""A fault-injecting HTTP proxy in front of a lahar API server, for end-to-end tests.

Some failures cannot be provoked through the API itself: a real kube-apiserver refuses
a pod's binding only in races (the pod went, the node went) that a test cannot time.
This proxy sits between one component process and the API server: the component's
kubeconfig points at ``http://127.0.0.1:<port>`` (no TLS on the loopback leg), the
proxy forwards every request over HTTPS with the original bearer token, streams
answers back chunk by chunk (so watches work), and answers a request itself when
``fail(method, path)`` returns a status code. Every request it sees is recorded.
"""

from __future__ import annotations

import http.client
import json
import ssl
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import yaml

Fail = Callable[[str, str], int | None]
HOP = {"connection", "keep-alive", "transfer-encoding", "content-length", "host"}


class FaultProxy:
    """``with FaultProxy(server_url, ca_file, fail) as proxy: proxy.kubeconfig(...)``."""

    def __init__(self, server_url: str, ca_file: Path, fail: Fail) -> None:
        parts = urlsplit(server_url)
        self.upstream = (parts.hostname or "127.0.0.1", parts.port or 443)
        self.ssl = ssl.create_default_context(cafile=str(ca_file))
        self.fail = fail
        self.seen: list[tuple[str, str, int]] = []  # (method, path, status)
        self.lock = threading.Lock()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _any(self) -> None:
                proxy.forward(self)

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _any

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def kubeconfig(self, original: Path, out: Path) -> Path:
        """A copy of ``original`` that points at the proxy."""
        cfg = yaml.safe_load(original.read_text())
        for cluster in cfg["clusters"]:
            cluster["cluster"] = {"server": self.url}
        out.write_text(yaml.safe_dump(cfg))
        return out

    def calls(self, method: str, suffix: str) -> list[int]:
        """Status codes of the requests seen for ``method`` and a path ending in ``suffix``."""
        with self.lock:
            return [s for m, p, s in self.seen if m == method and p.split("?")[0].endswith(suffix)]

    def _record(self, method: str, path: str, status: int) -> None:
        with self.lock:
            self.seen.append((method, path, status))

    def forward(self, h: BaseHTTPRequestHandler) -> None:
        length = int(h.headers.get("content-length") or 0)
        body = h.rfile.read(length) if length else None
        code = self.fail(h.command, h.path)
        if code is not None:
            self._record(h.command, h.path, code)
            status = {"kind": "Status", "apiVersion": "v1", "status": "Failure",
                      "message": "injected by the test's fault proxy", "code": code}  # fmt: skip
            data = json.dumps(status).encode()
            h.send_response(code)
            h.send_header("content-type", "application/json")
            h.send_header("content-length", str(len(data)))
            h.end_headers()
            h.wfile.write(data)
            return
        conn = http.client.HTTPSConnection(*self.upstream, context=self.ssl, timeout=600)
        try:
            headers = {k: v for k, v in h.headers.items() if k.lower() not in HOP}
            conn.request(h.command, h.path, body=body, headers=headers)
            resp = conn.getresponse()
            self._record(h.command, h.path, resp.status)
            h.send_response(resp.status)
            for k, v in resp.getheaders():
                if k.lower() not in HOP:
                    h.send_header(k, v)
            h.send_header("transfer-encoding", "chunked")
            h.end_headers()
            while True:
                chunk = resp.read1(65536)
                if not chunk:
                    break
                h.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                h.wfile.flush()
            h.wfile.write(b"0\r\n\r\n")
        except (OSError, http.client.HTTPException):
            h.close_connection = True
        finally:
            conn.close()

    def __enter__(self) -> FaultProxy:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
