"""The KubeRay-compatible Ray operator: RayCluster and RayJob reconcilers.

The pure builders of :mod:`lahar.kuberay` say *what* KubeRay would create; this
package decides *when*, reading the world from informer caches and writing through
the client seam. One concept per module: ``raycluster`` and ``clusterpods`` (the
RayCluster pass), ``status`` (its status and conditions, pure), ``expectations``
(no double creates from a stale cache), ``rayjob``, ``jobrunning`` and
``jobfinish`` (the RayJob state machine), ``dashboard`` and ``resolver`` (the Ray
Jobs API client and how its URL is resolved), ``podgroups`` (Volcano writes),
``metrics`` (KubeRay's metric names), ``options``, ``context`` and ``run``
(wiring, :func:`run_operator`). Behaviour follows
``/work/shared/design/kuberay-semantics.md``; deliberate differences are listed
in ``docs/kuberay-compat.md``.
"""

from lahar.kuberay.operator.options import OperatorOptions
from lahar.kuberay.operator.run import Operator, build_operator, run_operator

__all__ = ["Operator", "OperatorOptions", "build_operator", "run_operator"]
