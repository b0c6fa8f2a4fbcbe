"""``lahar schedule``: one scheduling session over Kubernetes objects in YAML files.

Reads Nodes, Pods, PodGroups, Queues and PriorityClasses (multi-document YAML or
``kind: List``), runs the configured actions and plugins (Volcano's default
configuration unless ``--config`` names a volcano-scheduler.conf) and prints the
decisions as JSON, YAML or an explanation in words. The output shape is part of the
command-line contract in ARCHITECTURE.md.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from datetime import datetime
from typing import Any

import yaml

from lahar.cli.common import UsageError


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "schedule",
        help="run one scheduling session over objects in YAML files",
        description=__doc__.splitlines()[0] if __doc__ else None,
    )
    parser.add_argument(
        "-f",
        "--filename",
        action="append",
        required=True,
        metavar="FILE",
        help="YAML file with Nodes, Pods, PodGroups, Queues, PriorityClasses ('-' = stdin)",
    )
    parser.add_argument(
        "--config", metavar="SCHEDULER_CONF", help="Volcano scheduler configuration"
    )
    parser.add_argument("-o", "--output", choices=("json", "yaml", "text"), default="json")
    parser.add_argument(
        "--explain", action="store_true", help="add per-pod node scores (nodeScores)"
    )
    parser.add_argument("--seed", type=int, default=0, help="seed for tie-breaks (default 0)")
    parser.add_argument(
        "--now",
        metavar="RFC3339",
        help="the session's clock, e.g. 2026-11-29T10:00:00Z (default: the current time; "
        "only the sla plugin reads it)",
    )
    parser.add_argument(
        "--scheduler-name",
        action="append",
        metavar="NAME",
        help="schedulerName(s) this scheduler serves (default volcano)",
    )
    parser.set_defaults(func=run)


def _read(path: str) -> str:
    if path == "-":
        return sys.stdin.read()
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read()
    except OSError as exc:
        raise UsageError(f"{path}: cannot read: {exc.strerror}") from None


def _now(text: str | None) -> float:
    if text is None:
        return time.time()
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        raise UsageError(f"--now: not an RFC 3339 time: {text!r}") from None


def run(args: argparse.Namespace) -> int:
    from lahar.scheduler.explain import explain_text
    from lahar.scheduler.framework.conf import ConfigError, default_conf, load_conf
    from lahar.scheduler.run import run_session
    from lahar.scheduler.snapshot import SnapshotError, build_cluster, load_documents

    try:
        conf = load_conf(args.config) if args.config else default_conf()
        objects = load_documents((path, _read(path)) for path in args.filename)
        names = tuple(args.scheduler_name or ("volcano",))
        cluster = build_cluster(objects, scheduler_names=names)
    except (ConfigError, SnapshotError) as exc:
        raise UsageError(str(exc)) from None
    _ssn, result = run_session(
        cluster, conf, seed=args.seed, now=_now(args.now), record_scores=args.explain
    )
    for note in result.notes:
        print(f"lahar schedule: note: {note}", file=sys.stderr)
    if args.output == "json":
        print(json.dumps(result.to_dict(), indent=2))
    elif args.output == "yaml":
        print(yaml.safe_dump(result.to_dict(), sort_keys=False), end="")
    else:
        print(explain_text(result.pod_groups, cluster.skipped_pods))
    return 0
