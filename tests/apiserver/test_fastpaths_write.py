"""The write path's fast paths give what the general code gives (third round).

Each test pits a fast path against the code it short-cuts: merge patches that copy only
what is kept, memoised list-item names and FieldsV1 trees, the unknown-field test that
builds no paths, the IPv4 check, one decode shared by a write's response and its watch
event, and the answers kept until the store says a group-resource changed (the default
PriorityClass, the namespace of a create, the storage type of a resource).
"""

from __future__ import annotations

import ipaddress
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lahar.apiserver.builtins import names
from lahar.apiserver.errors import APIError
from lahar.apiserver.jsoncopy import clone
from lahar.apiserver.lookups import DefaultPriorityClass, default_priority_class
from lahar.apiserver.objects import WriteOptions
from lahar.apiserver.patch import ListType
from lahar.apiserver.patch.compare import _dump, item_element
from lahar.apiserver.patch.fieldsv1 import build_fields_v1, to_fields_v1
from lahar.apiserver.patch.merge import apply_merge_patch, merge_values
from lahar.apiserver.schema import builtin as builtin_schema
from lahar.apiserver.schema import structural
from lahar.apiserver.state import ServerState
from lahar.apiserver.store import Store
from tests.apiserver.test_store import obj

scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-3, 3), st.sampled_from([1.5, "a", "b", 'q"', "é"])
)
keys = st.sampled_from(["a", "b", "c", "status", "metadata", "spec"])
values = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(keys, inner, max_size=3)),
    max_leaves=10,
)
objects = st.dictionaries(keys, values, max_size=5)


# -- merge patches ----------------------------------------------------------------------


@settings(max_examples=300, deadline=None)
@given(objects, objects, st.sampled_from([None, ("status",), ("spec", "a")]))
def test_merge_patch_equals_the_copying_merge(obj: dict, patch: dict, private: Any) -> None:
    before_obj, before_patch = clone(obj), clone(patch)
    got = apply_merge_patch(obj, patch, private=private)
    assert got == clone(merge_values(obj, patch))
    assert obj == before_obj and patch == before_patch  # inputs untouched
    # what the caller keeps is its own: changing it changes neither input
    for key in (private or tuple(got)) if isinstance(got, dict) else ():
        if isinstance(got.get(key), dict | list):
            assert got[key] is not obj.get(key) and got[key] is not patch.get(key)
            got[key].clear()
            assert obj == before_obj and patch == before_patch


# -- list-item names --------------------------------------------------------------------


def _element_reference(lt: ListType, item: Any) -> str | None:
    if lt.kind == "map":
        if not isinstance(item, dict):
            return None
        key = lt.key_of(item)
        return None if key is None else "k:" + _dump(key)
    if lt.kind == "set":
        return "v:" + _dump(item)
    return None


list_types = st.sampled_from(
    [
        ListType("map", ("name",)),
        ListType("map", ("containerPort", "protocol"), key_defaults=(("protocol", "TCP"),)),
        ListType("map", ("type",)),
        ListType("set"),
        ListType("atomic"),
    ]
)
items = st.one_of(
    st.dictionaries(
        st.sampled_from(["name", "type", "containerPort", "protocol", "x"]),
        st.one_of(st.none(), st.integers(0, 2), st.sampled_from(["main", "TCP", 'a"b', "\n"])),
        max_size=3,
    ),
    scalars,
)


@settings(max_examples=500, deadline=None)
@given(list_types, items)
def test_memoised_item_names_match_the_key_walk(lt: ListType, item: Any) -> None:
    want = _element_reference(lt, item)
    assert item_element(lt, item) == want
    assert item_element(lt, item) == want  # the memoised answer too


# -- FieldsV1 ---------------------------------------------------------------------------

paths = st.sets(
    st.lists(st.sampled_from(["f:a", "f:b", "f:status", 'k:{"ip":"1"}', "v:1"]), max_size=4)
    .map(tuple)
    .filter(bool),
    max_size=10,
)


@settings(max_examples=300, deadline=None)
@given(paths)
def test_memoised_fields_v1_is_the_built_tree_and_a_private_copy(fields: set) -> None:
    want = json.dumps(build_fields_v1(fields))
    first = to_fields_v1(fields)
    assert json.dumps(first) == want  # same content and key order
    first["f:changed"] = {}
    first.clear()
    assert json.dumps(to_fields_v1(fields)) == want  # a hit, unaffected
    assert json.dumps(to_fields_v1(set(fields))) == want


# -- unknown fields ---------------------------------------------------------------------

POD_SCHEMA = builtin_schema.schema_for("v1", "Pod")
pod_like = st.fixed_dictionaries(
    {"apiVersion": st.just("v1"), "kind": st.just("Pod")},
    optional={
        "status": st.dictionaries(
            st.sampled_from(["phase", "conditions", "podIPs", "bogus", "containerStatuses"]),
            st.one_of(
                values,
                st.lists(
                    st.dictionaries(st.sampled_from(["type", "ip", "name", "nope"]), values),
                    max_size=2,
                ),
            ),
            max_size=4,
        ),
        "spec": st.dictionaries(st.sampled_from(["containers", "nodeName", "zzz"]), values),
        "extra": values,
    },
)


@settings(max_examples=300, deadline=None)
@given(pod_like)
def test_unknown_field_shortcut_agrees_with_the_path_walk(pod: dict) -> None:
    root = structural.compile_schema(POD_SCHEMA, root=True)
    found: list[str] = []
    structural._unknown(pod, root, "", found)
    assert structural._any_unknown(pod, root) == bool(found)
    assert structural.unknown_fields(pod, POD_SCHEMA) == [
        f'unknown field "{p}"' for p in sorted(found)
    ]


# -- IPv4 addresses -----------------------------------------------------------------------


def _ip_reference(value: str) -> list[str]:
    try:
        ipaddress.ip_address(value)
    except ValueError:
        return ["must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"]
    return []


octets = st.one_of(st.integers(0, 300).map(str), st.sampled_from(["00", "01", "010", "٣", ""]))


@settings(max_examples=500, deadline=None)
@given(
    st.one_of(
        st.lists(octets, min_size=3, max_size=5).map(".".join),
        st.text(alphabet="0123456789.:abf\n ", max_size=16),
    )
)
def test_ipv4_shortcut_matches_ipaddress(value: str) -> None:
    assert names.ip_address(value) == _ip_reference(value)


# -- the store: one decode shared with the watch event, and change counts -----------------


def test_shared_write_result_is_the_event_object(tmp_path: Path) -> None:
    s = Store(tmp_path / "db")
    events: list = []
    s.subscribe(events.extend)
    try:
        created = s.create("things", obj("a", n=1), shared=True)
        assert created is events[-1].object
        updated = s.update("things", {**created, "spec": {"n": 2}}, shared=True)
        assert updated is events[-1].object and updated["spec"] == {"n": 2}
        private = s.update("things", {**updated, "spec": {"n": 3}})
        assert private == events[-1].object and private is not events[-1].object
    finally:
        s.close()


def test_changes_count_writes_and_rollbacks_of_a_group_resource(tmp_path: Path) -> None:
    s = Store(tmp_path / "db")
    try:
        assert s.changes("things") == 0
        s.create("things", obj("a"))
        one = s.changes("things")
        assert one > 0 and s.changes("others") == 0
        with pytest.raises(RuntimeError), s.transaction():
            s.create("things", obj("b"))
            raise RuntimeError
        after_rollback = s.changes("things")
        assert after_rollback > one + 1  # the write and its rollback
        s.delete("things", "default", "a")
        assert s.changes("things") > after_rollback
    finally:
        s.close()


def _state(tmp_path: Path) -> ServerState:
    return ServerState.open(tmp_path, token=None)


def _rt(state: ServerState, group: str, version: str, plural: str) -> Any:
    rt = state.registry.lookup(group, version, plural)
    assert rt is not None
    return rt


def test_default_priority_class_follows_writes(tmp_path: Path) -> None:
    state = _state(tmp_path)
    try:
        kept = DefaultPriorityClass(state.store)
        pcs = _rt(state, "scheduling.k8s.io", "v1", "priorityclasses")
        assert kept() is None
        state.objects.create(
            pcs,
            "",
            {"metadata": {"name": "base"}, "value": 7, "globalDefault": True},
            WriteOptions(),
        )
        assert kept() == default_priority_class(state.store) == ("base", 7, "PreemptLowerPriority")
        state.deletion.delete(pcs, "", "base", {})
        assert kept() is None
    finally:
        state.store.close()


def test_namespace_gate_sees_new_and_terminating_namespaces(tmp_path: Path) -> None:
    state = _state(tmp_path)
    try:
        nss = _rt(state, "", "v1", "namespaces")
        cms = _rt(state, "", "v1", "configmaps")
        body = {"metadata": {"name": "c"}}
        with pytest.raises(APIError) as err:
            state.objects.create(cms, "team", body, WriteOptions())
        assert err.value.code == 404
        state.objects.create(nss, "", {"metadata": {"name": "team"}}, WriteOptions())
        state.objects.create(cms, "team", body, WriteOptions())  # now it exists
        ns = state.store.get("namespaces", "", "team")
        assert ns is not None
        ns["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
        state.store.update("namespaces", ns)
        with pytest.raises(APIError) as err:
            state.objects.create(cms, "team", {"metadata": {"name": "d"}}, WriteOptions())
        assert err.value.code == 403 and "being terminated" in err.value.message
    finally:
        state.store.close()


def test_storage_types_follow_the_served_crds(tmp_path: Path) -> None:
    state = _state(tmp_path)
    try:
        reg = state.registry
        assert reg.storage_type("", "pods") is reg._scan_storage_type("", "pods")
        assert reg.storage_type("example.com", "widgets") is None
        crd = {
            "metadata": {"name": "widgets.example.com"},
            "spec": {
                "group": "example.com",
                "names": {"kind": "Widget", "plural": "widgets"},
                "scope": "Namespaced",
                "versions": [{"name": "v1", "served": True, "storage": True}],
            },
        }
        reg.set_crd(crd)
        found = reg.storage_type("example.com", "widgets")
        assert found is not None and found.version == "v1"
        reg.remove_crd("widgets.example.com")
        assert reg.storage_type("example.com", "widgets") is None
    finally:
        state.store.close()
