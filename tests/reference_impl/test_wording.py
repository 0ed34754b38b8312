"""Counts and articles in printed text (never "1 shapes" or "a openai-chat")."""

from __future__ import annotations

import pytest

from reference_impl.shapes import SHAPE_NAMES
from reference_impl.wording import plural, with_article


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


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("'image'", "an 'image'"),
        ("'tool_call'", "a 'tool_call'"),
        ("'reasoning'", "a 'reasoning'"),
        ("'openai-responses'", "an 'openai-responses'"),
    ],
)
def test_a_quoted_name_takes_the_article_of_its_word(name: str, expected: str) -> None:
    assert with_article(name) == expected


def test_the_assemblers_errors_read_with_the_right_article() -> None:
    """A parse error of the reference assembler itself (the reference_impl side)."""
    from reference_impl.errors import ShapeError
    from reference_impl.shapes import get_shape

    image = {"type": "image_url", "image_url": {"url": "https://example.org/a.png"}}
    body = {
        "model": "m",
        "messages": [{"role": "system", "content": [image]}, {"role": "user", "content": "x"}],
    }
    with pytest.raises(ShapeError) as info:
        get_shape("openai-chat").parse_request(body)
    assert "a system message cannot hold an 'image_url' content part" in str(info.value)
