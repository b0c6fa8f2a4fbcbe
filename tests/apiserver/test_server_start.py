"""An API server that cannot start leaves nothing running behind it."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from lahar.apiserver.server import APIServer


def test_a_server_that_fails_to_start_closes_its_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(self: APIServer) -> None:
        raise RuntimeError("the stored namespaces cannot be read")

    before = set(threading.enumerate())
    monkeypatch.setattr(APIServer, "_ensure_namespaces", broken)
    with pytest.raises(RuntimeError, match="cannot be read"):
        APIServer(tmp_path / "data", port=0)
    left = [t for t in threading.enumerate() if t not in before and t.is_alive()]
    assert left == []  # the store's checkpoint thread stopped with it
