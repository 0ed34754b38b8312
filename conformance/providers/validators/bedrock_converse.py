# ruff: noqa: ARG001 - every detector has the registry signature (body, ctx) even when ctx is unused
"""AWS Bedrock Converse (``POST /model/{id}/converse``): rules B0-B14a and A3a.

Errors are ``{"message": ...}`` with ``ValidationException`` (recorded body); paths read
``messages.2.content``. Content blocks are single-key objects (``{"text": ...}``,
``{"toolUse": {...}}``, ``{"toolResult": {...}}``, ``{"reasoningContent": {...}}``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any, Final

from conformance.providers.validators._base import (
    ClaudeReasoning,
    Context,
    Finding,
    as_dict,
    as_list,
    cap_within_thinking_budget,
    detector,
    empty_lists,
    leading,
    messages_of,
    names_interleaved_thinking,
    objects,
    structure,
)
from conformance.providers.validators._types import (
    ANY,
    INTEGER,
    NUMBER,
    STRING,
    arr,
    obj,
)
from conformance.providers.validators._wording import (
    WrongType,
    aws_expected,
    dotted_path,
    type_name,
)

__all__ = ["BODY", "converse_structure"]

SHAPE: Final = "bedrock-converse"


_WRONG_TYPE: Final = WrongType("B0", dotted_path, aws_expected, type_name)
"""B0 for a field of a JSON type Bedrock refuses."""
_bad: Final = _WRONG_TYPE.bad


# The JSON types of the fields this validator knows (B0). A content block is a single-key object
# (``{"text": ...}``, ``{"toolUse": {...}}``); ``toolUse.input`` and ``json`` results are any JSON
# document. Unknown keys are never judged.
_SOURCE: Final = obj({"bytes": STRING, "s3Location": obj({"uri": STRING})})
_MEDIA: Final = obj({"format": STRING, "name": STRING, "source": _SOURCE})
_CACHE_POINT: Final = obj({"type": STRING})
RESULT_BLOCK: Final = obj({"text": STRING, "json": ANY, "image": _MEDIA, "document": _MEDIA})
BLOCK: Final = obj(
    {
        "text": STRING,
        "image": _MEDIA,
        "document": _MEDIA,
        "toolUse": obj(
            {"toolUseId": STRING, "name": STRING, "input": ANY},
            required=("toolUseId", "name", "input"),
        ),
        "toolResult": obj(
            {"toolUseId": STRING, "content": arr(RESULT_BLOCK), "status": STRING},
            required=("toolUseId", "content"),
        ),
        "reasoningContent": obj(
            {"reasoningText": obj({"text": STRING, "signature": STRING}), "redactedContent": STRING}
        ),
        "cachePoint": _CACHE_POINT,
    }
)
TOOL: Final = obj(
    {
        "toolSpec": obj(
            {
                "name": STRING,
                "description": STRING,
                "inputSchema": obj({"json": obj()}, required=("json",)),  # a JSON schema
            },
            required=("name", "inputSchema"),
        ),
        "cachePoint": _CACHE_POINT,
    }
)
BODY: Final = obj(
    {
        "messages": arr(obj({"role": STRING, "content": arr(BLOCK)})),
        "system": arr(obj({"text": STRING, "cachePoint": _CACHE_POINT})),
        "toolConfig": obj({"tools": arr(TOOL), "toolChoice": obj()}, required=("tools",)),
        "inferenceConfig": obj(
            {
                "maxTokens": INTEGER,
                "temperature": NUMBER,
                "topP": NUMBER,
                "stopSequences": arr(STRING),
            }
        ),
        "additionalModelRequestFields": ANY,
    }
)


@structure(SHAPE)
def converse_structure(body: Any, ctx: Context) -> Finding | None:
    """B0: ``messages`` is an array of ``{role, content: [block, ...]}`` objects."""
    if not isinstance(body, dict):
        return _bad("body", "an object", body)
    messages = body.get("messages")
    if not isinstance(messages, list):
        return _bad("messages", "a list", messages)
    for i, message in enumerate(messages):
        if not isinstance(message, dict):
            return _bad(f"messages.{i}", "a structure", message)
        role = message.get("role")
        if not isinstance(role, str) or role not in {"user", "assistant"}:
            return _bad(f"messages.{i}.role", "one of [user, assistant]", message.get("role"))
        content = message.get("content")
        if not isinstance(content, list):
            return _bad(f"messages.{i}.content", "a list", content)
        for j, block in enumerate(content):
            if not isinstance(block, dict):
                return _bad(f"messages.{i}.content.{j}", "a structure", block)
    return _WRONG_TYPE.first(body, BODY)


def _blocks(message: Mapping[str, Any]) -> list[dict[str, Any]]:
    return objects(message.get("content"))


def _block_findings(
    body: Mapping[str, Any], rule: str, refused: Callable[[dict[str, Any]], bool]
) -> Iterator[Finding]:
    """A finding of ``rule`` at ``messages.{index}.content.{block}`` for every refused block."""
    for i, message in enumerate(messages_of(body)):
        for j, block in enumerate(_blocks(message)):
            if refused(block):
                yield Finding(rule, (i, j), {"index": i, "block": j})


def _uses(message: Mapping[str, Any]) -> list[str]:
    return [str(as_dict(b["toolUse"]).get("toolUseId")) for b in _blocks(message) if "toolUse" in b]


def _results(message: Mapping[str, Any]) -> list[str]:
    return [
        str(as_dict(b["toolResult"]).get("toolUseId"))
        for b in _blocks(message)
        if "toolResult" in b
    ]


def _inline(message: Mapping[str, Any]) -> set[str]:
    """Ids of server-tool rounds inside one assistant turn: a toolUse answered by a toolResult in
    the same message (Nova's ``nova_code_interpreter``, recorded 200). They are not client tool
    calls: they need no result in the next turn (B2) and are not results of the previous (B1)."""
    if message.get("role") != "assistant":
        return set()
    return set(_uses(message)) & set(_results(message))


def _pending_uses(message: Mapping[str, Any]) -> list[str]:
    inline = _inline(message)
    return [u for u in _uses(message) if u not in inline]


@detector(SHAPE, "B1")
def too_many_results(body: Mapping[str, Any], ctx: Context) -> Iterator[Finding]:
    messages = messages_of(body)
    for i, message in enumerate(messages):
        inline = _inline(message)
        results = [r for r in _results(message) if r not in inline]
        if not results:
            continue
        previous = messages[i - 1] if i > 0 else None
        uses = (
            _pending_uses(previous)
            if previous is not None and previous.get("role") == "assistant"
            else []
        )
        if len(results) > len(uses) or not set(results) <= set(uses):
            yield Finding("B1", (i,), {"index": i})


@detector(SHAPE, "B2")
def results_in_next_message(body: Mapping[str, Any], ctx: Context) -> Iterator[Finding]:
    messages = messages_of(body)
    for i, message in enumerate(messages):
        uses = _pending_uses(message) if message.get("role") == "assistant" else []
        if not uses:
            continue
        answered = set(_results(messages[i + 1])) if i + 1 < len(messages) else set()
        missing = [u for u in uses if u not in answered]
        if missing:
            yield Finding("B2", (i + 1,), {"index": i + 1, "ids": ", ".join(missing)})


@detector(SHAPE, "B3")
def alternation(body: Mapping[str, Any], ctx: Context) -> Iterator[Finding]:
    messages = messages_of(body)
    for i in range(1, len(messages)):
        if messages[i].get("role") == messages[i - 1].get("role"):
            yield Finding("B3", (i,), {"index": i})
            return


@detector(SHAPE, "B5")
def tool_config_present(body: Mapping[str, Any], ctx: Context) -> Iterator[Finding]:
    has_tool_blocks = any(_uses(m) or _results(m) for m in messages_of(body))
    if has_tool_blocks and not body.get("toolConfig"):
        yield Finding("B5", (-1,), {})


@detector(SHAPE, "B6")
def text_mixed_with_tools(body: Mapping[str, Any], ctx: Context) -> Iterator[Finding]:
    for i, message in enumerate(messages_of(body)):
        has_text = any("text" in b for b in _blocks(message))
        kind = "use" if _uses(message) else "result" if _results(message) else None
        if has_text and kind:
            yield Finding("B6", (i,), {"index": i, "kind": kind})


@detector(SHAPE, "B7")
def empty_error_result(body: Mapping[str, Any], ctx: Context) -> Iterator[Finding]:
    def refused(block: dict[str, Any]) -> bool:
        result = as_dict(block.get("toolResult"))
        return result.get("status") == "error" and not as_list(result.get("content"))

    yield from _block_findings(body, "B7", refused)


@detector(SHAPE, "B8")
def empty_content(body: Mapping[str, Any], ctx: Context) -> Iterator[Finding]:
    yield from empty_lists(messages_of(body), "content", "B8")


@detector(SHAPE, "B14", "B14a")
def blank_text_blocks(body: Mapping[str, Any], ctx: Context) -> Iterator[Finding]:
    """B14: a message's text block with empty text (Converse's own check, every model); B14a: one
    of whitespace only, which Converse passes on and Claude refuses (only where B14a is active)."""
    for i, message in enumerate(messages_of(body)):
        for j, block in enumerate(_blocks(message)):
            text = block.get("text")
            if not isinstance(text, str):
                continue
            if text == "":
                yield Finding("B14", (i, j), {"index": i, "block": j}, rule="B14")
            elif not text.strip() and ctx.active("B14a"):
                yield Finding("B14a", (i, j), {"index": i, "block": j}, rule="B14a")


def _reasoning_enabled(body: Mapping[str, Any]) -> bool:
    extra = as_dict(body.get("additionalModelRequestFields"))
    thinking = as_dict(extra.get("thinking")) or as_dict(extra.get("reasoning_config"))
    # additionalModelRequestFields is free-form: its ``type`` may be any JSON value.
    return str(thinking.get("type")) in {"enabled", "adaptive"}


_REASONING: Final = ClaudeReasoning(
    enabled=_reasoning_enabled,
    blocks=_blocks,
    is_call=lambda b: "toolUse" in b,
    is_reasoning=lambda b: "reasoningContent" in b,
)


@detector(SHAPE, "B10")
def claude_thinking_must_lead(body: Mapping[str, Any], ctx: Context) -> Iterator[Finding]:
    found = _REASONING.not_leading(body)
    if found is not None:
        yield Finding("B10", (found[0],), {"index": found[0]})


@detector(SHAPE, "B15")
def claude_cap_under_thinking_budget(body: Mapping[str, Any], ctx: Context) -> Iterator[Finding]:
    """B15 (observed, relayed A27): reasoning enabled with ``inferenceConfig.maxTokens`` at or
    below its ``budget_tokens``; not judged when ``additionalModelRequestFields.anthropic_beta``
    names interleaved thinking, which lets the budget exceed the cap."""
    extra = as_dict(body.get("additionalModelRequestFields"))
    thinking = as_dict(extra.get("thinking")) or as_dict(extra.get("reasoning_config"))
    cap = as_dict(body.get("inferenceConfig")).get("maxTokens")
    if not cap_within_thinking_budget(cap, thinking):
        return
    if not names_interleaved_thinking(as_list(extra.get("anthropic_beta"))):
        yield Finding("B15", (-1,), {})


@detector(SHAPE, "A3")
def results_not_first(body: Mapping[str, Any], ctx: Context) -> Iterator[Finding]:
    """A3a: Claude on Bedrock wants the toolResult blocks at the start of the next message."""
    messages = messages_of(body)
    for i in range(1, len(messages)):
        uses = _uses(messages[i - 1]) if messages[i - 1].get("role") == "assistant" else []
        if not uses:
            continue
        blocks = _blocks(messages[i])
        first = leading(blocks, lambda block: "toolResult" in block)
        if any("toolResult" in b for b in blocks[first:]):
            yield Finding("A3", (i,), {"index": i - 1, "next": i, "count": len(uses)})


@detector(SHAPE, "B11")
def nova_document_in_result(body: Mapping[str, Any], ctx: Context) -> Iterator[Finding]:
    def refused(block: dict[str, Any]) -> bool:
        content = as_list(as_dict(block.get("toolResult")).get("content"))
        return any("document" in as_dict(part) for part in content)

    yield from _block_findings(body, "B11", refused)


@detector(SHAPE, "B12")
def claude_video_block(body: Mapping[str, Any], ctx: Context) -> Iterator[Finding]:
    """B12 (recorded): Claude on Converse has no video input, in a message or in a toolResult."""

    def refused(block: dict[str, Any]) -> bool:
        nested = objects(as_dict(block.get("toolResult")).get("content"))
        return "video" in block or any("video" in part for part in nested)

    yield from _block_findings(body, "B12", refused)


@detector(SHAPE, "B13")
def claude_document_without_bytes(body: Mapping[str, Any], ctx: Context) -> Iterator[Finding]:
    """B13 (recorded): a message's document block from an s3Location reaches Claude without a
    source type. Only the recorded form is judged: a document inside toolResult content, whose
    error path was never seen, is left alone."""

    def refused(block: dict[str, Any]) -> bool:
        source = as_dict(as_dict(block.get("document")).get("source"))
        return "s3Location" in source and "bytes" not in source

    yield from _block_findings(body, "B13", refused)
