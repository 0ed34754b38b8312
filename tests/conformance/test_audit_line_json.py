"""How ``audit_lines`` reads a log line: jiter's parser first (``read_unique``: pydantic-core's,
stopping at a key given twice), the standard library's reading (``_read_line``) for whatever it
refuses. The rows must be those of ``json.loads`` for every line: the fast parser gives
``json.loads``'s value whenever it gives one (checked here for any JSON text, so an upgrade of
jiter that reads a line differently fails this test), and the lines only ``json.loads`` takes,
a repeated key's among them, are judged through the slow path."""

from __future__ import annotations

import json
import sys
from typing import Any

from audit_support import GOOD, ORPHAN, URL
from hypothesis import given, settings
from hypothesis import strategies as st

from conformance.providers.repeated_keys import read_unique
from conformance.traffic.audit import _read_line, audit_lines

_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.integers(min_value=-(10**80), max_value=10**80)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(st.characters(exclude_categories=()))  # lone surrogates too: json.dumps escapes them
)
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner, max_size=4)
    ),
    max_leaves=25,
)


def _as_json(value: Any) -> str:
    """A value in a form that tells ``1`` from ``1.0`` and ``True``, and keeps key order."""
    return json.dumps(value, sort_keys=False)


@settings(max_examples=300, deadline=None)
@given(
    value=_VALUES,
    ascii_only=st.booleans(),
    spaced=st.booleans(),
    duplicate=st.booleans(),
)
def test_the_fast_parser_reads_what_json_loads_reads_or_refuses(
    value: Any, ascii_only: bool, spaced: bool, duplicate: bool
) -> None:
    text = json.dumps(value, ensure_ascii=ascii_only, separators=None if spaced else (",", ":"))
    repeated = duplicate and text.startswith("{") and text != "{}"
    if repeated:
        text = text[:-1] + ', "": 1, "": 2}'  # a repeated key: refused, read by the slow path
    expected = json.loads(text)
    try:
        fast = read_unique(text.encode("utf-8"))
    except ValueError:  # UnicodeEncodeError too: an unescaped lone surrogate (str lines only)
        return  # refused: the line is read by the standard library (test below)
    assert not repeated
    assert _as_json(fast) == _as_json(expected)


def test_refusals_of_the_fast_parser_are_what_the_slow_path_is_for() -> None:
    # Each line json.loads reads (or names the problem of) that the fast parser refuses; if one
    # of these is read by the fast parser one day, the property above still holds it to
    # json.loads's value.
    for line in (
        b'"\\ud800"',  # an escaped lone surrogate
        b"[" * 250 + b"]" * 250,  # nesting past pydantic-core's limit, within json's
        b"NaN",
        b"\xef\xbb\xbf{}",
        b"   ",
        b'{"a": 1, "a": 2}',  # a key given twice: the slow path judges both readings
    ):
        try:
            read_unique(line)
        except ValueError:
            continue
        raise AssertionError(f"{line[:20]!r} is read by the fast parser now")


def _line(body: dict[str, Any]) -> str:
    return json.dumps({"url": URL, "body": body})


def test_a_line_only_json_loads_reads_is_judged_not_lost() -> None:
    # An escaped lone surrogate in a message: the fast parser refuses it, json.loads reads it,
    # and the request is judged like any other (the same verdict as without it).
    odd = dict(GOOD, messages=[{"role": "user", "content": "\ud800"}])
    plain = dict(GOOD, messages=[{"role": "user", "content": "x"}])
    rows = list(audit_lines([_line(odd).encode(), _line(plain).encode()]))
    assert [row.outcome for row in rows] == ["accept", "accept"]
    assert rows[0].verdict == rows[1].verdict


def test_every_line_gets_the_row_of_the_slow_path() -> None:
    lines = [
        _line(GOOD).encode(),
        _line(ORPHAN).encode(),  # rejected (C2)
        b"",
        b"{not json",
        b"\xff",
        _line(GOOD).replace('"gpt-4o"', '"gpt-4o", "top_p": NaN').encode(),
        ("\ufeff" + _line(GOOD)).encode(),
        _line(dict(GOOD, messages=[{"role": "user", "content": "\ud800"}])).encode(),
    ]
    fast = list(audit_lines(lines, file="log.jsonl"))
    slow = [_read_line(line, "log.jsonl", index) for index, line in enumerate(lines)]
    assert fast == [row for row in slow if row is not None]
    assert [row.outcome for row in fast] == [
        "accept",
        "reject",
        "unreadable",
        "unreadable",
        "reject",  # NaN in the body: a body that is not JSON (C0)
        "unreadable",
        "accept",
    ]
    assert fast[4].verdict is not None
    assert fast[4].verdict.rule == "C0"


def test_a_str_line_holding_a_lone_surrogate_is_read_by_json_loads() -> None:
    # pydantic-core raises TypeError (not ValueError) for a str it cannot encode as UTF-8
    body = dict(GOOD, messages=[{"role": "user", "content": "\ud800"}])
    line = json.dumps({"url": URL, "body": body}, ensure_ascii=False)
    (row,) = audit_lines([line])
    assert row.outcome == "accept"
    assert row == _read_line(line, "<lines>", 0)


def test_under_a_lower_digit_limit_every_line_is_read_by_json_loads() -> None:
    # pydantic-core reads integers up to 4,300 digits whatever Python's limit; under a lower
    # limit json.loads refuses them, so the rows must be json.loads's
    line = _line(dict(GOOD, max_tokens=int("9" * 1000))).encode()
    assert next(iter(audit_lines([line]))).outcome == "accept"
    before = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(640)
    try:
        (row,) = audit_lines([line])
    finally:
        sys.set_int_max_str_digits(before)
    assert row.outcome == "unreadable"
    assert "an integer of 1,000 digits, more than the 640 Python reads" in str(row.message)
