"""The local node end to end: a real ``lahar up`` runs plain bash and python pods.

One ``lahar up`` (API server, controllers, Volcano scheduler and the local node) is
shared by most tests of this module; the tests about the agent's own stop and crash
start clusters of their own. Each cluster has a bridge (``lt<hex>``), a pod CIDR and an
owner tag of its own, so it can run next to any other lahar on this machine, and every
pod the tests create carries a marker variable by which its processes are found.

The cluster runs on a bridge, CIDR and ``--local-node-tag`` of its own: the tag names
the pod network namespaces and veths and decides which of them a starting agent removes
as orphans, so these tests never touch the pods of another ``lahar up`` on the machine.

Nothing may outlive the module: an autouse fixture checks, at the end, that no process,
network namespace, veth, bridge, nft table or data dir of these clusters is left (and
removes what it finds, after failing).
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from lahar.node.local import sandbox
from lahar.node.local.network import check_privileges
from tests.e2e.cluster import Cluster
from tests.node.local.conftest import free_cidr

pytestmark = pytest.mark.skipif(
    bool(check_privileges()), reason=f"the local node needs: {check_privileges()}"
)

Obj = dict[str, Any]
MARK_VAR = "LAHAR_AGENT_TEST_MARK"


class LocalCluster(Cluster):
    """``lahar up`` with the local node on a bridge, CIDR and owner tag of its own."""

    def __init__(self, data_dir: Path) -> None:
        suffix = secrets.token_hex(3)
        self.tag, self.bridge, self.cidr = f"lt{suffix}", f"lt{suffix}", free_cidr()
        self.mark = f"m{suffix}"
        super().__init__(
            data_dir,
            "up",
            (
                "--local-node-bridge",
                self.bridge,
                "--local-node-cidr",
                self.cidr,
                "--local-node-tag",
                self.tag,
                "--schedule-period",
                "0.2",
            ),
            local_node=True,
        )
        self.node = ""

    def start(self, timeout: float = 60.0) -> LocalCluster:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.kubeconfig.unlink(missing_ok=True)
        self._log = open(self.log_path, "ab")  # noqa: SIM115 - closed in stop()
        argv = ["up", "--data-dir", str(self.data_dir), "--port", "0", *self.extra]
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "lahar.cli.main", *argv],
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"lahar up exited early:\n{self.log_path.read_text()}")
            if self.kubeconfig.exists():
                with contextlib.suppress(subprocess.TimeoutExpired):
                    nodes = self.kubectl(
                        "get", "nodes", "-l", "lahar.dev/node-type=local", "-o", "json", check=False
                    )
                    items = json.loads(nodes.stdout or "{}").get("items") or []
                    if nodes.returncode == 0 and items and _node_ready(items[0]):
                        self.node = items[0]["metadata"]["name"]
                        return self
            time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"lahar up did not become ready:\n{self.log_path.read_text()}")

    @property
    def pods_dir(self) -> Path:
        return self.data_dir / "node-local" / "pods"

    def log_tail(self, n: int = 60) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-n:])
        except OSError:
            return ""


def _node_ready(node: Obj) -> bool:
    conds = (node.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conds)


# -- what a cluster may leave behind ---------------------------------------------------------


def _proc_words(pid: str, what: str) -> list[bytes]:
    try:
        return Path(f"/proc/{pid}/{what}").read_bytes().split(b"\0")
    except OSError:
        return []


def _alive(pid: int) -> bool:
    try:
        raw = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return False
    return raw[raw.rfind(b")") + 2 :].split()[0] != b"Z"


def cluster_processes(c: LocalCluster) -> list[int]:
    """Live processes of the cluster: lahar up, its shims, and its pods' processes."""
    data, mark = str(c.data_dir).encode(), f"{MARK_VAR}={c.mark}".encode()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        cmdline = b" ".join(_proc_words(entry, "cmdline"))
        if (data in cmdline or mark in _proc_words(entry, "environ")) and _alive(int(entry)):
            found.append(int(entry))
    return found


def pod_processes(c: LocalCluster) -> list[int]:
    """Live processes of the cluster's pods (they carry its marker variable)."""
    mark = f"{MARK_VAR}={c.mark}".encode()
    return [
        int(e)
        for e in os.listdir("/proc")
        if e.isdigit() and mark in _proc_words(e, "environ") and _alive(int(e))
    ]


def _links() -> list[Obj]:
    out = subprocess.run(["ip", "-j", "link"], capture_output=True, text=True).stdout
    return list(json.loads(out or "[]"))


def leftovers(c: LocalCluster) -> list[str]:
    """Everything of ``c`` still on the machine: processes, netns, links, nft table."""
    found = [f"process {pid}" for pid in cluster_processes(c)]
    with contextlib.suppress(FileNotFoundError):
        found += [f"netns {n}" for n in os.listdir("/run/netns") if n.startswith(f"{c.tag}-")]
    for link in _links():
        alias = str(link.get("ifalias", ""))
        if link["ifname"] == c.bridge or alias.startswith(f"{c.tag}:"):
            found.append(f"link {link['ifname']} ({alias})")
    table = f"{c.tag}_{c.bridge}_nat"
    if subprocess.run(["nft", "list", "table", "ip", table], capture_output=True).returncode == 0:
        found.append(f"nft table {table}")
    return found


def purge(c: LocalCluster) -> None:
    """Remove whatever ``c`` left (after the check has recorded it)."""
    for pid in cluster_processes(c):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    with contextlib.suppress(FileNotFoundError):
        for name in os.listdir("/run/netns"):
            if name.startswith(f"{c.tag}-"):
                subprocess.run(["ip", "netns", "delete", name], capture_output=True)
    for link in _links():
        if link["ifname"] == c.bridge or str(link.get("ifalias", "")).startswith(f"{c.tag}:"):
            subprocess.run(["ip", "link", "delete", link["ifname"]], capture_output=True)
    subprocess.run(["nft", "delete", "table", "ip", f"{c.tag}_{c.bridge}_nat"], capture_output=True)


@dataclass
class Clusters:
    """Every cluster the module started, checked and removed at its end."""

    all: list[LocalCluster] = field(default_factory=list)

    def new(self) -> LocalCluster:
        c = LocalCluster(Path(tempfile.mkdtemp(prefix="lahar-agent-test-")))
        self.all.append(c)
        return c

    def close(self, c: LocalCluster) -> None:
        c.cleanup()


@pytest.fixture(scope="module")
def clusters() -> Iterator[Clusters]:
    reg = Clusters()
    yield reg
    problems: list[str] = []
    for c in reg.all:
        c.cleanup()
        deadline = time.monotonic() + 10
        left = leftovers(c)
        while left and time.monotonic() < deadline:
            time.sleep(0.2)
            left = leftovers(c)
        if left:
            problems.append(f"cluster {c.tag} ({c.data_dir}) left: {', '.join(left)}")
            purge(c)
        shutil.rmtree(c.data_dir, ignore_errors=True)
        if c.data_dir.exists():
            problems.append(f"cannot remove {c.data_dir}")
    assert not problems, "\n".join(problems)


@pytest.fixture(scope="module", autouse=True)
def nothing_leaks(clusters: Clusters) -> Iterator[None]:
    """Checked by ``clusters`` at the module's end (autouse, so always requested)."""
    yield


@pytest.fixture(scope="module")
def cluster(clusters: Clusters) -> Iterator[LocalCluster]:
    c = clusters.new()
    try:
        yield c.start()
    finally:
        c.cleanup()


# -- pods ------------------------------------------------------------------------------------


class Namespace:
    """A namespace of one test, with helpers to make pods in it and wait on them."""

    def __init__(self, c: LocalCluster, name: str) -> None:
        self.c, self.name = c, name

    def pod(
        self,
        name: str,
        containers: list[Obj],
        *,
        init: list[Obj] | None = None,
        volumes: list[Obj] | None = None,
        restart: str = "Never",
        grace: int = 2,
        labels: dict[str, str] | None = None,
        scheduler: bool = False,
        apply: bool = True,
    ) -> Obj:
        """A pod on the local node; every container carries the cluster's marker."""

        def mark(cs: list[Obj]) -> list[Obj]:
            return [
                dict(c, env=[*c.get("env", []), {"name": MARK_VAR, "value": self.c.mark}])
                for c in cs
            ]

        spec: Obj = {
            "containers": mark(containers),
            "restartPolicy": restart,
            "terminationGracePeriodSeconds": grace,
        }
        if scheduler:
            spec["schedulerName"] = "volcano"
        else:
            spec["nodeName"] = self.c.node
        if init:
            spec["initContainers"] = mark(init)
        if volumes:
            spec["volumes"] = volumes
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": self.name, "labels": labels or {}},
            "spec": spec,
        }
        if apply:
            self.apply(pod)
        return pod

    def apply(self, *objs: Obj) -> None:
        docs = [dict(o, metadata={"namespace": self.name, **o["metadata"]}) for o in objs]
        self.c.apply_yaml(docs)

    def get(self, name: str) -> Obj:
        return dict(self.c.get_json("pod", name, "-n", self.name))

    def kubectl(self, *args: str, **kw: Any) -> subprocess.CompletedProcess[str]:
        return self.c.kubectl(*args, "-n", self.name, **kw)

    def wait(self, name: str, pred: Callable[[Obj], bool], timeout: float = 30.0) -> Obj:
        deadline = time.monotonic() + timeout
        pod: Obj = {}
        while time.monotonic() < deadline:
            pod = self.get(name)
            if pred(pod):
                return pod
            time.sleep(0.2)
        raise AssertionError(
            f"pod {name} did not get there in {timeout}s: {json.dumps(pod.get('status'))}\n"
            f"{self.c.log_tail()}"
        )

    def wait_phase(self, name: str, *phases: str, timeout: float = 30.0) -> Obj:
        return self.wait(name, lambda p: phase(p) in phases, timeout)

    def logs(self, name: str, *args: str) -> str:
        return self.kubectl("logs", name, *args).stdout

    def events(self, name: str) -> list[Obj]:
        out = self.c.get_json("events", "-n", self.name)
        return [e for e in out["items"] if e["involvedObject"]["name"] == name]


def phase(pod: Obj) -> str:
    return str((pod.get("status") or {}).get("phase", ""))


def cstatus(pod: Obj, name: str | None = None, init: bool = False) -> Obj:
    key = "initContainerStatuses" if init else "containerStatuses"
    statuses = (pod.get("status") or {}).get(key) or []
    for s in statuses:
        if name is None or s["name"] == name:
            return dict(s)
    return {}


def running(pod: Obj, name: str | None = None) -> bool:
    return "running" in (cstatus(pod, name).get("state") or {})


def run_file(c: LocalCluster, pod: Obj, container: str, restart: int = 0) -> Obj:
    """The started file of a container run (its shim's and first process's pids)."""
    uid = pod["metadata"]["uid"]
    path = c.pods_dir / uid / "run" / f"{container}.{restart}.started.json"
    return dict(json.loads(path.read_text()))


@pytest.fixture
def ns(cluster: LocalCluster) -> Iterator[Namespace]:
    name = f"t-{secrets.token_hex(3)}"
    cluster.kubectl("create", "namespace", name)
    space = Namespace(cluster, name)
    try:
        yield space
    finally:
        res = cluster.kubectl("delete", "pods", "--all", "-n", name, "--wait", check=False)
        cluster.kubectl("delete", "namespace", name, "--wait=false", check=False)
        assert res.returncode == 0, res.stderr
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and pod_processes(cluster):
            time.sleep(0.1)
        assert pod_processes(cluster) == [], "a deleted pod left processes"


def sh(name: str, script: str, **extra: Any) -> Obj:
    return {"name": name, "image": "busybox", "command": ["sh", "-c", script], **extra}


def py(name: str, code: str, *args: str) -> Obj:
    return {"name": name, "image": "python", "command": ["python3", "-c", code, *args]}


def bash(name: str, script: str, **extra: Any) -> Obj:
    return {"name": name, "image": "bash", "command": ["bash", "-c", script], **extra}


# -- tests on the shared cluster ----------------------------------------------------------------


def test_node_registers_with_this_machine(cluster: LocalCluster) -> None:
    node = cluster.get_json("node", cluster.node)
    cap = node["status"]["capacity"]
    assert cap["cpu"] == str(os.cpu_count())
    assert node["metadata"]["labels"]["lahar.dev/node-type"] == "local"
    assert node["spec"]["podCIDR"] == cluster.cidr


def test_pod_succeeds_and_logs(ns: Namespace) -> None:
    ns.pod("hello", [sh("main", "echo one; echo two; echo three >&2; sleep 0.2; echo four")])
    pod = ns.wait_phase("hello", "Succeeded", "Failed")
    assert phase(pod) == "Succeeded", pod["status"]
    term = cstatus(pod)["state"]["terminated"]
    assert term["exitCode"] == 0 and term["reason"] == "Completed"
    logs = ns.logs("hello")
    assert sorted(logs.splitlines()) == ["four", "one", "three", "two"]
    assert logs.splitlines().index("one") < logs.splitlines().index("two")
    assert ns.logs("hello", "--tail=1") == "four\n"
    assert ns.logs("hello", "-c", "main", "--tail=2").splitlines()[-1] == "four"


def test_volcano_schedules_onto_the_local_node(ns: Namespace) -> None:
    ns.pod("scheduled", [sh("main", "echo scheduled on $NODE")], scheduler=True)
    pod = ns.wait_phase("scheduled", "Succeeded", "Failed", timeout=60)
    assert phase(pod) == "Succeeded", pod["status"]
    assert pod["spec"]["nodeName"] == ns.c.node


def test_logs_follow_container_and_previous(ns: Namespace) -> None:
    counter = (
        "n=$(cat /data/n 2>/dev/null || echo 0); n=$((n+1)); echo $n > /data/n; "
        "echo run $n; if [ $n -ge 2 ]; then exec sleep 1000; fi; exit 1"
    )
    ticker = "i=0; while :; do echo tick $i; i=$((i+1)); sleep 0.2; done"
    ns.pod(
        "chatty",
        [
            sh("crasher", counter, volumeMounts=[{"name": "data", "mountPath": "/data"}]),
            bash("ticker", ticker),
        ],
        volumes=[{"name": "data", "emptyDir": {}}],
        restart="Always",
    )
    pod = ns.wait(
        "chatty",
        lambda p: (
            running(p, "crasher")
            and cstatus(p, "crasher")["restartCount"] == 1
            and running(p, "ticker")
        ),
    )
    assert ns.logs("chatty", "-c", "crasher") == "run 2\n"
    assert ns.logs("chatty", "-c", "crasher", "--previous") == "run 1\n"
    follow = subprocess.Popen(
        [
            *_kubectl_base(ns.c),
            "logs",
            "-f",
            "chatty",
            "-c",
            "ticker",
            "-n",
            ns.name,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert follow.stdout is not None
        seen: list[str] = []
        deadline = time.monotonic() + 15
        while len(seen) < 25 and time.monotonic() < deadline:
            line = follow.stdout.readline()
            if not line:
                break
            seen.append(line.strip())
        # -f keeps streaming new lines: more than the few already written at the start.
        numbers = [int(s.split()[1]) for s in seen]
        assert len(numbers) == 25, (seen, follow.stderr.read() if follow.poll() else "")
        assert numbers == list(range(numbers[0], numbers[0] + 25))
    finally:
        follow.kill()
        follow.communicate(timeout=10)
    # The run before the (immediate) first restart is the container's lastState.
    last = cstatus(pod, "crasher")["lastState"]
    assert last.get("terminated", {}).get("exitCode") == 1, cstatus(pod, "crasher")


def _kubectl_base(c: LocalCluster) -> list[str]:
    from tests.e2e.cluster import KUBECTL

    return [KUBECTL, "--kubeconfig", str(c.kubeconfig), "--cache-dir", str(c.cache_dir)]


def test_env_from_fields_configmaps_and_secrets(ns: Namespace) -> None:
    ns.apply(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "settings"},
            "data": {"greeting": "hello from a configmap"},
        },
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": "creds"},
            "stringData": {"password": "s3cr3t"},
        },
    )
    env = [
        {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
        {"name": "POD_NS", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
        {"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
        {"name": "NODE", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
        {
            "name": "GREETING",
            "valueFrom": {"configMapKeyRef": {"name": "settings", "key": "greeting"}},
        },
        {"name": "PASSWORD", "valueFrom": {"secretKeyRef": {"name": "creds", "key": "password"}}},
        {"name": "PLAIN", "value": "x-$(POD_NAME)-y"},
    ]
    script = (
        "echo name=$POD_NAME; echo ns=$POD_NS; echo ip=$POD_IP; echo node=$NODE; "
        "echo greeting=$GREETING; echo password=$PASSWORD; echo plain=$PLAIN; "
        "echo hostname=$(hostname)"
    )
    ns.pod("envy", [sh("main", script, env=env)])
    pod = ns.wait_phase("envy", "Succeeded", "Failed")
    assert phase(pod) == "Succeeded", pod["status"]
    got = dict(line.split("=", 1) for line in ns.logs("envy").splitlines())
    assert got == {
        "name": "envy",
        "ns": ns.name,
        "ip": pod["status"]["podIP"],
        "node": ns.c.node,
        "greeting": "hello from a configmap",
        "password": "s3cr3t",
        "plain": "x-envy-y",
        "hostname": "envy",
    }


def test_volumes_appear_at_their_paths(ns: Namespace) -> None:
    host_dir = Path(tempfile.mkdtemp(prefix="lahar-agent-hostpath-"))
    home_ray_before = Path("/home/ray").exists()
    top_level = [Path(p) for p in ("/scratch", "/cache-mem", "/host-data")]
    assert not any(p.exists() for p in top_level), "left by an earlier run: remove them"
    try:
        (host_dir / "from-host").write_text("host file\n")
        ns.apply(
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": "ray-job-code-sample"},
                "data": {"sample_code.py": "print('sample')\n", "other.txt": "not mounted"},
            },
            {
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {"name": "tls"},
                "stringData": {"key.pem": "KEY"},
            },
        )
        mounts = [
            {"name": "code", "mountPath": "/home/ray/samples"},
            {"name": "tls", "mountPath": "/etc/tls"},
            {"name": "info", "mountPath": "/etc/podinfo"},
            {"name": "scratch", "mountPath": "/scratch"},
            {"name": "mem", "mountPath": "/cache-mem"},
            {"name": "host", "mountPath": "/host-data"},
        ]
        volumes = [
            {
                "name": "code",
                "configMap": {
                    "name": "ray-job-code-sample",
                    "items": [{"key": "sample_code.py", "path": "sample_code.py"}],
                },
            },
            {"name": "tls", "secret": {"secretName": "tls"}},
            {
                "name": "info",
                "downwardAPI": {
                    "items": [
                        {"path": "labels", "fieldRef": {"fieldPath": "metadata.labels"}},
                        {"path": "name", "fieldRef": {"fieldPath": "metadata.name"}},
                    ]
                },
            },
            {"name": "scratch", "emptyDir": {}},
            {"name": "mem", "emptyDir": {"medium": "Memory", "sizeLimit": "16Mi"}},
            {"name": "host", "hostPath": {"path": str(host_dir), "type": "Directory"}},
        ]
        script = (
            "echo samples=$(ls /home/ray/samples); python3 /home/ray/samples/sample_code.py; "
            "echo tls=$(cat /etc/tls/key.pem); echo podname=$(cat /etc/podinfo/name); "
            "echo labels=$(cat /etc/podinfo/labels); "
            "echo scratch > /scratch/f && echo scratch=$(cat /scratch/f); "
            "echo memfs=$(awk '$2==\"/cache-mem\" {print $3}' /proc/mounts); "
            "echo host=$(cat /host-data/from-host); echo written > /host-data/from-pod; "
            "echo tmp > /tmp/lahar-agent-private && echo tmp=$(ls /tmp); "
            "echo etchostname=$(cat /etc/hostname); "
            "echo hostsfile=$(grep -c 'lahar local node' /etc/hosts); "
            "touch /home/ray/samples/x 2>/dev/null; echo ro=$?"
        )
        ns.pod(
            "vols",
            [sh("main", script, volumeMounts=mounts)],
            volumes=volumes,
            labels={"app": "vols"},
        )
        pod = ns.wait_phase("vols", "Succeeded", "Failed")
        logs = ns.logs("vols")
        assert phase(pod) == "Succeeded", (pod["status"], logs)
        got = dict(line.split("=", 1) for line in logs.splitlines() if "=" in line)
        assert "sample" in logs.splitlines()
        assert got["samples"] == "sample_code.py"  # only the listed item
        assert got["tls"] == "KEY"
        assert got["podname"] == "vols"
        assert got["labels"] == 'app="vols"'
        assert got["scratch"] == "scratch"
        assert got["memfs"] == "tmpfs"
        assert got["host"] == "host file"
        # A private /tmp: only the pod's own file, and the way to the Python environment
        # when that lives under /tmp (it is bound back in, see sandbox.kept_under_tmp).
        kept = [k.split("/")[2] for k in sandbox.kept_under_tmp([sys.prefix])]
        assert sorted(got["tmp"].split()) == sorted(["lahar-agent-private", *kept])
        assert got["etchostname"] == "vols"
        assert got["hostsfile"] == "1"  # the pod's own /etc/hosts
        assert got["ro"] == "1"
        assert (host_dir / "from-pod").read_text() == "written\n"
        assert not Path("/tmp/lahar-agent-private").exists()
        # Nothing of the pod's mount points appears on the host.
        assert Path("/home/ray").exists() == home_ray_before
        assert not Path("/home/ray/samples/sample_code.py").exists()
        # Mount points directly under / are made on the host: the agent removes them with
        # the pod.
        ns.kubectl("delete", "pod", "vols", "--wait")
        # A finished pod's object goes at once; the agent cleans up right after.
        deadline = time.monotonic() + 10
        while any(p.exists() for p in top_level) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert [str(p) for p in top_level if p.exists()] == []
    finally:
        shutil.rmtree(host_dir, ignore_errors=True)
        for p in top_level:  # empty mount points only: rmdir never removes content
            with contextlib.suppress(OSError):
                p.rmdir()


def test_init_containers_run_in_order_first(ns: Namespace) -> None:
    m = [{"name": "shared", "mountPath": "/shared"}]
    ns.pod(
        "inits",
        [sh("main", "cat /shared/order; echo main", volumeMounts=m)],
        init=[
            sh("first", "sleep 0.5; echo first >> /shared/order", volumeMounts=m),
            sh("second", "echo second >> /shared/order", volumeMounts=m),
        ],
        volumes=[{"name": "shared", "emptyDir": {}}],
    )
    pod = ns.wait_phase("inits", "Succeeded", "Failed")
    assert phase(pod) == "Succeeded", pod["status"]
    assert ns.logs("inits", "-c", "main").splitlines() == ["first", "second", "main"]
    firsts = [cstatus(pod, n, init=True)["state"]["terminated"] for n in ("first", "second")]
    assert all(t["exitCode"] == 0 for t in firsts)
    assert firsts[0]["finishedAt"] <= firsts[1]["startedAt"]
    assert ns.logs("inits", "-c", "first") == ""


def test_restart_always_backs_off(ns: Namespace) -> None:
    ns.pod("crashy", [sh("main", "echo crash; exit 2")], restart="Always")
    seen_backoff = False

    def check(p: Obj) -> bool:
        nonlocal seen_backoff
        waiting = (cstatus(p).get("state") or {}).get("waiting") or {}
        if waiting.get("reason") == "CrashLoopBackOff":
            seen_backoff = True
        return int(cstatus(p).get("restartCount", 0)) >= 1 and seen_backoff

    t0 = time.monotonic()
    pod = ns.wait("crashy", check, timeout=15)
    # The first restart is immediate; the second one waits 10 s.
    assert time.monotonic() - t0 < 8
    assert cstatus(pod)["restartCount"] == 1
    assert cstatus(pod)["lastState"]["terminated"]["exitCode"] == 2
    assert "back-off 10s" in cstatus(pod)["state"]["waiting"].get("message", "")
    assert phase(pod) == "Running"
    pod = ns.wait("crashy", lambda p: int(cstatus(p).get("restartCount", 0)) >= 2, timeout=20)
    assert time.monotonic() - t0 >= 9


def test_restart_policies_and_phases(ns: Namespace) -> None:
    flaky = (
        "n=$(cat /data/n 2>/dev/null || echo 0); n=$((n+1)); echo $n > /data/n; "
        "echo attempt $n; [ $n -ge 2 ]"
    )
    data = {"volumeMounts": [{"name": "data", "mountPath": "/data"}]}
    empty = [{"name": "data", "emptyDir": {}}]
    ns.pod("onfailure-ok", [sh("main", "exit 0")], restart="OnFailure")
    ns.pod("onfailure-flaky", [sh("main", flaky, **data)], volumes=empty, restart="OnFailure")
    ns.pod("never-fails", [sh("main", "exit 3")], restart="Never")
    ns.pod("never-ok", [sh("main", "true")], restart="Never")
    done = ("Succeeded", "Failed")
    ok = ns.wait_phase("onfailure-ok", *done)
    assert phase(ok) == "Succeeded" and cstatus(ok)["restartCount"] == 0
    flaky_pod = ns.wait_phase("onfailure-flaky", *done)
    assert phase(flaky_pod) == "Succeeded", flaky_pod["status"]
    assert cstatus(flaky_pod)["restartCount"] == 1
    assert ns.logs("onfailure-flaky", "--previous") == "attempt 1\n"
    failed = ns.wait_phase("never-fails", *done)
    assert phase(failed) == "Failed"
    term = cstatus(failed)["state"]["terminated"]
    assert term["exitCode"] == 3 and term["reason"] == "Error"
    assert cstatus(failed)["restartCount"] == 0
    assert phase(ns.wait_phase("never-ok", *done)) == "Succeeded"


def test_missing_command_fails_with_start_error(ns: Namespace) -> None:
    ns.pod("nocmd", [{"name": "main", "image": "x", "command": ["lahar-no-such-command"]}])
    pod = ns.wait_phase("nocmd", "Succeeded", "Failed")
    assert phase(pod) == "Failed"
    term = cstatus(pod)["state"]["terminated"]
    assert term["reason"] == "StartError"
    assert term["exitCode"] == 128
    assert "lahar-no-such-command" in term["message"]
    assert "executable file not found" in term["message"]
    events = ns.events("nocmd")
    assert any(e["reason"] == "Failed" and "executable" in e["message"] for e in events)


def test_unsupported_volume_is_an_event_and_a_waiting_reason(ns: Namespace) -> None:
    ns.pod(
        "pvc",
        [sh("main", "true", volumeMounts=[{"name": "data", "mountPath": "/data"}])],
        volumes=[{"name": "data", "persistentVolumeClaim": {"claimName": "nothing"}}],
    )
    pod = ns.wait(
        "pvc",
        lambda p: (
            (cstatus(p).get("state") or {}).get("waiting", {}).get("reason") == "UnsupportedVolume"
        ),
    )
    assert phase(pod) == "Pending"
    assert "data" in cstatus(pod)["state"]["waiting"]["message"]
    deadline = time.monotonic() + 10
    events: list[Obj] = []
    while time.monotonic() < deadline:
        events = [e for e in ns.events("pvc") if e["reason"] == "FailedMount"]
        if events:
            break
        time.sleep(0.2)
    assert events and events[0]["type"] == "Warning", ns.events("pvc")


def _delete_seconds(ns: Namespace, name: str) -> float:
    t0 = time.monotonic()
    ns.kubectl("delete", "pod", name, "--wait", timeout=60)
    return time.monotonic() - t0


def test_deletion_with_a_sigterm_trap_is_fast(ns: Namespace) -> None:
    script = "trap 'echo bye; exit 0' TERM; echo ready; while :; do sleep 0.1; done"
    pod = ns.pod("trapper", [bash("main", script)], restart="Always", grace=30)
    pod = ns.wait("trapper", lambda p: running(p) and ns.logs("trapper") == "ready\n")
    started = run_file(ns.c, pod, "main")
    took = _delete_seconds(ns, "trapper")
    assert took < 5, f"deletion took {took:.1f}s"
    assert not _alive(int(started["pid"])) and not _alive(int(started["shim"]))
    assert not (ns.c.pods_dir / pod["metadata"]["uid"]).exists()


def test_deletion_of_a_process_ignoring_sigterm_waits_the_grace_period(ns: Namespace) -> None:
    script = "trap '' TERM; echo ready; while :; do sleep 0.1; done"
    pod = ns.pod("stubborn", [bash("main", script)], restart="Always", grace=2)
    pod = ns.wait("stubborn", lambda p: running(p) and ns.logs("stubborn") == "ready\n")
    started = run_file(ns.c, pod, "main")
    took = _delete_seconds(ns, "stubborn")
    assert 2 <= took < 8, f"deletion took {took:.1f}s"
    assert not _alive(int(started["pid"])) and not _alive(int(started["shim"]))
    uid12 = pod["metadata"]["uid"].replace("-", "")[:12]
    assert not Path("/run/netns", f"{ns.c.tag}-{uid12}").exists()


SERVER = (
    "mkdir -p /tmp/www && echo hello-from-$(hostname) > /tmp/www/index.html && "
    "cd /tmp/www && exec python3 -m http.server 8080"
)
CLIENT = """
import sys, time, urllib.request
url = sys.argv[1]
for _ in range(150):
    try:
        print(urllib.request.urlopen(url, timeout=2).read().decode().strip(), flush=True)
        break
    except OSError as exc:
        err = exc
        time.sleep(0.2)
else:
    sys.exit(f"cannot fetch {url}: {err}")
"""


def test_pods_have_own_ips_and_reach_each_other(ns: Namespace) -> None:
    import ipaddress

    ns.pod("server", [sh("main", SERVER)], restart="Always", labels={"app": "web"})
    server = ns.wait("server", lambda p: running(p) and bool(p["status"].get("podIP")))
    ip = server["status"]["podIP"]
    ns.pod("client", [py("main", CLIENT, f"http://{ip}:8080/")])
    client = ns.wait_phase("client", "Succeeded", "Failed")
    assert phase(client) == "Succeeded", ns.logs("client")
    assert ns.logs("client") == "hello-from-server\n"
    other = client["status"]["podIP"]
    assert ip != other
    net = ipaddress.ip_network(ns.c.cidr)
    assert ipaddress.ip_address(ip) in net and ipaddress.ip_address(other) in net
    # Nothing listens on the host: the server's port is only in its own namespace.
    ss = subprocess.run(["ss", "-Hltn"], capture_output=True, text=True).stdout
    assert not any(line.split()[3].endswith(":8080") for line in ss.splitlines())


def test_service_names_resolve_through_etc_hosts(ns: Namespace) -> None:
    ns.apply(
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "web"},
            "spec": {"selector": {"app": "web"}, "ports": [{"port": 8080}]},
        }
    )
    names = ["web", f"web.{ns.name}", f"web.{ns.name}.svc.cluster.local"]
    fetch = "; ".join(f'python3 -c "$CLIENT" http://{n}:8080/' for n in names)
    env = [{"name": "CLIENT", "value": CLIENT}]
    # The client starts first: the names appear in its /etc/hosts once the server has an IP.
    ns.pod("svc-client", [sh("main", f"set -e; {fetch}; cat /etc/hosts", env=env)])
    ns.wait("svc-client", lambda p: running(p) or phase(p) != "Pending")
    ns.pod("svc-server", [sh("main", SERVER)], restart="Always", labels={"app": "web"})
    server = ns.wait("svc-server", lambda p: bool(p["status"].get("podIP")))
    client = ns.wait_phase("svc-client", "Succeeded", "Failed", timeout=45)
    logs = ns.logs("svc-client")
    assert phase(client) == "Succeeded", logs
    lines = logs.splitlines()
    assert lines[:3] == ["hello-from-svc-server"] * 3
    ip = server["status"]["podIP"]
    hosts = [line.split() for line in lines[3:] if line and not line.startswith("#")]
    for name in names:
        assert any(h[0] == ip and name in h[1:] for h in hosts), (name, logs)


# -- the agent's own stop and crash ---------------------------------------------------------------


def test_stop_leaves_nothing(clusters: Clusters) -> None:
    c = clusters.new()
    try:
        c.start()
        space = Namespace(c, "default")
        space.pod("trap", [bash("main", "trap 'exit 0' TERM; while :; do sleep 0.1; done")])
        space.pod("stubborn", [bash("main", "trap '' TERM; while :; do sleep 0.1; done")])
        for name in ("trap", "stubborn"):
            space.wait(name, running)
        assert len(cluster_processes(c)) > 4
        code = c.stop()
        assert code == 0, c.log_tail()
        assert leftovers(c) == [], c.log_tail()
    finally:
        c.cleanup()


def test_kill9_restart_adopts_running_pods_and_removes_orphans(clusters: Clusters) -> None:
    c = clusters.new()
    stray: subprocess.Popen[bytes] | None = None
    try:
        c.start()
        space = Namespace(c, "default")
        script = "trap 'exit 0' TERM; echo up; while :; do sleep 0.2; done"
        space.pod("survivor", [bash("main", script)], restart="Always")
        pod = space.wait("survivor", running)
        before = run_file(c, pod, "main")
        container_id = cstatus(pod)["containerID"]
        assert c.proc is not None
        os.kill(c.proc.pid, signal.SIGKILL)
        c.proc.wait(10)
        assert _alive(int(before["pid"])), "the container died with the agent"

        # Leftovers of a pod that no longer exists: a directory and a live process.
        stray = subprocess.Popen(
            ["sleep", "1000"],
            env={**os.environ, MARK_VAR: c.mark},
            start_new_session=True,
        )
        orphan = c.pods_dir / str(uuid.uuid4())
        (orphan / "run").mkdir(parents=True)
        (orphan / "run" / "main.0.started.json").write_text(
            json.dumps({"shim": stray.pid, "pid": stray.pid, "at": time.time()})
        )
        (orphan / "logs").mkdir()

        c.start()
        deadline = time.monotonic() + 15
        while orphan.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not orphan.exists(), c.log_tail()
        assert stray.wait(10) == -signal.SIGKILL

        time.sleep(2)  # long enough for a wrongly restarted container to show
        pod = space.wait("survivor", running)
        assert cstatus(pod)["restartCount"] == 0
        assert cstatus(pod)["containerID"] == container_id
        assert run_file(c, pod, "main") == before
        assert _alive(int(before["pid"]))
        assert space.logs("survivor") == "up\n"

        took = _delete_seconds(space, "survivor")
        assert took < 5
        assert not _alive(int(before["pid"])) and not _alive(int(before["shim"]))
        assert not (c.pods_dir / pod["metadata"]["uid"]).exists()
        assert pod_processes(c) == []
        assert c.stop() == 0
        assert leftovers(c) == [], c.log_tail()
    finally:
        if stray is not None and stray.poll() is None:
            stray.kill()
            stray.wait(10)
        c.cleanup()
