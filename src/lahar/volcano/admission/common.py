"""Shared pieces of the admission rules: the denial type and Go-style message formatting.

Volcano's messages are built with Go's ``fmt`` and apimachinery helpers; users grep for
them, so lahar reproduces their shapes (``[a b]`` lists, ``field: Invalid value: "x": why``,
go-multierror's bullet list) with the small helpers here.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

Obj = dict[str, Any]


class AdmissionDenied(Exception):
    """A rule refused the request; ``webhook`` names the Volcano webhook that words it."""

    def __init__(self, webhook: str, message: str) -> None:
        super().__init__(message)
        self.webhook = webhook
        self.message = message

    def full_message(self) -> str:
        """What kube-apiserver reports for a webhook denial."""
        return f'admission webhook "{self.webhook}" denied the request: {self.message}'


def go_list(items: Iterable[Any]) -> str:
    """Go's ``%v`` of a slice: ``[a b c]``."""
    return "[" + " ".join(str(i) for i in items) + "]"


def go_value(value: Any) -> str:
    """How ``field.Invalid`` prints a value: strings quoted, numbers bare."""
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def field_invalid(path: str, value: Any, detail: str) -> str:
    return f"{path}: Invalid value: {go_value(value)}: {detail}"


def field_required(path: str) -> str:
    return f"{path}: Required value"


def aggregate(errors: list[str]) -> str:
    """apimachinery's ``ErrorList.ToAggregate().Error()``."""
    if len(errors) == 1:
        return errors[0]
    return "[" + ", ".join(errors) + "]"


def multierror(errors: list[str]) -> str:
    """hashicorp/go-multierror's ``Error()`` text."""
    if len(errors) == 1:
        return f"1 error occurred:\n\t* {errors[0]}\n\n"
    points = "\n\t".join(f"* {e}" for e in errors)
    return f"{len(errors)} errors occurred:\n\t{points}\n\n"


_DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_QUALIFIED_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_DNS1123_SUBDOMAIN = re.compile(
    r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
)


def dns1123_label_errors(value: str) -> list[str]:
    """apimachinery's ``IsDNS1123Label`` messages."""
    errs: list[str] = []
    if len(value) > 63:
        errs.append("must be no more than 63 characters")
    if not _DNS1123_LABEL.match(value):
        errs.append(
            "a lowercase RFC 1123 label must consist of lower case alphanumeric characters "
            "or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  "
            "or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
        )
    return errs


def qualified_name_errors(value: str) -> list[str]:
    """apimachinery's ``IsQualifiedName`` messages (optional ``prefix/`` then a name)."""
    errs: list[str] = []
    parts = value.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errs.append("prefix part must be non-empty")
        elif len(prefix) > 253 or not _DNS1123_SUBDOMAIN.match(prefix):
            errs.append("prefix part must be a valid DNS subdomain")
    else:
        return [
            "a qualified name must consist of alphanumeric characters, '-', '_' or '.', and "
            "must start and end with an alphanumeric character (e.g. 'MyName',  or "
            "'my.name',  or '123-abc', regex used for validation is "
            "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain "
            "prefix and '/' (e.g. 'example.com/MyName')"
        ]
    if not name:
        errs.append("name part must be non-empty")
    elif len(name) > 63:
        errs.append("name part must be no more than 63 characters")
    if name and not _QUALIFIED_NAME.match(name):
        errs.append(
            "name part must consist of alphanumeric characters, '-', '_' or '.', and must "
            "start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or "
            "'123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
        )
    return errs


def meta(obj: Obj) -> Obj:
    return obj.get("metadata") or {}


def spec(obj: Obj) -> Obj:
    return obj.get("spec") or {}


def not_found(resource: str, name: str) -> str:
    """The text of a NotFound error from a lister or client."""
    return f'{resource} "{name}" not found'
