"""Counts, articles and hints in what ctxconf prints: "1 shape", "5 shapes", "an openai-chat
request", "(did you mean 'openai-default'?)".

Every message that puts a number before a noun, or an article before a shape, role, part or
origin name, goes through here (the assembler's errors and the harness's reports alike), so no
message says "1 shapes", "a openai-chat" or "a assistant message".
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable

__all__ = ["did_you_mean", "plural", "with_article"]


def plural(n: int, word: str, many: str | None = None) -> str:
    """``n`` and ``word`` in the form that count takes: ``plural(1, "shape")`` is "1 shape",
    ``plural(1234, "case")`` is "1,234 cases"; ``many`` is the plural when it is not ``word + s``."""
    return f"{n:,} {word if n == 1 else (many or word + 's')}"


def with_article(name: str) -> str:
    """``name`` after "a" or "an", by its first letter: "an openai-chat", "an anthropic-messages",
    "a gemini", "a bedrock-converse", "an assistant", "an 'image'" (quotes skipped). Shape,
    dialect, role and part names are read letter by letter from the start, so the spelling decides
    (no such name starts with a silent or a "you" vowel).
    """
    first = name.lstrip("'\"`")[:1].lower()  # "an 'image' part": the word decides, not the quote
    return f"{'an' if first in 'aeio' else 'a'} {name}"


def did_you_mean(value: str, options: Iterable[str]) -> str:
    """`` (did you mean 'openai-default'?)`` after a name that is not among ``options`` but close
    to one (``difflib``'s closest, as ratio 0.6 or more), else the empty string."""
    close = difflib.get_close_matches(value, list(options), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""
