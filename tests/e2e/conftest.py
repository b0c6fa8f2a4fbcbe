"""Fixtures that start real lahar server processes."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.cluster import Cluster


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    """``lahar up`` (API server with lahar's CRDs) shared by a test module."""
    data = Path(tempfile.mkdtemp(prefix="lahar-e2e-"))
    c = Cluster(data, "up")
    try:
        yield c.start()
    finally:
        c.cleanup()
        shutil.rmtree(data, ignore_errors=True)


@pytest.fixture
def fresh_apiserver(tmp_path: Path) -> Iterator[Cluster]:
    """A bare ``lahar apiserver`` of the test's own (serves only what is applied)."""
    c = Cluster(tmp_path / "data", "apiserver")
    try:
        yield c.start()
    finally:
        c.cleanup()
