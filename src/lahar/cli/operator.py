"""``lahar operator``: the KubeRay-compatible Ray operator as a process of its own.

It reconciles RayClusters and RayJobs on any cluster's API (the embedded server's
or a real one, through a kubeconfig); ``lahar up`` runs the same operator
in-process. KubeRay's operator env vars (``CLUSTER_DOMAIN``,
``ENABLE_RAY_HEAD_CLUSTER_IP_SERVICE``, ``RAYJOB_STATUS_CHECK_TIMEOUT_SECONDS``,
...) are read from the environment. With ``--leader-elect`` only the holder of
the Lease ``kube-system/kuberay-operator`` acts; a replica that loses it exits with
status 1, to be restarted. SIGTERM or Ctrl-C stops it cleanly.
"""

from __future__ import annotations

import argparse
import os
from typing import Any

from lahar.cli.common import UsageError, kube_client, run_daemon, setup_logging


def register(sub: Any) -> None:
    p = sub.add_parser(
        "operator",
        help="run the KubeRay-compatible Ray operator (RayCluster, RayJob) against a cluster",
        description=__doc__.splitlines()[0] if __doc__ else None,
    )
    p.add_argument("--kubeconfig", metavar="PATH", help="kubeconfig (default $KUBECONFIG)")
    p.add_argument(
        "--batch-scheduler",
        choices=["volcano"],
        help="gang-schedule every Ray cluster through a Volcano PodGroup",
    )
    p.add_argument(
        "--reconcile-concurrency",
        type=int,
        default=4,
        metavar="N",
        help="workers per controller (RayCluster, RayJob); default 4 (KubeRay: 1)",
    )
    p.add_argument(
        "--leader-elect",
        action="store_true",
        help="act only while holding the Lease kube-system/kuberay-operator",
    )
    p.add_argument("--leader-election-namespace", default="kube-system", metavar="NS")
    p.add_argument(
        "--health-port",
        type=int,
        default=0,
        metavar="N",
        help="port of /healthz, /readyz and /metrics on 127.0.0.1 (0 picks one; -1 disables)",
    )
    p.add_argument(
        "--dashboard-via-cluster-ip",
        action="store_true",
        help="reach Ray dashboards through the head Service's clusterIP (needs kube-proxy); "
        "by default through the head pod's IP",
    )
    p.add_argument("-v", "--verbose", action="store_true", help="log more")
    p.set_defaults(func=run)


def options_from(args: argparse.Namespace, env: dict[str, str] | None = None) -> Any:
    from lahar.kuberay.operator.options import OperatorOptions

    if args.reconcile_concurrency < 1:
        raise UsageError("--reconcile-concurrency must be at least 1")
    if not -1 <= args.health_port <= 65535:
        raise UsageError(f"--health-port must be between -1 and 65535, got {args.health_port}")
    return OperatorOptions.from_env(
        dict(os.environ if env is None else env),
        batch_scheduler=args.batch_scheduler,
        reconcile_concurrency=args.reconcile_concurrency,
        leader_elect=args.leader_elect,
        lease_namespace=args.leader_election_namespace,
        health_port=None if args.health_port < 0 else args.health_port,
        prefer_cluster_ip=args.dashboard_via_cluster_ip,
    )


def run(args: argparse.Namespace) -> int:
    from lahar.kuberay.operator import build_operator

    setup_logging(args.verbose)
    options = options_from(args)
    client = kube_client(args.kubeconfig, "kuberay-operator")
    scheduler = options.batch_scheduler or "none"
    return run_daemon(
        "operator",
        client,
        lambda: build_operator(client, options=options),
        lambda op: op.manager,
        lambda where: (
            f"lahar operator running (batch scheduler: {scheduler}, "
            f"concurrency {options.reconcile_concurrency}); health: {where}"
        ),
    )
