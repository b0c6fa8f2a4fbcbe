"""``take_feasible`` scans from the rotating offset exactly like a rotated copy would."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from lahar.scheduler.actions.common import nodes_to_find, take_feasible


class _Session:
    def __init__(self, offset: int) -> None:
        self.predicate_offset = offset


def _reference(passed: np.ndarray, offset: int) -> tuple[list[int], int]:
    """The plain statement of the rule: rotate, take the first hits, count examined."""
    n = passed.shape[0]
    order = [(offset + i) % n for i in range(n)]
    hits: list[int] = []
    examined = n
    limit = nodes_to_find(n)
    for position, node in enumerate(order):
        if passed[node]:
            hits.append(node)
            if len(hits) == limit and sum(passed) > limit:
                examined = position + 1
                break
    return hits, (offset + examined) % n


@given(
    n=st.integers(1, 1200),
    density=st.sampled_from([0.0, 0.05, 0.5, 0.9, 1.0]),
    seed=st.integers(0, 2**32 - 1),
    at=st.floats(0.0, 1.0, exclude_max=True),
)
def test_take_feasible_matches_the_rotated_scan(
    n: int, density: float, seed: int, at: float
) -> None:
    passed = np.random.default_rng(seed).random(n) < density
    offset = int(at * n)
    ssn = _Session(offset)
    got = take_feasible(ssn, passed)  # type: ignore[arg-type]
    hits, next_offset = _reference(passed, offset)
    assert got.tolist() == hits
    assert ssn.predicate_offset == next_offset


def test_take_feasible_on_no_nodes() -> None:
    ssn = _Session(0)
    assert take_feasible(ssn, np.zeros(0, dtype=bool)).shape == (0,)  # type: ignore[arg-type]
