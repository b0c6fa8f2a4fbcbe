"""Small helpers over object metadata shared by the server's write paths."""

from __future__ import annotations

import datetime as dt
import secrets
import string
from typing import Any

Obj = dict[str, Any]

_SUFFIX_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"  # the real server avoids vowels and 0/1/3


def now_rfc3339(clock: dt.datetime | None = None) -> str:
    t = clock or dt.datetime.now(dt.UTC)
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_time(text: str) -> dt.datetime:
    return dt.datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=dt.UTC)


def random_suffix(n: int = 5) -> str:
    return "".join(secrets.choice(_SUFFIX_ALPHABET) for _ in range(n))


def meta(obj: Obj) -> Obj:
    m = obj.get("metadata")
    if not isinstance(m, dict):
        m = {}
        obj["metadata"] = m
    return m


def spec_part(obj: Obj) -> Obj:
    """Everything that counts for ``generation``: all but metadata and status."""
    return {k: v for k, v in obj.items() if k not in ("metadata", "status", "apiVersion", "kind")}


def key_of(obj: Obj) -> tuple[str, str]:
    m = obj.get("metadata") or {}
    return m.get("namespace", "") or "", m.get("name", "")


def is_dns_label_char(c: str) -> bool:
    return c in string.ascii_lowercase or c in string.digits or c == "-"
