"""A pod's volumes are written under its directory the way the kubelet lays them out,
updates swap in atomically, hostPath types are checked, and each container's mounts
come out with subPath resolved and read-only where Kubernetes forces it. Everything
here happens under tmp_path."""

from __future__ import annotations

import base64
import os
import socket
import stat
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lahar.node.local.env import Lookups
from lahar.node.local.volumes import (
    Mount,
    PreparedVolume,
    VolumeError,
    check_relative_path,
    container_mounts,
    prepare_volumes,
    write_atomically,
)


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


class Store:
    def __init__(self) -> None:
        self.configmaps: dict[tuple[str, str], dict[str, Any]] = {
            ("default", "cfg"): {
                "metadata": {"name": "cfg"},
                "data": {"app.yaml": "a: 1\n", "mode": "fast"},
                "binaryData": {"blob.bin": b64(b"\x00\x01\xff")},
            }
        }
        self.secrets: dict[tuple[str, str], dict[str, Any]] = {
            ("default", "creds"): {
                "metadata": {"name": "creds"},
                "data": {"password": b64(b"s3cret"), "token": b64(b"old")},
                "stringData": {"token": "new"},
            }
        }
        self.lookups = Lookups(
            configmap=lambda ns, name: self.configmaps.get((ns, name)),
            secret=lambda ns, name: self.secrets.get((ns, name)),
        )


@pytest.fixture
def store() -> Store:
    return Store()


def make_pod(
    volumes: list[dict[str, Any]], mounts: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    return {
        "metadata": {
            "name": "head-0",
            "namespace": "default",
            "uid": "u-1",
            "labels": {"b": "2", "a": "1"},
            "annotations": {"note": "hi"},
        },
        "spec": {
            "containers": [
                {
                    "name": "main",
                    "resources": {"limits": {"cpu": "2", "memory": "1Gi"}},
                    "volumeMounts": mounts or [],
                }
            ],
            "volumes": volumes,
        },
    }


def prepare(pod: dict[str, Any], pod_dir: Path, store: Store) -> dict[str, PreparedVolume]:
    return prepare_volumes(pod, pod_dir, store.lookups, node_ip="192.168.1.10", pod_ip="10.0.0.5")


def mode_of(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_configmap_volume_holds_every_key(tmp_path: Path, store: Store) -> None:
    prepared = prepare(
        make_pod([{"name": "config", "configMap": {"name": "cfg"}}]), tmp_path, store
    )
    vol = prepared["config"]
    assert vol == PreparedVolume("config", "configMap", str(tmp_path / "volumes" / "config"), True)
    root = Path(vol.path)
    assert (root / "app.yaml").read_text() == "a: 1\n"
    assert (root / "mode").read_text() == "fast"
    assert (root / "blob.bin").read_bytes() == b"\x00\x01\xff"
    assert mode_of(root / "mode") == 0o644
    # the kubelet's layout: top-level names are symlinks through ..data
    assert os.readlink(root / "mode") == "..data/mode"
    assert (root / "..data").is_symlink()
    assert sorted(p.name for p in root.iterdir() if not p.name.startswith("..")) == [
        "app.yaml",
        "blob.bin",
        "mode",
    ]


def test_configmap_items_modes_and_nested_paths(tmp_path: Path, store: Store) -> None:
    volume = {
        "name": "config",
        "configMap": {
            "name": "cfg",
            "defaultMode": 0o600,
            "items": [
                {"key": "mode", "path": "conf/mode.txt", "mode": 0o400},
                {"key": "app.yaml", "path": "app.yaml"},
            ],
        },
    }
    root = Path(prepare(make_pod([volume]), tmp_path, store)["config"].path)
    assert (root / "conf" / "mode.txt").read_text() == "fast"
    assert mode_of(root / "conf" / "mode.txt") == 0o400
    assert mode_of(root / "app.yaml") == 0o600
    assert not (root / "mode").exists()


def test_missing_configmap_or_key(tmp_path: Path, store: Store) -> None:
    with pytest.raises(VolumeError) as info:
        prepare(make_pod([{"name": "config", "configMap": {"name": "nope"}}]), tmp_path, store)
    assert info.value.reason == "FailedMount"
    assert info.value.message == 'volume "config": configmap "nope" not found'

    prepared = prepare(
        make_pod([{"name": "config", "configMap": {"name": "nope", "optional": True}}]),
        tmp_path,
        store,
    )
    assert [
        p.name for p in Path(prepared["config"].path).iterdir() if not p.name.startswith("..")
    ] == []

    items = [{"key": "absent", "path": "x"}]
    with pytest.raises(VolumeError, match="configmap references non-existent config key: absent"):
        prepare(
            make_pod([{"name": "c2", "configMap": {"name": "cfg", "items": items}}]),
            tmp_path,
            store,
        )
    optional = {"name": "cfg", "items": [*items, {"key": "mode", "path": "m"}], "optional": True}
    root = Path(
        prepare(make_pod([{"name": "c3", "configMap": optional}]), tmp_path, store)["c3"].path
    )
    assert (root / "m").read_text() == "fast" and not (root / "x").exists()


def test_secret_volume_decodes_and_string_data_wins(tmp_path: Path, store: Store) -> None:
    pod = make_pod([{"name": "s", "secret": {"secretName": "creds", "defaultMode": 0o400}}])
    root = Path(prepare(pod, tmp_path, store)["s"].path)
    assert (root / "password").read_bytes() == b"s3cret"
    assert (root / "token").read_bytes() == b"new"
    assert mode_of(root / "password") == 0o400
    with pytest.raises(VolumeError, match='volume "s2": secret "gone" not found'):
        prepare(make_pod([{"name": "s2", "secret": {"secretName": "gone"}}]), tmp_path, store)
    with pytest.raises(VolumeError, match="references non-existent secret key: nokey"):
        prepare(
            make_pod(
                [
                    {
                        "name": "s3",
                        "secret": {"secretName": "creds", "items": [{"key": "nokey", "path": "k"}]},
                    }
                ]
            ),
            tmp_path,
            store,
        )


def test_downward_api_volume(tmp_path: Path, store: Store) -> None:
    volume = {
        "name": "info",
        "downwardAPI": {
            "items": [
                {"path": "labels", "fieldRef": {"fieldPath": "metadata.labels"}},
                {"path": "name", "fieldRef": {"fieldPath": "metadata.name"}, "mode": 0o600},
                {"path": "sub/note", "fieldRef": {"fieldPath": "metadata.annotations['note']"}},
                {
                    "path": "mem",
                    "resourceFieldRef": {
                        "containerName": "main",
                        "resource": "limits.memory",
                        "divisor": "1Mi",
                    },
                },
            ]
        },
    }
    vol = prepare(make_pod([volume]), tmp_path, store)["info"]
    root = Path(vol.path)
    assert (root / "labels").read_text() == 'a="1"\nb="2"'
    assert (root / "name").read_text() == "head-0"
    assert mode_of(root / "name") == 0o600
    assert (root / "sub" / "note").read_text() == "hi"
    assert (root / "mem").read_text() == "1024"
    assert vol.read_only


def test_downward_api_resource_needs_container_name(tmp_path: Path, store: Store) -> None:
    volume = {
        "name": "info",
        "downwardAPI": {"items": [{"path": "cpu", "resourceFieldRef": {"resource": "limits.cpu"}}]},
    }
    with pytest.raises(VolumeError, match="needs a fieldRef or a resourceFieldRef"):
        prepare(make_pod([volume]), tmp_path, store)


def test_projected_volume(tmp_path: Path, store: Store) -> None:
    volume = {
        "name": "all",
        "projected": {
            "defaultMode": 0o640,
            "sources": [
                {"configMap": {"name": "cfg", "items": [{"key": "mode", "path": "cfg/mode"}]}},
                {
                    "secret": {
                        "name": "creds",
                        "items": [{"key": "password", "path": "secret/pw", "mode": 0o400}],
                    }
                },
                {
                    "downwardAPI": {
                        "items": [{"path": "ns", "fieldRef": {"fieldPath": "metadata.namespace"}}]
                    }
                },
                {"configMap": {"name": "absent", "optional": True}},
            ],
        },
    }
    root = Path(prepare(make_pod([volume]), tmp_path, store)["all"].path)
    assert (root / "cfg" / "mode").read_text() == "fast"
    assert mode_of(root / "cfg" / "mode") == 0o640
    assert (root / "secret" / "pw").read_bytes() == b"s3cret"
    assert mode_of(root / "secret" / "pw") == 0o400
    assert (root / "ns").read_text() == "default"


def test_projected_service_account_token_is_unsupported(tmp_path: Path, store: Store) -> None:
    volume = {
        "name": "kube-api-access",
        "projected": {"sources": [{"serviceAccountToken": {"path": "token"}}]},
    }
    with pytest.raises(VolumeError) as info:
        prepare(make_pod([volume]), tmp_path, store)
    assert info.value.reason == "UnsupportedVolume"
    assert "kube-api-access" in info.value.message and "serviceAccountToken" in info.value.message


@pytest.mark.parametrize("kind", ["persistentVolumeClaim", "nfs", "csi", "ephemeral"])
def test_other_kinds_are_unsupported(tmp_path: Path, store: Store, kind: str) -> None:
    with pytest.raises(VolumeError) as info:
        prepare(make_pod([{"name": "data", kind: {}}]), tmp_path, store)
    assert info.value.reason == "UnsupportedVolume"
    assert (
        info.value.message == f'volume "data": {kind} volumes are not supported by the local node'
    )


def test_updates_rewrite_contents_atomically(tmp_path: Path, store: Store) -> None:
    pod = make_pod([{"name": "config", "configMap": {"name": "cfg"}}])
    root = Path(prepare(pod, tmp_path, store)["config"].path)
    first = os.readlink(root / "..data")
    prepare(pod, tmp_path, store)  # unchanged: not rewritten
    assert os.readlink(root / "..data") == first

    store.configmaps[("default", "cfg")] = {
        "metadata": {"name": "cfg"},
        "data": {"mode": "slow", "new": "yes"},
    }
    prepare(pod, tmp_path, store)
    assert os.readlink(root / "..data") != first
    assert (root / "mode").read_text() == "slow"
    assert (root / "new").read_text() == "yes"
    assert not (root / "app.yaml").exists() and not (root / "app.yaml").is_symlink()
    assert not (root / first).exists()  # the old generation is gone
    generations = [p for p in root.iterdir() if p.name.startswith("..") and p.name != "..data"]
    assert len(generations) == 1


def test_overlapping_item_paths_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="overlap"):
        write_atomically(tmp_path / "v", {"a": (b"1", 0o644), "a/b": (b"2", 0o644)})
    with pytest.raises(ValueError, match=r"must not start with '\.\.'"):
        write_atomically(tmp_path / "v", {"..data/x": (b"1", 0o644)})


@pytest.mark.parametrize("bad", ["../escape", "/etc/passwd", "a/../../b", "", "..", "a/.."])
def test_item_paths_must_stay_inside(tmp_path: Path, store: Store, bad: str) -> None:
    volume = {
        "name": "config",
        "configMap": {"name": "cfg", "items": [{"key": "mode", "path": bad}]},
    }
    with pytest.raises(VolumeError) as info:
        prepare(make_pod([volume]), tmp_path / "pod", store)
    assert info.value.reason == "FailedMount" and 'volume "config"' in info.value.message
    assert not any(tmp_path.parent.glob("escape")) and not (tmp_path / "b").exists()


def all_files_inside(root: Path, pod_dir: Path) -> bool:
    for dirpath, _dirs, files in os.walk(root):
        for name in files:
            if not Path(dirpath, name).resolve().is_relative_to(pod_dir.resolve()):
                return False
    return True


@settings(max_examples=150, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.text(alphabet="ab./", min_size=0, max_size=12), min_size=1, max_size=4))
def test_item_paths_never_escape_pod_dir(tmp_path: Path, paths: list[str]) -> None:
    pod_dir = tmp_path / f"pod-{abs(hash(tuple(paths)))}"
    store = Store()
    items = [{"key": "mode", "path": p} for p in paths]
    pod = make_pod([{"name": "v", "configMap": {"name": "cfg", "items": items}}])
    before = set(tmp_path.iterdir())
    try:
        prepared = prepare(pod, pod_dir, store)
    except VolumeError as err:
        assert err.reason == "FailedMount"
    else:
        root = Path(prepared["v"].path)
        for p in paths:
            target = (root / p).resolve()
            assert target.is_relative_to(root.resolve())
            assert target.read_text() == "fast"
    assert set(tmp_path.iterdir()) - before <= {pod_dir}
    if pod_dir.exists():
        assert all_files_inside(pod_dir, pod_dir)


@pytest.mark.parametrize("path", ["a", "a/b/c", "./a", "a//b", "a/./b"])
def test_check_relative_path_normalizes(path: str) -> None:
    assert check_relative_path(path, "p") == "/".join(
        p for p in path.split("/") if p not in ("", ".")
    )


def test_empty_dir(tmp_path: Path, store: Store) -> None:
    pod = make_pod([{"name": "scratch", "emptyDir": {}}, {"name": "defaulted"}])
    prepared = prepare(pod, tmp_path, store)
    root = Path(prepared["scratch"].path)
    assert root.is_dir() and mode_of(root) == 0o777 and not prepared["scratch"].read_only
    assert Path(prepared["defaulted"].path).is_dir() and prepared["defaulted"].kind == "emptyDir"
    (root / "keep").write_text("data")
    prepare(pod, tmp_path, store)  # idempotent: data survives
    assert (root / "keep").read_text() == "data"


def test_memory_empty_dir_is_tmpfs(tmp_path: Path, store: Store) -> None:
    pod = make_pod(
        [
            {"name": "shm", "emptyDir": {"medium": "Memory", "sizeLimit": "64Mi"}},
            {"name": "m2", "emptyDir": {"medium": "Memory"}},
        ],
        mounts=[{"name": "shm", "mountPath": "/dev/shm"}],
    )
    prepared = prepare(pod, tmp_path, store)
    assert prepared["shm"] == PreparedVolume("shm", "emptyDir", "", False, True, 64 * 2**20)
    assert prepared["m2"].size_bytes is None
    assert not (tmp_path / "volumes" / "shm").exists()
    mounts = container_mounts(pod, pod["spec"]["containers"][0], prepared)
    assert mounts == [
        Mount(source="", target="/dev/shm", read_only=False, tmpfs=True, size_bytes=64 * 2**20)
    ]
    with pytest.raises(VolumeError) as info:
        container_mounts(
            pod, {"volumeMounts": [{"name": "shm", "mountPath": "/x", "subPath": "a"}]}, prepared
        )
    assert info.value.reason == "UnsupportedVolume"


def test_unsupported_empty_dir_medium(tmp_path: Path, store: Store) -> None:
    with pytest.raises(VolumeError) as info:
        prepare(make_pod([{"name": "hp", "emptyDir": {"medium": "HugePages"}}]), tmp_path, store)
    assert info.value.reason == "UnsupportedVolume"


def host_path_pod(path: Path | str, kind: str) -> dict[str, Any]:
    return make_pod([{"name": "host", "hostPath": {"path": str(path), "type": kind}}])


def test_host_path_directory_types(tmp_path: Path, store: Store) -> None:
    created = tmp_path / "made" / "deep"
    prepared = prepare(host_path_pod(created, "DirectoryOrCreate"), tmp_path / "pod", store)
    assert prepared["host"] == PreparedVolume("host", "hostPath", str(created), False)
    assert created.is_dir() and mode_of(created) & 0o755 == 0o755
    prepare(host_path_pod(created, "Directory"), tmp_path / "pod", store)
    with pytest.raises(VolumeError) as info:
        prepare(host_path_pod(tmp_path / "missing", "Directory"), tmp_path / "pod", store)
    assert info.value.reason == "FailedMount"
    assert (
        info.value.message
        == f'volume "host": hostPath type check failed: {tmp_path / "missing"} is not a directory'
    )
    (tmp_path / "file").write_text("x")
    with pytest.raises(VolumeError, match="is not a directory"):
        prepare(host_path_pod(tmp_path / "file", "DirectoryOrCreate"), tmp_path / "pod", store)


def test_host_path_file_types(tmp_path: Path, store: Store) -> None:
    target = tmp_path / "new.txt"
    prepare(host_path_pod(target, "FileOrCreate"), tmp_path / "pod", store)
    assert target.is_file() and target.read_bytes() == b""
    target.write_text("keep")
    prepare(host_path_pod(target, "FileOrCreate"), tmp_path / "pod", store)
    assert target.read_text() == "keep"
    prepare(host_path_pod(target, "File"), tmp_path / "pod", store)
    with pytest.raises(VolumeError, match="is not a file"):
        prepare(host_path_pod(tmp_path, "File"), tmp_path / "pod", store)
    with pytest.raises(VolumeError, match="is not a file"):  # no parent directory is made
        prepare(host_path_pod(tmp_path / "nodir" / "f", "FileOrCreate"), tmp_path / "pod", store)
    assert not (tmp_path / "nodir").exists()


def test_host_path_special_files(tmp_path: Path, store: Store) -> None:
    sock_path = tmp_path / "s.sock"
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(sock_path))
        prepare(host_path_pod(sock_path, "Socket"), tmp_path / "pod", store)
    (tmp_path / "plain").write_text("x")
    for kind, words in [
        ("Socket", "is not a socket file"),
        ("CharDevice", "is not a character device"),
        ("BlockDevice", "is not a block device"),
    ]:
        with pytest.raises(VolumeError, match=words):
            prepare(host_path_pod(tmp_path / "plain", kind), tmp_path / "pod", store)


def test_host_path_untyped_is_unchecked_and_must_be_absolute(tmp_path: Path, store: Store) -> None:
    prepared = prepare(host_path_pod(tmp_path / "whatever", ""), tmp_path / "pod", store)
    assert (
        prepared["host"].path == str(tmp_path / "whatever") and not (tmp_path / "whatever").exists()
    )
    with pytest.raises(VolumeError, match="must be absolute"):
        prepare(host_path_pod("relative/path", ""), tmp_path / "pod", store)
    with pytest.raises(VolumeError) as info:
        prepare(host_path_pod(tmp_path, "Bogus"), tmp_path / "pod", store)
    assert info.value.reason == "UnsupportedVolume"


def test_container_mounts(tmp_path: Path, store: Store) -> None:
    data_dir = tmp_path / "data"
    pod = make_pod(
        [
            {"name": "config", "configMap": {"name": "cfg"}},
            {"name": "scratch", "emptyDir": {}},
            {"name": "host", "hostPath": {"path": str(data_dir), "type": "DirectoryOrCreate"}},
        ],
        mounts=[
            {"name": "config", "mountPath": "/etc/app", "readOnly": False},
            {"name": "scratch", "mountPath": "/tmp/scratch/"},
            {"name": "host", "mountPath": "/data", "readOnly": True},
            {"name": "config", "mountPath": "/etc/app.yaml", "subPath": "app.yaml"},
            {"name": "scratch", "mountPath": "/work", "subPath": "w/x"},
        ],
    )
    prepared = prepare(pod, tmp_path / "pod", store)
    mounts = container_mounts(pod, pod["spec"]["containers"][0], prepared)
    vol = tmp_path / "pod" / "volumes"
    assert mounts[:3] == [
        Mount(source=str(vol / "config"), target="/etc/app", read_only=True),
        Mount(source=str(vol / "scratch"), target="/tmp/scratch", read_only=False),
        Mount(source=str(data_dir), target="/data", read_only=True),
    ]
    # subPath into a configMap resolves to the current generation's file
    assert Path(mounts[3].source).read_text() == "a: 1\n"
    assert Path(mounts[3].source).parent.name.startswith("..") and mounts[3].read_only
    # a missing subPath in a writable volume is created as a directory
    assert mounts[4].source == str((vol / "scratch" / "w" / "x").resolve())
    assert Path(mounts[4].source).is_dir() and not mounts[4].read_only


def test_sub_path_expr_expands_with_the_container_env(tmp_path: Path, store: Store) -> None:
    pod = make_pod(
        [{"name": "logs", "emptyDir": {}}],
        mounts=[{"name": "logs", "mountPath": "/logs", "subPathExpr": "$(POD_NAME)/$(UNSET)"}],
    )
    prepared = prepare(pod, tmp_path, store)
    mounts = container_mounts(
        pod, pod["spec"]["containers"][0], prepared, env={"POD_NAME": "head-0"}
    )
    assert mounts[0].source == str(
        (tmp_path / "volumes" / "logs" / "head-0" / "$(UNSET)").resolve()
    )
    both = {"name": "logs", "mountPath": "/l", "subPath": "a", "subPathExpr": "b"}
    with pytest.raises(VolumeError, match="mutually exclusive"):
        container_mounts(pod, {"volumeMounts": [both]}, prepared)


@pytest.mark.parametrize(
    ("mount", "words"),
    [
        ({"name": "nope", "mountPath": "/x"}, 'volume "nope": no such volume in the pod'),
        ({"name": "scratch", "mountPath": "relative"}, "must be absolute"),
        ({"name": "scratch", "mountPath": "/x", "subPath": "../up"}, "must not contain '..'"),
        ({"name": "scratch", "mountPath": "/x", "subPath": "/abs"}, "relative path"),
        ({"name": "scratch", "mountPath": "/x", "subPathExpr": "$(UP)/x"}, "must not contain '..'"),
        ({"name": "scratch", "mountPath": "/x", "subPath": "link/inside"}, "leaves the volume"),
    ],
)
def test_bad_mounts(tmp_path: Path, store: Store, mount: dict[str, Any], words: str) -> None:
    pod = make_pod([{"name": "scratch", "emptyDir": {}}])
    prepared = prepare(pod, tmp_path / "pod", store)
    outside = tmp_path / "outside"
    outside.mkdir()
    (Path(prepared["scratch"].path) / "link").symlink_to(outside)
    with pytest.raises(VolumeError) as info:
        container_mounts(pod, {"volumeMounts": [mount]}, prepared, env={"UP": ".."})
    assert info.value.reason == "FailedMount"
    assert words in info.value.message
    assert list(outside.iterdir()) == []  # nothing was created through the symlink


def test_invalid_volume_name(tmp_path: Path, store: Store) -> None:
    with pytest.raises(VolumeError, match="invalid volume name"):
        prepare(make_pod([{"name": "../x", "emptyDir": {}}]), tmp_path / "pod", store)
    assert not (tmp_path / "x").exists()
