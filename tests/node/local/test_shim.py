"""The per-container shim run directly (``python -m lahar.node.local.shim SPEC``).

Each test writes a spec into its tmp_path and runs one shim, in the host's network
namespace (``netns: null``) but with its own mount, UTS and PID namespaces, then checks
what the agent relies on: the exit file, the StartError report, PID 1, the hostname,
the mounts (private /tmp, read-only binds, mount points that exist only inside), the
CRI log, SIGTERM reaching the container and the kernel killing what PID 1 leaves behind.

Every shim and container a test starts is killed in ``finally``, pass or fail. The
tests need root (namespaces and mounts); without it they are skipped.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the shim needs root (namespaces)")

CRI_LINE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z (stdout|stderr) ([FP]) (.*)$")
ENV = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C"}


class Shim:
    """One shim run: its spec and files under ``base``; killed on ``close``."""

    def __init__(self, base: Path, argv: list[str], **spec: Any) -> None:
        base.mkdir(parents=True, exist_ok=True)
        self.base = base
        self.spec: dict[str, Any] = {
            "argv": argv,
            "env": dict(ENV),
            "cwd": "/",
            "netns": None,
            "hostname": "shim-test",
            "pid_namespace": True,
            "overlay_dir": str(base / "overlay"),
            "log_file": str(base / "c.log"),
            "started_file": str(base / "c.started.json"),
            "exit_file": str(base / "c.exit.json"),
            "mounts": [],
        }
        self.spec.update(spec)
        spec_file = base / "c.spec.json"
        spec_file.write_text(json.dumps(self.spec))
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "lahar.node.local.shim", str(spec_file)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=open(base / "shim.log", "ab"),  # noqa: SIM115 - the child owns it
        )

    def started(self, timeout: float = 10.0) -> dict[str, Any]:
        path = Path(self.spec["started_file"])
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with contextlib.suppress(OSError, ValueError):
                return dict(json.loads(path.read_text()))
            assert self.proc.poll() is None or path.exists(), self.shim_log()
            time.sleep(0.01)
        raise AssertionError(f"the shim did not start the container: {self.shim_log()}")

    def wait(self, timeout: float = 20.0) -> dict[str, Any]:
        """Wait for the shim to end; the exit file it wrote."""
        code = self.proc.wait(timeout)
        assert code in (0, 1), self.shim_log()
        return dict(json.loads(Path(self.spec["exit_file"]).read_text()))

    def wait_log(self, text: str, timeout: float = 10.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if text in self.output():
                return
            time.sleep(0.02)
        raise AssertionError(f"{text!r} not in the log: {self.log_text()!r} {self.shim_log()}")

    def log_text(self) -> str:
        try:
            return Path(self.spec["log_file"]).read_text()
        except FileNotFoundError:
            return ""

    def lines(self) -> list[tuple[str, str, str]]:
        """(stream, tag, content) of every CRI log line; each line must be well formed."""
        out = []
        for line in self.log_text().splitlines():
            m = CRI_LINE.match(line)
            assert m, f"not a CRI log line: {line!r}"
            out.append((m.group(1), m.group(2), m.group(3)))
        return out

    def output(self, stream: str | None = None) -> str:
        return "\n".join(c for s, _, c in self.lines() if stream is None or s == stream)

    def shim_log(self) -> str:
        return (self.base / "shim.log").read_text(errors="replace")

    def close(self) -> None:
        with contextlib.suppress(OSError, ValueError, KeyError):
            pid = int(json.loads(Path(self.spec["started_file"]).read_text())["pid"])
            if _alive(pid):
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(pid, signal.SIGKILL)
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(10)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            raw = f.read()
    except OSError:
        return False
    return raw[raw.rfind(b")") + 2 :].split()[0] != b"Z"


def _pids_with_arg(arg: str) -> list[int]:
    """Pids whose command line has ``arg`` as one of its words."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            words = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if arg.encode() in words and _alive(int(entry)):
            found.append(int(entry))
    return found


@pytest.fixture
def shims(tmp_path: Path) -> Iterator[Any]:
    """A factory of shims under tmp_path; all are killed at the end."""
    started: list[Shim] = []

    def make(argv: list[str], **spec: Any) -> Shim:
        shim = Shim(tmp_path / f"run{len(started)}", argv, **spec)
        started.append(shim)
        return shim

    try:
        yield make
    finally:
        for shim in started:
            shim.close()


def test_exit_code_is_recorded(shims: Any) -> None:
    shim = shims(["sh", "-c", "exit 7"])
    result = shim.wait()
    assert result["exit_code"] == 7
    assert "reason" not in result
    started = json.loads(Path(shim.spec["started_file"]).read_text())
    assert started["shim"] == shim.proc.pid and started["pid"] > 0
    assert result["finished"] >= started["at"]


def test_exit_by_signal_is_recorded(shims: Any) -> None:
    shim = shims(["sleep", "300"])
    os.kill(int(shim.started()["pid"]), signal.SIGKILL)
    result = shim.wait()
    assert result["exit_code"] == 128 + 9 and result["signal"] == 9


def test_missing_command_is_a_start_error(shims: Any) -> None:
    name = f"lahar-no-such-command-{secrets.token_hex(3)}"
    result = shims([name, "arg"]).wait()
    assert result["exit_code"] == 128
    assert result["reason"] == "StartError"
    assert result["message"] == f'exec: "{name}": executable file not found in $PATH'


def test_missing_working_dir_is_a_start_error(shims: Any) -> None:
    result = shims(["true"], cwd="/nonexistent-lahar-dir").wait()
    assert result["reason"] == "StartError"
    assert result["message"].startswith("chdir /nonexistent-lahar-dir")


def test_container_is_pid_1_with_its_hostname(shims: Any) -> None:
    shim = shims(["sh", "-c", 'echo "pid=$$"; echo "host=$(cat /proc/sys/kernel/hostname)"'])
    assert shim.wait()["exit_code"] == 0
    out = shim.output("stdout").splitlines()
    assert out == ["pid=1", "host=shim-test"]
    assert Path("/proc/sys/kernel/hostname").read_text().strip() != "shim-test"


def test_env_and_working_dir(shims: Any, tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    env = dict(ENV, GREETING="hello world")
    shim = shims(["sh", "-c", 'echo "$GREETING in $(pwd)"'], env=env, cwd=str(work))
    assert shim.wait()["exit_code"] == 0
    assert shim.output("stdout") == f"hello world in {work}"


def test_private_tmp(shims: Any, tmp_path: Path) -> None:
    private = tmp_path / "podtmp"
    private.mkdir()
    name = f"lahar-shim-{secrets.token_hex(4)}"
    mounts = [{"source": str(private), "target": "/tmp", "read_only": False}]
    shim = shims(["sh", "-c", f"echo hi > /tmp/{name} && ls /tmp"], mounts=mounts)
    assert shim.wait()["exit_code"] == 0
    assert shim.output("stdout") == name  # the host's /tmp is not visible
    assert (private / name).read_text() == "hi\n"
    assert not Path("/tmp", name).exists()


def test_paths_under_tmp_that_containers_need_are_bound_back(shims: Any, tmp_path: Path) -> None:
    """A Python environment under /tmp (a CI checkout, say) stays visible, read-only,
    behind the pod's private /tmp: the agent makes its mount point in the pod's tmp dir."""
    from lahar.node.local import sandbox

    env_dir = Path("/tmp") / f"lahar-shim-env-{secrets.token_hex(4)}"
    (env_dir / "bin").mkdir(parents=True)
    try:
        (env_dir / "bin" / "tool").write_text("#!/bin/sh\necho tool ran\n")
        (env_dir / "bin" / "tool").chmod(0o755)
        pod_dir = tmp_path / "pod"
        keep = sandbox.kept_under_tmp([str(env_dir), "/usr", str(tmp_path / "missing")])
        assert keep == [str(env_dir)]
        sandbox.make_dirs(pod_dir, keep)
        mounts = sandbox.shim_mounts(pod_dir, [], keep)[:2]  # /tmp and the kept path
        script = f"tool; touch {env_dir}/x; echo rc=$?; ls /tmp"
        shim = shims(
            ["sh", "-c", script], mounts=mounts, env={**ENV, "PATH": f"{env_dir}/bin:{ENV['PATH']}"}
        )
        assert shim.wait()["exit_code"] == 0, shim.output()
        out = shim.output("stdout").splitlines()
        assert out[:2] == ["tool ran", "rc=1"]
        assert out[2:] == [env_dir.name]  # the rest of the host's /tmp stays hidden
        assert not (env_dir / "x").exists()
    finally:
        for f in sorted(env_dir.rglob("*"), reverse=True):
            f.unlink() if f.is_file() else f.rmdir()
        env_dir.rmdir()


def test_read_only_bind(shims: Any, tmp_path: Path) -> None:
    src = tmp_path / "data"
    src.mkdir()
    (src / "file").write_text("content\n")
    target = tmp_path / "mnt"
    target.mkdir()
    mounts = [{"source": str(src), "target": str(target), "read_only": True}]
    script = f"cat {target}/file; touch {target}/new; echo rc=$?"
    shim = shims(["sh", "-c", script], mounts=mounts)
    assert shim.wait()["exit_code"] == 0
    assert shim.output("stdout").splitlines() == ["content", "rc=1"]
    assert "Read-only file system" in shim.output("stderr")
    assert not (src / "new").exists()


def test_file_bind_and_tmpfs(shims: Any, tmp_path: Path) -> None:
    hosts = tmp_path / "hosts"
    hosts.write_text("10.1.2.3 lahar-test-host\n")
    mounts = [
        {"source": str(hosts), "target": "/etc/hosts", "read_only": True},
        {"source": "", "target": "/dev/shm", "read_only": False, "tmpfs": True},
    ]
    name = f"lahar-shim-{secrets.token_hex(4)}"
    script = f"cat /etc/hosts; touch /dev/shm/{name}; ls /dev/shm"
    shim = shims(["sh", "-c", script], mounts=mounts)
    assert shim.wait()["exit_code"] == 0
    assert shim.output("stdout").splitlines() == ["10.1.2.3 lahar-test-host", name]
    assert "lahar-test-host" not in Path("/etc/hosts").read_text()
    assert not Path("/dev/shm", name).exists()


def test_mount_point_under_a_missing_directory_stays_inside(shims: Any, tmp_path: Path) -> None:
    src = tmp_path / "samples"
    src.mkdir()
    (src / "sample.py").write_text("print('hi')\n")
    top = Path(f"/home/lahar-test-{secrets.token_hex(4)}")
    target = top / "x"
    mounts = [{"source": str(src), "target": str(target), "read_only": True}]
    try:
        shim = shims(["sh", "-c", f"ls {target}; ls /home"], mounts=mounts)
        assert shim.wait()["exit_code"] == 0
        out = shim.output("stdout").splitlines()
        assert out[0] == "sample.py"
        assert top.name in out[1:]
        # The host's entries stay visible through the private overlay.
        assert set(os.listdir("/home")) <= set(out[1:])
        assert not top.exists(), "the mount point leaked onto the host"
    finally:
        if top.exists():
            subprocess.run(["rm", "-rf", str(top)], check=False)


def test_new_mount_point_under_etc_keeps_the_earlier_mounts(shims: Any, tmp_path: Path) -> None:
    """A pod's /etc/hosts and /etc/hostname, then a volume at a new /etc/<dir>: the
    overlay that makes room for the volume's mount point must not hide the two files."""
    hosts, hostname, info = tmp_path / "hosts", tmp_path / "hostname", tmp_path / "info"
    hosts.write_text("10.1.2.3 lahar-test-host\n")
    hostname.write_text("shim-test\n")
    info.mkdir()
    (info / "name").write_text("pod-name\n")
    target = f"/etc/lahar-test-{secrets.token_hex(4)}"
    mounts = [
        {"source": str(hosts), "target": "/etc/hosts", "read_only": True},
        {"source": str(hostname), "target": "/etc/hostname", "read_only": True},
        {"source": str(info), "target": target, "read_only": True},
    ]
    script = f"cat /etc/hosts /etc/hostname {target}/name"
    shim = shims(["sh", "-c", script], mounts=mounts)
    assert shim.wait()["exit_code"] == 0
    assert not Path(target).exists()
    lines = shim.output("stdout").splitlines()
    assert lines == ["10.1.2.3 lahar-test-host", "shim-test", "pod-name"]


def test_stdout_and_stderr_in_cri_format(shims: Any) -> None:
    long = "y" * 20000
    script = f"echo out1; echo err1 >&2; echo out2; printf 'no newline'; echo {long} >&2"
    shim = shims(["sh", "-c", script])
    assert shim.wait()["exit_code"] == 0
    lines = shim.lines()
    stdout = [(t, c) for s, t, c in lines if s == "stdout"]
    stderr = [(t, c) for s, t, c in lines if s == "stderr"]
    assert stdout[:2] == [("F", "out1"), ("F", "out2")]
    assert "".join(c for _, c in stdout[2:]) == "no newline"
    assert stderr[0] == ("F", "err1")
    assert [t for t, _ in stderr[1:]][-1] == "F"
    assert all(t == "P" for t, _ in stderr[1:-1]) and len(stderr) > 2
    assert "".join(c for _, c in stderr[1:]) == long


def test_sigterm_to_the_process_group_reaches_a_bash_trap(shims: Any) -> None:
    script = "trap 'echo got TERM; exit 3' TERM; echo ready; while :; do sleep 0.1; done"
    shim = shims(["bash", "-c", script])
    pid = int(shim.started()["pid"])
    shim.wait_log("ready")
    os.killpg(pid, signal.SIGTERM)
    result = shim.wait(timeout=10)
    assert result["exit_code"] == 3, shim.log_text()
    assert "got TERM" in shim.output("stdout")


def test_sigterm_kills_a_process_without_a_handler(shims: Any) -> None:
    """Not PID 1 (which the kernel shields), so the default action applies."""
    shim = shims(["bash", "-c", "sleep 300 & echo ready; wait"])
    pid = int(shim.started()["pid"])
    shim.wait_log("ready")
    sig = Path(f"/proc/{pid}/status").read_text().splitlines()
    ignored = int(next(s for s in sig if s.startswith("SigIgn:")).split()[1], 16)
    assert not ignored & (1 << (signal.SIGTERM - 1)), "SIGTERM is ignored in the container"
    os.killpg(pid, signal.SIGKILL)
    assert shim.wait()["exit_code"] == 137


def test_background_child_dies_with_pid_1(shims: Any) -> None:
    mark = f"{secrets.randbelow(10**6) + 1000}.{secrets.randbelow(10**6)}"
    script = f"sleep {mark} >/dev/null 2>&1 & echo child=$!; sleep 0.2; exit 0"
    shim = shims(["bash", "-c", script])
    shim.started()
    shim.wait_log("child=")
    result = shim.wait(timeout=10)
    assert result["exit_code"] == 0
    deadline = time.monotonic() + 5
    while _pids_with_arg(mark) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _pids_with_arg(mark), "a process the container left behind survived PID 1"


def test_background_child_holding_stdout_does_not_hang_the_shim(shims: Any) -> None:
    mark = f"{secrets.randbelow(10**6) + 1000}.{secrets.randbelow(10**6)}"
    shim = shims(["bash", "-c", f"sleep {mark} & echo bye"])
    result = shim.wait(timeout=10)
    assert result["exit_code"] == 0
    assert shim.output("stdout") == "bye"
    assert not _pids_with_arg(mark)
