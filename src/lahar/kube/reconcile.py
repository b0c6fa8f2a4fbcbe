"""The reconciler contract: what a controller hands to its reconcile function and back.

A reconciler gets only a :class:`Request` (namespace and name), never the event that
caused it: it reads the current state from the caches, moves the world one step
toward the desired state and says, with a :class:`Result`, whether to look again
later. That is what makes controllers level-triggered: a missed or merged event does
not matter, since the next reconcile sees the same world. Raising an exception means
"retry with backoff"; raising :class:`TerminalError` means "this cannot succeed by
retrying" (it is logged and counted, and the key is not retried until it changes).
"""

from __future__ import annotations

import contextvars
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["Reconciler", "Request", "Result", "TerminalError", "current_request", "logger"]


@dataclass(frozen=True, slots=True, order=True)
class Request:
    """Which object to reconcile (``namespace`` is ``""`` for cluster-scoped kinds)."""

    namespace: str
    name: str

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}" if self.namespace else self.name

    @classmethod
    def of(cls, obj: dict[str, Any]) -> Request:
        md = obj["metadata"]
        return cls(md.get("namespace") or "", md["name"])


@dataclass(frozen=True, slots=True)
class Result:
    """What to do after a successful reconcile: nothing (the default), requeue through
    the rate limiter (``requeue``), or look again after ``requeue_after`` seconds."""

    requeue: bool = False
    requeue_after: float | None = None


class TerminalError(Exception):
    """A failure that retrying cannot fix: logged and counted, not requeued."""


Reconciler = Callable[[Request], Awaitable[Result | None]]

# The request being reconciled in this task (set by the controller's workers).
current_request: contextvars.ContextVar[tuple[str, Request] | None] = contextvars.ContextVar(
    "lahar_current_request", default=None
)


def logger(name: str = "lahar.kube.reconcile") -> logging.LoggerAdapter[logging.Logger]:
    """A logger whose records carry the controller and object key being reconciled
    (``extra`` fields ``controller``, ``namespace``, ``object_name``, ``key``) and mention the
    key in the message."""
    current = current_request.get()
    if current is None:
        return logging.LoggerAdapter(logging.getLogger(name), {})
    controller, req = current
    return _KeyAdapter(logging.getLogger(name), key_fields(controller, req))


def key_fields(controller: str, req: Request) -> dict[str, str]:
    return {
        "controller": controller,
        "namespace": req.namespace,
        "object_name": req.name,
        "key": str(req),
    }


class _KeyAdapter(logging.LoggerAdapter[logging.Logger]):
    def process(self, msg: Any, kwargs: Any) -> tuple[Any, Any]:
        extra = self.extra or {}
        kwargs["extra"] = {**extra, **(kwargs.get("extra") or {})}
        return f"[{extra.get('controller')} {extra.get('key')}] {msg}", kwargs
