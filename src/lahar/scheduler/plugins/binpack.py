"""The ``binpack`` plugin: Volcano's best-fit node score.

Scores the candidate nodes with :func:`lahar.scheduler.kernels.binpack_score` from the
NodeTable's ``allocatable`` and ``used`` arrays (used includes releasing tasks and
excludes pipelined ones, as Volcano's ``node.Used``). Arguments: ``binpack.weight`` (1;
0 registers nothing), ``binpack.cpu`` (1), ``binpack.memory`` (1), ``binpack.resources``
(comma-separated extra resource names) and ``binpack.resources.<name>`` (1); negative
resource weights become 1.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from lahar.scheduler.api.node import NodeTable
from lahar.scheduler.api.task import TaskInfo
from lahar.scheduler.framework.plugin import Plugin
from lahar.scheduler.kernels import BinpackWeights, binpack_score
from lahar.scheduler.plugins.registry import register_plugin

if TYPE_CHECKING:
    from lahar.scheduler.framework.session import Session


@register_plugin
class BinpackPlugin(Plugin):
    name = "binpack"

    def on_session_open(self, ssn: Session) -> None:
        self.weights = BinpackWeights.from_arguments(self.arguments.raw)
        if self.weights.weight != 0:
            ssn.node_order.add(self, self.score)

    def score(self, task: TaskInfo, nodes: NodeTable, candidates: np.ndarray) -> np.ndarray:
        rows = np.asarray(candidates, dtype=np.int64)
        return binpack_score(
            task.resreq, nodes.allocatable, nodes.used, nodes.space.names, self.weights, rows
        )
