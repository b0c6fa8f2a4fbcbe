"""The load process of ``bench e2e`` fails cleanly and leaves no process behind."""

from __future__ import annotations

from pathlib import Path

import pytest

from lahar.bench.loadgen import LoadProcess


async def test_a_load_process_that_cannot_connect_fails_and_is_gone(tmp_path: Path) -> None:
    load = LoadProcess(tmp_path / "missing-kubeconfig", [], tmp_path)
    with pytest.raises(RuntimeError, match="did not start"):
        await load.start(4)
    proc = load._proc
    await load.close()
    assert proc is not None and proc.returncode is not None  # exited and reaped
