"""The two readings of a body that gives a key twice (``conformance.providers.repeated_keys``),
the one home of that logic for the proxy, the emulator, ``audit`` and ``validate``."""

from __future__ import annotations

from typing import Any

import pytest

from conformance.providers.repeated_keys import (
    FIRST_COPY_KEPT,
    LAST_COPY_KEPT,
    first_copies,
    judge_both_readings,
)
from conformance.providers.verdict import Verdict

ACCEPT = Verdict("accept", 200)


@pytest.mark.parametrize(
    ("text", "first"),
    [
        ('{"a": 1, "a": 2}', {"a": 1}),
        ('{"x": [{"c": 1, "b": 0, "c": 3}]}', {"x": [{"c": 1, "b": 0}]}),  # nested
        ('{"a": 1, "\\u0061": 2}', {"a": 1}),  # the same key, escaped
        ('{"a": NaN, "a": 1}', {"a": "NaN"}),  # read_non_finite: judged as a float
    ],
)
def test_the_first_copy_of_a_repeated_key_is_kept(text: str, first: dict[str, Any]) -> None:
    found = first_copies(text.encode(), read_non_finite=True)
    assert repr(found) == repr(first).replace("'NaN'", "nan")


@pytest.mark.parametrize(
    "text",
    ['{"a": 1, "b": 1}', "[1, 2]", '"\\ud800"', "{not json", '{"a": NaN, "a": 1}', "[" * 5000],
)
def test_no_repeat_or_no_json_has_no_first_copy_reading(text: str) -> None:
    # NaN without read_non_finite is no JSON; the usual reading names what is wrong
    assert first_copies(text) is None


def _judge(refused: set[str]) -> Any:
    def judge(body: dict[str, str]) -> Verdict:
        return Verdict("reject", 400, rule=body["m"]) if body["m"] in refused else ACCEPT

    return judge


@pytest.mark.parametrize(
    ("refused", "verdict", "reading"),
    [
        (set(), ACCEPT, None),
        ({"first"}, Verdict("reject", 400, rule="first"), FIRST_COPY_KEPT),
        ({"last"}, Verdict("reject", 400, rule="last"), LAST_COPY_KEPT),
        ({"first", "last"}, Verdict("reject", 400, rule="last"), LAST_COPY_KEPT),
    ],
)
def test_the_first_rejection_is_the_verdict_with_its_reading(
    refused: set[str], verdict: Verdict, reading: str | None
) -> None:
    found = judge_both_readings(_judge(refused), {"m": "last"}, {"m": "first"})
    assert found == (verdict, reading)


def test_a_body_without_a_repeat_is_judged_once() -> None:
    seen: list[object] = []

    def judge(body: object) -> Verdict:
        seen.append(body)
        return Verdict("reject", 400, rule="C2")

    assert judge_both_readings(judge, {"m": 1}, None) == (Verdict("reject", 400, rule="C2"), None)
    assert seen == [{"m": 1}]
