"""The life of one pod on the local node: from bound to gone, as a kubelet lives it.

A :class:`PodWorker` is one asyncio task per pod. It prepares the pod's sandbox (its
directory, network namespace and address, /etc/hosts, volumes), runs the init
containers one after another, then the containers side by side, each under the pod's
restart policy with the kubelet's crash-loop back-off, and reports every change of
state as the pod's status. Probes drive each container's readiness (and liveness
restarts). When the pod is marked for deletion the containers get SIGTERM, the grace
period, then SIGKILL; the sandbox is removed and the deletion confirmed.

A worker that finds runs of an earlier agent (after a crash) adopts them instead of
starting the containers again; see ``runtime``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import shutil
import time
from pathlib import Path
from typing import Any

from lahar.kube import rest
from lahar.node.local import env as envmod
from lahar.node.local import runtime, sandbox, volumes
from lahar.node.local.context import NodeContext
from lahar.node.local.probing import start_probes
from lahar.node.local.status import (
    FAILED,
    PENDING,
    RUNNING,
    SUCCEEDED,
    ContainerState,
    PodState,
    pod_status,
)
from lahar.node.registration import MERGE, PODS

log = logging.getLogger("lahar.node.local")
Obj = dict[str, Any]

BACKOFF_START, BACKOFF_MAX = 10.0, 300.0
RETRY = 5.0  # a sandbox or config error is retried this often


class _Stop(Exception):
    """The pod is being deleted or the agent is stopping."""


def _spec(pod: Obj) -> Obj:
    return pod.get("spec") or {}


class PodWorker:
    def __init__(self, ctx: NodeContext, pod: Obj) -> None:
        md = pod["metadata"]
        self.ctx = ctx
        self.pod = pod
        self.key = f"{md['namespace']}/{md['name']}"
        self.uid: str = md["uid"]
        self.dir: Path = ctx.pod_dir(self.uid)
        spec = _spec(pod)
        self.state = PodState(self.uid, ctx.host_ip)
        self.state.init = [
            ContainerState(c["name"], c.get("image", "")) for c in spec.get("initContainers") or ()
        ]
        self.state.containers = [
            ContainerState(c["name"], c.get("image", "")) for c in spec["containers"]
        ]
        self.runs: dict[str, runtime.Run] = {}
        self.netns: str | None = None
        self.deleting = asyncio.Event()
        self.agent_stopping = False
        self.task: asyncio.Task[None] | None = None
        self._stop_waiter: asyncio.Task[Any] | None = None

    # -- the agent's side ----------------------------------------------------------------

    def start(self) -> None:
        self.task = asyncio.create_task(self.main(), name=f"pod {self.key}")

    def update(self, pod: Obj) -> None:
        self.pod = pod
        if pod["metadata"].get("deletionTimestamp"):
            self.deleting.set()

    async def stop_for_agent(self) -> None:
        """The agent is stopping: stop the containers (briefly) and keep the pod's record."""
        self.agent_stopping = True
        self.deleting.set()
        if self.task is not None:
            await asyncio.shield(self.task)

    def running_containers(self) -> dict[str, bool]:
        return {
            c.name: c.running_since is not None for c in self.state.init + self.state.containers
        }

    def restart_counts(self) -> dict[str, int]:
        return {c.name: c.restart_count for c in self.state.init + self.state.containers}

    # -- the life ---------------------------------------------------------------------

    async def main(self) -> None:
        try:
            phase = (self.pod.get("status") or {}).get("phase")
            if phase in (SUCCEEDED, FAILED):
                # It ran here before (this agent's or an earlier one's); only its logs are
                # left, until it is deleted.
                self.state.phase = phase
                await self.deleting.wait()
                raise _Stop
            adopted = self._adopt()
            await self._prepare()
            if not adopted:
                await self._run_init()
            self.state.initialized = True
            await self._run_containers()
        except _Stop:
            pass
        except Exception:
            log.exception("pod %s: the agent failed running it", self.key)
        await self._shutdown()
        if not self.deleting.is_set():
            # Finished: its logs stay until the pod is deleted (or the agent stops).
            await self.deleting.wait()
            await self._shutdown()

    def _adopt(self) -> bool:
        """Take over the runs an earlier agent left; True if the containers were running."""
        found = runtime.adopt(self.dir)
        if not found:
            return False
        mains = {c.name for c in self.state.containers}
        for cs in self.state.init:
            cs.terminate(0, time.time())
        adopted = False
        for name, run in found.items():
            if name not in mains:
                continue
            self.runs[name] = run
            cs = self._container_state(name)
            cs.restart_count = run.restart
            if runtime.shim_alive(run) or run.exit_status() is not None:
                adopted = True
        if adopted:
            log.info("pod %s: adopted the runs of an earlier agent", self.key)
        return adopted

    async def _prepare(self) -> None:
        self.state.start_time = time.time()
        sandbox.make_dirs(self.dir, self.ctx.keep_paths)
        pod_ip = self.ctx.host_ip
        if not _spec(self.pod).get("hostNetwork") and self.ctx.network is not None:
            endpoint = await self._attach()
            pod_ip, self.netns = endpoint.ip, f"/run/netns/{endpoint.netns_name}"
        self.state.pod_ip, self.state.sandbox_ready = pod_ip, True
        self.refresh_hosts()
        (self.dir / "etc" / "hostname").write_text(self._hostname() + "\n")
        while True:
            self._check_stop()
            try:
                self.volumes = volumes.prepare_volumes(
                    self.pod, self.dir, self.ctx.lookups, node_ip=self.ctx.host_ip, pod_ip=pod_ip
                )
                break
            except volumes.VolumeError as exc:
                for cs in self.state.init + self.state.containers:
                    cs.wait(exc.reason, exc.message)
                self._event("Warning", "FailedMount", exc.message)
                self.write_status()
                await self._sleep(RETRY)
        self.write_status()

    async def _attach(self) -> Any:
        """The pod's network endpoint; a failure is reported and retried, as a kubelet
        retries a sandbox it could not create."""
        assert self.ctx.network is not None
        while True:
            self._check_stop()
            try:
                return await asyncio.to_thread(self.ctx.network.attach, self.uid)
            except Exception as exc:
                message = f"failed to set up the pod network: {exc}"
                log.warning("pod %s: %s", self.key, message)
                for cs in self.state.init + self.state.containers:
                    cs.wait("ContainerCreating", message)
                self._event("Warning", "FailedCreatePodSandBox", message)
                self.write_status()
                await self._sleep(RETRY)

    def _hostname(self) -> str:
        return (_spec(self.pod).get("hostname") or self.pod["metadata"]["name"])[:63]

    def refresh_hosts(self) -> None:
        """Rewrite /etc/hosts in place (the containers bind-mount this very file)."""
        path = self.dir / "etc" / "hosts"
        if not self.state.pod_ip or not path.parent.is_dir():
            return
        try:
            sandbox.write_in_place(path, self.ctx.hosts_for(self.pod, self.state.pod_ip))
        except OSError as exc:
            log.warning("pod %s: cannot write /etc/hosts: %s", self.key, exc)

    async def _run_init(self) -> None:
        policy = _spec(self.pod).get("restartPolicy", "Always")
        for c, cs in zip(
            _spec(self.pod).get("initContainers") or (), self.state.init, strict=False
        ):
            while True:
                status = await self._run_once(c, cs)
                if status.exit_code == 0:
                    break
                if policy == "Never":
                    self._finish(FAILED)
                    raise _Stop
                await self._back_off(cs)

    async def _run_containers(self) -> None:
        containers = _spec(self.pod)["containers"]
        self.state.phase = RUNNING
        await asyncio.gather(
            *(
                self._supervise(c, cs)
                for c, cs in zip(containers, self.state.containers, strict=True)
            )
        )
        if self.deleting.is_set():
            raise _Stop
        ok = all(cs.exit_code == 0 for cs in self.state.containers)
        self._finish(SUCCEEDED if ok else FAILED)

    async def _supervise(self, c: Obj, cs: ContainerState) -> None:
        policy = _spec(self.pod).get("restartPolicy", "Always")
        while True:
            adopted = self.runs.get(cs.name)
            status = await self._run_once(c, cs, adopted=adopted)
            if self.deleting.is_set():
                return
            if policy == "Always" or (policy == "OnFailure" and status.exit_code != 0):
                try:
                    await self._back_off(cs)
                except _Stop:
                    return
                continue
            return

    async def _back_off(self, cs: ContainerState) -> None:
        ran = (cs.finished_at or 0) - (cs.started_at or 0)
        if ran > 600:
            cs.backoff = 0.0  # ran long enough: the next crash starts the back-off again
        delay = cs.backoff
        cs.backoff = min(BACKOFF_MAX, delay * 2 if delay else BACKOFF_START)
        if delay:
            cs.wait(
                "CrashLoopBackOff",
                f"back-off {int(delay)}s restarting failed container={cs.name} pod={self.pod['metadata']['name']}",
            )
            self.write_status()
            await self._sleep(delay)
        cs.restart_count += 1

    async def _run_once(
        self, c: Obj, cs: ContainerState, adopted: runtime.Run | None = None
    ) -> runtime.ExitStatus:
        """One run of a container, from start (or adoption) to its end."""
        self._check_stop()
        if adopted is not None and adopted.restart == cs.restart_count:
            self.runs.pop(cs.name, None)
            run = adopted
            if run.exit_status() is None and runtime.shim_alive(run):
                cs.run(run.started, self._container_id(cs))
                self.write_status()
        else:
            run = await self._start(c, cs)
            if run is None:
                return runtime.ExitStatus(cs.exit_code or 128, time.time(), cs.reason, cs.message)
        self.runs[cs.name] = run
        probes = start_probes(self, c, cs, run) if cs.running_since is not None else None
        try:
            status = await self._wait(run)
        finally:
            if probes is not None:
                await probes.stop()
        cs.terminate(status.exit_code, status.finished, status.reason, status.message)
        if status.reason == "StartError":
            self._event("Warning", "Failed", f"Error: {status.message}", c["name"])
        self.write_status()
        return status

    async def _start(self, c: Obj, cs: ContainerState) -> runtime.Run | None:
        argv = list(c.get("command") or ()) + list(c.get("args") or ())
        while True:
            self._check_stop()
            try:
                env = envmod.container_env(
                    self.pod,
                    c,
                    lookups=self.ctx.lookups,
                    base_env=self.ctx.base_env,
                    node_ip=self.ctx.host_ip,
                    pod_ip=self.state.pod_ip,
                    node_allocatable=self.ctx.allocatable,
                )
                mounts = volumes.container_mounts(self.pod, c, self.volumes, env=env)
                break
            except (envmod.ContainerConfigError, volumes.VolumeError) as exc:
                cs.wait(exc.reason, exc.message)
                self._event("Warning", "Failed", f"Error: {exc.message}", c["name"])
                self.write_status()
                await self._sleep(RETRY)
        if not c.get("command") and not c.get("args"):
            cs.terminate(
                128,
                time.time(),
                "StartError",
                "the local node runs no images: a container needs a command",
            )
            self._event("Warning", "Failed", f"Error: {cs.message}", c["name"])
            return None
        env = {**env, "HOSTNAME": self._hostname()}
        log_dir = self.dir / "logs" / cs.name
        log_dir.mkdir(parents=True, exist_ok=True)
        spec = {
            "argv": argv,
            "env": env,
            "cwd": c.get("workingDir") or env.get("HOME") or "/",
            "netns": self.netns,
            "hostname": self._hostname(),
            "pid_namespace": True,
            "overlay_dir": str(self.dir / "overlay" / cs.name),
            "created_file": str(self.dir / "run" / sandbox.CREATED),
            "log_file": str(log_dir / f"{cs.restart_count}.log"),
            "mounts": sandbox.shim_mounts(self.dir, mounts, self.ctx.keep_paths),
        }
        run = runtime.start(self.dir, cs.name, cs.restart_count, spec)
        if await runtime.wait_started(run):
            cs.run(run.started, self._container_id(cs))
            self._event("Normal", "Started", f"Started container {cs.name}", c["name"])
            self.write_status()
        return run

    async def _wait(self, run: runtime.Run) -> runtime.ExitStatus:
        exit_task = asyncio.create_task(runtime.wait_exit(run))
        stop_task = asyncio.create_task(self.deleting.wait())
        try:
            done, _ = await asyncio.wait(
                {exit_task, stop_task}, return_when=asyncio.FIRST_COMPLETED
            )
            if exit_task in done:
                return exit_task.result()
            return await runtime.stop(run, self._grace())
        finally:
            stop_task.cancel()
            exit_task.cancel()

    def _grace(self) -> float:
        md, spec = self.pod["metadata"], _spec(self.pod)
        grace = md.get("deletionGracePeriodSeconds")
        if grace is None:
            grace = spec.get("terminationGracePeriodSeconds", 30)
        if self.agent_stopping:
            grace = min(float(grace), self.ctx.stop_grace)
        return float(grace)

    def _container_id(self, cs: ContainerState) -> str:
        return f"lahar://{self.uid.replace('-', '')[:16]}-{cs.name}-{cs.restart_count}"

    def _container_state(self, name: str) -> ContainerState:
        for cs in self.state.init + self.state.containers:
            if cs.name == name:
                return cs
        raise KeyError(name)

    # -- the end -----------------------------------------------------------------------

    def _finish(self, phase: str) -> None:
        self.state.phase = phase
        self.write_status()

    async def _shutdown(self) -> None:
        """Stop what still runs; release the sandbox; confirm a deletion."""
        await asyncio.gather(
            *(
                runtime.stop(run, self._grace())
                for run in self.runs.values()
                if runtime.shim_alive(run)
            ),
            return_exceptions=True,
        )
        runtime.kill_everything(self.dir)
        if self.ctx.network is not None and not _spec(self.pod).get("hostNetwork"):
            await asyncio.to_thread(self.ctx.network.detach, self.uid)
        if self.agent_stopping:
            return
        if not self.deleting.is_set():
            return  # finished: the logs stay until the pod is deleted
        sandbox.remove_created_mountpoints(self.dir, self.ctx.paths_in_use(self.uid))
        shutil.rmtree(self.dir, ignore_errors=True)
        await self._confirm_deletion()

    async def _confirm_deletion(self) -> None:
        ns, name = self.key.split("/", 1)
        if self.state.phase not in (SUCCEEDED, FAILED):
            for cs in self.state.containers:
                if cs.running_since is not None:
                    cs.terminate(143, time.time())
            self.write_status()
            await self.ctx.writer.wait_idle()
        with contextlib.suppress(rest.ApiError):
            await rest.request(
                self.ctx.client,
                "DELETE",
                PODS.path(ns, name),
                body={"gracePeriodSeconds": 0, "preconditions": {"uid": self.uid}},
            )

    # -- helpers ------------------------------------------------------------------------

    def _check_stop(self) -> None:
        if self.deleting.is_set():
            raise _Stop

    async def _sleep(self, seconds: float) -> None:
        with contextlib.suppress(TimeoutError):  # not wait_for: it can drop a cancel (3.11)
            async with asyncio.timeout(seconds):
                await self.deleting.wait()
        self._check_stop()

    def _event(self, type_: str, reason: str, message: str, container: str | None = None) -> None:
        self.ctx.events.event(self.pod, type_, reason, message)

    def write_status(self) -> None:
        ctx, key, uid, state = self.ctx, self.key, self.uid, self.state
        ns, name = key.split("/", 1)

        async def write() -> None:
            pod = ctx.pods.get_by_key(key) or self.pod
            if pod["metadata"].get("uid") != uid:
                return
            await rest.request(
                ctx.client,
                "PATCH",
                PODS.path(ns, name, "status"),
                body=pod_status(pod, state),
                content_type=MERGE,
            )

        ctx.writer.submit(key, write)


__all__ = ["FAILED", "PENDING", "RUNNING", "SUCCEEDED", "PodWorker"]
