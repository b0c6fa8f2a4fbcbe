"""Test helpers around an in-process embedded API server and its client.

Several test packages run components against a real in-process server; they share
these helpers instead of each writing the same fixtures.
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import lightkube

from lahar.apiserver.server import APIServer
from lahar.kube import client as kclient


@contextlib.contextmanager
def private_dir(prefix: str) -> Iterator[Path]:
    """A temp dir removed when the block ends, pass or fail."""
    path = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def fast_server(path: Path, *, gc: bool = True, **kwargs: object) -> APIServer:
    """A server with frequent bookmarks (and its garbage collector running, if ``gc``)."""
    srv = APIServer(path, port=0, **kwargs)  # type: ignore[arg-type]
    srv.state.bookmark_interval = 0.2
    if gc:
        srv.gc.start()
    return srv


@contextlib.asynccontextmanager
async def closing_server(srv: APIServer) -> AsyncIterator[APIServer]:
    try:
        yield srv
    finally:
        await srv.close()


@contextlib.asynccontextmanager
async def in_process_client(srv: APIServer) -> AsyncIterator[lightkube.AsyncClient]:
    c = kclient.in_process(srv.app, token=srv.creds.token)
    try:
        yield c
    finally:
        await c.close()
