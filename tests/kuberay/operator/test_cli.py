"""``lahar operator`` as a process against a real ``lahar apiserver`` process over
HTTPS: it reconciles, serves KubeRay's metrics, holds its Lease and stops cleanly
on SIGTERM. Both processes are stopped even when the test fails."""

from __future__ import annotations

import argparse
import shutil
import signal
import socket
from collections.abc import AsyncIterator
from pathlib import Path

import httpx2
import pytest

from lahar.cli.common import UsageError
from lahar.cli.operator import options_from
from lahar.kube import client as kclient
from lahar.kube import rest
from lahar.kuberay.operator import kinds
from tests.kube.procs import ApiServerProcess, spawn, stop
from tests.kuberay.operator.conftest import NS, cluster_body, eventually


def _args(**over: object) -> argparse.Namespace:
    base = {
        "batch_scheduler": None, "reconcile_concurrency": 4, "leader_elect": False,
        "leader_election_namespace": "kube-system", "health_port": 0,
        "dashboard_via_cluster_ip": False,
    }  # fmt: skip
    base.update(over)
    return argparse.Namespace(**base)


def test_options_from_flags_and_env() -> None:
    env = {"RAYJOB_STATUS_CHECK_TIMEOUT_SECONDS": "60", "CLUSTER_DOMAIN": "corp.local",
           "DELETE_RAYJOB_CR_AFTER_JOB_FINISHES": "TRUE"}  # fmt: skip
    opts = options_from(
        _args(batch_scheduler="volcano", reconcile_concurrency=8, health_port=-1), env
    )
    assert opts.volcano and opts.reconcile_concurrency == 8 and opts.health_port is None
    assert opts.status_check_timeout == 60 and opts.build.cluster_domain == "corp.local"
    assert opts.delete_rayjob_after_finish
    assert options_from(_args(), {}).reconcile_concurrency == 4
    with pytest.raises(UsageError):
        options_from(_args(reconcile_concurrency=0), {})


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
async def apiserver(tmp_dir: Path, template_dir: Path) -> AsyncIterator[ApiServerProcess]:
    shutil.copytree(template_dir, tmp_dir / "data")
    proc = ApiServerProcess(tmp_dir / "data")
    try:
        yield proc.start()
    finally:
        stop(proc.proc)


async def test_operator_process(apiserver: ApiServerProcess, tmp_dir: Path) -> None:
    port = _free_port()
    log = tmp_dir / "operator.log"
    args = ["-m", "lahar.cli.main", "operator", "--kubeconfig", str(apiserver.kubeconfig),
            "--health-port", str(port), "--leader-elect"]  # fmt: skip
    proc = spawn(args, log)
    client = kclient.from_kubeconfig(apiserver.kubeconfig)
    try:
        await rest.request(client, "POST", kinds.RAYCLUSTERS.path(NS), body=cluster_body())

        async def pods() -> bool:
            out = await rest.request(client, "GET", kinds.PODS.path(NS))
            return len(out["items"]) == 2

        await eventually(pods, timeout=30)
        async with httpx2.AsyncClient() as http:
            text = (await http.get(f"http://127.0.0.1:{port}/metrics")).text
            assert (await http.get(f"http://127.0.0.1:{port}/readyz")).status_code == 200
        assert 'kuberay_cluster_info{name="demo",namespace="default",owner_kind="None"} 1.0' in text
        assert "controller_runtime_reconcile_total" in text
        lease = await kinds.get(client, kinds.Resource("coordination.k8s.io", "v1", "leases", "Lease"),
                                "kube-system", "kuberay-operator")  # fmt: skip
        assert lease is not None
        stop(proc, signal.SIGTERM)
        assert proc.returncode == 0, log.read_text()
    finally:
        stop(proc)
        await client.close()
