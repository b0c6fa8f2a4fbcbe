"""The client's wire (lahar.kube.wire): aiohttp over HTTPS to a real ``lahar apiserver``
process, and the direct call into an in-process app; and the httpx path a kubeconfig
with an exec credential plugin falls back to."""

from __future__ import annotations

import asyncio
import contextlib
import json
import stat
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lahar.kube import client as kclient
from lahar.kube import rest, wire
from tests.kube.conftest import CONFIGMAPS
from tests.kube.procs import ApiServerProcess

CM_PATH = CONFIGMAPS.path("default")


@pytest.fixture(scope="module")
def apiserver(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ApiServerProcess]:
    srv = ApiServerProcess(tmp_path_factory.mktemp("wire") / "api")
    try:
        yield srv.start()
    finally:
        srv.stop()


@pytest.fixture
async def net(apiserver: ApiServerProcess) -> AsyncIterator[Any]:
    c = kclient.from_kubeconfig(apiserver.kubeconfig)
    try:
        yield c
    finally:
        await c.close()


def kubeconfig_with(apiserver: ApiServerProcess, tmp: Path, user: dict[str, Any]) -> Path:
    """The server's kubeconfig with its user's credentials replaced by ``user``."""
    cfg = yaml.safe_load(apiserver.kubeconfig.read_text())
    cfg["users"][0]["user"] = user
    path = tmp / "kubeconfig"
    path.write_text(yaml.safe_dump(cfg))
    return path


def token_of(apiserver: ApiServerProcess) -> str:
    return str(yaml.safe_load(apiserver.kubeconfig.read_text())["users"][0]["user"]["token"])


async def test_kubeconfig_client_sends_over_the_wire(net: Any) -> None:
    assert isinstance(net.wire, wire.NetWire)
    body = {"metadata": {"name": "w1", "labels": {"tier": "a-b"}}, "data": {"k": "v"}}
    created = await rest.request(net, "POST", CM_PATH, body=body)
    assert created["metadata"]["uid"]
    patched = await rest.request(
        net,
        "PATCH",
        f"{CM_PATH}/w1",
        body={"data": {"k": "v2"}},
        content_type="application/merge-patch+json",
    )
    assert patched["data"] == {"k": "v2"}
    with pytest.raises(rest.ApiError) as err:
        await rest.request(net, "GET", f"{CM_PATH}/absent")
    assert rest.status_code(err.value) == 404
    assert err.value.status.reason == "NotFound"
    assert 'configmaps "absent" not found' in err.value.status.message


async def test_the_wire_streams_a_watch(net: Any) -> None:
    listed = await rest.request(net, "GET", CM_PATH)
    rv = listed["metadata"]["resourceVersion"]
    seen: list[tuple[str, str]] = []

    async def watch() -> None:
        async for event in rest.watch_events(
            net, CM_PATH, resource_version=rv, timeout_seconds=30, bookmarks=False
        ):
            seen.append((event["type"], event["object"]["metadata"]["name"]))
            if len(seen) == 3:
                return

    task = asyncio.create_task(watch())
    await rest.request(net, "POST", CM_PATH, body={"metadata": {"name": "s1"}})
    await rest.request(net, "POST", CM_PATH, body={"metadata": {"name": "s2"}})
    await rest.request(net, "DELETE", f"{CM_PATH}/s1")
    await asyncio.wait_for(task, 10)
    assert seen == [("ADDED", "s1"), ("ADDED", "s2"), ("DELETED", "s1")]


async def test_a_refused_watch_is_an_api_error(net: Any) -> None:
    with pytest.raises(rest.ApiError) as err:
        async for _ in rest.watch_events(
            net, CM_PATH, resource_version="1", params={"labelSelector": "a in (("}
        ):
            pass
    assert rest.status_code(err.value) == 400


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(value=st.text(alphabet="ab -_.", min_size=1, max_size=12))
async def test_query_parameters_reach_the_server_intact(net: Any, value: str) -> None:
    """Selectors are encoded once and decoded to the same text: the server selects
    by exactly the label value the client asked for."""
    value = value.strip(" -_.") or "a"
    value = value.replace(" ", "")  # a label value has no spaces
    name = f"q-{abs(hash(value)) % 10**8}"
    with contextlib.suppress(rest.ApiError):
        await rest.request(
            net, "POST", CM_PATH, body={"metadata": {"name": name, "labels": {"q": value}}}
        )
    got = await rest.request(
        net, "GET", CM_PATH, params={"labelSelector": f"q in ({value}, zz-none)"}
    )
    assert {o["metadata"]["labels"]["q"] for o in got["items"]} == {value}


async def test_wrong_token_is_401_and_token_file_is_reread(
    apiserver: ApiServerProcess, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(wire, "TOKEN_REREAD_SECONDS", 0.0)
    token_file = tmp_path / "token"
    token_file.write_text("not-the-token\n")
    c = kclient.from_kubeconfig(
        kubeconfig_with(apiserver, tmp_path, {"tokenFile": str(token_file)})
    )
    try:
        with pytest.raises(rest.ApiError) as err:
            await rest.request(c, "GET", CM_PATH)
        assert rest.status_code(err.value) == 401
        token_file.write_text(token_of(apiserver) + "\n")  # rotated
        assert (await rest.request(c, "GET", CM_PATH))["kind"] == "ConfigMapList"
    finally:
        await c.close()


async def test_exec_credentials_go_through_lightkube(
    apiserver: ApiServerProcess, tmp_path: Path
) -> None:
    """An exec plugin gets no wire: lightkube's httpx client runs the plugin."""
    plugin = tmp_path / "cred.sh"
    status = {"token": token_of(apiserver)}
    cred = {"apiVersion": "client.authentication.k8s.io/v1beta1", "kind": "ExecCredential"}
    plugin.write_text(f"#!/bin/sh\necho '{json.dumps({**cred, 'status': status})}'\n")
    plugin.chmod(plugin.stat().st_mode | stat.S_IXUSR)
    user = {"exec": {"apiVersion": cred["apiVersion"], "command": str(plugin)}}
    c = kclient.from_kubeconfig(kubeconfig_with(apiserver, tmp_path, user))
    try:
        assert c.wire is None
        assert (await rest.request(c, "GET", CM_PATH))["kind"] == "ConfigMapList"
    finally:
        await c.close()


async def test_no_server_is_a_wire_error(tmp_path: Path) -> None:
    srv = ApiServerProcess(tmp_path / "gone").start()
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(srv.kubeconfig.read_text())
    srv.stop()
    c = kclient.from_kubeconfig(kubeconfig, timeout=5)
    try:
        with pytest.raises(rest.WireError) as err:
            await rest.request(c, "GET", CM_PATH)
        assert isinstance(err.value, ConnectionError)
        assert "GET /api/v1/namespaces/default/configmaps" in str(err.value)
    finally:
        await c.close()


# -- in-process --------------------------------------------------------------------------


async def test_app_wire_calls_the_app(client: Any) -> None:
    assert isinstance(client.wire, wire.AppWire)
    await rest.request(client, "POST", CM_PATH, body={"metadata": {"name": "inproc"}})
    got = await rest.request(
        client, "GET", CM_PATH, params={"fieldSelector": "metadata.name=inproc"}
    )
    assert [o["metadata"]["name"] for o in got["items"]] == ["inproc"]
    with pytest.raises(rest.ApiError) as err:
        await rest.request(client, "POST", CM_PATH, body={"metadata": {"name": "inproc"}})
    assert rest.status_code(err.value) == 409


async def test_app_wire_stream_surfaces_a_crash() -> None:
    async def app(scope: Any, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"{}\n", "more_body": True})
        raise RuntimeError("boom")

    w = wire.AppWire(app)
    chunks: list[bytes] = []
    with pytest.raises(wire.WireError, match="boom"):
        async with w.stream("GET", "/x?watch=true", None) as stream:
            assert stream.status == 200
            async for chunk in stream.chunks:
                chunks.append(chunk)
    assert chunks == [b"{}\n"]


async def test_app_wire_without_a_response_is_a_wire_error() -> None:
    async def app(scope: Any, receive: Any, send: Any) -> None:
        return None

    with pytest.raises(wire.WireError, match="no response"):
        await wire.AppWire(app).call("GET", "/x")
