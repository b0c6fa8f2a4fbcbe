"""Jobs: defaults, generated selector and labels, template rules, immutability."""

from __future__ import annotations

import copy

from lahar.apiserver.builtins import default

from .helpers import RT, context, create, update

JOB = RT["Job"]
UID = "0f1e2d3c-aaaa-bbbb-cccc-000000000001"


def job(restart: str | None = "Never", **spec: object) -> dict:
    pod_spec: dict = {"containers": [{"name": "pi", "image": "perl:5.34"}]}
    if restart:
        pod_spec["restartPolicy"] = restart
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "pi", "namespace": "default", "uid": UID},
        "spec": {"template": {"spec": pod_spec}, **spec},
    }


def test_defaults_match_a_real_job() -> None:
    out = default(job(), JOB, context())
    spec = out["spec"]
    assert {k: v for k, v in spec.items() if k != "template"} == {
        "completions": 1,
        "parallelism": 1,
        "backoffLimit": 6,
        "completionMode": "NonIndexed",
        "suspend": False,
        "manualSelector": False,
        "podReplacementPolicy": "TerminatingOrFailed",
        "selector": {"matchLabels": {"batch.kubernetes.io/controller-uid": UID}},
    }
    assert spec["template"]["metadata"]["labels"] == {
        "batch.kubernetes.io/controller-uid": UID,
        "batch.kubernetes.io/job-name": "pi",
        "controller-uid": UID,
        "job-name": "pi",
    }
    template = spec["template"]["spec"]
    assert (template["restartPolicy"], template["terminationGracePeriodSeconds"]) == ("Never", 30)
    assert "enableServiceLinks" not in template  # pod-only default
    assert out["status"] == {}
    assert create(job(), "Job") == []


def test_parallelism_and_backoff_variants() -> None:
    out = default(job(parallelism=3), JOB, context())["spec"]
    assert (out.get("completions"), out["parallelism"]) == (None, 3)
    out = default(job(completions=5), JOB, context())["spec"]
    assert (out["completions"], out["parallelism"]) == (5, 1)
    out = default(
        job(completionMode="Indexed", completions=2, backoffLimitPerIndex=1), JOB, context()
    )["spec"]
    assert out["backoffLimit"] == 2**31 - 1
    out = default(job(podFailurePolicy={"rules": []}), JOB, context())["spec"]
    assert out["podReplacementPolicy"] == "Failed"


def test_job_labels_follow_template_labels() -> None:
    obj = job()
    obj["spec"]["template"]["metadata"] = {"labels": {"app": "pi"}}
    out = default(obj, JOB, context())
    assert out["metadata"]["labels"]["app"] == "pi"
    assert out["metadata"]["labels"]["job-name"] == "pi"
    assert default(job(), JOB, context())["metadata"]["labels"]["controller-uid"] == UID


def test_restart_policy_must_be_never_or_on_failure() -> None:
    assert create(job(restart=None), "Job") == [
        'spec.template.spec.restartPolicy: Required value: valid values: "OnFailure", "Never"'
    ]
    assert create(job(restart="Always"), "Job") == [
        'spec.template.spec.restartPolicy: Required value: valid values: "OnFailure", "Never"'
    ]
    assert create(job(restart="Sometimes"), "Job") == [
        'spec.template.spec.restartPolicy: Unsupported value: "Sometimes": supported values: '
        '"Always", "OnFailure", "Never"',
        'spec.template.spec.restartPolicy: Unsupported value: "Sometimes": supported values: '
        '"OnFailure", "Never"',
    ]


def test_template_pod_spec_errors_use_template_paths() -> None:
    obj = job()
    obj["spec"]["template"]["spec"]["containers"] = [{"name": "pi"}]
    assert create(obj, "Job") == ["spec.template.spec.containers[0].image: Required value"]


def test_spec_fields() -> None:
    out = create(job(parallelism=-1, completionMode="Sometimes", backoffLimitPerIndex=2), "Job")
    assert out == [
        "spec.parallelism: Invalid value: -1: must be greater than or equal to 0",
        'spec.completionMode: Unsupported value: "Sometimes": supported values: "NonIndexed", '
        '"Indexed"',
        "spec.backoffLimitPerIndex: Invalid value: 2: requires indexed completion mode",
    ]
    assert create(job(completionMode="Indexed", parallelism=2), "Job") == [
        "spec.completions: Required value: when completion mode is Indexed"
    ]


def test_manual_selector_must_match_template() -> None:
    obj = job(manualSelector=True, selector={"matchLabels": {"app": "x"}})
    obj["spec"]["template"]["metadata"] = {"labels": {"app": "y"}}
    assert create(obj, "Job") == [
        'spec.template.metadata.labels: Invalid value: map[string]string{"app":"y"}: '
        "`selector` does not match template `labels`"
    ]
    assert create(job(manualSelector=True), "Job") == ["spec.selector: Required value"]


def test_generated_selector_conflicts() -> None:
    obj = job(selector={"matchLabels": {"batch.kubernetes.io/controller-uid": "other"}})
    out = create(obj, "Job")
    assert out[0].startswith('spec.selector: Invalid value: {"matchLabels"')
    assert out[0].endswith("`selector` not auto-generated")


def test_indexed_job_names_must_fit_pod_hostnames() -> None:
    obj = job(completionMode="Indexed", completions=10)
    obj["metadata"]["name"] = "j" * 62
    out = create(obj, "Job")
    assert (
        f'metadata.name: Invalid value: "{"j" * 62}": will not able to create pod with invalid DNS '
        f"label: {'j' * 62}-9" in out
    )


def stored(**spec: object) -> dict:
    return default(job(**spec), JOB, context())


def test_update_rules() -> None:
    old = stored()
    new = copy.deepcopy(old)
    new["spec"]["parallelism"] = 4
    new["spec"]["activeDeadlineSeconds"] = 60
    new["metadata"]["labels"] = {"team": "a"}
    assert update(new, old, "Job") == []
    new = copy.deepcopy(old)
    new["spec"]["completions"] = 3
    new["spec"]["template"]["spec"]["containers"][0]["image"] = "perl:5.40"
    out = update(new, old, "Job")
    assert out[0] == "spec.completions: Invalid value: 3: field is immutable"
    assert out[1].startswith('spec.template: Invalid value: {"metadata"')
    assert out[1].endswith(": field is immutable")
    assert len(out) == 2


def test_suspended_jobs_may_change_scheduling_directives() -> None:
    old = stored(suspend=True)
    new = copy.deepcopy(old)
    new["spec"]["template"]["spec"]["nodeSelector"] = {"zone": "b"}
    new["spec"]["template"]["spec"]["tolerations"] = [{"key": "gpu", "operator": "Exists"}]
    new["spec"]["template"]["metadata"]["labels"]["queue"] = "q1"
    new["spec"]["suspend"] = False
    assert update(new, old, "Job") == []
    started = copy.deepcopy(old)
    started["status"] = {"startTime": "2026-11-29T10:00:00Z"}
    assert update(new, started, "Job")[0].startswith("spec.template: Invalid value")


def test_elastic_indexed_jobs() -> None:
    old = stored(completionMode="Indexed", completions=4, parallelism=4)
    new = copy.deepcopy(old)
    new["spec"]["completions"] = new["spec"]["parallelism"] = 6
    assert update(new, old, "Job") == []
    new["spec"]["parallelism"] = 5
    assert update(new, old, "Job") == [
        "spec.completions: Invalid value: 6: can only be modified in tandem with spec.parallelism"
    ]


def test_status_update() -> None:
    old = stored()
    new = copy.deepcopy(old)
    new["status"] = {"active": -1, "succeeded": 1}
    assert update(new, old, "Job", subresource="status") == [
        "status.active: Invalid value: -1: must be greater than or equal to 0"
    ]
