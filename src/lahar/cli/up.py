"""``lahar up``: the embedded one-machine cluster in the foreground.

It starts the API server on a data dir, installs lahar's CRDs and writes
``DIR/kubeconfig``; SIGTERM or Ctrl-C stops everything cleanly, and a restart on
the same data dir finds every object where it was.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import signal
import sys
from pathlib import Path

from lahar.api.quantity import QuantityError, parse_quantity
from lahar.cli.apiserver import add_server_args, check_port
from lahar.cli.common import UsageError

# What `lahar up` runs besides the API server (see lahar.embedded.default_components).
COMPONENT_NAMES = (
    "kube-controllers",
    "volcano-controllers",
    "scheduler",
    "operator",
    "sim-nodes",
    "local-node",
)


def default_data_dir() -> Path:
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "lahar"


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("up", help="start the embedded cluster (API server, CRDs, controllers)")
    add_server_args(p, default_dir=default_data_dir())
    p.add_argument("--sim-nodes", type=int, default=0, help="simulated nodes to run (kwok-style)")
    p.add_argument("--sim-node-cpu", default="8", help="CPU of each simulated node")
    p.add_argument("--sim-node-memory", default="32Gi", help="memory of each simulated node")
    p.add_argument(
        "--sim-node-gpu", type=int, default=0, help="nvidia.com/gpu of each simulated node"
    )
    p.add_argument(
        "--scheduler-conf",
        default=None,
        help="a Volcano scheduler configuration file (re-read when it changes); "
        "default: Volcano's built-in configuration",
    )
    p.add_argument(
        "--schedule-period", type=float, default=1.0, help="seconds between scheduling sessions"
    )
    p.add_argument(
        "--no-local-node",
        dest="local_node",
        action="store_false",
        help="do not run the local node (pods as local processes; it needs root)",
    )
    p.add_argument(
        "--local-node-name", default=None, help="the local node's name (default: hostname)"
    )
    p.add_argument("--local-node-cpu", default=None, help="CPU of the local node (default: all)")
    p.add_argument(
        "--local-node-memory", default=None, help="memory of the local node (default: all)"
    )
    p.add_argument(
        "--local-node-bridge", default="lahar0", help="bridge of the local node's pod network"
    )
    p.add_argument(
        "--local-node-cidr", default="10.244.0.0/16", help="addresses of the local node's pods"
    )
    p.add_argument(
        "--local-node-tag",
        default=None,
        help="tag of the local node's network namespaces and veths (default: lahar on "
        "the default bridge, else the bridge's name); agents with different tags never "
        "touch each other's pods",
    )
    p.add_argument(
        "--demo",
        nargs="?",
        const="",
        default=None,
        metavar="FILE",
        help="apply a RayJob manifest once the cluster is up and follow it to its end, "
        "printing its logs (default: lahar's own small demo)",
    )
    p.add_argument(
        "--disable",
        default="",
        metavar="NAME[,NAME]",
        help="components not to run in this process (e.g. to run them as separate "
        "processes): " + ", ".join(COMPONENT_NAMES),
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from lahar import embedded
    from lahar.apiserver.server import APIServer

    check_port(args.port)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s %(message)s",
    )
    args.data_dir = args.data_dir.resolve()
    server = APIServer(
        args.data_dir,
        host=args.bind_address,
        port=args.port,
        watch_window=args.watch_window,
        admission=embedded.admission_chain(),
    )
    embedded.install_volcano_admission(server.state)
    installed = embedded.install_crds(server.state)
    disabled = {n.strip() for n in args.disable.split(",") if n.strip()}
    unknown = disabled - set(COMPONENT_NAMES)
    if unknown:
        raise UsageError(
            f"--disable: unknown component(s) {', '.join(sorted(unknown))}; "
            f"known: {', '.join(COMPONENT_NAMES)}"
        )
    if args.schedule_period <= 0:
        raise UsageError("--schedule-period must be positive")
    if args.scheduler_conf and not Path(args.scheduler_conf).is_file():
        raise UsageError(f"--scheduler-conf: no such file {args.scheduler_conf}")
    if args.sim_nodes < 0 or args.sim_node_gpu < 0:
        raise UsageError("--sim-nodes and --sim-node-gpu must not be negative")
    for flag, value in (
        ("--sim-node-cpu", args.sim_node_cpu),
        ("--sim-node-memory", args.sim_node_memory),
    ):
        try:
            if parse_quantity(value) <= 0:
                raise QuantityError(value)
        except QuantityError:
            raise UsageError(f"{flag}: {value!r} is not a positive quantity") from None
    local = _local_node_options(args) if args.local_node and "local-node" not in disabled else None
    demo = None
    if args.demo is not None:
        from lahar.demo import default_manifest

        demo = Path(args.demo).resolve() if args.demo else default_manifest()
        if not demo.is_file():
            raise UsageError(f"--demo: no such file {args.demo}")
    up = embedded.UpOptions(
        sim_nodes=args.sim_nodes,
        sim_node_cpu=args.sim_node_cpu,
        sim_node_memory=args.sim_node_memory,
        sim_node_gpu=args.sim_node_gpu,
        logs=server.state.logs,
        schedule_period=args.schedule_period,
        scheduler_conf=str(Path(args.scheduler_conf).resolve()) if args.scheduler_conf else None,
        local_node=local,
        demo=demo,
        kubeconfig=args.data_dir / "kubeconfig",
    )
    options = embedded.EmbeddedOptions(
        components=[(n, c) for n, c in embedded.default_components(up) if n not in disabled]
    )
    # Until the event loop takes SIGTERM over, it means what Ctrl-C means: stop cleanly.
    signal.signal(signal.SIGTERM, _interrupted)
    try:
        server.bind()
    except OSError as exc:
        raise UsageError(
            f"cannot listen on {args.bind_address}:{args.port}: {exc.strerror}"
        ) from None
    kubeconfig = server.kubeconfig_path
    print(
        f"lahar is up: API server at {server.url}, {installed} CRDs installed.\n"
        f"Point kubectl at it:\n"
        f"  export KUBECONFIG={kubeconfig}\n"
        f"  kubectl get --raw /readyz\n"
        f"Stop with Ctrl-C; `lahar up --data-dir {args.data_dir}` brings it back with every object.",
        flush=True,
    )
    try:
        asyncio.run(embedded.run(server, options))
    except KeyboardInterrupt:
        pass
    return 0


def _interrupted(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def _local_node_options(args: argparse.Namespace) -> object | None:
    """The local node's options, or None (with the reason printed) when it cannot run."""
    from lahar.node.local.network import check_privileges

    problem = check_privileges()
    if problem:
        print(
            f"lahar up: running without the local node, which needs: {problem}",
            file=sys.stderr,
            flush=True,
        )
        return None
    from lahar.cli.nodelocal import checked_options

    return checked_options(
        flags={"cpu": "--local-node-cpu", "memory": "--local-node-memory"},
        tag=args.local_node_tag,
        state_dir=args.data_dir / "node-local",
        node_name=args.local_node_name,
        cpu=args.local_node_cpu,
        memory=args.local_node_memory,
        bridge=args.local_node_bridge,
        cidr=args.local_node_cidr,
    )
