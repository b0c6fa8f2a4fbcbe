"""The write path's shortcuts answer exactly what the general code answers.

Memoised quantity parsing and canonicalisation, the orjson reading of request bodies,
the per-second timestamp, the lazily decoded ``WatchEvent.prev``, the cached metric
children and the cached list-semantics lookups.
"""

from __future__ import annotations

import datetime as dt
import json
import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lahar.api import quantity
from lahar.api.quantity import QuantityError, parse_quantity
from lahar.apiserver import meta
from lahar.apiserver.app import _loads_json, decode_body
from lahar.apiserver.builtins import quantities
from lahar.apiserver.metrics import Metrics
from lahar.apiserver.patch import builtin_list_semantics
from lahar.apiserver.patch import lists as lists_mod
from lahar.apiserver.routing import Route
from lahar.apiserver.store import Store, WatchEvent

# -- quantities -------------------------------------------------------------------------

quantity_text = st.one_of(
    st.from_regex(r"\A[+-]?([0-9]{1,4}(\.[0-9]{0,3})?|\.[0-9]{1,3})(Ki|Mi|Gi|[numkMGTPE])?\Z"),
    st.from_regex(r"\A[0-9]{1,3}[eE][+-]?[0-9]{1,2}\Z"),
    st.sampled_from(["100m", "128Mi", "1", "1Gi", "0.5", " 1", "1 ", "", "1.5.5", "x", "1Kb"]),
    st.text(max_size=6),
)


def _parse_uncached(value: Any) -> Any:
    try:
        return quantity._parse_text.__wrapped__(value)
    except QuantityError as exc:
        return type(exc)


@settings(max_examples=400, deadline=None)
@given(quantity_text)
def test_cached_parse_matches_the_parser(text: str) -> None:
    want = _parse_uncached(text)
    for _ in range(2):  # the second time from the cache (or failing again)
        try:
            got: Any = parse_quantity(text)
        except QuantityError as exc:
            got = type(exc)
        assert got == want


@settings(max_examples=400, deadline=None)
@given(st.one_of(quantity_text, st.integers(-5, 5), st.floats(allow_nan=True)))
def test_cached_canonical_matches_the_general_one(value: Any) -> None:
    want = quantities._canonical(value)
    for _ in range(2):
        got = quantities.canonical(value)
        assert got == want or (isinstance(got, float) and math.isnan(got))
        assert type(got) is type(want)


def test_long_and_subclassed_strings_are_parsed_but_not_cached() -> None:
    class Text(str):
        pass

    long = "1" + "0" * 60
    before = quantity._parse_text.cache_info().currsize
    assert parse_quantity(long) == 10**60
    assert parse_quantity(Text("100m")) == parse_quantity("100m")
    assert quantities.canonical(long + "m") == quantities._canonical(long + "m")
    assert quantity._parse_text.cache_info().currsize <= before + 1  # "100m" at most
    with pytest.raises(QuantityError):
        parse_quantity(True)  # type: ignore[arg-type]


# -- request bodies ----------------------------------------------------------------------

json_values = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(),  # beyond 64 bits too
        st.floats(allow_nan=True, allow_infinity=True),
        st.text(),
    ),
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.text(), inner)),
    max_leaves=12,
)


def _typed(value: Any) -> Any:
    """The value with the type of every leaf, so 1 and 1.0 and True differ."""
    if isinstance(value, dict):
        return {k: _typed(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_typed(v) for v in value]
    if isinstance(value, float) and math.isnan(value):
        return ("nan",)
    return (type(value).__name__, value)


def _decode(loads: Any, raw: bytes) -> Any:
    try:
        return _typed(loads(raw))
    except ValueError as exc:
        return ("error", str(exc))


@settings(max_examples=500, deadline=None)
@given(json_values, st.booleans())
def test_body_decoding_matches_json_loads(value: Any, ascii_only: bool) -> None:
    raw = json.dumps(value, ensure_ascii=ascii_only).encode()
    assert _decode(_loads_json, raw) == _decode(json.loads, raw)


@settings(max_examples=500, deadline=None)
@given(st.binary(max_size=40))
def test_decoding_arbitrary_bytes_matches_json_loads(raw: bytes) -> None:
    assert _decode(_loads_json, raw) == _decode(json.loads, raw)


@pytest.mark.parametrize(
    "raw",
    [
        b"123456789012345678901234567890",
        b'{"a": -9223372036854775809}',
        b"[NaN, Infinity]",
        b"1e400",
        b'"\\ud800"',
        b"\xef\xbb\xbf{}",
        '{"a": 1}'.encode("utf-16"),
    ],
)
def test_what_orjson_reads_differently_goes_to_json(raw: bytes) -> None:
    assert _decode(_loads_json, raw) == _decode(json.loads, raw)


def test_decode_body_reports_bad_json_as_before() -> None:
    with pytest.raises(Exception) as err:
        decode_body(b'{"a": ', "application/json")
    assert "error decoding JSON body" in str(err.value.to_status())  # type: ignore[attr-defined]


# -- the clock ---------------------------------------------------------------------------


def test_now_is_the_current_second() -> None:
    for _ in range(5):
        before = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        got = meta.now_rfc3339()
        after = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        assert before <= got <= after
    clock = dt.datetime(2020, 1, 2, 3, 4, 5, tzinfo=dt.UTC)
    assert meta.now_rfc3339(clock) == "2020-01-02T03:04:05Z"


# -- watch events ------------------------------------------------------------------------


def test_prev_is_decoded_on_demand_and_equal(tmp_path: Path) -> None:
    store = Store(tmp_path / "db.sqlite")
    seen: list[WatchEvent] = []
    store.subscribe(seen.extend)
    try:
        store.create("things", {"metadata": {"name": "a"}, "v": 1})
        store.update("things", {"metadata": {"name": "a"}, "v": 2})
        created, modified = seen
        assert created.prev is None
        assert modified.prev == {"metadata": {"name": "a", "resourceVersion": "1"}, "v": 1}
        assert modified.prev is modified.prev  # decoded once
        replayed = store.events_after(0)
        assert replayed == seen
        assert [e.prev for e in replayed] == [None, modified.prev]
        assert "prev={'metadata'" in repr(replayed[1])
        given_prev = WatchEvent("MODIFIED", "things", "", "a", 2, {}, {"x": 1})
        assert given_prev.prev == {"x": 1}
        assert given_prev != created
    finally:
        store.close()


# -- metrics -----------------------------------------------------------------------------


def test_metric_children_are_reused_and_counted() -> None:
    from lahar.apiserver.registry import Registry

    metrics = Metrics()
    pods = Registry().lookup("", "v1", "pods")
    route = Route("resource", resource=pods, namespace="default", name="p")
    for _ in range(3):
        metrics.observe("PATCH", route, 200, 0.002)
    metrics.observe("GET", None, 404, 0.001)
    labels = {"verb": "PATCH", "group": "", "resource": "pods", "subresource": "", "code": "200"}
    assert metrics.registry.get_sample_value("apiserver_request_total", labels) == 3
    latency = {"verb": "PATCH", "group": "", "resource": "pods"}
    count = metrics.registry.get_sample_value("apiserver_request_duration_seconds_count", latency)
    assert count == 3
    none = {"verb": "GET", "group": "", "resource": "", "subresource": "", "code": "404"}
    assert metrics.registry.get_sample_value("apiserver_request_total", none) == 1


# -- list semantics ----------------------------------------------------------------------


def test_cached_path_lookups_match_fresh_ones(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lists_mod, "_MAX_CACHED_PATHS", 8)  # force evictions too
    semantics = lists_mod.ListSemantics(builtin_list_semantics("v1", "Pod").root)
    paths = [
        ("spec", "containers"),
        ("spec", "containers", "ports"),
        ("spec", "containers", "env"),
        ("status", "conditions"),
        ("metadata", "labels"),
        ("metadata", "finalizers"),
        ("spec", "nodeSelector"),
        ("spec", "unknown", "deep"),
        (),
    ]
    for _ in range(3):
        for path in paths:
            node = semantics._walk(path)  # the uncached lookup
            want_list = lists_mod.ATOMIC if node is None or node.list_type is None else None
            assert semantics.resolve(path) == (want_list or node.list_type)  # type: ignore[union-attr]
            want_kind = "struct" if node is None else node.object_kind
            assert semantics.object_kind(path) == want_kind
    assert len(semantics._nodes) <= 8
