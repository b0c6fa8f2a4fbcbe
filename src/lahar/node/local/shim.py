"""The per-container shim: what conmon is to a container runtime, for a local process.

The agent starts one shim per container run (``python -m lahar.node.local.shim SPEC``).
The shim leaves the agent's session, joins the pod's network namespace, unshares a
mount, UTS and PID namespace, forks the container's first process (PID 1 of its own PID
namespace: when it ends, the kernel kills whatever it left behind) and then stays as
that process's parent. It copies the container's stdout and stderr into a CRI-format log
file and, when the process ends, writes the exit status next to it. Because the shim,
not the agent, is the parent, a container outlives a crash of the agent: a restarted
agent reads the shim's files and adopts the run (see ``runtime``).

Inside the new mount namespace, before the exec, the container's mounts are made: the
pod's private /tmp, its /etc/hosts and /etc/hostname, and its volumes. A mount point
that does not exist is created inside a private overlay of its nearest existing parent,
so nothing appears on the host's filesystem; only a mount point directly under ``/`` is
created on the host (the agent removes it with the pod).

Only the standard library is imported: the shim is started for every container run and
must start fast. Python 3.11 has no ``os.setns``/``os.unshare``, so libc is called with
ctypes.
"""

from __future__ import annotations

import ctypes
import errno
import hashlib
import json
import os
import selectors
import signal
import sys
import time
from typing import Any

from lahar.node.local.crilog import LineSplitter

CLONE_NEWNS = 0x00020000
CLONE_NEWUTS = 0x04000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
MS_RDONLY = 1
MS_NOSUID = 2
MS_NODEV = 4
MS_NOEXEC = 8
MS_REMOUNT = 32
MS_BIND = 4096
MS_REC = 16384
MS_PRIVATE = 1 << 18
MNT_DETACH = 2

_libc = ctypes.CDLL(None, use_errno=True)


def _check(result: int, what: str) -> None:
    if result != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def setns(path: str, nstype: int) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        _check(_libc.setns(fd, nstype), f"setns {path}")
    finally:
        os.close(fd)


def unshare(flags: int) -> None:
    _check(_libc.unshare(flags), "unshare")


def mount(source: str | None, target: str, fstype: str | None, flags: int, data: str = "") -> None:
    enc = [s.encode() if s is not None else None for s in (source, target, fstype, data or None)]
    _check(_libc.mount(enc[0], enc[1], enc[2], ctypes.c_ulong(flags), enc[3]), f"mount {target}")


def sethostname(name: str) -> None:
    raw = name.encode()[:64]
    _check(_libc.sethostname(raw, len(raw)), "sethostname")


# -- mounts ---------------------------------------------------------------------------------


def _nearest_existing(path: str) -> str:
    while not os.path.lexists(path):
        path = os.path.dirname(path)
    return path


def _overlay(parent: str, state: str, done: set[str]) -> bool:
    """Make ``parent`` writable for new mount points, privately, with an overlay.

    True if an overlay was mounted now: it hides whatever was mounted under ``parent``."""
    if parent in done:
        return False
    key = hashlib.sha1(parent.encode()).hexdigest()[:12]
    upper, work = os.path.join(state, key, "u"), os.path.join(state, key, "w")
    os.makedirs(upper, exist_ok=True)
    os.makedirs(work, exist_ok=True)
    mount("overlay", parent, "overlay", 0, f"lowerdir={parent},upperdir={upper},workdir={work}")
    done.add(parent)
    return True


class Mountpoints:
    """Creates mount points without touching the host's files, where it can.

    Under an existing directory other than ``/``, a private overlay of that directory
    takes the new entries. Directly under ``/`` (an overlay of the root would hide
    /proc, /dev and every other mount) the directory is created on the host and its
    path written to ``created_fd``, so the agent can remove it with the pod."""

    def __init__(self, overlay_state: str, created_fd: int | None) -> None:
        self.overlay_state = overlay_state
        self.created_fd = created_fd
        self.overlays: set[str] = set()

    def ensure(self, target: str, is_dir: bool) -> str | None:
        """Create ``target``; returns the directory newly covered by an overlay, if any."""
        if os.path.lexists(target):
            return None
        parent = _nearest_existing(os.path.dirname(target))
        covered = None
        if parent != "/":
            if _overlay(parent, self.overlay_state, self.overlays):
                covered = parent
        elif self.created_fd is not None:
            top = "/" + target.strip("/").split("/", 1)[0]
            os.write(self.created_fd, (top + "\n").encode())
        os.makedirs(os.path.dirname(target), exist_ok=True)
        if is_dir:
            os.makedirs(target, exist_ok=True)
        else:
            with open(target, "a"):
                pass
        return covered


def _under(path: str, parent: str) -> bool:
    """Strictly below ``parent``: a mount *at* ``parent`` is the overlay's lower layer,
    so its content shows through; only the mounts below it are hidden."""
    return path.startswith(parent.rstrip("/") + "/")


def apply_mounts(
    mounts: list[dict[str, Any]], overlay_state: str, created_fd: int | None = None
) -> None:
    """Make the mounts in order. Every source is opened first (``O_PATH``), so an overlay
    made for one mount point can never redirect another mount's source."""
    sources: dict[int, tuple[int, bool]] = {}
    for i, m in enumerate(mounts):
        if not m.get("tmpfs"):
            fd = os.open(m["source"], os.O_PATH | os.O_CLOEXEC)
            sources[i] = (fd, os.path.isdir(m["source"]))
    os.makedirs(overlay_state, exist_ok=True)
    state_fd = os.open(overlay_state, os.O_PATH | os.O_CLOEXEC)
    points = Mountpoints(f"/proc/self/fd/{state_fd}", created_fd)

    def make(i: int) -> None:
        m = mounts[i]
        target = m["target"]
        if m.get("tmpfs"):
            size = m.get("size_bytes")
            mount("tmpfs", target, "tmpfs", MS_NOSUID | MS_NODEV, f"size={size}" if size else "")
            return
        mount(f"/proc/self/fd/{sources[i][0]}", target, None, MS_BIND | MS_REC)
        if m.get("read_only"):
            mount(None, target, None, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_REC)

    def is_dir(i: int) -> bool:
        return True if mounts[i].get("tmpfs") else sources[i][1]

    for i, m in enumerate(mounts):
        covered = points.ensure(m["target"], is_dir(i))
        if covered is not None:
            # The new overlay hides the mounts made under it so far: make them again on top.
            for j in range(i):
                if _under(mounts[j]["target"], covered):
                    points.ensure(mounts[j]["target"], is_dir(j))
                    make(j)
        make(i)


def _forget_netns_mounts() -> None:
    """Drop this mount namespace's copies of the pod network namespaces' bind mounts.

    ``ip netns add`` pins a namespace with a bind mount under /run/netns; the copy this
    namespace got when it was unshared would keep ``ip netns delete`` of any pod from
    removing the file (EBUSY) for as long as the container lives."""
    try:
        _check(_libc.umount2(b"/run/netns", MNT_DETACH), "umount /run/netns")
        return
    except OSError:
        pass
    try:
        names = os.listdir("/run/netns")
    except OSError:
        return
    for name in names:
        _libc.umount2(os.path.join("/run/netns", name).encode(), MNT_DETACH)


# -- the run ------------------------------------------------------------------------------


def _write_json(path: str, data: dict[str, Any], dir_fd: int | None = None) -> None:
    """Write atomically; with ``dir_fd`` the path is a name in that directory, which keeps
    working whatever the container mounts over the directory's path."""
    name = os.path.basename(path) if dir_fd is not None else path
    fd = os.open(name + ".tmp", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644, dir_fd=dir_fd)
    with open(fd, "w") as f:
        json.dump(data, f)
    os.replace(name + ".tmp", name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)


def _child(spec: dict[str, Any], out_w: int, err_w: int, report_w: int) -> None:
    """The container's first process: finish its namespaces, then exec its command."""
    try:
        # What the shim (and Python) ignore, the container must not inherit: an ignored
        # signal stays ignored across exec, and a shell cannot even trap it.
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGPIPE, signal.SIGXFSZ):
            signal.signal(sig, signal.SIG_DFL)
        os.setsid()
        _raise_nofile()
        if spec.get("pid_namespace", True):
            mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
        created = spec.get("created_file")
        created_fd = (
            os.open(created, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o644)
            if created
            else None
        )
        apply_mounts(spec.get("mounts", []), spec["overlay_dir"], created_fd)
        stage = "exec"
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(out_w, 1)
        os.dup2(err_w, 2)
        cwd = spec.get("cwd") or "/"
        stage = "chdir"
        os.chdir(cwd)
        stage = "exec"
        argv = spec["argv"]
        os.execvpe(argv[0], argv, spec["env"])
    except BaseException as exc:  # report and leave; nothing here may raise past the fork
        message = str(exc)
        if isinstance(exc, OSError) and exc.errno == errno.ENOENT and stage == "exec":
            message = f'exec: "{spec["argv"][0]}": executable file not found in $PATH'
        elif stage == "chdir":
            message = f"chdir {spec.get('cwd')}: {exc.strerror or exc}"
        try:
            os.write(report_w, json.dumps({"message": message}).encode())
        finally:
            os._exit(127)


def _raise_nofile(limit: int = 1 << 20) -> None:
    """Give the container the open-files limit a container runtime gives (1M), so that
    KubeRay's ``ulimit -n 65536`` works; keep what there is if that is not allowed."""
    import resource

    try:
        with open("/proc/sys/fs/nr_open") as f:
            limit = min(limit, int(f.read()))
        resource.setrlimit(resource.RLIMIT_NOFILE, (limit, limit))
    except (OSError, ValueError):
        pass


def run(spec: dict[str, Any]) -> int:
    os.setsid()
    run_dir = os.open(os.path.dirname(spec["exit_file"]), os.O_PATH | os.O_DIRECTORY)
    log_fd = os.open(spec["log_file"], os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, signal.SIG_IGN)
    if spec.get("netns"):
        setns(spec["netns"], CLONE_NEWNET)
    flags = CLONE_NEWNS | CLONE_NEWUTS
    if spec.get("pid_namespace", True):
        flags |= CLONE_NEWPID
    unshare(flags)
    mount(None, "/", None, MS_REC | MS_PRIVATE)
    _forget_netns_mounts()
    if spec.get("hostname"):
        sethostname(spec["hostname"])
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    report_r, report_w = os.pipe2(os.O_CLOEXEC)
    pid = os.fork()
    if pid == 0:
        os.close(out_r)
        os.close(err_r)
        os.close(report_r)
        os.close(log_fd)
        _child(spec, out_w, err_w, report_w)
    for fd in (out_w, err_w, report_w):
        os.close(fd)
    started = {"shim": os.getpid(), "pid": pid, "at": time.time()}
    _write_json(spec["started_file"], started, run_dir)
    _copy_output(out_r, err_r, log_fd)
    report = b""
    while chunk := os.read(report_r, 65536):
        report += chunk
    _, status = os.waitpid(pid, 0)
    result: dict[str, Any] = {"finished": time.time()}
    if report:
        result.update(exit_code=128, reason="StartError", message=json.loads(report)["message"])
    elif os.WIFSIGNALED(status):
        result.update(exit_code=128 + os.WTERMSIG(status), signal=os.WTERMSIG(status))
    else:
        result["exit_code"] = os.WEXITSTATUS(status)
    _write_json(spec["exit_file"], result, run_dir)
    return 0


def _copy_output(out_r: int, err_r: int, log_fd: int) -> None:
    """Copy both streams into the CRI log until both are closed."""
    sel = selectors.DefaultSelector()
    splitters = {out_r: LineSplitter("stdout"), err_r: LineSplitter("stderr")}
    for fd in splitters:
        sel.register(fd, selectors.EVENT_READ)
    with open(log_fd, "ab", buffering=0) as log:
        while splitters:
            for key, _ in sel.select():
                fd = key.fd
                chunk = os.read(fd, 65536)
                if chunk:
                    data = splitters[fd].feed(chunk, time.time())
                else:
                    data = splitters.pop(fd).close(time.time())
                    sel.unregister(fd)
                    os.close(fd)
                if data:
                    log.write(data)


def main(argv: list[str]) -> int:
    with open(argv[1]) as f:
        spec = json.load(f)
    try:
        return run(spec)
    except OSError as exc:
        # Set-up failed before the container could start: say so where the agent looks.
        _write_json(
            spec["exit_file"],
            {
                "finished": time.time(),
                "exit_code": 128,
                "reason": "StartError",
                "message": str(exc),
            },
        )
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
