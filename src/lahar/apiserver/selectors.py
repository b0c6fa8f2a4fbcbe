"""Label and field selectors, parsed once per request and matched per object.

Label selectors use the full Kubernetes grammar (``=``, ``==``, ``!=``, ``in``,
``notin``, ``key``, ``!key``). Field selectors accept ``=``, ``==`` and ``!=`` on
the fields the real server indexes for each kind; any other field is a 400, as
on a real cluster, so a client that works here works there too.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from lahar.apiserver.errors import bad_request

Obj = dict[str, Any]


@dataclass(frozen=True)
class Requirement:
    key: str
    op: str  # "=", "!=", "in", "notin", "exists", "!"
    values: tuple[str, ...] = ()

    def matches(self, labels: dict[str, str]) -> bool:
        present = self.key in labels
        if self.op == "exists":
            return present
        if self.op == "!":
            return not present
        if self.op in ("=", "in"):
            return present and labels[self.key] in self.values
        # "!=" and "notin" match objects without the key too
        return not present or labels[self.key] not in self.values


_TOKEN = re.compile(r"\s*(!=|==|=|\(|\)|,|!|[^\s!=(),]+)")


def _tokens(text: str) -> list[str]:
    out: list[str] = []
    pos = 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m or m.end() == pos:
            if text[pos:].strip() == "":
                break
            raise bad_request(f"unable to parse requirement: {text!r}")
        out.append(m.group(1))
        pos = m.end()
    return out


def parse_label_selector(text: str | None) -> list[Requirement]:
    """Parse ``app=x,tier in (a,b),!legacy`` into requirements (all must match)."""
    if not text or not text.strip():
        return []
    toks = _tokens(text)
    reqs: list[Requirement] = []
    i = 0

    def fail() -> Exception:
        return bad_request(f"unable to parse requirement: found {text!r}, invalid selector")

    while i < len(toks):
        if toks[i] == "!":
            if i + 1 >= len(toks):
                raise fail()
            reqs.append(Requirement(toks[i + 1], "!"))
            i += 2
        else:
            key = toks[i]
            nxt = toks[i + 1] if i + 1 < len(toks) else ","
            if nxt == ",":
                reqs.append(Requirement(key, "exists"))
                i += 1
            elif nxt in ("=", "==", "!="):
                if i + 2 >= len(toks) or toks[i + 2] in (",", "(", ")"):
                    value = ""
                    i += 2
                else:
                    value = toks[i + 2]
                    i += 3
                reqs.append(Requirement(key, "!=" if nxt == "!=" else "=", (value,)))
            elif nxt in ("in", "notin"):
                if i + 2 >= len(toks) or toks[i + 2] != "(":
                    raise fail()
                j = i + 3
                values: list[str] = []
                while j < len(toks) and toks[j] != ")":
                    if toks[j] != ",":
                        values.append(toks[j])
                    j += 1
                if j >= len(toks):
                    raise fail()
                reqs.append(Requirement(key, nxt, tuple(values)))
                i = j + 1
            else:
                raise fail()
        if i < len(toks):
            if toks[i] != ",":
                raise fail()
            i += 1
    return reqs


def labels_match(reqs: list[Requirement], obj: Obj) -> bool:
    if not reqs:
        return True
    labels = (obj.get("metadata") or {}).get("labels") or {}
    return all(r.matches(labels) for r in reqs)


def _get(path: str) -> Callable[[Obj], str]:
    parts = path.split(".")

    def read(obj: Obj) -> str:
        cur: Any = obj
        for p in parts:
            if not isinstance(cur, dict):
                return ""
            cur = cur.get(p)
        if cur is None:
            return ""
        if isinstance(cur, bool):
            return "true" if cur else "false"
        return str(cur)

    return read


_COMMON = ("metadata.name", "metadata.namespace")
# Fields each kind's real registry can select on (beyond metadata.name/namespace).
_FIELDS: dict[str, tuple[str, ...]] = {
    "pods": (
        "spec.nodeName",
        "spec.schedulerName",
        "spec.restartPolicy",
        "spec.serviceAccountName",
        "spec.hostNetwork",
        "status.phase",
        "status.podIP",
        "status.nominatedNodeName",
    ),
    "events": (
        "involvedObject.kind",
        "involvedObject.namespace",
        "involvedObject.name",
        "involvedObject.uid",
        "involvedObject.apiVersion",
        "involvedObject.resourceVersion",
        "involvedObject.fieldPath",
        "reason",
        "reportingComponent",
        "source",
        "type",
    ),
    "nodes": ("spec.unschedulable",),
    "namespaces": ("status.phase",),
    "secrets": ("type",),
    "jobs.batch": ("status.successful",),
}


@dataclass(frozen=True)
class FieldRequirement:
    field: str
    negate: bool
    value: str
    read: Callable[[Obj], str]


def parse_field_selector(text: str | None, group_resource: str) -> list[FieldRequirement]:
    if not text or not text.strip():
        return []
    allowed = _COMMON + _FIELDS.get(group_resource, ())
    out: list[FieldRequirement] = []
    for term in text.split(","):
        term = term.strip()
        if not term:
            continue
        m = re.fullmatch(r"([^=!]+?)\s*(==|!=|=)\s*(.*)", term)
        if not m:
            raise bad_request(f"invalid selector: '{text}'; can't understand '{term}'")
        field, op, value = m.group(1).strip(), m.group(2), m.group(3).strip()
        if field not in allowed:
            raise bad_request(f"field label not supported: {field}")
        reader = _get("source.component" if field == "source" else field)
        out.append(FieldRequirement(field, op == "!=", value, reader))
    return out


def fields_match(reqs: list[FieldRequirement], obj: Obj) -> bool:
    return all((r.read(obj) == r.value) != r.negate for r in reqs)


def field_selector_names(reqs: list[FieldRequirement]) -> tuple[str | None, str | None]:
    """Exact ``metadata.namespace``/``metadata.name`` equalities, to narrow a scan."""
    ns = name = None
    for r in reqs:
        if not r.negate and r.field == "metadata.namespace":
            ns = r.value
        if not r.negate and r.field == "metadata.name":
            name = r.value
    return ns, name
