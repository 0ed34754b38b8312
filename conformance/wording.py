"""Counts and articles in what ctxconf prints: "1 shape", "5 shapes", "an openai-chat request".

Every message that puts a number before a noun, or an article before a shape name, goes through
here, so no report says "1 shapes" or "a openai-chat".
"""

from __future__ import annotations

__all__ = ["plural", "with_article"]


def plural(n: int, word: str, many: str | None = None) -> str:
    """``n`` and ``word`` in the form that count takes: ``plural(1, "shape")`` is "1 shape",
    ``plural(1234, "case")`` is "1,234 cases"; ``many`` is the plural when it is not ``word + s``."""
    return f"{n:,} {word if n == 1 else (many or word + 's')}"


def with_article(name: str) -> str:
    """``name`` after "a" or "an", by its first letter: "an openai-chat", "an anthropic-messages",
    "a gemini", "a bedrock-converse". Shape, dialect and role names are read letter by letter
    from the start, so the spelling decides (no such name starts with a silent or a "you" vowel).
    """
    return f"{'an' if name[:1].lower() in 'aeio' else 'a'} {name}"
