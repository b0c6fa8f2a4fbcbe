"""Turn a Kubernetes protobuf message into the dict its JSON form would be.

The decoder walks a payload with :mod:`.wire`, looks every field up in the
message table (:mod:`.schema`) and builds the JSON value that Go's
``encoding/json`` would produce from the struct gogo-protobuf unmarshals.
Unknown field numbers are skipped, as a newer client may send fields this
table predates; a known field with the wrong wire type is a 400.

What is kept (the "omitempty" rule). gogo writes every non-pointer field even
when it holds its zero value, while a JSON client leaves out what ``omitempty``
drops. Without the Go struct tags at hand, the rule is:

1. A field whose Go type is a pointer (``p``) is only on the wire when set, so
   it is kept whatever it holds: ``replicas: 0``, ``suspend: false``,
   ``automountServiceAccountToken: false``, ``emptyDir: {}``.
2. A non-pointer field the OpenAPI schema requires (``k``: no ``omitempty``,
   e.g. ``containerPort``, ``port``, ``PriorityClass.value``) is kept too, since
   JSON always carries it.
3. Any other non-pointer field is dropped when it is zero: ``""``, ``0``,
   ``false``, an IntOrString ``0``, or a nested object that came out empty.
4. Lists and maps are dropped when empty (protobuf cannot tell nil from
   empty, and JSON clients omit both); their elements are kept as they are.
5. A zero ``Time`` is always dropped: Go marshals it as ``null``.
6. An embedded Go struct (``i``, e.g. ``Volume.volumeSource``) is merged into
   its parent, as encoding/json inlines it.
"""

from __future__ import annotations

import base64
from typing import Any

from lahar.apiserver.errors import APIError
from lahar.apiserver.protobuf import schema
from lahar.apiserver.protobuf.special import CONVERTERS
from lahar.apiserver.protobuf.wire import LENGTH, NUMERIC, iter_fields, malformed, packed, scalar

JSON = Any

PROTOBUF_CONTENT_TYPE = "application/vnd.kubernetes.protobuf"


def _empty(value: JSON) -> bool:
    return value is None or value in ("", 0, False, {}, [])


def _zero(kind: str) -> JSON:
    """The JSON value of a map entry whose value field was left out."""
    if kind in ("string", "bytes"):
        return ""
    if kind == "bool":
        return False
    if kind in NUMERIC:
        return 0
    return convert(kind, b"", "map value")


def convert(kind: str, payload: bytes, where: str) -> JSON:
    """The JSON value of one length-delimited value of ``kind``."""
    if kind == "string":
        return payload.decode("utf-8", errors="replace")
    if kind == "bytes":
        return base64.b64encode(payload).decode("ascii")
    special = CONVERTERS.get(kind)
    if special is not None:
        return special(payload, where)
    if not schema.known_message(kind):
        raise malformed(f"{where}: no schema for message {kind}")
    return decode_message(kind, payload, where)


def _value(field: schema.Field, wire_type: int, value: int | bytes, where: str) -> JSON:
    if field.kind in NUMERIC:
        return scalar(field.kind, wire_type, value, where)
    if wire_type != LENGTH or not isinstance(value, bytes):
        raise malformed(f"{where}: wire type {wire_type} where {field.kind} was expected")
    return convert(field.kind, value, where)


def _map_entry(field: schema.Field, payload: bytes, where: str) -> tuple[str, JSON]:
    key: JSON = _zero(field.map_key)
    value: JSON = None
    for number, wire_type, raw in iter_fields(payload):
        if number not in (1, 2):
            continue
        kind = field.map_key if number == 1 else field.map_value
        if kind in NUMERIC:
            got: JSON = scalar(kind, wire_type, raw, where)
        elif wire_type != LENGTH or not isinstance(raw, bytes):
            raise malformed(f"{where}: wire type {wire_type} in a map entry where {kind} belongs")
        else:
            got = convert(kind, raw, f"{where}[value]")
        if number == 1:
            key = got
        else:
            value = got
    if value is None:
        value = _zero(field.map_value)
    if isinstance(key, bool):
        key = "true" if key else "false"
    return str(key), value


def decode_message(name: str, payload: bytes, where: str = "") -> dict[str, JSON]:
    """Decode ``payload`` as message ``name`` into its JSON object."""
    fields = schema.message(name)
    lists: dict[int, list[JSON]] = {}
    maps: dict[int, dict[str, JSON]] = {}
    singles: dict[int, JSON] = {}
    nested: dict[int, bytearray] = {}
    for number, wire_type, value in iter_fields(payload):
        field = fields.get(number)
        if field is None:
            continue  # a field this table predates
        here = f"{where}.{field.json}" if where else field.json
        if field.is_map:
            if wire_type != LENGTH or not isinstance(value, bytes):
                raise malformed(f"{here}: map entries must be length-delimited")
            key, item = _map_entry(field, value, here)
            maps.setdefault(number, {})[key] = item
        elif field.repeated:
            items = lists.setdefault(number, [])
            if field.kind in NUMERIC and wire_type == LENGTH and isinstance(value, bytes):
                items.extend(packed(field.kind, value, here))
            else:
                items.append(_value(field, wire_type, value, here))
        elif field.kind in NUMERIC:
            singles[number] = scalar(field.kind, wire_type, value, here)
        elif wire_type != LENGTH or not isinstance(value, bytes):
            raise malformed(f"{here}: wire type {wire_type} where {field.kind} was expected")
        elif field.kind in ("string", "bytes"):
            singles[number] = convert(field.kind, value, here)
        else:
            # Repeated occurrences of an embedded message merge, as in protobuf.
            nested.setdefault(number, bytearray()).extend(value)
    for number, data in nested.items():
        field = fields[number]
        here = f"{where}.{field.json}" if where else field.json
        singles[number] = convert(field.kind, bytes(data), here)
    return _assemble(fields, singles, lists, maps)


def _assemble(
    fields: schema.Message,
    singles: dict[int, JSON],
    lists: dict[int, list[JSON]],
    maps: dict[int, dict[str, JSON]],
) -> dict[str, JSON]:
    """Apply the keep/drop rule of the module docstring, in field-number order."""
    out: dict[str, JSON] = {}
    for number in sorted({*singles, *lists, *maps}):
        field = fields[number]
        if number in lists:
            if lists[number]:
                out[field.json] = lists[number]
        elif number in maps:
            if maps[number]:
                out[field.json] = maps[number]
        else:
            value = singles[number]
            if field.inline and isinstance(value, dict):
                out.update(value)
            elif value is None:
                continue  # zero Time: JSON null
            elif field.pointer or field.keep or not _empty(value):
                out[field.json] = value
    return out


def _type_meta(payload: bytes) -> tuple[str, str]:
    """``(apiVersion, kind)`` from an envelope's TypeMeta."""
    found = ["", ""]
    for number, wire_type, value in iter_fields(payload):
        if number in (1, 2):
            if wire_type != LENGTH or not isinstance(value, bytes):
                raise malformed("envelope typeMeta fields must be strings")
            found[number - 1] = value.decode("utf-8", errors="replace")
    return found[0], found[1]


def decode_envelope(data: bytes) -> dict[str, JSON]:
    """Decode a ``runtime.Unknown`` (the bytes after the ``k8s\\0`` magic)."""
    api_version = kind = encoding = content_type = ""
    raw = b""
    for number, wire_type, value in iter_fields(data):
        if number not in (1, 2, 3, 4):
            continue
        if wire_type != LENGTH or not isinstance(value, bytes):
            raise malformed(f"envelope field {number} must be length-delimited")
        if number == 1:
            api_version, kind = _type_meta(value)
        elif number == 2:
            raw = value
        elif number == 3:
            encoding = value.decode("utf-8", errors="replace")
        else:
            content_type = value.decode("utf-8", errors="replace")
    if encoding:
        raise APIError(
            415, "UnsupportedMediaType", f"protobuf content encoding {encoding!r} is not supported"
        )
    if content_type not in ("", PROTOBUF_CONTENT_TYPE):
        raise APIError(
            415,
            "UnsupportedMediaType",
            f"protobuf envelope carries unsupported content type {content_type!r}",
        )
    name = schema.message_for(api_version, kind)
    body = decode_message(name, raw)
    return {"apiVersion": api_version, "kind": kind, **body}
