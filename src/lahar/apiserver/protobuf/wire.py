"""Protocol-buffer wire format reading, with client mistakes reported as 400s.

Kubernetes' protobuf encoding uses only a handful of wire features: varints
(``int32``/``int64``/``bool``, never zigzag), length-delimited payloads (strings,
bytes, nested messages, map entries, and packed scalars should a client send
them) and, rarely, fixed 64/32-bit numbers (``double``/``float``). This module
walks a buffer field by field and converts the raw values into Python numbers;
it knows nothing about schemas. Every way a buffer can be malformed (truncated
varint, length past the end, wire types 3/4/6/7, field number 0) raises
:func:`lahar.apiserver.errors.bad_request` so a bad body can never become a 500.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterator

from lahar.apiserver.errors import APIError, bad_request

VARINT = 0
FIXED64 = 1
LENGTH = 2
FIXED32 = 5

_MAX_VARINT_BYTES = 10


def malformed(what: str) -> APIError:
    """The error for a body that is not well-formed protobuf."""
    return bad_request(f"malformed protobuf request body: {what}")


def read_varint(buf: bytes | memoryview, pos: int) -> tuple[int, int]:
    """Read an unsigned varint at ``pos``; return ``(value, next position)``."""
    result = 0
    shift = 0
    end = len(buf)
    for _ in range(_MAX_VARINT_BYTES):
        if pos >= end:
            raise malformed("truncated varint")
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return result & 0xFFFF_FFFF_FFFF_FFFF, pos
        shift += 7
    raise malformed("varint longer than 10 bytes")


def iter_fields(buf: bytes | memoryview) -> Iterator[tuple[int, int, int | bytes]]:
    """Yield ``(field number, wire type, value)`` for every field in ``buf``.

    Varints come back as unsigned ints, fixed-width values as their raw little
    endian bytes, and length-delimited values as ``bytes``.
    """
    pos = 0
    end = len(buf)
    while pos < end:
        key, pos = read_varint(buf, pos)
        number, wire_type = key >> 3, key & 7
        if number == 0:
            raise malformed("field number 0")
        value: int | bytes
        if wire_type == VARINT:
            value, pos = read_varint(buf, pos)
        elif wire_type == LENGTH:
            size, pos = read_varint(buf, pos)
            if size > end - pos:
                raise malformed(f"field {number} runs past the end of its message")
            value = bytes(buf[pos : pos + size])
            pos += size
        elif wire_type == FIXED64:
            if pos + 8 > end:
                raise malformed(f"field {number} truncated (fixed64)")
            value = bytes(buf[pos : pos + 8])
            pos += 8
        elif wire_type == FIXED32:
            if pos + 4 > end:
                raise malformed(f"field {number} truncated (fixed32)")
            value = bytes(buf[pos : pos + 4])
            pos += 4
        else:
            raise malformed(f"unsupported wire type {wire_type} for field {number}")
        yield number, wire_type, value


def signed(value: int, bits: int) -> int:
    """Reinterpret an unsigned varint as a two's-complement integer of ``bits``."""
    value &= (1 << bits) - 1
    return value - (1 << bits) if value >> (bits - 1) else value


def _int32(v: int | bytes) -> int:
    assert isinstance(v, int)
    return signed(v, 32)


def _int64(v: int | bytes) -> int:
    assert isinstance(v, int)
    return signed(v, 64)


def _uint32(v: int | bytes) -> int:
    assert isinstance(v, int)
    return v & 0xFFFF_FFFF


def _uint64(v: int | bytes) -> int:
    assert isinstance(v, int)
    return v


def _bool(v: int | bytes) -> bool:
    return bool(v)


def _double(v: int | bytes) -> float:
    assert isinstance(v, bytes)
    return float(struct.unpack("<d", v)[0])


def _float(v: int | bytes) -> float:
    assert isinstance(v, bytes)
    return float(struct.unpack("<f", v)[0])


def _fixed64(v: int | bytes) -> int:
    assert isinstance(v, bytes)
    return int(struct.unpack("<Q", v)[0])


def _fixed32(v: int | bytes) -> int:
    assert isinstance(v, bytes)
    return int(struct.unpack("<I", v)[0])


# How each scalar kind is read: (expected wire type, converter from the raw value).
Converter = Callable[[int | bytes], int | float | bool]

NUMERIC: dict[str, tuple[int, Converter]] = {
    "int32": (VARINT, _int32),
    "int64": (VARINT, _int64),
    "uint32": (VARINT, _uint32),
    "uint64": (VARINT, _uint64),
    "bool": (VARINT, _bool),
    "double": (FIXED64, _double),
    "fixed64": (FIXED64, _fixed64),
    "float": (FIXED32, _float),
    "fixed32": (FIXED32, _fixed32),
}


SCALAR_KINDS = frozenset({*NUMERIC, "string", "bytes"})


def scalar(kind: str, wire_type: int, value: int | bytes, where: str) -> int | float | bool:
    """Convert one numeric field value of scalar ``kind``; reject a wrong wire type."""
    expected, convert = NUMERIC[kind]
    if wire_type != expected:
        raise malformed(f"{where}: wire type {wire_type} where {kind} was expected")
    return convert(value)


def packed(kind: str, payload: bytes, where: str) -> list[int | float | bool]:
    """Unpack a packed repeated numeric field."""
    expected, convert = NUMERIC[kind]
    out: list[int | float | bool] = []
    pos = 0
    if expected == VARINT:
        while pos < len(payload):
            raw, pos = read_varint(payload, pos)
            out.append(convert(raw))
        return out
    width = 8 if expected == FIXED64 else 4
    if len(payload) % width:
        raise malformed(f"{where}: packed {kind} payload is not a multiple of {width} bytes")
    for pos in range(0, len(payload), width):
        out.append(convert(payload[pos : pos + width]))
    return out
