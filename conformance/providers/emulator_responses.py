"""What the emulator answers: scripted replies, deterministic ids, and the provider envelopes of
the emulator's own errors (a body that is not JSON, a path no provider serves).

A **script** decides the reply to a valid request. The default, :class:`DirectiveScript`, reads
directives in the last user text, so a scenario can ask for what it needs without code::

    [emulator: call get_weather x2]     two parallel calls of get_weather
    [emulator: call lookup]             one call
    [emulator: think]                   a reasoning/thinking artifact before the reply
    [emulator: say Hello there]         this text instead of the default one

Ids are derived from a seed (the digest of the request skeleton), so the same request structure
always gets the same answer, byte for byte.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final, Protocol

from conformance.providers.envelopes import bedrock_error_name, gemini_status_name
from reference_impl.transcript import (
    Message,
    Part,
    ReasoningOrigin,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    Transcript,
    canonical_json,
)

__all__ = [
    "DirectiveScript",
    "EmulatorReply",
    "FixedScript",
    "Script",
    "count_body",
    "error_envelope",
    "reply_message",
    "response_id",
]


@dataclass(frozen=True, slots=True)
class EmulatorReply:
    """A reply in neutral terms: optional reasoning, optional text, tool calls ``(name, args)``."""

    text: str | None = "ok"
    calls: tuple[tuple[str, Mapping[str, Any]], ...] = ()
    reasoning: bool = False


class Script(Protocol):
    """How the emulator answers an accepted request: the parsed request and shape in, a reply out."""

    def __call__(self, request: Transcript, shape: str) -> EmulatorReply: ...


_DIRECTIVE: Final = re.compile(r"\[emulator:\s*([^\]]*)\]")
_CALL: Final = re.compile(r"^call\s+([A-Za-z0-9_.-]+)(?:\s+x(\d+))?$")
_MAX_CALLS: Final = 16


class DirectiveScript:
    """Replies as the last user text directs; without a directive, a short deterministic text.

    After tool results (the last message is a ``tool`` message) it answers with text, so a loop
    ``call -> results -> reply`` ends the way a model's does.
    """

    def __call__(self, request: Transcript, shape: str) -> EmulatorReply:  # noqa: ARG002 - Script
        last = request.messages[-1] if request.messages else None
        if last is not None and last.role == "tool":
            n = len(last.tool_results)
            return EmulatorReply(text=f"Done: read {n} tool result{'s' * (n != 1)}.")
        user_text = next((m.text for m in reversed(request.messages) if m.role == "user"), "")
        calls: list[tuple[str, Mapping[str, Any]]] = []
        reasoning = False
        text: str | None = f"ok ({len(request.messages)} messages)"
        for directive in _DIRECTIVE.findall(user_text):
            words = directive.strip()
            call = _CALL.match(words)
            if call:
                times = min(int(call.group(2) or 1), _MAX_CALLS)
                calls.extend((call.group(1), {"n": i}) for i in range(1, times + 1))
            elif words == "think":
                reasoning = True
            elif words.startswith("say "):
                text = words[4:].strip()
        if calls:
            text = None
        return EmulatorReply(text=text, calls=tuple(calls), reasoning=reasoning)


@dataclass(frozen=True, slots=True)
class FixedScript:
    """The same reply to every request (tests, and ``create_app(script=...)``)."""

    reply: EmulatorReply

    def __call__(self, request: Transcript, shape: str) -> EmulatorReply:  # noqa: ARG002 - Script
        return self.reply


def _token(seed: str, label: str, length: int) -> str:
    """Deterministic alphanumerics from the seed (hex is alphanumeric, fine for every id rule)."""
    digest = hashlib.sha256(f"{seed}/{label}".encode()).hexdigest()
    while len(digest) < length:
        digest += hashlib.sha256(digest.encode()).hexdigest()
    return digest[:length]


# Call-id forms per shape, as the providers issue them (recordings: call_…, toolu_01…, tooluse_…).
_CALL_ID: Final[Mapping[str, Callable[[str, int], str]]] = {
    "openai-chat": lambda seed, i: f"call_{_token(seed, f'call{i}', 24)}",
    "openai-responses": lambda seed, i: f"call_{_token(seed, f'call{i}', 24)}",
    "anthropic-messages": lambda seed, i: f"toolu_01{_token(seed, f'call{i}', 22)}",
    "gemini": lambda seed, i: f"call_{_token(seed, f'call{i}', 12)}",
    "bedrock-converse": lambda seed, i: f"tooluse_{_token(seed, f'call{i}', 22)}",
}
_RESPONSE_ID_PREFIX: Final[Mapping[str, str]] = {
    "openai-chat": "chatcmpl-",
    "openai-responses": "resp_",
    "anthropic-messages": "msg_01",
    "gemini": "",
    "bedrock-converse": "",
}


def response_id(shape: str, seed: str) -> str:
    """A deterministic provider-style response id for ``seed`` (``chatcmpl-...``, ``msg_...``)."""
    return f"{_RESPONSE_ID_PREFIX.get(shape, '')}{_token(seed, 'response', 24)}"


def _reasoning(shape: str, dialect: str | None, seed: str) -> ReasoningPart | None:
    """A reasoning artifact in the provider's own form (transcript convention: canonical JSON)."""
    signature = _token(seed, "signature", 48)
    thought = "Emulated reasoning: decide which tool answers the question."
    data: dict[str, Any]
    origin: ReasoningOrigin
    if shape == "anthropic-messages":
        origin, data = "anthropic-messages", {"type": "thinking", "thinking": thought}
        data["signature"] = signature
    elif shape == "openai-responses":
        origin = "openai-responses"
        data = {
            "type": "reasoning",
            "id": f"rs_{_token(seed, 'reasoning', 24)}",
            "summary": [{"type": "summary_text", "text": thought}],
            "encrypted_content": signature,
        }
    elif shape == "gemini":
        origin, data = "gemini", {"thoughtSignature": signature}
    elif shape == "bedrock-converse":
        origin = "bedrock-converse"
        data = {"reasoningContent": {"reasoningText": {"text": thought, "signature": signature}}}
    elif shape == "openai-chat" and dialect == "deepseek":
        origin, data = "deepseek", {"reasoning_content": thought}
    else:
        return None  # plain OpenAI Chat has no reasoning artifact on the wire
    return ReasoningPart(origin=origin, data=canonical_json(data))


def reply_message(
    reply: EmulatorReply, *, shape: str, dialect: str | None, seed: str, reasoning: bool = True
) -> Message:
    """The assistant message of a reply, with ids derived from ``seed``."""
    parts: list[Part] = []
    artifact = _reasoning(shape, dialect, seed) if reply.reasoning and reasoning else None
    if artifact is not None:
        parts.append(artifact)
    if reply.text is not None:
        parts.append(TextPart(reply.text))
    make_id = _CALL_ID.get(shape, _CALL_ID["openai-chat"])
    for index, (name, arguments) in enumerate(reply.calls, start=1):
        item_id = f"fc_{_token(seed, f'item{index}', 24)}" if shape == "openai-responses" else None
        parts.append(
            ToolCallPart(
                id=make_id(seed, index),
                name=name,
                arguments=json.dumps(dict(arguments), separators=(",", ":")),
                item_id=item_id,
            )
        )
    if not parts:
        parts.append(TextPart(""))
    return Message(role="assistant", parts=tuple(parts))


def count_body(shape: str, input_tokens: int) -> dict[str, Any]:
    """The body of a count endpoint: Anthropic ``count_tokens``, Responses ``input_tokens``."""
    if shape == "openai-responses":
        return {"object": "response.input_tokens", "input_tokens": input_tokens}
    if shape == "gemini":
        return {"totalTokens": input_tokens}
    return {"input_tokens": input_tokens}


_ANTHROPIC_TYPE_BY_STATUS: Final = {404: "not_found_error", 413: "request_too_large"}


def error_envelope(
    shape: str | None, status: int, message: str, *, kind: str = "invalid_request_error"
) -> tuple[dict[str, Any], dict[str, str]]:
    """The emulator's own error (not JSON, unknown path) in the provider's envelope + headers.

    The envelopes are the recorded ones (provider-rules.md, the "Error envelope" line of each
    section); the wording of these messages is ours and is not claimed to be the provider's.
    Gemini's status name and Bedrock's exception come from the status as the rules' errors get
    theirs (:func:`.envelopes.gemini_status_name`, :func:`.envelopes.bedrock_error_name`): a
    413 or 415 refusal is the client's error (``INVALID_ARGUMENT``, ``ValidationException``),
    a 5xx the server's. Anthropic names a 404 ``not_found_error`` and a 413
    ``request_too_large`` (its documented error types), whatever ``kind`` says.
    """
    if shape == "anthropic-messages":
        anthropic_kind = _ANTHROPIC_TYPE_BY_STATUS.get(status, kind)
        return {"type": "error", "error": {"type": anthropic_kind, "message": message}}, {}
    if shape == "gemini":
        status_name = gemini_status_name(status)
        return {"error": {"code": status, "message": message, "status": status_name}}, {}
    if shape == "bedrock-converse":
        return {"message": message}, {"x-amzn-errortype": bedrock_error_name(status)}
    openai_kind = "not_found_error" if status == 404 and kind == "invalid_request_error" else kind
    return {"error": {"message": message, "type": openai_kind, "param": None, "code": None}}, {}
