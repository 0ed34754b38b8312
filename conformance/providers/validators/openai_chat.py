"""OpenAI Chat Completions (``POST /v1/chat/completions``): rules C0-C14 over the wire body.

Index notation follows the provider (provider-rules.md): pairing errors put ``messages.[3].role``
in ``param`` and schema errors ``messages[3].name``; the templates in rules.yaml carry that, the
detectors only supply ``index``.
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
    empty_lists,
    messages_of,
    structure,
)
from conformance.providers.validators._openai_common import tool_and_sampling_fields
from conformance.providers.validators._types import (
    OPT_BOOLEAN,
    OPT_INTEGER,
    OPT_NUMBER,
    OPT_STRING,
    STRING,
    Reading,
    arr,
    obj,
    typed,
)
from conformance.providers.validators._wording import (
    WrongType,
    bracket_path,
    openai_expected,
    type_name,
)

__all__ = ["BODY", "chat_structure", "pending_calls"]

SHAPE: Final = "openai-chat"
ROLES: Final = frozenset({"system", "developer", "user", "assistant", "tool", "function"})
NAME_PATTERN: Final = re.compile(r"^[a-zA-Z0-9_-]+$")  # C7
TOOL_PARTS: Final = frozenset({"text", "image_url"})  # C6


# The JSON types of the fields this validator knows (C0). Optional request parameters are nullable
# in OpenAI's API reference, so ``null`` is accepted for them; unknown keys are never judged.
PART: Final = typed(
    {
        "text": obj({"text": STRING}, required=("text",)),
        "image_url": obj({"image_url": obj({"url": STRING, "detail": STRING})}),
        "input_audio": obj({"input_audio": obj({"data": STRING, "format": STRING})}),
        "file": obj({"file": obj({"file_data": STRING, "file_id": STRING, "filename": STRING})}),
        "refusal": obj({"refusal": STRING}),
    },
)
TOOL_CALL: Final = obj(
    {
        "id": STRING,
        "type": STRING,
        "function": obj({"name": STRING, "arguments": STRING}, required=("name",)),
    }
)
MESSAGE: Final = obj(
    {
        "role": STRING,
        "content": arr(PART, also=("string", "null")),
        "name": STRING,
        "tool_calls": arr(TOOL_CALL, also=("null",)),
        "tool_call_id": STRING,
        "refusal": OPT_STRING,
        "function_call": obj({"name": STRING, "arguments": STRING}, also=("null",)),
    }
)
TOOL: Final = obj(
    {
        "type": STRING,
        "function": obj(
            {
                "name": STRING,
                "description": STRING,
                "parameters": obj(),  # a JSON schema: its contents are free-form
                "strict": OPT_BOOLEAN,
            },
            required=("name",),
        ),
    },
    required=("type",),
)
BODY: Final = obj(
    {
        "model": STRING,
        "messages": arr(MESSAGE),
        **tool_and_sampling_fields(TOOL),
        "presence_penalty": OPT_NUMBER,
        "frequency_penalty": OPT_NUMBER,
        "max_tokens": OPT_INTEGER,
        "max_completion_tokens": OPT_INTEGER,
        "n": OPT_INTEGER,
        "seed": OPT_INTEGER,
        "top_logprobs": OPT_INTEGER,
        "logprobs": OPT_BOOLEAN,
        "stream": OPT_BOOLEAN,
        "store": OPT_BOOLEAN,
        "stop": arr(STRING, also=("string", "null")),
        "user": OPT_STRING,
        "reasoning_effort": OPT_STRING,
        "response_format": obj({"type": STRING}, also=("null",)),
        "stream_options": obj({"include_usage": OPT_BOOLEAN}, also=("null",)),
        "metadata": obj(also=("null",)),
        "logit_bias": obj(also=("null",)),
    }
)


# Mistral takes a tool without ``type`` (recorded 200); the profile setting ``tool_type_optional``.
_BODY_UNTYPED_TOOLS: Final = obj(
    {
        **BODY.fields,
        "tools": arr(obj(dict(TOOL.fields)), also=("null",)),
    }
)


# Recorded 200s carry ``"name": null`` on a message: null stands for an optional key not given.
_READING: Final = Reading(null_optional=True)
_WRONG_TYPE: Final = WrongType("C0", bracket_path, openai_expected, type_name, _READING)
"""C0 for a field of a JSON type OpenAI refuses, or a required key missing."""
_bad_type: Final = _WRONG_TYPE.bad
_missing: Final = _WRONG_TYPE.missing


def _wrong_type(body: Any, ctx: Context) -> Finding | None:
    """C0 for the first known field of ``body`` with a JSON type OpenAI refuses."""
    spec = _BODY_UNTYPED_TOOLS if ctx.settings.get("tool_type_optional") else BODY
    return _WRONG_TYPE.first(body, spec)


def _tool_call_structure(path: str, call: Any) -> Finding | None:
    if not isinstance(call, dict):
        return _bad_type(path, "an object", call)
    if "id" not in call:
        return _missing(f"{path}.id")
    if not isinstance(call["id"], str):
        return _bad_type(f"{path}.id", "a string", call["id"])
    function = call.get("function")
    if function is None:
        return _missing(f"{path}.function")
    if not isinstance(function, dict):
        return _bad_type(f"{path}.function", "an object", function)
    if not isinstance(function.get("name"), str):
        return _bad_type(f"{path}.function.name", "a string", function.get("name"))
    if "arguments" in function and not isinstance(function["arguments"], str):
        return _bad_type(f"{path}.function.arguments", "a string", function["arguments"])
    return None


def _message_structure(i: int, message: Any) -> Finding | None:
    path = f"messages[{i}]"
    if not isinstance(message, dict):
        return _bad_type(path, "an object", message)
    role = message.get("role")
    if role is None:
        return _missing(f"{path}.role")
    if not isinstance(role, str):
        return _bad_type(f"{path}.role", "a string", role)
    if role not in ROLES:
        return Finding("C0", (), {"path": f"{path}.role", "got": role}, variant="role")
    content = message.get("content")
    if content is not None and not isinstance(content, str | list):
        return _bad_type(f"{path}.content", "one of a string or array of objects", content)
    for j, part in enumerate(as_list(content)):
        if not isinstance(part, dict):
            return _bad_type(f"{path}.content[{j}]", "an object", part)
    if message.get("name") is not None and not isinstance(message["name"], str):
        return _bad_type(f"{path}.name", "a string", message["name"])
    if "tool_calls" in message and message["tool_calls"] is not None:
        calls = message["tool_calls"]
        if not isinstance(calls, list):
            return _bad_type(f"{path}.tool_calls", "an array", calls)
        for j, call in enumerate(calls):
            found = _tool_call_structure(f"{path}.tool_calls[{j}]", call)
            if found is not None:
                return found
    if role == "tool":
        if "tool_call_id" not in message:
            return _missing(f"{path}.tool_call_id")
        if not isinstance(message["tool_call_id"], str):
            return _bad_type(f"{path}.tool_call_id", "a string", message["tool_call_id"])
    return None


@structure(SHAPE)
def chat_structure(body: Any, ctx: Context) -> Finding | None:
    """C0: the body is an object with ``messages``, an array of well-typed message objects."""
    if not isinstance(body, dict):
        return _bad_type("body", "an object", body)
    if "messages" not in body:
        return _missing("messages")
    messages = body["messages"]
    if not isinstance(messages, list):
        return _bad_type("messages", "an array", messages)
    for i, message in enumerate(messages):
        found = _message_structure(i, message)
        if found is not None:
            return found
    return _wrong_type(body, ctx)


def call_ids(message: Mapping[str, Any]) -> list[str]:
    return [str(as_dict(c).get("id")) for c in as_list(message.get("tool_calls"))]


def pending_calls(messages: list[dict[str, Any]], i: int) -> tuple[list[str], int]:
    """Ids of assistant ``i`` not answered by the tool run right after it, and where the run ends."""
    pending = call_ids(messages[i])
    j = i + 1
    while j < len(messages) and messages[j].get("role") == "tool":
        answered = messages[j].get("tool_call_id")
        pending = [cid for cid in pending if cid != answered]
        j += 1
    return pending, j


@detector(SHAPE, "C1")
def unanswered_calls(body: Mapping[str, Any], ctx: Context) -> Iterator[Finding]:
    """C1 (and C1a): every tool_call_id answered before the next non-tool message."""
    messages = messages_of(body)
    for i, message in enumerate(messages):
        if message.get("role") != "assistant" or not as_list(message.get("tool_calls")):
            continue
        pending, end = pending_calls(messages, i)
        if not pending:
            continue
        # The interrupting message, or the assistant itself when the request ends (inferred).
        where = end if end < len(messages) else i
        later = {m.get("tool_call_id") for m in messages[end:] if m.get("role") == "tool"}
        interrupted = end < len(messages) and bool(later & set(pending))
        yield Finding(
            "C1",
            (where,),
            {"index": where, "ids": ", ".join(pending), "assistant": i},
            rule="C1a" if interrupted else "C1",
        )


@detector(SHAPE, "C2")
def orphan_tool_messages(body: Mapping[str, Any], ctx: Context) -> Iterator[Finding]:
    """C2: a tool message must answer a call of the assistant right before its tool run."""
    messages = messages_of(body)
    non_system_before = 0
    for j, message in enumerate(messages):
        if message.get("role") == "tool":
            k = j - 1
            while k >= 0 and messages[k].get("role") == "tool":
                k -= 1
            anchor = messages[k] if k >= 0 else {}
            if anchor.get("role") != "assistant" or message.get("tool_call_id") not in call_ids(
                anchor
            ):
                yield Finding(
                    "C2",
                    (j,),
                    {
                        "index": j,
                        "id": message.get("tool_call_id"),
                        "content_index": non_system_before,  # G9 counts contents, not messages
                    },
                )
        if message.get("role") not in {"system", "developer"}:
            non_system_before += 1


@detector(SHAPE, "C3")
def duplicate_tool_results(body: Mapping[str, Any], ctx: Context) -> Iterator[Finding]:
    first_seen: dict[str, int] = {}
    for j, message in enumerate(messages_of(body)):
        if message.get("role") != "tool":
            continue
        cid = str(message.get("tool_call_id"))
        if cid in first_seen:
            yield Finding("C3", (j,), {"index": j, "first": first_seen[cid], "id": cid})
        else:
            first_seen[cid] = j


@detector(SHAPE, "C4")
def empty_tool_calls(body: Mapping[str, Any], ctx: Context) -> Iterator[Finding]:
    yield from empty_lists(messages_of(body), "tool_calls", "C4")


@detector(SHAPE, "C5")
def null_content(body: Mapping[str, Any], ctx: Context) -> Iterator[Finding]:
    for i, message in enumerate(messages_of(body)):
        if "content" not in message or message["content"] is not None:
            continue
        carries_calls = message.get("role") == "assistant" and bool(
            as_list(message.get("tool_calls"))
        )
        if not carries_calls:
            yield Finding("C5", (i,), {"index": i})


@detector(SHAPE, "C6")
def tool_content_parts(body: Mapping[str, Any], ctx: Context) -> Iterator[Finding]:
    for i, message in enumerate(messages_of(body)):
        if message.get("role") != "tool":
            continue
        kinds = {as_dict(part).get("type") for part in as_list(message.get("content"))}
        if kinds - TOOL_PARTS:
            yield Finding("C6", (i,), {"index": i})


@detector(SHAPE, "C7")
def name_pattern(body: Mapping[str, Any], ctx: Context) -> Iterator[Finding]:
    for i, message in enumerate(messages_of(body)):
        name = message.get("name")
        if isinstance(name, str) and not NAME_PATTERN.match(name):
            yield Finding("C7", (i,), {"index": i, "name": name})


@detector(SHAPE, "C8")
def unsupported_roles(body: Mapping[str, Any], ctx: Context) -> Iterator[Finding]:
    refused = set(as_list(ctx.settings.get("unsupported_roles")))
    for i, message in enumerate(messages_of(body)):
        if message.get("role") in refused:
            yield Finding("C8", (i,), {"index": i, "role": message.get("role")})


@detector(SHAPE, "C9")
def parallel_tool_calls_without_tools(body: Mapping[str, Any], ctx: Context) -> Iterator[Finding]:
    if "parallel_tool_calls" in body and not as_list(body.get("tools")):
        yield Finding("C9", (-1,), {})


@detector(SHAPE, "C12")
def stop_unsupported(body: Mapping[str, Any], ctx: Context) -> Iterator[Finding]:
    """C12 (recorded on o1-mini and gpt-5-mini; in their profiles only): ``stop`` is refused."""
    if body.get("stop") is not None:
        yield Finding("C12", (-1,), {})


@detector(SHAPE, "C13")
def strict_schema_open(body: Mapping[str, Any], ctx: Context) -> Iterator[Finding]:
    """C13 (recorded on gpt-4o-mini): a ``strict`` function tool whose parameters schema does not
    set ``additionalProperties`` to false at its root (nested objects were never recorded)."""
    for i, tool in enumerate(as_list(body.get("tools"))):
        function = as_dict(as_dict(tool).get("function"))
        parameters = function.get("parameters")
        open_schema = (
            isinstance(parameters, dict) and parameters.get("additionalProperties") is not False
        )
        if function.get("strict") is True and open_schema:
            yield Finding("C13", (-1, i), {"index": i, "name": function.get("name")})


@detector(SHAPE, "C14")
def web_search_options_unsupported(body: Mapping[str, Any], ctx: Context) -> Iterator[Finding]:
    """C14 (recorded on gpt-4o): ``web_search_options`` on a model that does not search; the
    search models' profiles remove the rule."""
    if body.get("web_search_options") is not None:
        yield Finding("C14", (-1,), {})


def _longest_string(message: Mapping[str, Any]) -> int:
    """The length of the message's longest text: its content, or its longest text part."""
    content = message.get("content")
    if isinstance(content, str):
        return len(content)
    longest = 0
    for part in as_list(content):
        text = as_dict(part).get("text")
        if isinstance(text, str) and len(text) > longest:
            longest = len(text)
    return longest


@detector(SHAPE, "C11")
def string_too_long(body: Mapping[str, Any], ctx: Context) -> Iterator[Finding]:
    limit = int(ctx.settings.get("max_string_length", 10485760))
    for i, message in enumerate(messages_of(body)):
        longest = _longest_string(message)
        if longest > limit:
            yield Finding("C11", (i,), {"index": i, "limit": limit, "length": longest})
