"""``lahar render``: output formats, notes on stderr, exit 2 on bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from lahar.cli.main import main
from tests.kuberay.helpers import SAMPLES, minimal_job


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["render", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_json_output_is_a_list(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "-f", str(SAMPLES / "ray-job.sample.yaml"), "-o", "json")
    assert code == 0
    doc = json.loads(out)
    assert doc["kind"] == "List"
    assert [i["kind"] for i in doc["items"]] == [
        "RayJob",
        "RayCluster",
        "Service",
        "Pod",
        "Pod",
        "Job",
        "Service",
    ]
    assert "ignoring v1 ConfigMap 'ray-job-code-sample'" in err


def test_yaml_output_default_and_volcano(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(
        capsys,
        "-f",
        str(SAMPLES / "ray-cluster.volcano-scheduler-queue.yaml"),
        "--batch-scheduler",
        "volcano",
    )
    assert code == 0
    docs = list(yaml.safe_load_all(out))
    assert [d["kind"] for d in docs] == ["RayCluster", "Service", "PodGroup", "Pod", "Pod", "Pod"]
    assert "&id" not in out  # no YAML anchors


def test_output_is_reproducible_and_seeded(capsys: pytest.CaptureFixture[str]) -> None:
    path = str(SAMPLES / "ray-cluster.sample.yaml")
    first = run(capsys, "-f", path)[1]
    assert run(capsys, "-f", path)[1] == first
    assert run(capsys, "-f", path, "--seed", "7")[1] != first


@pytest.mark.parametrize("sample", sorted(p.name for p in SAMPLES.glob("*.yaml")))
def test_every_sample_renders(capsys: pytest.CaptureFixture[str], sample: str) -> None:
    for scheduler in ([], ["--batch-scheduler", "volcano"]):
        code, out, _ = run(capsys, "-f", str(SAMPLES / sample), "-o", "json", *scheduler)
        assert code == 0
        assert json.loads(out)["items"]


def test_invalid_input_exits_2_naming_the_field(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    job = minimal_job(ttlSecondsAfterFinished=10)
    job["spec"]["rayClusterSpec"]["workerGroupSpecs"][0]["minReplicas"] = 9
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(job))
    code, out, err = run(capsys, "-f", str(path))
    assert code == 2 and out == ""
    assert "spec.rayClusterSpec.workerGroupSpecs[0].minReplicas" in err
    assert "spec.ttlSecondsAfterFinished" in err
    assert "Traceback" not in err


def test_schema_errors_exit_2(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    job = minimal_job()
    job["spec"]["rayClusterSpec"]["workerGroupSpecs"][0]["replicas"] = "three"
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(job))
    code, _, err = run(capsys, "-f", str(path))
    assert code == 2 and "spec.rayClusterSpec.workerGroupSpecs[0].replicas" in err


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "kind: ConfigMap\napiVersion: v1\nmetadata: {name: x}\n",
            "no ray.io/v1 RayCluster or RayJob",
        ),
        ("a: [b\n", "not valid YAML"),
        ("- 1\n", "expected Kubernetes objects"),
        ("apiVersion: ray.io/v1alpha1\nkind: RayCluster\nmetadata: {name: x}\n", "not served"),
    ],
)
def test_bad_files(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, text: str, message: str
) -> None:
    path = tmp_path / "f.yaml"
    path.write_text(text)
    code, _, err = run(capsys, "-f", str(path))
    assert code == 2 and message in err


def test_missing_file(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, _, err = run(capsys, "-f", str(tmp_path / "nope.yaml"))
    assert code == 2 and "cannot read" in err
