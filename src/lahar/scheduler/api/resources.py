"""Dense resource vectors with Volcano's units and comparison rules.

Why dense: the scheduler's per-node work runs as NumPy operations over whole
arrays of nodes, so every resource amount in a session lives in a vector
``float64[n_resources]`` whose columns are fixed by one :class:`ResourceSpace`
built when the snapshot is taken.

The shared layout (the kernels in ``scheduler/kernels`` read it directly):

* ``space.names[i]`` is the resource name of column ``i``; ``space.index[name]`` the
  reverse. Columns 0, 1, 2 are always ``cpu``, ``memory`` and ``pods``
  (:data:`CPU`, :data:`MEMORY`, :data:`PODS`); further columns are the scalar
  resources seen anywhere in the snapshot, sorted by name.
* Units are Volcano's: cpu in milli-cores, memory in bytes, ``pods`` in whole pods,
  every other (scalar) resource in milli-units (``nvidia.com/gpu: 1`` -> 1000).
* An absent resource is 0. An *unbounded* limit (a queue capability that does not
  name a dimension) is ``+inf``; only limits are ever infinite.

The helpers mirror Volcano's ``Resource`` methods (``LessEqual``, ``LessPartly``,
``ExceededPart``...) with its tolerance :data:`EPS` (0.1) and its rules about which
dimensions count; each docstring names the Volcano method it stands for. Where Volcano
distinguishes "scalar missing" from "scalar is 0", the dense form treats both as 0,
which gives the same answer for the non-negative requests a session handles.
"""

from __future__ import annotations

import contextlib
import functools
import math
from collections.abc import Iterable, Mapping
from fractions import Fraction
from typing import Any

import numpy as np

from lahar.api.quantity import QuantityError, format_quantity, parse_quantity

EPS = 0.1
"""Volcano's ``minResource`` comparison tolerance."""

CPU, MEMORY, PODS = 0, 1, 2
BASE_NAMES = ("cpu", "memory", "pods")

Vector = np.ndarray
"""``float64[n_resources]`` in a :class:`ResourceSpace`."""


class ResourceError(ValueError):
    """A resource list that cannot be read (bad quantity, negative amount)."""


def is_scalar_resource_name(name: str) -> bool:
    """Kubernetes' "scalar resource name" test, plus ``ephemeral-storage`` which
    Volcano also keeps: extended (domain-prefixed, not ``kubernetes.io/``), hugepages,
    prefixed native (``kubernetes.io/...``) and attachable-volume names."""
    if name == "ephemeral-storage":
        return True
    if name.startswith(("hugepages-", "attachable-volumes-")):
        return True
    if "/" in name:
        return not name.startswith("requests.")
    return False


def kept_resource_name(name: str) -> bool:
    """Whether Volcano keeps this ResourceList entry at all (``count/*`` quota names and
    unknown native names such as ``storage`` are dropped)."""
    if name in BASE_NAMES:
        return True
    if name.startswith("count/"):
        return False
    return is_scalar_resource_name(name)


class ResourceSpace:
    """The fixed mapping resource name <-> column for one session."""

    __slots__ = ("index", "names", "parsed")

    def __init__(self, extra: Iterable[str] = ()) -> None:
        scalars = sorted({n for n in extra if n not in BASE_NAMES and kept_resource_name(n)})
        self.names: list[str] = [*BASE_NAMES, *scalars]
        self.index: dict[str, int] = {n: i for i, n in enumerate(self.names)}
        # ResourceList (as sorted string pairs) -> vector, filled by snapshot building
        self.parsed: dict[tuple[tuple[str, str], ...], Vector] = {}

    @property
    def size(self) -> int:
        return len(self.names)

    def zeros(self) -> Vector:
        return np.zeros(len(self.names), dtype=np.float64)

    def unbounded(self) -> Vector:
        return np.full(len(self.names), math.inf, dtype=np.float64)

    def unit_scale(self, name: str) -> int:
        """Factor from the quantity's value to the stored unit."""
        if name == "cpu":
            return 1000
        if name in ("memory", "pods"):
            return 1
        return 1000

    def vector(
        self, resources: Mapping[str, Any] | None, *, where: str = "resources", fill: float = 0.0
    ) -> Vector:
        """Read a Kubernetes ResourceList into a vector. Names outside the space are
        ignored; dimensions the list does not name get ``fill`` (0, or ``inf`` for a
        limit). Raises :class:`ResourceError` naming ``where`` on a bad entry."""
        vec = np.full(len(self.names), fill, dtype=np.float64)
        if resources is None:
            return vec
        if not isinstance(resources, Mapping):
            raise ResourceError(f"{where}: expected a map of resource quantities")
        for name, raw in resources.items():
            key = str(name)
            scale = self.unit_scale(key)
            value = None
            if isinstance(raw, str | int | float) and not isinstance(raw, bool):
                with contextlib.suppress(QuantityError):
                    value = _cached_scaled(raw, scale)
            if value is None:  # not a cached kind, bad or negative: the checked path
                value = math.ceil(parse_amount(raw, f"{where}.{name}") * scale)
            col = self.index.get(key)
            if col is not None:
                vec[col] = value
        return vec

    def to_quantities(self, vec: Vector, *, skip_zero: bool = True) -> dict[str, str]:
        """Vector -> ResourceList of quantity strings (infinite dimensions left out)."""
        out: dict[str, str] = {}
        for col, name in enumerate(self.names):
            value = float(vec[col])
            if not math.isfinite(value) or (skip_zero and abs(value) < EPS):
                continue
            scale = self.unit_scale(name)
            exact = Fraction(round(value)) / scale
            out[name] = format_quantity(exact, binary=(name == "memory"))
        return out

    def describe(self, vec: Vector) -> str:
        """Short human text, e.g. ``cpu 2, memory 4Gi, pods 1``."""
        parts = [f"{k} {v}" for k, v in self.to_quantities(vec).items()]
        return ", ".join(parts) if parts else "nothing"


@functools.lru_cache(maxsize=4096)
def _cached_quantity(raw: str | int | float) -> Fraction:
    return parse_quantity(raw)


@functools.lru_cache(maxsize=8192)
def _cached_scaled(raw: str | int | float, scale: int) -> int | None:
    """``ceil(quantity * scale)``, None when negative: the exact (Fraction) sum done
    once per distinct quantity string rather than once per resource list read."""
    amount = _cached_quantity(raw)
    return None if amount < 0 else math.ceil(amount * scale)


def parse_amount(raw: Any, where: str) -> Fraction:
    try:
        if isinstance(raw, str | int | float) and not isinstance(raw, bool):
            amount = _cached_quantity(raw)
        else:
            amount = parse_quantity(raw)
    except QuantityError as exc:
        raise ResourceError(f"{where}: {exc}") from None
    if amount < 0:
        raise ResourceError(f"{where}: quantity {raw!r} must not be negative")
    return amount


# --- comparisons (Volcano's Resource methods) -------------------------------------


def less_equal(left: Vector, right: Vector) -> bool:
    """``LessEqual(right, Zero)``: every dimension ``l < r`` or ``|l - r| < 0.1``; cpu and
    memory always count, other dimensions only where the left side is non-zero."""
    diff = left - right
    if diff[CPU] >= EPS or diff[MEMORY] >= EPS:
        return False
    return not bool(((diff >= EPS) & (left != 0)).any())


def less_equal_rows(left: Vector, rows: np.ndarray) -> np.ndarray:
    """:func:`less_equal` of one vector against every row of a matrix (bool per row)."""
    relevant = left != 0
    relevant[CPU] = relevant[MEMORY] = True
    cols = relevant.nonzero()[0]
    return (left[cols] - rows[:, cols] < EPS).all(axis=1)


def insufficient_rows(left: Vector, rows: np.ndarray) -> np.ndarray:
    """Per row and column, whether ``left`` does not fit (the dimensions named in
    "Insufficient X" messages): bool ``[n_rows, n_resources]``."""
    relevant = left != 0
    relevant[CPU] = relevant[MEMORY] = True
    return (left - rows >= EPS) & relevant


def less_equal_in_dims(left: Vector, right: Vector, request: Vector) -> bool:
    """``LessEqualWithDimensionAndResourcesName(right, request)``: only dimensions where
    the request is > 0, ``pods`` ignored, no tolerance (strict ``l > r`` fails)."""
    dims = request > 0
    dims[PODS] = False
    return not bool((left[dims] > right[dims]).any())


def less_partly(left: Vector, right: Vector) -> bool:
    """``LessPartly(right, Zero)``: some dimension strictly smaller (no tolerance)."""
    return bool((left < right).any())


def less_equal_partly_zero_filtered(left: Vector, right: Vector, request: Vector) -> bool:
    """``LessEqualPartlyWithDimensionZeroFiltered``: some dimension with request > 0
    (pods ignored) has ``l <= r`` within tolerance, skipping dims where both are tiny."""
    dims = request > 0
    dims[PODS] = False
    both_tiny = (np.abs(left) < EPS) & (np.abs(right) < EPS)
    ok = (left - right < EPS) & dims & ~both_tiny
    return bool(ok.any())


def greater_partly_relevant(left: Vector, right: Vector, request: Vector) -> bool:
    """``GreaterPartlyWithRelevantDimensions``: strictly greater on some dimension the
    request uses (pods ignored; cpu/memory only when ``right >= 0.1``)."""
    dims = request > 0
    dims[PODS] = False
    dims[CPU] &= right[CPU] >= EPS
    dims[MEMORY] &= right[MEMORY] >= EPS
    return bool((left[dims] > right[dims]).any())


def is_empty(vec: Vector) -> bool:
    """``IsEmpty``: every dimension but ``pods`` below 0.1 (a BestEffort request)."""
    mask = np.abs(vec) >= EPS
    mask[PODS] = False
    return not bool(mask.any())


def exceeded_part(left: Vector, right: Vector) -> Vector:
    """``ExceededPart``: per dimension ``max(l - r, 0)``."""
    out = left - right
    out[~np.isfinite(out)] = 0.0
    return np.maximum(out, 0.0)


def resource_dims(vec: Vector) -> np.ndarray:
    """``ResourceNames``: columns whose value is >= 0.1 (pods included)."""
    return np.flatnonzero(vec >= EPS)


def share(numerator: float, denominator: float) -> float:
    """``helpers.Share``: l / r, with r == 0 giving 0 (l == 0) or 1."""
    if denominator == 0:
        return 0.0 if numerator == 0 else 1.0
    return float(numerator) / float(denominator)


def dominant_share(allocated: Vector, total: Vector) -> float:
    """max over the dims of ``total`` >= 0.1 of ``share(allocated, total)``."""
    best = 0.0
    for col in resource_dims(total):
        best = max(best, share(allocated[col], total[col]))
    return best
