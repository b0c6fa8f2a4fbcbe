"""Resource fit, kube-scheduler resource scorers and Volcano's binpack score."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from lahar.scheduler.kernels.resources import (
    balanced_allocation,
    least_allocated,
    most_allocated,
    nonzero_request,
    pod_count_fails,
    resource_fit,
)
from lahar.scheduler.kernels.scoring import BinpackWeights, binpack_score

NAMES = ["cpu", "memory", "pods", "nvidia.com/gpu"]
GI = 1024**3


def test_resource_fit_tolerance_and_reasons() -> None:
    request = np.array([1000.0, GI, 1.0, 0.0])
    available = np.array(
        [
            [1000.0, GI, 10.0, 0.0],  # exact fit
            [999.95, GI, 10.0, 0.0],  # short by 0.05 < 0.1: still fits
            [999.0, GI, 10.0, 0.0],  # short by 1 milli-cpu
            [4000.0, GI - 1, 0.0, 0.0],  # memory short by a byte, no pod slot
        ]
    )
    passed, reasons = resource_fit(request, available, NAMES)
    assert passed.tolist() == [True, True, False, False]
    got = {text: mask.tolist() for text, mask in reasons}
    assert got == {
        "Insufficient cpu": [False, False, True, False],
        "Insufficient memory": [False, False, False, True],
        "Too many pods": [False, False, False, True],
    }


def test_scalar_only_checked_when_requested() -> None:
    available = np.array([[4000.0, GI, 10.0, 0.0], [4000.0, GI, 10.0, 2000.0]])
    no_gpu = np.array([1000.0, 0.0, 1.0, 0.0])
    assert resource_fit(no_gpu, available, NAMES)[0].tolist() == [True, True]
    gpu = np.array([1000.0, 0.0, 1.0, 1000.0])
    passed, reasons = resource_fit(gpu, available, NAMES)
    assert passed.tolist() == [False, True]
    assert [t for t, _ in reasons] == ["Insufficient nvidia.com/gpu"]


def test_pod_count() -> None:
    alloc = np.array([[1, 1, 2, 0], [1, 1, 3, 0]], dtype=float)
    assert pod_count_fails(np.array([2, 2]), alloc).tolist() == [True, False]


def test_nonzero_request_defaults() -> None:
    pod = {
        "spec": {
            "containers": [
                {"name": "a"},
                {"name": "b", "resources": {"requests": {"cpu": "250m", "memory": "1Gi"}}},
                {"name": "c", "resources": {"requests": {"cpu": "0"}}},
            ],
            "initContainers": [{"name": "i", "resources": {"requests": {"cpu": "2"}}}],
            "overhead": {"cpu": "10m"},
        }
    }
    # cpu: a 100 + b 250 + c 0 = 350, init 2000 dominates, + 10 overhead
    # memory: a 200Mi + b 1Gi + c 200Mi; init (no memory) 200Mi
    assert nonzero_request(pod) == (2010.0, float(400 * 1024**2 + GI))


def test_least_most_balanced_by_hand() -> None:
    cap_cpu, cap_mem = np.array([4000.0, 2000.0, 0.0]), np.array([8.0, 4.0, 4.0]) * GI
    # node requests (non-zero) plus the pod's 1000m / 2Gi
    req_cpu, req_mem = np.array([2000.0, 2500.0, 1000.0]), np.array([4.0, 3.0, 2.0]) * GI
    # node0: cpu (4000-2000)*100/4000 = 50, mem (8-4)/8 -> 50 => 50
    # node1: cpu 2500 > 2000 -> 0, mem (4-3)/4 -> 25 => (0*50 + 25*50)/100 = 12
    # node2: cpu capacity 0 is skipped, mem (4-2)/4 -> 50 => 50
    assert least_allocated(cap_cpu, cap_mem, req_cpu, req_mem).tolist() == [50, 12, 50]
    # most: node0 2000/4000 -> 50, 4/8 -> 50 => 50; node1 clamp -> 100, 3/4 -> 75 => 87
    # node2: cpu skipped, memory 2/4 -> 50
    assert most_allocated(cap_cpu, cap_mem, req_cpu, req_mem).tolist() == [50, 87, 50]
    # balanced: node0 0.5 vs 0.5 -> 100; node1 cpu 1.25 capped to 1, mem 0.75 -> std .125 -> 87
    # node2: only memory counts -> 100
    got = balanced_allocation([cap_cpu, cap_mem], [req_cpu, req_mem])
    assert got.tolist() == [100, 87, 100]
    # least: (33 + 66) / 2 = 49.5 -> 49 (integer mean)
    assert least_allocated(
        np.array([3.0]), np.array([3.0]), np.array([2.0]), np.array([1.0])
    ).tolist() == [49]


def test_balanced_with_gpu_three_resources() -> None:
    caps = [np.array([4000.0, 4000.0]), np.array([4.0, 4.0]) * GI, np.array([4000.0, 0.0])]
    reqs = [np.array([1000.0, 1000.0]), np.array([2.0, 2.0]) * GI, np.array([4000.0, 4000.0])]
    # node0: fractions .25, .5, 1 -> population std; node1 offers no gpu: |.25 - .5| / 2
    fr = np.array([0.25, 0.5, 1.0])
    want = int((1 - np.sqrt(((fr - fr.mean()) ** 2).mean())) * 100)
    assert want == 68
    assert balanced_allocation(caps, reqs).tolist() == [want, 87]


def test_binpack_by_hand() -> None:
    alloc = np.array(
        [[4000.0, 8 * GI, 110, 0.0], [4000.0, 8 * GI, 110, 4000.0], [2000.0, 8 * GI, 110, 0.0]]
    )
    used = np.array([[2000.0, 2 * GI, 3, 0.0], [0.0, 0.0, 0, 1000.0], [1500.0, 0.0, 1, 0.0]])
    request = np.array([1000.0, 2 * GI, 1, 1000.0])
    weights = BinpackWeights.from_arguments(
        {
            "binpack.weight": "10",
            "binpack.cpu": 2,
            "binpack.memory": 1,
            "binpack.resources": "nvidia.com/gpu, example.com/foo",
            "binpack.resources.nvidia.com/gpu": 3,
        }
    )
    assert dict(weights.resources) == {
        "nvidia.com/gpu": 3,
        "example.com/foo": 1,
        "cpu": 2,
        "memory": 1,
    }
    got = binpack_score(request, alloc, used, NAMES, weights)
    # node0: cpu 3000/4000*2 = 1.5, mem 4/8*1 = .5, gpu capacity 0 -> 0 (weight 3 still counts)
    #        (1.5 + .5) / 6 * 100 * 10 = 333.33
    # node1: cpu 1000/4000*2 = .5, mem 2/8 = .25, gpu 2000/4000*3 = 1.5 -> 2.25/6*1000 = 375
    # node2: cpu 2500 > 2000 -> whole score 0
    assert np.allclose(got, [2.0 / 6 * 1000, 375.0, 0.0])


def test_binpack_defaults_and_pods_dimension_ignored() -> None:
    w = BinpackWeights.from_arguments({"binpack.cpu": -5})
    assert w.weight == 1 and dict(w.resources) == {"cpu": 1, "memory": 1}
    alloc = np.array([[4000.0, 8 * GI, 110, 0.0]])
    used = np.zeros((1, 4))
    request = np.array([2000.0, 0.0, 1, 0.0])
    # only cpu is requested and weighted: 2000/4000 -> 0.5 -> 50
    assert binpack_score(request, alloc, used, NAMES, w).tolist() == [50.0]


# --- property: vectorized == plain reference ------------------------------------------


def ref_least(cap: float, req: float) -> int:
    if cap == 0 or req > cap:
        return 0
    return int((int(cap) - int(req)) * 100 // int(cap))


def ref_binpack(
    request: list[float], alloc: list[float], used: list[float], w: dict[str, int], bw: int
) -> float:
    score, wsum = 0.0, 0
    for i, name in enumerate(NAMES):
        if request[i] < 0.1 or name not in w:
            continue
        weight = w[name]
        wsum += weight
        if alloc[i] == 0 or weight == 0:
            continue
        final = used[i] + request[i]
        if final > alloc[i]:
            return 0.0
        score += final * weight / alloc[i]
    if wsum:
        score /= wsum
    return score * 100 * bw


amounts = st.integers(0, 8000).map(float)
rows = st.lists(st.tuples(amounts, amounts, amounts, amounts), min_size=1, max_size=6)


@given(alloc=rows, used=rows, request=st.tuples(amounts, amounts, st.just(1.0), amounts))
def test_least_and_binpack_match_reference(
    alloc: list[tuple[float, ...]], used: list[tuple[float, ...]], request: tuple[float, ...]
) -> None:
    n = min(len(alloc), len(used))
    a, u, r = np.array(alloc[:n]), np.array(used[:n]), np.array(request)
    got = least_allocated(a[:, 0], a[:, 1], u[:, 0] + r[0], u[:, 1] + r[1])
    for i in range(n):
        parts = [(ref_least(a[i, j], u[i, j] + r[j]), a[i, j]) for j in (0, 1)]
        present = [s for s, c in parts if c != 0]
        want = (sum(present) * 50) // (50 * len(present)) if present else 0
        assert got[i] == want
    weights = {"cpu": 2, "memory": 1, "nvidia.com/gpu": 0}
    bw = BinpackWeights(3, weights)
    got_b = binpack_score(r, a, u, NAMES, bw)
    for i in range(n):
        assert np.isclose(got_b[i], ref_binpack(list(r), list(a[i]), list(u[i]), weights, 3))
