"""A pod's volumes, materialized on disk, and the mounts each container gets.

The local node has no volume plugins and no images: what a container sees of a volume
is a host directory (or file) bind-mounted into its own mount namespace, or a fresh
tmpfs. This module decides those host paths and writes their contents; the runtime
only mounts what :func:`container_mounts` returns.

Supported kinds, with the kubelet's behaviour:

* ``configMap``, ``secret``, ``downwardAPI`` and ``projected`` (of those three) are
  files under ``<pod_dir>/volumes/<name>/``, with ``items`` (key -> path), per-item
  ``mode``, ``defaultMode`` (0644) and ``optional``. They are written like the kubelet's
  atomic writer: the files live in a timestamped ``..<stamp>`` directory, ``..data``
  is a symlink to it and every top-level name is a symlink through ``..data``, so a
  second :func:`prepare_volumes` (a ConfigMap update) swaps the whole content at once
  and running containers see it, while a ``subPath`` mount keeps the old file (as in
  Kubernetes). Unchanged content is not rewritten. These mounts are always read-only.
  Unlike the kubelet, Secrets are written to ``pod_dir``, not to a tmpfs.
* ``emptyDir`` is a directory under ``pod_dir`` (mode 0777), kept across calls;
  ``medium: Memory`` is a tmpfs mount instead, sized by ``sizeLimit`` (each container
  gets its own tmpfs, so such a volume is not shared between containers, and
  ``subPath`` into it is refused). A volume with no source is an ``emptyDir``, as the
  API server's defaulting makes it.
* ``hostPath`` is the host path itself, after the kubelet's ``type`` checks
  (``DirectoryOrCreate`` creates a 0755 directory, ``FileOrCreate`` an empty 0644 file
  but not its parent).

Anything else (persistentVolumeClaim, serviceAccountToken projections, ...) is a
:class:`VolumeError` with reason ``UnsupportedVolume``; a missing object or key, or a
failed hostPath check, is ``FailedMount``. Item paths and ``subPath`` must stay inside
the volume: relative, without ``..``, and not through a symlink that leaves it.
"""

from __future__ import annotations

import os
import secrets
import shutil
import stat
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lahar.api.quantity import QuantityError, to_int
from lahar.node.local.env import (
    Lookups,
    configmap_bytes,
    expand,
    field_value,
    resource_value,
    secret_bytes,
)

DEFAULT_MODE = 0o644
ALWAYS_READ_ONLY = frozenset({"configMap", "secret", "downwardAPI", "projected"})
_HOST_PATH_CHECKS = {
    "Directory": (stat.S_ISDIR, "is not a directory"),
    "DirectoryOrCreate": (stat.S_ISDIR, "is not a directory"),
    "File": (stat.S_ISREG, "is not a file"),
    "FileOrCreate": (stat.S_ISREG, "is not a file"),
    "Socket": (stat.S_ISSOCK, "is not a socket file"),
    "CharDevice": (stat.S_ISCHR, "is not a character device"),
    "BlockDevice": (stat.S_ISBLK, "is not a block device"),
}

Files = dict[str, tuple[bytes, int]]  # relative path -> (content, mode)


class VolumeError(Exception):
    """A volume cannot be provided: ``reason`` is ``FailedMount`` or ``UnsupportedVolume``."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message


@dataclass(frozen=True)
class PreparedVolume:
    """A volume ready to mount: ``path`` on the host ("" for a tmpfs)."""

    name: str
    kind: str
    path: str
    read_only: bool
    tmpfs: bool = False
    size_bytes: int | None = None


@dataclass(frozen=True)
class Mount:
    """One mount of a container: ``source`` (host path, "" for a tmpfs) at ``target``.
    A ``subPath`` is already resolved into ``source``."""

    source: str
    target: str
    read_only: bool
    tmpfs: bool = False
    size_bytes: int | None = None


def check_relative_path(path: str, what: str) -> str:
    """``path`` normalized, if it is relative and stays below its base; else ValueError."""
    if not path or path.startswith("/"):
        raise ValueError(f"{what} {path!r} must be a non-empty relative path")
    parts = [p for p in path.split("/") if p not in ("", ".")]
    if not parts or ".." in parts:
        raise ValueError(f"{what} {path!r} must not contain '..'")
    if "\x00" in path or len(path) > 4096 or any(len(p) > 255 for p in parts):
        raise ValueError(f"{what} {path!r} is not a valid path")
    return "/".join(parts)


@dataclass(frozen=True)
class _Context:
    pod: Mapping[str, Any]
    namespace: str
    lookups: Lookups
    node_ip: str
    pod_ip: str
    node_allocatable: Mapping[str, str] | None


def _items_to_files(
    data: Mapping[str, bytes], source: Mapping[str, Any], mode: int, kind: str
) -> Files:
    if not source.get("items"):
        return {key: (value, mode) for key, value in data.items()}
    files: Files = {}
    for item in source["items"]:
        key = str(item.get("key", ""))
        if key not in data:
            if source.get("optional"):
                continue
            label = "config" if kind == "configmap" else kind
            raise ValueError(f"{kind} references non-existent {label} key: {key}")
        path = check_relative_path(str(item.get("path", "")), "item path")
        files[path] = (data[key], int(item.get("mode", mode)))
    return files


def _downward_files(ctx: _Context, source: Mapping[str, Any], mode: int) -> Files:
    files: Files = {}
    for item in source.get("items") or []:
        path = check_relative_path(str(item.get("path", "")), "item path")
        if "fieldRef" in item:
            field_path = str(item["fieldRef"].get("fieldPath", ""))
            value = field_value(ctx.pod, field_path, node_ip=ctx.node_ip, pod_ip=ctx.pod_ip)
        elif (item.get("resourceFieldRef") or {}).get("containerName"):
            value = resource_value(ctx.pod, {}, item["resourceFieldRef"], ctx.node_allocatable)
        else:
            raise ValueError(f"downwardAPI item {path!r} needs a fieldRef or a resourceFieldRef")
        files[path] = (value.encode(), int(item.get("mode", mode)))
    return files


def _source_files(ctx: _Context, kind: str, source: Mapping[str, Any], mode: int) -> Files:
    """The files of one configMap, secret, downwardAPI or projected source."""
    if kind == "downwardAPI":
        return _downward_files(ctx, source, mode)
    if kind == "projected":
        files: Files = {}
        for projection in source.get("sources") or []:
            inner = next(iter(projection), "empty")
            if inner not in ("configMap", "secret", "downwardAPI"):
                raise NotImplementedError(f"projected {inner} sources are not supported")
            files.update(_source_files(ctx, inner, projection[inner] or {}, mode))
        return files
    if kind not in ("configMap", "secret"):
        raise NotImplementedError(f"{kind} volumes are not supported by the local node")
    lower = kind.lower()
    name = str(source.get("secretName") or source.get("name") or "")
    fetch = ctx.lookups.configmap if lower == "configmap" else ctx.lookups.secret
    obj = fetch(ctx.namespace, name)
    if obj is None:
        if source.get("optional"):
            return {}
        raise LookupError(f'{lower} "{name}" not found')
    data = configmap_bytes(obj) if lower == "configmap" else secret_bytes(obj)
    return _items_to_files(data, source, mode, lower)


def _check_overlaps(files: Files) -> None:
    for path in files:
        parts = path.split("/")
        for depth in range(1, len(parts)):
            if "/".join(parts[:depth]) in files:
                raise ValueError(f"item paths {'/'.join(parts[:depth])!r} and {path!r} overlap")
        if parts[0].startswith(".."):
            raise ValueError(f"item path {path!r} must not start with '..'")


def _current_files(target: Path) -> Files | None:
    """What ``..data`` holds now, or None if it is missing or unreadable."""
    data = target / "..data"
    if not data.is_dir():
        return None
    files: Files = {}
    try:
        for root, _dirs, names in os.walk(data):
            for name in names:
                full = Path(root) / name
                rel = full.relative_to(data).as_posix()
                files[rel] = (full.read_bytes(), stat.S_IMODE(full.lstat().st_mode))
    except OSError:
        return None
    return files


def write_atomically(target: Path, files: Files) -> None:
    """Make ``target`` hold exactly ``files``, swapped in at once (see the module doc)."""
    _check_overlaps(files)
    target.mkdir(parents=True, exist_ok=True)
    if _current_files(target) == files:
        return
    tops = {rel.split("/")[0] for rel in files}
    for top in tops:
        link = target / top
        if not link.is_symlink() and link.exists():
            raise ValueError(f"{top!r} exists in the volume and is not a symlink")
    stamp = "..{}.{}".format(time.strftime("%Y_%m_%d_%H_%M_%S"), secrets.token_hex(4))
    build = target / stamp
    build.mkdir(mode=0o755)
    for rel, (content, mode) in files.items():
        path = build / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content)
        path.chmod(mode & 0o7777)
    tmp_link = target / "..data_tmp"
    if tmp_link.is_symlink() or tmp_link.exists():
        tmp_link.unlink()
    tmp_link.symlink_to(stamp)
    os.replace(tmp_link, target / "..data")
    for top in tops:
        if not (target / top).is_symlink():
            (target / top).symlink_to(f"..data/{top}")
    for entry in target.iterdir():
        if entry.name.startswith(".."):
            if entry.name not in (stamp, "..data") and entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry)
        elif entry.is_symlink() and entry.name not in tops:
            entry.unlink()


def _host_path(source: Mapping[str, Any]) -> str:
    path, kind = str(source.get("path", "")), str(source.get("type") or "")
    if not path.startswith("/"):
        raise ValueError(f"hostPath {path!r} must be absolute")
    if kind == "":
        return path
    if kind not in _HOST_PATH_CHECKS:
        raise NotImplementedError(f"hostPath type {kind!r} is not supported")
    check, words = _HOST_PATH_CHECKS[kind]
    if not os.path.lexists(path):
        if kind == "DirectoryOrCreate":
            os.makedirs(path, mode=0o755, exist_ok=True)
        elif kind == "FileOrCreate":
            try:
                os.close(os.open(path, os.O_CREAT | os.O_WRONLY, 0o644))
            except OSError as err:
                raise LookupError(
                    f"hostPath type check failed: {path} {words} ({err.strerror})"
                ) from err
    try:
        mode = os.stat(path).st_mode
    except OSError:
        mode = 0
    if not check(mode):
        raise LookupError(f"hostPath type check failed: {path} {words}")
    return path


def prepare_volumes(
    pod: Mapping[str, Any],
    pod_dir: Path,
    lookups: Lookups,
    *,
    node_ip: str,
    pod_ip: str,
    node_allocatable: Mapping[str, str] | None = None,
) -> dict[str, PreparedVolume]:
    """Materialize every volume of ``pod`` under ``pod_dir``; raises :class:`VolumeError`.

    Safe to call again: file contents are rewritten from the current objects."""
    namespace = str((pod.get("metadata") or {}).get("namespace") or "default")
    ctx = _Context(pod, namespace, lookups, node_ip, pod_ip, node_allocatable)
    base = Path(pod_dir).absolute() / "volumes"
    prepared: dict[str, PreparedVolume] = {}
    for volume in (pod.get("spec") or {}).get("volumes") or []:
        name = str(volume.get("name", ""))
        kind = next((key for key in volume if key != "name"), "emptyDir")
        source, target = volume.get(kind) or {}, base / name
        if not name or "/" in name or name in (".", ".."):
            raise VolumeError("FailedMount", f"volume {name!r}: invalid volume name")
        try:
            if kind == "emptyDir":
                medium, limit = str(source.get("medium") or ""), source.get("sizeLimit")
                if medium == "Memory":
                    size = to_int(limit) if limit is not None else None
                    prepared[name] = PreparedVolume(name, kind, "", False, True, size)
                    continue
                if medium:
                    raise NotImplementedError(f"emptyDir medium {medium!r} is not supported")
                if not target.is_dir():
                    target.mkdir(parents=True, exist_ok=True)
                    target.chmod(0o777)
                prepared[name] = PreparedVolume(name, kind, str(target), False)
            elif kind == "hostPath":
                prepared[name] = PreparedVolume(name, kind, _host_path(source), False)
            else:
                mode = int(source.get("defaultMode", DEFAULT_MODE))
                write_atomically(target, _source_files(ctx, kind, source, mode))
                prepared[name] = PreparedVolume(name, kind, str(target), True)
        except NotImplementedError as err:
            raise VolumeError("UnsupportedVolume", f'volume "{name}": {err}') from err
        except (LookupError, ValueError, QuantityError, OSError) as err:
            raise VolumeError("FailedMount", f'volume "{name}": {err}') from err
    return prepared


def _resolve_sub_path(volume: PreparedVolume, sub_path: str) -> str:
    """The host path of ``sub_path`` in ``volume``, created as a directory if missing."""
    if volume.tmpfs:
        raise NotImplementedError("subPath into a memory emptyDir is not supported")
    base = Path(volume.path).resolve()
    candidate = Path(volume.path) / check_relative_path(sub_path, "subPath")
    for attempt in (0, 1):  # check before creating anything, and again after
        real = candidate.resolve()
        if real != base and base not in real.parents:
            raise ValueError(f"subPath {sub_path!r} leaves the volume")
        if attempt == 0 and not os.path.lexists(candidate):
            candidate.mkdir(mode=0o755, parents=True, exist_ok=True)
    return str(real)


def container_mounts(
    pod: Mapping[str, Any],
    container: Mapping[str, Any],
    prepared: Mapping[str, PreparedVolume],
    *,
    env: Mapping[str, str] | None = None,
) -> list[Mount]:
    """The mounts of ``container``, in ``volumeMounts`` order; raises :class:`VolumeError`.

    ``subPathExpr`` is expanded with ``env`` (the container's environment; references
    to unknown variables stay literal) and then treated as a ``subPath``."""
    mounts: list[Mount] = []
    for vm in container.get("volumeMounts") or []:
        name, mount_path = str(vm.get("name", "")), str(vm.get("mountPath", ""))
        try:
            volume = prepared.get(name)
            if volume is None:
                raise LookupError("no such volume in the pod")
            if not mount_path.startswith("/"):
                raise ValueError(f"mountPath {mount_path!r} must be absolute")
            sub_path = str(vm.get("subPath") or "")
            if vm.get("subPathExpr"):
                if sub_path:
                    raise ValueError("subPath and subPathExpr are mutually exclusive")
                sub_path = expand(str(vm["subPathExpr"]), env or {})
            source = _resolve_sub_path(volume, sub_path) if sub_path else volume.path
        except NotImplementedError as err:
            raise VolumeError("UnsupportedVolume", f'volume "{name}": {err}') from err
        except (LookupError, ValueError, OSError) as err:
            raise VolumeError("FailedMount", f'volume "{name}": {err}') from err
        mounts.append(
            Mount(
                source=source,
                target="/" + os.path.normpath(mount_path).lstrip("/"),
                read_only=volume.read_only or bool(vm.get("readOnly")),
                tmpfs=volume.tmpfs,
                size_bytes=volume.size_bytes,
            )
        )
    return mounts
