"""Volcano's admission rules as plugins of the embedded server's admission chain.

One plugin per kind, each acting only on its own resource (never on subresources such as
``status``, which Volcano's webhooks do not intercept either). A denial becomes the
``Status`` a real kube-apiserver returns for a webhook denial: code 400 and the message
``admission webhook "<name>" denied the request: <Volcano's message>``.
"""

from __future__ import annotations

from lahar.apiserver.admission import AdmissionRequest
from lahar.apiserver.errors import APIError
from lahar.volcano import constants as c
from lahar.volcano.admission import jobs, podgroups, pods, queues
from lahar.volcano.admission.common import AdmissionDenied
from lahar.volcano.lookup import Lookup


def denial_error(denied: AdmissionDenied) -> APIError:
    return APIError(400, "", denied.full_message())


class KindPlugin:
    name = "Volcano"
    group = ""
    plural = ""

    def __init__(self, lookup: Lookup) -> None:
        self.lookup = lookup

    def applies(self, request: AdmissionRequest) -> bool:
        return (
            not request.subresource
            and request.resource.group == self.group
            and request.resource.plural == self.plural
        )

    def mutate(self, request: AdmissionRequest) -> None:
        if not self.applies(request) or request.object is None:
            return
        try:
            mutated = self._mutate(request)
        except AdmissionDenied as denied:
            raise denial_error(denied) from None
        if mutated is not None:
            request.object.clear()
            request.object.update(mutated)

    def validate(self, request: AdmissionRequest) -> None:
        if not self.applies(request):
            return
        try:
            self._validate(request)
        except AdmissionDenied as denied:
            raise denial_error(denied) from None

    def _mutate(self, request: AdmissionRequest) -> dict | None:
        return None

    def _validate(self, request: AdmissionRequest) -> None:
        return None


class JobAdmission(KindPlugin):
    name = "VolcanoJob"
    group = c.BATCH_GROUP
    plural = "jobs"

    def _mutate(self, request: AdmissionRequest) -> dict | None:
        if request.operation == "CREATE" and request.object is not None:
            return jobs.mutate_job(request.object)
        return None

    def _validate(self, request: AdmissionRequest) -> None:
        jobs.validate_job(request.operation, request.object, request.old_object, self.lookup)


class QueueAdmission(KindPlugin):
    name = "VolcanoQueue"
    group = c.SCHEDULING_GROUP
    plural = "queues"

    def _mutate(self, request: AdmissionRequest) -> dict | None:
        if request.operation == "CREATE" and request.object is not None:
            return queues.mutate_queue(request.object)
        return None

    def _validate(self, request: AdmissionRequest) -> None:
        queues.validate_queue(
            request.operation, request.object, request.old_object, request.name, self.lookup
        )


class PodGroupAdmission(KindPlugin):
    name = "VolcanoPodGroup"
    group = c.SCHEDULING_GROUP
    plural = "podgroups"

    def _mutate(self, request: AdmissionRequest) -> dict | None:
        if request.operation == "CREATE" and request.object is not None:
            obj = dict(request.object)
            obj.setdefault("metadata", {}).setdefault("namespace", request.namespace)
            return podgroups.mutate_podgroup(obj, self.lookup)
        return None

    def _validate(self, request: AdmissionRequest) -> None:
        podgroups.validate_podgroup(request.operation, request.object, self.lookup)


class PodAdmission(KindPlugin):
    name = "VolcanoPod"
    group = ""
    plural = "pods"

    def __init__(
        self, lookup: Lookup, resource_groups: list[pods.ResourceGroup] | None = None
    ) -> None:
        super().__init__(lookup)
        self.resource_groups = resource_groups or []

    def _mutate(self, request: AdmissionRequest) -> dict | None:
        if request.operation == "CREATE" and request.object is not None and self.resource_groups:
            return pods.mutate_pod(request.object, self.resource_groups)
        return None

    def _validate(self, request: AdmissionRequest) -> None:
        if request.operation != "CREATE" or request.object is None:
            return
        obj = dict(request.object)
        meta = dict(obj.get("metadata") or {})
        meta.setdefault("namespace", request.namespace)
        meta.setdefault("name", request.name)
        obj["metadata"] = meta
        pods.validate_pod("CREATE", obj, self.lookup)


def volcano_admission_plugins(lookup: Lookup) -> list[KindPlugin]:
    """The plugins to add to the embedded admission chain, wired to ``lookup``."""
    return [
        JobAdmission(lookup),
        QueueAdmission(lookup),
        PodGroupAdmission(lookup),
        PodAdmission(lookup),
    ]
