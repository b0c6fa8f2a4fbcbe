"""Watch lines built from an event's stored bytes are the lines encoding the object
would give, byte for byte; events from a commit and from the log carry those bytes."""

from __future__ import annotations

import pathlib

import orjson
from hypothesis import given
from hypothesis import strategies as st

from lahar.apiserver.store import Store
from lahar.apiserver.watchstream import _line, _stored_line

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


@given(
    st.sampled_from(["ADDED", "MODIFIED", "DELETED"]),
    st.dictionaries(st.text(), json_values, max_size=6),
)
def test_a_line_from_stored_bytes_is_the_encoded_line(kind: str, obj: dict) -> None:
    stored = orjson.dumps(obj)
    assert _stored_line(kind, stored) == _line(kind, orjson.loads(stored))


def test_events_carry_the_bytes_of_their_object(tmp_path: pathlib.Path) -> None:
    store = Store(tmp_path / "db")
    seen = []
    store.subscribe(seen.extend)
    try:
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "d"}}
        made = store.create("pods", pod)
        made["status"] = {"phase": "Running", "ratio": 0.1, "note": "héllo"}
        store.update("pods", made)
        store.delete("pods", "d", "p")
        for events in (seen, store.events_after(0)):
            assert [e.type for e in events] == ["ADDED", "MODIFIED", "DELETED"]
            for ev in events:
                assert ev.data is not None and orjson.loads(ev.data) == ev.object
    finally:
        store.close()
