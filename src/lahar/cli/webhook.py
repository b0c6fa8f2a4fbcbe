"""``lahar webhook``: Volcano's and KubeRay's admission over HTTPS, for a real kube-apiserver.

The embedded server runs these rules in-process; a real cluster calls them as admission
webhooks (``deploy/webhooks/`` points at the ``lahar-admission`` Service). This command
serves :func:`lahar.admission_webhook.create_app` with TLS. Rules that look at other
objects read informer caches (Queues, PodGroups, Namespaces) that are synced before the
port opens, so no review is ever answered from an empty cache.

A kube-apiserver only calls webhooks over HTTPS, with a certificate it trusts
(``caBundle``). Without ``--tls-cert-file`` a self-signed pair for
``lahar-admission.lahar-system.svc`` is generated in a temporary directory and its path
printed, which is what tests need; a cluster mounts a real one (e.g. from cert-manager).
Without ``--kubeconfig`` the pod's service account is used. SIGTERM or Ctrl-C stops it.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import ipaddress
import logging
import shutil
import signal
import socket
import sys
import tempfile
import threading
from collections.abc import Awaitable
from pathlib import Path
from typing import Any

from lahar.cli.common import UsageError

SERVICE_HOST = "lahar-admission.lahar-system.svc"


def register(sub: Any) -> None:
    p = sub.add_parser(
        "webhook",
        help="serve Volcano's and KubeRay's admission webhooks over HTTPS",
        description=__doc__.splitlines()[0] if __doc__ else None,
    )
    p.add_argument(
        "--kubeconfig", metavar="PATH", help="kubeconfig (default: the in-cluster service account)"
    )
    p.add_argument("--port", type=int, default=8443, help="HTTPS port (default 8443; 0 picks one)")
    p.add_argument(
        "--bind-address", default="127.0.0.1", help="address to listen on (default loopback)"
    )
    p.add_argument("--tls-cert-file", type=Path, metavar="FILE", help="serving certificate (PEM)")
    p.add_argument("--tls-private-key-file", type=Path, metavar="FILE", help="its key (PEM)")
    p.add_argument(
        "--sync-timeout",
        type=float,
        default=120.0,
        metavar="SECONDS",
        help="give up (exit 1) if the caches have not synced by then (default 120)",
    )
    p.add_argument("-v", "--verbose", action="store_true", help="log more")
    p.set_defaults(func=run)


def self_signed(directory: Path, host: str = SERVICE_HOST) -> tuple[Path, Path]:
    """Write a self-signed certificate for ``host`` (and localhost) and its key."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, host)])
    short = host.removesuffix(".svc")
    san = x509.SubjectAlternativeName(
        [
            x509.DNSName(host),
            x509.DNSName(short),
            x509.DNSName(f"{host}.cluster.local"),
            x509.DNSName("localhost"),
            x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
        ]
    )
    now = dt.datetime.now(dt.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=365))
        .add_extension(san, critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = directory / "tls.crt", directory / "tls.key"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.touch(mode=0o600)
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_path, key_path


def _tls_files(args: argparse.Namespace) -> tuple[Path, Path]:
    cert, key = args.tls_cert_file, args.tls_private_key_file
    if (cert is None) != (key is None):
        raise UsageError("--tls-cert-file and --tls-private-key-file go together")
    if cert is not None and key is not None:
        for flag, path in (("--tls-cert-file", cert), ("--tls-private-key-file", key)):
            if not path.is_file():
                raise UsageError(f"{flag}: no such file: {path}")
        return cert, key
    directory = Path(tempfile.mkdtemp(prefix="lahar-webhook-"))
    cert, key = self_signed(directory)
    print(f"lahar webhook: self-signed certificate for {SERVICE_HOST}: {cert}", flush=True)
    return cert, key


def _client(kubeconfig: str | None) -> Any:
    from lahar.kube import client as kclient

    try:
        if kubeconfig:
            return kclient.from_kubeconfig(kubeconfig, field_manager="lahar-webhook")
        return kclient.in_cluster(field_manager="lahar-webhook")
    except Exception as exc:  # missing file, bad YAML, not in a pod
        where = f"--kubeconfig {kubeconfig}" if kubeconfig else "in-cluster config"
        raise UsageError(f"{where}: {exc}") from None


def _bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise UsageError(f"cannot listen on {host}:{port}: {exc.strerror}") from None
    sock.listen(1024)
    sock.set_inheritable(True)
    return sock


async def _serve(args: argparse.Namespace, cert: Path, key: Path, sock: socket.socket) -> int:
    import uvicorn

    from lahar.admission_webhook import create_app
    from lahar.kube.factory import InformerFactory
    from lahar.volcano.cachelookup import CacheLookup

    client = _client(args.kubeconfig)
    informers = InformerFactory(client)
    lookup = CacheLookup(informers)
    informers.start()
    try:
        synced = await _until_stopped(lookup.wait_for_sync(args.sync_timeout))
        if synced is None:
            return 0  # stopped while waiting for the caches
        if not synced:
            print(
                f"lahar webhook: caches not synced after {args.sync_timeout:g}s: "
                f"{', '.join(lookup.unsynced())} (are the CRDs installed?)",
                file=sys.stderr,
            )
            return 1
        app = create_app(lookup, ready=lambda: lookup.has_synced)
        config = uvicorn.Config(
            app,
            ssl_certfile=str(cert),
            ssl_keyfile=str(key),
            log_level="info" if args.verbose else "warning",
            lifespan="off",
            access_log=args.verbose,
            timeout_graceful_shutdown=3,
        )
        server = uvicorn.Server(config)
        port = sock.getsockname()[1]
        print(f"lahar webhook serving on https://{args.bind_address}:{port}", flush=True)
        await server.serve(sockets=[sock])
        return 0
    finally:
        await informers.stop()
        await client.close()


async def _until_stopped(work: Awaitable[bool]) -> bool | None:
    """``await work``, or None if SIGINT/SIGTERM comes first (before uvicorn handles them)."""
    loop = asyncio.get_running_loop()
    stopped = asyncio.Event()
    signals = (signal.SIGINT, signal.SIGTERM)
    for sig in signals:
        loop.add_signal_handler(sig, stopped.set)
    task = asyncio.ensure_future(work)
    waiter = asyncio.ensure_future(stopped.wait())
    try:
        await asyncio.wait({task, waiter}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        waiter.cancel()
        for sig in signals:
            loop.remove_signal_handler(sig)
            signal.signal(sig, _ignore)
    if not task.done():
        task.cancel()
        return None
    return task.result()


def _ignore(*_: object) -> None:
    """A signal handler that does nothing (see :func:`run`)."""


def run(args: argparse.Namespace) -> int:
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s %(message)s",
    )
    if not 0 <= args.port <= 65535:
        raise UsageError(f"--port must be between 0 and 65535, got {args.port}")
    if args.sync_timeout <= 0:
        raise UsageError("--sync-timeout must be positive")
    cert, key = _tls_files(args)
    generated = None if args.tls_cert_file else cert.parent  # our temp dir, removed at exit
    try:
        sock = _bind(args.bind_address, args.port)
    except BaseException:
        if generated is not None:
            shutil.rmtree(generated, ignore_errors=True)
        raise
    # uvicorn re-raises a captured SIGINT/SIGTERM after shutting down; make that a no-op
    # so a signalled stop exits 0 (the stop itself is uvicorn's graceful shutdown).
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, _ignore)
    try:
        return asyncio.run(_serve(args, cert, key, sock))
    except KeyboardInterrupt:
        return 0
    finally:
        sock.close()
        if generated is not None:
            shutil.rmtree(generated, ignore_errors=True)
