"""An async client for the Ray Jobs API (the dashboard's ``/api/jobs/`` endpoints).

The RayJob reconciler talks to Ray only through this client: HTTPMode submits with
it, every Running pass polls ``GET /api/jobs/<id>``, and deletion stops the job.
Payloads and errors follow Ray 2.60 (``ray-local.md`` §4): a submit body holds only
the fields of ``JobSubmitRequest`` (unknown fields are a 400); a resubmitted
submission id comes back as a 500 whose text ends in ``... already exists``, which
:class:`JobAlreadyExists` names so a retried submission counts as done; an unknown
id is a 404 (:class:`JobNotFound`); every error body is ``text/plain``.

Two seams keep this testable and independent of the network: the dashboard URL
(``<head-svc>.<ns>.svc.<domain>:8265``) is resolved by a pluggable resolver
(:mod:`.resolver`, lahar's own view of Services, never the machine's DNS), and the
HTTP transport is injectable, so unit tests route requests to an in-process
stand-in dashboard. :class:`DashboardPool` shares one connection pool and bounds
how many dashboard calls are in flight at once, so thousands of polled RayJobs
cannot swamp the operator (KubeRay pain point 7).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import httpx2
import yaml

JOBS_PATH = "/api/jobs/"
DEFAULT_TIMEOUT = 2.0  # KubeRay's direct-connection timeout
TERMINAL = frozenset({"SUCCEEDED", "FAILED", "STOPPED"})

Resolve = Callable[[str], Awaitable[str]]  # dashboard URL -> base URL (http://ip:port)


class DashboardError(Exception):
    """A dashboard call failed (connection, timeout, or a non-2xx answer)."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class JobNotFound(DashboardError):
    """The dashboard does not know the submission id (HTTP 404)."""


class JobAlreadyExists(DashboardError):
    """A submission with this id exists already (Ray answers 500 with this text)."""

    def __init__(self, submission_id: str, message: str) -> None:
        super().__init__(message, 500)
        self.submission_id = submission_id


class DashboardUnavailable(DashboardError):
    """The dashboard URL does not resolve to an address yet (no Service or pod IP)."""


@dataclass(frozen=True)
class JobInfo:
    """The fields of Ray's JobDetails the operator reads (``raw`` holds all of them)."""

    status: str
    message: str = ""
    submission_id: str | None = None
    job_id: str | None = None
    entrypoint: str = ""
    start_time: int | None = None  # milliseconds since the epoch
    end_time: int | None = None
    error_type: str | None = None
    driver_exit_code: int | None = None
    raw: dict[str, Any] = field(default_factory=dict, compare=False)

    @property
    def terminal(self) -> bool:
        return self.status in TERMINAL

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> JobInfo:
        return cls(
            status=str(data.get("status") or ""),
            message=str(data.get("message") or ""),
            submission_id=data.get("submission_id"),
            job_id=data.get("job_id"),
            entrypoint=str(data.get("entrypoint") or ""),
            start_time=data.get("start_time") or None,
            end_time=data.get("end_time") or None,
            error_type=data.get("error_type"),
            driver_exit_code=data.get("driver_exit_code"),
            raw=data,
        )


def submit_request(rayjob: dict[str, Any], submission_id: str) -> dict[str, Any]:
    """The ``POST /api/jobs/`` body KubeRay's HTTPMode sends: the entrypoint as written
    (untrimmed), the runtime env parsed from ``runtimeEnvYAML``, entrypoint resources
    parsed from their JSON string; zero or empty fields left out."""
    spec = rayjob.get("spec") or {}
    body: dict[str, Any] = {"entrypoint": spec.get("entrypoint") or ""}
    if submission_id:
        body["submission_id"] = submission_id
    if spec.get("metadata"):
        body["metadata"] = dict(spec["metadata"])
    if spec.get("runtimeEnvYAML"):
        env = yaml.safe_load(spec["runtimeEnvYAML"])
        if env:
            body["runtime_env"] = env
    if (spec.get("entrypointNumCpus") or 0) > 0:
        body["entrypoint_num_cpus"] = float(spec["entrypointNumCpus"])
    if (spec.get("entrypointNumGpus") or 0) > 0:
        body["entrypoint_num_gpus"] = float(spec["entrypointNumGpus"])
    if spec.get("entrypointResources"):
        resources = json.loads(spec["entrypointResources"])
        body["entrypoint_resources"] = {k: float(v) for k, v in resources.items()}
    return body


class DashboardClient:
    """One Ray dashboard (``base_url`` = ``http://host:port``)."""

    def __init__(
        self,
        base_url: str,
        *,
        http: httpx2.AsyncClient | None = None,
        transport: httpx2.AsyncBaseTransport | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        limit: asyncio.Semaphore | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self._own = http is None
        self._http = http or httpx2.AsyncClient(transport=transport, timeout=timeout)
        self._timeout = timeout
        self._limit = limit
        self._headers = headers or {}

    async def close(self) -> None:
        if self._own:
            await self._http.aclose()

    async def _call(self, method: str, path: str, body: Any = None) -> httpx2.Response:
        url = self.base_url + path
        kwargs: dict[str, Any] = {"headers": self._headers, "timeout": self._timeout}
        if body is not None:
            kwargs["json"] = body
        try:
            # One deadline for the whole call, waiting for a slot included: a hung
            # dashboard holds a reconcile worker for at most ``timeout`` seconds.
            async with asyncio.timeout(self._timeout):
                if self._limit is None:
                    return await self._http.request(method, url, **kwargs)
                async with self._limit:
                    return await self._http.request(method, url, **kwargs)
        except TimeoutError as exc:
            raise DashboardError(f"{method} {url}: timed out after {self._timeout}s") from exc
        except httpx2.HTTPError as exc:
            raise DashboardError(f"{method} {url}: {type(exc).__name__}: {exc}") from exc

    @staticmethod
    def _check(resp: httpx2.Response, what: str, job_id: str = "") -> None:
        if resp.status_code < 300:
            return
        text = resp.text.strip()
        last = text.splitlines()[-1] if text else resp.reason_phrase
        if resp.status_code == 404:
            raise JobNotFound(f"{what}: {last}", 404)
        if "already exists" in text and "submission_id" in text:
            raise JobAlreadyExists(job_id, f"{what}: {last}")
        raise DashboardError(f"{what}: HTTP {resp.status_code}: {last}", resp.status_code)

    @staticmethod
    def _json(resp: httpx2.Response, what: str) -> Any:
        try:
            return resp.json()
        except ValueError as exc:
            raise DashboardError(f"{what}: the answer is not JSON: {resp.text[:200]!r}") from exc

    async def version(self) -> dict[str, Any]:
        resp = await self._call("GET", "/api/version")
        self._check(resp, "GET /api/version")
        return dict(self._json(resp, "GET /api/version"))

    async def submit_job(self, request: dict[str, Any]) -> str:
        """Submit; returns the submission id. Raises :class:`JobAlreadyExists` when the
        id is taken (the job was submitted before: not an error for the operator)."""
        resp = await self._call("POST", JOBS_PATH, request)
        self._check(resp, "submit job", str(request.get("submission_id") or ""))
        data = self._json(resp, "submit job")
        return str(data.get("submission_id") or data.get("job_id") or "")

    async def get_job_info(self, job_id: str) -> JobInfo:
        what = f"get job {job_id}"
        resp = await self._call("GET", f"{JOBS_PATH}{job_id}")
        self._check(resp, what, job_id)
        data = self._json(resp, what)
        if not isinstance(data, dict):
            raise DashboardError(f"{what}: unexpected answer {data!r}")
        return JobInfo.from_dict(data)

    async def list_jobs(self) -> list[JobInfo]:
        resp = await self._call("GET", JOBS_PATH)
        self._check(resp, "list jobs")
        return [JobInfo.from_dict(d) for d in self._json(resp, "list jobs")]

    async def stop_job(self, job_id: str) -> bool:
        """Ask Ray to stop the job; False when it had already stopped."""
        resp = await self._call("POST", f"{JOBS_PATH}{job_id}/stop")
        self._check(resp, f"stop job {job_id}", job_id)
        return bool(self._json(resp, "stop job").get("stopped"))

    async def delete_job(self, job_id: str) -> bool:
        """Delete a terminal job's record (Ray answers 500 for a job still running)."""
        resp = await self._call("DELETE", f"{JOBS_PATH}{job_id}")
        self._check(resp, f"delete job {job_id}", job_id)
        return bool(self._json(resp, "delete job").get("deleted"))

    async def get_job_logs(self, job_id: str) -> str:
        resp = await self._call("GET", f"{JOBS_PATH}{job_id}/logs")
        self._check(resp, f"logs of job {job_id}", job_id)
        return str(self._json(resp, "job logs").get("logs") or "")


class DashboardPool:
    """Dashboard clients for many clusters over one connection pool, with at most
    ``max_concurrency`` calls in flight. ``resolve`` turns a RayJob's
    ``status.dashboardURL`` into the base URL to call."""

    def __init__(
        self,
        resolve: Resolve,
        *,
        transport: httpx2.AsyncBaseTransport | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        max_concurrency: int = 32,
    ) -> None:
        self.resolve = resolve
        self.timeout = timeout
        self.limit = asyncio.Semaphore(max_concurrency)
        self._http = httpx2.AsyncClient(transport=transport, timeout=timeout)

    async def client(self, dashboard_url: str) -> DashboardClient:
        """A client for ``dashboard_url``; raises :class:`DashboardUnavailable` when it
        does not resolve yet."""
        base = await self.resolve(dashboard_url)
        return DashboardClient(base, http=self._http, timeout=self.timeout, limit=self.limit)

    async def close(self) -> None:
        await self._http.aclose()
