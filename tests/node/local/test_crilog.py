"""The CRI log line format: formatting, parsing, and splitting pipe output into lines."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lahar.node.local import crilog
from lahar.node.local.crilog import (
    MAX_LINE,
    LineSplitter,
    format_line,
    format_timestamp,
    parse_line,
    parse_timestamp,
)

TS = 1475713029.25  # 2016-10-06T00:17:09.25Z, exact in binary


def test_format_line_shape() -> None:
    line = format_line(TS, "stdout", b"hello world")
    assert line == b"2016-10-06T00:17:09.250000000Z stdout F hello world\n"
    assert format_line(0, "stderr", b"", partial=True) == (
        b"1970-01-01T00:00:00.000000000Z stderr P \n"
    )


def test_format_line_rejects_bad_input() -> None:
    with pytest.raises(ValueError):
        format_line(TS, "stdin", b"x")
    with pytest.raises(ValueError):
        format_line(TS, "stdout", b"two\nlines")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2016-10-06T00:17:09.669794202Z", 1475713029.669794202),
        ("2016-10-06T00:17:09Z", 1475713029.0),
        ("2016-10-06T00:17:09.5Z", 1475713029.5),  # containerd trims trailing zeros
        ("2016-10-06T02:17:09.25+02:00", 1475713029.25),
        ("2016-10-05T23:17:09-01:00", 1475713029.0),
        ("2000-02-29T00:00:00Z", 951782400.0),
        ("1969-12-31T23:59:59Z", -1.0),
    ],
)
def test_parse_timestamp(text: str, expected: float) -> None:
    assert parse_timestamp(text) == pytest.approx(expected, abs=1e-6)


@pytest.mark.parametrize(
    "text",
    ["", "2016-10-06", "2016-10-06 00:17:09Z", "2016-10-06T00:17:09", "2016-10-06T00:17:09.Z",
     "2016-13-06T00:17:09Z", "2016-10-06T25:17:09Z", "2016-10-06T00:17:09+0200",
     "\uff12016-10-06T00:17:09Z", "2016-10-06T00:17:09.1x"],
)  # fmt: skip
def test_parse_timestamp_rejects(text: str) -> None:
    assert parse_timestamp(text) is None


def test_format_timestamp_rounds_into_the_next_second() -> None:
    assert format_timestamp(1.9999999999) == "1970-01-01T00:00:02.000000000Z"


def test_parse_line_examples() -> None:
    assert parse_line(b"2016-10-06T00:17:09.669794202Z stdout P log content 1\n") == (
        pytest.approx(1475713029.669794202),
        "stdout",
        True,
        b"log content 1",
    )
    # no newline, extra tags after the first, content with spaces kept as is
    _, stream, partial, content = parse_line(b"2016-10-06T00:17:09Z stderr F:x  two  spaces ")  # type: ignore[misc]
    assert (stream, partial, content) == ("stderr", False, b" two  spaces ")
    # an empty line, with and without its separator
    assert parse_line(b"2016-10-06T00:17:09Z stdout F \n")[3] == b""  # type: ignore[index]
    assert parse_line(b"2016-10-06T00:17:09Z stdout F\n")[3] == b""  # type: ignore[index]
    # content bytes that are not UTF-8 survive
    assert parse_line(format_line(TS, "stdout", b"\xff\x00\xfe"))[3] == b"\xff\x00\xfe"  # type: ignore[index]


@pytest.mark.parametrize(
    "line",
    [b"", b"\n", b"garbage", b"2016-10-06T00:17:09Z stdout", b"2016-10-06T00:17:09Z stdin F x",
     b"2016-10-06T00:17:09Z stdout X x", b"yesterday stdout F x", b"\xff\xfe stdout F x",
     b"2016-10-06T00:17:09Z \xff F x", b"2016-10-06T00:17:09Z stdout :F x"],
)  # fmt: skip
def test_parse_line_rejects_malformed(line: bytes) -> None:
    assert parse_line(line) is None


@given(
    ts=st.floats(min_value=0, max_value=4e9, allow_nan=False),
    stream=st.sampled_from(["stdout", "stderr"]),
    content=st.binary(max_size=200).map(lambda b: b.replace(b"\n", b"")),
    partial=st.booleans(),
)
def test_format_parse_round_trip(ts: float, stream: str, content: bytes, partial: bool) -> None:
    parsed = parse_line(format_line(ts, stream, content, partial))
    assert parsed is not None
    assert parsed[0] == pytest.approx(ts, abs=1e-6)
    assert parsed[1:] == (stream, partial, content)


def _lines(data: bytes) -> list[tuple[str, bool, bytes]]:
    out = []
    for raw in data.splitlines(keepends=True):
        parsed = parse_line(raw)
        assert parsed is not None, raw
        out.append(parsed[1:])
    return out


def test_splitter_holds_partial_lines_across_chunks() -> None:
    s = LineSplitter("stdout", clock=lambda: TS)
    assert s.feed(b"hel") == b""
    assert s.pending == 3
    assert _lines(s.feed(b"lo\nwor")) == [("stdout", False, b"hello")]
    assert _lines(s.feed(b"ld\n\nlast")) == [("stdout", False, b"world"), ("stdout", False, b"")]
    assert _lines(s.close()) == [("stdout", False, b"last")]
    assert s.close() == b""
    assert s.pending == 0


def test_splitter_stamps_with_given_time_or_clock() -> None:
    s = LineSplitter("stderr", clock=lambda: 100.0)
    assert s.feed(b"a\n").startswith(b"1970-01-01T00:01:40.000000000Z stderr F a")
    assert s.feed(b"b\n", 200.5).startswith(b"1970-01-01T00:03:20.500000000Z stderr F b")


def test_splitter_cuts_long_lines_into_partials() -> None:
    s = LineSplitter("stdout", max_line=4, clock=lambda: TS)
    assert _lines(s.feed(b"abcdefghij\n")) == [
        ("stdout", True, b"abcd"),
        ("stdout", True, b"efgh"),
        ("stdout", False, b"ij"),
    ]
    # exactly max_line bytes is one full line, even when its newline comes later
    assert s.feed(b"wxyz") == b""
    assert _lines(s.feed(b"\n")) == [("stdout", False, b"wxyz")]
    # a piece is cut only once more than max_line bytes wait
    assert _lines(s.feed(b"12345")) == [("stdout", True, b"1234")]
    assert _lines(s.close()) == [("stdout", False, b"5")]


def test_splitter_default_max_line_is_16k() -> None:
    s = LineSplitter("stdout")
    lines = _lines(s.feed(b"x" * (MAX_LINE * 2 + 10) + b"\n"))
    assert [(p, len(c)) for _, p, c in lines] == [(True, MAX_LINE), (True, MAX_LINE), (False, 10)]


def test_splitter_rejects_bad_arguments() -> None:
    with pytest.raises(ValueError):
        LineSplitter("stdin")
    with pytest.raises(ValueError):
        LineSplitter("stdout", max_line=0)


@given(
    data=st.binary(max_size=400).map(lambda b: b.replace(b"\r", b"")),
    cuts=st.lists(st.integers(min_value=0, max_value=400), max_size=10),
    max_line=st.integers(min_value=1, max_value=20),
)
def test_splitter_round_trips_any_chunking(data: bytes, cuts: list[int], max_line: int) -> None:
    """Whatever the chunking, joining the pieces gives back the output, line by line,
    and no piece is longer than max_line."""
    s = LineSplitter("stdout", max_line=max_line, clock=lambda: TS)
    out = b""
    prev = 0
    for cut in [*sorted(c for c in cuts if c <= len(data)), len(data)]:
        out += s.feed(data[prev:cut])
        prev = cut
    out += s.close()
    text, current = b"", b""
    for _, partial, content in _lines(out):
        assert len(content) <= max_line
        current += content
        if not partial:
            text += current + b"\n"
            current = b""
    assert current == b""
    expected = data if not data or data.endswith(b"\n") else data + b"\n"
    assert text == expected


def test_module_imports_only_the_standard_library() -> None:
    """The shim imports crilog: it must pull in nothing from lahar or third parties."""
    code = (
        "import sys, importlib.util\n"
        f"spec = importlib.util.spec_from_file_location('crilog', {str(crilog.__file__)!r})\n"
        "m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)\n"
        "bad = [n for n in sys.modules if n.split('.')[0] in ('lahar', 'httpx2', 'yaml', 'numpy')]\n"
        "print(bad)\n"
    )
    out = subprocess.run([sys.executable, "-I", "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
    source = Path(crilog.__file__).read_text()
    imports = [
        line.split()[1]
        for line in source.splitlines()
        if line.startswith(("import ", "from ")) and not line.startswith("from __future__")
    ]
    assert all(name.split(".")[0] in sys.stdlib_module_names for name in imports), imports
