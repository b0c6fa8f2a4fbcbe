"""The e2e benchmark's timeline: pods created and bound by the end of each second."""

from __future__ import annotations

from lahar.bench.e2e import timeline


def test_timeline_counts_what_happened_by_each_second() -> None:
    created = {"a": 10.0, "b": 10.5, "c": 11.2}
    bound = {"a": 10.9, "b": 12.1, "c": 12.3}
    assert timeline(10.0, created, bound) == [[1, 2, 1], [2, 3, 1], [3, 3, 3]]


def test_timeline_of_nothing_is_empty() -> None:
    assert timeline(0.0, {}, {}) == []
