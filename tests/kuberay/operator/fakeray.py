"""A stand-in Ray dashboard for the operator's unit tests (real Ray comes later).

It answers the Ray Jobs API the way Ray 2.60 does (ray-local.md §4): the same
paths, JSON bodies, ``text/plain`` tracebacks for errors, 404 for unknown ids, a
500 ending in ``... already exists`` for a reused submission id, 400 for unknown
submit fields. One :class:`FakeRay` is one cluster's dashboard; a
:class:`FakeRayFleet` routes requests by host (a head pod's IP) to them and is
plugged into the operator as its HTTP transport. Every accepted submission is
counted, so tests can prove nothing was submitted twice.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx2

SUBMIT_FIELDS = {
    "entrypoint", "submission_id", "job_id", "runtime_env", "metadata", "entrypoint_num_cpus",
    "entrypoint_num_gpus", "entrypoint_memory", "entrypoint_resources", "entrypoint_label_selector",
}  # fmt: skip
MESSAGES = {
    "PENDING": "Job has not started yet.",
    "RUNNING": "Job is currently running.",
    "SUCCEEDED": "Job finished successfully.",
    "FAILED": "Job entrypoint command failed with exit code 1",
    "STOPPED": "Job was intentionally stopped.",
}
TERMINAL = {"SUCCEEDED", "FAILED", "STOPPED"}


def _text(code: int, body: str) -> httpx2.Response:
    return httpx2.Response(code, text=body, headers={"content-type": "text/plain"})


def _traceback(line: str) -> str:
    return f'Traceback (most recent call last):\n  File "job_head.py", line 1\n{line}'


@dataclass
class FakeJob:
    submission_id: str
    entrypoint: str
    body: dict[str, Any]
    status: str = "PENDING"
    start_time: int = 1_795_940_341_000
    end_time: int | None = None
    script: list[str] = field(default_factory=list)  # statuses taken one per GET

    def details(self) -> dict[str, Any]:
        return {
            "type": "SUBMISSION",
            "job_id": None if self.status == "PENDING" else "02000000",
            "submission_id": self.submission_id,
            "status": self.status,
            "entrypoint": self.entrypoint,
            "message": MESSAGES[self.status],
            "error_type": "JOB_ENTRYPOINT_COMMAND_ERROR" if self.status == "FAILED" else None,
            "start_time": self.start_time,
            "end_time": self.end_time,
            "metadata": self.body.get("metadata") or {},
            "runtime_env": self.body.get("runtime_env") or {},
            "driver_exit_code": 1 if self.status == "FAILED" else None,
        }

    def set(self, status: str, end_ms: int | None = None) -> None:
        self.status = status
        if status in TERMINAL and self.end_time is None:
            self.end_time = end_ms or self.start_time + 5_000


class FakeRay:
    """One dashboard: jobs by submission id."""

    def __init__(
        self, script: list[str] | None = None, clock: Callable[[], float] = time.time
    ) -> None:
        self.clock = clock
        self.jobs: dict[str, FakeJob] = {}
        self.submissions = 0
        self.requests: list[tuple[str, str]] = []
        self.script = list(script or [])
        self._n = 0

    def handle(self, method: str, path: str, raw: bytes) -> httpx2.Response:
        self.requests.append((method, path))
        if path == "/api/version":
            return httpx2.Response(200, json={"version": "4", "ray_version": "2.60.0"})
        if path in ("/api/jobs/", "/api/jobs") and method == "POST":
            return self._submit(raw)
        if path in ("/api/jobs/", "/api/jobs") and method == "GET":
            return httpx2.Response(200, json=[j.details() for j in self.jobs.values()])
        rest = path.removeprefix("/api/jobs/")
        job_id, _, action = rest.partition("/")
        job = self.jobs.get(job_id)
        if job is None:
            return _text(404, f"Job {job_id} does not exist")
        if method == "GET" and not action:
            if job.script:
                job.set(job.script.pop(0))
            return httpx2.Response(200, json=job.details())
        if method == "GET" and action == "logs":
            return httpx2.Response(200, json={"logs": f"Running entrypoint for job {job_id}\n"})
        if method == "POST" and action == "stop":
            if job.status in TERMINAL:
                return httpx2.Response(200, json={"stopped": False})
            job.set("STOPPED")
            return httpx2.Response(200, json={"stopped": True})
        if method == "DELETE" and not action:
            if job.status not in TERMINAL:
                line = (
                    f"RuntimeError: Attempted to delete job '{job_id}', but it is in a "
                    f"non-terminal state {job.status}."
                )
                return _text(500, _traceback(line))
            del self.jobs[job_id]
            return httpx2.Response(200, json={"deleted": True})
        return _text(405, "Method Not Allowed")

    def _submit(self, raw: bytes) -> httpx2.Response:
        body = json.loads(raw or b"{}")
        unknown = sorted(set(body) - SUBMIT_FIELDS)
        if unknown:
            line = f"TypeError: JobSubmitRequest.__init__() got an unexpected keyword argument '{unknown[0]}'"
            return _text(400, _traceback(line))
        if not isinstance(body.get("entrypoint"), str):
            t = type(body.get("entrypoint")).__name__
            return _text(
                400, _traceback(f"TypeError: entrypoint must be a string, got <class '{t}'>")
            )
        sid = body.get("submission_id") or body.get("job_id")
        if not sid:
            self._n += 1
            sid = f"raysubmit_{self._n:016d}"
        if sid in self.jobs:
            line = (
                f"ValueError: Job with submission_id {sid} already exists. "
                "Please use a different submission_id."
            )
            return _text(500, _traceback(line))
        start = int(self.clock() * 1000)
        self.jobs[sid] = FakeJob(
            sid, body["entrypoint"], body, start_time=start, script=list(self.script)
        )
        self.submissions += 1
        return httpx2.Response(200, json={"job_id": sid, "submission_id": sid})


class FakeRayFleet:
    """Dashboards by host; ``down`` hosts refuse connections."""

    def __init__(
        self, script: list[str] | None = None, clock: Callable[[], float] = time.time
    ) -> None:
        self.clock = clock
        self.dashboards: dict[str, FakeRay] = {}
        self.down: set[str] = set()
        self.script = script
        self.transport = httpx2.MockTransport(self._handle)

    def at(self, host: str) -> FakeRay:
        if host not in self.dashboards:
            self.dashboards[host] = FakeRay(self.script, self.clock)
        return self.dashboards[host]

    @property
    def submissions(self) -> int:
        return sum(d.submissions for d in self.dashboards.values())

    def job(self, submission_id: str) -> FakeJob | None:
        for d in self.dashboards.values():
            if submission_id in d.jobs:
                return d.jobs[submission_id]
        return None

    async def _handle(self, request: httpx2.Request) -> httpx2.Response:
        host = request.url.host
        if host in self.down:
            raise httpx2.ConnectError("connection refused", request=request)
        return self.at(host).handle(request.method, request.url.path, request.content)
