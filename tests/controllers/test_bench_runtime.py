"""``lahar bench runtime`` on a small scale: the figures are there and make sense."""

from __future__ import annotations

import json

import pytest

from lahar.bench import runtime
from lahar.cli.main import main


def test_bench_runtime_small_in_process_by_default(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "runtime", "--objects", "60", "-o", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    rates = out["reconciles_per_s_by_concurrency"]
    assert set(rates) == {"1", "4", "16"}
    assert out["reconciles_per_s"] == max(rates.values()) > 0
    for level in rates:
        assert out["rounds"][level]["status_writes"] == 60
    assert 1 < out["informer_mb_per_10k_pods"] < 1000
    assert out["parameters"]["objects"] == 60 and "in-process" in out["parameters"]["server"]
    assert out["machine"]["cpus"]


def test_bench_runtime_small_subprocess() -> None:
    out = runtime.run(objects=30, in_process=False, informer_pods=500)
    assert out["rounds"]["16"]["status_writes"] == 30
    assert "separate" in out["parameters"]["server"]
