"""``lahar render``: print every object the operator would create for a RayCluster
or RayJob in a file, in creation order, with CRD defaults applied.

It runs the operator's pure builders (``lahar.kuberay.render``) on the file, so
what it prints is what the reconcilers will create. Random name suffixes come
from ``--seed`` (fixed by default, so the output is reproducible). Other kinds in
the file (ConfigMaps, Queues, ...) are skipped with a note on stderr. Invalid
input is reported with the offending field and exit code 2.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

import yaml

from lahar.cli.common import UsageError


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "render",
        help="print the objects the Ray operator would create for a RayCluster/RayJob",
        description=(
            "Print, in creation order, every object the Ray operator would create for the "
            "RayCluster or RayJob in FILE (CRD defaults applied). Other kinds are skipped "
            "with a note on stderr; invalid input exits with code 2."
        ),
    )
    parser.add_argument(
        "-f", "--filename", required=True, metavar="FILE", help="YAML file ('-' = stdin)"
    )
    parser.add_argument(
        "--batch-scheduler",
        choices=("volcano",),
        default=None,
        help="the operator's batch scheduler (default: none)",
    )
    parser.add_argument("-o", "--output", choices=("yaml", "json"), default="yaml")
    parser.add_argument(
        "--seed", type=int, default=0, help="seed for the random name suffixes (default 0)"
    )
    parser.set_defaults(func=run)


class _NoAliases(yaml.SafeDumper):
    def ignore_aliases(self, data: Any) -> bool:
        return True


def _read(path: str) -> list[Any]:
    try:
        if path == "-":
            text = sys.stdin.read()
        else:
            with open(path, encoding="utf-8") as handle:
                text = handle.read()
    except OSError as exc:
        raise UsageError(f"{path}: cannot read: {exc.strerror}") from None
    try:
        return [d for d in yaml.safe_load_all(text) if d is not None]
    except yaml.YAMLError as exc:
        raise UsageError(f"{path}: not valid YAML: {exc}") from None


def _documents(docs: list[Any]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for doc in docs:
        if isinstance(doc, dict) and doc.get("kind") == "List":
            out.extend(i for i in doc.get("items") or [] if isinstance(i, dict))
        elif isinstance(doc, dict):
            out.append(doc)
        else:
            raise UsageError(f"expected Kubernetes objects, found {type(doc).__name__}")
    return out


def run(args: argparse.Namespace) -> int:
    from lahar.kuberay.render import RenderError, render

    objects: list[dict[str, Any]] = []
    found = 0
    for doc in _documents(_read(args.filename)):
        kind, api = doc.get("kind"), str(doc.get("apiVersion", ""))
        name = (doc.get("metadata") or {}).get("name") or (doc.get("metadata") or {}).get(
            "generateName", ""
        )
        if kind not in ("RayCluster", "RayJob") or not api.startswith("ray.io/"):
            print(f"lahar render: note: ignoring {api} {kind} {name!r}", file=sys.stderr)
            continue
        if api != "ray.io/v1":
            raise UsageError(f"{kind} {name!r}: apiVersion {api} is not served; use ray.io/v1")
        found += 1
        try:
            result = render(doc, seed=args.seed, batch_scheduler=args.batch_scheduler)
        except RenderError as exc:
            raise UsageError(str(exc)) from None
        objects.extend(result.objects)
        for note in result.notes:
            print(f"lahar render: note: {kind} {name!r}: {note}", file=sys.stderr)
    if not found:
        raise UsageError(f"{args.filename}: no ray.io/v1 RayCluster or RayJob found")
    if args.output == "json":
        print(json.dumps({"apiVersion": "v1", "kind": "List", "items": objects}, indent=2))
    else:
        print(yaml.dump_all(objects, Dumper=_NoAliases, sort_keys=False), end="")
    return 0
