"""Rules of OpenAI-compatible gateways and servers (provider-rules.md section 6).

These detectors are registered for ``openai-chat`` and only run in the dialect profiles that name
them (``mistral-default``, ``ollama-cloud`` ...). Rules that merely re-word an OpenAI rule (DS1,
QW1, KM1, G9 ...) reuse the OpenAI detector through ``detector:`` in rules.yaml and need no code
here.
"""

# ruff: noqa: ARG001 - every detector has the registry signature (body, ctx) even when ctx is unused

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any, Final

from conformance.providers.validators._base import (
    Context,
    Finding,
    as_dict,
    as_list,
    detector,
    messages_of,
)
from conformance.providers.validators.openai_chat import call_ids

__all__: list[str] = []

SHAPE: Final = "openai-chat"
MISTRAL_ID: Final = re.compile(r"^[a-zA-Z0-9]{9}$")  # MI4


# Turns Mistral refuses to see in a row: (previous role, role) -> the rule that pair breaks.
_MISTRAL_REFUSED_PAIRS: Final[Mapping[tuple[str, str], str]] = {
    ("tool", "user"): "MI1",
    ("user", "tool"): "MI2",
}


@detector(SHAPE, "MI1", "MI2")
def mistral_turn_order(body: Mapping[str, Any], ctx: Context) -> Iterator[Finding]:
    """MI1: a user message right after a tool message; MI2: a tool message right after a user one."""
    messages = messages_of(body)
    for i in range(1, len(messages)):
        pair = (str(messages[i - 1].get("role")), str(messages[i].get("role")))
        name = _MISTRAL_REFUSED_PAIRS.get(pair)
        if name is not None:
            yield Finding(name, (i,), {"index": i})


@detector(SHAPE, "MI3")
def mistral_call_result_count(body: Mapping[str, Any], ctx: Context) -> Iterator[Finding]:
    messages = messages_of(body)
    calls = sorted(cid for m in messages if m.get("role") == "assistant" for cid in call_ids(m))
    results = sorted(str(m.get("tool_call_id")) for m in messages if m.get("role") == "tool")
    if calls != results:
        yield Finding("MI3", (len(messages),), {})


@detector(SHAPE, "MI4")
def mistral_tool_ids(body: Mapping[str, Any], ctx: Context) -> Iterator[Finding]:
    for i, message in enumerate(messages_of(body)):
        ids = call_ids(message) if message.get("role") == "assistant" else []
        if message.get("role") == "tool":
            ids = [str(message.get("tool_call_id"))]
        for cid in ids:
            if not MISTRAL_ID.match(cid):
                yield Finding("MI4", (i,), {"index": i, "id": cid})
                break


@detector(SHAPE, "MI5")
def mistral_last_role(body: Mapping[str, Any], ctx: Context) -> Iterator[Finding]:
    messages = messages_of(body)
    if not messages:
        return
    last = messages[-1]
    role = last.get("role")
    if role in {"user", "tool"} or (role == "assistant" and last.get("prefix") is True):
        return
    yield Finding("MI5", (len(messages),), {"role": role})


def _alternates(messages: list[dict[str, Any]], skip_all_system: bool) -> int | None:
    """Index of the first message that breaks user/assistant alternation (None when it holds)."""
    start = 0
    while start < len(messages) and messages[start].get("role") == "system":
        start += 1
        if not skip_all_system:
            break
    expected = "user"
    for i in range(start, len(messages)):
        if messages[i].get("role") != expected:
            return i
        expected = "assistant" if expected == "user" else "user"
    return None


@detector(SHAPE, "VL1")
def vllm_mistral_template(body: Mapping[str, Any], ctx: Context) -> Iterator[Finding]:
    # The Mistral chat template drops one optional system message, then demands strict turns.
    where = _alternates(messages_of(body), skip_all_system=False)
    if where is not None:
        yield Finding("VL1", (where,), {"index": where})


@detector(SHAPE, "PP1")
def perplexity_alternation(body: Mapping[str, Any], ctx: Context) -> Iterator[Finding]:
    where = _alternates(messages_of(body), skip_all_system=True)
    if where is not None:
        yield Finding("PP1", (where,), {"index": where})


@detector(SHAPE, "OL1")
def ollama_unknown_tool_call_id(body: Mapping[str, Any], ctx: Context) -> Iterator[Finding]:
    seen: set[str] = set()
    for i, message in enumerate(messages_of(body)):
        if message.get("role") == "assistant":
            seen.update(call_ids(message))
        elif message.get("role") == "tool" and message.get("tool_call_id") not in seen:
            yield Finding("OL1", (i,), {"index": i, "id": message.get("tool_call_id")})


@detector(SHAPE, "OL2", "LC1")
def content_null_anywhere(body: Mapping[str, Any], ctx: Context) -> Iterator[Finding]:
    """OL2, LC1: local servers refuse ``content: null`` even beside tool calls."""
    name = "OL2" if ctx.active("OL2") else "LC1"
    for i, message in enumerate(messages_of(body)):
        if "content" in message and message["content"] is None:
            yield Finding(name, (i,), {"index": i})


@detector(SHAPE, "LM1")
def lmstudio_null_content(body: Mapping[str, Any], ctx: Context) -> Iterator[Finding]:
    for i, message in enumerate(messages_of(body)):
        if "content" in message and message["content"] is None:
            yield Finding("LM1", (i,), {"index": i})


@detector(SHAPE, "LC2")
def llamacpp_tool_call_type(body: Mapping[str, Any], ctx: Context) -> Iterator[Finding]:
    for i, message in enumerate(messages_of(body)):
        for call in as_list(message.get("tool_calls")):
            if "type" not in as_dict(call):
                yield Finding("LC2", (i,), {"index": i})
                break


@detector(SHAPE, "XA1")
def xai_name_only_on_user(body: Mapping[str, Any], ctx: Context) -> Iterator[Finding]:
    for i, message in enumerate(messages_of(body)):
        if "name" in message and message.get("role") != "user":
            yield Finding("XA1", (i,), {"index": i})


@detector(SHAPE, "DS3")
def deepseek_reasoning_content(body: Mapping[str, Any], ctx: Context) -> Iterator[Finding]:
    # An empty string is accepted (recorded); only a missing field is refused.
    for i, message in enumerate(messages_of(body)):
        if (
            message.get("role") == "assistant"
            and as_list(message.get("tool_calls"))
            and "reasoning_content" not in message
        ):
            yield Finding("DS3", (i,), {"index": i})
