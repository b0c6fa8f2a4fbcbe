"""A container's environment, built the way the kubelet builds it.

The local node agent starts containers as plain processes, so the environment a
process sees is all the configuration Kubernetes hands it: the "image" environment
(here ``base_env``: PATH and friends), then ``envFrom`` (whole ConfigMaps and Secrets,
with ``prefix`` and ``optional``), then ``env`` in order (literal values with ``$(VAR)``
expansion, and ``valueFrom``: the downward API's ``fieldRef`` and ``resourceFieldRef``,
``configMapKeyRef`` and ``secretKeyRef``). Later entries override earlier ones.

Behaviour follows the kubelet so that manifests mean the same here as on a cluster:

* ``$(VAR)`` expands only to variables defined earlier by ``envFrom`` or ``env`` (the
  kubelet never sees the image's environment, so ``$(PATH)`` stays literal); ``$$``
  is an escaped ``$``; unknown or unterminated references stay as written. Values
  from ``valueFrom`` and ``envFrom`` are never expanded.
* ``envFrom`` keys that are not valid variable names (``[-._a-zA-Z][-._a-zA-Z0-9]*``)
  are skipped; a ConfigMap's ``binaryData`` is not used, as in Kubernetes.
* ``resourceFieldRef`` values are rounded up after dividing by ``divisor``; a missing
  limit is the node's allocatable amount; a missing request is the limit given in the
  manifest (the API server's defaulting), else 0.
* A missing ConfigMap, Secret or key that is not ``optional`` is a
  :class:`ContainerConfigError` with the kubelet's wording; an optional one is skipped.

The helpers :func:`expand`, :func:`field_value`, :func:`resource_value`,
:func:`configmap_bytes` and :func:`secret_bytes` are shared with ``volumes``
(downward API, ConfigMap and Secret volumes, ``subPathExpr``).
"""

from __future__ import annotations

import base64
import binascii
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from lahar.api.quantity import QuantityError, parse_quantity

_ENV_NAME = re.compile(r"^[-._a-zA-Z][-._a-zA-Z0-9]*$")
_SUBSCRIPTED = re.compile(r"^(metadata\.(?:labels|annotations))\['(.*)'\]$", re.DOTALL)
_DEFAULTED_LIMITS = ("cpu", "memory", "ephemeral-storage")


class ContainerConfigError(Exception):
    """The container cannot be configured (the kubelet's ``CreateContainerConfigError``)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.reason = "CreateContainerConfigError"
        self.message = message


@dataclass(frozen=True)
class Lookups:
    """How to find the objects a pod refers to: ``(namespace, name) -> object or None``."""

    configmap: Callable[[str, str], dict[str, Any] | None]
    secret: Callable[[str, str], dict[str, Any] | None]


def is_env_name(name: str) -> bool:
    """Whether ``name`` is a valid environment variable name for Kubernetes."""
    return bool(_ENV_NAME.match(name))


def expand(text: str, variables: Mapping[str, str]) -> str:
    """Kubernetes ``$(VAR)`` expansion: known names are replaced, ``$$`` is ``$``, and
    anything else (unknown names, ``$(`` without ``)``, a lone ``$``) stays as written."""
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        char = text[i]
        if char != "$" or i + 1 == n:
            out.append(char)
            i += 1
            continue
        nxt = text[i + 1]
        if nxt == "$":
            out.append("$")
            i += 2
        elif nxt == "(":
            close = text.find(")", i + 2)
            if close < 0:
                out.append("$(")
                i += 2
            else:
                name = text[i + 2 : close]
                out.append(variables.get(name, f"$({name})"))
                i = close + 1
        else:
            out.append("$" + nxt)
            i += 2
    return "".join(out)


def field_value(pod: Mapping[str, Any], field_path: str, *, node_ip: str, pod_ip: str) -> str:
    """The downward API value of ``field_path`` (``metadata.name``, ``status.podIP``, ...).

    Whole ``metadata.labels`` / ``metadata.annotations`` are formatted as sorted
    ``key="value"`` lines, as in downward API volumes. Raises ``ValueError`` for paths
    the downward API does not support."""
    meta = pod.get("metadata") or {}
    spec = pod.get("spec") or {}
    match = _SUBSCRIPTED.match(field_path)
    if match:
        mapping = meta.get(match[1].split(".")[1]) or {}
        return str(mapping.get(match[2], ""))
    simple: dict[str, Callable[[], str]] = {
        "metadata.name": lambda: str(meta.get("name", "")),
        "metadata.namespace": lambda: str(meta.get("namespace", "")),
        "metadata.uid": lambda: str(meta.get("uid", "")),
        "metadata.labels": lambda: format_map(meta.get("labels") or {}),
        "metadata.annotations": lambda: format_map(meta.get("annotations") or {}),
        "spec.nodeName": lambda: str(spec.get("nodeName", "")),
        "spec.serviceAccountName": lambda: str(spec.get("serviceAccountName", "")),
        "status.hostIP": lambda: node_ip,
        "status.hostIPs": lambda: node_ip,
        "status.podIP": lambda: pod_ip,
        "status.podIPs": lambda: pod_ip,
    }
    if field_path not in simple:
        raise ValueError(f"unsupported fieldPath: {field_path}")
    return simple[field_path]()


def format_map(mapping: Mapping[str, Any]) -> str:
    """``key="value"`` lines in key order, values quoted like Go's ``%q``."""
    return "\n".join(f"{key}={_go_quote(str(mapping[key]))}" for key in sorted(mapping))


def _go_quote(value: str) -> str:
    out = ['"']
    for char in value:
        if char in '"\\':
            out.append("\\" + char)
        elif char in "\n\t\r":
            out.append({"\n": "\\n", "\t": "\\t", "\r": "\\r"}[char])
        elif char.isprintable():
            out.append(char)
        elif ord(char) < 0x10000:
            out.append(f"\\x{ord(char):02x}" if ord(char) < 0x80 else f"\\u{ord(char):04x}")
        else:
            out.append(f"\\U{ord(char):08x}")
    out.append('"')
    return "".join(out)


def _find_container(pod: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    spec = pod.get("spec") or {}
    for key in ("containers", "initContainers"):
        for container in spec.get(key) or []:
            if container.get("name") == name:
                return container
    raise ValueError(f"container {name} not found in pod")


def resource_value(
    pod: Mapping[str, Any],
    container: Mapping[str, Any],
    ref: Mapping[str, Any],
    node_allocatable: Mapping[str, str] | None = None,
) -> str:
    """The value of a ``resourceFieldRef`` (``limits.cpu``, ``requests.memory``, ...).

    CPU is counted in millicores and divided by the divisor's millicores, everything
    else in whole units; the quotient is rounded up. Raises ``ValueError``."""
    if ref.get("containerName"):
        container = _find_container(pod, ref["containerName"])
    resource = str(ref.get("resource", ""))
    kind, _, name = resource.partition(".")
    supported = name in (*_DEFAULTED_LIMITS, "ephemeral-storage") or name.startswith("hugepages-")
    if kind not in ("limits", "requests") or not supported:
        raise ValueError(f"unsupported container resource : {resource}")
    resources = container.get("resources") or {}
    limits, requests = resources.get("limits") or {}, resources.get("requests") or {}
    if kind == "limits":
        raw = limits.get(name)
        if raw is None and name in _DEFAULTED_LIMITS:
            raw = (node_allocatable or {}).get(name)
    else:
        raw = requests.get(name, limits.get(name))
    try:
        amount = parse_quantity(raw if raw is not None else 0)
        divisor = parse_quantity(ref.get("divisor") or 1)
    except QuantityError as err:
        raise ValueError(str(err)) from err
    if name == "cpu":
        amount, divisor = math.ceil(amount * 1000), math.ceil(divisor * 1000)
    else:
        amount, divisor = math.ceil(amount), math.ceil(divisor)
    if divisor <= 0:
        raise ValueError(f"invalid divisor for {resource}: {ref.get('divisor')}")
    return str(-(-amount // divisor))  # integer ceiling


def _b64(value: str, what: str) -> bytes:
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError) as err:
        raise ValueError(f"{what} is not valid base64") from err


def configmap_bytes(configmap: Mapping[str, Any]) -> dict[str, bytes]:
    """All of a ConfigMap's keys as bytes: ``data`` (UTF-8) and ``binaryData`` (base64)."""
    out = {key: str(value).encode() for key, value in (configmap.get("data") or {}).items()}
    for key, value in (configmap.get("binaryData") or {}).items():
        out[key] = _b64(value, f"binaryData[{key}]")
    return out


def secret_bytes(secret: Mapping[str, Any]) -> dict[str, bytes]:
    """A Secret's keys as bytes: ``data`` is base64; ``stringData`` (if a store kept it)
    wins over ``data``, as the API server merges it."""
    out = {key: _b64(value, f"data[{key}]") for key, value in (secret.get("data") or {}).items()}
    for key, value in (secret.get("stringData") or {}).items():
        out[key] = str(value).encode()
    return out


def _text(value: bytes) -> str:
    """Bytes as an environment string; undecodable bytes survive via surrogateescape."""
    return value.decode("utf-8", errors="surrogateescape")


class _Objects:
    """The ConfigMaps and Secrets one container refers to, each fetched once."""

    def __init__(self, lookups: Lookups, namespace: str) -> None:
        self.lookups, self.namespace = lookups, namespace
        self.cache: dict[tuple[str, str], dict[str, Any] | None] = {}

    def get(self, kind: str, name: str, optional: bool) -> dict[str, Any] | None:
        key = (kind, name)
        if key not in self.cache:
            fetch = self.lookups.configmap if kind == "configmap" else self.lookups.secret
            self.cache[key] = fetch(self.namespace, name)
        obj = self.cache[key]
        if obj is None and not optional:
            raise ContainerConfigError(f'{kind} "{name}" not found')
        return obj

    def data(self, kind: str, obj: Mapping[str, Any]) -> dict[str, str]:
        try:
            if kind == "configmap":
                return {k: str(v) for k, v in (obj.get("data") or {}).items()}
            return {k: _text(v) for k, v in secret_bytes(obj).items()}
        except ValueError as err:
            name = (obj.get("metadata") or {}).get("name", "")
            raise ContainerConfigError(f'{kind} "{name}": {err}') from err


def container_env(
    pod: Mapping[str, Any],
    container: Mapping[str, Any],
    *,
    lookups: Lookups,
    base_env: Mapping[str, str],
    node_ip: str,
    pod_ip: str,
    node_allocatable: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The environment of ``container`` in ``pod``; raises :class:`ContainerConfigError`."""
    namespace = str((pod.get("metadata") or {}).get("namespace") or "default")
    objects = _Objects(lookups, namespace)
    defined: dict[str, str] = {}  # what $(VAR) may refer to: envFrom and env so far

    for source in container.get("envFrom") or []:
        prefix = str(source.get("prefix") or "")
        for kind, field in (("configmap", "configMapRef"), ("secret", "secretRef")):
            ref = source.get(field)
            if ref is None:
                continue
            obj = objects.get(kind, str(ref.get("name", "")), bool(ref.get("optional")))
            if obj is None:
                continue
            for key, value in objects.data(kind, obj).items():
                if is_env_name(prefix + key):
                    defined[prefix + key] = value

    for var in container.get("env") or []:
        name = str(var["name"])
        value_from = var.get("valueFrom")
        if not value_from:
            defined[name] = expand(str(var.get("value") or ""), defined)
            continue
        value = _value_from(pod, container, value_from, objects, node_ip, pod_ip, node_allocatable)
        if value is not None:
            defined[name] = value

    result = dict(base_env)
    result.update(defined)
    return result


def _value_from(
    pod: Mapping[str, Any],
    container: Mapping[str, Any],
    value_from: Mapping[str, Any],
    objects: _Objects,
    node_ip: str,
    pod_ip: str,
    node_allocatable: Mapping[str, str] | None,
) -> str | None:
    """One ``valueFrom``; None when an optional reference is missing."""
    try:
        if "fieldRef" in value_from:
            path = str(value_from["fieldRef"].get("fieldPath", ""))
            return field_value(pod, path, node_ip=node_ip, pod_ip=pod_ip)
        if "resourceFieldRef" in value_from:
            return resource_value(pod, container, value_from["resourceFieldRef"], node_allocatable)
    except ValueError as err:
        raise ContainerConfigError(str(err)) from err
    for kind, field, label in (
        ("configmap", "configMapKeyRef", "ConfigMap"),
        ("secret", "secretKeyRef", "Secret"),
    ):
        ref = value_from.get(field)
        if ref is None:
            continue
        name, key, optional = str(ref.get("name", "")), str(ref["key"]), bool(ref.get("optional"))
        obj = objects.get(kind, name, optional)
        if obj is None:
            return None
        data = objects.data(kind, obj)
        if key in data:
            return data[key]
        if optional:
            return None
        raise ContainerConfigError(f"couldn't find key {key} in {label} {objects.namespace}/{name}")
    raise ContainerConfigError(f"unsupported valueFrom: {sorted(value_from)}")
