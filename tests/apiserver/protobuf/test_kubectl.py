"""Real kubectl protobuf bodies decode to what kubectl would send as JSON.

kubectl's generator commands encode their objects as protobuf. Each case runs
the command against a recording fake API server, decodes the captured body
and compares it with the same command's ``--dry-run=client -o json`` output,
normalised by dropping what JSON shows but never carries meaning here
(``creationTimestamp: null``, ``resources: {}``, ``status: {}``).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from lahar.apiserver.protobuf import decode, is_protobuf
from tests.apiserver.protobuf import kubectl_fake

pytestmark = pytest.mark.skipif(
    not os.path.exists(kubectl_fake.KUBECTL), reason="kubectl is not installed"
)


@pytest.fixture(scope="module")
def fake(tmp_path_factory: pytest.TempPathFactory) -> Iterator[kubectl_fake.FakeAPIServer]:
    server = kubectl_fake.start(tmp_path_factory.mktemp("kubectl"))
    try:
        yield server
    finally:
        server.stop()


def normalise(value: Any) -> Any:
    """Drop nulls and empty objects/lists, recursively, as the decoder does."""
    if isinstance(value, dict):
        out = {k: normalise(v) for k, v in value.items()}
        return {k: v for k, v in out.items() if v is not None and v != {} and v != []}
    if isinstance(value, list):
        return [normalise(v) for v in value]
    return value


CASES: list[tuple[list[str], list[str]]] = [
    (["configmap", "c"], ["--from-literal=a=1", "--from-literal=b=2"]),
    (["secret", "generic", "s"], ["--from-literal=p=q", "--from-literal=empty="]),
    (["secret", "docker-registry", "reg"], ["--docker-username=u", "--docker-password=p"]),
    (["namespace", "n"], []),
    (["job", "j"], ["--image=busybox", "--", "echo", "hi"]),
    (["job", "plain"], ["--image=busybox"]),
    (["serviceaccount", "sa"], []),
    (["service", "clusterip", "svc"], ["--tcp=80:8080", "--tcp=443"]),
    (["service", "clusterip", "headless"], ["--clusterip=None"]),
    (["service", "nodeport", "np"], ["--tcp=80:8080", "--node-port=30080"]),
    (["service", "loadbalancer", "lb"], ["--tcp=5678:8080"]),
    (["service", "externalname", "ext"], ["--external-name=example.com"]),
    (["priorityclass", "pc"], ["--value=1000", "--description=x"]),
    (["priorityclass", "zero"], ["--value=0", "--global-default", "--preemption-policy=Never"]),
]


@pytest.mark.parametrize(("what", "flags"), CASES, ids=lambda c: "-".join(c) or "none")
def test_kubectl_create_body_matches_json(
    fake: kubectl_fake.FakeAPIServer, what: list[str], flags: list[str]
) -> None:
    # Flags go before any "--" so they are not taken for the job's command.
    split = flags.index("--") if "--" in flags else len(flags)
    options, command = flags[:split], flags[split:]

    created = fake.kubectl("create", *what, *options, *command)
    assert created.returncode == 0, created.stderr
    write = fake.last_write()
    assert write.method == "POST"
    assert is_protobuf(write.content_type), write.content_type
    assert write.body.startswith(b"k8s\x00")

    dry = fake.kubectl("create", *what, *options, "--dry-run=client", "-o", "json", *command)
    assert dry.returncode == 0, dry.stderr
    assert decode(write.body) == normalise(json.loads(dry.stdout))


def test_kubectl_configmap_from_binary_file(
    fake: kubectl_fake.FakeAPIServer, tmp_path: Path
) -> None:
    blob = tmp_path / "blob.bin"
    blob.write_bytes(bytes(range(256)))
    (tmp_path / "text.txt").write_text("héllo\n")
    args = ["configmap", "files", f"--from-file={blob}", f"--from-file={tmp_path / 'text.txt'}"]
    assert fake.kubectl("create", *args).returncode == 0
    decoded = decode(fake.last_write().body)
    dry = fake.kubectl("create", *args, "--dry-run=client", "-o", "json")
    assert decoded == normalise(json.loads(dry.stdout))
    assert decoded["data"] == {"text.txt": "héllo\n"}
    assert set(decoded["binaryData"]) == {"blob.bin"}


def test_kubectl_create_secret_values_are_base64(fake: kubectl_fake.FakeAPIServer) -> None:
    assert fake.kubectl("create", "secret", "generic", "b64", "--from-literal=k=v").returncode == 0
    decoded = decode(fake.last_write().body)
    assert decoded["data"] == {"k": "dg=="}
    assert "type" not in decoded  # kubectl leaves it to server-side defaulting
