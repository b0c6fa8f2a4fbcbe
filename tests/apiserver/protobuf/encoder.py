"""A small protobuf encoder for tests, driven by lahar's message table.

It writes bodies the way gogo-protobuf does for Kubernetes objects: every
non-pointer scalar and message field is written even when absent from the
dict (as its zero value), while pointer fields, lists and maps are written
only when present. Decoding its output must therefore undo the zero padding.
"""

from __future__ import annotations

import base64
import struct
from datetime import datetime
from typing import Any

from lahar.apiserver.protobuf import schema


def varint(value: int) -> bytes:
    value &= (1 << 64) - 1
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def tag(number: int, wire_type: int) -> bytes:
    return varint(number << 3 | wire_type)


def num(number: int, value: int) -> bytes:
    """A varint field."""
    return tag(number, 0) + varint(value)


def length(number: int, payload: bytes) -> bytes:
    return tag(number, 2) + varint(len(payload)) + payload


def _timestamp(text: str, micros: bool) -> bytes:
    instant = datetime.fromisoformat(text.replace("Z", "+00:00"))
    seconds = int(instant.timestamp())
    out = tag(1, 0) + varint(seconds) if seconds else b""
    nanos = instant.microsecond * 1000 if micros else 0
    return out + (tag(2, 0) + varint(nanos) if nanos else b"")


def special(kind: str, value: Any) -> bytes | None:
    """The payload of a hand-converted message, or None when ``kind`` is ordinary."""
    if kind == "resource.Quantity":
        return length(1, str(value).encode())
    if kind == "intstr.IntOrString":
        if isinstance(value, str):
            return tag(1, 0) + varint(1) + length(3, value.encode())
        return tag(1, 0) + varint(0) + tag(2, 0) + varint(value)
    if kind in ("meta.v1.Time", "meta.v1.MicroTime"):
        return b"" if value is None else _timestamp(value, kind == "meta.v1.MicroTime")
    if kind in ("meta.v1.FieldsV1", "runtime.RawExtension"):
        import json

        return length(1, json.dumps(value).encode())
    return None


def scalar(number: int, kind: str, value: Any) -> bytes:
    if kind == "string":
        return length(number, value.encode())
    if kind == "bytes":
        return length(number, base64.b64decode(value))
    if kind == "double":
        return tag(number, 1) + struct.pack("<d", value)
    return tag(number, 0) + varint(int(value))


def zero(kind: str) -> Any:
    return {"string": "", "bytes": "", "bool": False, "double": 0.0}.get(kind, 0)


def encode_value(number: int, kind: str, value: Any) -> bytes:
    if kind in ("string", "bytes", "bool", "int32", "int64", "double", "uint64"):
        return scalar(number, kind, value)
    payload = special(kind, value)
    if payload is None:
        payload = encode_message(kind, value)
    return length(number, payload)


def encode_message(name: str, obj: dict[str, Any]) -> bytes:
    out = bytearray()
    for number, field in sorted(schema.message(name).items()):
        if field.inline:
            out += length(number, encode_message(field.kind, obj))
            continue
        present = field.json in obj
        value = obj.get(field.json)
        if field.is_map:
            for key, item in (value or {}).items():
                entry = scalar(1, field.map_key, key) + encode_value(2, field.map_value, item)
                out += length(number, entry)
        elif field.repeated:
            for item in value or []:
                out += encode_value(number, field.kind, item)
        elif present:
            out += encode_value(number, field.kind, value)
        elif not field.pointer:
            # gogo writes non-pointer fields whatever they hold.
            if field.kind in ("string", "bytes", "bool", "int32", "int64", "double"):
                out += scalar(number, field.kind, zero(field.kind))
            elif field.kind in ("meta.v1.Time", "meta.v1.MicroTime"):
                out += length(number, b"")
            elif field.kind == "intstr.IntOrString":
                out += length(number, special(field.kind, 0) or b"")
            elif field.kind == "resource.Quantity":
                out += length(number, special(field.kind, "0") or b"")
            elif schema.known_message(field.kind):
                out += length(number, encode_message(field.kind, {}))
    return bytes(out)


def envelope(api_version: str, kind: str, raw: bytes) -> bytes:
    type_meta = length(1, api_version.encode()) + length(2, kind.encode())
    unknown = length(1, type_meta) + length(2, raw) + length(3, b"") + length(4, b"")
    return b"k8s\x00" + unknown


def encode(obj: dict[str, Any]) -> bytes:
    """A full request body for ``obj`` (which names its apiVersion and kind)."""
    body = {k: v for k, v in obj.items() if k not in ("apiVersion", "kind")}
    name = schema.message_for(obj["apiVersion"], obj["kind"])
    return envelope(obj["apiVersion"], obj["kind"], encode_message(name, body))
