"""The contract every wire shape meets, one test for the five shapes (``shapes/base.py``).

Each shape is in the registry under its name, renders and parses back every session its
capabilities allow and every recorded request it is sent (equal in meaning to the provider),
and turns JSON nested deeper than the interpreter can walk into a ``ParseError`` at the
provider's own path. What only one shape does stays in its own
``test_shapes_*.py``. Expected paths are written by hand from each provider's API reference.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis_support import examples
from shape_support import (
    anthropic_meaning,
    assert_raises_at,
    assert_round_trips_in_meaning,
    bedrock_meaning,
    chat_meaning,
    gemini_meaning,
    needs_recordings,
    recorded_of_shape,
    recorded_requests,
    responses_meaning,
    split_refused,
)

from conformance.strategies import transcripts
from reference_impl.errors import ParseError
from reference_impl.shapes import (
    anthropic_messages,
    bedrock_converse,
    gemini,
    get_shape,
    openai_chat,
    openai_responses,
)
from reference_impl.shapes.base import ShapeAdapter
from reference_impl.transcript import Message, Transcript

# name -> the adapter its module declares, and the longest generated session its round trip
# tries (None: the strategy's own bound; 10 for the three shapes with a top-level system field,
# whose messages take longer to map).
SHAPES: list[tuple[str, ShapeAdapter, int | None]] = [
    ("openai-chat", openai_chat.ADAPTER, None),
    ("openai-responses", openai_responses.ADAPTER, None),
    ("anthropic-messages", anthropic_messages.ADAPTER, 10),
    ("gemini", gemini.ADAPTER, 10),
    ("bedrock-converse", bedrock_converse.ADAPTER, 10),
]
MODULES = [openai_chat, openai_responses, anthropic_messages, gemini, bedrock_converse]


@pytest.mark.parametrize(
    ("name", "module"),
    [(s[0], m) for s, m in zip(SHAPES, MODULES, strict=True)],
    ids=[s[0] for s in SHAPES],
)
def test_registry_returns_the_adapter_of_each_shape_module(name: str, module: Any) -> None:
    assert get_shape(name) is module.ADAPTER
    assert module.ADAPTER.name == name
    assert module.ADAPTER.capabilities is module.CAPABILITIES


@pytest.mark.parametrize(("name", "adapter", "max_messages"), SHAPES, ids=[s[0] for s in SHAPES])
@settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_round_trip_parse_render_over_generated_transcripts(
    name: str, adapter: ShapeAdapter, max_messages: int | None, data: st.DataObject
) -> None:
    bound = {} if max_messages is None else {"max_messages": max_messages}
    t = data.draw(transcripts(adapter.capabilities, **bound), label=name)
    parsed = adapter.parse_request(adapter.render_request(t))
    assert parsed == t
    # A parser makes the plain messages of a long conversation directly, with their ids: they
    # are the ids and digests the transcript gives the same messages made without ids
    fresh = Transcript(
        tuple(Message(m.role, m.parts, m.name, m.wire_id, m.empty_tool_calls) for m in parsed)
    )
    assert [m.id for m in parsed] == [m.id for m in fresh]
    assert [m.digest for m in parsed] == [m.digest for m in fresh]


# The shapes whose parser reads a plain message (a role and one text) directly, and the reader
# that says which ones are (Chat's reads them inline; test_shapes_openai_chat tests it).
PLAIN_READERS: list[tuple[str, Any, str]] = [
    ("openai-responses", openai_responses, "_plain_message"),
    ("anthropic-messages", anthropic_messages, "_plain_message"),
    ("gemini", gemini, "_plain_content"),
    ("bedrock-converse", bedrock_converse, "_plain_message"),
]


@pytest.mark.parametrize(
    ("name", "module", "reader"), PLAIN_READERS, ids=[r[0] for r in PLAIN_READERS]
)
@settings(max_examples=examples(100), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_plain_messages_parse_as_the_checked_walk_parses_them(
    name: str, module: Any, reader: str, data: st.DataObject
) -> None:
    adapter = get_shape(name)
    body = adapter.render_request(
        data.draw(transcripts(adapter.capabilities, max_messages=10), label=name)
    )
    direct = adapter.parse_request(body)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(module, reader, lambda _value: None)  # every message takes the walk
        walked = adapter.parse_request(body)
    assert direct == walked
    assert [m.id for m in direct] == [m.id for m in walked]


# Each shape's recorded requests, how many the provider accepted (counted with grep -c in the
# recordings: openai_chat 1 + 2 + 2 + 3 and the deepseek and openrouter chat gateways 3 + 3;
# openai_responses 1 + 3 + 1 + 2 and the deepseek responses gateway 1), the provider's answer to
# the ones it refused with the path where the shape refuses them too (A12, G7), and what a body
# means to the provider.
RECORDED: list[
    tuple[
        ShapeAdapter,
        Callable[[], list[Any]],
        int,
        tuple[str, str] | None,
        Callable[[Any], object],
    ]
] = [
    (openai_chat.ADAPTER, lambda: recorded_of_shape("openai-chat"), 14, None, chat_meaning),
    (
        openai_responses.ADAPTER,
        lambda: recorded_of_shape("openai-responses"),
        8,
        None,
        responses_meaning,
    ),
    (
        anthropic_messages.ADAPTER,
        lambda: recorded_requests("anthropic"),
        5,
        ("Input does not match", "messages.0"),
        anthropic_meaning,
    ),
    (
        gemini.ADAPTER,
        lambda: recorded_requests("gemini"),
        3,
        ("Please use a valid role", "contents[0].role"),
        gemini_meaning,
    ),
    (bedrock_converse.ADAPTER, lambda: recorded_requests("bedrock"), 3, None, bedrock_meaning),
]


@needs_recordings
@pytest.mark.recordings
@pytest.mark.parametrize(
    ("adapter", "recorded", "accepted", "refused", "meaning"),
    RECORDED,
    ids=[r[0].name for r in RECORDED],
)
def test_every_recorded_request_renders_back_equal_in_meaning(
    adapter: ShapeAdapter,
    recorded: Callable[[], list[Any]],
    accepted: int,
    refused: tuple[str, str] | None,
    meaning: Callable[[Any], object],
) -> None:
    interactions = recorded()
    if refused is not None:
        answer, where = refused
        rejected, interactions = split_refused(interactions, answer)
        assert [i.status for i in rejected] == [400]
        for interaction in rejected:  # the provider rejected it too
            assert_raises_at(ParseError, where, adapter.parse_request, interaction.request_body)
    assert len(interactions) == accepted
    assert_round_trips_in_meaning(adapter, interactions, meaning)


def _deep() -> dict[str, Any]:
    deep: dict[str, Any] = {}
    level = deep
    for _ in range(5000):
        level["a"] = {}
        level = level["a"]
    return deep


# A tool call whose arguments nest 5000 objects deep, in each shape that sends them as JSON
# objects (the OpenAI shapes send arguments as text), and where the provider reports it.
DEEP_CALLS: list[tuple[ShapeAdapter, Callable[[Any], dict[str, Any]], str]] = [
    (
        anthropic_messages.ADAPTER,
        lambda deep: {
            "messages": [
                {
                    "role": "assistant",
                    "content": [{"type": "tool_use", "id": "x", "name": "f", "input": deep}],
                }
            ]
        },
        "messages.0.content.0.input",
    ),
    (
        bedrock_converse.ADAPTER,
        lambda deep: {
            "messages": [
                {
                    "role": "assistant",
                    "content": [{"toolUse": {"toolUseId": "x", "name": "f", "input": deep}}],
                }
            ]
        },
        "messages.0.content.0.toolUse.input",
    ),
    (
        gemini.ADAPTER,
        lambda deep: {
            "contents": [
                {"role": "model", "parts": [{"functionCall": {"name": "f", "args": deep}}]}
            ]
        },
        "contents[0].parts[0].functionCall.args",
    ),
]


@pytest.mark.parametrize(
    ("adapter", "body", "where"), DEEP_CALLS, ids=[a.name for a, _, _ in DEEP_CALLS]
)
def test_json_nested_deeper_than_python_can_walk_is_a_parse_error(
    adapter: ShapeAdapter, body: Callable[[Any], dict[str, Any]], where: str
) -> None:
    with pytest.raises(ParseError) as info:
        adapter.parse_request(body(_deep()))
    assert info.value.where == where


@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf")])
def test_a_nan_in_data_kept_whole_is_named_where_it_is(value: float) -> None:
    # Reasoning items and unknown block members are kept as canonical JSON; a NaN in one was
    # refused with the encoder's "Out of range float values", which named neither it nor where.
    responses = {
        "model": "o3",
        "input": [
            {"role": "user", "content": "hi"},
            {"type": "reasoning", "id": "rs_1", "summary": [], "extra": {"scores": [1, value]}},
            {"role": "user", "content": "again"},
        ],
    }
    with pytest.raises(ParseError) as info:
        get_shape("openai-responses").parse_request(responses)
    assert info.value.where == "input[1]"
    name = "NaN" if value != value else ("Infinity" if value > 0 else "-Infinity")
    assert f"not JSON data: {name} at extra.scores.1 is not a JSON number" in str(info.value)
