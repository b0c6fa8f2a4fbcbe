"""The store's read cache (storecache.py) never disagrees with SQLite: whatever mix of
writes, failed writes, nested transactions and rollbacks, a read through the store gives
exactly what the database file holds."""

from __future__ import annotations

import os
import pathlib
import sqlite3
from typing import Any

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lahar.apiserver.store import Store, StoreError
from tests.apiserver.test_store import obj

NAMES = ("x", "y", "z")


class Boom(Exception):
    pass


def on_disk(path: pathlib.Path) -> dict[str, Any]:
    """The objects as a separate connection reads them from the file."""
    db = sqlite3.connect(path)
    try:
        rows = db.execute("SELECT name, data FROM objects WHERE gr = 'r'").fetchall()
    finally:
        db.close()
    return {name: orjson.loads(data) for name, data in rows}


def apply(s: Store, op: str, name: str, n: int) -> None:
    try:
        if op == "create":
            s.create("r", obj(name, n=n))
        elif op == "update":
            s.update("r", obj(name, n=n))
        elif op == "update_stale":
            s.update("r", obj(name, n=n), expected_rv=1)
        elif op == "delete":
            s.delete("r", "default", name)
        elif op == "get":
            s.get("r", "default", name)
    except StoreError:
        pass


_op = st.tuples(
    st.sampled_from(["create", "update", "update_stale", "delete", "get"]),
    st.sampled_from(NAMES),
)
# A block: its operations, an optional nested block, and whether each of them fails.
_block = st.tuples(
    st.lists(_op, max_size=5),
    st.lists(_op, max_size=4),
    st.booleans(),  # the nested block raises
    st.booleans(),  # the outer block raises
)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(blocks=st.lists(_block, max_size=8))
def test_reads_always_agree_with_the_database(
    tmp_path: pathlib.Path, blocks: list[tuple[Any, Any, bool, bool]]
) -> None:
    path = tmp_path / f"cache-{os.urandom(4).hex()}.sqlite"
    s = Store(path, checkpoint_every=None)
    n = 0
    try:
        for outer, inner, inner_fails, outer_fails in blocks:
            try:
                with s.transaction():
                    for op, name in outer:
                        n += 1
                        apply(s, op, name, n)
                    try:
                        with s.transaction():
                            for op, name in inner:
                                n += 1
                                apply(s, op, name, n)
                            if inner_fails:
                                raise Boom
                    except Boom:
                        pass
                    if outer_fails:
                        raise Boom
            except Boom:
                pass
            disk = on_disk(path)
            for name in NAMES:
                assert s.get("r", "default", name) == disk.get(name)
    finally:
        s.close()
