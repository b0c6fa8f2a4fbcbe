"""``lahar node local``: the node agent that runs pods as local processes.

It needs root (or CAP_NET_ADMIN and CAP_SYS_ADMIN), because every pod gets its own
network and mount namespaces; without them it says exactly what is missing and exits
with code 2. SIGTERM and Ctrl-C stop every container, remove the pod network and exit.
"""

from __future__ import annotations

import argparse
import logging
import re
from pathlib import Path

from lahar.cli.common import UsageError


def add_local(agents: argparse._SubParsersAction) -> None:
    from lahar.cli.node import _label, add_common_args

    p = agents.add_parser(
        "local",
        help="one node that runs its pods as local processes (real Ray)",
        description="Register one node with this machine's CPUs and memory and run the "
        "pods bound to it as local processes, each pod in its own network namespace on a "
        "bridge with outbound NAT, each container in its own mount namespace. Needs root.",
    )
    add_common_args(p)
    p.add_argument(
        "--state-dir",
        type=Path,
        default=Path("/var/lib/lahar/node-local"),
        help="pod directories, logs and network state (default /var/lib/lahar/node-local)",
    )
    p.add_argument("--node-name", default=None, help="the Node's name (default: the hostname)")
    p.add_argument("--cpu", default=None, help="CPU capacity (default: this machine's CPUs)")
    p.add_argument("--memory", default=None, help="memory capacity (default: this machine's)")
    p.add_argument("--pods", type=int, default=110, help="pod capacity (default 110)")
    p.add_argument("--bridge", default="lahar0", help="the pod bridge's name (default lahar0)")
    p.add_argument(
        "--tag",
        default=None,
        help="tag of the pod network namespaces and veths (default: lahar on the default "
        "bridge, else the bridge's name); agents with different tags never touch each "
        "other's pods",
    )
    p.add_argument(
        "--pod-cidr", default="10.244.0.0/16", help="pod addresses (default 10.244.0.0/16)"
    )
    p.add_argument(
        "--path",
        action="append",
        default=None,
        metavar="DIR",
        help="directory put first on every container's PATH (repeatable; default: the "
        "directory of this Python, where Ray is installed)",
    )
    p.add_argument(
        "--env",
        type=_label,
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="variable every container starts with (repeatable)",
    )
    p.add_argument(
        "--label",
        type=_label,
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="extra node label (repeatable)",
    )
    p.add_argument("--log-port", type=int, default=0, help="loopback port for pod logs (0: any)")
    p.set_defaults(func=run_local)


def checked_options(*, flags: dict[str, str], tag: str | None, **options: object) -> object:
    """``LocalOptions`` from command-line values, after checking them: ``flags`` names
    the option each of ``cpu``/``memory`` came from, for the error message (exit 2)."""
    from lahar.api.quantity import QuantityError, parse_quantity
    from lahar.node.local.agent import LocalOptions, default_node_name

    for key in ("cpu", "memory"):
        value = options.get(key)
        if value is None:
            continue
        try:
            if parse_quantity(str(value)) <= 0:
                raise QuantityError(str(value))
        except QuantityError:
            raise UsageError(f"{flags[key]}: {value!r} is not a positive quantity") from None
    if tag is not None and not re.fullmatch(r"[A-Za-z0-9_]{1,12}", tag):
        raise UsageError(f"tag {tag!r}: 1-12 letters, digits or underscores")
    options["node_name"] = options.get("node_name") or default_node_name()
    return LocalOptions(owner_tag=tag, **options)  # type: ignore[arg-type]


def local_options(args: argparse.Namespace, state_dir: Path) -> object:
    return checked_options(
        flags={"cpu": "--cpu", "memory": "--memory"},
        tag=args.tag,
        state_dir=state_dir.resolve(),
        node_name=args.node_name,
        cpu=args.cpu,
        memory=args.memory,
        max_pods=args.pods,
        bridge=args.bridge,
        cidr=args.pod_cidr,
        path_prepend=args.path,
        env=dict(args.env),
        labels=dict(args.label),
        heartbeat=args.heartbeat,
        log_port=args.log_port,
    )


def run_local(args: argparse.Namespace) -> int:
    from lahar.cli.node import serve_agent
    from lahar.node.local.agent import LocalNode, LocalNodeError
    from lahar.node.local.network import check_privileges

    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s %(message)s",
    )
    options = local_options(args, args.state_dir)
    problem = check_privileges()
    if problem:
        raise UsageError(f"the local node needs: {problem}")
    if args.kubeconfig is not None and not args.kubeconfig.exists():
        raise UsageError(f"kubeconfig {args.kubeconfig} does not exist")

    return serve_agent(
        args.kubeconfig,
        lambda client: LocalNode(client, options),  # type: ignore[arg-type]
        agent="local",
        failure="",
        failure_code=2,
        failures=(LocalNodeError,),
        banner=lambda node: (
            f"node {node.options.node_name} is up; pods on {node.options.cidr}; "
            f"pod logs on 127.0.0.1:{node.log_server.port if node.log_server else None}"
        ),
    )
