# ruff: noqa: ARG001 - every detector has the registry signature (body, ctx) even when ctx is unused
"""OpenAI Responses (``POST /v1/responses``, ``/v1/responses/input_tokens``): rules R0-R10, R13 and R14.

Errors name items by id in the text and put ``input`` in ``param`` (recorded, R4). Pairing is by
``call_id``; item ``id`` values (``rs_``, ``fc_``, ``msg_``) are server ids (R6, R9).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any, Final

from conformance.providers.validators._base import (
    Context,
    Finding,
    detector,
    objects,
    structure,
)
from conformance.providers.validators._openai_common import tool_and_sampling_fields
from conformance.providers.validators._types import (
    OPT_BOOLEAN,
    OPT_INTEGER,
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
    provider_number,
    type_name,
)

__all__ = ["BODY", "responses_structure"]

SHAPE: Final = "openai-responses"
ROLES: Final = frozenset({"user", "assistant", "system", "developer"})
RESPONSE_ID: Final = re.compile(r"^[A-Za-z0-9_-]+$")  # R7a
# Items a reasoning item may precede (R4): the output it was produced with.
FOLLOWERS: Final = frozenset(
    {"function_call", "custom_tool_call", "computer_call", "web_search_call", "file_search_call"}
)


# The JSON types of the fields this validator knows (R0); optional parameters are nullable in the
# API reference. Items are told apart by ``type`` (a message may omit it); unknown keys and item
# types are never judged.
PART: Final = typed(
    {
        "input_text": obj({"text": STRING}, required=("text",)),
        "output_text": obj({"text": STRING, "annotations": arr(obj())}, required=("text",)),
        "summary_text": obj({"text": STRING}),
        "reasoning_text": obj({"text": STRING}),
        "refusal": obj({"refusal": STRING}),
        "input_image": obj({"image_url": OPT_STRING, "file_id": OPT_STRING, "detail": STRING}),
        "input_file": obj(
            {"file_data": STRING, "file_id": OPT_STRING, "filename": STRING, "file_url": STRING}
        ),
    },
)
ITEM: Final = obj(
    {
        "type": STRING,
        "id": STRING,
        "status": STRING,
        "role": STRING,
        "content": arr(PART, also=("string",)),
    },
    tag="type",
    variants={
        "function_call": obj({"call_id": STRING, "name": STRING, "arguments": STRING}),
        "function_call_output": obj({"call_id": STRING, "output": arr(PART, also=("string",))}),
        "reasoning": obj(
            {"summary": arr(PART), "encrypted_content": OPT_STRING},
        ),
    },
)
TOOL: Final = obj(
    {
        "type": STRING,
        "name": STRING,
        "description": OPT_STRING,
        "parameters": obj(also=("null",)),  # a JSON schema: its contents are free-form
        "strict": OPT_BOOLEAN,
    },
    required=("type",),
)
BODY: Final = obj(
    {
        "model": STRING,
        "input": arr(ITEM, also=("string",)),
        "instructions": OPT_STRING,
        **tool_and_sampling_fields(TOOL),
        "max_output_tokens": OPT_INTEGER,
        "max_tool_calls": OPT_INTEGER,
        "top_logprobs": OPT_INTEGER,
        "store": OPT_BOOLEAN,
        "stream": OPT_BOOLEAN,
        "background": OPT_BOOLEAN,
        "previous_response_id": OPT_STRING,
        "truncation": OPT_STRING,
        "user": OPT_STRING,
        "reasoning": obj({"effort": OPT_STRING, "summary": OPT_STRING}, also=("null",)),
        "include": arr(STRING, also=("null",)),
        "metadata": obj(also=("null",)),
        "text": obj(also=("null",)),
    }
)


# Recorded 200s carry ``"status": null`` on a function call: null stands for an optional key.
_READING: Final = Reading(null_optional=True)
_WRONG_TYPE: Final = WrongType("R0", bracket_path, openai_expected, type_name, _READING)
"""R0 for a field of a JSON type OpenAI refuses, or a required key missing."""
_bad_type: Final = _WRONG_TYPE.bad


def _item_structure(i: int, item: Any) -> Finding | None:
    path = f"input[{i}]"
    if not isinstance(item, dict):
        return _bad_type(path, "an object", item)
    kind = item.get("type", "message" if "role" in item else None)
    if kind is None:
        return _WRONG_TYPE.missing(f"{path}.type")
    if not isinstance(kind, str):
        return _bad_type(f"{path}.type", "a string", kind)
    if kind == "message":
        if not isinstance(item.get("role"), str):
            return _bad_type(f"{path}.role", "a string", item.get("role"))
        content = item.get("content")
        if not isinstance(content, str | list):
            return _bad_type(f"{path}.content", "one of a string or array of objects", content)
    if kind in {"function_call", "function_call_output"} and not isinstance(
        item.get("call_id"), str
    ):
        return _bad_type(f"{path}.call_id", "a string", item.get("call_id"))
    if kind == "function_call":
        for key in ("name", "arguments"):
            if not isinstance(item.get(key), str):
                return _bad_type(f"{path}.{key}", "a string", item.get(key))
    return None


@structure(SHAPE)
def responses_structure(body: Any, ctx: Context) -> Finding | None:
    """R0: an object whose ``input`` is a string or an array of well-typed items."""
    if not isinstance(body, dict):
        return _bad_type("body", "an object", body)
    items = body.get("input")
    if items is not None and not isinstance(items, str | list):
        return _bad_type("input", "one of a string or array of objects", items)
    for i, item in enumerate(items if isinstance(items, list) else []):
        found = _item_structure(i, item)
        if found is not None:
            return found
    return _WRONG_TYPE.first(body, BODY)


def _items(body: Mapping[str, Any]) -> list[dict[str, Any]]:
    return objects(body.get("input"))


def _kind(item: Mapping[str, Any]) -> str:
    return str(item.get("type", "message" if "role" in item else ""))


@detector(SHAPE, "R1")
def calls_without_output(body: Mapping[str, Any], ctx: Context) -> Iterator[Finding]:
    items = _items(body)
    outputs = {i.get("call_id") for i in items if _kind(i) == "function_call_output"}
    for n, item in enumerate(items):
        if _kind(item) == "function_call" and item.get("call_id") not in outputs:
            yield Finding("R1", (n,), {"index": n, "id": item.get("call_id")})


@detector(SHAPE, "R2")
def outputs_without_call(body: Mapping[str, Any], ctx: Context) -> Iterator[Finding]:
    if body.get("previous_response_id") or body.get("conversation"):
        # The call may live in the stored response or conversation (server state: not judged;
        # recorded 200: an output-only continuation of a `conversation`).
        return
    items = _items(body)
    calls = {i.get("call_id") for i in items if _kind(i) == "function_call"}
    for n, item in enumerate(items):
        if _kind(item) == "function_call_output" and item.get("call_id") not in calls:
            yield Finding("R2", (n,), {"index": n, "id": item.get("call_id")})


def _is_produced_output(item: Mapping[str, Any]) -> bool:
    if _kind(item) in FOLLOWERS:
        return True
    # An output message item keeps its server id; a plain input message (no id) does not count:
    # recorded 400 for reasoning followed by {"role": "assistant", "content": "..."}.
    return _kind(item) == "message" and item.get("role") == "assistant" and "id" in item


@detector(SHAPE, "R4")
def reasoning_without_follower(body: Mapping[str, Any], ctx: Context) -> Iterator[Finding]:
    items = _items(body)
    for n, item in enumerate(items):
        if _kind(item) != "reasoning":
            continue
        k = n + 1
        while k < len(items) and _kind(items[k]) == "reasoning":
            k += 1
        if k >= len(items) or not _is_produced_output(items[k]):
            yield Finding("R4", (n,), {"index": n, "id": item.get("id")})


@detector(SHAPE, "R6")
def duplicate_item_ids(body: Mapping[str, Any], ctx: Context) -> Iterator[Finding]:
    seen: set[str] = set()
    for n, item in enumerate(_items(body)):
        item_id = item.get("id")
        if not isinstance(item_id, str):
            continue
        if item_id in seen:
            yield Finding("R6", (n,), {"index": n, "id": item_id})
        seen.add(item_id)


@detector(SHAPE, "R7a")
def previous_response_id_format(body: Mapping[str, Any], ctx: Context) -> Iterator[Finding]:
    value = body.get("previous_response_id")
    if isinstance(value, str) and not RESPONSE_ID.match(value):
        yield Finding("R7a", (-1,), {"id": value})


@detector(SHAPE, "R8")
def chat_tool_role(body: Mapping[str, Any], ctx: Context) -> Iterator[Finding]:
    for n, item in enumerate(_items(body)):
        if _kind(item) == "message" and item.get("role") not in ROLES:
            yield Finding("R8", (n,), {"index": n, "role": item.get("role")})


@detector(SHAPE, "R9")
def function_call_id_prefix(body: Mapping[str, Any], ctx: Context) -> Iterator[Finding]:
    for n, item in enumerate(_items(body)):
        item_id = item.get("id")
        if (
            _kind(item) == "function_call"
            and isinstance(item_id, str)
            and not item_id.startswith("fc")
        ):
            yield Finding("R9", (n,), {"index": n, "id": item_id})


@detector(SHAPE, "DS4")
def deepseek_grouped_calls(body: Mapping[str, Any], ctx: Context) -> Iterator[Finding]:
    """DS4: once a batch of function calls starts, only calls may come until its outputs."""
    pending: list[str] = []
    for n, item in enumerate(_items(body)):
        kind = _kind(item)
        if kind == "function_call":
            pending.append(str(item.get("call_id")))
        elif kind == "function_call_output":
            pending = [cid for cid in pending if cid != item.get("call_id")]
        elif pending:
            yield Finding("DS4", (n,), {"index": n, "id": pending[0]})
            return


@detector(SHAPE, "R13")
def audio_file_data(body: Mapping[str, Any], ctx: Context) -> Iterator[Finding]:
    """R13 (recorded): an ``input_file`` whose ``file_data`` is an audio data URL, in a message's
    content (the only place it was recorded)."""
    for n, item in enumerate(_items(body)):
        if _kind(item) != "message":
            continue
        for k, part in enumerate(objects(item.get("content"))):
            data = part.get("file_data")
            if part.get("type") != "input_file" or not isinstance(data, str):
                continue
            mime = data[5:].split(";", 1)[0].split(",", 1)[0] if data.startswith("data:") else ""
            if mime.startswith("audio/"):
                yield Finding("R13", (n, k), {"index": n, "part": k, "mime": mime})


@detector(SHAPE, "R14")
def temperature_below_zero(body: Mapping[str, Any], ctx: Context) -> Iterator[Finding]:
    """R14 (recorded): a negative ``temperature``; above the maximum was never recorded."""
    value = body.get("temperature")
    if isinstance(value, int | float) and not isinstance(value, bool) and value < 0:
        yield Finding("R14", (-1,), {"value": provider_number(value)})
