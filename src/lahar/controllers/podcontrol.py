"""Creating, deleting and releasing a controller's pods, with expectations and Events.

The Job controller's writes to pods, kept apart from its decisions: each write is
announced to the :class:`~lahar.controllers.expectations.Expectations` before it is
sent (and withdrawn if it fails, since the informer will then never show it), and
each success or failure is recorded as an Event on the owner, the way upstream's
``PodControl`` does (``SuccessfulCreate``, ``FailedCreate``, ``SuccessfulDelete``...).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable

import lightkube

from lahar.controllers.common import PODS, Obj, delete, remove_finalizer
from lahar.controllers.expectations import Expectations, UIDExpectations
from lahar.kube import rest
from lahar.kube.events import EventRecorder

log = logging.getLogger("lahar.controllers.podcontrol")


class PodControl:
    """Pod writes on behalf of one controller."""

    def __init__(
        self,
        client: lightkube.AsyncClient,
        recorder: EventRecorder,
        expectations: Expectations,
        finalizers: UIDExpectations,
        finalizer: str,
    ) -> None:
        self.client = client
        self.recorder = recorder
        self.expectations = expectations
        self.finalizers = finalizers
        self.finalizer = finalizer

    async def create(
        self, key: str, owner: Obj, specs: list[int | None], build: Callable[[Obj, int | None], Obj]
    ) -> int:
        """Create ``build(owner, spec)`` for each spec, in batches of 1, 2, 4, ... (a
        failing batch stops the rest: the same error would likely repeat). Returns how
        many were created."""
        self.expectations.expect_creations(key, len(specs))
        created, batch, pos = 0, 1, 0
        path = PODS.path(owner["metadata"]["namespace"])
        while pos < len(specs):
            chunk = specs[pos : pos + batch]
            pos += len(chunk)
            results = await asyncio.gather(
                *(rest.request(self.client, "POST", path, body=build(owner, s)) for s in chunk),
                return_exceptions=True,
            )
            errors = 0
            for res in results:
                if isinstance(res, BaseException):
                    errors += 1
                    self.expectations.creation_observed(key)
                    self.recorder.warning(owner, "FailedCreate", f"Error creating: {res}")
                    log.warning("%s: creating a pod failed: %s", key, res)
                else:
                    created += 1
                    self.recorder.normal(
                        owner, "SuccessfulCreate", f"Created pod: {res['metadata']['name']}"
                    )
            if errors:
                self.expectations.creation_observed(key, len(specs) - pos)
                break
            batch *= 2
        return created

    async def delete(self, key: str, owner: Obj, pods: Iterable[Obj]) -> int:
        """Delete ``pods`` (gracefully); how many deletions the server accepted."""
        pods = list(pods)
        if not pods:
            return 0
        self.expectations.expect_deletions(key, (p["metadata"]["uid"] for p in pods))

        async def one(pod: Obj) -> bool:
            uid = pod["metadata"]["uid"]
            try:
                existed = await delete(self.client, PODS, pod)
            except Exception as exc:
                self.expectations.deletion_observed(key, uid)
                self.recorder.warning(owner, "FailedDelete", f"Error deleting: {exc}")
                return False
            if not existed:
                self.expectations.deletion_observed(key, uid)
                return False
            self.recorder.normal(
                owner, "SuccessfulDelete", f"Deleted pod: {pod['metadata']['name']}"
            )
            return True

        return sum(await asyncio.gather(*(one(p) for p in pods)))

    async def release(self, pods: Iterable[Obj], key: str | None = None) -> set[str]:
        """Remove the tracking finalizer from ``pods``; the uids that no longer hold it."""
        held = [p for p in pods if self.finalizer in (p["metadata"].get("finalizers") or ())]
        if not held:
            return set()
        if key is not None:
            self.finalizers.expect(key, (p["metadata"]["uid"] for p in held))
        results = await asyncio.gather(
            *(remove_finalizer(self.client, p, self.finalizer) for p in held),
            return_exceptions=True,
        )
        out: set[str] = set()
        for pod, res in zip(held, results, strict=True):
            uid = pod["metadata"]["uid"]
            if res is True:
                out.add(uid)
                continue
            if key is not None:
                self.finalizers.observed(key, uid)
            log.warning("could not remove the finalizer of pod %s: %s", uid, res)
        return out
