"""The contract every wire shape implements, and the registry of shapes.

A shape module exposes ``ADAPTER: ShapeAdapter``. ``parse_request`` turns a request body into a
transcript (raising ``ParseError`` with a JSON path), ``render_request`` does the reverse (raising
``UnsupportedPartError`` for what the shape cannot carry), and the response pair does the same for
one assistant reply (used by the emulator and by the SDK round trips).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from reference_impl.transcript import Message, ReasoningOrigin, Role, ShapeName, Transcript

__all__ = ["ResponseMeta", "ShapeAdapter", "ShapeCapabilities"]


@dataclass(frozen=True, slots=True)
class ShapeCapabilities:
    """What a shape can carry, as data (used by strategies, converters and checks)."""

    system_roles: frozenset[Role]
    """Roles that system text may take (``system``/``developer``); top-level for Anthropic etc."""
    system_in_messages: bool
    """False when system text is a top-level field (Anthropic ``system``, Gemini, Bedrock)."""
    reasoning_origins: frozenset[ReasoningOrigin]
    raw_arguments: bool
    """True when tool-call arguments travel as text (kept byte-exact); False for objects."""
    tool_result_attachments: frozenset[str] = field(default_factory=lambda: frozenset({"text"}))
    user_attachments: frozenset[str] = field(default_factory=lambda: frozenset({"text", "image"}))
    message_names: bool = False
    tool_result_errors: bool = True
    """True when a result can be flagged ``is_error`` on the wire."""


@dataclass(frozen=True, slots=True)
class ResponseMeta:
    """What a provider response carries besides the message (for the emulator and round trips)."""

    model: str
    response_id: str = "resp_emulated"
    input_tokens: int = 0
    output_tokens: int = 0
    stop_reason: str | None = None


@dataclass(frozen=True, slots=True)
class ShapeAdapter:
    """One wire shape: its capabilities and its four mapping functions (see the module docstring)."""

    name: ShapeName
    capabilities: ShapeCapabilities
    parse_request: Callable[[Mapping[str, Any]], Transcript]
    render_request: Callable[[Transcript], dict[str, Any]]
    parse_response: Callable[[Mapping[str, Any]], Message]
    render_response: Callable[[Message, ResponseMeta], dict[str, Any]]
