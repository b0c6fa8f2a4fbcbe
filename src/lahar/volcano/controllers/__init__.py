"""Volcano's controller manager: the podgroup, queue and vcjob controllers.

One module per controller (``podgroup``, ``queue``, ``job``), the writes they share
(``common``), the cache-lag guard (``expectations``) and the wiring onto a manager
(``manager``: :func:`setup` for ``lahar controllers``, :func:`run_volcano_controllers`
for the embedded cluster). The decisions of the vcjob controller live in the pure core
``lahar.volcano.jobs``; these modules only read caches and write through the client.
"""

from lahar.volcano.controllers.manager import (
    ControllerOptions,
    VolcanoControllers,
    run_volcano_controllers,
    setup,
)

__all__ = ["ControllerOptions", "VolcanoControllers", "run_volcano_controllers", "setup"]
