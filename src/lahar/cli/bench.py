"""``lahar bench <target> -o json``: one JSON object of figures per run.

Each target has its own option group; an option of another target is a usage error
rather than silently ignored. Defaults live in ``DEFAULTS`` so that "not given" can be
told apart from "given with the default value".
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from lahar.cli.common import UsageError

TARGETS = ("apiserver", "scheduler", "runtime", "e2e", "operator", "rayjob")

# option destination -> (targets it belongs to, default)
DEFAULTS: dict[str, tuple[tuple[str, ...], Any]] = {
    "seconds": (("apiserver",), 5.0),
    "concurrency": (("apiserver",), 16),
    "nodes": (("scheduler", "e2e"), 1000),
    "pods": (("scheduler", "e2e"), 10000),
    "seed": (("scheduler", "e2e"), 0),
    "objects": (("runtime",), 10000),
    "subprocess": (("runtime",), False),
    "clusters": (("operator",), 1000),
    "runs": (("rayjob",), 3),
    "sample": (("rayjob",), None),
    "no_sample": (("rayjob",), False),
}


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("bench", help="run a benchmark and print its figures as JSON")
    p.add_argument("target", help=f"what to measure: {', '.join(TARGETS)}")
    p.add_argument("-o", "--output", default="json", choices=["json"], help="output format")
    api = p.add_argument_group("apiserver options")
    api.add_argument("--seconds", type=float, help="duration of each write phase (default 5)")
    api.add_argument("--concurrency", type=int, help="concurrent writers (default 16)")
    sched = p.add_argument_group("scheduler and e2e options")
    sched.add_argument("--nodes", type=int, help="nodes in the synthetic cluster (default 1000)")
    sched.add_argument("--pods", type=int, help="pending pods to schedule (default 10000)")
    sched.add_argument("--seed", type=int, help="seed of the cluster and tie-breaks (default 0)")
    rt = p.add_argument_group("runtime options")
    rt.add_argument("--objects", type=int, help="objects to reconcile (default 10000)")
    rt.add_argument(
        "--subprocess",
        action="store_const",
        const=True,
        help="reach the API server in a separate process over HTTPS (default: in-process)",
    )
    op = p.add_argument_group("operator options")
    op.add_argument("--clusters", type=int, help="RayClusters of 1 head + 3 workers (default 1000)")
    rj = p.add_argument_group("rayjob options")
    rj.add_argument("--runs", type=int, help="timed runs of the small RayJob (default 3)")
    rj.add_argument("--sample", type=Path, help="the sample RayJob to time (default: KubeRay's)")
    rj.add_argument(
        "--no-sample", action="store_const", const=True, help="do not time the sample RayJob"
    )
    p.set_defaults(func=run)


def _options(args: argparse.Namespace, target: str) -> dict[str, Any]:
    """The target's options with defaults filled in; another target's option is an error."""
    out: dict[str, Any] = {}
    for dest, (owners, default) in DEFAULTS.items():
        value = getattr(args, dest, None)
        if target not in owners:
            if value is not None:
                names = " and ".join(f"'lahar bench {o}'" for o in owners)
                raise UsageError(f"--{dest} applies to {names} only")
            continue
        out[dest] = default if value is None else value
    return out


def run(args: argparse.Namespace) -> int:
    if args.target not in TARGETS:
        raise UsageError(f"unknown benchmark {args.target!r}; choose one of: {', '.join(TARGETS)}")
    opts = _options(args, args.target)
    result: dict[str, Any]
    if args.target == "apiserver":
        if opts["seconds"] <= 0 or opts["concurrency"] < 1:
            raise UsageError("--seconds must be positive and --concurrency at least 1")
        from lahar.bench import apiserver

        result = apiserver.run(seconds=opts["seconds"], concurrency=opts["concurrency"])
    elif args.target == "runtime":
        if opts["objects"] < 1:
            raise UsageError("--objects must be at least 1")
        from lahar.bench import runtime

        result = runtime.run(objects=opts["objects"], in_process=not opts["subprocess"])
    elif args.target == "rayjob":
        result = _rayjob(opts)
    elif args.target == "operator":
        if opts["clusters"] < 1:
            raise UsageError("--clusters must be at least 1")
        from lahar.bench import operator

        result = operator.run(clusters=opts["clusters"])
    else:
        if opts["nodes"] < 1 or opts["pods"] < 0:
            raise UsageError("--nodes must be at least 1 and --pods must not be negative")
        if args.target == "e2e":
            from lahar.bench import e2e

            result = e2e.run(nodes=opts["nodes"], pods=opts["pods"], seed=opts["seed"])
        else:
            from lahar.bench import scheduler

            result = scheduler.run(nodes=opts["nodes"], pods=opts["pods"], seed=opts["seed"])
    print(json.dumps(result, indent=2))
    return 0


def _rayjob(opts: dict[str, Any]) -> dict[str, Any]:
    from lahar.bench import rayjob

    if opts["runs"] < 0:
        raise UsageError("--runs must not be negative")
    if opts["no_sample"] and opts["sample"] is not None:
        raise UsageError("--sample and --no-sample exclude each other")
    sample = None if opts["no_sample"] else (opts["sample"] or rayjob.default_sample())
    if sample is not None and not sample.is_file():
        raise UsageError(f"--sample: no such file {sample}")
    return rayjob.run(runs=opts["runs"], sample=sample)
