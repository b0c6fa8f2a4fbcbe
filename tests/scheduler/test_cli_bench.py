"""``lahar bench scheduler``: the JSON it prints and its option errors (no timing checks)."""

from __future__ import annotations

import json

import pytest

from lahar.cli.main import main


def test_scheduler_bench_prints_figures(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["bench", "scheduler", "--nodes", "50", "--pods", "200", "-o", "json"])
    out, _ = capsys.readouterr()
    assert code == 0
    doc = json.loads(out)
    for key in (
        "placements_per_s",
        "session_seconds",
        "snapshot_seconds",
        "peak_rss_mb",
        "placed",
        "pending",
        "parameters",
        "machine",
    ):
        assert key in doc
    assert doc["parameters"] == {"nodes": 50, "pods": 200, "seed": 0, "config": "default"}
    assert doc["placed"] + doc["pending"] == 200
    assert {"cpus", "memory_gib", "python"} <= set(doc["machine"])


@pytest.mark.parametrize(
    "argv",
    [
        ["bench", "scheduler", "--nodes", "0"],
        ["bench", "scheduler", "--pods", "-1"],
        ["bench", "scheduler", "--seconds", "3"],
        ["bench", "apiserver", "--nodes", "10"],
        ["bench", "nothing"],
    ],
)
def test_bad_options_exit_2(capsys: pytest.CaptureFixture[str], argv: list[str]) -> None:
    assert main(argv) == 2
    assert "lahar bench" in capsys.readouterr().err
