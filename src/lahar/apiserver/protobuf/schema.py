"""The message table: which fields each Kubernetes protobuf message has.

``messages.json`` is derived data (see ``scripts/gen_protobuf_table.py``): for
every message reachable from the kinds lahar accepts as protobuf it maps field
numbers to ``[jsonName, type, flags]``, or ``[jsonName, "map", "", key, value]``
for maps. ``type`` is a scalar kind (``string``, ``int32``, ``bytes``, ...) or a
short message name such as ``core.v1.PodSpec``. Flag letters:

``r``  repeated field (a JSON list);
``p``  the Go field is a pointer (gogo ``nullable``): present on the wire means
       set, so its value is kept even when zero, false, empty or ``{}``;
``k``  the Go field has no ``omitempty``: its zero value is kept too;
``i``  an embedded Go struct whose JSON fields are inlined into the parent.

This module only loads and indexes the table; :mod:`.decoder` interprets it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

from lahar.apiserver.errors import APIError


@dataclass(frozen=True, slots=True)
class Field:
    """One field of a message, as the decoder needs it."""

    number: int
    json: str
    kind: str
    repeated: bool = False
    pointer: bool = False
    keep: bool = False
    inline: bool = False
    map_key: str = ""
    map_value: str = ""

    @property
    def is_map(self) -> bool:
        return bool(self.map_value)


Message = dict[int, Field]


def _field(number: int, row: list[Any]) -> Field:
    if row[1] == "map":
        return Field(number, row[0], "map", map_key=row[3], map_value=row[4])
    flags = row[2]
    return Field(
        number,
        row[0],
        row[1],
        repeated="r" in flags,
        pointer="p" in flags,
        keep="k" in flags,
        inline="i" in flags,
    )


@cache
def _table() -> tuple[dict[str, str], dict[str, Message]]:
    text = resources.files(__package__).joinpath("messages.json").read_text()
    raw = json.loads(text)
    messages = {
        name: {int(num): _field(int(num), row) for num, row in fields.items()}
        for name, fields in raw["messages"].items()
    }
    return raw["kinds"], messages


def message(name: str) -> Message:
    """The fields of message ``name`` (a short name such as ``core.v1.Pod``)."""
    return _table()[1][name]


def known_message(name: str) -> bool:
    return name in _table()[1]


def message_for(api_version: str, kind: str) -> str:
    """The message that encodes ``kind`` in ``api_version``, or a 415 error."""
    kinds = _table()[0]
    if kind == "DeleteOptions":
        # Clients tag DeleteOptions with whichever group version they are deleting in.
        return kinds["v1/DeleteOptions"]
    name = kinds.get(f"{api_version}/{kind}")
    if name is None:
        raise APIError(
            415,
            "UnsupportedMediaType",
            f"protobuf encoding is not supported for {kind or '<no kind>'} "
            f"in {api_version or '<no apiVersion>'}; send application/json",
        )
    return name


def supported_kinds() -> list[tuple[str, str]]:
    """Every ``(apiVersion, kind)`` the table can decode."""
    out = []
    for key in _table()[0]:
        api_version, _, kind = key.rpartition("/")
        out.append((api_version, kind))
    return out
