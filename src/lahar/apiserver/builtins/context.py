"""What defaulting needs from the rest of the server, passed in as callables.

Defaulting is pure, but a few defaults depend on cluster state: a Service needs
a free cluster IP (and node ports), and a Pod's priority comes from its
PriorityClass. The REST layer supplies those look-ups through
:class:`DefaultContext`, which keeps this package free of storage access and
easy to test with plain lambdas.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime


def _no_default_class() -> tuple[str, int] | None:
    return None


def _utc_now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class DefaultContext:
    """Cluster look-ups used while defaulting built-in objects.

    ``priority_of`` maps a PriorityClass name to its value (``None`` when the
    class does not exist); it may also return ``(value, preemptionPolicy)``.
    ``default_priority_class`` returns the ``globalDefault`` class as
    ``(name, value)`` or ``(name, value, preemptionPolicy)``, or ``None``.
    ``allocate_node_port`` is used for NodePort/LoadBalancer Services when set.
    ``now`` gives RFC 3339 timestamps for server-set conditions.
    """

    allocate_cluster_ip: Callable[[], str]
    priority_of: Callable[[str], int | tuple[int, str] | None]
    default_priority_class: Callable[[], tuple | None] = field(default=_no_default_class)
    allocate_node_port: Callable[[], int] | None = None
    now: Callable[[], str] = field(default=_utc_now)
