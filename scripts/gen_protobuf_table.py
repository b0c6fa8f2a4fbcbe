"""Derive ``src/lahar/apiserver/protobuf/messages.json`` from a kubectl binary.

Why a binary: kubectl links the Go types of every built-in API group, and the
gogo-protobuf code generated for them registers each ``generated.proto`` as a
gzip-compressed ``FileDescriptorProto``. Those descriptors hold exactly the
schema facts the decoder needs (message names, field numbers, JSON names,
scalar kinds, repeated/map shapes) plus one fact the published ``.proto``
text lacks: the gogo ``nullable`` field option, which says whether the Go field
is a pointer. Nothing of the proto text or its comments is kept.

The second input is lightkube's models (a runtime dependency of lahar), read
for two OpenAPI facts: which fields are required (a required Go field has no
``omitempty``, so ``encoding/json`` always writes it, zero or not) and which
JSON properties exist (an embedded Go struct absent from them is inlined).

Usage::

    .venv/bin/python scripts/gen_protobuf_table.py [/path/to/kubectl]

The default binary is the newest ``kubectl.1.*`` beside ``/usr/bin/kubectl``'s
target (the Google Cloud SDK ships one per minor version), else that target.
Only the messages reachable from the root kinds below are written.

apiextensions.k8s.io is not linked into kubectl, so CustomResourceDefinition is
not covered; kubectl (and lahar's own clients) send CRDs as JSON anyway.
"""

from __future__ import annotations

import importlib
import json
import os
import re
import sys
import zlib
from pathlib import Path
from typing import Any

from lahar.apiserver.protobuf.wire import iter_fields

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "src" / "lahar" / "apiserver" / "protobuf" / "messages.json"

# (apiVersion, kind) -> short message name: the bodies lahar accepts as protobuf.
KINDS: dict[str, str] = {
    "v1/Namespace": "core.v1.Namespace",
    "v1/Node": "core.v1.Node",
    "v1/Pod": "core.v1.Pod",
    "v1/Service": "core.v1.Service",
    "v1/Endpoints": "core.v1.Endpoints",
    "v1/ConfigMap": "core.v1.ConfigMap",
    "v1/Secret": "core.v1.Secret",
    "v1/ServiceAccount": "core.v1.ServiceAccount",
    "v1/Event": "core.v1.Event",
    "v1/Binding": "core.v1.Binding",
    "v1/DeleteOptions": "meta.v1.DeleteOptions",
    "meta.k8s.io/v1/DeleteOptions": "meta.v1.DeleteOptions",
    "policy/v1/Eviction": "policy.v1.Eviction",
    "coordination.k8s.io/v1/Lease": "coordination.v1.Lease",
    "batch/v1/Job": "batch.v1.Job",
    "scheduling.k8s.io/v1/PriorityClass": "scheduling.v1.PriorityClass",
    "autoscaling/v1/Scale": "autoscaling.v1.Scale",
}

# Messages the decoder converts by hand (JSON strings, numbers or raw JSON).
SPECIAL = {
    "meta.v1.Time",
    "meta.v1.MicroTime",
    "meta.v1.Duration",
    "meta.v1.FieldsV1",
    "resource.Quantity",
    "intstr.IntOrString",
    "runtime.RawExtension",
    "runtime.Unknown",
    "apiextensions.v1.JSON",
}

# Non-pointer fields without ``omitempty`` that the OpenAPI schema calls optional,
# so lightkube cannot tell us: their zero value is sent and meaningful.
EXTRA_KEEP: dict[str, set[str]] = {"scheduling.v1.PriorityClass": {"value"}}

# FieldDescriptorProto.type numbers -> scalar kind names used in the table.
SCALARS = {
    1: "double",
    2: "float",
    3: "int64",
    4: "uint64",
    5: "int32",
    6: "fixed64",
    7: "fixed32",
    8: "bool",
    9: "string",
    12: "bytes",
    13: "uint32",
}
TYPE_MESSAGE = 11
LABEL_REPEATED = 3
GOGO_NULLABLE = 65001
GOGO_CUSTOMNAME = 65004

_PREFIXES = (
    "k8s.io.apimachinery.pkg.apis.",
    "k8s.io.apimachinery.pkg.api.",
    "k8s.io.apimachinery.pkg.util.",
    "k8s.io.apimachinery.pkg.",
    "k8s.io.apiextensions_apiserver.pkg.apis.",
    "k8s.io.api.",
)


def short(name: str) -> str:
    name = name.lstrip(".")
    for prefix in _PREFIXES:
        if name.startswith(prefix):
            return name[len(prefix) :]
    return name


def default_binary() -> Path:
    real = Path(os.path.realpath("/usr/bin/kubectl"))
    found = sorted(
        real.parent.glob("kubectl.1.*"), key=lambda p: [int(x) for x in p.name.split(".")[1:]]
    )
    return found[-1] if found else real


def descriptors(binary: Path) -> list[bytes]:
    """Every gzip member in ``binary`` that inflates to a k8s FileDescriptorProto."""
    data = binary.read_bytes()
    out = []
    for match in re.finditer(rb"\x1f\x8b\x08\x00\x00\x00\x00\x00", data):
        inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
        try:
            raw = inflater.decompress(data[match.start() : match.start() + 4_000_000])
        except zlib.error:
            continue
        if raw[:1] == b"\x0a" and b"k8s.io" in raw[:200] and b".proto" in raw[:200]:
            out.append(raw)
    return out


def fields_of(buf: bytes) -> list[tuple[int, Any]]:
    return [(num, val) for num, _wt, val in iter_fields(buf)]


def collect(raw_files: list[bytes]) -> dict[str, dict[str, Any]]:
    """All messages by full name: {"fields": [...], "map_entry": bool}."""
    messages: dict[str, dict[str, Any]] = {}

    def walk(desc: bytes, scope: str) -> None:
        parts = fields_of(desc)
        name = next(v for n, v in parts if n == 1).decode()
        full = f"{scope}.{name}"
        entry: dict[str, Any] = {"fields": [], "map_entry": False}
        for num, val in parts:
            if num == 2:
                entry["fields"].append(field_info(val))
            elif num == 3:
                walk(val, full)
            elif num == 7:
                entry["map_entry"] = any(n == 7 and v for n, v in fields_of(val))
        messages[full] = entry

    for raw in raw_files:
        parts = fields_of(raw)
        package = next((v.decode() for n, v in parts if n == 2), "")
        for num, val in parts:
            if num == 4:
                walk(val, "." + package)
    return messages


def field_info(desc: bytes) -> dict[str, Any]:
    info: dict[str, Any] = {"nullable": True, "type_name": ""}
    for num, val in fields_of(desc):
        if num == 1:
            info["name"] = val.decode()
        elif num == 3:
            info["number"] = val
        elif num == 4:
            info["label"] = val
        elif num == 5:
            info["type"] = val
        elif num == 6:
            info["type_name"] = val.decode()
        elif num == 8:
            for opt, flag in fields_of(val):
                if opt == GOGO_NULLABLE:
                    info["nullable"] = bool(flag)
                elif opt == GOGO_CUSTOMNAME:
                    info["go_name"] = flag.decode()
    # Kubernetes names each proto field after the Go field's JSON tag.
    info["json"] = info["name"]
    return info


def kind_of(info: dict[str, Any]) -> str:
    if info["type"] == TYPE_MESSAGE:
        return short(info["type_name"])
    return SCALARS[info["type"]]


def is_inline(info: dict[str, Any]) -> bool:
    """Whether the Go field is an embedded struct whose JSON is inlined in its parent.

    Embedding shows as a non-pointer message field whose Go name is its type's
    name; ``metadata`` (embedded ObjectMeta/ListMeta) keeps its own JSON key, and
    so does a field the OpenAPI model lists as a property (checked by the caller).
    """
    return (
        info["type"] == TYPE_MESSAGE
        and not info["nullable"]
        and info["label"] != LABEL_REPEATED
        and info.get("go_name") == info["type_name"].rsplit(".", 1)[-1]
        and info["json"] != "metadata"
    )


def model_fields(message: str) -> tuple[set[str], set[str]]:
    """JSON names of lightkube's model for ``message``: (all, required)."""
    group, version, name = message.rsplit(".", 2)
    try:
        module = importlib.import_module(f"lightkube.models.{group}_{version}")
    except ImportError:
        return set(), set()
    cls = getattr(module, name, None)
    if cls is None or not hasattr(cls, "__struct_fields__"):
        return set(), set()
    encoded = getattr(cls, "__struct_encode_fields__", cls.__struct_fields__)
    notes = cls.__annotations__
    pairs = list(zip(cls.__struct_fields__, encoded, strict=True))
    required = {
        wire for attr, wire in pairs if not str(notes.get(attr, "Optional")).startswith("Optional")
    }
    return {wire for _attr, wire in pairs}, required


def build(messages: dict[str, dict[str, Any]]) -> dict[str, Any]:
    by_short = {short(k): v for k, v in messages.items()}
    table: dict[str, dict[str, list[Any]]] = {}
    todo = list(KINDS.values())
    while todo:
        name = todo.pop()
        if name in table or name in SPECIAL:
            continue
        if name not in by_short:
            raise SystemExit(f"message {name} not found in the descriptors")
        known, required = model_fields(name)
        required |= EXTRA_KEEP.get(name, set())
        row: dict[str, list[Any]] = {}
        for info in by_short[name]["fields"]:
            kind = kind_of(info)
            repeated = info["label"] == LABEL_REPEATED
            entry_msg = by_short.get(kind) if info["type"] == TYPE_MESSAGE else None
            if repeated and entry_msg is not None and entry_msg["map_entry"]:
                key, value = (kind_of(f) for f in sorted(entry_msg["fields"], key=_num))
                row[str(info["number"])] = [info["json"], "map", "", key, value]
                if value not in SCALARS.values():
                    todo.append(value)
                continue
            flags = "r" if repeated else ("p" if info["nullable"] else "")
            if is_inline(info) and info["json"] not in known:
                flags += "i"
            if not repeated and not info["nullable"] and info["json"] in required:
                flags += "k"
            row[str(info["number"])] = [info["json"], kind, flags]
            if info["type"] == TYPE_MESSAGE:
                todo.append(kind)
        table[name] = dict(sorted(row.items(), key=lambda kv: int(kv[0])))
    return {"kinds": KINDS, "messages": dict(sorted(table.items()))}


def _num(info: dict[str, Any]) -> int:
    return int(info["number"])


def render(table: dict[str, Any]) -> str:
    """JSON with one kind or message per line, so diffs stay readable."""

    def compact(value: Any) -> str:
        return json.dumps(value, separators=(",", ":"))

    def block(mapping: dict[str, Any]) -> str:
        return ",\n".join(f"  {compact(k)}: {compact(v)}" for k, v in mapping.items())

    head = f'{{\n"source": {compact(table["source"])},\n'
    kinds = f'"kinds": {{\n{block(table["kinds"])}\n}},\n'
    messages = f'"messages": {{\n{block(table["messages"])}\n}}\n}}\n'
    return head + kinds + messages


def main() -> None:
    binary = Path(sys.argv[1]) if len(sys.argv) > 1 else default_binary()
    raw_files = descriptors(binary)
    if not raw_files:
        raise SystemExit(f"no protobuf descriptors found in {binary}")
    table = build(collect(raw_files))
    table["source"] = f"descriptors embedded in {binary.name}"
    OUT.write_text(render(table))
    print(f"{len(table['messages'])} messages -> {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
