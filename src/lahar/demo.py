"""``lahar up --demo``: apply a RayJob manifest and follow it to its end, out loud.

This is the first thing a new user sees: the manifest (KubeRay's ``ray-job.sample.yaml``,
or lahar's own small demo) is applied through the API like ``kubectl apply
--server-side`` would, the RayJob's progress is printed as it moves (cluster, pods,
submission, job status), and when it ends the submitter's log (what ``kubectl logs``
shows) is printed, followed by how to use kubectl against the cluster. The cluster keeps
running afterwards.
"""

from __future__ import annotations

import asyncio
import time
from importlib import resources
from pathlib import Path
from typing import Any

import lightkube
import yaml

from lahar.kube import rest

Obj = dict[str, Any]

APPLY = "application/apply-patch+yaml"
TERMINAL = ("Complete", "Failed")
_IRREGULAR = {"Endpoints": "endpoints"}


def default_manifest() -> Path:
    return Path(str(resources.files("lahar") / "manifests" / "demo" / "rayjob.yaml"))


def _path(obj: Obj) -> str:
    api, kind = obj["apiVersion"], obj["kind"]
    plural = _IRREGULAR.get(kind, kind.lower() + "s")
    ns = obj["metadata"].get("namespace") or "default"
    prefix = f"/api/{api}" if "/" not in api else f"/apis/{api}"
    return f"{prefix}/namespaces/{ns}/{plural}/{obj['metadata']['name']}"


def _say(text: str, started: float) -> None:
    print(f"[demo {time.monotonic() - started:5.1f}s] {text}", flush=True)


async def apply_all(client: lightkube.AsyncClient, docs: list[Obj]) -> None:
    for doc in docs:
        await rest.request(
            client,
            "PATCH",
            _path(doc),
            params={"fieldManager": "lahar-demo", "force": "true"},
            body=doc,
            content_type=APPLY,
        )


async def follow(client: lightkube.AsyncClient, job: Obj, started: float, timeout: float) -> Obj:
    """Poll the RayJob and print each change of its state until it ends."""
    path = _path(job)
    seen: tuple[str, ...] = ()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            current = await rest.request(client, "GET", path)
        except rest.ApiError:
            await asyncio.sleep(1)
            continue
        st = current.get("status") or {}
        state = (
            st.get("jobDeploymentStatus", ""),
            st.get("jobStatus", ""),
            st.get("rayClusterName", ""),
        )
        if state != seen and any(state):
            seen = state
            parts = [f"deployment={state[0] or '-'}", f"job={state[1] or '-'}"]
            if state[2]:
                parts.append(f"cluster={state[2]}")
            _say(f"RayJob {job['metadata']['name']}: " + " ".join(parts), started)
        if state[0] in TERMINAL:
            return current
        await asyncio.sleep(0.5)
    raise TimeoutError(f"the RayJob did not finish within {timeout:.0f} s")


async def submitter_logs(client: lightkube.AsyncClient, job: Obj) -> str:
    ns = job["metadata"].get("namespace") or "default"
    pods = await rest.request(
        client,
        "GET",
        f"/api/v1/namespaces/{ns}/pods",
        params={"labelSelector": f"job-name={job['metadata']['name']}"},
    )
    out = []
    for pod in pods.get("items", []):
        name = pod["metadata"]["name"]
        try:
            resp = await rest.http_client(client).get(f"/api/v1/namespaces/{ns}/pods/{name}/log")
            out.append(resp.text)
        except Exception as exc:  # logs are a courtesy here
            out.append(f"(no logs for {name}: {exc})")
    return "\n".join(out)


async def run_demo(
    client: lightkube.AsyncClient,
    manifest: Path | str,
    *,
    kubeconfig: Path | str | None = None,
    timeout: float = 900.0,
) -> None:
    started = time.monotonic()
    docs = [d for d in yaml.safe_load_all(Path(manifest).read_text()) if d]
    jobs = [d for d in docs if d.get("kind") == "RayJob"]
    await apply_all(client, docs)
    _say(f"applied {manifest} ({len(docs)} objects)", started)
    for job in jobs:
        try:
            final = await follow(client, job, started, timeout)
        except TimeoutError as exc:
            _say(str(exc), started)
            continue
        st = final.get("status") or {}
        _say(
            f"RayJob {job['metadata']['name']} ended: {st.get('jobDeploymentStatus')} / "
            f"{st.get('jobStatus')} {st.get('message') or ''}".rstrip(),
            started,
        )
        logs = await submitter_logs(client, job)
        print(f"----- kubectl logs -l job-name={job['metadata']['name']} -----", flush=True)
        print(logs.rstrip(), flush=True)
        print("-----", flush=True)
    if kubeconfig:
        print(
            "The cluster keeps running. Try:\n"
            f"  export KUBECONFIG={kubeconfig}\n"
            "  kubectl get rayjobs,rayclusters,podgroups,pods\n"
            "  kubectl logs -l job-name=<rayjob name>\n"
            "Stop with Ctrl-C.",
            flush=True,
        )
