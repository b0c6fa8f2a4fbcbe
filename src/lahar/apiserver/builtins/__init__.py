"""Defaulting and validation of built-in kinds and of object metadata.

The REST layer calls, for every write:

* :func:`validate_metadata` for every kind (custom resources included);
* :func:`default` on the decoded object of a built-in kind (pass ``old=`` on
  updates so allocated values such as a Service's cluster IP are kept);
* :func:`validate_create` or :func:`validate_update` for built-in kinds.

A non-empty cause list becomes ``errors.invalid(kind, name, causes, group)``
(422). :func:`default` may raise :class:`~lahar.apiserver.errors.APIError`
itself where the real server answers 403 from an admission plugin (an unknown
``priorityClassName``). Everything here is pure: cluster state comes in through
:class:`DefaultContext`, objects are plain dicts, and inputs are never mutated.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from lahar.apiserver.builtins import cluster, configs, crds, jobs, metadata, pods, services
from lahar.apiserver.builtins.context import DefaultContext
from lahar.apiserver.errors import APIError, Cause, bad_request
from lahar.apiserver.jsoncopy import clone
from lahar.apiserver.resources import ResourceType

__all__ = ["DefaultContext", "default", "validate_create", "validate_metadata", "validate_update"]

_Obj = dict[str, Any]


def _key(rt: ResourceType) -> tuple[str, str]:
    return rt.group, rt.kind


_Defaulter = Callable[[_Obj, DefaultContext, _Obj | None, str], _Obj]
_DEFAULTERS: dict[tuple[str, str], _Defaulter] = {
    ("", "Pod"): lambda obj, ctx, old, sub: pods.default_pod(obj, ctx, old),
    ("", "Service"): lambda obj, ctx, old, sub: services.default_service(obj, ctx, old),
    ("batch", "Job"): lambda obj, ctx, old, sub: jobs.default_job(obj, old),
    ("", "Namespace"): lambda obj, ctx, old, sub: cluster.default_namespace(obj, old, sub),
    ("", "Node"): lambda obj, ctx, old, sub: cluster.default_node(obj),
    ("", "Secret"): lambda obj, ctx, old, sub: configs.default_secret(obj),
    ("", "Endpoints"): lambda obj, ctx, old, sub: cluster.default_endpoints(obj),
    ("scheduling.k8s.io", "PriorityClass"): lambda obj, ctx, old, sub: (
        cluster.default_priority_class(obj)
    ),
    ("apiextensions.k8s.io", "CustomResourceDefinition"): lambda obj, ctx, old, sub: (
        crds.default_crd(obj, ctx, old)
    ),
}

_CREATE: dict[tuple[str, str], Callable[[_Obj], list[Cause]]] = {
    ("", "Pod"): pods.validate_pod_create,
    ("", "Service"): services.validate_service,
    ("batch", "Job"): jobs.validate_job,
    ("", "Namespace"): cluster.validate_namespace,
    ("", "Node"): cluster.validate_node,
    ("", "ConfigMap"): configs.validate_config_map,
    ("", "Secret"): configs.validate_secret,
    ("", "Event"): cluster.validate_event,
    ("", "Endpoints"): cluster.validate_endpoints,
    ("", "Binding"): cluster.validate_binding,
    ("coordination.k8s.io", "Lease"): cluster.validate_lease,
    ("scheduling.k8s.io", "PriorityClass"): cluster.validate_priority_class,
    ("apiextensions.k8s.io", "CustomResourceDefinition"): crds.validate_crd,
}

_UPDATE: dict[tuple[str, str], Callable[[_Obj, _Obj, str], list[Cause]]] = {
    ("", "Pod"): pods.validate_pod_update,
    ("", "Service"): services.validate_service_update,
    ("batch", "Job"): jobs.validate_job_update,
    ("", "Namespace"): lambda new, old, sub: (
        cluster.validate_namespace_status(new)
        if sub == "status"
        else cluster.validate_namespace(new)
    ),
    ("", "Node"): lambda new, old, sub: (
        [] if sub == "status" else cluster.validate_node_update(new, old)
    ),
    ("", "ConfigMap"): lambda new, old, sub: configs.validate_config_map_update(new, old),
    ("", "Secret"): lambda new, old, sub: configs.validate_secret_update(new, old),
    ("", "Event"): lambda new, old, sub: cluster.validate_event(new),
    ("", "Endpoints"): lambda new, old, sub: cluster.validate_endpoints(new),
    ("coordination.k8s.io", "Lease"): lambda new, old, sub: cluster.validate_lease(new),
    ("scheduling.k8s.io", "PriorityClass"): lambda new, old, sub: (
        cluster.validate_priority_class_update(new, old)
    ),
    ("apiextensions.k8s.io", "CustomResourceDefinition"): crds.validate_crd_update,
}


def validate_metadata(obj: _Obj, rt: ResourceType, *, old: _Obj | None = None) -> list[Cause]:
    """``metadata`` rules for every kind, custom resources included (``old`` on updates)."""
    return _guarded(lambda: metadata.validate_metadata(obj, rt, old=old))


def default(
    obj: _Obj,
    rt: ResourceType,
    ctx: DefaultContext,
    *,
    old: _Obj | None = None,
    subresource: str = "",
) -> _Obj:
    """A defaulted copy of ``obj``; ``old`` is the stored object on updates.

    On create this also applies what the real server's registry and admission
    plugins set (status reset, Pod priority and tolerations, Job selector,
    Service cluster IP). On updates allocated values missing from ``obj`` are
    taken from ``old``. ``subresource`` names the subresource being written
    (``"status"``, ``"finalize"``). Kinds without defaults come back as a copy.
    """
    out = clone(obj)
    defaulter = _DEFAULTERS.get(_key(rt)) if rt.builtin else None
    if defaulter is None:
        return out
    try:
        return defaulter(out, ctx, old, subresource)
    except APIError:
        raise
    except _SHAPE_ERRORS as exc:
        raise bad_request(f'{rt.kind} in version "{rt.version}" cannot be handled: {exc}') from exc


def validate_create(obj: _Obj, rt: ResourceType) -> list[Cause]:
    """Kind-specific rules for a new (already defaulted) object; metadata excluded."""
    check = _CREATE.get(_key(rt)) if rt.builtin else None
    return _guarded(lambda: check(obj)) if check else []


def validate_update(
    new: _Obj, old: _Obj, rt: ResourceType, *, subresource: str = ""
) -> list[Cause]:
    """Kind-specific rules for replacing ``old`` by ``new``.

    ``subresource`` is ``"status"`` for writes to ``/status``.
    """
    check = _UPDATE.get(_key(rt)) if rt.builtin else None
    return _guarded(lambda: check(new, old, subresource)) if check else []


# A field of the wrong JSON type (a string where a list belongs) makes the
# checks above trip over it; the client gets a cause instead of a 500.
_SHAPE_ERRORS = (AttributeError, TypeError, KeyError, IndexError, ValueError)


def _guarded(run: Callable[[], list[Cause]]) -> list[Cause]:
    try:
        return run()
    except _SHAPE_ERRORS as exc:
        return [Cause("FieldValueTypeInvalid", f"Invalid value: malformed object: {exc}")]
