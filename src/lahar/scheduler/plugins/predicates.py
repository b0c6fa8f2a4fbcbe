"""The ``predicates`` plugin: kube-scheduler's node filters, vectorized.

Registers one predicate callback that answers for every node at once
(:func:`lahar.scheduler.kernels.feasible`): pod number, NodeUnschedulable, NodeAffinity
(nodeSelector + required node affinity), TaintToleration, InterPodAffinity and
PodTopologySpread. Each can be switched off with Volcano's arguments
``predicate.NodeAffinityEnable``, ``predicate.TaintTolerationEnable``,
``predicate.PodAffinityEnable``, ``predicate.PodTopologySpreadEnable`` (default true);
NodeUnschedulable and the pod-number check always run. NodePorts, volume and DRA filters
have nothing to check in lahar (no host ports or volumes are modelled) and always pass.

The kernel state (interned labels and taints, pods by labels) is built once per session
and shared with ``nodeorder`` through :func:`session_state`, which also subscribes it to
the session's allocate/deallocate events so in-session placements are seen at once.
"""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING

from lahar.scheduler.api.fit import NodeFilter
from lahar.scheduler.api.node import NodeTable
from lahar.scheduler.api.task import TaskInfo
from lahar.scheduler.framework.plugin import Plugin
from lahar.scheduler.framework.registries import EventHandler
from lahar.scheduler.kernels import KernelState, PredicateSwitches, feasible
from lahar.scheduler.plugins.registry import register_plugin

if TYPE_CHECKING:
    from lahar.scheduler.framework.session import Session

_SESSION_STATES: weakref.WeakKeyDictionary[Session, KernelState] = weakref.WeakKeyDictionary()


def session_state(ssn: Session) -> KernelState:
    """The session's kernel state, built on first use and kept current by the session's
    allocate/deallocate events."""
    state = _SESSION_STATES.get(ssn)
    if state is None:
        # Namespace labels (for affinity terms' namespaceSelector) are read when the
        # snapshot provides them as ``namespace_labels: {name: {label: value}}``.
        namespaces = getattr(ssn.cluster, "namespace_labels", None)
        state = KernelState(ssn.nodes, namespaces)
        _SESSION_STATES[ssn] = state
        ssn.event_handlers.append(
            EventHandler(allocate=state.on_allocate_event, deallocate=state.on_deallocate_event)
        )
    return state


@register_plugin
class PredicatesPlugin(Plugin):
    name = "predicates"

    def on_session_open(self, ssn: Session) -> None:
        args = self.arguments
        self.switches = PredicateSwitches(
            node_affinity=args.get_bool("predicate.NodeAffinityEnable", True),
            taint_toleration=args.get_bool("predicate.TaintTolerationEnable", True),
            inter_pod_affinity=args.get_bool("predicate.PodAffinityEnable", True),
            pod_topology_spread=args.get_bool("predicate.PodTopologySpreadEnable", True),
        )
        self.state = session_state(ssn)
        ssn.predicates.add(self, self.predicate)

    def predicate(self, task: TaskInfo, nodes: NodeTable) -> NodeFilter:
        return feasible(self.state, task, self.switches)
