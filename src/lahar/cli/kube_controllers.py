"""``lahar kube-controllers``: the built-in controllers as a process of their own.

The Job, TTL-after-finished, node lifecycle and pod GC controllers, against any
cluster's API (the embedded server's or a real one, through a kubeconfig). ``lahar up`` runs the same controllers in-process; this command is for split-process
setups and for a real cluster. Only the holder of the Lease
``kube-system/lahar-controller-manager`` acts (``--leader-elect=false`` to skip the
election); a replica that loses the Lease exits with status 1, to be restarted.
SIGTERM or Ctrl-C stops it cleanly and releases the Lease.
"""

from __future__ import annotations

import argparse
from typing import Any

from lahar.cli.common import UsageError, kube_client, run_daemon, setup_logging


def _bool(text: str) -> bool:
    if text.lower() in ("true", "1", "yes"):
        return True
    if text.lower() in ("false", "0", "no"):
        return False
    raise argparse.ArgumentTypeError(f"not a boolean: {text!r}")


def register(sub: Any) -> None:
    p = sub.add_parser(
        "kube-controllers",
        help="run the built-in controllers (Job, node lifecycle, pod GC) against a cluster",
        description=__doc__.splitlines()[0] if __doc__ else None,
    )
    p.add_argument("--kubeconfig", metavar="PATH", help="kubeconfig (default $KUBECONFIG)")
    p.add_argument(
        "--controllers",
        default="job,nodelifecycle,podgc",
        help="comma-separated controllers to run (default: job,nodelifecycle,podgc)",
    )
    p.add_argument(
        "--leader-elect",
        type=_bool,
        default=True,
        metavar="BOOL",
        help="act only while holding the Lease kube-system/lahar-controller-manager (default true)",
    )
    p.add_argument("--concurrent-job-syncs", type=int, default=5, metavar="N")
    p.add_argument(
        "--node-monitor-grace-period",
        type=float,
        default=40.0,
        metavar="SECONDS",
        help="a node silent this long is marked Unknown and tainted unreachable (default 40)",
    )
    p.add_argument("--node-startup-grace-period", type=float, default=60.0, metavar="SECONDS")
    p.add_argument(
        "--terminated-pod-gc-threshold",
        type=int,
        default=12500,
        metavar="N",
        help="terminated pods kept before the oldest are deleted (0: never; default 12500)",
    )
    p.add_argument(
        "--pod-gc-period", type=float, default=20.0, metavar="SECONDS", help="(default 20)"
    )
    p.add_argument(
        "--pod-gc-orphan-quarantine",
        type=float,
        default=40.0,
        metavar="SECONDS",
        help="how long a pod's node must be missing before the pod is collected (default 40)",
    )
    p.add_argument(
        "--job-backoff-base",
        type=float,
        default=10.0,
        metavar="SECONDS",
        help="first delay before replacing a failed Job pod; doubles per failure (default 10)",
    )
    p.add_argument(
        "--health-port",
        type=int,
        default=0,
        metavar="N",
        help="port of /healthz, /readyz and /metrics on 127.0.0.1 (0 picks one; -1 disables)",
    )
    p.add_argument("-v", "--verbose", action="store_true", help="log more")
    p.set_defaults(func=run)


def options_from(args: argparse.Namespace) -> Any:
    from lahar.controllers.options import ControllerOptions
    from lahar.controllers.run import ALL

    chosen = tuple(c.strip() for c in args.controllers.split(",") if c.strip())
    unknown = sorted(set(chosen) - set(ALL))
    if unknown:
        raise UsageError(f"--controllers: unknown {', '.join(unknown)} (known: {', '.join(ALL)})")
    for flag, value in (
        ("--node-monitor-grace-period", args.node_monitor_grace_period),
        ("--node-startup-grace-period", args.node_startup_grace_period),
        ("--pod-gc-period", args.pod_gc_period),
    ):
        if value <= 0:
            raise UsageError(f"{flag} must be positive")
    if (
        min(args.terminated_pod_gc_threshold, args.job_backoff_base, args.pod_gc_orphan_quarantine)
        < 0
    ):
        raise UsageError(
            "--terminated-pod-gc-threshold, --job-backoff-base and "
            "--pod-gc-orphan-quarantine must not be negative"
        )
    if args.concurrent_job_syncs < 1:
        raise UsageError("--concurrent-job-syncs must be at least 1")
    if not -1 <= args.health_port <= 65535:
        raise UsageError(f"--health-port must be between -1 and 65535, got {args.health_port}")
    return ControllerOptions(
        controllers=chosen,
        leader_elect=args.leader_elect,
        job_workers=args.concurrent_job_syncs,
        job_backoff_base=args.job_backoff_base,
        node_monitor_grace_period=args.node_monitor_grace_period,
        node_startup_grace_period=args.node_startup_grace_period,
        node_monitor_period=min(5.0, args.node_monitor_grace_period / 4),
        terminated_pod_gc_threshold=args.terminated_pod_gc_threshold,
        pod_gc_period=args.pod_gc_period,
        orphan_quarantine=args.pod_gc_orphan_quarantine,
        health_port=None if args.health_port < 0 else args.health_port,
    )


def run(args: argparse.Namespace) -> int:
    from lahar.controllers.run import build_manager

    setup_logging(args.verbose)
    options = options_from(args)
    client = kube_client(args.kubeconfig, "lahar-controller-manager")
    names = ", ".join(options.controllers)
    return run_daemon(
        "kube-controllers",
        client,
        lambda: build_manager(client, options=options),
        lambda mgr: mgr,
        lambda where: f"lahar kube-controllers running ({names}); health: {where}",
    )
