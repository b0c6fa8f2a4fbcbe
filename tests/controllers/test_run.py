"""``run_builtin_controllers``: every controller on one manager, acting only while it
holds the Lease ``kube-system/lahar-controller-manager``, on a caller's informers."""

from __future__ import annotations

import asyncio
import contextlib

import lightkube
import pytest

from lahar.controllers import ControllerOptions, run_builtin_controllers
from lahar.controllers.common import LEASES
from lahar.controllers.run import build_manager
from lahar.kube import rest
from lahar.kube.factory import InformerFactory
from tests.controllers.conftest import create_job, eventually, job_pods


async def test_runs_all_controllers_under_the_lease(client: lightkube.AsyncClient) -> None:
    informers = InformerFactory(client)
    options = ControllerOptions.fast(leader_elect=True)
    task = asyncio.create_task(
        run_builtin_controllers(client, informers=informers, options=options)
    )
    try:
        lease = await eventually(lambda: _lease(client), timeout=10)
        assert lease["spec"]["holderIdentity"]
        await create_job(client, "lead")
        await eventually(lambda: job_pods(client, "lead"))
        assert len(informers) >= 4  # jobs, pods, nodes, leases: shared with the caller
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        await informers.stop()


def test_unknown_controller_is_refused(client: lightkube.AsyncClient) -> None:
    with pytest.raises(ValueError, match="unknown controllers: nope"):
        build_manager(client, options=ControllerOptions(controllers=("job", "nope")))


async def _lease(client: lightkube.AsyncClient) -> dict | None:  # type: ignore[type-arg]
    try:
        return await rest.request(
            client, "GET", LEASES.path("kube-system", "lahar-controller-manager")
        )
    except rest.ApiError:
        return None
