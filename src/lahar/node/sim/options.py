"""What a fleet of simulated nodes looks like and how its pods behave.

The knobs of ``lahar node sim`` (and of ``lahar up --sim-nodes``) in one value, the
annotations that drive a simulated pod (how long it runs, how it exits) and a node
(take it down), and Go-style duration parsing for both.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from lahar.api.quantity import QuantityError, format_quantity, parse_quantity

# On a pod: run this long, then exit (Go duration like "1m30s", or seconds).
ANN_DURATION = "lahar.dev/sim-duration"
# On a pod: the exit code when it ends (default 0; non-zero fails it).
ANN_EXIT_CODE = "lahar.dev/sim-exit-code"
# On a Node: "true" takes it down (lease stops, NotReady); removing it brings it back.
ANN_DOWN = "lahar.dev/sim-down"

NODE_TYPE = "sim"
KUBELET_VERSION = "v1.32.0-lahar-sim"
RUNTIME = "lahar-sim"

_UNITS = {
    "ns": 1e-9,
    "us": 1e-6,
    "µs": 1e-6,
    "μs": 1e-6,
    "ms": 1e-3,
    "s": 1.0,
    "m": 60.0,
    "h": 3600.0,
}
_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)")


def parse_duration(value: str | float | int) -> float:
    """Seconds in a Go duration (``"1h2m3.5s"``, ``"300ms"``) or a plain number of seconds.

    Raises ``ValueError`` for anything else, and for negative durations.
    """
    if isinstance(value, bool):
        raise ValueError(f"not a duration: {value!r}")
    if isinstance(value, int | float):
        seconds = float(value)
    else:
        text = value.strip()
        try:
            seconds = float(text)
        except ValueError:
            if not text or _PART.sub("", text) != "":
                raise ValueError(
                    f"not a duration: {value!r} (want e.g. 30s, 1m30s, 500ms or seconds)"
                ) from None
            seconds = sum(float(n) * _UNITS[u] for n, u in _PART.findall(text))
    if seconds < 0 or seconds != seconds:
        raise ValueError(f"duration must not be negative: {value!r}")
    return seconds


def _check_quantity(name: str, value: str) -> str:
    try:
        if parse_quantity(value) <= 0:
            raise ValueError(f"{name} must be positive, got {value!r}")
    except QuantityError as exc:
        raise ValueError(f"{name}: {exc}") from None
    return value


@dataclass
class SimOptions:
    """A fleet of identical simulated nodes ``{name_prefix}{0..count-1}``.

    Times are seconds. ``ready_delay`` is how long a bound pod takes to run;
    ``stop_delay`` how long a deleted pod takes to stop (never more than its grace
    period); ``heartbeat`` the Lease renewal period (a kubelet's is 10 s);
    ``status_period`` the period of the Ready heartbeats in the Nodes' status (a
    kubelet re-posts an unchanged status every 5 min: liveness is the Lease's job).
    """

    count: int = 1
    cpu: str = "8"
    memory: str = "32Gi"
    gpu: int = 0
    pods: int = 110
    name_prefix: str = "sim-"
    ready_delay: float = 0.5
    stop_delay: float = 0.1
    heartbeat: float = 10.0
    lease_duration: int = 40
    status_period: float = 300.0
    instance_type: str | None = None
    labels: dict[str, str] = field(default_factory=dict)
    taints: list[dict[str, Any]] = field(default_factory=list)
    keep_nodes: bool = False
    admission: bool = True  # fail pods that do not fit their node, as a kubelet does
    concurrency: int = 32
    log_host: str = "127.0.0.1"
    log_port: int = 0

    def __post_init__(self) -> None:
        if self.count < 0:
            raise ValueError(f"count must not be negative, got {self.count}")
        if self.gpu < 0:
            raise ValueError(f"gpu must not be negative, got {self.gpu}")
        if not 1 <= self.pods <= 65000:
            raise ValueError(f"pods must be between 1 and 65000, got {self.pods}")
        _check_quantity("cpu", self.cpu)
        _check_quantity("memory", self.memory)
        for name in ("ready_delay", "stop_delay", "heartbeat", "status_period"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must not be negative")
        if self.heartbeat <= 0 or self.status_period <= 0:
            raise ValueError("heartbeat and status_period must be positive")
        if self.lease_duration < 1:
            raise ValueError("lease_duration must be at least 1 second")
        if self.concurrency < 1:
            raise ValueError("concurrency must be at least 1")

    def node_names(self) -> list[str]:
        return [f"{self.name_prefix}{i}" for i in range(self.count)]

    def capacity(self) -> dict[str, str]:
        cap = {
            "cpu": self.cpu,
            "memory": self.memory,
            "pods": str(self.pods),
            "ephemeral-storage": "100Gi",
            "hugepages-1Gi": "0",
            "hugepages-2Mi": "0",
        }
        if self.gpu:
            cap["nvidia.com/gpu"] = str(self.gpu)
        return cap

    def instance_type_label(self) -> str:
        """``sim.8cpu-32Gi`` (``-1gpu`` added when there are GPUs), unless set."""
        if self.instance_type:
            return self.instance_type
        cpu = format_quantity(parse_quantity(self.cpu))
        mem = format_quantity(parse_quantity(self.memory), binary=True)
        name = f"sim.{cpu}cpu-{mem}"
        if self.gpu:
            name += f"-{self.gpu}gpu"
        return name
