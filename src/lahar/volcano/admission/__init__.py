"""Volcano's admission rules (validation and defaulting), pure and shared by the embedded
admission chain (``plugins``) and the HTTPS webhook (``lahar.volcano.webhook``)."""

from lahar.volcano.admission.common import AdmissionDenied
from lahar.volcano.admission.jobs import (
    job_create_message,
    job_update_message,
    mutate_job,
    validate_job,
)
from lahar.volcano.admission.plugins import (
    JobAdmission,
    PodAdmission,
    PodGroupAdmission,
    QueueAdmission,
    volcano_admission_plugins,
)
from lahar.volcano.admission.podgroups import mutate_podgroup, validate_podgroup
from lahar.volcano.admission.pods import ResourceGroup, mutate_pod, validate_pod
from lahar.volcano.admission.queues import mutate_queue, validate_queue

__all__ = [
    "AdmissionDenied",
    "JobAdmission",
    "PodAdmission",
    "PodGroupAdmission",
    "QueueAdmission",
    "ResourceGroup",
    "job_create_message",
    "job_update_message",
    "mutate_job",
    "mutate_pod",
    "mutate_podgroup",
    "mutate_queue",
    "validate_job",
    "validate_pod",
    "validate_podgroup",
    "validate_queue",
    "volcano_admission_plugins",
]
