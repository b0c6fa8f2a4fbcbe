"""The queue controller: the ``default`` and ``root`` queues, queue state and counts.

State machine (Volcano's, see volcano-semantics §5.2), in ``status.state``:

* Close: Open/""/Unknown -> ``Closed`` if the queue has no PodGroups, else ``Closing``;
  Closing -> ``Closed`` once its last PodGroup is gone; Closed stays Closed.
* Open: anything -> ``Open``.
* Sync (no request): "" -> ``Open``; Closing -> ``Closed`` once no PodGroup is left; any
  other state is kept, so a direct ``status.state`` write (what Volcano's newer releases
  honour, ``kubectl patch queue q --subresource status ...``) sticks.
* A state outside the four values is an error: nothing changes.
* Hierarchy: a queue whose parent is Closed/Closing is closed too and marked
  ``volcano.sh/closed-by-parent=true``; when the parent reopens, the queues it closed
  reopen. A child cannot be opened while its parent is closed. ``root`` is never closed.

Where the wish to open or close lives (lahar decision): Volcano takes it from bus
``Command`` objects, which lahar does not serve, and its Queue CRD has no ``spec.state``
(the API server prunes one). So the desired state is the annotation
``lahar.dev/queue-state: Open|Closed``, written by ``lahar queue open|close`` or
``kubectl annotate queue q lahar.dev/queue-state=Closed --overwrite``; a ``spec.state``
is honoured first should the CRD ever carry one. The annotation persists (it is a wish,
not a one-shot command), so it keeps winning over direct status writes.

Status: this controller writes only ``status.state`` and the PodGroup counts
(``pending``, ``inqueue``, ``running``, ``unknown``, ``completed``; a PodGroup without a
phase counts as pending) with a JSON merge patch on ``/status``, so the scheduler's
``status.allocated`` is never touched. Volcano stopped writing the counts in v1.11 and
only exports them as metrics; lahar writes both (the metrics are
``volcano_queue_pod_group_<phase>_count{queue_name}``).

Count writes are coalesced (lahar decision, for write load): a queue whose only change
is its counts gets at most one status write per ``count_interval`` (0.5 s); a change
within that window requeues the queue for when it ends, and that reconcile writes the
counts of that moment, so the status always converges to the latest counts. A state
change is written at once, with the counts. The metrics are never delayed.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any

import lightkube
from prometheus_client import CollectorRegistry, Gauge

from lahar.kube import rest
from lahar.kube.events import EventRecorder
from lahar.kube.factory import InformerFactory
from lahar.kube.reconcile import Request, Result, TerminalError, logger
from lahar.volcano import constants as c
from lahar.volcano.controllers.common import (
    PODGROUPS,
    QUEUES,
    annotations,
    create,
    patch_merge,
)

Obj = dict[str, Any]

DESIRED_STATE_KEY = "lahar.dev/queue-state"
CLOSED_BY_PARENT_KEY = "volcano.sh/closed-by-parent"
OPEN, CLOSED, CLOSING, UNKNOWN = "Open", "Closed", "Closing", "Unknown"
STATES = (OPEN, CLOSED, CLOSING, UNKNOWN)
COUNTED_PHASES = ("pending", "inqueue", "running", "unknown", "completed")
BY_QUEUE = "volcano-queue"
BY_QUEUE_PHASE = "volcano-queue-phase"
BY_PARENT = "volcano-parent"


def podgroup_queue(pg: Obj) -> Iterable[str]:
    """Index function: the queue a PodGroup is in."""
    return ((pg.get("spec") or {}).get("queue") or c.DEFAULT_QUEUE,)


def podgroup_queue_phase(pg: Obj) -> Iterable[str]:
    """Index function: ``queue/phase`` of a PodGroup (what the queue's counts count)."""
    phase = ((pg.get("status") or {}).get("phase") or "Pending").lower()
    return (f"{(pg.get('spec') or {}).get('queue') or c.DEFAULT_QUEUE}/{phase}",)


def queue_parent(queue: Obj) -> Iterable[str]:
    """Index function: a queue's parent (``root`` when unset, except for root itself)."""
    if queue["metadata"]["name"] == c.ROOT_QUEUE:
        return ()
    return ((queue.get("spec") or {}).get("parent") or c.ROOT_QUEUE,)


def next_state(current: str, action: str, has_podgroups: bool) -> str:
    """The state after ``action`` (OpenQueue, CloseQueue or SyncQueue)."""
    if current not in ("", *STATES):
        raise ValueError(f"queue state {current!r} is not one of {', '.join(STATES)}")
    if action == c.OPEN_QUEUE:
        return OPEN
    if action == c.CLOSE_QUEUE:
        if current == CLOSED:
            return CLOSED
        return CLOSING if has_podgroups else CLOSED
    if current == "":
        return OPEN
    if current == CLOSING and not has_podgroups:
        return CLOSED
    return current


def desired_state(queue: Obj) -> str:
    """The state the user asked for (``spec.state``, else the annotation), or ""."""
    wish = (queue.get("spec") or {}).get("state") or annotations(queue).get(DESIRED_STATE_KEY, "")
    wish = str(wish).strip().capitalize()
    return wish if wish in (OPEN, CLOSED) else ""


def choose_action(queue: Obj, parent: Obj | None) -> tuple[str, bool]:
    """(action, closed by its parent) for one queue."""
    name = queue["metadata"]["name"]
    if name == c.ROOT_QUEUE:
        return c.SYNC_QUEUE if desired_state(queue) != OPEN else c.OPEN_QUEUE, False
    parent_state = ((parent or {}).get("status") or {}).get("state", "")
    if parent is not None and parent_state in (CLOSED, CLOSING):
        return c.CLOSE_QUEUE, desired_state(queue) != CLOSED
    wish = desired_state(queue)
    if wish == CLOSED:
        return c.CLOSE_QUEUE, False
    if wish == OPEN or annotations(queue).get(CLOSED_BY_PARENT_KEY) == "true":
        return c.OPEN_QUEUE, False
    return c.SYNC_QUEUE, False


def count_podgroups(podgroups: Iterable[Obj]) -> dict[str, int]:
    counts = dict.fromkeys(COUNTED_PHASES, 0)
    for pg in podgroups:
        phase = ((pg.get("status") or {}).get("phase") or "Pending").lower()
        if phase in counts:
            counts[phase] += 1
    return counts


class QueueMetrics:
    def __init__(self, registry: CollectorRegistry | None) -> None:
        self.gauges = {
            phase: Gauge(
                f"volcano_queue_pod_group_{phase}_count",
                f"The number of {phase} PodGroups in this queue",
                ["queue_name"],
                registry=registry,
            )
            for phase in COUNTED_PHASES
        }

    def set(self, queue: str, counts: dict[str, int]) -> None:
        for phase, gauge in self.gauges.items():
            gauge.labels(queue).set(counts.get(phase, 0))

    def forget(self, queue: str) -> None:
        for gauge in self.gauges.values():
            try:
                gauge.remove(queue)
            except KeyError:
                pass


_DEFAULT_QUEUES: dict[str, Obj] = {
    c.DEFAULT_QUEUE: {"weight": 1, "reclaimable": True},
    c.ROOT_QUEUE: {"weight": 1, "reclaimable": False},
}


class QueueController:
    """Reconciles queues by name."""

    def __init__(
        self,
        client: lightkube.AsyncClient,
        informers: InformerFactory,
        recorder: EventRecorder,
        *,
        registry: CollectorRegistry | None = None,
        ensure_default_queues: bool = True,
        write_counts: bool = True,
        fill_parent: bool = True,
        count_interval: float = 0.5,
    ) -> None:
        self.client = client
        self.count_interval = count_interval
        self._counts_written: dict[str, float] = {}  # queue -> monotonic time of last write
        self.recorder = recorder
        self.ensure_default_queues = ensure_default_queues
        self.write_counts = write_counts
        self.fill_parent = fill_parent
        queue_informer = informers.informer(QUEUES)
        queue_informer.add_indexer(BY_PARENT, queue_parent)
        pg_informer = informers.informer(PODGROUPS)
        pg_informer.add_indexer(BY_QUEUE, podgroup_queue)
        pg_informer.add_indexer(BY_QUEUE_PHASE, podgroup_queue_phase)
        self.queues = queue_informer.cache
        self.podgroups = pg_informer.cache
        self.metrics = QueueMetrics(registry)

    # -- event mapping -----------------------------------------------------------------

    def queue_of_podgroup(self, pg: Obj) -> list[Request]:
        return [Request("", q) for q in podgroup_queue(pg)]

    def children_of(self, queue: Obj) -> list[Request]:
        return [Request.of(q) for q in self.queues.by_index(BY_PARENT, queue["metadata"]["name"])]

    def initial_requests(self) -> list[Request]:
        return [Request("", name) for name in _DEFAULT_QUEUES] if self.ensure_default_queues else []

    # -- reconcile ---------------------------------------------------------------------

    async def reconcile(self, req: Request) -> Result:
        name = req.name
        queue = self.queues.get(name)
        if queue is None:
            self.metrics.forget(name)
            self._counts_written.pop(name, None)
            if self.ensure_default_queues and name in _DEFAULT_QUEUES:
                await create(
                    self.client,
                    {
                        "apiVersion": f"{QUEUES.group}/{QUEUES.version}",
                        "kind": "Queue",
                        "metadata": {"name": name},
                        "spec": dict(_DEFAULT_QUEUES[name]),
                    },
                )
                logger(__name__).info("created the %s queue", name)
            return Result()
        spec = queue.get("spec") or {}
        parent_name = spec.get("parent") or (c.ROOT_QUEUE if name != c.ROOT_QUEUE else "")
        parent = self.queues.get(parent_name) if parent_name else None
        has_podgroups = self.podgroups.index_count(BY_QUEUE, name) > 0
        action, by_parent = choose_action(queue, parent)
        status = queue.get("status") or {}
        current = status.get("state", "")
        try:
            state = next_state(current, action, has_podgroups)
        except ValueError as exc:
            raise TerminalError(f"queue {name}: {exc}") from None
        if desired_state(queue) == OPEN and state != OPEN:
            self.recorder.warning(
                queue, "OpenQueueFailed", f"parent queue {parent_name} is {parent_state(parent)}"
            )
        # Counted by an index kept up to date on every change: a reconcile costs the
        # same with ten PodGroups in the queue or ten thousand.
        counts = {
            p: self.podgroups.index_count(BY_QUEUE_PHASE, f"{name}/{p}") for p in COUNTED_PHASES
        }
        self.metrics.set(name, counts)

        marked = annotations(queue).get(CLOSED_BY_PARENT_KEY) == "true"
        if by_parent and not marked and current in ("", OPEN, CLOSED):
            # Mark before closing: the admission rules refuse metadata writes on a Closing queue.
            await self._annotate(name, {CLOSED_BY_PARENT_KEY: "true"})

        patch: Obj = {}
        if state != current:
            patch["state"] = state
        later: float | None = None
        if self.write_counts:
            changed = {k: v for k, v in counts.items() if status.get(k) != v}
            wait = self._counts_wait(name) if changed and not patch else 0.0
            if wait > 0:
                later = wait  # coalesce: written with the latest counts when it ends
            else:
                patch.update(changed)
        if patch:
            await patch_merge(
                self.client, QUEUES, None, name, {"status": patch}, subresource="status"
            )
            self._counts_written[name] = time.monotonic()
            if "state" in patch:
                reason = action if action != c.SYNC_QUEUE else "SyncQueue"
                self.recorder.normal(
                    queue, reason, f"queue {name} moved from {current or '(none)'} to {state}"
                )

        edits: Obj = {}
        if marked and not by_parent and state == OPEN:
            edits = {"metadata": {"annotations": {CLOSED_BY_PARENT_KEY: None}}}
        if self.fill_parent and name != c.ROOT_QUEUE and not spec.get("parent"):
            edits["spec"] = {"parent": c.ROOT_QUEUE}
        if edits and state in (OPEN, CLOSED):
            try:
                await patch_merge(self.client, QUEUES, None, name, edits)
            except rest.ApiError as exc:
                if rest.status_code(exc) not in (400, 404, 409, 422):
                    raise
                logger(__name__).warning("could not update queue %s: %s", name, exc)
        return Result(requeue_after=later)

    def _counts_wait(self, name: str) -> float:
        """Seconds until queue ``name`` may have its counts written again."""
        last = self._counts_written.get(name)
        if last is None or self.count_interval <= 0:
            return 0.0
        return max(0.0, last + self.count_interval - time.monotonic())

    async def _annotate(self, name: str, values: dict[str, str | None]) -> None:
        await patch_merge(self.client, QUEUES, None, name, {"metadata": {"annotations": values}})


def parent_state(parent: Obj | None) -> str:
    return ((parent or {}).get("status") or {}).get("state", "") or "missing"
