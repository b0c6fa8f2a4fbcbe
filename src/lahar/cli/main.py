"""Entry point of the ``lahar`` command.

Each sub-command lives in its own module under ``lahar.cli`` and exposes
``register(subparsers)``; the module is imported only when its command runs, so
``lahar schedule`` never pays for the API server's imports and vice versa.
Usage errors exit with code 2 (argparse's convention, kept by every command).
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from lahar import __version__
from lahar.cli.common import UsageError

# Sub-command modules, in the order `lahar --help` lists them.
COMMANDS: tuple[str, ...] = (
    "up",
    "apiserver",
    "kube_controllers",
    "schedule",
    "scheduler",
    "controllers",
    "queue",
    "render",
    "bench",
    "node",
    "operator",
    "webhook",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="lahar", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"lahar {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS:
        try:
            module = importlib.import_module(f"lahar.cli.{name}")
        except ModuleNotFoundError as exc:
            if exc.name == f"lahar.cli.{name}":
                continue  # command not built yet in this checkout
            raise
        module.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    from lahar import eventloop, gctune

    gctune.tune()  # every command is a long-lived process or a benchmark: see gctune
    eventloop.install()
    try:
        return int(args.func(args) or 0)
    except UsageError as exc:
        print(f"lahar {args.command}: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
