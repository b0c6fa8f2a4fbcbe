"""The logs of simulated containers, so that ``kubectl logs`` works on simulated pods.

There is no process and no output, so each container's log is one made-up line,
``simulated container <c> of <ns>/<pod>``. With ``follow`` the stream stays open,
silent, until the pod ends or is stopped, as a real container's would. The same
provider serves the embedded server's log seam in-process and the loopback endpoint
of a simulator in its own process.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

from lahar.apiserver.logs import LogRequest
from lahar.node.sim.pods import SimPods


class SimLogs:
    """A log provider over the pods of a :class:`SimPods`."""

    def __init__(self, pods: SimPods, *, poll: float = 0.5) -> None:
        self.pods = pods
        self.poll = poll

    async def stream(self, request: LogRequest) -> AsyncIterator[bytes]:
        """One line (and, with ``follow``, silence until the container stops). Raises
        ``LookupError`` for a pod or container not on this agent's nodes."""
        key = f"{request.namespace}/{request.pod}"
        pod = self.pods.cache.get_by_key(key)
        spec = (pod or {}).get("spec") or {}
        if pod is None or spec.get("nodeName") not in self.pods.nodes:
            raise LookupError(f'pod "{key}" is not on a node of this agent')
        names = {c.get("name") for c in (spec.get("containers") or [])}
        names |= {c.get("name") for c in (spec.get("initContainers") or [])}
        if request.container not in names:
            raise LookupError(f'container "{request.container}" not found in pod "{key}"')
        if request.tail_lines == 0:
            return
        line = f"simulated container {request.container} of {key}\n"
        if request.timestamps:
            started = self.pods.started_at(key) or time.time()
            line = time.strftime("%Y-%m-%dT%H:%M:%S.000000000Z ", time.gmtime(started)) + line
        data = line.encode()
        if request.limit_bytes is not None:
            data = data[: max(0, request.limit_bytes)]
        yield data
        while request.follow and self.pods.is_running(key):
            await asyncio.sleep(self.poll)
