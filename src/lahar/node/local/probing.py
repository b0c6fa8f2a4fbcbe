"""Probes of a running container, wired to its state: the kubelet's prober manager.

``probes`` knows how to check and when; this module connects one container's probes to
the pod worker: exec probes run inside the container's namespaces (``nsenter`` into its
first process, with the container's environment), readiness sets the container's
``ready`` flag, a failed startup or liveness probe restarts the container (SIGTERM, the
grace period, SIGKILL), and every change is reported as the pod's status. A container
without a readiness probe is ready as soon as it runs, as in Kubernetes.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from lahar.node.local.pods import PodWorker
    from lahar.node.local.runtime import Run
    from lahar.node.local.status import ContainerState

Obj = dict[str, Any]


class NsenterExec:
    """Runs a command inside a container's namespaces, as ``kubectl exec`` would."""

    def __init__(self, pid: int, env: dict[str, str], cwd: str | None = None) -> None:
        self.pid, self.env, self.cwd = pid, env, cwd

    def argv(self, command: list[str]) -> list[str]:
        ns = ["--net", "--mount", "--uts", "--pid"]
        wd = [f"--wd={self.cwd}"] if self.cwd else []
        return ["nsenter", f"--target={self.pid}", *ns, *wd, "--", *command]

    async def run(self, argv: list[str], timeout: float) -> tuple[int, bytes]:
        proc = await asyncio.create_subprocess_exec(
            *self.argv(argv),
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            env=self.env,
            start_new_session=True,
        )
        try:
            out, _ = await asyncio.wait_for(proc.communicate(), timeout)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            await proc.wait()
            raise
        return proc.returncode or 0, out


class _Wired:
    def __init__(self, probes: Any) -> None:
        self.probes = probes

    async def stop(self) -> None:
        if self.probes is not None:
            await self.probes.stop()


def start_probes(worker: PodWorker, container: Obj, cs: ContainerState, run: Run) -> _Wired:
    """Start the probes of a container that has just started running."""
    kinds = ("startupProbe", "livenessProbe", "readinessProbe")
    if not any(container.get(k) for k in kinds):
        cs.ready = True
        worker.write_status()
        return _Wired(None)
    if not container.get("readinessProbe"):
        cs.ready = not container.get("startupProbe")
    if container.get("startupProbe"):
        cs.started = False
    spec = _spec(run)
    runner = NsenterExec(run.pid, spec.get("env") or {}, spec.get("cwd"))

    def on_result(kind: str, ok: bool, message: str) -> None:
        if kind == "readiness":
            cs.ready = ok
            if not ok and message:
                worker.ctx.events.event(
                    worker.pod, "Warning", "Unhealthy", f"Readiness probe failed: {message}"
                )
        elif kind == "startup":
            cs.started = ok
            if ok and not container.get("readinessProbe"):
                cs.ready = True
        worker.write_status()

    def on_failure(kind: str, message: str) -> None:
        worker.ctx.events.event(
            worker.pod, "Warning", "Unhealthy", f"{kind.capitalize()} probe failed: {message}"
        )
        worker.ctx.events.event(
            worker.pod,
            "Normal",
            "Killing",
            f"Container {cs.name} failed {kind} probe, will be restarted",
        )
        asyncio.get_running_loop().create_task(_restart(worker, run))

    from lahar.node.local.probes import ContainerProbes

    probes = ContainerProbes(
        container,
        pod_ip=worker.state.pod_ip,
        exec_runner=runner,
        on_result=on_result,
        on_failure=on_failure,
    )
    probes.start()
    return _Wired(probes)


async def _restart(worker: PodWorker, run: Run) -> None:
    """A failed liveness (or startup) probe: stop the container; its supervisor restarts it."""
    from lahar.node.local import runtime

    run.signal(signal.SIGTERM)
    grace = float((worker.pod.get("spec") or {}).get("terminationGracePeriodSeconds", 30))
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(runtime.wait_exit(run), grace)
        return
    run.signal(signal.SIGKILL)


def _spec(run: Run) -> Obj:
    import json

    try:
        return dict(json.loads(run.spec_file.read_text()))
    except (OSError, ValueError):
        return {}
