"""`lahar up`'s assembly: the component list and its command-line switch."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from lahar import embedded
from lahar.cli.up import COMPONENT_NAMES


def test_every_component_can_be_disabled_by_name() -> None:
    from lahar.node.local.agent import LocalOptions

    up = embedded.UpOptions(sim_nodes=2, local_node=LocalOptions(state_dir=Path("/nonexistent")))
    assert [name for name, _ in embedded.default_components(up)] == list(COMPONENT_NAMES)


def test_unknown_component_is_a_usage_error(tmp_path) -> None:
    res = subprocess.run(
        [
            sys.executable,
            "-m",
            "lahar.cli.main",
            "up",
            "--data-dir",
            str(tmp_path),
            "--port",
            "0",
            "--disable",
            "nonsense",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert res.returncode == 2
    assert "unknown component(s) nonsense" in res.stderr and "Traceback" not in res.stderr


def test_crd_manifests_parse() -> None:
    names = sorted(d["metadata"]["name"] for d in embedded.crd_manifests())
    assert names == [
        "jobs.batch.volcano.sh",
        "podgroups.scheduling.volcano.sh",
        "queues.scheduling.volcano.sh",
        "rayclusters.ray.io",
        "rayjobs.ray.io",
    ]
