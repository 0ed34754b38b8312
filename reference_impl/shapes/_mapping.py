"""Mapping steps every wire shape shares, so each provider module keeps only what is its own.

* Summary text: a text block in the summary markers is a :class:`SummaryPart` where the role can
  hold one (system, developer, user); elsewhere it stays text.
* The error for something a shape cannot carry, at the neutral position ``messages[i].parts[j]``.
* Leading system/developer messages: the shapes with a top-level system field (Anthropic, Bedrock,
  Gemini) take the run at the start of the transcript (``split_system``).
* A rendered response holds an assistant message (``require_assistant``).
* The reasoning tokens a response reports, shared evenly over its reasoning parts
  (``share_reasoning_tokens``).
* Tool-call arguments as a JSON value, for the shapes that send an object instead of text.
* Tool names offered twice: a parse error at the provider's own path (A7), never a later crash.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from typing import Any, Final

from reference_impl.documents import JsonNumberTooLongError, NonFiniteNumberError, loads_json
from reference_impl.errors import ParseError, UnsupportedPartError
from reference_impl.shapes._wire import Wire
from reference_impl.transcript import (
    Message,
    Part,
    ReasoningPart,
    Role,
    SummaryPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
)
from reference_impl.transcript.model import INSTRUCTION_ROLES, new_text_part

__all__ = [
    "SUMMARY_ROLES",
    "call_arguments",
    "leading_system_count",
    "require_assistant",
    "share_reasoning_tokens",
    "split_system",
    "text_of",
    "text_part",
    "turn_message",
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
    return new_text_part(text)


def text_of(part: TextPart | SummaryPart) -> str:
    """The wire text of a text or summary part."""
    return part.wire_text() if isinstance(part, SummaryPart) else part.text


def with_summaries(parts: Iterable[Part], role: Role) -> tuple[Part, ...]:
    """``parts`` with each text in the summary markers read as a summary (see :func:`text_part`)."""
    if role not in SUMMARY_ROLES:
        return tuple(parts)
    return tuple(
        (SummaryPart.from_wire_text(p.text) if isinstance(p, TextPart) else None) or p
        for p in parts
    )


def turn_message(role: Role, parts: Sequence[Part]) -> Message:
    """The neutral message of one wire turn: a user turn holding tool results is a ``tool``
    message (wire order kept, so ``rings.validate`` sees text before results, B2/B6), and its
    summary text is read where the role may hold one."""
    if role == "user" and any(isinstance(p, ToolResultPart) for p in parts):
        role = "tool"
    return Message(role=role, parts=with_summaries(parts, role))


def unsupported_part(shape: str, what: str, i: int, j: int | None = None) -> UnsupportedPartError:
    """The error for ``what`` of neutral message ``i`` (part ``j``) that ``shape`` cannot carry."""
    where = f"messages[{i}]" if j is None else f"messages[{i}].parts[{j}]"
    return UnsupportedPartError(f"{what} (shape {shape})", where=where)


def leading_system_count(messages: Sequence[Message]) -> int:
    """How many system/developer messages open the transcript (a top-level system field)."""
    lead = 0
    while lead < len(messages) and messages[lead].role in INSTRUCTION_ROLES:
        lead += 1
    return lead


def split_system(
    messages: Sequence[Message],
    render: Callable[[Message, int], list[Any]],
    shape: str,
    refusal: str | None,
) -> tuple[list[Any], list[tuple[Message, list[Any]]]]:
    """``(the leading system run rendered as one list, each later message with its render)``, for
    a shape with a top-level system field; a later system/developer message raises ``refusal``
    (None: the shape carries it inside its messages)."""
    lead = leading_system_count(messages)
    system: list[Any] = []
    for i in range(lead):
        system.extend(render(messages[i], i))
    turns: list[tuple[Message, list[Any]]] = []
    for i in range(lead, len(messages)):
        message = messages[i]
        if refusal is not None and message.role in INSTRUCTION_ROLES:
            raise unsupported_part(shape, refusal, i)
        turns.append((message, render(message, i)))
    return system, turns


def require_assistant(message: Message, wording: str, where: str = "message") -> None:
    """An ``UnsupportedPartError`` (``"{wording}, not 'user'"``) unless ``message`` is the
    assistant's: a response carries one assistant reply."""
    if message.role != "assistant":
        raise UnsupportedPartError(f"{wording}, not {message.role!r}", where=where)


def share_reasoning_tokens(message: Message, indexes: Sequence[int], count: int) -> Message:
    """``message`` with ``count`` reasoning tokens shared evenly over its reasoning parts at
    ``indexes`` (``ReasoningPart.tokens``; the first ones take one more of the remainder each);
    ``message`` itself when ``indexes`` is empty."""
    if not indexes:
        return message
    share, extra = divmod(count, len(indexes))
    parts = list(message.parts)
    for n, i in enumerate(indexes):
        part = parts[i]
        assert isinstance(part, ReasoningPart)
        parts[i] = replace(part, tokens=share + (1 if n < extra else 0))
    return replace(message, parts=tuple(parts))


def call_arguments(
    part: ToolCallPart, shape: str, i: int, j: int, *, field: str, object_only: bool
) -> Any:
    """The JSON value of a call's arguments (empty text is ``{}``) for a shape that sends the
    value itself in ``field``; an object only when ``object_only``."""
    try:
        value = loads_json(part.arguments) if part.arguments.strip() else {}
    except json.JSONDecodeError as exc:
        expected = "an object" if object_only else "a JSON document"
        named = isinstance(exc, JsonNumberTooLongError | NonFiniteNumberError)
        problem = f" ({exc.msg}, at char {exc.pos})" if named else ""
        raise unsupported_part(
            shape,
            f"tool call {part.id!r} has arguments that are not JSON{problem}; "
            f"{field} must be {expected}",
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
