"""The KubeRay-compatible operator, end to end, on ``lahar up`` with simulated nodes.

* Every KubeRay sample whose kinds lahar serves is applied unchanged (each in its own
  namespace) and reconciled into the objects ``lahar render --batch-scheduler volcano``
  says KubeRay would create: the same kinds and names, pods by group and type, and
  the rendered labels on the live objects. Names KubeRay makes up (the RayJob's
  RayCluster suffix, pod suffixes, ``generateName``) are matched through the live
  RayJob's status.
* The operator runs as its own process (``lahar up --disable operator`` next to
  ``lahar operator``) and is killed with SIGKILL at random moments while RayJobs run
  in HTTPMode against a stand-in Ray Jobs API this test serves on 127.0.0.1 (the
  operator reaches it through ``LAHAR_DASHBOARD_OVERRIDE``: simulated nodes run no
  Ray). No RayJob ever has two RayClusters, no job is submitted twice, and every
  RayJob reaches Complete.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.e2e.cluster import KUBECTL
from tests.e2e.simcluster import SimCluster, wait_for
from tests.e2e.test_samples import APPLICABLE

pytestmark = pytest.mark.skipif(not os.path.exists(KUBECTL), reason="kubectl not installed")

OPERATOR_KINDS = "rayclusters,rayjobs,pods,services,podgroups,jobs.batch"
RBAC = {"ServiceAccount": "serviceaccounts", "Role": "roles", "RoleBinding": "rolebindings"}
Obj = dict[str, Any]
# labels whose values KubeRay makes up (a random suffix): present, not equal
RANDOM_LABELS = {"ray.io/worker-group-replica-name"}
MADE_KINDS = {"RayCluster", "Pod", "Service", "PodGroup", "Job"}


def render(path: Path) -> list[Obj]:
    out = subprocess.run(
        [sys.executable, "-m", "lahar.cli.main", "render", "-f", str(path),
         "--batch-scheduler", "volcano", "-o", "json"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert out.returncode == 0, f"lahar render -f {path.name} failed:\n{out.stderr}"
    return json.loads(out.stdout)["items"]  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def sim() -> Iterator[SimCluster]:
    data = Path(tempfile.mkdtemp(prefix="lahar-e2e-ray-"))
    c = SimCluster(data / "data", nodes=6, cpu="32", memory="128Gi")
    try:
        yield c.start()
    finally:
        c.cleanup()
        shutil.rmtree(data, ignore_errors=True)


def _labels(obj: Obj) -> dict[str, str]:
    return obj["metadata"].get("labels") or {}


def _key(obj: Obj) -> tuple[str, str]:
    """How an object is matched: kind and name, or for a pod its cluster, group and type
    (and replica and host index), since pod names end in a random suffix."""
    if obj["kind"] == "Pod":
        lb = _labels(obj)
        parts = (lb.get("ray.io/cluster", ""), lb.get("ray.io/group", ""),
                 lb.get("ray.io/node-type", ""), lb.get("ray.io/worker-group-replica-index", ""),
                 lb.get("ray.io/replica-host-index", ""))  # fmt: skip
        return "Pod", "/".join(parts)
    return obj["kind"], obj["metadata"]["name"]


def _rename(value: Any, names: dict[str, str]) -> Any:
    """``value`` with every made-up name of the render replaced by the live one."""
    text = json.dumps(value)
    for old, new in sorted(names.items(), key=lambda kv: -len(kv[0])):
        text = text.replace(old, new)
    return json.loads(text)


def served_rbac(sim: SimCluster) -> set[str]:
    """The RBAC kinds this server serves (the operator creates only those, as KubeRay
    would fail to: lahar's embedded server has no RBAC API)."""
    names = set(sim.kubectl("api-resources", "-o", "name").stdout.split())
    return {kind for kind, plural in RBAC.items() if plural in names or
            f"{plural}.rbac.authorization.k8s.io" in names}  # fmt: skip


def _live(sim: SimCluster, ns: str) -> list[Obj]:
    kinds = ",".join([OPERATOR_KINDS, *(RBAC[k] for k in sorted(served_rbac(sim)))])
    items = sim.get_json(kinds, "-n", ns)["items"]
    out = []
    for obj in items:
        owners = {o["kind"] for o in obj["metadata"].get("ownerReferences") or ()}
        if obj["kind"] == "Pod" and "Job" in owners:
            continue  # the submitter's pod: made by the Job controller, not the operator
        out.append(obj)
    return out


def _name_map(rendered: list[Obj], live: list[Obj]) -> dict[str, str] | None:
    """Render's made-up names -> the live ones (None while the live ones are not known)."""
    names: dict[str, str] = {}
    r_jobs = [o for o in rendered if o["kind"] == "RayJob"]
    l_jobs = [o for o in live if o["kind"] == "RayJob"]
    if r_jobs:
        if len(l_jobs) != 1:
            return None
        names[r_jobs[0]["metadata"]["name"]] = l_jobs[0]["metadata"]["name"]
        r_clusters = [o for o in rendered if o["kind"] == "RayCluster"]
        live_cluster = (l_jobs[0].get("status") or {}).get("rayClusterName")
        if r_clusters and not (l_jobs[0]["spec"].get("clusterSelector")):
            if not live_cluster:
                return None
            names[r_clusters[0]["metadata"]["name"]] = live_cluster
    return names


@pytest.mark.parametrize("path", APPLICABLE, ids=lambda p: p.name)
def test_sample_is_reconciled_into_what_kuberay_creates(sim: SimCluster, path: Path) -> None:
    ns = "op-" + path.stem.replace(".", "-")[:50].strip("-")
    sim.kubectl("create", "namespace", ns)
    text = path.read_text()
    if "clusterSelector" in text:  # the RayJob submits to an existing cluster
        cluster = yaml.safe_load(APPLICABLE_BY_NAME["ray-cluster.sample.yaml"].read_text())
        selector = yaml.safe_load(text)["spec"]["clusterSelector"]["ray.io/cluster"]
        cluster["metadata"]["name"] = selector
        sim.kubectl("apply", "-n", ns, "-f", "-", input=yaml.safe_dump(cluster))
    verb = "create" if "generateName" in text else "apply"
    sim.kubectl(verb, "-n", ns, "-f", str(path))
    unserved = set(RBAC) - served_rbac(sim)
    rendered = [o for o in render(path) if o["kind"] not in {"ConfigMap", "Queue", *unserved}]

    def matched() -> tuple[dict[tuple[str, str], Obj], list[Obj]] | None:
        live = _live(sim, ns)
        names = _name_map(rendered, live)
        if names is None:
            return None
        want = [_rename(o, names) for o in rendered]
        have = {_key(o): o for o in live}
        if not all(_key(o) in have for o in want):
            return None
        return have, want

    def missing() -> str:
        live = _live(sim, ns)
        names = _name_map(rendered, live) or {}
        have = {_key(o) for o in live}
        return str(
            [_key(_rename(o, names)) for o in rendered if _key(_rename(o, names)) not in have]
        )

    if "InteractiveMode" in text:
        # The RayJob waits for a job id (KubeRay makes its own head Service only once
        # Running): give it one, as the interactive user does.
        wait_for(lambda: _job_state(sim, ns) == "Waiting", 40, "the RayJob Waiting", 0.5)
        name = yaml.safe_load(text)["metadata"]["name"]
        patch = json.dumps({"spec": {"jobId": "interactive-1"}})
        sim.kubectl("patch", "rayjob", name, "-n", ns, "--type", "merge", "-p", patch)
    try:
        _compare(sim, ns, path, matched, missing)
    finally:
        # Free the capacity (samples share Volcano queues): the Ray objects go, the
        # rest of the namespace stays for a post-mortem.
        sim.kubectl("delete", "rayclusters,rayjobs", "--all", "-n", ns, "--wait=false")


def _compare(sim: SimCluster, ns: str, path: Path, matched: Any, missing: Any) -> None:
    """Wait for every rendered object, then compare labels and the sets of objects."""
    text = path.read_text()
    try:
        have, want = wait_for(matched, 40, f"the objects of {path.name}", 0.5)
    except AssertionError as exc:
        raise AssertionError(f"{exc}; missing: {missing()}") from None
    for obj in want:
        live_obj = have[_key(obj)]
        for k, v in _labels(obj).items():
            if k in RANDOM_LABELS:
                assert k in _labels(live_obj), (obj["kind"], _key(obj), k)
                continue
            assert _labels(live_obj).get(k) == v, (obj["kind"], _key(obj), k, v, _labels(live_obj))
    if "clusterSelector" in text:
        return  # the namespace also holds the selected cluster's own objects
    # Nothing the render does not know of: every operator-made object is accounted for.
    wanted = Counter(_key(o) for o in want if o["kind"] in MADE_KINDS)
    made = Counter(_key(o) for o in _live(sim, ns) if o["kind"] in MADE_KINDS)
    assert made == wanted, (made - wanted, wanted - made)


APPLICABLE_BY_NAME = {p.name: p for p in APPLICABLE}


def _job_state(sim: SimCluster, ns: str) -> str | None:
    jobs = sim.get_json("rayjobs", "-n", ns)["items"]
    return (jobs[0].get("status") or {}).get("jobDeploymentStatus") if jobs else None


# -- the operator killed with SIGKILL while RayJobs run -----------------------------------


class StandInRay:
    """A tiny Ray Jobs API on 127.0.0.1: a submitted job is RUNNING for ``run_for``
    seconds, then SUCCEEDED. Every accepted submission is counted by submission id."""

    def __init__(self, run_for: float = 2.0) -> None:
        self.run_for = run_for
        self.jobs: dict[str, tuple[float, str]] = {}  # id -> (submitted at, entrypoint)
        self.accepted: Counter[str] = Counter()  # entrypoint -> accepted submissions
        self.lock = threading.Lock()
        stand_in = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _send(self, code: int, body: Any, text: bool = False) -> None:
                data = (body if text else json.dumps(body)).encode()
                self.send_response(code)
                self.send_header("content-type", "text/plain" if text else "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:  # http.server's name
                if self.path == "/api/version":
                    return self._send(200, {"version": "4", "ray_version": "2.60.0"})
                sid = self.path.removeprefix("/api/jobs/").strip("/")
                with stand_in.lock:
                    job = stand_in.jobs.get(sid)
                if job is None:
                    return self._send(404, f"Job {sid} does not exist", text=True)
                return self._send(200, stand_in.details(sid, *job))

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))))
                sid = body.get("submission_id") or f"raysubmit_{len(stand_in.jobs)}"
                with stand_in.lock:
                    if sid in stand_in.jobs:
                        line = f"ValueError: Job with submission_id {sid} already exists. "
                        return self._send(500, line + "Please use a different submission_id.",
                                          text=True)  # fmt: skip
                    stand_in.jobs[sid] = (time.time(), body["entrypoint"])
                    stand_in.accepted[body["entrypoint"]] += 1
                return self._send(200, {"job_id": sid, "submission_id": sid})

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.server.server_address[1]}"

    def details(self, sid: str, at: float, entrypoint: str) -> Obj:
        done = time.time() >= at + self.run_for
        return {
            "type": "SUBMISSION", "job_id": "02000000", "submission_id": sid,
            "status": "SUCCEEDED" if done else "RUNNING", "entrypoint": entrypoint,
            "message": "Job finished successfully." if done else "Job is currently running.",
            "start_time": int(at * 1000),
            "end_time": int((at + self.run_for) * 1000) if done else None,
            "metadata": {}, "runtime_env": {}, "driver_exit_code": None, "error_type": None,
        }  # fmt: skip

    def __enter__(self) -> StandInRay:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


def http_rayjob(name: str) -> Obj:
    container = {"image": "rayproject/ray:2.52.0",
                 "resources": {"requests": {"cpu": "500m", "memory": "512Mi"}}}  # fmt: skip
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayJob",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "entrypoint": f"python job.py --name {name}",
            "submissionMode": "HTTPMode",
            "rayClusterSpec": {
                "headGroupSpec": {"rayStartParams": {},
                                  "template": {"spec": {"containers": [
                                      {"name": "ray-head", **container}]}}},
                "workerGroupSpecs": [{"groupName": "w", "replicas": 1, "minReplicas": 1,
                                      "maxReplicas": 1, "rayStartParams": {},
                                      "template": {"spec": {"containers": [
                                          {"name": "ray-worker", **container}]}}}],
            },
        },
    }  # fmt: skip


def test_operator_killed_at_random_points_duplicates_nothing(tmp_path: Path) -> None:
    rng = random.Random(int(os.environ.get("LAHAR_TEST_SEED", "7")))
    c = SimCluster(tmp_path / "data", nodes=4, cpu="16", memory="64Gi",
                   up_args=("--disable", "operator"))  # fmt: skip
    with StandInRay(run_for=2.0) as ray:
        try:
            c.start()
            env = {"LAHAR_DASHBOARD_OVERRIDE": ray.address}
            args = ("operator", "--kubeconfig", str(c.kubeconfig), "--batch-scheduler",
                    "volcano", "--health-port", "-1")  # fmt: skip
            op = c.spawn("operator", *args, env=env)
            names = [f"rj-{i}" for i in range(4)]
            c.cluster.apply_yaml([http_rayjob(n) for n in names])
            clusters_seen: dict[str, set[str]] = {n: set() for n in names}
            kills = 0
            deadline = time.monotonic() + 50
            while True:
                items = c.get_json("rayclusters", "-n", "default")["items"]
                for rc in items:
                    owner = _labels(rc).get("ray.io/originated-from-cr-name")
                    if owner in clusters_seen:
                        clusters_seen[owner].add(rc["metadata"]["name"])
                jobs = c.get_json("rayjobs", "-n", "default")["items"]
                states = {j["metadata"]["name"]: (j.get("status") or {}).get(
                    "jobDeploymentStatus") for j in jobs}  # fmt: skip
                if all(states.get(n) in ("Complete", "Failed") for n in names):
                    break
                assert time.monotonic() < deadline, f"RayJobs not finished: {states}"
                if kills < 6 and rng.random() < 0.5:
                    time.sleep(rng.uniform(0.0, 1.5))
                    op.kill9()
                    kills += 1
                    op = c.spawn("operator", *args, env=env)
                time.sleep(0.3)
            assert kills >= 3, kills
            for job in c.get_json("rayjobs", "-n", "default")["items"]:
                st = job["status"]
                assert (st["jobDeploymentStatus"], st.get("jobStatus")) == (
                    "Complete", "SUCCEEDED"), st  # fmt: skip
                assert clusters_seen[job["metadata"]["name"]] == {st["rayClusterName"]}
            assert len(c.get_json("rayclusters", "-n", "default")["items"]) == len(names)
            assert ray.accepted == Counter({f"python job.py --name {n}": 1 for n in names})
        finally:
            c.cleanup()
