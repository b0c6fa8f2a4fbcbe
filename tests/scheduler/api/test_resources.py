"""Resource vectors: Volcano's units, tolerance and dimension rules."""

from __future__ import annotations

import math

import numpy as np
import pytest

from lahar.scheduler.api.resources import (
    ResourceError,
    ResourceSpace,
    dominant_share,
    exceeded_part,
    greater_partly_relevant,
    is_empty,
    less_equal,
    less_equal_in_dims,
    less_equal_partly_zero_filtered,
    less_equal_rows,
    less_partly,
    share,
)

SPACE = ResourceSpace(["nvidia.com/gpu", "count/pods", "storage", "ephemeral-storage"])


def vec(**kw: float) -> np.ndarray:
    v = SPACE.zeros()
    for k, x in kw.items():
        v[SPACE.index["nvidia.com/gpu" if k == "nvidia_com_gpu" else k]] = x
    return v


def test_layout_and_units() -> None:
    assert SPACE.names[:3] == ["cpu", "memory", "pods"]
    assert "count/pods" not in SPACE.index and "storage" not in SPACE.index
    v = SPACE.vector({"cpu": "1500m", "memory": "1Gi", "pods": "3", "nvidia.com/gpu": "1"})
    assert v[SPACE.index["cpu"]] == 1500
    assert v[SPACE.index["memory"]] == 2**30
    assert v[SPACE.index["pods"]] == 3
    assert v[SPACE.index["nvidia.com/gpu"]] == 1000  # scalars in milli-units


def test_bad_quantities_name_the_field() -> None:
    with pytest.raises(ResourceError, match=r"node\.cpu"):
        SPACE.vector({"cpu": "lots"}, where="node")
    with pytest.raises(ResourceError, match="negative"):
        SPACE.vector({"memory": "-1Gi"}, where="node")


def test_less_equal_tolerance_and_pods() -> None:
    assert less_equal(vec(cpu=1000.05), vec(cpu=1000))
    assert not less_equal(vec(cpu=1000.2), vec(cpu=1000))
    assert not less_equal(vec(pods=1), vec(cpu=5000, memory=1e9))  # node without pods
    # a dimension absent on the left is not checked, even if negative on the right
    assert less_equal(vec(cpu=1), vec(cpu=2, memory=0, nvidia_com_gpu=-5))


def test_less_equal_rows_matches_scalar() -> None:
    rows = np.stack([vec(cpu=1000, pods=1), vec(cpu=500, pods=1), vec(cpu=2000)])
    req = vec(cpu=800, pods=1)
    assert list(less_equal_rows(req, rows)) == [less_equal(req, r) for r in rows]


def test_quota_comparison_only_requested_dims_no_tolerance() -> None:
    req = vec(cpu=1000, pods=1)
    assert less_equal_in_dims(vec(cpu=1000, memory=5e9, pods=99), vec(cpu=1000), req)
    assert not less_equal_in_dims(vec(cpu=1000.01), vec(cpu=1000), req)


def test_partly_helpers() -> None:
    assert less_partly(vec(cpu=1, memory=5), vec(cpu=2, memory=1))
    req = vec(cpu=1, nvidia_com_gpu=1000)
    assert less_equal_partly_zero_filtered(
        vec(cpu=5, nvidia_com_gpu=1000), vec(cpu=1, nvidia_com_gpu=1000), req
    )
    assert greater_partly_relevant(vec(cpu=5), vec(cpu=1), vec(cpu=1))
    assert not greater_partly_relevant(vec(cpu=5), vec(cpu=0), vec(cpu=1))


def test_empty_exceeded_share() -> None:
    assert is_empty(vec(pods=1))
    assert not is_empty(vec(nvidia_com_gpu=1000))
    np.testing.assert_array_equal(exceeded_part(vec(cpu=3), vec(cpu=5, memory=1))[:2], [0, 0])
    assert share(0, 0) == 0 and share(1, 0) == 1
    assert dominant_share(vec(cpu=1, pods=5), vec(cpu=10, pods=10)) == 0.5  # pods count


def test_to_quantities_round_trip() -> None:
    v = SPACE.vector({"cpu": "2500m", "memory": "4Gi", "nvidia.com/gpu": "2"})
    assert SPACE.to_quantities(v) == {"cpu": "2500m", "memory": "4Gi", "nvidia.com/gpu": "2"}
    v[0] = math.inf
    assert "cpu" not in SPACE.to_quantities(v)
