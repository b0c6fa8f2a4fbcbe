"""``lahar bench rayjob``: its options and its RayJob, without running Ray.

A real run starts ``lahar up`` with the local node and Ray pods (about a minute per
run on two cores), so it is covered by ``tests/e2e/test_ray_local.py``, which drives
the same RayJob and owner-tagged ``lahar up``; here only what is cheap is checked.
"""

from __future__ import annotations

import ipaddress
import subprocess
import sys

import pytest

from lahar.bench.rayjob import ENTRYPOINT, default_sample, free_cidr, small_rayjob


def _bench(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "lahar.cli.main", "bench", *args],
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["rayjob", "--runs", "-1"], "--runs must not be negative"),
        (["rayjob", "--sample", "/nonexistent.yaml"], "no such file"),
        (["rayjob", "--sample", "/etc/hostname", "--no-sample"], "exclude each other"),
        (["operator", "--runs", "2"], "--runs applies to 'lahar bench rayjob' only"),
    ],
)
def test_bad_options_are_usage_errors(args: list[str], message: str) -> None:
    res = _bench(*args)
    assert res.returncode == 2, res
    assert message in res.stderr


def test_small_rayjob_is_one_head_one_worker_without_runtime_env() -> None:
    job = small_rayjob("x", cpu="750m")
    spec = job["spec"]
    assert spec["entrypoint"] == ENTRYPOINT and "runtimeEnvYAML" not in spec
    cluster = spec["rayClusterSpec"]
    assert [g["replicas"] for g in cluster["workerGroupSpecs"]] == [1]
    head = cluster["headGroupSpec"]["template"]["spec"]["containers"][0]
    assert head["resources"]["requests"]["cpu"] == "750m"


def test_helpers() -> None:
    assert ipaddress.IPv4Network(free_cidr()).prefixlen == 24
    sample = default_sample()
    assert sample is None or sample.name == "ray-job.sample.yaml"
