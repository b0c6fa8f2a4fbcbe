"""Messages whose JSON form is not an object: times, durations, quantities, ...

A handful of apimachinery types are protobuf messages on the wire but custom
JSON values, because their Go types implement ``MarshalJSON``:

* ``Quantity`` ({string=1}) is its canonical string, e.g. ``"500m"``;
* ``IntOrString`` ({type=1, intVal=2, strVal=3}) is a JSON number when type is
  0 and a string when it is 1;
* ``Time`` and ``MicroTime`` ({seconds=1, nanos=2}) are RFC 3339 strings in UTC,
  whole seconds for ``Time`` and microseconds for ``MicroTime``; an empty
  payload is Go's zero time, which marshals as ``null`` and is returned as
  ``None`` so the caller drops it;
* ``Duration`` ({duration=1}, nanoseconds) is Go's ``time.Duration`` string;
* ``FieldsV1``, ``RawExtension`` and apiextensions ``JSON`` ({raw=1}) carry JSON
  text that is parsed back into a value.

Each converter takes the message payload and returns the JSON value.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from lahar.apiserver.protobuf.wire import LENGTH, iter_fields, malformed, signed

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _string(value: int | bytes, where: str) -> str:
    if not isinstance(value, bytes):
        raise malformed(f"{where}: expected a length-delimited string")
    return value.decode("utf-8", errors="replace")


def _int(value: int | bytes, where: str, bits: int) -> int:
    if not isinstance(value, int):
        raise malformed(f"{where}: expected a varint")
    return signed(value, bits)


def quantity(payload: bytes, where: str) -> str:
    text = ""
    for number, _wt, value in iter_fields(payload):
        if number == 1:
            text = _string(value, where)
    return text or "0"


def int_or_string(payload: bytes, where: str) -> int | str:
    kind, int_val, str_val = 0, 0, ""
    for number, _wt, value in iter_fields(payload):
        if number == 1:
            kind = _int(value, where, 64)
        elif number == 2:
            int_val = _int(value, where, 32)
        elif number == 3:
            str_val = _string(value, where)
    return str_val if kind == 1 else int_val


def _instant(payload: bytes, where: str) -> datetime | None:
    if not payload:
        return None
    seconds, nanos = 0, 0
    for number, _wt, value in iter_fields(payload):
        if number == 1:
            seconds = _int(value, where, 64)
        elif number == 2:
            nanos = _int(value, where, 32)
    try:
        return _EPOCH + timedelta(seconds=seconds, microseconds=nanos // 1000)
    except OverflowError:
        raise malformed(f"{where}: time out of range ({seconds}s)") from None


def _rfc3339(instant: datetime, micros: bool) -> str:
    d = instant
    text = f"{d.year:04d}-{d.month:02d}-{d.day:02d}T{d.hour:02d}:{d.minute:02d}:{d.second:02d}"
    return f"{text}.{d.microsecond:06d}Z" if micros else f"{text}Z"


def time(payload: bytes, where: str) -> str | None:
    instant = _instant(payload, where)
    return None if instant is None else _rfc3339(instant, micros=False)


def micro_time(payload: bytes, where: str) -> str | None:
    instant = _instant(payload, where)
    return None if instant is None else _rfc3339(instant, micros=True)


def duration(payload: bytes, where: str) -> str:
    nanos = 0
    for number, _wt, value in iter_fields(payload):
        if number == 1:
            nanos = _int(value, where, 64)
    return go_duration(nanos)


def go_duration(nanos: int) -> str:
    """Format nanoseconds the way Go's ``time.Duration.String`` does."""
    if nanos == 0:
        return "0s"
    sign = "-" if nanos < 0 else ""
    n = abs(nanos)
    if n < 1_000_000_000:
        for unit, size in (("ms", 1_000_000), ("µs", 1_000), ("ns", 1)):
            if n >= size:
                return sign + _fraction(n, size) + unit
    hours, rest = divmod(n, 3_600_000_000_000)
    minutes, rest = divmod(rest, 60_000_000_000)
    out = _fraction(rest, 1_000_000_000) + "s"
    if hours or minutes:
        out = f"{minutes}m" + out
    if hours:
        out = f"{hours}h" + out
    return sign + out


def _fraction(value: int, unit: int) -> str:
    whole, frac = divmod(value, unit)
    if not frac:
        return str(whole)
    digits = str(frac).rjust(len(str(unit)) - 1, "0").rstrip("0")
    return f"{whole}.{digits}"


def raw_json(payload: bytes, where: str) -> Any:
    """``{raw=1}`` holding JSON text (or, for RawExtension, a nested envelope)."""
    raw = b""
    for number, wire_type, value in iter_fields(payload):
        if number == 1:
            if wire_type != LENGTH or not isinstance(value, bytes):
                raise malformed(f"{where}: raw must be length-delimited")
            raw = value
    if not raw:
        return None
    if raw.startswith(b"k8s\x00"):
        from lahar.apiserver.protobuf.decoder import decode_envelope

        return decode_envelope(raw[4:])
    try:
        return json.loads(raw)
    except (ValueError, RecursionError):
        raise malformed(f"{where}: embedded raw value is not valid JSON") from None


def unknown(payload: bytes, where: str) -> Any:
    from lahar.apiserver.protobuf.decoder import decode_envelope

    return decode_envelope(payload)


# Converter per short message name; the value ``None`` means "zero, omit it".
CONVERTERS: dict[str, Callable[[bytes, str], Any]] = {
    "resource.Quantity": quantity,
    "intstr.IntOrString": int_or_string,
    "meta.v1.Time": time,
    "meta.v1.MicroTime": micro_time,
    "meta.v1.Duration": duration,
    "meta.v1.FieldsV1": raw_json,
    "runtime.RawExtension": raw_json,
    "apiextensions.v1.JSON": raw_json,
    "runtime.Unknown": unknown,
}
