"""The emulator's answers to ``stream: true``: server-sent event streams in each provider's form.

A streamed answer is derived from the complete answer the emulator would give without streaming
(:func:`sse_events` takes that body), so accumulating the events gives back exactly that body;
the official SDKs' streaming helpers do that accumulation (``get_final_completion``,
``get_final_response``, ``get_final_message``) and the tests compare both ways.

* ``openai-chat``: ``chat.completion.chunk`` objects as ``data:`` lines, a role chunk first, text
  and tool-call argument deltas, the chunk with ``finish_reason``, a usage chunk (empty
  ``choices``) when ``stream_options.include_usage`` asks for it, then ``data: [DONE]``;
* ``openai-responses``: ``response.created``, ``response.in_progress``, per output item
  ``response.output_item.added`` ... ``response.output_item.done`` (text parts with
  ``response.output_text.delta``, calls with ``response.function_call_arguments.delta``), then
  ``response.completed``; every event carries its ``sequence_number``;
* ``anthropic-messages``: ``message_start``, per content block ``content_block_start``,
  ``content_block_delta`` (``text_delta``, ``input_json_delta``, ``thinking_delta`` and
  ``signature_delta``) and ``content_block_stop``, then ``message_delta`` (stop reason, output
  usage) and ``message_stop``.

Gemini (``streamGenerateContent``) and Bedrock (``converse-stream``, a binary event stream) have
separate streaming endpoints, which the emulator does not serve.

Text is cut into a few word-aligned pieces so a client sees several deltas, deterministically.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator, Mapping
from typing import Any, Final

__all__ = ["STREAMING_SHAPES", "sse_events", "wants_stream"]

STREAMING_SHAPES: Final = frozenset({"openai-chat", "openai-responses", "anthropic-messages"})
_PIECES: Final = 3


def wants_stream(shape: str, body: Mapping[str, Any]) -> bool:
    """Whether a generate request asks for an event stream the emulator serves (``stream: true``)."""
    return shape in STREAMING_SHAPES and body.get("stream") is True


def _pieces(text: str) -> list[str]:
    """``text`` in up to three word-aligned pieces that join back to it (at least one piece)."""
    words = text.split(" ")
    if len(words) < 2:
        return [text]
    size = -(-len(words) // _PIECES)
    groups = [words[i : i + size] for i in range(0, len(words), size)]
    joined = [" ".join(g) for g in groups]
    return [piece + (" " if i < len(joined) - 1 else "") for i, piece in enumerate(joined)]


def _frame(data: Mapping[str, Any] | str, event: str | None = None) -> bytes:
    payload = data if isinstance(data, str) else json.dumps(data, separators=(",", ":"))
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {payload}\n\n".encode()


def sse_events(
    shape: str, response: Mapping[str, Any], request: Mapping[str, Any]
) -> Iterator[bytes]:
    """The SSE frames of ``response`` (the non-streamed answer) for a ``request`` of ``shape``."""
    if shape == "openai-chat":
        yield from _chat_events(response, request)
    elif shape == "openai-responses":
        yield from _responses_events(response)
    elif shape == "anthropic-messages":
        yield from _anthropic_events(response)
    else:  # pragma: no cover - callers check wants_stream first
        raise ValueError(f"the emulator does not stream {shape}")


# ----------------------------------------------------------------------------- OpenAI Chat


def _chat_events(response: Mapping[str, Any], request: Mapping[str, Any]) -> Iterator[bytes]:
    head = {k: response[k] for k in ("id", "created", "model") if k in response}
    head["object"] = "chat.completion.chunk"

    def chunk(delta: Mapping[str, Any], finish: str | None = None) -> bytes:
        choice = {"index": 0, "delta": dict(delta), "finish_reason": finish, "logprobs": None}
        return _frame({**head, "choices": [choice]})

    choice = response["choices"][0]
    message = choice["message"]
    yield chunk({"role": "assistant", "content": ""})
    if isinstance(message.get("reasoning_content"), str):  # DeepSeek's reasoning field
        yield chunk({"reasoning_content": message["reasoning_content"]})
    if isinstance(message.get("content"), str) and message["content"]:
        for piece in _pieces(message["content"]):
            yield chunk({"content": piece})
    for index, call in enumerate(message.get("tool_calls") or []):
        function = call["function"]
        opening = {"index": index, "id": call["id"], "type": call["type"]}
        opening["function"] = {"name": function["name"], "arguments": ""}
        yield chunk({"tool_calls": [opening]})
        for piece in _json_pieces(function["arguments"]):
            yield chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
    yield chunk({}, choice.get("finish_reason") or "stop")
    options = request.get("stream_options")
    if isinstance(options, Mapping) and options.get("include_usage") is True:
        yield _frame({**head, "choices": [], "usage": response.get("usage")})
    yield _frame("[DONE]")


def _json_pieces(arguments: str) -> list[str]:
    """Tool arguments in two pieces (a client must concatenate before parsing)."""
    middle = len(arguments) // 2
    return [arguments[:middle], arguments[middle:]] if middle else [arguments]


# ------------------------------------------------------------------------- OpenAI Responses


def _responses_events(response: Mapping[str, Any]) -> Iterator[bytes]:
    sequence = 0

    def event(kind: str, **fields: Any) -> bytes:
        nonlocal sequence
        data = {"type": kind, "sequence_number": sequence, **fields}
        sequence += 1
        return _frame(data, kind)

    started = {**copy.deepcopy(dict(response)), "status": "in_progress", "output": []}
    started["usage"] = None
    yield event("response.created", response=started)
    yield event("response.in_progress", response=started)
    for index, item in enumerate(response.get("output") or []):
        yield from _responses_item(event, index, item)
    yield event("response.completed", response=dict(response))


def _responses_item(event: Any, index: int, item: Mapping[str, Any]) -> Iterator[bytes]:
    kind = item.get("type")
    if kind == "message":
        opened = {**item, "status": "in_progress", "content": []}
        yield event("response.output_item.added", output_index=index, item=opened)
        for part_index, part in enumerate(item.get("content") or []):
            where = {"item_id": item["id"], "output_index": index, "content_index": part_index}
            yield event("response.content_part.added", **where, part={**part, "text": ""})
            text = str(part.get("text", ""))
            for piece in _pieces(text):
                yield event("response.output_text.delta", **where, delta=piece, logprobs=[])
            yield event("response.output_text.done", **where, text=text, logprobs=[])
            yield event("response.content_part.done", **where, part=part)
    elif kind == "function_call":
        opened = {**item, "status": "in_progress", "arguments": ""}
        yield event("response.output_item.added", output_index=index, item=opened)
        where = {"item_id": item["id"], "output_index": index}
        for piece in _json_pieces(str(item.get("arguments", ""))):
            yield event("response.function_call_arguments.delta", **where, delta=piece)
        yield event(
            "response.function_call_arguments.done", **where, arguments=item.get("arguments", "")
        )
    else:  # reasoning (and anything else): the item arrives whole
        yield event("response.output_item.added", output_index=index, item=item)
    yield event("response.output_item.done", output_index=index, item=item)


# -------------------------------------------------------------------------- Anthropic Messages


def _anthropic_events(message: Mapping[str, Any]) -> Iterator[bytes]:
    usage = dict(message.get("usage") or {})
    started = {**copy.deepcopy(dict(message)), "content": [], "stop_reason": None}
    started["stop_sequence"] = None
    started["usage"] = {**usage, "output_tokens": 1}
    yield _frame({"type": "message_start", "message": started}, "message_start")
    for index, block in enumerate(message.get("content") or []):
        yield from _anthropic_block(index, block)
    delta = {
        "type": "message_delta",
        "delta": {"stop_reason": message.get("stop_reason"), "stop_sequence": None},
        "usage": {"output_tokens": usage.get("output_tokens", 0)},
    }
    yield _frame(delta, "message_delta")
    yield _frame({"type": "message_stop"}, "message_stop")


def _anthropic_block(index: int, block: Mapping[str, Any]) -> Iterator[bytes]:
    def delta(body: Mapping[str, Any]) -> bytes:
        return _frame(
            {"type": "content_block_delta", "index": index, "delta": dict(body)},
            "content_block_delta",
        )

    kind = block.get("type")
    if kind == "text":
        opened: dict[str, Any] = {"type": "text", "text": ""}
        pieces = [{"type": "text_delta", "text": p} for p in _pieces(str(block["text"]))]
    elif kind == "tool_use":
        opened = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
        arguments = json.dumps(block.get("input") or {}, separators=(",", ":"))
        pieces = [{"type": "input_json_delta", "partial_json": p} for p in _json_pieces(arguments)]
    elif kind == "thinking":
        opened = {"type": "thinking", "thinking": "", "signature": ""}
        pieces = [{"type": "thinking_delta", "thinking": p} for p in _pieces(block["thinking"])]
        pieces.append({"type": "signature_delta", "signature": block["signature"]})
    else:  # redacted_thinking and other blocks arrive whole in their start event
        opened, pieces = dict(block), []
    start = {"type": "content_block_start", "index": index, "content_block": opened}
    yield _frame(start, "content_block_start")
    for piece in pieces:
        yield delta(piece)
    yield _frame({"type": "content_block_stop", "index": index}, "content_block_stop")
