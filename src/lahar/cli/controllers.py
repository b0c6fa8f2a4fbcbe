"""``lahar controllers``: Volcano's controller manager (podgroup, queue and vcjob).

Runs the three controllers against the cluster a kubeconfig names, the split-process and
real-cluster form of what ``lahar up`` runs in-process. With ``--leader-elect`` several
replicas may run; only the holder of the ``lahar-controllers`` Lease (namespace
``kube-system`` unless ``--leader-elect-namespace``) reconciles. ``/healthz``, ``/readyz``
and ``/metrics`` are served on 127.0.0.1 (``--health-port``). SIGTERM or Ctrl-C stops it
cleanly (exit 0); a lost Lease exits 1, to be restarted.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
from pathlib import Path
from typing import TYPE_CHECKING

from lahar.cli.common import UsageError

if TYPE_CHECKING:
    from lahar.volcano.controllers import ControllerOptions

LEASE_NAME = "lahar-controllers"


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("controllers", help="run Volcano's controllers (podgroup, queue, vcjob)")
    p.add_argument("--kubeconfig", type=Path, required=True, help="the cluster to control")
    p.add_argument("--leader-elect", action="store_true", help="hold a Lease before reconciling")
    p.add_argument("--leader-elect-namespace", default="kube-system", help="namespace of the Lease")
    p.add_argument(
        "--health-port",
        type=int,
        default=0,
        help="port of /healthz, /readyz and /metrics on 127.0.0.1 (0 picks a free one)",
    )
    p.add_argument(
        "--workers", type=int, default=3, help="workers per controller (Volcano's default 3)"
    )
    p.add_argument(
        "--scheduler-name",
        action="append",
        metavar="NAME",
        help="schedulerName(s) whose pods get PodGroups (default volcano)",
    )
    p.add_argument(
        "--controllers",
        default="*",
        help="comma-separated subset of podgroup,queue,job (default all)",
    )
    p.add_argument("-v", "--verbose", action="store_true", help="log more")
    p.set_defaults(func=run)


def _options(args: argparse.Namespace) -> ControllerOptions:
    from lahar.volcano.controllers import ControllerOptions

    if args.workers < 1:
        raise UsageError("--workers must be at least 1")
    if not 0 <= args.health_port <= 65535:
        raise UsageError(f"--health-port must be between 0 and 65535, got {args.health_port}")
    known = {"podgroup", "queue", "job"}
    chosen = known if args.controllers == "*" else set(args.controllers.split(","))
    if not chosen or chosen - known:
        raise UsageError(f"--controllers: unknown {', '.join(sorted(chosen - known)) or '(none)'}")
    return ControllerOptions(
        workers=args.workers,
        scheduler_names=tuple(args.scheduler_name or ("volcano",)),
        enable_podgroup="podgroup" in chosen,
        enable_queue="queue" in chosen,
        enable_job="job" in chosen,
    )


async def _main(args: argparse.Namespace) -> int:
    from lahar.kube import client as kclient
    from lahar.kube.leaderelection import LeaderElectionConfig, LeadershipLost
    from lahar.kube.manager import Manager
    from lahar.volcano.controllers import setup

    options = _options(args)
    client = kclient.from_kubeconfig(args.kubeconfig, field_manager="lahar-controllers")
    election = (
        LeaderElectionConfig(LEASE_NAME, namespace=args.leader_elect_namespace)
        if args.leader_elect
        else None
    )
    mgr = Manager(
        client, name="lahar-controllers", leader_election=election, health_port=args.health_port
    )
    setup(mgr, options)
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, mgr.stop)
    run = asyncio.create_task(mgr.run())
    try:
        await mgr.wait_started(30)
        print(
            f"lahar controllers running against {args.kubeconfig}"
            f" (health and metrics on 127.0.0.1:{mgr.port})",
            flush=True,
        )
        await run
    except LeadershipLost as exc:
        logging.getLogger("lahar.controllers").error("lost leadership: %s", exc)
        return 1
    finally:
        if not run.done():
            mgr.stop()
            await asyncio.gather(run, return_exceptions=True)
        await client.close()
    return 0


def run(args: argparse.Namespace) -> int:
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s %(message)s",
    )
    if not args.kubeconfig.is_file():
        raise UsageError(f"--kubeconfig: no such file: {args.kubeconfig}")
    _options(args)  # usage errors before anything starts
    try:
        return asyncio.run(_main(args))
    except KeyboardInterrupt:
        return 0
