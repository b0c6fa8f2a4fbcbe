"""The ``nodeorder`` plugin: kube-scheduler's node scores with Volcano's weights.

Registers one batch node-order callback scoring the candidate nodes with
:func:`lahar.scheduler.kernels.nodeorder_score`: least/most requested, balanced
resource, preferred node affinity, preferred inter-pod affinity, PreferNoSchedule taints
and topology spread (ScheduleAnyway), each times its weight from the arguments
(``leastrequested.weight`` 1, ``mostrequested.weight`` 0, ``balancedresource.weight`` 1,
``nodeaffinity.weight`` 2, ``podaffinity.weight`` 2, ``tainttoleration.weight`` 3,
``podtopologyspread.weight`` 2). ``imagelocality.weight`` is read but the scorer always
gives 0: lahar nodes do not report their images.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from lahar.scheduler.api.node import NodeTable
from lahar.scheduler.api.task import TaskInfo
from lahar.scheduler.framework.plugin import Plugin
from lahar.scheduler.kernels import NodeOrderWeights, nodeorder_score
from lahar.scheduler.plugins.predicates import session_state
from lahar.scheduler.plugins.registry import register_plugin

if TYPE_CHECKING:
    from lahar.scheduler.framework.session import Session


@register_plugin
class NodeOrderPlugin(Plugin):
    name = "nodeorder"

    def on_session_open(self, ssn: Session) -> None:
        self.weights = NodeOrderWeights.from_arguments(self.arguments.raw)
        self.state = session_state(ssn)
        ssn.node_order.add(self, self.score)

    def score(self, task: TaskInfo, nodes: NodeTable, candidates: np.ndarray) -> np.ndarray:
        return nodeorder_score(
            self.state, task, np.asarray(candidates, dtype=np.int64), self.weights
        )
