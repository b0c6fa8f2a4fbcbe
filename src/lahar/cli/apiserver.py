"""``lahar apiserver``: the embedded API server alone (serves only what is applied to it)."""

from __future__ import annotations

import argparse
import asyncio
import logging
from pathlib import Path

from lahar.cli.common import UsageError


def add_server_args(p: argparse.ArgumentParser, *, default_dir: Path | None) -> None:
    p.add_argument(
        "--data-dir",
        type=Path,
        default=default_dir,
        required=default_dir is None,
        help="where the SQLite store, TLS material and kubeconfig live",
    )
    p.add_argument("--port", type=int, default=6443, help="HTTPS port (0 picks a free one)")
    p.add_argument(
        "--bind-address", default="127.0.0.1", help="address to listen on (default loopback only)"
    )
    p.add_argument(
        "--watch-window",
        type=int,
        default=20000,
        help="how many recent changes a watch can resume from (older: 410 Expired)",
    )
    p.add_argument("-v", "--verbose", action="store_true", help="log more")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("apiserver", help="run the embedded Kubernetes-compatible API server")
    add_server_args(p, default_dir=None)
    p.set_defaults(func=run)


def check_port(port: int) -> None:
    if not 0 <= port <= 65535:
        raise UsageError(f"--port must be between 0 and 65535, got {port}")


def run(args: argparse.Namespace) -> int:
    from lahar.apiserver.server import APIServer

    check_port(args.port)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s %(message)s",
    )
    if args.watch_window < 1:
        raise UsageError("--watch-window must be at least 1")
    args.data_dir = args.data_dir.resolve()
    server = APIServer(
        args.data_dir, host=args.bind_address, port=args.port, watch_window=args.watch_window
    )
    try:
        server.bind()
    except OSError as exc:
        raise UsageError(
            f"cannot listen on {args.bind_address}:{args.port}: {exc.strerror}"
        ) from None
    print(
        f"lahar apiserver listening on {server.url}; kubeconfig: {server.kubeconfig_path}",
        flush=True,
    )
    try:
        asyncio.run(server.serve())
    except KeyboardInterrupt:
        pass
    return 0
