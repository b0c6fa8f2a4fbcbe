"""``lahar schedule`` end to end on YAML fixtures: output shapes and bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from lahar.cli.main import main

FIXTURES = Path(__file__).parent / "fixtures"
CLUSTER = str(FIXTURES / "cluster.yaml")


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["schedule", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_json_shape(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "-f", CLUSTER, "-o", "json")
    assert code == 0
    doc = json.loads(out)
    assert list(doc) == ["binds", "evictions", "pipelined", "podGroups", "queues"]
    assert doc["binds"] == {"ml/train-0": "node-b", "ml/train-1": "node-b"}
    assert doc["podGroups"]["ml/huge"]["phase"] == "Inqueue"
    assert set(doc["podGroups"]["ml/huge"]) == {"phase", "reason", "message"}
    research = doc["queues"]["research"]
    assert research["allocated"]["nvidia.com/gpu"] == "2"
    assert isinstance(research["share"], float)
    assert all(isinstance(v, str) for v in research["deserved"].values())


def test_yaml_equals_json(capsys: pytest.CaptureFixture[str]) -> None:
    _, out_json, _ = run(capsys, "-f", CLUSTER)
    _, out_yaml, _ = run(capsys, "-f", CLUSTER, "-o", "yaml")
    assert yaml.safe_load(out_yaml) == json.loads(out_json)


def test_text_explains_pending_groups(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "-f", CLUSTER, "-o", "text")
    assert code == 0
    assert "PodGroup ml/huge (Inqueue)" in out
    assert "gang short by 3 tasks" in out
    assert "0/3 nodes are available" in out or "no room" in out


def test_explain_adds_node_scores(capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = run(capsys, "-f", CLUSTER, "--explain")
    scores = json.loads(out)["nodeScores"]
    assert "ml/train-0" in scores
    assert all(isinstance(v, float) for v in scores["ml/train-0"].values())


def test_deterministic_output(capsys: pytest.CaptureFixture[str]) -> None:
    outs = {run(capsys, "-f", CLUSTER, "--seed", "7")[1] for _ in range(3)}
    assert len(outs) == 1


def test_config_file_and_multiple_files(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    conf = FIXTURES / "volcano-scheduler-helm.conf"
    extra = tmp_path / "more.yaml"
    extra.write_text(
        "apiVersion: v1\nkind: Node\nmetadata: {name: node-d}\n"
        "status: {allocatable: {cpu: '16', memory: 32Gi, pods: '110'}}\n"
    )
    code, out, _ = run(capsys, "-f", CLUSTER, "-f", str(extra), "--config", str(conf))
    assert code == 0
    assert "node-d" in json.loads(out)["binds"].values() or json.loads(out)["binds"]


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        (
            "kind: Pod\nmetadata: {name: p}\n"
            "spec: {containers: [{resources: {requests: {cpu: x}}}]}",
            "Pod default/p: spec.containers[0].resources.cpu",
        ),
        (
            "kind: Node\nmetadata: {name: n}\nstatus: {allocatable: {memory: -1Gi}}",
            "Node n: status.allocatable.memory",
        ),
        ("- not\n- an object", "is not an object"),
        ("a: [", "not valid YAML"),
    ],
)
def test_bad_input_exit_2_with_named_field(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, content: str, fragment: str
) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(content)
    code, out, err = run(capsys, "-f", str(path))
    assert code == 2 and out == ""
    assert fragment in err
    assert "Traceback" not in err


def test_bad_config_exit_2(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    conf = tmp_path / "c.conf"
    conf.write_text('actions: "allocate, teleport"\ntiers: []\n')
    code, _, err = run(capsys, "-f", CLUSTER, "--config", str(conf))
    assert code == 2 and "unknown action 'teleport'" in err
    conf.write_text('actions: "allocate"\ntiers:\n- plugins:\n  - name: magic\n')
    code, _, err = run(capsys, "-f", CLUSTER, "--config", str(conf))
    assert code == 2 and "unknown plugin 'magic'" in err


def test_missing_file_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "-f", "/nonexistent/x.yaml")
    assert code == 2 and "cannot read" in err
