# ruff: noqa: ARG001 - every check has the registry signature (body, ctx) even when ctx is unused
"""Gemini ``generateContent`` (AI Studio and Vertex): rules G0-G7.

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
    check,
    objects,
    structure,
)

__all__ = ["gemini_structure"]

SHAPE: Final = "gemini"


def _bad(path: str, expected: str, got: Any) -> Finding:
    return Finding("G0", (), {"path": path, "expected": expected, "got": repr(got)[:80]})


@structure(SHAPE)
def gemini_structure(body: Any, ctx: Context) -> Finding | None:
    """G0: ``contents`` is an array of objects whose ``parts`` are arrays of objects."""
    if not isinstance(body, dict):
        return _bad(
            "body",
            "type.googleapis.com/google.ai.generativelanguage.v1beta.GenerateContentRequest",
            body,
        )
    contents = body.get("contents")
    if not isinstance(contents, list):
        return _bad("contents", "TYPE_MESSAGE", contents)
    for i, content in enumerate(contents):
        if not isinstance(content, dict):
            return _bad(
                f"contents[{i}]",
                "type.googleapis.com/google.ai.generativelanguage.v1beta.Content",
                content,
            )
        if "role" in content and not isinstance(content["role"], str):
            return _bad(f"contents[{i}].role", "TYPE_STRING", content["role"])
        parts = content.get("parts")
        if not isinstance(parts, list):
            return _bad(f"contents[{i}].parts", "TYPE_MESSAGE", parts)
        for j, part in enumerate(parts):
            if not isinstance(part, dict):
                return _bad(
                    f"contents[{i}].parts[{j}]",
                    "type.googleapis.com/google.ai.generativelanguage.v1beta.Part",
                    part,
                )
    return None


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


@check(SHAPE, "G7")
def valid_roles(body: Mapping[str, Any], ctx: Context) -> Iterator[Finding]:
    for i, content in enumerate(_contents(body)):
        if _role(content) not in {"user", "model"}:
            yield Finding("G7", (i,), {"index": i, "role": content.get("role")})


@check(SHAPE, "G1")
def call_turn_placement(body: Mapping[str, Any], ctx: Context) -> Iterator[Finding]:
    contents = _contents(body)
    for i, content in enumerate(contents):
        if not _calls(content):
            continue
        previous = contents[i - 1] if i > 0 else None
        if previous is None or _role(previous) != "user":
            yield Finding("G1", (i,), {"index": i})


@check(SHAPE, "G2")
def response_turn_placement(body: Mapping[str, Any], ctx: Context) -> Iterator[Finding]:
    contents = _contents(body)
    for i, content in enumerate(contents):
        if _responses(content) and (i == 0 or not _calls(contents[i - 1])):
            yield Finding("G2", (i,), {"index": i})


@check(SHAPE, "G3")
def response_count(body: Mapping[str, Any], ctx: Context) -> Iterator[Finding]:
    contents = _contents(body)
    for i in range(1, len(contents)):
        calls, responses = _calls(contents[i - 1]), _responses(contents[i])
        if calls and responses and len(calls) != len(responses):
            yield Finding("G3", (i,), {"index": i})


@check(SHAPE, "G4")
def alternation(body: Mapping[str, Any], ctx: Context) -> Iterator[Finding]:
    contents = _contents(body)
    for i in range(1, len(contents)):
        if _role(contents[i]) == _role(contents[i - 1]):
            yield Finding("G4", (i,), {"index": i})
            return


@check(SHAPE, "G5")
def ends_with_user(body: Mapping[str, Any], ctx: Context) -> Iterator[Finding]:
    contents = _contents(body)
    if contents and _role(contents[-1]) != "user":
        yield Finding("G5", (len(contents),), {})


@check(SHAPE, "G6")
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
