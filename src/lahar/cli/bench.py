"""``lahar bench <target> -o json``: one JSON object of figures per run."""

from __future__ import annotations

import argparse
import json

from lahar.cli.common import UsageError

TARGETS = ("apiserver",)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("bench", help="run a benchmark and print its figures as JSON")
    p.add_argument("target", help=f"what to measure: {', '.join(TARGETS)}")
    p.add_argument("-o", "--output", default="json", choices=["json"], help="output format")
    p.add_argument("--seconds", type=float, default=5.0, help="duration of each write phase")
    p.add_argument("--concurrency", type=int, default=16, help="concurrent writers")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.target not in TARGETS:
        raise UsageError(f"unknown benchmark {args.target!r}; choose one of: {', '.join(TARGETS)}")
    if args.seconds <= 0 or args.concurrency < 1:
        raise UsageError("--seconds must be positive and --concurrency at least 1")
    from lahar.bench import apiserver

    result = apiserver.run(seconds=args.seconds, concurrency=args.concurrency)
    print(json.dumps(result, indent=2))
    return 0
