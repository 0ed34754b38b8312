"""Wrong JSON types of known fields get the provider's body-shape 400 (C0, R0, A12/A12a, G0, B0).

A valid body per shape, written by hand, is accepted; changing the JSON type of any one of its
leaves (a string to a number, a number to an object ...) must be rejected by that shape's
wrong-type rule, never accepted and never judged by a later rule. Values whose contents are
free-form (tool arguments, JSON schemas, Gemini structs) are not mutated. Where a provider accepts
two types for one field (content as a string or a list of parts, proto3 numbers as strings), the
union tests below show both are accepted.
"""

from __future__ import annotations

import copy
import re
import string
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis_support import examples

from conformance.providers.validation import validate_request

WRONG_TYPE_RULES = {
    "openai-chat": {"C0"},
    "openai-responses": {"R0"},
    "anthropic-messages": {"A12", "A12a"},
    "gemini": {"G0"},
    "bedrock-converse": {"B0"},
}

VALID: dict[str, dict[str, Any]] = {
    "openai-chat": {
        "model": "gpt-4o",
        "temperature": 0.5,
        "max_tokens": 64,
        "parallel_tool_calls": True,
        "stop": ["END"],
        "tool_choice": "auto",
        "tools": [
            {
                "type": "function",
                "function": {
                    "name": "get_weather",
                    "description": "Weather for a city",
                    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
                },
            }
        ],
        "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": [{"type": "text", "text": "Weather in Lyon?"}]},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": '{"city":"Lyon"}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "call_1", "content": "16C"},
            {"role": "user", "name": "jane", "content": "Thanks"},
        ],
    },
    "openai-responses": {
        "model": "gpt-4o",
        "instructions": "Be brief.",
        "max_output_tokens": 64,
        "temperature": 0.5,
        "store": False,
        "tools": [
            {
                "type": "function",
                "name": "get_weather",
                "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
            }
        ],
        "input": [
            {"role": "user", "content": [{"type": "input_text", "text": "Weather in Lyon?"}]},
            {
                "type": "function_call",
                "call_id": "call_1",
                "name": "get_weather",
                "arguments": '{"city":"Lyon"}',
            },
            {"type": "function_call_output", "call_id": "call_1", "output": "16C"},
            {"role": "user", "content": "Thanks"},
        ],
    },
    "anthropic-messages": {
        "model": "claude-sonnet-4-5",
        "max_tokens": 64,
        "temperature": 0.5,
        "system": [{"type": "text", "text": "Be brief."}],
        "tools": [
            {
                "name": "get_weather",
                "description": "Weather for a city",
                "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}},
            }
        ],
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "Weather in Lyon?"}]},
            {
                "role": "assistant",
                "content": [
                    {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"a": 1}}
                ],
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "toolu_1",
                        "is_error": False,
                        "content": [{"type": "text", "text": "16C"}],
                    },
                    {"type": "text", "text": "Thanks"},
                ],
            },
        ],
    },
    "gemini": {
        "systemInstruction": {"parts": [{"text": "Be brief."}]},
        "generationConfig": {"temperature": 0.5, "maxOutputTokens": 64},
        "tools": [
            {
                "functionDeclarations": [
                    {
                        "name": "get_weather",
                        "description": "Weather for a city",
                        "parameters": {"type": "OBJECT", "properties": {"c": {"type": "STRING"}}},
                    }
                ]
            }
        ],
        "contents": [
            {"role": "user", "parts": [{"text": "Weather in Lyon?"}]},
            {
                "role": "model",
                "parts": [
                    {
                        "functionCall": {"name": "get_weather", "args": {"city": "Lyon"}},
                        "thoughtSignature": "c2ln",
                    }
                ],
            },
            {
                "role": "user",
                "parts": [{"functionResponse": {"name": "get_weather", "response": {"t": 16}}}],
            },
        ],
    },
    "bedrock-converse": {
        "system": [{"text": "Be brief."}],
        "inferenceConfig": {"maxTokens": 64, "temperature": 0.5},
        "toolConfig": {
            "tools": [
                {
                    "toolSpec": {
                        "name": "get_weather",
                        "description": "Weather for a city",
                        "inputSchema": {"json": {"type": "object"}},
                    }
                }
            ]
        },
        "messages": [
            {"role": "user", "content": [{"text": "Weather in Lyon?"}]},
            {
                "role": "assistant",
                "content": [
                    {"toolUse": {"toolUseId": "tu_1", "name": "get_weather", "input": {"a": 1}}}
                ],
            },
            {
                "role": "user",
                "content": [{"toolResult": {"toolUseId": "tu_1", "content": [{"text": "16C"}]}}],
            },
        ],
    },
}

# Values whose contents the provider does not type (arguments, schemas, structs): not mutated.
FREE_FORM: dict[str, re.Pattern[str]] = {
    "openai-chat": re.compile(r"^tools\.\d+\.function\.parameters\."),
    "openai-responses": re.compile(r"^tools\.\d+\.parameters\."),
    "anthropic-messages": re.compile(r"\.input\.|^tools\.\d+\.input_schema\."),
    "gemini": re.compile(r"\.args\.|\.response\.|\.parameters\."),
    "bedrock-converse": re.compile(r"\.input\.|\.inputSchema\.json\."),
}

Path = tuple[str | int, ...]


def _leaves(value: Any, path: Path = ()) -> Iterator[tuple[Path, Any]]:
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _leaves(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _leaves(item, (*path, index))
    elif value is not None:  # null is "not given" for the optional fields that take it
        yield path, value


def _dotted(path: Path) -> str:
    return ".".join(str(step) for step in path)


LEAVES = [
    (shape, path, value)
    for shape, body in VALID.items()
    for path, value in _leaves(body)
    if not FREE_FORM[shape].search(_dotted(path) + ".")
]


def _replaced(body: dict[str, Any], path: Path, value: Any) -> dict[str, Any]:
    out = copy.deepcopy(body)
    target: Any = out
    for step in path[:-1]:
        target = target[step]
    target[path[-1]] = value
    return out


WORDS = st.text(alphabet=string.ascii_letters + " _", max_size=6)  # never a number as text
INTEGERS = st.integers(min_value=-(2**31), max_value=2**31)
FRACTIONS = st.floats(allow_nan=False, allow_infinity=False).filter(lambda f: not f.is_integer())
OBJECTS = st.dictionaries(WORDS, INTEGERS | WORDS, max_size=2)
LISTS = st.lists(INTEGERS | WORDS | st.booleans(), min_size=1, max_size=2)


def _other_type(value: Any) -> st.SearchStrategy[Any]:
    """Values of a JSON type the leaf's field does not take (an integer is a valid decimal)."""
    if isinstance(value, bool):
        return INTEGERS | WORDS | OBJECTS | LISTS
    if isinstance(value, int):
        return FRACTIONS | WORDS | st.booleans() | OBJECTS | LISTS
    if isinstance(value, float):
        return WORDS | st.booleans() | OBJECTS | LISTS
    return INTEGERS | FRACTIONS | st.booleans() | OBJECTS | LISTS


@pytest.mark.parametrize("shape", sorted(VALID))
def test_the_valid_bodies_are_accepted(shape: str) -> None:
    verdict = validate_request(VALID[shape], shape)
    assert verdict.accepted, verdict


def test_every_shape_has_leaves_to_mutate() -> None:
    assert {shape for shape, _, _ in LEAVES} == set(VALID)


@st.composite
def _mutation(draw: st.DrawFn) -> tuple[str, Path, Any]:
    shape, path, value = draw(st.sampled_from(LEAVES))
    return shape, path, draw(_other_type(value))


@settings(max_examples=examples(300), deadline=None)
@given(mutation=_mutation())
def test_one_leaf_of_another_type_is_rejected_by_the_wrong_type_rule(
    mutation: tuple[str, Path, Any],
) -> None:
    shape, path, value = mutation
    verdict = validate_request(_replaced(VALID[shape], path, value), shape)
    assert not verdict.accepted, (path, value)
    assert verdict.status == 400
    assert verdict.rule in WRONG_TYPE_RULES[shape], (path, value, verdict.rule)


def test_every_leaf_once_with_each_other_kind() -> None:
    """The exhaustive companion of the property: each leaf, one value of every refused kind."""
    samples: list[Any] = [7, 2.5, True, "text", {"k": 1}, [1]]
    for shape, path, original in LEAVES:
        for value in samples:
            same_kind = type(value) is type(original) or (
                isinstance(original, float) and type(value) is int
            )
            if same_kind:
                continue
            verdict = validate_request(_replaced(VALID[shape], path, value), shape)
            assert verdict.rule in WRONG_TYPE_RULES[shape], (shape, path, value, verdict)


# Fields a provider takes in two types: replacing one with the other stays accepted.
UNIONS = [
    ("openai-chat", ("messages", 0, "content"), [{"type": "text", "text": "Be brief."}]),
    ("openai-chat", ("messages", 1, "content"), "Weather in Lyon?"),
    ("openai-chat", ("stop",), "END"),
    ("openai-chat", ("tool_choice",), {"type": "function", "function": {"name": "get_weather"}}),
    ("openai-chat", ("max_tokens",), None),  # optional parameters are nullable
    ("openai-chat", ("temperature",), 1),  # an integer is a valid decimal
    ("openai-responses", ("input", 3, "content"), [{"type": "input_text", "text": "Thanks"}]),
    ("openai-responses", ("input",), "Weather in Lyon?"),
    ("anthropic-messages", ("system",), "Be brief."),
    ("anthropic-messages", ("messages", 0, "content"), "Weather in Lyon?"),
    ("anthropic-messages", ("messages", 2, "content", 0, "content"), "16C"),
    ("anthropic-messages", ("max_tokens",), 64.0),  # an integral decimal reads as an integer
    ("gemini", ("generationConfig", "maxOutputTokens"), "64"),  # proto3 JSON: numbers as text
    ("gemini", ("generationConfig", "temperature"), "0.5"),
    ("bedrock-converse", ("messages", 1, "content", 0, "toolUse", "input"), "any JSON"),
]


@pytest.mark.parametrize(("shape", "path", "value"), UNIONS, ids=lambda v: str(v)[:30])
def test_both_types_of_a_union_field_are_accepted(shape: str, path: Path, value: Any) -> None:
    verdict = validate_request(_replaced(VALID[shape], path, value), shape)
    assert verdict.accepted, verdict


def test_gemini_takes_camel_and_snake_case_and_names_fields_in_snake_case() -> None:
    body = _replaced(VALID["gemini"], ("generationConfig",), {"max_output_tokens": 64})
    assert validate_request(body, "gemini").accepted
    body = _replaced(VALID["gemini"], ("generationConfig",), {"thinkingConfig": 5})
    verdict = validate_request(body, "gemini")
    assert verdict.error is not None
    assert verdict.error["error"]["message"].startswith(
        "Invalid value at 'generation_config.thinking_config' "
        "(type.googleapis.com/google.ai.generativelanguage.v1beta.ThinkingConfig), 5"
    )


def test_unknown_keys_are_never_judged() -> None:
    for shape, body in VALID.items():
        extra = {**body, "x_vendor_field": {"anything": [1, "two", None]}, "seed_text": 5}
        assert validate_request(extra, shape).accepted, shape


def test_gateway_dialects_share_the_wrong_type_rule() -> None:
    body = _replaced(VALID["openai-chat"], ("model",), 5)
    for dialect in ("mistral", "ollama", "llamacpp", "deepseek"):
        verdict = validate_request(body, "openai-chat", dialect=dialect)
        assert verdict.rule == "C0", dialect
