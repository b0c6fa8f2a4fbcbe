"""Scenario tests: every RayJob sample (kuberay-semantics.md §2.5, §2.6, §5.2)."""

from __future__ import annotations

import re

from tests.kuberay.helpers import env, head_pod, of_kind, one, rendered, service, worker_pods

SUFFIX = "[bcdfghjklmnpqrstvwxz2456789]{5}"
RUNTIME_ENV = '"{\\"env_vars\\":{\\"counter_name\\":\\"test_counter\\"},\\"pip\\":[\\"requests==2.26.0\\",\\"pendulum==2.1.2\\"]}"'


def test_rayjob_sample_k8s_job_mode() -> None:
    r = rendered("ray-job.sample.yaml")
    kinds = [o["kind"] for o in r.objects]
    assert kinds == ["RayJob", "RayCluster", "Service", "Pod", "Pod", "Job", "Service"]
    job = r.objects[0]
    status = job["status"]
    assert re.fullmatch(f"rayjob-sample-{SUFFIX}", status["jobId"])
    cluster_name = status["rayClusterName"]
    assert re.fullmatch(f"rayjob-sample-{SUFFIX}", cluster_name)
    assert status["dashboardURL"] == f"{cluster_name}-head-svc.default.svc.cluster.local:8265"
    assert job["spec"]["submissionMode"] == "K8sJobMode"  # CRD default
    assert job["metadata"]["finalizers"] == ["ray.io/rayjob-finalizer"]

    cluster = one(r, "RayCluster")
    assert cluster["metadata"]["name"] == cluster_name
    assert cluster["metadata"]["labels"] == {
        "ray.io/originated-from-cr-name": "rayjob-sample",
        "ray.io/originated-from-crd": "RayJob",
        "ray.io/job-submission-mode": "K8sJobMode",
    }
    assert cluster["metadata"]["ownerReferences"][0]["kind"] == "RayJob"
    assert cluster["metadata"]["ownerReferences"][0]["uid"] == job["metadata"]["uid"]
    assert cluster["spec"]["workerGroupSpecs"][0]["numOfHosts"] == 1

    head = head_pod(r)
    assert env(head["spec"]["containers"][0])["RAY_USAGE_STATS_EXTRA_TAGS"].endswith(
        "kuberay_crd=RayJob"
    )
    (worker,) = worker_pods(r)
    wray = worker["spec"]["containers"][0]
    # worker: CPU limit 1 (request 200m), no memory at all
    assert "--num-cpus=1 " in wray["args"][0] and "--memory" not in wray["args"][0]
    assert {"name": "shared-mem", "emptyDir": {"medium": "Memory"}} in worker["spec"]["volumes"]

    submitter = one(r, "Job")
    assert submitter["apiVersion"] == "batch/v1"
    assert submitter["metadata"]["name"] == "rayjob-sample"
    labels = {
        "ray.io/originated-from-cr-name": "rayjob-sample",
        "ray.io/originated-from-crd": "RayJob",
        "app.kubernetes.io/created-by": "kuberay-operator",
    }
    assert submitter["metadata"]["labels"] == labels
    assert submitter["metadata"]["ownerReferences"][0]["name"] == "rayjob-sample"
    assert submitter["spec"]["backoffLimit"] == 2
    template = submitter["spec"]["template"]
    assert template["metadata"]["labels"] == labels
    assert template["spec"]["restartPolicy"] == "Never"
    (container,) = template["spec"]["containers"]
    assert container["name"] == "ray-job-submitter"
    assert container["image"] == "rayproject/ray:2.52.0"
    assert container["command"] == ["/bin/bash", "-ce", "--"]
    assert container["resources"] == {
        "limits": {"cpu": "1", "memory": "1Gi"},
        "requests": {"cpu": "500m", "memory": "200Mi"},
    }
    addr = f"http://{status['dashboardURL']}"
    jid = status["jobId"]
    script = container["args"][0]
    assert script.startswith("until python -c ")
    assert f"{addr}/api/gcs_healthz" in script
    guard = f"if ! ray job status --address {addr} {jid} >/dev/null 2>&1 ; then "
    submit = (
        f"ray job submit --address {addr} --no-wait --runtime-env-json {RUNTIME_ENV} "
        f"--submission-id {jid} -- python /home/ray/samples/sample_code.py ; fi ; "
    )
    assert guard + submit in script
    assert script.endswith(f"ray job logs --address {addr} --follow {jid}")
    assert env(container) == {
        "PYTHONUNBUFFERED": "1",
        "RAY_DASHBOARD_ADDRESS": status["dashboardURL"],
        "RAY_JOB_SUBMISSION_ID": jid,
    }

    job_svc = service(r, "rayjob-sample-head-svc")
    assert job_svc["metadata"]["labels"] == {
        "ray.io/originated-from-cr-name": "rayjob-sample",
        "ray.io/originated-from-crd": "RayJob",
        "ray.io/node-type": "head",
        "ray.io/identifier": "rayjob-sample-head",
    }
    assert job_svc["spec"]["selector"]["ray.io/cluster"] == cluster_name
    assert job_svc["metadata"]["ownerReferences"][0]["kind"] == "RayJob"


def test_rayjob_sample_volcano() -> None:
    r = rendered("ray-job.sample.yaml", "volcano")
    assert [o["kind"] for o in r.objects][:3] == ["RayJob", "PodGroup", "RayCluster"]
    pg = one(r, "PodGroup")
    assert pg["metadata"]["name"] == "ray-rayjob-sample-pg"
    assert pg["metadata"]["ownerReferences"][0]["kind"] == "RayJob"
    # head 1/2Gi + worker 200m (no memory) + submitter 500m/200Mi; members exclude it
    assert pg["spec"]["minMember"] == 2
    assert pg["spec"]["minResources"] == {"cpu": "1700m", "memory": "2248Mi"}


def test_volcano_queue_rayjob_sample() -> None:
    r = rendered("ray-job.volcano-scheduler-queue.yaml", "volcano")
    pg = one(r, "PodGroup")
    # the spec's worked example: 3 members, {3500m, 4296Mi}
    assert pg["spec"] == {
        "minMember": 3,
        "minResources": {"cpu": "3500m", "memory": "4296Mi"},
        "queue": "kuberay-test-queue",
    }
    cluster = one(r, "RayCluster")
    assert (
        cluster["metadata"]["annotations"]["scheduling.k8s.io/group-name"]
        == "ray-rayjob-sample-0-pg"
    )
    assert cluster["metadata"]["annotations"]["volcano.sh/task-spec"] == ""
    assert "schedulerName" not in cluster["spec"]
    for pod in of_kind(r, "Pod"):
        meta = pod["metadata"]
        assert meta["annotations"]["scheduling.k8s.io/group-name"] == "ray-rayjob-sample-0-pg"
        assert meta["labels"]["volcano.sh/queue-name"] == "kuberay-test-queue"
        assert pod["spec"]["schedulerName"] == "volcano"
    template = one(r, "Job")["spec"]["template"]
    assert template["metadata"]["annotations"] == {
        "scheduling.k8s.io/group-name": "ray-rayjob-sample-0-pg",
        "volcano.sh/task-spec": "submittergroup",
    }
    assert template["spec"]["schedulerName"] == "volcano"


def test_resources_sample_submit_flags() -> None:
    r = rendered("ray-job.resources.yaml")
    script = one(r, "Job")["spec"]["template"]["spec"]["containers"][0]["args"][0]
    jid = r.objects[0]["status"]["jobId"]
    flags = (
        f"--runtime-env-json {RUNTIME_ENV} --submission-id {jid} --entrypoint-num-cpus 2.000000 "
        '--entrypoint-num-gpus 0.500000 --entrypoint-resources "{\\"resource1\\": 1, \\"resource2\\": 2}" '
        "-- python /home/ray/samples/sample_code.py"
    )
    assert flags in script
    head_args = head_pod(r)["spec"]["containers"][0]["args"][0]
    assert (
        '--num-cpus=3  --num-gpus=2  --resources="{\\"resource1\\": 2, \\"resource2\\": 3}" '
        in head_args
    )


def test_sidecar_mode_sample() -> None:
    r = rendered("ray-job.sidecar-mode.yaml", "volcano")
    assert not of_kind(r, "Job")
    cluster = one(r, "RayCluster")
    assert cluster["metadata"]["annotations"]["ray.io/disable-provisioned-head-restart"] == "true"
    assert (
        "scheduling.k8s.io/group-name" not in cluster["metadata"]["annotations"]
    )  # K8sJobMode only
    head = head_pod(r)
    assert head["spec"]["restartPolicy"] == "Never"
    _ray, sidecar = head["spec"]["containers"]
    assert sidecar["name"] == "ray-job-submitter"
    jid = r.objects[0]["status"]["jobId"]
    script = sidecar["args"][0]
    assert "http://localhost:8265/api/gcs_healthz" in script
    assert (
        '"Waiting for Ray Dashboard GCS to become healthy at http://127.0.0.1:8265 ..."' in script
    )
    assert script.endswith(
        f"ray job submit --address http://127.0.0.1:8265 --runtime-env-json {RUNTIME_ENV} "
        f"--submission-id {jid} -- python /home/ray/samples/sample_code.py ;"
    )
    assert "--no-wait" not in script and "ray job status" not in script
    assert env(sidecar) == {
        "PYTHONUNBUFFERED": "1",
        "RAY_DASHBOARD_ADDRESS": "",
        "RAY_JOB_SUBMISSION_ID": jid,
    }
    pg = one(r, "PodGroup")
    # head 1/2Gi + worker 1/1Gi + the sidecar's 500m/200Mi
    assert pg["spec"]["minMember"] == 2
    assert pg["spec"]["minResources"] == {"cpu": "2500m", "memory": "3272Mi"}


def test_light_weight_submitter_sample() -> None:
    r = rendered("ray-job.light-weight-submitter.yaml", "volcano")
    template = one(r, "Job")["spec"]["template"]
    (container,) = template["spec"]["containers"]
    assert container["command"] == ["/submitter"]
    assert container["args"][0] == "--runtime-env-json"
    assert [e["name"] for e in container["env"]] == [
        "PYTHONUNBUFFERED",
        "RAY_DASHBOARD_ADDRESS",
        "RAY_JOB_SUBMISSION_ID",
    ]
    assert template["metadata"]["labels"]["ray.io/originated-from-crd"] == "RayJob"
    # the user's submitter declares no resources: nothing added to minResources
    assert one(r, "PodGroup")["spec"]["minResources"] == {"cpu": "2", "memory": "3Gi"}


def test_interactive_mode_sample() -> None:
    r = rendered("ray-job.interactive-mode.yaml")
    assert not of_kind(r, "Job")
    assert "jobId" not in r.objects[0]["status"]
    assert (
        one(r, "RayCluster")["metadata"]["labels"]["ray.io/job-submission-mode"]
        == "InteractiveMode"
    )
    assert len(worker_pods(r)) == 1
    assert any("InteractiveMode" in n for n in r.notes)


def test_use_existing_cluster_sample() -> None:
    r = rendered("ray-job.use-existing-raycluster.yaml")
    assert [o["kind"] for o in r.objects] == ["RayJob", "Job"]
    status = r.objects[0]["status"]
    assert status["rayClusterName"] == "ray-cluster-kuberay"
    assert status["dashboardURL"] == "ray-cluster-kuberay-head-svc.default.svc.cluster.local:8265"
    # lahar's fix of KubeRay's trap: with Volcano the RayJob still gets its submitter,
    # and no PodGroup of its own (it joins the existing cluster's).
    volcano = rendered("ray-job.use-existing-raycluster.yaml", "volcano")
    assert [o["kind"] for o in volcano.objects] == ["RayJob", "Job"]
    assert any("no PodGroup of its own" in n for n in volcano.notes)


def test_deletion_rules_shutdown_and_kueue_samples() -> None:
    r = rendered("ray-job.deletion-rules.yaml")
    script = one(r, "Job")["spec"]["template"]["spec"]["containers"][0]["args"][0]
    assert '-- python -c "\nimport ray\n' in script  # trimmed, unquoted entrypoint
    assert (
        one(rendered("ray-job.shutdown.yaml"), "Job")["metadata"]["name"]
        == "rayjob-sample-shutdown"
    )
    kueue = rendered("ray-job.kueue-toy-sample.yaml")
    name = kueue.objects[0]["metadata"]["name"]
    assert re.fullmatch(f"rayjob-sample-{SUFFIX}", name)
    assert one(kueue, "Job")["metadata"]["name"] == name


def test_yunikorn_rayjob_sample() -> None:
    r = rendered("ray-job.yunikorn-scheduler.yaml")
    cluster = one(r, "RayCluster")
    assert cluster["metadata"]["labels"]["yunikorn.apache.org/queue"] == "root.test"


def test_seed_changes_suffixes_but_not_shape() -> None:
    a, b = rendered("ray-job.sample.yaml", seed=1), rendered("ray-job.sample.yaml", seed=2)
    assert [o["kind"] for o in a.objects] == [o["kind"] for o in b.objects]
    assert a.objects[0]["status"]["jobId"] != b.objects[0]["status"]["jobId"]
    again = rendered("ray-job.sample.yaml", seed=1)
    assert again.objects == a.objects


def test_missing_dashboard_port_stops_before_the_submitter() -> None:
    from lahar.kuberay.render import render_rayjob
    from tests.kuberay.helpers import minimal_job

    job = minimal_job()
    head = job["spec"]["rayClusterSpec"]["headGroupSpec"]["template"]["spec"]["containers"][0]
    head["ports"] = [{"name": "gcs-server", "containerPort": 6379}]
    r = render_rayjob(job)
    assert [o["kind"] for o in r.objects] == ["RayJob", "RayCluster", "Service", "Pod", "Pod"]
    assert "dashboardURL" not in r.objects[0]["status"]
    assert any("dashboard" in n for n in r.notes)
