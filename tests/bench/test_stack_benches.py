"""The whole-stack benchmarks run at a tiny size and print their keys (figures are
reported, never asserted)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest


@pytest.mark.parametrize(
    ("args", "keys"),
    [
        (
            ["e2e", "--nodes", "10", "--pods", "40"],
            ["pods_per_s", "create_to_bound_p50_ms", "create_to_bound_p99_ms"],
        ),
        (["operator", "--clusters", "3"], ["seconds", "pods_per_s", "reconciles_per_s"]),
    ],
)
def test_stack_bench_prints_its_keys(args: list[str], keys: list[str]) -> None:
    res = subprocess.run(
        [sys.executable, "-m", "lahar.cli.main", "bench", *args, "-o", "json"],
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert res.returncode == 0, res.stderr
    figures = json.loads(res.stdout)
    for key in keys:
        assert isinstance(figures[key], int | float), key
    assert figures["machine"]["cpus"]
    if args[0] == "e2e":  # all three processes did work for the pods they bound
        cpu = figures["cpu_ms_per_pod"]
        assert set(cpu) == {"apiserver", "components", "load"}
        assert figures["bound"] == 40 and not figures["timed_out"]
        assert all(ms > 0 for ms in cpu.values()), cpu
