"""Simulated nodes, kwok-style: Nodes that register, heartbeat and run pods in name only.

``run_sim_nodes(client, options=SimOptions(...))`` is the entry point (``lahar node
sim`` and ``lahar up --sim-nodes`` both call it). Pods bound to a simulated node go
Running after a delay and end as their annotations say (``lahar.dev/sim-duration``,
``lahar.dev/sim-exit-code``); the ``lahar.dev/sim-down`` annotation on a Node takes it
down. Modules: ``options`` (the knobs and annotations), ``addresses`` (node and pod
IPs), ``pods`` (a pod's life), ``logs`` (what ``kubectl logs`` shows), ``fleet`` (the
daemon) and ``bench`` (what it costs).
"""

from lahar.node.sim.fleet import SimFleet, run_sim_nodes
from lahar.node.sim.options import (
    ANN_DOWN,
    ANN_DURATION,
    ANN_EXIT_CODE,
    KUBELET_VERSION,
    SimOptions,
    parse_duration,
)

__all__ = [
    "ANN_DOWN",
    "ANN_DURATION",
    "ANN_EXIT_CODE",
    "KUBELET_VERSION",
    "SimFleet",
    "SimOptions",
    "parse_duration",
    "run_sim_nodes",
]
