"""Token counting: the ``TokenCounter`` protocol and its implementations.

A counter is bound to one shape (per-message overhead differs per shape) and says who it is in
``name`` (``tiktoken:o200k_base``, ``anthropic-estimate(x1.20)``, ``anthropic-count_tokens`` …), so
reports can state which counter produced a number.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from reference_impl.transcript import Message, ToolSpec, Transcript

__all__ = ["TokenCount", "TokenCounter"]


@dataclass(frozen=True, slots=True)
class TokenCount:
    """Tokens of one request: per message (overhead included), tool schemas, fixed overhead."""

    total: int
    messages: tuple[int, ...]
    tools: int
    overhead: int
    counter: str


@runtime_checkable
class TokenCounter(Protocol):
    @property
    def name(self) -> str: ...

    def count_message(self, message: Message) -> int:
        """Tokens of one message including its per-message overhead (memoized by content hash)."""
        ...

    def count_tools(self, tools: Sequence[ToolSpec]) -> int:
        """Tokens of the tool schemas as the shape sends them (0 for no tools)."""
        ...

    def count(self, transcript: Transcript) -> TokenCount:
        """Tokens of a whole request: messages + tools + fixed reply overhead."""
        ...
