"""Small helpers over object metadata shared by the server's write paths."""

from __future__ import annotations

import datetime as dt
import secrets
import string
import time
from typing import Any

Obj = dict[str, Any]

_SUFFIX_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"  # the real server avoids vowels and 0/1/3


def now_rfc3339(clock: dt.datetime | None = None) -> str:
    """``clock`` (default: now) in seconds-precision RFC 3339, as ``metav1.Time``.

    Every write stamps a time or two and they change once a second: the string of
    the current second is kept and reused (``datetime.now`` + ``strftime`` were 2% of
    the server's CPU)."""
    if clock is not None:
        return clock.strftime("%Y-%m-%dT%H:%M:%SZ")
    global _now_cache
    second = int(time.time())
    cached = _now_cache  # one read: another thread may replace the pair meanwhile
    if cached[0] == second:
        return cached[1]
    text = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(second))
    _now_cache = (second, text)
    return text


_now_cache: tuple[int, str] = (-1, "")


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
