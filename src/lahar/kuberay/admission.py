"""Admission for RayCluster and RayJob: KubeRay's validation at write time.

KubeRay validates in its reconcilers, so a bad spec is accepted by the API server
and then sits there with a Warning event (RayJob: ``ValidationFailed``). lahar
refuses it up front with a 422 whose causes name each field, and adds warnings
for accepted-but-surprising specs. The same rule functions run in the reconciler
(objects written before the plugin existed, or on a real cluster without the
webhook), so the two paths cannot disagree. ``managedBy`` is immutable.
"""

from __future__ import annotations

from typing import Any

from lahar.apiserver.admission import AdmissionRequest
from lahar.apiserver.errors import Cause, invalid
from lahar.kuberay.jobvalidation import validate_rayjob
from lahar.kuberay.validation import cluster_warnings, validate_raycluster

GROUP = "ray.io"


class KubeRayAdmission:
    """The ``AdmissionPlugin`` for ``ray.io`` RayCluster and RayJob writes."""

    name = "KubeRayValidation"

    def mutate(self, request: AdmissionRequest) -> None:
        return None  # CRD schema defaults already ran; KubeRay has no mutating webhook.

    def validate(self, request: AdmissionRequest) -> None:
        resource = request.resource
        if resource.group != GROUP or request.operation not in ("CREATE", "UPDATE"):
            return
        if request.subresource or request.object is None:
            return
        obj = request.object
        if request.operation == "UPDATE" and _same_inputs(obj, request.old_object):
            return  # metadata-only writes (finalizers, labels) must not be blocked
        if resource.kind == "RayCluster":
            causes = validate_raycluster(obj)
            spec = obj.get("spec") or {}
            request.warnings.extend(cluster_warnings(spec))
        elif resource.kind == "RayJob":
            causes = validate_rayjob(obj)
            spec = obj.get("spec") or {}
            request.warnings.extend(
                cluster_warnings(spec.get("rayClusterSpec") or {}, "spec.rayClusterSpec")
            )
        else:
            return
        if request.operation == "UPDATE" and request.old_object is not None:
            old = (request.old_object.get("spec") or {}).get("managedBy")
            new = (obj.get("spec") or {}).get("managedBy")
            if old != new:
                causes.append(
                    Cause(
                        "FieldValueInvalid", "Invalid value: field is immutable", "spec.managedBy"
                    )
                )
        if causes:
            name = (obj.get("metadata") or {}).get("name", request.name)
            raise invalid(resource.kind, name, causes, GROUP)


def _same_inputs(new: dict[str, Any], old: dict[str, Any] | None) -> bool:
    """Spec and annotations unchanged: the validation result cannot have changed."""
    if old is None:
        return False

    def annotations(o: dict[str, Any]) -> dict[str, Any]:
        return (o.get("metadata") or {}).get("annotations") or {}

    return new.get("spec") == old.get("spec") and annotations(new) == annotations(old)
