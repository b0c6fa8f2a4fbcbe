"""``lahar scheduler``: the Volcano-compatible scheduler as a process of its own.

Watches Nodes, Pods, PodGroups, Queues and PriorityClasses through a kubeconfig (the
embedded server's or a real cluster's), runs a scheduling session every period and
binds, evicts and writes status as Volcano's scheduler (``vc-scheduler``) does. SIGTERM or Ctrl-C
stops it cleanly (in-flight binds finish, the Lease is released). With
``--leader-elect`` only the holder of the Lease ``kube-system/volcano`` schedules; a replica
that loses it exits with status 1, to be restarted.
"""

from __future__ import annotations

import argparse
import re
from typing import Any

from lahar.cli.common import UsageError, kube_client, run_daemon, setup_logging

_DURATION = re.compile(r"^(\d+(?:\.\d+)?)(ms|s|m|h)?$")
_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, None: 1.0}


def parse_duration(text: str) -> float:
    """Seconds in a Go-style duration (``1s``, ``500ms``, ``2m``); a bare number is seconds."""
    match = _DURATION.match(text.strip())
    if not match:
        raise UsageError(f"--schedule-period: not a duration: {text!r} (e.g. 1s, 500ms)")
    seconds = float(match.group(1)) * _UNITS[match.group(2)]
    if seconds <= 0:
        raise UsageError("--schedule-period must be positive")
    return seconds


def register(sub: Any) -> None:
    p = sub.add_parser(
        "scheduler",
        help="run the Volcano-compatible batch scheduler against a cluster",
        description=__doc__.splitlines()[0] if __doc__ else None,
    )
    p.add_argument("--kubeconfig", metavar="PATH", help="kubeconfig (default $KUBECONFIG)")
    p.add_argument(
        "--scheduler-conf",
        metavar="FILE",
        help="Volcano scheduler configuration (re-read when it changes; default: built-in)",
    )
    p.add_argument(
        "--schedule-period",
        default="1s",
        metavar="DURATION",
        help="time between the starts of two sessions; a session that overruns it is followed at once (default 1s)",
    )
    p.add_argument(
        "--scheduler-name",
        action="append",
        metavar="NAME",
        help="schedulerName of the pods to schedule (repeatable; default volcano)",
    )
    p.add_argument(
        "--leader-elect", action="store_true", help="schedule only while holding the Lease"
    )
    p.add_argument(
        "--lock-object-name", help="Lease name (default: the scheduler name, as Volcano)"
    )
    p.add_argument("--lock-object-namespace", default="kube-system", help="Lease namespace")
    p.add_argument(
        "--health-port",
        type=int,
        default=11251,
        metavar="N",
        help="port of /healthz, /readyz and /metrics (0 picks one; -1 disables)",
    )
    p.add_argument("--health-address", default="127.0.0.1", help="address of that endpoint")
    p.add_argument(
        "--bind-workers", type=int, default=32, help="concurrent bind calls (default 32)"
    )
    p.add_argument(
        "--no-queue-counts",
        action="store_true",
        help="leave Queue status PodGroup counts to the queue controller",
    )
    p.add_argument("-v", "--verbose", action="store_true", help="log more")
    p.set_defaults(func=run)


def options_from(args: argparse.Namespace) -> Any:
    from lahar.scheduler.daemon import SchedulerOptions

    if not -1 <= args.health_port <= 65535:
        raise UsageError(f"--health-port must be between -1 and 65535, got {args.health_port}")
    if args.bind_workers < 1:
        raise UsageError("--bind-workers must be at least 1")
    return SchedulerOptions(
        scheduler_names=tuple(args.scheduler_name or ("volcano",)),
        schedule_period=parse_duration(args.schedule_period),
        scheduler_conf=args.scheduler_conf,
        leader_elect=args.leader_elect,
        lock_name=args.lock_object_name,
        lock_namespace=args.lock_object_namespace,
        health_port=None if args.health_port < 0 else args.health_port,
        health_host=args.health_address,
        bind_workers=args.bind_workers,
        queue_counts=not args.no_queue_counts,
    )


def run(args: argparse.Namespace) -> int:
    from lahar.scheduler.daemon import SchedulerDaemon
    from lahar.scheduler.framework.conf import ConfigError

    setup_logging(args.verbose)
    options = options_from(args)
    client = kube_client(args.kubeconfig, "vc-scheduler")

    def build() -> SchedulerDaemon:
        try:
            return SchedulerDaemon(client, options=options)
        except ConfigError as exc:
            raise UsageError(str(exc)) from None

    return run_daemon(
        "scheduler",
        client,
        build,
        lambda daemon: daemon.manager,
        lambda where: f"lahar scheduler running; health and metrics: {where}",
    )
