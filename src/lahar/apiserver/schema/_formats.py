"""The ``format`` checks Kubernetes applies to CRD values, plus number formats.

Kubernetes validates a fixed list of string formats (``date-time``, ``byte``,
``uuid``, ``ipv4``, ...) and ignores any other format name; we do the same. For
integers, ``int32``/``int64`` are range checks (the Go types behind the built-in
kinds reject out-of-range numbers when decoding).
"""

from __future__ import annotations

import base64
import binascii
import ipaddress
import re
from collections.abc import Callable
from datetime import date, datetime

_DATE_TIME = re.compile(
    r"^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:?\d{2})?$"
)
_UUID = re.compile(
    r"^[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}$"
)
_HOSTNAME = re.compile(
    r"^(?=.{1,253}$)[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
    r"(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$"
)
_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")
_MAC = re.compile(r"^([0-9A-Fa-f]{2}[:-]){5,7}[0-9A-Fa-f]{2}$")
_DURATION = re.compile(r"^([-+]?(\d+(\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h|d|w))+$")


def _date_time(value: str) -> bool:
    if not _DATE_TIME.match(value):
        return False
    text = value.replace(" ", "T").replace("t", "T").replace("z", "Z").replace("Z", "+00:00")
    head, _, frac = text.partition(".")
    if frac:  # Python accepts at most 6 fractional digits
        digits = re.match(r"\d+", frac)
        assert digits is not None
        text = head + "." + digits.group(0)[:6].ljust(6, "0") + frac[digits.end() :]
    try:
        datetime.fromisoformat(text)
    except ValueError:
        return False
    return True


def _date(value: str) -> bool:
    try:
        date.fromisoformat(value)
    except ValueError:
        return False
    return len(value) == 10


def _byte(value: str) -> bool:
    try:
        base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        return False
    return True


def _ip(version: int) -> Callable[[str], bool]:
    def check(value: str) -> bool:
        try:
            return ipaddress.ip_address(value).version == version
        except ValueError:
            return False

    return check


def _cidr(value: str) -> bool:
    try:
        ipaddress.ip_network(value, strict=False)
    except ValueError:
        return False
    return "/" in value


STRING_FORMATS: dict[str, Callable[[str], bool]] = {
    "date-time": _date_time,
    "datetime": _date_time,
    "date": _date,
    "byte": _byte,
    "uuid": lambda v: bool(_UUID.match(v)),
    "ipv4": _ip(4),
    "ipv6": _ip(6),
    "cidr": _cidr,
    "hostname": lambda v: bool(_HOSTNAME.match(v)),
    "email": lambda v: bool(_EMAIL.match(v)),
    "mac": lambda v: bool(_MAC.match(v)),
    "duration": lambda v: bool(_DURATION.match(v)),
}

INT_RANGES: dict[str, tuple[int, int]] = {
    "int32": (-(2**31), 2**31 - 1),
    "int64": (-(2**63), 2**63 - 1),
}


def check(fmt: str, value: object) -> bool:
    """Whether ``value`` satisfies ``fmt``; unknown formats always pass."""
    if isinstance(value, str):
        checker = STRING_FORMATS.get(fmt)
        return checker(value) if checker is not None else True
    if isinstance(value, int) and not isinstance(value, bool):
        bounds = INT_RANGES.get(fmt)
        return bounds is None or bounds[0] <= value <= bounds[1]
    return True
