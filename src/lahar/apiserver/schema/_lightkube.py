"""Read the built-in Kubernetes types out of lightkube-models.

lightkube-models is generated from the Kubernetes OpenAPI document for one minor
release, so its dataclasses carry exactly the facts we need to rebuild that
document: field names (with their JSON spelling), which fields are required, the
field types as annotation strings, and each type's and field's description in the
docstring. This module turns one model module into plain records; it does not
build schemas (``builtin.py`` does) and it never imports ``typing`` hints by
evaluation, so unresolvable names (``FieldsV1``) cannot break it.
"""

from __future__ import annotations

import importlib
import re
from dataclasses import dataclass
from types import ModuleType, SimpleNamespace
from typing import Any

# lightkube module -> (Kubernetes definition-name prefix, API group).
_APIMACHINERY = {
    "meta_v1": ("io.k8s.apimachinery.pkg.apis.meta.v1", "meta.k8s.io"),
    "resource": ("io.k8s.apimachinery.pkg.api.resource", ""),
    "util_intstr": ("io.k8s.apimachinery.pkg.util.intstr", ""),
    "runtime": ("io.k8s.apimachinery.pkg.runtime", ""),
    "version": ("io.k8s.apimachinery.pkg.version", ""),
    "apiextensions_v1": (
        "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1",
        "apiextensions.k8s.io",
    ),
    "apiregistration_v1": (
        "io.k8s.kube-aggregator.pkg.apis.apiregistration.v1",
        "apiregistration.k8s.io",
    ),
}
# Groups whose name is not "<package>.k8s.io".
_GROUPS = {
    "core": "",
    "apps": "apps",
    "batch": "batch",
    "autoscaling": "autoscaling",
    "policy": "policy",
    "rbac": "rbac.authorization.k8s.io",
    "flowcontrol": "flowcontrol.apiserver.k8s.io",
    "apiserverinternal": "internal.apiserver.k8s.io",
}

_PARAM = re.compile(r"^\* \*\*(?P<name>[^*]+)\*\* ``(?P<type>[^`]*)`` - ?(?P<text>.*)$")


@dataclass(frozen=True)
class ModelField:
    json_name: str
    annotation: str  # e.g. "Optional[List[meta_v1.Condition]]"
    required: bool
    description: str


@dataclass(frozen=True)
class ModelType:
    module: str
    name: str
    description: str
    fields: tuple[ModelField, ...]
    gvk: tuple[str, str, str] | None  # (group, version, kind) for top-level kinds


def prefix_and_group(module: str) -> tuple[str, str]:
    """The definition-name prefix and API group of a lightkube model module."""
    if module in _APIMACHINERY:
        return _APIMACHINERY[module]
    package, _, version = module.rpartition("_")
    group = _GROUPS.get(package, f"{package}.k8s.io")
    return f"io.k8s.api.{package}.{version}", group


def module_version(module: str) -> str:
    return module.rpartition("_")[2] if "_" in module else ""


def load_module(module: str) -> ModuleType:
    return importlib.import_module(f"lightkube.models.{module}")


def _join(lines: list[str]) -> str:
    """Re-flow docstring lines: paragraphs joined by spaces, blank lines kept as breaks."""
    paragraphs: list[str] = []
    current: list[str] = []
    base = None
    for raw in lines:
        text = raw.strip()
        if not text:
            if current:
                paragraphs.append(" ".join(current))
                current, base = [], None
            continue
        indent = len(raw) - len(raw.lstrip())
        if base is None:
            base = indent
        if indent > base and current:
            # Deeper indentation marks a list inside the text: keep the line break.
            current[-1] += "\n" + " " * (indent - base) + text
        else:
            current.append(text)
    if current:
        paragraphs.append(" ".join(current))
    return "\n\n".join(paragraphs)


def parse_docstring(doc: str) -> tuple[str, dict[str, str]]:
    """Split a model docstring into the type's description and per-field descriptions."""
    lines = doc.expandtabs().splitlines()
    head: list[str] = []
    fields: dict[str, list[str]] = {}
    current: list[str] | None = None
    in_params = False
    for line in lines:
        stripped = line.strip()
        if stripped == "**parameters**":
            in_params = True
            continue
        if not in_params:
            head.append(line)
            continue
        match = _PARAM.match(stripped)
        if match:
            current = [" " * 8 + match.group("text")]
            fields[match.group("name").rstrip("_")] = current
        elif current is not None:
            current.append(line)
    # The first line of the docstring is not indented; align it with the rest.
    if head:
        head[0] = " " * 6 + head[0].strip()
    return _join(head), {name: _join(text) for name, text in fields.items()}


def _gvk(cls: type) -> tuple[str, str, str] | None:
    post_init = cls.__dict__.get("__post_init__")
    if post_init is None:
        return None
    probe: Any = SimpleNamespace()
    try:
        post_init(probe)
    except Exception:  # pragma: no cover - a model we do not understand
        return None
    api_version, kind = getattr(probe, "apiVersion", None), getattr(probe, "kind", None)
    if not isinstance(api_version, str) or not isinstance(kind, str):
        return None
    group, _, version = api_version.rpartition("/")
    return group, version, kind


def model_types(module: str) -> dict[str, ModelType | str]:
    """Every type a module defines: model classes as :class:`ModelType`, aliases as a
    string naming what they alias (``"Dict"``, ``"Any"``, ``"str"``, ``"datetime"``...)."""
    mod = load_module(module)
    out: dict[str, ModelType | str] = {}
    for name, value in vars(mod).items():
        if name.startswith("_"):
            continue
        if isinstance(value, type) and hasattr(value, "__struct_fields__"):
            if value.__module__ != mod.__name__:
                continue
            description, docs = parse_docstring(value.__doc__ or "")
            names: tuple[str, ...] = value.__struct_fields__
            json_names: tuple[str, ...] = value.__struct_encode_fields__
            first_optional = len(names) - len(value.__struct_defaults__)
            annotations = value.__annotations__
            fields = tuple(
                ModelField(
                    json_name=json_name,
                    annotation=str(annotations[name]),
                    required=index < first_optional,
                    description=docs.get(name.rstrip("_"), docs.get(json_name, "")),
                )
                for index, (name, json_name) in enumerate(zip(names, json_names, strict=True))
            )
            out[name] = ModelType(module, name, description, fields, _gvk(value))
    # Aliases: module-level names bound to typing constructs or builtins.
    source_aliases = {
        "Quantity": "Quantity",
        "IntOrString": "IntOrString",
        "Time": "datetime",
        "MicroTime": "datetime",
        "RawExtension": "Dict",
    }
    for name, value in vars(mod).items():
        if name in out or name.startswith("_") or isinstance(value, ModuleType):
            continue
        if name in source_aliases:
            out[name] = source_aliases[name]
        elif value is dict or getattr(value, "_name", None) == "Dict":
            out[name] = "Dict"
        elif repr(value) == "typing.Any":
            out[name] = "Any"
    return out
