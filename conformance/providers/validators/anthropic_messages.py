# ruff: noqa: ARG001 - every detector has the registry signature (body, ctx) even when ctx is unused
"""Anthropic Messages (``POST /v1/messages``, ``/v1/messages/count_tokens``): rules A1-A20, A22-A26.

Paths in texts use Anthropic's notation ``messages.3.content.0`` (provider-rules.md). Profiles that
no longer enforce strict alternation (A9 relaxed) merge consecutive same-role turns before the
pairing detectors, as the SDK docstring says the API does.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any, Final, NamedTuple

from conformance.providers.validators._base import (
    ClaudeReasoning,
    Context,
    Finding,
    as_dict,
    as_list,
    body_view,
    cap_within_thinking_budget,
    detector,
    leading,
    messages_of,
    names_interleaved_thinking,
    objects,
    structure,
)
from conformance.providers.validators._types import (
    BOOLEAN,
    INTEGER,
    NUMBER,
    OPT_STRING,
    STRING,
    Spec,
    arr,
    conforms,
    obj,
    typed,
)
from conformance.providers.validators._wording import WrongType, dotted_path, pydantic_expected

__all__ = ["BODY", "anthropic_structure"]

SHAPE: Final = "anthropic-messages"
TOOL_ID: Final = re.compile(r"^[a-zA-Z0-9_-]+$")  # A6
THINKING: Final = frozenset({"thinking", "redacted_thinking"})


def _shape_error(path: str) -> Finding:
    return Finding("A12", (), {"path": path})


# The JSON types of the fields this validator knows (A12a). Blocks are told apart by ``type``;
# unknown keys and block types are never judged. Optional knobs are not nullable (inferred: the
# API reference lists them as optional, not as nullable).
_CACHE: Final = obj({"type": STRING}, also=("null",))
_SOURCE: Final = obj({"type": STRING, "media_type": STRING, "data": STRING, "url": STRING})


def _block_spec(**variants: Spec) -> Spec:
    """A content block: ``type`` picks its fields; text and image blocks read alike everywhere."""
    text_and_image = {
        "text": obj({"text": STRING}, required=("text",)),
        "image": obj({"source": _SOURCE}, required=("source",)),
    }
    return typed({**text_and_image, **variants}, {"cache_control": _CACHE})


# Inside a tool result: text, images and documents only.
_NESTED: Final = _block_spec(document=obj({"source": _SOURCE}, required=("source",)))
BLOCK: Final = _block_spec(
    document=obj({"source": _SOURCE, "title": OPT_STRING}),
    tool_use=obj({"id": STRING, "name": STRING, "input": obj()}, required=("id", "name")),
    server_tool_use=obj({"id": STRING, "name": STRING, "input": obj()}),
    tool_result=obj(
        {"tool_use_id": STRING, "content": arr(_NESTED, also=("string",)), "is_error": BOOLEAN},
        required=("tool_use_id",),
    ),
    thinking=obj({"thinking": STRING, "signature": STRING}, required=("thinking",)),
    redacted_thinking=obj({"data": STRING}, required=("data",)),
)
MESSAGE: Final = obj({"role": STRING, "content": arr(BLOCK, also=("string",))})
TOOL: Final = obj(
    {
        "name": STRING,
        "type": STRING,
        "description": STRING,
        "input_schema": obj(),  # a JSON schema: its contents are free-form
        "cache_control": _CACHE,
    },
    required=("name",),
)
BODY: Final = obj(
    {
        "model": STRING,
        "max_tokens": INTEGER,
        "messages": arr(MESSAGE),
        "system": arr(BLOCK, also=("string",)),
        "tools": arr(TOOL),
        "tool_choice": obj(
            {"type": STRING, "name": STRING, "disable_parallel_tool_use": BOOLEAN},
            required=("type",),
        ),
        "temperature": NUMBER,
        "top_p": NUMBER,
        "top_k": INTEGER,
        "stop_sequences": arr(STRING),
        "stream": BOOLEAN,
        "metadata": obj({"user_id": OPT_STRING}),
        "thinking": obj({"type": STRING, "budget_tokens": INTEGER}),
    }
)


_WRONG_TYPE: Final = WrongType("A12a", dotted_path, pydantic_expected, None, rule="A12a")
"""A12a for a known field of a JSON type Anthropic refuses."""


_ROLES: Final = frozenset({"user", "assistant", "system"})


def _plainly_well_formed(body: Any) -> bool:
    """Whether neither A12 nor A12a can fire, told cheaply for the common body: its types conform
    (so every message is an object whose ``role`` and ``content``, where present, have their
    types, and every block is an object with a string ``type``), every message has a ``content``,
    and every role is one Anthropic takes. ``False`` says nothing: the full walk decides."""
    if type(body) is not dict or not conforms(body, BODY):
        return False
    messages = body.get("messages")
    if type(messages) is not list:
        return False
    for message in messages:
        if message.get("role") not in _ROLES or "content" not in message:
            return False
    return True


@structure(SHAPE)
def anthropic_structure(body: Any, ctx: Context) -> Finding | None:
    """A12: the body, every message and every block is an object (recorded); A12a: field types."""
    if _plainly_well_formed(body):
        return None
    if not isinstance(body, dict):
        return _shape_error("body")
    messages = body.get("messages")
    if not isinstance(messages, list):
        return _shape_error("messages")
    for i, message in enumerate(messages):
        if not isinstance(message, dict) or not isinstance(message.get("role"), str):
            return _shape_error(f"messages.{i}")
        if message["role"] not in {"user", "assistant", "system"}:
            return _shape_error(f"messages.{i}.role")
        content = message.get("content")
        if not isinstance(content, str | list):
            return _shape_error(f"messages.{i}")
        for j, block in enumerate(as_list(content)):
            if not isinstance(block, dict) or not isinstance(block.get("type"), str):
                return _shape_error(f"messages.{i}.content.{j}")
    return _WRONG_TYPE.first(body, BODY)


def _blocks(message: Mapping[str, Any]) -> list[dict[str, Any]]:
    content = message.get("content")
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return objects(content)


class _Turn(NamedTuple):
    """One turn after merging consecutive same-role messages: ``first`` is the index of its first
    message, ``tool_use_ids`` the ids of its ``tool_use`` blocks in order (read by A1, A2, A3).
    A named tuple: a body has a dozen turns, built faster as tuples than as frozen dataclasses."""

    role: str
    first: int
    blocks: tuple[_Located, ...]
    tool_use_ids: tuple[str, ...]


_Located = tuple[int, int, dict[str, Any]]
"""A block where it stands: (message index, block index, block)."""
_Message = tuple[int, str, tuple[_Located, ...], tuple[str, ...]]
"""A message's index, its role, its located blocks and the ids of its ``tool_use`` blocks."""


class _Blocks(NamedTuple):
    """What the detectors read of a body's messages, built in one pass: every message (a string
    content is one text block), and the blocks of the messages' block lists grouped by their
    ``type``, in order (a string content is no block there: A19 and A20 judge blocks only)."""

    messages: list[_Message]
    by_type: dict[str, list[_Located]]


def _read_blocks(body: Mapping[str, Any]) -> _Blocks:
    messages: list[_Message] = []
    by_type: dict[str, list[_Located]] = {}
    for i, message in enumerate(messages_of(body)):
        content = message.get("content")
        role = str(message.get("role"))
        if isinstance(content, str):  # as _blocks reads it: one text block
            text: _Located = (i, 0, {"type": "text", "text": content})
            messages.append((i, role, (text,), ()))
            continue
        located: list[_Located] = []
        uses: list[str] = []
        for block in content if isinstance(content, list) else ():
            if not isinstance(block, dict):  # as objects() reads a list: other items skipped
                continue
            place = (i, len(located), block)
            located.append(place)
            kind = block.get("type")
            if isinstance(kind, str):
                group = by_type.get(kind)
                if group is None:
                    by_type[kind] = [place]
                else:
                    group.append(place)
                if kind == "tool_use":
                    uses.append(str(block.get("id")))
        messages.append((i, role, tuple(located), tuple(uses)))
    return _Blocks(messages, by_type)


def _blocks_of(body: Mapping[str, Any]) -> _Blocks:
    return body_view("anthropic blocks", body, _read_blocks)


def _messages(body: Mapping[str, Any]) -> list[_Message]:
    """Every message's index, role, blocks and tool_use ids (a string content is one text block)."""
    return _blocks_of(body).messages


def _blocks_of_type(body: Mapping[str, Any], kind: str) -> list[_Located]:
    """The blocks of one ``type``, in order, where they stand."""
    return _blocks_of(body).by_type.get(kind, [])


def _turns(body: Mapping[str, Any], ctx: Context) -> list[_Turn]:
    if ctx.active("A9"):
        return body_view("anthropic turns", body, _separate_turns)
    # A9 relaxed: consecutive turns are combined (SDK docstring)
    return body_view("anthropic merged turns", body, _combined_turns)


def _separate_turns(body: Mapping[str, Any]) -> list[_Turn]:
    return _merged_turns(body, merge=False)


def _combined_turns(body: Mapping[str, Any]) -> list[_Turn]:
    return _merged_turns(body, merge=True)


def _merged_turns(body: Mapping[str, Any], *, merge: bool) -> list[_Turn]:
    turns: list[_Turn] = []
    for i, role, blocks, uses in _messages(body):
        if role == "system":
            continue
        if merge and turns and turns[-1].role == role:
            last = turns[-1]
            turns[-1] = _Turn(role, last.first, last.blocks + blocks, last.tool_use_ids + uses)
        else:
            turns.append(_Turn(role, i, blocks, uses))
    return turns


@detector(SHAPE, "A1")
def unanswered_tool_use(body: Mapping[str, Any], ctx: Context) -> Iterator[Finding]:
    turns = _turns(body, ctx)
    for n, turn in enumerate(turns):
        ids = turn.tool_use_ids if turn.role == "assistant" else ()
        if not ids:
            continue
        following = turns[n + 1] if n + 1 < len(turns) else None
        answered = set()
        if following is not None and following.role == "user":
            answered = {
                b.get("tool_use_id")
                for _, _, b in following.blocks
                if b.get("type") == "tool_result"
            }
        missing = [cid for cid in ids if cid not in answered]
        if missing:
            yield Finding("A1", (turn.first,), {"index": turn.first, "ids": ", ".join(missing)})


def _is_result(place: _Located) -> bool:
    return place[2].get("type") == "tool_result"


@detector(SHAPE, "A3")
def results_not_first(body: Mapping[str, Any], ctx: Context) -> Iterator[Finding]:
    """A3 (A3a on Bedrock): tool_result blocks first in the message that answers tool_use."""
    turns = _turns(body, ctx)
    for n in range(1, len(turns)):
        previous, turn = turns[n - 1], turns[n]
        ids = previous.tool_use_ids if previous.role == "assistant" else ()
        if not ids or turn.role != "user":
            continue
        first = leading(turn.blocks, _is_result)
        late = [
            str(b.get("tool_use_id"))
            for _, _, b in turn.blocks[first:]
            if b.get("type") == "tool_result"
        ]
        if late:
            yield Finding(
                "A3",
                (previous.first,),
                {
                    "index": previous.first,
                    "next": turn.first,
                    "ids": ", ".join(late),
                    "count": len(ids),
                },
            )


@detector(SHAPE, "A2")
def orphan_tool_result(body: Mapping[str, Any], ctx: Context) -> Iterator[Finding]:
    turns = _turns(body, ctx)
    for n, turn in enumerate(turns):
        if turn.role != "user":
            continue
        previous = turns[n - 1] if n > 0 else None
        known = set(previous.tool_use_ids) if previous and previous.role == "assistant" else set()
        for i, j, block in turn.blocks:
            if block.get("type") == "tool_result" and block.get("tool_use_id") not in known:
                yield Finding(
                    "A2", (i, j), {"index": i, "block": j, "ids": block.get("tool_use_id")}
                )
                break


@detector(SHAPE, "A5")
def duplicate_tool_use_ids(body: Mapping[str, Any], ctx: Context) -> Iterator[Finding]:
    seen: set[str] = set()
    for i, j, block in _blocks_of_type(body, "tool_use"):
        if block.get("id") in seen:
            yield Finding("A5", (i, j), {"index": i, "block": j, "id": block.get("id")})
        seen.add(str(block.get("id")))


_ID_FIELDS: Final[Mapping[str, str]] = {"tool_use": "id", "tool_result": "tool_use_id"}
"""The block types that carry a tool id (A6), and the key that holds it."""


@detector(SHAPE, "A6")
def tool_id_pattern(body: Mapping[str, Any], ctx: Context) -> Iterator[Finding]:
    found: list[Finding] = []
    for kind, field in _ID_FIELDS.items():
        for i, j, block in _blocks_of_type(body, kind):
            value = block.get(field)
            if isinstance(value, str) and not TOOL_ID.match(value):
                found.append(
                    Finding("A6", (i, j), {"index": i, "block": j, "field": field, "id": value})
                )
    found.sort(key=lambda finding: finding.position)  # in the order of the body
    yield from found


@detector(SHAPE, "A7")
def duplicate_tool_names(body: Mapping[str, Any], ctx: Context) -> Iterator[Finding]:
    names = [as_dict(tool).get("name") for tool in as_list(body.get("tools"))]
    if len(names) != len(set(names)):
        yield Finding("A7", (-1,), {})


@detector(f"{SHAPE},bedrock-converse", "A8")
def first_message_user(body: Mapping[str, Any], ctx: Context) -> Iterator[Finding]:
    """A8, and Bedrock Converse's B4 (``detector: A8``): the first message is a user message."""
    messages = messages_of(body)
    if messages and messages[0].get("role") != "user":
        yield Finding("A8", (-1,), {})


@detector(SHAPE, "A9")
def strict_alternation(body: Mapping[str, Any], ctx: Context) -> Iterator[Finding]:
    messages = messages_of(body)
    for i in range(1, len(messages)):
        role = messages[i].get("role")
        if role == messages[i - 1].get("role"):
            yield Finding("A9", (-1, i), {"index": i, "role": role})
            return


@detector(SHAPE, "A10")
def system_in_messages(body: Mapping[str, Any], ctx: Context) -> Iterator[Finding]:
    """A10; on Opus 4.8 (A10a) a system message right after a user turn is allowed."""
    allow_mid = bool(ctx.settings.get("mid_conversation_system"))
    messages = messages_of(body)
    for i, message in enumerate(messages):
        if message.get("role") != "system":
            continue
        if allow_mid and i > 0 and messages[i - 1].get("role") == "user":
            continue
        yield Finding("A10", (-1, i), {"index": i}, rule="A10")


@detector(SHAPE, "A11")
def empty_content(body: Mapping[str, Any], ctx: Context) -> Iterator[Finding]:
    messages = messages_of(body)
    for i, message in enumerate(messages):
        final_assistant = i == len(messages) - 1 and message.get("role") == "assistant"
        if message.get("content") in ("", []) and not final_assistant:
            yield Finding("A11", (i,), {"index": i})


@detector(SHAPE, "A19", "A20")
def blank_text_blocks(body: Mapping[str, Any], ctx: Context) -> Iterator[Finding]:
    """A19: a text block with empty text; A20: a text block of whitespace only (observed, each
    with its own message and no index in it)."""
    for i, j, block in _blocks_of_type(body, "text"):  # a bare string content (A11) is no block
        text = block.get("text")
        if not isinstance(text, str):
            continue
        if text == "":
            yield Finding("A19", (i, j), {"index": i, "block": j}, rule="A19")
        elif not text.strip():
            yield Finding("A20", (i, j), {"index": i, "block": j}, rule="A20")


@detector(SHAPE, "A26")
def max_tokens_missing(body: Mapping[str, Any], ctx: Context) -> Iterator[Finding]:
    """A26: a Messages request without ``max_tokens`` (the count endpoint is judged by the
    structure rules alone, so its bodies never meet this detector)."""
    if "max_tokens" not in body:
        yield Finding("A26", (-1,), {})


@detector(SHAPE, "A27")
def max_tokens_under_thinking_budget(body: Mapping[str, Any], ctx: Context) -> Iterator[Finding]:
    """A27 (observed): with ``thinking`` enabled, ``max_tokens`` at or below its
    ``budget_tokens``; not judged when the request turns on interleaved thinking, which lets the
    budget exceed the cap: in its ``anthropic-beta`` header (``ctx.betas``), or, through Bedrock
    InvokeModel only, in the body's ``anthropic_beta`` (a first-party body has no such field).
    Nor when the request's headers are not known (``ctx.betas`` None) and it did not go through
    Bedrock, which reads no header beta."""
    if not cap_within_thinking_budget(body.get("max_tokens"), as_dict(body.get("thinking"))):
        return
    if ctx.dialect == "bedrock":
        betas = as_list(body.get("anthropic_beta"))
    elif ctx.betas is None:
        return
    else:
        betas = list(ctx.betas)
    if not names_interleaved_thinking(betas):
        yield Finding("A27", (-1,), {})


@detector(SHAPE, "A22")
def no_messages(body: Mapping[str, Any], ctx: Context) -> Iterator[Finding]:
    """A22: an empty ``messages`` list."""
    if body.get("messages") == []:
        yield Finding("A22", (-1,), {})


@detector(SHAPE, "A23")
def url_image_source(body: Mapping[str, Any], ctx: Context) -> Iterator[Finding]:
    """A23 (recorded, Bedrock InvokeModel): a message's image block with a URL source. Only
    message-level blocks are judged: an image inside tool_result content was never recorded."""
    for i, j, block in _blocks_of_type(body, "image"):
        if as_dict(block.get("source")).get("type") == "url":
            yield Finding("A23", (i, j), {"index": i, "block": j})


@detector(SHAPE, "A24")
def effort_level(body: Mapping[str, Any], ctx: Context) -> Iterator[Finding]:
    """A24 (recorded on claude-opus-4-6): ``output_config.effort`` outside the profile's
    ``effort_levels``; the provider lists the supported levels alphabetically (recorded)."""
    levels = [str(level) for level in as_list(ctx.settings.get("effort_levels"))]
    effort = as_dict(body.get("output_config")).get("effort")
    if levels and isinstance(effort, str) and effort not in levels:
        yield Finding("A24", (-1,), {"level": effort, "levels": ", ".join(sorted(levels))})


@detector(SHAPE, "A25")
def tool_type_offered(body: Mapping[str, Any], ctx: Context) -> Iterator[Finding]:
    """A25 (recorded, Claude through Bedrock): a tool ``type`` outside the profile's
    ``tool_types``, listed as recorded; a tool without ``type`` is a custom tool. A body with
    ``anthropic_beta`` is not judged: betas add tool types (computer use) to the recorded list."""
    if as_list(body.get("anthropic_beta")):
        return
    tags = [str(tag) for tag in as_list(ctx.settings.get("tool_types"))]
    for i, tool in enumerate(as_list(body.get("tools"))):
        tag = as_dict(tool).get("type")
        if tags and isinstance(tag, str) and tag not in tags:
            listed = ", ".join(f"'{t}'" for t in tags)
            yield Finding("A25", (-1, i), {"index": i, "tag": tag, "tags": listed})


def _thinking_enabled(body: Mapping[str, Any]) -> bool:
    return as_dict(body.get("thinking")).get("type") in {"enabled", "adaptive"}


_REASONING: Final = ClaudeReasoning(
    enabled=_thinking_enabled,
    blocks=_blocks,
    is_call=lambda b: b.get("type") == "tool_use",
    is_reasoning=lambda b: b.get("type") in THINKING,
)


@detector(SHAPE, "A13")
def thinking_must_lead(body: Mapping[str, Any], ctx: Context) -> Iterator[Finding]:
    found = _REASONING.not_leading(body)
    if found is not None:
        last, first = found
        yield Finding("A13", (last,), {"index": last, "found": first.get("type")})


@detector(SHAPE, "A14")
def thinking_while_disabled(body: Mapping[str, Any], ctx: Context) -> Iterator[Finding]:
    if _thinking_enabled(body):
        return
    messages = messages_of(body)
    if not messages or messages[-1].get("role") != "assistant":
        return
    last = len(messages) - 1
    for j, block in enumerate(_blocks(messages[-1])):
        if block.get("type") in THINKING:
            yield Finding("A14", (last, j), {"index": last, "block": j})
            return


def _marked(blocks: Any) -> int:
    """Blocks of a list that carry ``cache_control``, the blocks of their own ``content`` lists
    included (a tool result's, a search result's). What a block holds otherwise (a tool call's
    ``input``, a tool's ``input_schema``, an image's ``source``) is the caller's data, never a
    breakpoint, however its keys are named."""
    if not isinstance(blocks, list):
        return 0
    count = 0
    stack: list[list[Any]] = [blocks]  # a stack, not recursion: a body may nest deeply
    while stack:
        for block in stack.pop():
            if isinstance(block, dict):
                if block.get("cache_control") is not None:
                    count += 1
                inner = block.get("content")
                if isinstance(inner, list):
                    stack.append(inner)
    return count


@detector(SHAPE, "A17")
def too_many_cache_breakpoints(body: Mapping[str, Any], ctx: Context) -> Iterator[Finding]:
    # "A maximum of 4 blocks with cache_control": system blocks, tool definitions and content
    # blocks (string content is no block; a null cache_control is none). A top-level one
    # (automatic caching) "uses one of the 4 available breakpoint slots", and with 4 block
    # breakpoints the API returns a 400 (documented: prompt-caching docs, "Combining with
    # block-level caching", quoted in UKGovernmentBEIS/inspect_ai#4505).
    count = _marked(body.get("system")) + _marked(body.get("tools"))
    for _, _, blocks, _ in _messages(body):  # the messages' blocks, as _marked reads a list
        for _, _, block in blocks:
            if block.get("cache_control") is not None:
                count += 1
            inner = block.get("content")
            if isinstance(inner, list):
                count += _marked(inner)
    count += isinstance(body.get("cache_control"), Mapping)
    if count > 4:
        yield Finding("A17", (-1,), {"count": count})
