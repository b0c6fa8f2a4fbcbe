"""The built-in controllers an embedded cluster needs, as kube-controller-manager runs them.

* :mod:`~lahar.controllers.job`: batch/v1 Jobs (pods, counts, conditions, backoff,
  deadlines, suspend), with :mod:`~lahar.controllers.ttlafterfinished`;
* :mod:`~lahar.controllers.nodelifecycle`: node heartbeats (Leases), the
  ``Ready=Unknown`` condition, not-ready/unreachable taints and taint-based eviction;
* :mod:`~lahar.controllers.podgc`: terminated, orphaned and unscheduled-terminating pods.

They behave as their upstream namesakes (read for behaviour, written anew) because
the Ray operator and users' tools depend on that behaviour, and they talk to the API
only through the client seam, so they run the same against a real cluster.
:func:`~lahar.controllers.run.run_builtin_controllers` runs them all on one manager.
"""

from lahar.controllers.options import ControllerOptions
from lahar.controllers.run import build_manager, run_builtin_controllers

__all__ = ["ControllerOptions", "build_manager", "run_builtin_controllers"]
