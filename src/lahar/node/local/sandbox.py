"""A pod's directory on the local node: what its containers see of the host's files.

Every pod has ``<state>/pods/<uid>/`` with ``tmp/`` (its private /tmp), ``etc/hosts``
and ``etc/hostname`` (bind-mounted over the container's), ``volumes/`` (materialized
by ``volumes``), ``logs/`` and ``run/`` (the shims' files). This module turns a
container's volume mounts into the shim's mount list, rewrites /etc/hosts in place
(the containers bind-mount that very inode, so it must never be replaced) and removes
the mount points a shim had to make directly under ``/`` once no pod needs them.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from lahar.node.local import volumes

Obj = dict[str, Any]
CREATED = "created-mountpoints"  # mount points the shims had to make on the host


def make_dirs(pod_dir: Path, keep: Iterable[str] = ()) -> None:
    """The pod's directories, with a mount point in its /tmp for each kept path."""
    for sub in ("tmp", "etc", "logs", "run"):
        (pod_dir / sub).mkdir(parents=True, exist_ok=True)
    (pod_dir / "tmp").chmod(0o1777)
    for path in keep:
        (pod_dir / "tmp" / Path(path).relative_to("/tmp")).mkdir(parents=True, exist_ok=True)


def kept_under_tmp(paths: Iterable[str]) -> list[str]:
    """Of the host paths every container needs (the Python environment lahar and Ray run
    from), those the pod's private /tmp would hide: they are bound back, read-only."""
    out = []
    for path in paths:
        real = os.path.realpath(path)
        if real.startswith("/tmp/") and os.path.isdir(real) and real not in out:
            out.append(real)
    return out


def shim_mounts(pod_dir: Path, mounts: list[volumes.Mount], keep: Iterable[str] = ()) -> list[Obj]:
    """The shim's mounts: the pod's /tmp (with the kept host paths bound back into it),
    /etc/hosts, /etc/hostname, then the volumes, shallow paths first so a mount inside
    another lands on top of it."""
    base: list[Obj] = [
        {"source": str(pod_dir / "tmp"), "target": "/tmp", "read_only": False},
        *({"source": path, "target": path, "read_only": True} for path in keep),
        {"source": str(pod_dir / "etc" / "hosts"), "target": "/etc/hosts", "read_only": True},
        {"source": str(pod_dir / "etc" / "hostname"), "target": "/etc/hostname", "read_only": True},
    ]
    own = [
        {
            "source": m.source,
            "target": m.target,
            "read_only": m.read_only,
            "tmpfs": m.tmpfs,
            "size_bytes": m.size_bytes,
        }
        for m in sorted(mounts, key=lambda m: m.target.count("/"))
    ]
    return base + own


def write_in_place(path: Path, content: str) -> bool:
    """Replace the file's content without replacing the file; False if unchanged."""
    if path.exists() and path.read_text() == content:
        return False
    with open(path, "a+") as f:
        f.seek(0)
        f.truncate()
        f.write(content)
    return True


def remove_created_mountpoints(pod_dir: Path, in_use: Iterable[str]) -> None:
    """Remove the empty directories the shims made directly under ``/`` for this pod,
    unless another pod here mounts something at or below them."""
    try:
        made = set((pod_dir / "run" / CREATED).read_text().split())
    except OSError:
        return
    used = list(in_use)
    for top in made:
        if not top.startswith("/") or top.count("/") != 1:
            continue
        if any(p == top or p.startswith(top + "/") for p in used):
            continue
        remove_empty_tree(Path(top))


def remove_empty_tree(top: Path) -> None:
    """rmdir ``top`` and the directories under it, bottom up; files are never removed."""
    for dirpath, _dirs, _files in sorted(os.walk(top), key=lambda w: -len(w[0])):
        with contextlib.suppress(OSError):
            os.rmdir(dirpath)
