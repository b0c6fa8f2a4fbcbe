"""Pieces every sub-command shares."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol


class UsageError(Exception):
    """A user mistake on the command line or in an input file: message, exit code 2."""


def setup_logging(verbose: bool) -> None:
    import logging

    logging.basicConfig(
        level=logging.INFO if verbose else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s %(message)s",
    )


def kube_client(kubeconfig: str | None, field_manager: str) -> Any:
    """The client a daemon uses, or a usage error naming ``--kubeconfig``."""
    from lahar.kube import client as kclient

    try:
        return kclient.from_kubeconfig(kubeconfig, field_manager=field_manager)
    except Exception as exc:  # missing file, bad YAML, unknown context
        raise UsageError(f"--kubeconfig: {exc}") from None


class Daemon(Protocol):
    """What a long-running component offers its command: run, stop, and its manager."""

    async def run(self) -> None: ...

    def stop(self) -> None: ...


def run_daemon(
    name: str,
    client: Any,
    build: Callable[[], Daemon],
    manager: Callable[[Daemon], Any],
    describe: Callable[[Any], str],
) -> int:
    """Run a daemon in the foreground: SIGINT/SIGTERM stop it cleanly (exit 0), a lost
    leader Lease exits 1, and once it has started one line says where its health and
    metrics endpoint is (``describe(port)``)."""
    import asyncio
    import contextlib
    import signal
    import sys

    from lahar.kube.leaderelection import LeadershipLost

    async def main() -> int:
        daemon = build()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, daemon.stop)

        async def announce() -> None:
            with contextlib.suppress(Exception):
                mgr = manager(daemon)
                await mgr.wait_started(30)
                port = mgr.port
                print(describe(f"http://127.0.0.1:{port}" if port else "off"), flush=True)

        note = asyncio.create_task(announce())
        try:
            await daemon.run()
        except LeadershipLost as exc:
            print(f"lahar {name}: {exc}; exiting", file=sys.stderr)
            return 1
        finally:
            note.cancel()
            await client.close()
        return 0

    try:
        return asyncio.run(main())
    except KeyboardInterrupt:
        return 130
