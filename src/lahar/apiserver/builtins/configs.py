"""ConfigMaps and Secrets: key formats, base64 data, size limits, immutability.

Secrets arrive with ``data`` values base64-encoded and may carry write-only
``stringData``; like the real server we fold ``stringData`` into ``data`` and
default ``type`` to ``Opaque``. Both kinds refuse data changes once marked
``immutable: true``, and the type-specific keys of well-known Secret types
(TLS, basic-auth, docker config, service-account token) are required.
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any

from lahar.apiserver.builtins import fielderr as fe
from lahar.apiserver.builtins import names
from lahar.apiserver.errors import Cause

MAX_SIZE = 1024 * 1024
_IMMUTABLE_MSG = "field is immutable when `immutable` is set"
_REQUIRED_KEYS = {
    "kubernetes.io/tls": ("tls.crt", "tls.key"),
    "kubernetes.io/ssh-auth": ("ssh-privatekey",),
    "kubernetes.io/dockercfg": (".dockercfg",),
    "kubernetes.io/dockerconfigjson": (".dockerconfigjson",),
}


def default_secret(obj: dict[str, Any]) -> dict[str, Any]:
    if not obj.get("type"):
        obj["type"] = "Opaque"
    string_data = obj.pop("stringData", None)
    if isinstance(string_data, dict) and string_data:
        data = obj.get("data") if isinstance(obj.get("data"), dict) else {}
        for k, v in string_data.items():
            data[k] = base64.b64encode(str(v).encode()).decode()
        obj["data"] = data
    return obj


def _decode(value: Any) -> bytes | None:
    if not isinstance(value, str):
        return None
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        return None


def validate_secret(obj: dict[str, Any]) -> list[Cause]:
    causes: list[Cause] = []
    data = obj.get("data") or {}
    if not isinstance(data, dict):
        return [fe.invalid("data", data, "must be a map of keys to base64-encoded values")]
    size = 0
    decoded: dict[str, bytes] = {}
    for k in sorted(data):
        path = fe.key("data", k)
        causes += [fe.invalid(path, k, m) for m in names.config_key(k)]
        raw = _decode(data[k])
        if raw is None:
            causes.append(
                fe.invalid(path, "<secret contents redacted>", "must be a base64-encoded string")
            )
            continue
        decoded[k] = raw
        size += len(raw)
    if size > MAX_SIZE:
        causes.append(fe.too_long("data", MAX_SIZE))
    kind = obj.get("type") or "Opaque"
    if kind == "kubernetes.io/service-account-token":
        annotations = (obj.get("metadata") or {}).get("annotations") or {}
        if not annotations.get("kubernetes.io/service-account.name"):
            causes.append(fe.required("metadata.annotations[kubernetes.io/service-account.name]"))
    elif kind == "kubernetes.io/basic-auth" and "username" not in data and "password" not in data:
        causes += [fe.required("data[username]"), fe.required("data[password]")]
    for k in _REQUIRED_KEYS.get(kind, ()):
        if k not in data:
            causes.append(fe.required(fe.key("data", k)))
        elif k.startswith(".docker") and k in decoded:
            try:
                json.loads(decoded[k])
            except ValueError as exc:
                causes.append(fe.invalid(fe.key("data", k), "<secret contents redacted>", str(exc)))
    return causes


def validate_config_map(obj: dict[str, Any]) -> list[Cause]:
    causes: list[Cause] = []
    data = obj.get("data") or {}
    binary = obj.get("binaryData") or {}
    size = 0
    for k in sorted(data):
        path = fe.key("data", k)
        causes += [fe.invalid(path, k, m) for m in names.config_key(k)]
        if k in binary:
            causes.append(fe.invalid(path, k, "duplicate of key present in binaryData"))
        if not isinstance(data[k], str):
            causes.append(fe.invalid(path, data[k], "must be a string"))
        size += len(str(data[k]).encode())
    for k in sorted(binary):
        path = fe.key("binaryData", k)
        causes += [fe.invalid(path, k, m) for m in names.config_key(k)]
        raw = _decode(binary[k])
        if raw is None:
            causes.append(fe.invalid(path, binary[k], "must be a base64-encoded string"))
        else:
            size += len(raw)
    if size > MAX_SIZE:
        # upstream reports the whole object, which prints as "[]"
        causes.append(fe.too_long("[]", MAX_SIZE))
    return causes


def validate_immutable_data(
    new: dict[str, Any], old: dict[str, Any], fields: tuple[str, ...]
) -> list[Cause]:
    if old.get("immutable") is not True:
        return []
    causes: list[Cause] = []
    if new.get("immutable") is not True:
        causes.append(fe.forbidden("immutable", _IMMUTABLE_MSG))
    for field in fields:
        if (new.get(field) or {}) != (old.get(field) or {}):
            causes.append(fe.forbidden(field, _IMMUTABLE_MSG))
    return causes


def validate_secret_update(new: dict[str, Any], old: dict[str, Any]) -> list[Cause]:
    causes: list[Cause] = []
    if (new.get("type") or "Opaque") != (old.get("type") or "Opaque"):
        causes.append(fe.immutable("type", new.get("type") or ""))
    return causes + validate_immutable_data(new, old, ("data",)) + validate_secret(new)


def validate_config_map_update(new: dict[str, Any], old: dict[str, Any]) -> list[Cause]:
    return validate_immutable_data(new, old, ("data", "binaryData")) + validate_config_map(new)
