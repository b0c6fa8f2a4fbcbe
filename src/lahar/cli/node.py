"""``lahar node``: run a node agent against a cluster (``--kubeconfig``).

Each agent is a sub-command of its own under ``node``: ``sim`` (simulated nodes,
kwok-style) now, ``local`` (pods as local processes) later. An agent adds its parser
in an ``add_<agent>`` function and its entry to ``AGENTS``; the options every agent
shares (``--kubeconfig``, ``--heartbeat``, ``-v``) come from :func:`add_common_args`.
SIGTERM and Ctrl-C stop the agent cleanly (a simulator removes its nodes first).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

from lahar.cli.common import UsageError


def duration(value: str) -> float:
    """argparse type: a Go duration (``500ms``, ``1m30s``) or seconds."""
    from lahar.node.sim.options import parse_duration

    try:
        return parse_duration(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def add_common_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--kubeconfig",
        type=Path,
        default=None,
        help="kubeconfig of the cluster (default $KUBECONFIG, ~/.kube/config)",
    )
    p.add_argument(
        "--heartbeat",
        type=duration,
        default=10.0,
        metavar="DURATION",
        help="node Lease renewal period (default 10s)",
    )
    p.add_argument(
        "--status-period",
        type=duration,
        default=300.0,
        metavar="DURATION",
        help="period of the Ready heartbeats in the Node status (default 5m, as a kubelet; "
        "liveness is the Lease's job)",
    )
    p.add_argument("-v", "--verbose", action="store_true", help="log more")


def _label(value: str) -> tuple[str, str]:
    key, sep, val = value.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"want KEY=VALUE, got {value!r}")
    return key, val


def add_sim(agents: argparse._SubParsersAction) -> None:
    p = agents.add_parser(
        "sim",
        help="simulated nodes: register, heartbeat and run pods in name only",
        description="Register N simulated nodes and run the pods bound to them in name "
        "only: Running after --ready-delay, finished after the pod's "
        "lahar.dev/sim-duration annotation (exit code from lahar.dev/sim-exit-code). "
        'Annotate a Node lahar.dev/sim-down="true" to take it down.',
    )
    add_common_args(p)
    p.add_argument("--count", type=int, default=1, help="how many nodes (default 1)")
    p.add_argument("--cpu", default="8", help="CPU capacity of each node (default 8)")
    p.add_argument("--memory", default="32Gi", help="memory of each node (default 32Gi)")
    p.add_argument("--gpu", type=int, default=0, help="nvidia.com/gpu of each node (default 0)")
    p.add_argument("--pods", type=int, default=110, help="pod capacity of each node (default 110)")
    p.add_argument("--name-prefix", default="sim-", help="node names are PREFIX0, PREFIX1, ...")
    p.add_argument(
        "--ready-delay",
        type=duration,
        default=0.5,
        metavar="DURATION",
        help="how long a bound pod takes to be Running and Ready (default 0.5s)",
    )
    p.add_argument(
        "--stop-delay",
        type=duration,
        default=0.1,
        metavar="DURATION",
        help="how long a deleted pod takes to stop, at most its grace period (default 0.1s)",
    )
    p.add_argument("--instance-type", help="node.kubernetes.io/instance-type label value")
    p.add_argument(
        "--label",
        type=_label,
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="extra node label (repeatable)",
    )
    p.add_argument("--keep-nodes", action="store_true", help="leave the nodes when stopping")
    p.add_argument(
        "--no-admission",
        dest="admission",
        action="store_false",
        help="run pods even if they do not fit the node (a kubelet fails them: OutOfcpu ...)",
    )
    p.add_argument(
        "--concurrency", type=int, default=32, help="API writes in flight at most (default 32)"
    )
    p.add_argument("--log-port", type=int, default=0, help="loopback port for pod logs (0: any)")
    p.set_defaults(func=run_sim)


# The node agents, in the order `lahar node --help` lists them.
def _add_local(agents: argparse._SubParsersAction) -> None:
    from lahar.cli.nodelocal import add_local

    add_local(agents)


AGENTS: tuple[Callable[[argparse._SubParsersAction], None], ...] = (add_sim, _add_local)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("node", help="run a node agent (simulated nodes, or the local node)")
    agents = p.add_subparsers(dest="agent", metavar="AGENT")
    for add in AGENTS:
        add(agents)
    p.set_defaults(func=lambda args: _no_agent(p))


def _no_agent(p: argparse.ArgumentParser) -> int:
    p.print_help()
    return 2


def run_until_signalled(main: Callable[[], Coroutine[Any, Any, int]]) -> int:
    """Run ``main()`` until it returns (its exit code) or SIGTERM/SIGINT cancels it
    (exit 0, after its cleanup ran)."""

    async def runner() -> int:
        task = asyncio.current_task()
        assert task is not None
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, task.cancel)
        return await main()

    try:
        return asyncio.run(runner())
    except (asyncio.CancelledError, KeyboardInterrupt):
        return 0


def serve_agent(
    kubeconfig: Path | None,
    make: Callable[[Any], Any],
    *,
    agent: str,
    failure: str,
    failure_code: int,
    failures: tuple[type[BaseException], ...],
    banner: Callable[[Any], str],
) -> int:
    """Run a node agent (``make(client)``, with ``start``/``close``) until signalled:
    a start that fails with one of ``failures`` is reported and ends with
    ``failure_code``; otherwise ``banner(agent)`` is printed and the agent runs."""
    from lahar.kube import client as kclient

    async def main() -> int:
        client = kclient.from_kubeconfig(kubeconfig, field_manager=f"lahar-node-{agent}")
        node = make(client)
        try:
            try:
                await node.start()
            except failures as exc:
                print(f"lahar node {agent}: {failure}{exc}", file=sys.stderr)
                return failure_code
            print(f"lahar node {agent}: {banner(node)}", flush=True)
            await asyncio.Event().wait()
            return 0
        finally:
            await asyncio.shield(node.close())
            await client.close()

    return run_until_signalled(main)


def run_sim(args: argparse.Namespace) -> int:
    from lahar.node.sim import SimFleet, SimOptions

    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s %(message)s",
    )
    try:
        options = SimOptions(
            count=args.count,
            cpu=args.cpu,
            memory=args.memory,
            gpu=args.gpu,
            pods=args.pods,
            name_prefix=args.name_prefix,
            ready_delay=args.ready_delay,
            stop_delay=args.stop_delay,
            heartbeat=args.heartbeat,
            status_period=args.status_period,
            instance_type=args.instance_type,
            labels=dict(args.label),
            keep_nodes=args.keep_nodes,
            admission=args.admission,
            concurrency=args.concurrency,
            log_port=args.log_port,
        )
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    if args.kubeconfig is not None and not args.kubeconfig.exists():
        raise UsageError(f"kubeconfig {args.kubeconfig} does not exist")

    return serve_agent(
        args.kubeconfig,
        lambda client: SimFleet(client, options),
        agent="sim",
        failure="cannot register the nodes: ",
        failure_code=1,
        failures=(Exception,),
        banner=lambda fleet: (
            f"{len(fleet.nodes)} nodes registered "
            f"({options.name_prefix}0..{options.name_prefix}{options.count - 1}); "
            f"pod logs on 127.0.0.1:{fleet.log_server.port if fleet.log_server else None}"
        ),
    )
