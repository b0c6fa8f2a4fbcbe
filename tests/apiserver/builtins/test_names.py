"""Name and label formats: exact wording, and property tests on generated names."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from lahar.apiserver.builtins import names

LABEL = st.from_regex(r"\A[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?\Z", fullmatch=True)
SUBDOMAIN = st.lists(LABEL, min_size=1, max_size=4).map(".".join).filter(lambda s: len(s) <= 253)
DNS1035 = st.from_regex(r"\A[a-z]([-a-z0-9]{0,61}[a-z0-9])?\Z", fullmatch=True)
BAD_CHARS = st.sampled_from(["_", "A", "Z", "/", "%", " ", "!", "é"])


@st.composite
def mutated(draw: st.DrawFn, base: st.SearchStrategy[str]) -> str:
    name = draw(base)
    how = draw(st.sampled_from(["insert", "lead", "trail", "long"]))
    if how == "insert":
        at = draw(st.integers(0, len(name)))
        return name[:at] + draw(BAD_CHARS) + name[at:]
    if how == "lead":
        return "-" + name
    if how == "trail":
        return name + "-"
    return name + "a" * 260


@settings(max_examples=200)
@given(LABEL)
def test_generated_dns_labels_are_valid(name: str) -> None:
    assert names.dns1123_label(name) == []
    assert names.dns1123_subdomain(name) == []
    assert names.path_segment(name) == []


@settings(max_examples=200)
@given(SUBDOMAIN)
def test_generated_subdomains_are_valid(name: str) -> None:
    assert names.dns1123_subdomain(name) == []


@settings(max_examples=200)
@given(DNS1035)
def test_generated_dns1035_labels_are_valid(name: str) -> None:
    assert names.dns1035_label(name) == []


@settings(max_examples=200)
@given(mutated(LABEL))
def test_mutated_labels_are_invalid(name: str) -> None:
    assert names.dns1123_label(name)


@settings(max_examples=200)
@given(mutated(SUBDOMAIN))
def test_mutated_subdomains_are_invalid(name: str) -> None:
    assert names.dns1123_subdomain(name)


@settings(max_examples=100)
@given(st.from_regex(r"\A[0-9][-a-z0-9]{0,20}\Z", fullmatch=True))
def test_dns1035_needs_a_leading_letter(name: str) -> None:
    assert names.dns1035_label(name)


@settings(max_examples=200)
@given(
    SUBDOMAIN, st.from_regex(r"\A[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?\Z", fullmatch=True)
)
def test_qualified_names_with_prefix_are_valid(prefix: str, name: str) -> None:
    assert names.qualified_name(name) == []
    assert names.qualified_name(f"{prefix}/{name}") == []
    assert names.label_value(name) == []


def test_subdomain_message_is_verbatim() -> None:
    assert names.dns1123_subdomain("Foo_bar") == [
        "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' "
        "or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex "
        r"used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
    ]


def test_label_messages() -> None:
    assert names.dns1123_label("a.b") == ["must not contain dots"]
    assert names.dns1123_label("x" * 64) == ["must be no more than 63 characters"]
    assert names.dns1123_label("-x") == [
        "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and "
        "must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex "
        "used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
    ]
    assert names.dns1035_label("1abc") == [
        "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
        "alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or "
        "'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
    ]


def test_qualified_name_messages() -> None:
    name_part = (
        "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and "
        "end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex "
        "used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
    )
    assert names.qualified_name("-bad") == [name_part]
    assert names.qualified_name("/x") == ["prefix part must be non-empty"]
    assert names.qualified_name("example.com/") == ["name part must be non-empty", name_part]
    assert names.qualified_name("a/b/c")[0].startswith("a valid label key must consist of")
    assert names.qualified_name("x" * 64) == ["name part must be no more than 63 characters"]
    assert names.qualified_name("Bad_Prefix/x")[0].startswith("prefix part a lowercase RFC 1123")


def test_label_values() -> None:
    assert names.label_value("") == []
    assert names.label_value("x" * 64) == ["must be no more than 63 characters"]
    assert names.label_value("a b")[0].startswith("a valid label must be an empty string")


def test_path_segments() -> None:
    assert names.path_segment(".") == ["may not be '.'"]
    assert names.path_segment("..") == ["may not be '..'"]
    assert names.path_segment("a/b%c") == ["may not contain '/'", "may not contain '%'"]


def test_other_formats() -> None:
    assert names.config_key("good.key_1") == []
    assert names.config_key("..x") == ["must not start with '..'"]
    assert names.config_key("a/b")[0].startswith("a valid config key must consist of")
    assert names.env_var_name("MY VAR=1") == [
        "a valid environment variable name must consist only of printable ASCII characters "
        "other than '='"
    ]
    assert names.env_var_name("1.weird-but ok") == []
    assert names.port_name("http") == []
    assert names.port_name("8080") == ["must contain at least one letter (a-z)"]
    assert names.port_number(0) == ["must be between 1 and 65535, inclusive"]
    assert names.ip_address("10.0.0.1") == []
    assert names.cidr("10.0.0.0/24") == []
    assert names.cidr("10.0.0.1")
