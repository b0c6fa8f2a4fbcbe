"""The life of a pod on a simulated node: started, running, finished or restarted, stopped.

Nothing runs. The simulator watches every pod (one shared informer, looked up by its
node-name index) and keeps, per pod bound to one of its nodes, a small record and at
most one timer:

* bound -> after ``ready_delay``: Running and Ready (a pod IP from the node's range,
  init containers completed at once), in one status write; or Failed (``OutOfcpu``
  ...) if it does not fit in what the node has left, as a kubelet's admission does;
* running with ``lahar.dev/sim-duration`` -> when it is up: with ``restartPolicy``
  Never (or OnFailure and exit code 0) the pod ends, Succeeded or Failed with the
  ``lahar.dev/sim-exit-code``; otherwise the containers restart at once
  (``restartCount`` + 1, the last run in ``lastState``), as a kubelet would, minus the
  crash-loop back-off;
* marked for deletion -> after ``stop_delay`` (never more than what is left of the
  grace period): containers terminated (exit code 143, SIGTERM), then the deletion is
  confirmed with ``gracePeriodSeconds=0``.

Decisions are made on informer events and timers, which are cheap; the writes go
through a :class:`~lahar.node.writer.WriteQueue` that coalesces them per pod and
bounds their concurrency. Each write builds its body from the cached pod when it is
sent. A node that is down behaves as a dead kubelet: nothing happens to its pods
until it comes back, when its pods are looked at again (meanwhile a deletion is left to
whoever collects the pods of dead nodes: the embedded server does, once the Lease has
run out). A restarted simulator picks up running
pods where they are: their start time is read from their status.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Any

import lightkube

from lahar.kube import rest
from lahar.kube.cache import BY_NODE_NAME, Cache
from lahar.node import admission
from lahar.node import podstatus as ps
from lahar.node.registration import MERGE, PODS
from lahar.node.sim.addresses import SimNode
from lahar.node.sim.options import ANN_DURATION, ANN_EXIT_CODE, RUNTIME, parse_duration
from lahar.node.writer import WriteQueue

log = logging.getLogger("lahar.node.sim")
Obj = dict[str, Any]

SIGTERM_EXIT = 143


class _Pod:
    __slots__ = (
        "done",
        "holds_ip",
        "key",
        "node",
        "request",
        "run",
        "stop_armed",
        "stopping",
        "timer",
        "uid",
    )

    def __init__(self, key: str, uid: str, node: str) -> None:
        self.key = key
        self.uid = uid
        self.node = node
        self.run: ps.PodRun | None = None
        self.timer: asyncio.TimerHandle | None = None
        self.stopping = False  # marked for deletion
        self.stop_armed = False  # the stop is scheduled or sent
        self.done = False  # terminal phase reached
        self.holds_ip = False  # run.pod_ip is allocated to this pod
        self.request: admission.Amounts | None = None  # what it takes from the node

    def cancel_timer(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None


class SimPods:
    """The pods of a set of simulated nodes. Feed it informer events (:meth:`observe`,
    :meth:`forget`); it writes their status through ``writer``."""

    def __init__(
        self,
        client: lightkube.AsyncClient,
        cache: Cache,
        writer: WriteQueue,
        nodes: dict[str, SimNode],
        *,
        ready_delay: float,
        stop_delay: float,
        is_down: Callable[[str], bool],
        admission: bool = True,
    ) -> None:
        self.client = client
        self.cache = cache
        self.writer = writer
        self.nodes = nodes
        self.ready_delay = ready_delay
        self.stop_delay = stop_delay
        self.is_down = is_down
        self.admission = admission
        self.started = 0  # pods taken to Running
        self.finished = 0  # pods ended (Succeeded or Failed)
        self.restarted = 0  # container restarts
        self.stopped = 0  # deletions confirmed
        self.rejected = 0  # pods that did not fit their node
        self._pods: dict[str, _Pod] = {}

    def __len__(self) -> int:
        return len(self._pods)

    # -- informer events -----------------------------------------------------------------

    def on_update(self, old: Obj, new: Obj) -> None:
        self.observe(new)

    def observe(self, pod: Obj) -> None:
        """Look at the latest state of a pod and decide what happens next."""
        node = (pod.get("spec") or {}).get("nodeName")
        if node not in self.nodes:
            return
        md = pod["metadata"]
        key = f"{md.get('namespace')}/{md['name']}"
        uid = md.get("uid") or ""
        st = self._pods.get(key)
        if st is not None and st.uid != uid:  # replaced by a pod of the same name
            self._drop(st)
            st = None
        if st is None:
            st = self._pods[key] = _Pod(key, uid, node)
        if md.get("deletionTimestamp"):
            if not st.stop_armed:
                self._begin_stop(st, pod)
            return
        if st.done:
            return
        status = pod.get("status") or {}
        phase = status.get("phase")
        if phase in ps.TERMINAL:
            st.done = True
            self._release(st)
            return
        if st.timer is not None or self.is_down(node):
            return
        if st.run is None:
            since = ps.running_since(pod) if phase == ps.RUNNING else None
            if since is None:
                st.timer = _loop().call_later(self.ready_delay, self._start, st)
                return
            st.run = self._resume(st, pod, since)
        self._arm_finish(st, pod)

    def forget(self, pod: Obj) -> None:
        """The pod is gone from the API."""
        md = pod["metadata"]
        key = f"{md.get('namespace')}/{md['name']}"
        st = self._pods.get(key)
        if st is not None and st.uid == md.get("uid"):
            self._drop(st)
            self.writer.cancel(key)

    def resync_node(self, node: str) -> None:
        """Look at every pod of ``node`` again (it came back up)."""
        for pod in self.cache.by_index(BY_NODE_NAME, node):
            self.observe(pod)

    def forget_node(self, node: str) -> None:
        for st in [s for s in self._pods.values() if s.node == node]:
            self._drop(st)

    def _drop(self, st: _Pod) -> None:
        st.cancel_timer()
        self._release(st)
        if self._pods.get(st.key) is st:
            del self._pods[st.key]

    def _release(self, st: _Pod) -> None:
        """Give the pod's IP and resources back to its node (it ended or is gone)."""
        node = self.nodes.get(st.node)
        if node is not None:
            if st.holds_ip and st.run is not None:
                node.release_ip(st.run.pod_ip)
            if st.request is not None:
                admission.subtract(node.requested, st.request)
        st.holds_ip = False
        st.request = None

    def _current(self, st: _Pod) -> bool:
        """Whether a timer of ``st`` may still act (same pod, node up)."""
        st.timer = None
        return self._pods.get(st.key) is st and not self.is_down(st.node)

    # -- starting and running --------------------------------------------------------------

    def _resume(self, st: _Pod, pod: Obj, since: float) -> ps.PodRun:
        node = self.nodes[st.node]
        st.request = admission.pod_requests(pod)  # it runs already: count it, fit or not
        admission.add(node.requested, st.request)
        ip = (pod.get("status") or {}).get("podIP") or ""
        if ip != node.host_ip and not node.reserve_ip(ip):
            ip = node.allocate_ip()
        st.holds_ip = ip != node.host_ip
        run = ps.PodRun(st.uid, node.host_ip, ip, runtime=RUNTIME, started=since)
        run.restarts = ps.restart_count(pod)
        return run

    def _start(self, st: _Pod) -> None:
        if not self._current(st) or st.stopping or st.done or st.run is not None:
            return
        pod = self.cache.get_by_key(st.key)
        if pod is None:
            return
        node = self.nodes[st.node]
        request = admission.pod_requests(pod)
        rejected = (
            admission.admit(request, node.requested, node.allocatable) if self.admission else None
        )
        if rejected is not None:
            self._reject(st, *rejected)
            return
        st.request = request
        admission.add(node.requested, request)
        host_network = (pod.get("spec") or {}).get("hostNetwork")
        ip = node.host_ip if host_network else node.allocate_ip()
        st.holds_ip = not host_network
        run = st.run = ps.PodRun(st.uid, node.host_ip, ip, runtime=RUNTIME, started=time.time())
        self.started += 1
        self._write_status(st, lambda p: ps.running(p, run))
        self._arm_finish(st, pod)

    def _reject(self, st: _Pod, reason: str, message: str) -> None:
        """Fail a pod that does not fit, as a kubelet's admission does."""
        st.done = True
        self.rejected += 1
        log.info("pod %s rejected on %s: %s", st.key, st.node, message)
        host_ip = self.nodes[st.node].host_ip
        body = {
            "metadata": {"uid": st.uid},
            "status": {
                "phase": ps.FAILED,
                "reason": reason,
                "message": message,
                "hostIP": host_ip,
                "hostIPs": [{"ip": host_ip}],
                "startTime": ps.rfc3339(),
            },
        }
        self._write_status(st, lambda p: body)

    def _arm_finish(self, st: _Pod, pod: Obj) -> None:
        value = (pod["metadata"].get("annotations") or {}).get(ANN_DURATION)
        if value is None or st.run is None:
            return
        try:
            duration = parse_duration(value)
        except ValueError as exc:
            log.warning("pod %s: ignoring %s: %s", st.key, ANN_DURATION, exc)
            return
        delay = max(0.0, st.run.started + duration - time.time())
        st.timer = _loop().call_later(delay, self._finish, st)

    def _finish(self, st: _Pod) -> None:
        if not self._current(st) or st.stopping or st.done or st.run is None:
            return
        pod = self.cache.get_by_key(st.key)
        if pod is None:
            return
        code = _exit_code(pod)
        policy = (pod.get("spec") or {}).get("restartPolicy") or "Always"
        run = st.run
        if policy == "Always" or (policy == "OnFailure" and code != 0):
            last = ps.last_run(run, code)
            run.restarts += 1
            run.started = time.time()
            self.restarted += 1
            self._write_status(st, lambda p: ps.running(p, run, last=last))
            self._arm_finish(st, pod)
            return
        st.done = True
        phase = ps.SUCCEEDED if code == 0 else ps.FAILED
        self.finished += 1
        self._write_status(st, lambda p: ps.terminated(p, run, code, phase=phase))
        self._release(st)

    # -- stopping --------------------------------------------------------------------------

    def _begin_stop(self, st: _Pod, pod: Obj) -> None:
        st.stopping = True
        st.cancel_timer()
        if self.is_down(st.node):
            return  # a dead agent confirms nothing
        md = pod["metadata"]
        delay = self.stop_delay
        grace = md.get("deletionGracePeriodSeconds")
        if grace is not None:
            delay = min(delay, float(grace))
        deadline = ps.parse_rfc3339(md.get("deletionTimestamp"))
        if deadline is not None:
            delay = min(delay, max(0.0, deadline - time.time()))
        st.stop_armed = True
        st.timer = _loop().call_later(delay, self._stop, st)

    def _stop(self, st: _Pod) -> None:
        if not self._current(st):
            st.stop_armed = False  # the node went down: look again when it is back
            return
        run, was_done = st.run, st.done
        client, key, uid = self.client, st.key, st.uid
        namespace, name = key.split("/", 1)

        async def stop() -> None:
            pod = self.cache.get_by_key(key)
            if pod is not None and pod["metadata"].get("uid") != uid:
                return
            phase = ((pod or {}).get("status") or {}).get("phase")
            if pod is not None and run is not None and not was_done and phase not in ps.TERMINAL:
                await rest.request(
                    client,
                    "PATCH",
                    PODS.path(namespace, name, "status"),
                    body=ps.terminated(pod, run, SIGTERM_EXIT),
                    content_type=MERGE,
                )
            try:
                await rest.request(
                    client,
                    "DELETE",
                    PODS.path(namespace, name),
                    body={"gracePeriodSeconds": 0, "preconditions": {"uid": uid}},
                )
            except rest.ApiError as exc:
                if not rest.is_status(exc, 404):  # 404: already gone, which is what we want
                    raise
            self.stopped += 1

        self.writer.submit(key, stop)

    # -- writes ----------------------------------------------------------------------------

    def _write_status(self, st: _Pod, body: Callable[[Obj], Obj]) -> None:
        client, key, uid = self.client, st.key, st.uid
        namespace, name = key.split("/", 1)
        path = PODS.path(namespace, name, "status")

        async def write() -> None:
            pod = self.cache.get_by_key(key)
            if pod is None or pod["metadata"].get("uid") != uid or st.stopping:
                return
            await rest.request(client, "PATCH", path, body=body(pod), content_type=MERGE)

        self.writer.submit(key, write)

    # -- what the log endpoint asks -----------------------------------------------------

    def started_at(self, key: str) -> float | None:
        """When the containers of pod ``key`` (last) started, if they run."""
        st = self._pods.get(key)
        return st.run.started if st is not None and st.run is not None else None

    def is_running(self, key: str) -> bool:
        """Whether pod ``key`` is still running here (not ended, not being stopped)."""
        st = self._pods.get(key)
        return st is not None and not st.done and not st.stopping


def _exit_code(pod: Obj) -> int:
    value = (pod["metadata"].get("annotations") or {}).get(ANN_EXIT_CODE)
    if value is None:
        return 0
    try:
        return int(str(value).strip())
    except ValueError:
        log.warning(
            "pod %s/%s: %s=%r is not an integer; using 1",
            pod["metadata"].get("namespace"),
            pod["metadata"].get("name"),
            ANN_EXIT_CODE,
            value,
        )
        return 1


def _loop() -> asyncio.AbstractEventLoop:
    return asyncio.get_running_loop()
