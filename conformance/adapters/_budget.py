"""The token counter the adapters hand to the trimmers they wrap.

A trimmer is judged on what it keeps, not on how well it counts, so every adapter counts with the
same reference counter the harness uses (tiktoken o200k_base with the Chat Completions overhead).
Adapters that exercise the library's own counting say so in their name (``..._approximate``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from reference_impl.shapes import get_shape
from reference_impl.tokens import TokenCounter, counter_for

__all__ = ["count_chat_messages", "reference_counter"]

_COUNTER: TokenCounter | None = None


def reference_counter() -> TokenCounter:
    """The counter the adapters' probes use (OpenAI Chat, gpt-4o), built once per process."""
    global _COUNTER  # noqa: PLW0603 - one memoized counter per process keeps repeated probes cheap
    if _COUNTER is None:
        _COUNTER = counter_for("openai-chat", "gpt-4o")
    return _COUNTER


def count_chat_messages(messages: Sequence[Mapping[str, Any]]) -> int:
    """Tokens of OpenAI Chat messages as the reference counter sees them (reply priming included)."""
    transcript = get_shape("openai-chat").parse_request({"messages": list(messages)})
    return reference_counter().count(transcript).total
