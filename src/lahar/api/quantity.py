"""Kubernetes resource quantities (``100m``, ``1.5Gi``, ``2e3``) as exact numbers.

The scheduler, the validators and the node agents all read quantities; they share
this one parser so that ``"1000m"``, ``"1"`` and ``"1e0"`` mean the same
everywhere. Values are :class:`fractions.Fraction`, so nothing is rounded until a
caller asks for milli-units or bytes.

Parsing is exact, hence slow (a regular expression, a ``Decimal`` and a few
``Fraction`` operations), and the same few spellings (``"100m"``, ``"128Mi"``) are
read over and over: parsed strings are memoised. A ``Fraction`` is immutable, so
every caller may share the cached result.
"""

from __future__ import annotations

import math
import re
from decimal import Decimal
from fractions import Fraction
from functools import lru_cache

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {
    "n": Fraction(1, 10**9),
    "u": Fraction(1, 10**6),
    "m": Fraction(1, 10**3),
    "": Fraction(1),
    "k": Fraction(10**3),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "P": Fraction(10**15),
    "E": Fraction(10**18),
}
_CACHED_LENGTH = 40
_QUANTITY = re.compile(
    r"^(?P<sign>[+-]?)(?P<num>\d+(?:\.\d*)?|\.\d+)"
    r"(?:(?P<exp>[eE][+-]?\d+)|(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE])?)$"
)


class QuantityError(ValueError):
    """A string that is not a Kubernetes quantity."""


def parse_quantity(value: str | int | float) -> Fraction:
    """Parse a quantity into an exact number (``"100m"`` -> ``Fraction(1, 10)``)."""
    if isinstance(value, bool):
        raise QuantityError(f"quantities must be strings or numbers, not {value!r}")
    if isinstance(value, int):
        return Fraction(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise QuantityError(f"quantity {value!r} is not finite")
        return Fraction(Decimal(repr(value)))
    if not isinstance(value, str):
        raise QuantityError(f"quantities must be strings or numbers, not {type(value).__name__}")
    # Only short plain strings are memoised: a str subclass may compare differently,
    # and a client must not fill the cache with huge keys.
    if type(value) is str and len(value) <= _CACHED_LENGTH:
        return _parse_text(value)
    return _parse_text.__wrapped__(value)


@lru_cache(maxsize=4096)
def _parse_text(value: str) -> Fraction:
    """The uncached parse of a string quantity (memoised for plain ``str`` values; a
    failed parse raises each time, so errors are never cached)."""
    match = _QUANTITY.match(value.strip())
    if not match or value != value.strip():
        raise QuantityError(
            f"quantities must match the regular expression "
            f"'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$': {value!r}"
        )
    number = Fraction(Decimal(match["num"]))
    if match["exp"]:
        number *= Fraction(10) ** int(match["exp"][1:])
    suffix = match["suffix"] or ""
    number *= _BINARY[suffix] if suffix in _BINARY else _DECIMAL[suffix]
    return -number if match["sign"] == "-" else number


def to_milli(value: str | int | float) -> int:
    """Milli-units, rounded up as Kubernetes does (``"0.0001"`` -> 1)."""
    return math.ceil(parse_quantity(value) * 1000)


def to_int(value: str | int | float) -> int:
    """Whole units (bytes for memory), rounded up."""
    return math.ceil(parse_quantity(value))


def format_quantity(value: Fraction | int | float, *, binary: bool = False) -> str:
    """Canonical quantity string: ``Fraction(1, 10)`` -> ``"100m"``; with ``binary``,
    multiples of 1024 use ``Ki``/``Mi``/``Gi`` (``2**31`` -> ``"2Gi"``)."""
    value = Fraction(value) if not isinstance(value, Fraction) else value
    if value == 0:
        return "0"
    sign = "-" if value < 0 else ""
    value = abs(value)
    if binary and value.denominator == 1:
        for suffix, factor in sorted(_BINARY.items(), key=lambda kv: -kv[1]):
            if value >= factor and value % factor == 0:
                return f"{sign}{value // factor}{suffix}"
    if value.denominator == 1:
        whole = int(value)
        for suffix in ("E", "P", "T", "G", "M", "k"):
            factor = int(_DECIMAL[suffix])
            if whole >= factor and whole % factor == 0:
                return f"{sign}{whole // factor}{suffix}"
        return f"{sign}{whole}"
    for suffix in ("m", "u", "n"):
        scaled = value / _DECIMAL[suffix]
        if scaled.denominator == 1:
            return f"{sign}{int(scaled)}{suffix}"
    return f"{sign}{math.ceil(value / _DECIMAL['n'])}n"
