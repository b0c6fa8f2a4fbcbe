"""``lahar queue open|close NAME``: ask the queue controller to open or close a queue.

Volcano does this with bus ``Command`` objects (``vcctl queue operate``), which lahar does
not serve. The wish is written as the annotation ``lahar.dev/queue-state`` (``Open`` or
``Closed``) that the queue controller acts on; see ``lahar.volcano.controllers.queue``.
Closing a queue that still has PodGroups leaves it ``Closing`` until they are gone.
``--wait`` blocks until ``status.state`` shows the result.

Volcano's queue admission refuses any edit of a queue whose state is ``Closing`` (its
state must be Open or Closed). Opening such a queue therefore first sets
``status.state`` to ``Open`` itself (the transition the controller would make anyway),
then records the wish.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path
from typing import Any

from lahar.cli.common import UsageError

MERGE = "application/merge-patch+json"


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("queue", help="open or close a Volcano queue")
    p.add_argument("action", choices=("open", "close"))
    p.add_argument("name", help="the queue")
    p.add_argument("--kubeconfig", type=Path, required=True, help="the cluster")
    p.add_argument(
        "--wait",
        type=float,
        nargs="?",
        const=60.0,
        default=None,
        metavar="SECONDS",
        help="wait until the queue reaches the state (default 60 s when given)",
    )
    p.set_defaults(func=run)


async def _main(args: argparse.Namespace) -> int:
    from lahar.kube import client as kclient
    from lahar.kube import rest
    from lahar.volcano.controllers.common import QUEUES
    from lahar.volcano.controllers.queue import DESIRED_STATE_KEY

    target = "Open" if args.action == "open" else "Closed"
    client = kclient.from_kubeconfig(args.kubeconfig, field_manager="lahar-queue")
    path = QUEUES.path(None, args.name)

    async def patch(body: dict[str, Any], sub: str = "") -> dict[str, Any]:
        return await rest.request(
            client, "PATCH", path + (f"/{sub}" if sub else ""), body=body, content_type=MERGE
        )

    try:
        try:
            queue = await rest.request(client, "GET", path)
        except rest.ApiError as exc:
            if rest.is_status(exc, 404):
                print(f"lahar queue: queue {args.name!r} not found", file=sys.stderr)
                return 1
            raise
        state = (queue.get("status") or {}).get("state", "")
        if state == "Closing" and target == "Closed":
            print(f"queue/{args.name} is already closing")
        else:
            if state == "Closing":
                await patch({"status": {"state": "Open"}}, "status")
            await patch({"metadata": {"annotations": {DESIRED_STATE_KEY: target}}})
            print(f"queue/{args.name} {args.action} requested (state was {state or 'unset'})")
        if args.wait is None:
            return 0
        wanted = {"Open"} if target == "Open" else {"Closed"}
        deadline = time.monotonic() + args.wait
        while True:
            queue = await rest.request(client, "GET", path)
            state = (queue.get("status") or {}).get("state", "")
            if state in wanted:
                print(f"queue/{args.name} is {state}")
                return 0
            if time.monotonic() > deadline:
                print(
                    f"lahar queue: queue/{args.name} is still {state or 'unset'}"
                    f" after {args.wait:g}s",
                    file=sys.stderr,
                )
                return 1
            await asyncio.sleep(0.2)
    except rest.ApiError as exc:
        message = exc.status.message if exc.status is not None else str(exc)
        print(f"lahar queue: {message}", file=sys.stderr)
        return 1
    finally:
        await client.close()


def run(args: argparse.Namespace) -> int:
    if not args.kubeconfig.is_file():
        raise UsageError(f"--kubeconfig: no such file: {args.kubeconfig}")
    if args.wait is not None and args.wait < 0:
        raise UsageError("--wait must not be negative")
    return asyncio.run(_main(args))
