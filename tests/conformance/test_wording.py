"""Counts and articles in printed text (observation 11: "1 shapes", "a openai-chat")."""

from __future__ import annotations

import pytest

from conformance.wording import plural, with_article
from reference_impl.shapes import SHAPE_NAMES


@pytest.mark.parametrize(
    ("n", "expected"),
    [(0, "0 shapes"), (1, "1 shape"), (2, "2 shapes"), (1234, "1,234 shapes")],
)
def test_plural_agrees_with_the_count(n: int, expected: str) -> None:
    assert plural(n, "shape") == expected


def test_plural_takes_an_irregular_form() -> None:
    assert plural(1, "body", "bodies") == "1 body"
    assert plural(3, "body", "bodies") == "3 bodies"


def test_every_shape_name_gets_the_article_it_is_read_with() -> None:
    # Written out by hand: how each name is read aloud.
    expected = {
        "openai-chat": "an openai-chat",
        "openai-responses": "an openai-responses",
        "anthropic-messages": "an anthropic-messages",
        "gemini": "a gemini",
        "bedrock-converse": "a bedrock-converse",
    }
    assert set(expected) == set(SHAPE_NAMES)
    assert {name: with_article(name) for name in SHAPE_NAMES} == expected


@pytest.mark.parametrize(
    ("role", "expected"),
    [("assistant", "an assistant"), ("user", "a user"), ("system", "a system"), ("tool", "a tool")],
)
def test_roles_too(role: str, expected: str) -> None:
    assert with_article(role) == expected
