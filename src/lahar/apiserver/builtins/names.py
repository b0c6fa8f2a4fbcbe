"""String formats of the Kubernetes API: DNS names, label keys and values, keys.

Each checker returns the list of problems as the human-readable sentences the
real server prints (an empty list means valid), so callers wrap them into
``Invalid value`` causes at whatever field they are checking. The regular
expressions and the example lists in the messages are part of the user-visible
wording; kubectl users paste them into searches, so they are kept verbatim.
"""

from __future__ import annotations

import functools
import ipaddress
import re

DNS1123_LABEL_MAX = 63
DNS1123_SUBDOMAIN_MAX = 253
LABEL_VALUE_MAX = 63
LABEL_NAME_MAX = 63

_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_SUBDOMAIN_FMT = _LABEL_FMT + "(\\." + _LABEL_FMT + ")*"
_DNS1035_FMT = "[a-z]([-a-z0-9]*[a-z0-9])?"
_KEY_NAME_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_LABEL_VALUE_FMT = "(" + _KEY_NAME_FMT + ")?"
_CONFIG_KEY_FMT = "[-._a-zA-Z0-9]+"

_LABEL_RE = re.compile(f"^{_LABEL_FMT}$")
_SUBDOMAIN_RE = re.compile(f"^{_SUBDOMAIN_FMT}$")
_DNS1035_RE = re.compile(f"^{_DNS1035_FMT}$")
_KEY_NAME_RE = re.compile(f"^{_KEY_NAME_FMT}$")
_LABEL_VALUE_RE = re.compile(f"^{_LABEL_VALUE_FMT}$")
_CONFIG_KEY_RE = re.compile(f"^{_CONFIG_KEY_FMT}$")
_PORT_NAME_CHARS = re.compile("^[-a-z0-9]+$")
_PORT_NAME_LETTER = re.compile("[a-z]")

_SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, "
    "'-' or '.', and must start and end with an alphanumeric character"
)
_LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
    "and must start and end with an alphanumeric character"
)
_DNS1035_MSG = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', "
    "start with an alphabetic character, and end with an alphanumeric character"
)
_KEY_NAME_MSG = (
    "must consist of alphanumeric characters, '-', '_' or '.', "
    "and must start and end with an alphanumeric character"
)
_LABEL_VALUE_MSG = (
    "a valid label must be an empty string or consist of alphanumeric characters, "
    "'-', '_' or '.', and must start and end with an alphanumeric character"
)
_CONFIG_KEY_MSG = "a valid config key must consist of alphanumeric characters, '-', '_' or '.'"


def regex_error(message: str, fmt: str, *examples: str) -> str:
    """``<message> (e.g. 'a',  or 'b', regex used for validation is '<fmt>')``."""
    if not examples:
        return f"{message} (regex used for validation is '{fmt}')"
    shown = " or ".join(f"'{e}', " for e in examples)
    return f"{message} (e.g. {shown}regex used for validation is '{fmt}')"


def max_len_error(n: int) -> str:
    return f"must be no more than {n} characters"


def range_error(lo: int, hi: int) -> str:
    return f"must be between {lo} and {hi}, inclusive"


def dns1123_label(value: str) -> list[str]:
    errs = []
    if len(value) > DNS1123_LABEL_MAX:
        errs.append(max_len_error(DNS1123_LABEL_MAX))
    if not _LABEL_RE.match(value):
        if _SUBDOMAIN_RE.match(value):
            errs.append("must not contain dots")
        else:
            errs.append(regex_error(_LABEL_MSG, _LABEL_FMT, "my-name", "123-abc"))
    return errs


def dns1123_subdomain(value: str) -> list[str]:
    errs = []
    if len(value) > DNS1123_SUBDOMAIN_MAX:
        errs.append(max_len_error(DNS1123_SUBDOMAIN_MAX))
    if not _SUBDOMAIN_RE.match(value):
        errs.append(regex_error(_SUBDOMAIN_MSG, _SUBDOMAIN_FMT, "example.com"))
    return errs


def dns1035_label(value: str) -> list[str]:
    errs = []
    if len(value) > DNS1123_LABEL_MAX:
        errs.append(max_len_error(DNS1123_LABEL_MAX))
    if not _DNS1035_RE.match(value):
        errs.append(regex_error(_DNS1035_MSG, _DNS1035_FMT, "my-name", "abc-123"))
    return errs


def path_segment(value: str) -> list[str]:
    """Names that travel as one URL path segment: no ``.``/``..``, ``/`` or ``%``."""
    if value in (".", ".."):
        return [f"may not be '{value}'"]
    return [f"may not contain '{c}'" for c in ("/", "%") if c in value]


def qualified_name(value: str) -> list[str]:
    """A label key: optional DNS-subdomain prefix and ``/``, then a 63-char name."""
    return list(_qualified_name(value))


@functools.lru_cache(maxsize=4096)
def _qualified_name(value: str) -> tuple[str, ...]:
    """:func:`qualified_name`, remembered: the same few keys (condition types,
    annotation keys) come with every write."""
    return tuple(_check_qualified_name(value))


def _check_qualified_name(value: str) -> list[str]:
    errs: list[str] = []
    parts = value.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errs.append("prefix part must be non-empty")
        else:
            errs.extend("prefix part " + m for m in dns1123_subdomain(prefix))
    else:
        return [
            "a valid label key "
            + regex_error(_KEY_NAME_MSG, _KEY_NAME_FMT, "MyName", "my.name", "123-abc")
            + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        ]
    if not name:
        errs.append("name part must be non-empty")
    elif len(name) > LABEL_NAME_MAX:
        errs.append("name part " + max_len_error(LABEL_NAME_MAX))
    if not _KEY_NAME_RE.match(name):
        errs.append(
            "name part " + regex_error(_KEY_NAME_MSG, _KEY_NAME_FMT, "MyName", "my.name", "123-abc")
        )
    return errs


def label_value(value: str) -> list[str]:
    errs = []
    if len(value) > LABEL_VALUE_MAX:
        errs.append(max_len_error(LABEL_VALUE_MAX))
    if not _LABEL_VALUE_RE.match(value):
        errs.append(regex_error(_LABEL_VALUE_MSG, _LABEL_VALUE_FMT, "MyValue", "my_value", "12345"))
    return errs


def config_key(value: str) -> list[str]:
    """Keys of ConfigMap/Secret data (they become file names in volumes)."""
    errs = []
    if len(value) > DNS1123_SUBDOMAIN_MAX:
        errs.append(max_len_error(DNS1123_SUBDOMAIN_MAX))
    if not _CONFIG_KEY_RE.match(value):
        errs.append(
            regex_error(_CONFIG_KEY_MSG, _CONFIG_KEY_FMT, "key.name", "KEY_NAME", "key-name")
        )
    if value == ".":
        errs.append("must not be '.'")
    elif value == "..":
        errs.append("must not be '..'")
    elif value.startswith(".."):
        errs.append("must not start with '..'")
    return errs


def env_var_name(value: str) -> list[str]:
    """Relaxed rule (default since 1.32): printable ASCII except ``=``."""
    if not value:
        return ["environment variable name must be non-empty"]
    if any(ord(c) > 126 or ord(c) < 32 or c == "=" for c in value):
        return [
            "a valid environment variable name must consist only of printable ASCII "
            "characters other than '='"
        ]
    return []


def port_name(value: str) -> list[str]:
    """IANA service names, as used by container port names."""
    errs = []
    if len(value) > 15:
        errs.append(max_len_error(15))
    if not _PORT_NAME_CHARS.match(value):
        errs.append("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)")
    if not _PORT_NAME_LETTER.search(value):
        errs.append("must contain at least one letter (a-z)")
    if "--" in value:
        errs.append("must not contain consecutive hyphens")
    if value and (value[0] == "-" or value[-1] == "-"):
        errs.append("must not begin or end with a hyphen")
    return errs


def port_number(value: object) -> list[str]:
    if isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= 65535:
        return []
    return [range_error(1, 65535)]


# A dotted-quad IPv4 address as ``ipaddress`` accepts it (no leading zeros): every pod
# status write checks its pod IPs, and the module's parse was a fiftieth of the write.
_OCTET = "(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9][0-9]|[0-9])"
_IPV4 = re.compile(rf"{_OCTET}(?:\.{_OCTET}){{3}}").fullmatch


def ip_address(value: str) -> list[str]:
    if isinstance(value, str) and _IPV4(value):
        return []
    try:
        ipaddress.ip_address(value)
    except ValueError:
        return ["must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"]
    return []


def cidr(value: str) -> list[str]:
    try:
        ipaddress.ip_network(value, strict=False)
    except ValueError:
        return ["must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)"]
    if "/" not in value:
        return ["must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)"]
    return []
