"""sla: jobs that have waited past their service-level waiting time go first (§6.10).

The waiting time comes from the PodGroup annotation ``volcano.sh/sla-waiting-time`` (or
``sla-waiting-time``), else the plugin argument ``sla-waiting-time``; it is a Go duration
(``1h30m``). Non-positive or unparsable values are ignored. Jobs with a waiting time
order before jobs without, earliest deadline first; once a job's deadline has passed it
is admitted (JobEnqueueable) and kept (JobPipelined) regardless of the other voters in
its tier. A missing creation time counts as the zero time, i.e. waited forever.
"""

from __future__ import annotations

import re
from datetime import datetime

from lahar.scheduler.api.job import JobInfo
from lahar.scheduler.framework.plugin import Plugin
from lahar.scheduler.framework.registries import ABSTAIN, PERMIT
from lahar.scheduler.framework.session import Session
from lahar.scheduler.plugins.registry import register_plugin

KEYS = ("volcano.sh/sla-waiting-time", "sla-waiting-time")
_UNIT = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)")


def parse_duration(text: str) -> float | None:
    """Seconds in a Go duration string, or None when it does not parse."""
    text = text.strip()
    sign = -1.0 if text.startswith("-") else 1.0
    body = text.lstrip("+-")
    if not body:
        return None
    pos, total = 0, 0.0
    for match in _PART.finditer(body):
        if match.start() != pos:
            return None
        total += float(match.group(1)) * _UNIT[match.group(2)]
        pos = match.end()
    return sign * total if pos == len(body) else None


def created(job: JobInfo) -> float:
    if not job.creation:
        return float("-inf")
    try:
        return datetime.fromisoformat(job.creation.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return float("-inf")


@register_plugin
class SlaPlugin(Plugin):
    name = "sla"

    def on_session_open(self, ssn: Session) -> None:
        self.now = ssn.now
        default = parse_duration(self.arguments.get_str("sla-waiting-time"))
        self.default = default if default is not None and default > 0 else None
        ssn.job_order.add(self, self.job_order)
        ssn.job_enqueueable.add(self, self.permit_after_deadline)
        ssn.job_pipelined.add(self, self.permit_after_deadline)

    def waiting_time(self, job: JobInfo) -> float | None:
        annotations = (job.podgroup.get("metadata") or {}).get("annotations") or {}
        for key in KEYS:
            if key in annotations:
                value = parse_duration(str(annotations[key]))
                if value is not None and value > 0:
                    return value
        return self.default

    def deadline(self, job: JobInfo) -> float | None:
        wait = self.waiting_time(job)
        return None if wait is None else created(job) + wait

    def job_order(self, left: JobInfo, right: JobInfo) -> int:
        ld, rd = self.deadline(left), self.deadline(right)
        if ld is None and rd is None:
            return 0
        if ld is None or rd is None:
            return 1 if ld is None else -1
        return (ld > rd) - (ld < rd)

    def permit_after_deadline(self, job: JobInfo) -> int:
        deadline = self.deadline(job)
        if deadline is None or self.now < deadline:
            return ABSTAIN
        return PERMIT
