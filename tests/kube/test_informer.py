"""Informer and cache: list + watch, indexes, bookmarks, and no missed or duplicate
events when the watch breaks, the server restarts or the watch window expires."""

from __future__ import annotations

import asyncio
from pathlib import Path

import lightkube
import pytest

from lahar.kube import client as kclient
from lahar.kube import rest
from lahar.kube.cache import BY_NAMESPACE, BY_NODE_NAME, BY_OWNER_UID
from lahar.kube.factory import InformerFactory
from lahar.kube.informer import Backoff, Informer
from lahar.kube.resource import Resource, as_resource
from tests.kube.conftest import (
    CONFIGMAPS,
    PODS,
    Switch,
    create_cm,
    delete_cm,
    eventually,
    new_server,
    patch_cm,
    running,
)
from tests.kube.eventlog import EventLog

FAST = Backoff(initial=0.02, maximum=0.2)


async def server_keys(client: lightkube.AsyncClient, res: Resource) -> dict[str, str]:
    items = (await rest.request(client, "GET", res.path()))["items"]
    return {
        f"{o['metadata']['namespace']}/{o['metadata']['name']}": o["metadata"]["uid"] for o in items
    }


def cache_keys(inf: Informer) -> dict[str, str]:
    return {
        f"{o['metadata']['namespace']}/{o['metadata']['name']}": o["metadata"]["uid"]
        for o in inf.cache
    }


async def test_list_then_watch_fills_cache_and_calls_handlers(
    client: lightkube.AsyncClient,
) -> None:
    for i in range(7):
        await create_cm(client, f"c{i}")
    inf = Informer(client, CONFIGMAPS, page_size=3, backoff=FAST)
    log = EventLog(inf)
    async with running(inf):
        assert await inf.wait_for_sync(10)
        assert len(inf.cache) == 7 and inf.lists == 1
        assert sorted(log.of("ADD")) == [f"default/c{i}" for i in range(7)]
        await patch_cm(client, "c1", "1")
        await delete_cm(client, "c2")
        await create_cm(client, "c9", "kube-system")
        await eventually(lambda: "kube-system/c9" in log.live() and "default/c2" not in log.live())
        await eventually(lambda: log.of("UPDATE") == ["default/c1"])
        assert inf.cache.get("c1", "default")["data"] == {"v": "1"}
        assert inf.cache.get("c2", "default") is None
        assert "managedFields" not in inf.cache.get("c1", "default")["metadata"]
        assert inf.cache.get("c1", "default")["kind"] == "ConfigMap"
    log.check()


async def test_indexes_namespace_owner_node_and_custom(client: lightkube.AsyncClient) -> None:
    owner = await create_cm(client, "owner")
    uid = owner["metadata"]["uid"]
    ref = {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": uid, "controller": True}
    await create_cm(client, "kid1", ownerReferences=[ref], labels={"team": "a"})
    await create_cm(client, "kid2", ownerReferences=[ref], labels={"team": "b"})
    await create_cm(client, "other", "kube-system", labels={"team": "a"})
    for name, node in (("p1", "n1"), ("p2", "n1"), ("p3", "n2"), ("p4", None)):
        spec = {"containers": [{"name": "c", "image": "x"}]}
        if node:
            spec["nodeName"] = node
        await rest.request(
            client, "POST", PODS.path("default"), body={"metadata": {"name": name}, "spec": spec}
        )
    cms = Informer(client, CONFIGMAPS, backoff=FAST)
    pods = Informer(client, PODS, backoff=FAST)
    cms.add_indexer("team", lambda o: [(o["metadata"].get("labels") or {}).get("team", "")])
    async with running(cms, pods):
        assert await cms.wait_for_sync(10) and await pods.wait_for_sync(10)
        names = lambda objs: sorted(o["metadata"]["name"] for o in objs)  # noqa: E731
        assert names(cms.cache.by_index(BY_NAMESPACE, "kube-system")) == ["other"]
        assert names(cms.cache.by_index(BY_OWNER_UID, uid)) == ["kid1", "kid2"]
        assert names(cms.cache.by_index("team", "a")) == ["kid1", "other"]
        assert names(cms.cache.list("default", {"team": "b"})) == ["kid2"]
        assert names(pods.cache.by_index(BY_NODE_NAME, "n1")) == ["p1", "p2"]
        assert names(pods.cache.by_index(BY_NODE_NAME, "n2")) == ["p3"]
        # indexes follow changes
        await rest.request(
            client,
            "PATCH",
            CONFIGMAPS.path("default", "kid1"),
            body={"metadata": {"labels": {"team": "b"}}},
            content_type="application/merge-patch+json",
        )
        await rest.request(
            client, "DELETE", PODS.path("default", "p1"), params={"gracePeriodSeconds": "0"}
        )
        await eventually(lambda: names(cms.cache.by_index("team", "b")) == ["kid1", "kid2"])
        await eventually(lambda: names(pods.cache.by_index(BY_NODE_NAME, "n1")) == ["p2"])
        assert names(cms.cache.by_index("team", "a")) == ["other"]


async def test_late_handler_is_replayed_the_cache(client: lightkube.AsyncClient) -> None:
    for i in range(3):
        await create_cm(client, f"c{i}")
    inf = Informer(client, CONFIGMAPS, backoff=FAST)
    async with running(inf):
        await inf.wait_for_sync(10)
        late = EventLog(inf)
        assert sorted(late.of("ADD")) == ["default/c0", "default/c1", "default/c2"]


async def test_label_selector_informer(client: lightkube.AsyncClient) -> None:
    await create_cm(client, "yes", labels={"app": "x"})
    await create_cm(client, "no", labels={"app": "y"})
    inf = Informer(client, CONFIGMAPS, label_selector="app=x", backoff=FAST)
    async with running(inf):
        await inf.wait_for_sync(10)
        assert [o["metadata"]["name"] for o in inf.cache] == ["yes"]
        await create_cm(client, "yes2", labels={"app": "x"})
        await create_cm(client, "no2", labels={"app": "z"})
        await eventually(lambda: len(inf.cache) == 2)
        await asyncio.sleep(0.1)
        assert sorted(o["metadata"]["name"] for o in inf.cache) == ["yes", "yes2"]
        # leaving the selection is a delete for this informer, entering it an add
        for name, app in (("yes", "y"), ("no", "x")):
            await rest.request(
                client,
                "PATCH",
                CONFIGMAPS.path("default", name),
                body={"metadata": {"labels": {"app": app}}},
                content_type="application/merge-patch+json",
            )
        await eventually(lambda: sorted(o["metadata"]["name"] for o in inf.cache) == ["no", "yes2"])


async def test_bookmarks_keep_the_resource_version_fresh(client: lightkube.AsyncClient) -> None:
    await create_cm(client, "c")
    inf = Informer(client, CONFIGMAPS, backoff=FAST)
    async with running(inf):
        await inf.wait_for_sync(10)
        start = int(inf.resource_version or 0)
        # writes to another kind move the server's version; only bookmarks tell us
        for i in range(3):
            await rest.request(
                client,
                "POST",
                "/api/v1/namespaces/default/secrets",
                body={"metadata": {"name": f"s{i}"}},
            )
        latest = int(
            (await rest.request(client, "GET", CONFIGMAPS.path()))["metadata"]["resourceVersion"]
        )
        assert latest > start
        await eventually(lambda: int(inf.resource_version or 0) >= latest, timeout=5)
        assert inf.lists == 1


async def test_shared_factory_gives_one_informer_per_kind(client: lightkube.AsyncClient) -> None:
    await create_cm(client, "c")
    factory = InformerFactory(client, backoff=FAST)
    a = factory.informer(CONFIGMAPS)
    b = factory.informer(as_resource(lightkube.resources.core_v1.ConfigMap))
    assert a is b
    assert factory.informer(CONFIGMAPS, label_selector="x=y") is not a
    factory.start()
    try:
        late = factory.informer(PODS)  # asked for after start: starts at once
        assert await factory.wait_for_sync(10)
        assert late.has_synced and len(a.cache) == 1 and len(factory) == 3
    finally:
        await factory.stop()
    assert not a.running


async def test_custom_resources_by_group_version_plural(client: lightkube.AsyncClient) -> None:
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "x-kubernetes-preserve-unknown-fields": True,
                        }
                    },
                }
            ],
        },
    }
    await rest.request(
        client, "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", body=crd
    )
    widgets = Resource("example.com", "v1", "widgets", "Widget")

    async def served() -> bool:
        try:
            await rest.request(client, "GET", widgets.path())
            return True
        except rest.ApiError:
            return False

    await eventually(served)
    await rest.request(
        client,
        "POST",
        widgets.path("default"),
        body={
            "apiVersion": "example.com/v1",
            "kind": "Widget",
            "metadata": {"name": "w1"},
            "spec": {"size": 3},
        },
    )
    inf = Informer(client, widgets, backoff=FAST)
    async with running(inf):
        await inf.wait_for_sync(10)
        assert inf.cache.get("w1", "default")["spec"] == {"size": 3}
        await rest.request(client, "DELETE", widgets.path("default", "w1"))
        await eventually(lambda: len(inf.cache) == 0)


@pytest.mark.parametrize("window", [20000, 5], ids=["resume", "expired"])
async def test_server_restart_on_same_data_dir(tmp_path: Path, window: int) -> None:
    """Restart the in-process server while the informer runs; changes made while it
    was away reach the informer exactly once (by resuming, or by relist and diff)."""
    data = tmp_path / "data"
    server = new_server(data, watch_window=window)
    switch = Switch(server.app)
    c = kclient.in_process(switch, token=server.creds.token)
    inf = Informer(c, CONFIGMAPS, backoff=FAST)
    log = EventLog(inf)
    servers = [server]
    try:
        for i in range(6):
            await create_cm(c, f"c{i}")
        async with running(inf):
            await inf.wait_for_sync(10)
            await patch_cm(c, "c0", "1")
            await eventually(lambda: log.of("UPDATE") == ["default/c0"])
            await server.close()  # the watch ends; new requests fail
            await asyncio.sleep(0.3)
            server2 = new_server(data, watch_window=window)
            servers.append(server2)
            c2 = kclient.in_process(server2.app, token=server2.creds.token)
            try:
                await delete_cm(c2, "c1")
                await delete_cm(c2, "c2")
                for i in range(10):
                    await patch_cm(c2, "c3", str(i))
                await create_cm(c2, "new")
                switch.app = server2.app
                want = await server_keys(c2, CONFIGMAPS)
                await eventually(lambda: cache_keys(inf) == want)
                await asyncio.sleep(0.3)  # let any stray duplicate show up
                assert inf.cache.get("c3", "default")["data"] == {"v": "9"}
            finally:
                await c2.close()
        log.check()
        assert sorted(log.of("DELETE")) == ["default/c1", "default/c2"]
        assert log.live() == set(want)
        assert inf.lists == (2 if window == 5 else 1)
    finally:
        await c.close()
        for s in servers:
            await s.close()


async def test_expired_window_relist_reports_vanished_objects(tmp_path: Path) -> None:
    """The informer is away while more changes than the window happen: it gets 410,
    relists, and reports each vanished object deleted once, and nothing added twice."""
    server = new_server(tmp_path / "data", watch_window=20)
    c = kclient.in_process(server.app, token=server.creds.token)
    try:
        for i in range(10):
            await create_cm(c, f"c{i}")
        inf = Informer(c, CONFIGMAPS, backoff=FAST, page_size=4)
        log = EventLog(inf)
        async with running(inf):
            await inf.wait_for_sync(10)
        for i in range(0, 10, 2):
            await delete_cm(c, f"c{i}")
        for i in range(30):
            await patch_cm(c, "c1", str(i))
        await create_cm(c, "late")
        async with running(inf):
            want = await server_keys(c, CONFIGMAPS)
            await eventually(lambda: cache_keys(inf) == want)
            await asyncio.sleep(0.3)
        assert inf.lists == 2
        log.check()
        assert sorted(log.of("DELETE")) == [f"default/c{i}" for i in range(0, 10, 2)]
        assert log.of("UPDATE") == ["default/c1"]  # one diff, not thirty events
        assert log.live() == set(want)
    finally:
        await c.close()
        await server.close()


async def test_recreated_object_is_a_delete_and_an_add(tmp_path: Path) -> None:
    server = new_server(tmp_path / "data", watch_window=5)
    c = kclient.in_process(server.app, token=server.creds.token)
    try:
        await create_cm(c, "x")
        inf = Informer(c, CONFIGMAPS, backoff=FAST)
        log = EventLog(inf)
        async with running(inf):
            await inf.wait_for_sync(10)
        await delete_cm(c, "x")
        await create_cm(c, "x")
        for i in range(10):
            await create_cm(c, f"pad{i}")
        async with running(inf):
            await eventually(lambda: len(inf.cache) == 11)
        log.check()
        assert [k for k, key, _, _ in log.events if key == "default/x"] == ["ADD", "DELETE", "ADD"]
    finally:
        await c.close()
        await server.close()


async def test_watch_ended_by_the_server_resumes_without_duplicates(
    client: lightkube.AsyncClient,
) -> None:
    """timeoutSeconds=1: the server ends each watch; the informer watches again from
    its last version, without a relist and without replaying anything."""
    await create_cm(client, "a")
    inf = Informer(client, CONFIGMAPS, watch_timeout=1, backoff=FAST)
    log = EventLog(inf)
    async with running(inf):
        await inf.wait_for_sync(10)
        for i in range(5):
            await patch_cm(client, "a", str(i + 1))
            await create_cm(client, f"n{i}")
            await asyncio.sleep(0.5)
        await delete_cm(client, "n0")
        await eventually(lambda: len(inf.cache) == 5)
        await asyncio.sleep(0.3)
    assert inf.watches >= 3 and inf.lists == 1
    log.check()
    assert len(log.of("UPDATE")) == 5 and log.of("DELETE") == ["default/n0"]


async def test_resync_redelivers_the_cache(client: lightkube.AsyncClient) -> None:
    await create_cm(client, "a")
    await create_cm(client, "b")
    inf = Informer(client, CONFIGMAPS, backoff=FAST, resync_period=0.2)
    resynced: list[str] = []
    inf.add_handler(
        on_update=lambda old, new: resynced.append(new["metadata"]["name"]) if old is new else None
    )
    async with running(inf):
        await eventually(lambda: resynced.count("a") >= 2 and resynced.count("b") >= 2)
    assert inf.lists == 1
