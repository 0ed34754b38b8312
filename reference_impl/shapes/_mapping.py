"""Mapping steps every wire shape shares, so each provider module keeps only what is its own.

* Summary text: a text block in the summary markers is a :class:`SummaryPart` where the role can
  hold one (system, developer, user); elsewhere it stays text.
* The error for something a shape cannot carry, at the neutral position ``messages[i].parts[j]``.
* Leading system/developer messages: the shapes with a top-level system field (Anthropic, Bedrock,
  Gemini) take the run at the start of the transcript.
* Tool-call arguments as a JSON value, for the shapes that send an object instead of text.
* Tool names offered twice: a parse error at the provider's own path (A7), never a later crash.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any, Final

from reference_impl.errors import ParseError, UnsupportedPartError
from reference_impl.shapes._wire import Wire
from reference_impl.transcript import (
    Message,
    Part,
    Role,
    SummaryPart,
    TextPart,
    ToolCallPart,
)

__all__ = [
    "SUMMARY_ROLES",
    "call_arguments",
    "leading_system_count",
    "text_part",
    "unique_tool_name",
    "unsupported_part",
    "with_summaries",
]

SUMMARY_ROLES: Final[frozenset[Role]] = frozenset({"system", "developer", "user"})
"""Roles whose text may be a summary; an assistant's or a tool's text never is."""


def text_part(text: str, role: Role) -> TextPart | SummaryPart:
    """A text block; a summary when it carries the summary markers and the role may hold one."""
    if role in SUMMARY_ROLES:
        summary = SummaryPart.from_wire_text(text)
        if summary is not None:
            return summary
    return TextPart(text)


def with_summaries(parts: Iterable[Part], role: Role) -> tuple[Part, ...]:
    """``parts`` with each text in the summary markers read as a summary (see :func:`text_part`)."""
    if role not in SUMMARY_ROLES:
        return tuple(parts)
    return tuple(
        (SummaryPart.from_wire_text(p.text) if isinstance(p, TextPart) else None) or p
        for p in parts
    )


def unsupported_part(shape: str, what: str, i: int, j: int | None = None) -> UnsupportedPartError:
    """The error for ``what`` of neutral message ``i`` (part ``j``) that ``shape`` cannot carry."""
    where = f"messages[{i}]" if j is None else f"messages[{i}].parts[{j}]"
    return UnsupportedPartError(f"{what} (shape {shape})", where=where)


def leading_system_count(messages: Sequence[Message]) -> int:
    """How many system/developer messages open the transcript (a top-level system field)."""
    lead = 0
    while lead < len(messages) and messages[lead].role in {"system", "developer"}:
        lead += 1
    return lead


def call_arguments(
    part: ToolCallPart, shape: str, i: int, j: int, *, field: str, object_only: bool
) -> Any:
    """The JSON value of a call's arguments (empty text is ``{}``) for a shape that sends the
    value itself in ``field``; an object only when ``object_only``."""
    try:
        value = json.loads(part.arguments) if part.arguments.strip() else {}
    except json.JSONDecodeError:
        expected = "an object" if object_only else "a JSON document"
        raise unsupported_part(
            shape,
            f"tool call {part.id!r} has arguments that are not JSON; {field} must be {expected}",
            i,
            j,
        ) from None
    except RecursionError:
        raise unsupported_part(
            shape,
            f"tool call {part.id!r} has arguments nested too deeply to decode into {field}",
            i,
            j,
        ) from None
    if object_only and not isinstance(value, dict):
        raise unsupported_part(
            shape,
            f"tool call {part.id!r} arguments are JSON {type(value).__name__}, "
            f"but {field} must be an object",
            i,
            j,
        )
    return value


def unique_tool_name(name: Wire, seen: set[str]) -> str:
    """The tool name at ``name``; a ``ParseError`` there if the request already offered it (A7)."""
    text = name.str_()
    if text in seen:
        raise ParseError(f"duplicate tool name {text!r}", where=name.path)
    seen.add(text)
    return text
