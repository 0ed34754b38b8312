# ruff: noqa: ARG001 - every detector has the registry signature (body, ctx) even when ctx is unused
"""Gemini ``generateContent`` (AI Studio and Vertex): rules G0-G7, G10 and G11.

Roles are ``user`` and ``model``; function results are ``functionResponse`` parts in user-role
contents; ``systemInstruction`` is top level. A *call turn* is a model content with
``functionCall`` parts, a *response turn* a content with ``functionResponse`` parts.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Final

from conformance.providers.validators._base import (
    Context,
    Finding,
    as_dict,
    detector,
    empty_lists,
    objects,
    structure,
)
from conformance.providers.validators._types import (
    ANY,
    BOOLEAN,
    INTEGER,
    NUMBER,
    STRING,
    Reading,
    arr,
    obj,
)
from conformance.providers.validators._wording import (
    WrongType,
    bracket_path,
    proto_expected,
    proto_got,
    proto_message,
    provider_number,
    snake_case,
)

__all__ = ["BODY", "gemini_structure"]

SHAPE: Final = "gemini"


# The JSON types of the fields this validator knows (G0), by proto field name: the API takes
# camelCase and snake_case keys alike and names fields in snake_case (inferred). Numbers written
# as strings are valid proto3 JSON; unknown keys are never judged.
_STRUCT: Final = obj(name="type.googleapis.com/google.protobuf.Struct")
PART: Final = obj(
    {
        "text": STRING,
        "thought": BOOLEAN,
        "thought_signature": STRING,
        "function_call": obj({"name": STRING, "args": _STRUCT, "id": STRING}, name="FunctionCall"),
        "function_response": obj(
            {"name": STRING, "response": _STRUCT, "id": STRING}, name="FunctionResponse"
        ),
        "inline_data": obj({"mime_type": STRING, "data": STRING}, name="Blob"),
        "file_data": obj({"mime_type": STRING, "file_uri": STRING}, name="FileData"),
    },
    name="Part",
)
CONTENT: Final = obj({"role": STRING, "parts": arr(PART)}, name="Content")
DECLARATION: Final = obj(
    {"name": STRING, "description": STRING, "parameters": obj(name="Schema")},
    name="FunctionDeclaration",
)
BODY: Final = obj(
    {
        "model": STRING,
        "contents": arr(CONTENT),
        "system_instruction": CONTENT,
        "tools": arr(obj({"function_declarations": arr(DECLARATION)}, name="Tool")),
        "tool_config": obj(name="ToolConfig"),
        "cached_content": STRING,
        "generation_config": obj(
            {
                "temperature": NUMBER,
                "top_p": NUMBER,
                "top_k": INTEGER,
                "candidate_count": INTEGER,
                "max_output_tokens": INTEGER,
                "seed": INTEGER,
                "presence_penalty": NUMBER,
                "frequency_penalty": NUMBER,
                "stop_sequences": arr(STRING),
                "response_mime_type": STRING,
                "response_schema": ANY,
                "thinking_config": obj(
                    {"thinking_budget": INTEGER, "include_thoughts": BOOLEAN},
                    name="ThinkingConfig",
                ),
            },
            name="GenerationConfig",
        ),
    },
    name="GenerateContentRequest",
)


# Proto3 JSON: a field by its camelCase or snake_case name, a number also written as a string.
_READING: Final = Reading(key=snake_case, numeric_text=True)
_WRONG_TYPE: Final = WrongType("G0", bracket_path, proto_expected, proto_got, _READING)
"""G0 for a field of a JSON type the API refuses."""
_bad: Final = _WRONG_TYPE.bad


@structure(SHAPE)
def gemini_structure(body: Any, ctx: Context) -> Finding | None:
    """G0: ``contents`` is an array of objects whose ``parts`` are arrays of objects."""
    if not isinstance(body, dict):
        return _bad("body", proto_message("GenerateContentRequest"), body)
    contents = body.get("contents")
    if not isinstance(contents, list):
        return _bad("contents", "TYPE_MESSAGE", contents)
    for i, content in enumerate(contents):
        if not isinstance(content, dict):
            return _bad(f"contents[{i}]", proto_message("Content"), content)
        if "role" in content and not isinstance(content["role"], str):
            return _bad(f"contents[{i}].role", "TYPE_STRING", content["role"])
        parts = content.get("parts")
        if not isinstance(parts, list):
            return _bad(f"contents[{i}].parts", "TYPE_MESSAGE", parts)
        for j, part in enumerate(parts):
            if not isinstance(part, dict):
                return _bad(f"contents[{i}].parts[{j}]", proto_message("Part"), part)
    return _WRONG_TYPE.first(body, BODY)


def _contents(body: Mapping[str, Any]) -> list[dict[str, Any]]:
    return objects(body.get("contents"))


def _parts(content: Mapping[str, Any]) -> list[dict[str, Any]]:
    return objects(content.get("parts"))


def _calls(content: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [p for p in _parts(content) if "functionCall" in p]


def _responses(content: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [p for p in _parts(content) if "functionResponse" in p]


def _role(content: Mapping[str, Any]) -> str:
    return str(content.get("role", "user"))


@detector(SHAPE, "G7")
def valid_roles(body: Mapping[str, Any], ctx: Context) -> Iterator[Finding]:
    for i, content in enumerate(_contents(body)):
        if _role(content) not in {"user", "model"}:
            yield Finding("G7", (i,), {"index": i, "role": content.get("role")})


@detector(SHAPE, "G11")
def empty_parts(body: Mapping[str, Any], ctx: Context) -> Iterator[Finding]:
    """G11: a content whose ``parts`` list is empty."""
    yield from empty_lists(_contents(body), "parts", "G11")


@detector(SHAPE, "G1")
def call_turn_placement(body: Mapping[str, Any], ctx: Context) -> Iterator[Finding]:
    contents = _contents(body)
    for i, content in enumerate(contents):
        if not _calls(content):
            continue
        previous = contents[i - 1] if i > 0 else None
        if previous is None or _role(previous) != "user":
            yield Finding("G1", (i,), {"index": i})


def _response_runs(contents: list[dict[str, Any]]) -> dict[int, list[int]]:
    """For each functionCall content, the indexes of the user contents that answer it: the
    functionResponse contents right after it, consecutive ones included (recorded 200: three
    parallel calls answered by three consecutive user contents of one functionResponse each)."""
    runs: dict[int, list[int]] = {}
    for i, content in enumerate(contents):
        if not _calls(content):
            continue
        run: list[int] = []
        j = i + 1
        while j < len(contents) and _role(contents[j]) == "user" and _responses(contents[j]):
            run.append(j)
            j += 1
        runs[i] = run
    return runs


@detector(SHAPE, "G2")
def response_turn_placement(body: Mapping[str, Any], ctx: Context) -> Iterator[Finding]:
    contents = _contents(body)
    answering = {j for run in _response_runs(contents).values() for j in run}
    for i, content in enumerate(contents):
        if _responses(content) and i not in answering:
            yield Finding("G2", (i,), {"index": i})


@detector(SHAPE, "G3")
def response_count(body: Mapping[str, Any], ctx: Context) -> Iterator[Finding]:
    """G3: the responses right after a call turn answer all of its calls; a call turn followed
    by a content without any (a text turn in place of the responses) answers none of them. A
    call turn that ends the contents is not judged here."""
    contents = _contents(body)
    for i, run in _response_runs(contents).items():
        if not run:
            if i + 1 < len(contents):
                yield Finding("G3", (i + 1,), {"index": i + 1})
            continue
        responses = sum(len(_responses(contents[j])) for j in run)
        if responses != len(_calls(contents[i])):
            yield Finding("G3", (run[0],), {"index": run[0]})


@detector(SHAPE, "G4")
def alternation(body: Mapping[str, Any], ctx: Context) -> Iterator[Finding]:
    contents = _contents(body)
    for i in range(1, len(contents)):
        if _role(contents[i]) == _role(contents[i - 1]):
            yield Finding("G4", (i,), {"index": i})
            return


@detector(SHAPE, "G5")
def ends_with_user(body: Mapping[str, Any], ctx: Context) -> Iterator[Finding]:
    contents = _contents(body)
    if contents and _role(contents[-1]) != "user":
        yield Finding("G5", (len(contents),), {})


@detector(SHAPE, "G6")
def thought_signatures(body: Mapping[str, Any], ctx: Context) -> Iterator[Finding]:
    """G6: the first functionCall part of each model turn in the current turn keeps its signature.

    G6a (recorded): parallel calls carry the signature on the first part only, so later parts are
    not checked. "Current turn" = after the last user content with a text part (inferred scope).
    """
    contents = _contents(body)
    start = 0
    for i, content in enumerate(contents):
        if _role(content) == "user" and any("text" in p for p in _parts(content)):
            start = i + 1
    for i in range(start, len(contents)):
        calls = _calls(contents[i])
        if calls and "thoughtSignature" not in calls[0] and "thought_signature" not in calls[0]:
            name = (
                calls[0]["functionCall"].get("name")
                if isinstance(calls[0]["functionCall"], dict)
                else None
            )
            yield Finding("G6", (i,), {"index": i, "name": name, "position": i})


@detector(SHAPE, "G10")
def temperature_range(body: Mapping[str, Any], ctx: Context) -> Iterator[Finding]:
    """G10 (recorded on Vertex): ``generationConfig.temperature`` outside [0, 2.0001)."""
    value = as_dict(body.get("generationConfig")).get("temperature")
    if isinstance(value, int | float) and not isinstance(value, bool) and not 0 <= value < 2.0001:
        yield Finding("G10", (-1,), {"value": provider_number(value)})
