"""Behaviour of the SQLite object store: RVs, preconditions, events, durability."""

from __future__ import annotations

import datetime
import os
import pathlib
import signal
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lahar.apiserver.store import (
    Expired,
    InvalidObject,
    KeyExists,
    KeyNotFound,
    RVConflict,
    Store,
    StoreError,
    WatchEvent,
)


def obj(name: str, namespace: str = "default", **spec: Any) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, "uid": f"uid-{namespace}-{name}"}
    if namespace:
        metadata["namespace"] = namespace
    return {"apiVersion": "v1", "kind": "Thing", "metadata": metadata, "spec": spec}


def rv_of(o: dict[str, Any]) -> int:
    return int(o["metadata"]["resourceVersion"])


@pytest.fixture
def db_path(tmp_path: pathlib.Path) -> pathlib.Path:
    return tmp_path / "store.sqlite"


@pytest.fixture
def store(db_path: pathlib.Path) -> Iterator[Store]:
    s = Store(db_path)
    try:
        yield s
    finally:
        s.close()


def test_create_sets_rv_and_does_not_touch_input(store: Store) -> None:
    o = obj("a", x=1)
    out = store.create("pods", o)
    assert "resourceVersion" not in o["metadata"]
    assert rv_of(out) == store.current_rv() == 1
    assert store.get("pods", "default", "a") == out
    assert store.get("pods", "other", "a") is None
    assert store.get("services", "default", "a") is None


def test_rv_strictly_increasing_across_operations_and_restart(db_path: pathlib.Path) -> None:
    seen: list[int] = []
    s = Store(db_path, window=5)
    try:
        for i in range(12):
            seen.append(rv_of(s.create("pods", obj(f"p{i}"))))
        seen.append(rv_of(s.update("pods", obj("p0", x=2))))
        for i in range(12):
            seen.append(rv_of(s.delete("pods", "default", f"p{i}")))
        assert s.count("pods") == 0
    finally:
        s.close()
    s = Store(db_path, window=5)
    try:
        # Everything was deleted and most events were trimmed: the RV must still go on.
        assert s.current_rv() == seen[-1]
        seen.append(rv_of(s.create("pods", obj("again"))))
    finally:
        s.close()
    assert seen == sorted(set(seen))
    assert seen == list(range(1, len(seen) + 1))


def test_create_twice_raises_key_exists_and_changes_nothing(store: Store) -> None:
    first = store.create("pods", obj("a", x=1))
    with pytest.raises(KeyExists):
        store.create("pods", obj("a", x=2))
    assert store.get("pods", "default", "a") == first
    assert store.current_rv() == 1
    assert len(store.events_after(0)) == 1
    # Same name in another namespace, resource or scope is a different key.
    store.create("pods", obj("a", namespace="other"))
    store.create("services", obj("a"))
    store.create("nodes", obj("a", namespace=""))
    assert store.current_rv() == 4


def test_update_preconditions(store: Store) -> None:
    with pytest.raises(KeyNotFound):
        store.update("pods", obj("missing"))
    created = store.create("pods", obj("a", x=1))
    updated = store.update("pods", obj("a", x=2), expected_rv=rv_of(created))
    assert rv_of(updated) == rv_of(created) + 1
    with pytest.raises(RVConflict) as info:
        store.update("pods", obj("a", x=3), expected_rv=rv_of(created))
    assert info.value.current_rv == rv_of(updated)
    assert store.get("pods", "default", "a") == updated
    assert store.current_rv() == rv_of(updated)
    # Without a precondition the last writer wins, whatever RV the body carries.
    body = obj("a", x=4)
    body["metadata"]["resourceVersion"] = "1"
    last = store.update("pods", body)
    assert last["spec"] == {"x": 4} and rv_of(last) == rv_of(updated) + 1


def test_delete_returns_object_at_deletion_rv(store: Store) -> None:
    created = store.create("pods", obj("a", x=1))
    store.create("pods", obj("b"))
    with pytest.raises(RVConflict):
        store.delete("pods", "default", "a", expected_rv=rv_of(created) + 100)
    gone = store.delete("pods", "default", "a", expected_rv=rv_of(created))
    assert rv_of(gone) == store.current_rv() == 3
    assert gone["spec"] == {"x": 1}
    assert store.get("pods", "default", "a") is None
    with pytest.raises(KeyNotFound):
        store.delete("pods", "default", "a")
    last = store.events_after(2)
    assert [(e.type, e.name, e.rv) for e in last] == [("DELETED", "a", 3)]
    assert last[0].object == gone


def test_list_order_namespaces_and_counts(store: Store) -> None:
    for ns, name in [("b", "x"), ("a", "z"), ("a", "y"), ("", "c"), ("b", "a")]:
        store.create("things.example.com", obj(name, namespace=ns))
    store.create("pods", obj("p"))
    items, rv = store.list("things.example.com")
    keys = [(i["metadata"].get("namespace", ""), i["metadata"]["name"]) for i in items]
    assert keys == [("", "c"), ("a", "y"), ("a", "z"), ("b", "a"), ("b", "x")]
    assert rv == store.current_rv() == 6
    assert [i["metadata"]["name"] for i in store.list("things.example.com", "a")[0]] == [
        "y",
        "z",
    ]
    assert store.list("things.example.com", "nope") == ([], 6)
    assert store.count("things.example.com") == 5
    assert store.count("things.example.com", "b") == 2
    assert store.list_resources() == ["pods", "things.example.com"]
    store.delete("pods", "default", "p")
    assert store.list_resources() == ["things.example.com"]


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    keys=st.sets(st.tuples(st.sampled_from(["", "a", "b", "c"]), st.text("xyz", min_size=1))),
    limit=st.integers(1, 7),
    namespace=st.sampled_from([None, "", "a", "b"]),
)
def test_list_page_walks_everything_once(
    tmp_path: pathlib.Path, keys: set[tuple[str, str]], limit: int, namespace: str | None
) -> None:
    s = Store(tmp_path / f"page-{os.urandom(4).hex()}.sqlite")
    try:
        for ns, name in keys:
            s.create("pods", obj(name, namespace=ns))
        expected, _ = s.list("pods", namespace)
        got: list[dict[str, Any]] = []
        cursor: tuple[str, str] | None = None
        while True:
            page, rv, cursor = s.list_page("pods", namespace, limit=limit, start_after=cursor)
            assert len(page) <= limit and rv == s.current_rv()
            got.extend(page)
            if cursor is None:
                break
            assert len(page) == limit
        assert got == expected
    finally:
        s.close()


def test_list_page_with_writes_between_pages(store: Store) -> None:
    for i in range(10):
        store.create("pods", obj(f"p{i}"))
    page, _, cursor = store.list_page("pods", None, limit=4, start_after=None)
    store.delete("pods", "default", "p5")
    store.create("pods", obj("p55"))
    store.update("pods", obj("p9", changed=True))
    rest: list[dict[str, Any]] = []
    while cursor is not None:
        more, _, cursor = store.list_page("pods", None, limit=4, start_after=cursor)
        rest.extend(more)
    names = [o["metadata"]["name"] for o in page + rest]
    assert names == ["p0", "p1", "p2", "p3", "p4", "p55", "p6", "p7", "p8", "p9"]
    assert rest[-1]["spec"] == {"changed": True}


def test_list_page_cursor_from_another_namespace(store: Store) -> None:
    for ns in ("a", "b", "c"):
        for name in ("x", "y"):
            store.create("pods", obj(name, namespace=ns))
    names = lambda page: [o["metadata"]["name"] for o in page[0]]  # noqa: E731
    assert names(store.list_page("pods", "b", limit=5, start_after=("a", "zz"))) == ["x", "y"]
    assert names(store.list_page("pods", "b", limit=5, start_after=("b", "x"))) == ["y"]
    assert store.list_page("pods", "b", limit=5, start_after=("c", ""))[0] == []
    page = store.list_page("pods", None, limit=2, start_after=("a", "y"))
    assert [(o["metadata"]["namespace"], o["metadata"]["name"]) for o in page[0]] == [
        ("b", "x"),
        ("b", "y"),
    ]
    assert page[2] == ("b", "y")


def test_events_after_order_and_filter(store: Store) -> None:
    store.create("pods", obj("a"))
    store.create("services", obj("s"))
    store.update("pods", obj("a", x=1))
    store.delete("pods", "default", "a")
    events = store.events_after(0)
    assert [(e.type, e.gr, e.name, e.rv) for e in events] == [
        ("ADDED", "pods", "a", 1),
        ("ADDED", "services", "s", 2),
        ("MODIFIED", "pods", "a", 3),
        ("DELETED", "pods", "a", 4),
    ]
    assert all(isinstance(e, WatchEvent) and e.namespace == "default" for e in events)
    assert [e.rv for e in store.events_after(1, "pods")] == [3, 4]
    assert [rv_of(e.object) for e in events] == [1, 2, 3, 4]
    assert store.events_after(4) == [] and store.events_after(99) == []


@pytest.mark.parametrize("window", [1, 10, 100])
def test_expired_exactly_at_window_edge(db_path: pathlib.Path, window: int) -> None:
    s = Store(db_path, window=window)
    try:
        assert s.oldest_rv() == 0
        for i in range(3 * window + 7):
            s.create("pods", obj(f"p{i}"))
            oldest = s.oldest_rv()
            kept = s.events_after(oldest)
            # Every event after the compaction point is there, and at least `window` are.
            assert [e.rv for e in kept] == list(range(oldest + 1, s.current_rv() + 1))
            assert len(kept) >= min(window, s.current_rv())
            assert len(kept) < window + max(1, window // 10)
            if oldest > 0:
                with pytest.raises(Expired):
                    s.events_after(oldest - 1)
                with pytest.raises(Expired):
                    s.events_after(oldest - 1, "pods")
        assert s.oldest_rv() > 0
        compacted = s.oldest_rv()
    finally:
        s.close()
    s = Store(db_path, window=window)
    try:
        assert s.oldest_rv() == compacted
        with pytest.raises(Expired):
            s.events_after(compacted - 1)
        assert s.events_after(compacted)[0].rv == compacted + 1
    finally:
        s.close()


def test_events_survive_reopen(db_path: pathlib.Path) -> None:
    s = Store(db_path)
    try:
        s.create("pods", obj("a"))
        s.update("pods", obj("a", x=1))
        before = s.events_after(0)
    finally:
        s.close()
    s = Store(db_path)
    try:
        assert s.events_after(0) == before
        s.delete("pods", "default", "a")
        assert [e.type for e in s.events_after(0)] == ["ADDED", "MODIFIED", "DELETED"]
    finally:
        s.close()


def test_transaction_rollback_writes_and_publishes_nothing(store: Store) -> None:
    published: list[list[WatchEvent]] = []
    store.subscribe(published.append)
    store.create("pods", obj("keep"))
    published.clear()
    with pytest.raises(RuntimeError), store.transaction():
        store.create("pods", obj("a"))
        store.update("pods", obj("keep", x=1))
        store.delete("pods", "default", "keep")
        raise RuntimeError("boom")
    assert published == []
    assert store.current_rv() == 1
    assert [o["metadata"]["name"] for o in store.list("pods")[0]] == ["keep"]
    assert [e.rv for e in store.events_after(0)] == [1]
    # The RVs the rolled-back transaction used are handed out again, still increasing.
    assert rv_of(store.create("pods", obj("b"))) == 2


def test_transaction_commit_publishes_once_after_outer_commit(store: Store) -> None:
    published: list[list[int]] = []
    store.subscribe(lambda events: published.append([e.rv for e in events]))
    with store.transaction():
        store.create("pods", obj("a"))
        with store.transaction():
            store.create("pods", obj("b"))
        with pytest.raises(KeyExists), store.transaction():
            store.create("pods", obj("c"))
            store.create("pods", obj("a"))  # fails: rolls back c only
        assert published == []
        store.create("pods", obj("d"))
    assert published == [[1, 2, 3]]
    assert [o["metadata"]["name"] for o in store.list("pods")[0]] == ["a", "b", "d"]
    assert [e.name for e in store.events_after(0)] == ["a", "b", "d"]


def test_subscribers_see_commit_order_even_when_one_writes(store: Store) -> None:
    seen: dict[str, list[int]] = {"writer": [], "other": []}

    def writer(events: list[WatchEvent]) -> None:
        seen["writer"].extend(e.rv for e in events)
        if events[0].name == "a":  # react to a commit with a write of its own
            store.create("pods", obj("reaction"))

    store.subscribe(writer)
    store.subscribe(lambda events: seen["other"].extend(e.rv for e in events))
    store.create("pods", obj("a"))
    assert seen == {"writer": [1, 2], "other": [1, 2]}


def test_subscriber_failure_does_not_fail_write(store: Store) -> None:
    def broken(events: list[WatchEvent]) -> None:
        raise ValueError("subscriber bug")

    got: list[WatchEvent] = []
    store.subscribe(broken)
    store.subscribe(got.extend)
    store.create("pods", obj("a"))
    assert [e.name for e in got] == ["a"]
    store.unsubscribe(broken)
    store.unsubscribe(broken)  # unknown callbacks are ignored


@pytest.mark.parametrize(
    "bad",
    [
        {"metadata": {"name": "a"}, "spec": {"s": {1, 2}}},
        {"metadata": {"name": "a"}, "spec": object()},
        {"metadata": {"name": "a"}, "spec": datetime.datetime(2026, 1, 1)},
        {"metadata": {"name": "a"}, "spec": {1: "non-string key"}},
        {"metadata": {"name": "a"}, "spec": b"bytes"},
        {"metadata": {"name": "a"}, "spec": 1 << 70},
        {"metadata": {"name": "a"}, "spec": "lone surrogate \ud800"},
        {"metadata": {"name": ""}},
        {"metadata": {"name": 5}},
        {"metadata": {"name": "a", "namespace": 3}},
        {"metadata": "nope"},
        {"spec": {}},
        ["not", "a", "dict"],
    ],
)
def test_bad_objects_never_reach_the_store(store: Store, bad: Any) -> None:
    published: list[list[WatchEvent]] = []
    store.subscribe(published.append)
    store.create("pods", obj("a", x=1))
    with pytest.raises(InvalidObject):
        store.create("pods", bad)
    with pytest.raises(StoreError):
        store.update("pods", bad)
    with store.transaction():  # a rejected write leaves an open transaction usable
        with pytest.raises(StoreError):
            store.create("pods", bad)
        store.create("pods", obj("b"))
    assert store.current_rv() == 2
    assert [e.rv for e in store.events_after(0)] == [1, 2]
    assert store.get("pods", "default", "a") == store.list("pods")[0][0]
    assert [len(p) for p in published] == [1, 1]


def test_closed_store_refuses_work(db_path: pathlib.Path) -> None:
    s = Store(db_path)
    s.close()
    s.close()
    with pytest.raises(StoreError):
        s.get("pods", "default", "a")
    with pytest.raises(StoreError):
        s.create("pods", obj("a"))


def test_threads_get_unique_increasing_rvs(store: Store) -> None:
    errors: list[BaseException] = []

    def writer(t: int) -> None:
        try:
            for i in range(200):
                store.create("pods", obj(f"t{t}-{i}"))
                store.update("pods", obj(f"t{t}-{i}", v=1))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(t,)) for t in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert store.count("pods") == 800
    assert [e.rv for e in store.events_after(0)] == list(range(1, 1601))


_WRITER = textwrap.dedent(
    """
    import pathlib, sys
    from lahar.apiserver.store import Store

    store = Store(pathlib.Path(sys.argv[1]))
    i = 0
    while True:
        o = {"metadata": {"name": f"p{i}", "namespace": "default"}, "spec": {"i": i}}
        if i % 3 == 0:
            with store.transaction():
                store.create("pods", o)
                pair = {"metadata": {"name": f"q{i}", "namespace": "default"}}
                store.create("pods", pair)
        else:
            store.create("pods", o)
        print(f"p{i}", flush=True)
        i += 1
    """
)


def test_acknowledged_writes_survive_sigkill(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "killed.sqlite"
    proc = subprocess.Popen(
        [sys.executable, "-c", _WRITER, str(path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    acked: list[str] = []
    try:
        assert proc.stdout is not None
        while len(acked) < 2000:
            line = proc.stdout.readline()
            if not line:
                pytest.fail(f"writer died: {proc.stderr.read() if proc.stderr else ''}")
            acked.append(line.strip())
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        acked.extend(line.strip() for line in proc.stdout.read().splitlines() if line.strip())
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()
    assert proc.returncode == -signal.SIGKILL
    s = Store(path)
    try:
        names = {o["metadata"]["name"] for o in s.list("pods")[0]}
        missing = [n for n in acked if n not in names]
        assert missing == []
        # Multi-write transactions are all-or-nothing even when killed mid-stream.
        for n in names:
            if n.startswith("p") and int(n[1:]) % 3 == 0:
                assert f"q{n[1:]}" in names
            if n.startswith("q"):
                assert f"p{n[1:]}" in names
        # The event log and the RV agree with the objects.
        assert s.current_rv() == len(names) == len(s.events_after(0))
        assert rv_of(s.create("pods", obj("after"))) == len(names) + 1
    finally:
        s.close()


_ops = st.lists(
    st.tuples(
        st.sampled_from(["create", "update", "update_rv", "delete", "delete_rv", "reopen"]),
        st.sampled_from(["", "a"]),
        st.sampled_from(["x", "y", "z"]),
        st.integers(-1, 3),
    ),
    max_size=40,
)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(ops=_ops)
def test_matches_a_model(tmp_path: pathlib.Path, ops: list[tuple[str, str, str, int]]) -> None:
    path = tmp_path / f"model-{os.urandom(4).hex()}.sqlite"
    model: dict[tuple[str, str], dict[str, Any]] = {}
    events: list[tuple[str, str, str, int]] = []
    s = Store(path, window=8)
    try:
        for op, ns, name, skew in ops:
            key = (ns, name)
            current = model.get(key)
            expected_rv = None
            if op.endswith("_rv") and current is not None:
                expected_rv = rv_of(current) + (skew if skew > 0 else 0)
            try:
                if op == "reopen":
                    s.close()
                    s = Store(path, window=8)
                    continue
                if op == "create":
                    out = s.create("r", obj(name, namespace=ns, n=len(events)))
                    assert current is None
                    model[key] = out
                    events.append(("ADDED", ns, name, rv_of(out)))
                elif op.startswith("update"):
                    body = obj(name, namespace=ns, n=len(events))
                    out = s.update("r", body, expected_rv=expected_rv)
                    assert current is not None and (expected_rv in (None, rv_of(current)))
                    model[key] = out
                    events.append(("MODIFIED", ns, name, rv_of(out)))
                else:
                    out = s.delete("r", ns, name, expected_rv=expected_rv)
                    assert current is not None and (expected_rv in (None, rv_of(current)))
                    del model[key]
                    events.append(("DELETED", ns, name, rv_of(out)))
            except KeyExists:
                assert current is not None
            except KeyNotFound:
                assert current is None
            except RVConflict:
                assert current is not None and expected_rv != rv_of(current)
        assert s.list("r")[0] == [model[k] for k in sorted(model)]
        assert [rv for *_, rv in events] == list(range(1, len(events) + 1))
        assert s.current_rv() == len(events)
        kept = s.events_after(s.oldest_rv())
        assert [(e.type, e.namespace, e.name, e.rv) for e in kept] == events[s.oldest_rv() :]
    finally:
        s.close()


def test_an_unknown_schema_version_is_refused(db_path: pathlib.Path) -> None:
    import sqlite3

    db = sqlite3.connect(db_path)
    db.execute("PRAGMA user_version = 99")
    db.close()
    with pytest.raises(StoreError, match="unsupported store schema version"):
        Store(db_path)
