"""Bad input gets a Status with the right code and never a 500; the store stays consistent.

Runs the real ASGI app in-process (no sockets) so hypothesis can send many bodies quickly;
the e2e suite covers the same paths over HTTPS with kubectl.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import httpx2
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lahar.apiserver.server import APIServer
from lahar.embedded import install_crds
from lahar.kube.transport import StreamingASGITransport


class Harness:
    def __init__(self, tmp: Path) -> None:
        self.loop = asyncio.new_event_loop()
        self.server = APIServer(tmp, port=0)
        install_crds(self.server.state)
        self.client = httpx2.AsyncClient(
            transport=StreamingASGITransport(self.server.app),
            base_url="http://lahar.local",
            headers={"Authorization": f"Bearer {self.server.creds.token}"},
        )

    def request(self, method: str, path: str, **kw: object) -> httpx2.Response:
        return self.loop.run_until_complete(self.client.request(method, path, **kw))  # type: ignore[arg-type]

    def close(self) -> None:
        self.loop.run_until_complete(self.client.aclose())
        self.loop.run_until_complete(self.server.close())
        self.loop.close()


@pytest.fixture(scope="module")
def h(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Harness]:
    harness = Harness(tmp_path_factory.mktemp("bad-input"))
    try:
        yield harness
    finally:
        harness.close()


PODS = "/api/v1/namespaces/default/pods"


def _status(resp: httpx2.Response, code: int) -> dict:
    assert resp.status_code == code, resp.text
    body = resp.json()
    assert body["kind"] == "Status" and body["code"] == code
    return body


def test_malformed_json_and_yaml(h: Harness) -> None:
    r = h.request(
        "POST", PODS, content=b'{"metadata": ', headers={"Content-Type": "application/json"}
    )
    assert "error decoding" in _status(r, 400)["message"]
    r = h.request(
        "POST", PODS, content=b"metadata: [unclosed", headers={"Content-Type": "application/yaml"}
    )
    _status(r, 400)
    r = h.request("POST", PODS, content=b"[1, 2]", headers={"Content-Type": "application/json"})
    _status(r, 400)


def test_wrong_kind_and_version(h: Harness) -> None:
    body = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "x"}}
    _status(h.request("POST", PODS, json=body), 400)
    body = {"apiVersion": "apps/v1", "kind": "Pod", "metadata": {"name": "x"}}
    _status(h.request("POST", PODS, json=body), 400)
    _status(h.request("GET", "/apis/nope.io/v1/things"), 404)


def test_oversized_body(h: Harness) -> None:
    big = {"metadata": {"name": "big"}, "data": {"k": "x" * (4 * 1024 * 1024)}}
    r = h.request("POST", "/api/v1/namespaces/default/configmaps", json=big)
    _status(r, 413)
    assert h.request("GET", "/api/v1/namespaces/default/configmaps/big").status_code == 404


def test_invalid_names_and_schema_violations(h: Harness) -> None:
    body = {
        "metadata": {"name": "Not_Valid"},
        "spec": {"containers": [{"name": "c", "image": "x"}]},
    }
    status = _status(h.request("POST", PODS, json=body), 422)
    assert status["details"]["causes"][0]["field"] == "metadata.name"
    rj = {
        "apiVersion": "ray.io/v1",
        "kind": "RayJob",
        "metadata": {"name": "j"},
        "spec": {"entrypoint": "x", "backoffLimit": "three"},
    }
    status = _status(h.request("POST", "/apis/ray.io/v1/namespaces/default/rayjobs", json=rj), 422)
    assert any(c["field"] == "spec.backoffLimit" for c in status["details"]["causes"])
    strict = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "s"}, "bogus": 1}
    r = h.request(
        "POST", "/api/v1/namespaces/default/configmaps?fieldValidation=Strict", json=strict
    )
    assert 'unknown field "bogus"' in _status(r, 400)["message"]
    r = h.request("POST", "/api/v1/namespaces/default/configmaps?fieldValidation=Warn", json=strict)
    assert r.status_code == 201 and "unknown field" in r.headers["warning"]


def test_smp_on_crd_is_415_and_bad_patch_types(h: Harness) -> None:
    q = {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": "q1"}}
    assert (
        h.request("POST", "/apis/scheduling.volcano.sh/v1beta1/queues", json=q).status_code == 201
    )
    r = h.request(
        "PATCH",
        "/apis/scheduling.volcano.sh/v1beta1/queues/q1",
        content=b"{}",
        headers={"Content-Type": "application/strategic-merge-patch+json"},
    )
    _status(r, 415)
    r = h.request(
        "PATCH",
        "/apis/scheduling.volcano.sh/v1beta1/queues/q1",
        content=b"{}",
        headers={"Content-Type": "text/plain"},
    )
    _status(r, 415)
    r = h.request(
        "PATCH",
        "/apis/scheduling.volcano.sh/v1beta1/queues/q1",
        content=b'[{"op": "replace", "path": "/spec/nothing/here", "value": 1}]',
        headers={"Content-Type": "application/json-patch+json"},
    )
    _status(r, 422)


def test_bad_query_parameters(h: Harness) -> None:
    _status(h.request("GET", f"{PODS}?labelSelector=a%20in%20(b"), 400)
    _status(h.request("GET", f"{PODS}?fieldSelector=spec.bogus=1"), 400)
    _status(h.request("GET", f"{PODS}?limit=-1"), 400)
    _status(h.request("GET", f"{PODS}?watch=true&resourceVersion=abc"), 400)
    _status(h.request("POST", f"{PODS}?dryRun=Sometimes", json={"metadata": {"name": "d"}}), 400)


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)
_paths = st.sampled_from(
    [
        PODS,
        "/api/v1/namespaces/default/configmaps",
        "/api/v1/namespaces",
        "/api/v1/nodes",
        "/apis/batch/v1/namespaces/default/jobs",
        "/apis/ray.io/v1/namespaces/default/rayclusters",
        "/apis/scheduling.volcano.sh/v1beta1/queues",
        "/apis/batch.volcano.sh/v1alpha1/namespaces/default/jobs",
    ]
)


@settings(max_examples=150, deadline=None)
@given(path=_paths, body=_json, name=st.text(max_size=12))
def test_fuzzed_bodies_never_500(h: Harness, path: str, body: object, name: str) -> None:
    if isinstance(body, dict):
        body.setdefault("metadata", {"name": name})
    before = h.server.state.store.current_rv()
    r = h.request(
        "POST",
        path,
        content=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )
    assert r.status_code < 500, r.text
    if r.status_code >= 400:
        assert r.json()["kind"] == "Status"
        assert h.server.state.store.current_rv() == before  # a refused write stores nothing
    for method in ("PUT", "PATCH"):
        target = f"{path}/{quote(name, safe='') or 'x'}"
        r = h.request(
            method,
            target,
            content=json.dumps(body).encode(),
            headers={
                "Content-Type": "application/merge-patch+json"
                if method == "PATCH"
                else "application/json"
            },
        )
        assert r.status_code < 500, r.text


def test_unauthorized_is_401_status(h: Harness) -> None:
    r = asyncio.new_event_loop().run_until_complete(_anon(h))
    _status(r, 401)


async def _anon(h: Harness) -> httpx2.Response:
    async with httpx2.AsyncClient(
        transport=StreamingASGITransport(h.server.app), base_url="http://x"
    ) as c:
        return await c.get(PODS)
