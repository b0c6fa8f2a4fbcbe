"""QueueInfo: a Volcano Queue (``scheduling.volcano.sh/v1beta1``) as the session sees it.

Limits (``capability``) are vectors with ``+inf`` in the dimensions the spec leaves
unbounded; ``guarantee`` and ``deserved`` use 0 for absent dimensions.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from lahar.scheduler.api.resources import Vector


@dataclass(eq=False)
class QueueInfo:
    name: str
    weight: int
    capability: Vector
    guarantee: Vector
    deserved: Vector
    has_capability: bool = False
    has_deserved: bool = False
    reclaimable: bool = True
    state: str = "Open"
    priority: int = 0
    parent: str = ""
    hierarchy: str = ""
    hierarchy_weights: str = ""
    creation: str = ""
    implicit: bool = False
    obj: dict[str, Any] = field(default_factory=dict)

    @property
    def uid(self) -> str:
        return self.name

    @property
    def is_open(self) -> bool:
        return self.state == "Open"
