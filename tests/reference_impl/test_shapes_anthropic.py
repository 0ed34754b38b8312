"""anthropic-messages: hand-written bodies, the public recordings, and hypothesis properties.

Expected values are written out by hand from the Messages API documentation (or computed with
``json.dumps(..., sort_keys=True)`` independently of the adapter), never copied from its output.
"""

from __future__ import annotations

import json
from typing import Any

import anthropic
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis_support import examples
from shape_support import (
    anthropic_meaning,
    assert_raises_at,
    assert_transcript_or_parse_error,
    needs_recordings,
    recorded_replies,
    recorded_requests,
    sorted_json,
    vocabulary_json,
)

from reference_impl import rings
from reference_impl.errors import ParseError, UnsupportedPartError
from reference_impl.shapes import ResponseMeta
from reference_impl.shapes.anthropic_messages import ADAPTER
from reference_impl.transcript import (
    FilePart,
    ImagePart,
    Message,
    ReasoningPart,
    SummaryPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    Transcript,
)

TOOL_LOOP: dict[str, Any] = {
    "model": "claude-sonnet-4-5",
    "max_tokens": 1024,
    "system": "You are terse.",
    "tools": [
        {
            "name": "get_weather",
            "description": "Weather for a city",
            "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}},
        }
    ],
    "messages": [
        {"role": "user", "content": "Weather in Paris?"},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Checking."},
                {
                    "type": "tool_use",
                    "id": "toolu_01",
                    "name": "get_weather",
                    "input": {"city": "Paris", "units": "C"},
                },
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_01", "content": "18C"},
                {"type": "text", "text": "and tomorrow?"},
            ],
        },
    ],
}


# ------------------------------------------------------------------------------- parse: basics


def test_tool_loop_maps_to_neutral_roles_and_parts() -> None:
    t = ADAPTER.parse_request(TOOL_LOOP)
    assert [m.role for m in t.messages] == ["system", "user", "assistant", "tool"]
    assert t.messages[0].parts == (TextPart("You are terse."),)
    call = t.messages[2].parts[1]
    assert call == ToolCallPart(
        id="toolu_01", name="get_weather", arguments='{"city":"Paris","units":"C"}'
    )
    # A3: results first, the trailing text stays in the same tool message.
    assert t.messages[3].parts == (
        ToolResultPart(call_id="toolu_01", content=(TextPart("18C"),)),
        TextPart("and tomorrow?"),
    )
    assert t.model == "claude-sonnet-4-5"
    assert t.param("max_tokens") == 1024
    assert t.tools[0].name == "get_weather"
    assert json.loads(t.tools[0].parameters) == TOOL_LOOP["tools"][0]["input_schema"]


def test_render_puts_leading_system_on_top_and_tool_message_as_user() -> None:
    body = ADAPTER.render_request(ADAPTER.parse_request(TOOL_LOOP))
    assert body["system"] == "You are terse."
    assert [m["role"] for m in body["messages"]] == ["user", "assistant", "user"]
    assert body["messages"][1]["content"][1] == TOOL_LOOP["messages"][1]["content"][1]
    assert body["messages"][2]["content"] == [
        {
            "type": "tool_result",
            "tool_use_id": "toolu_01",
            "content": [{"type": "text", "text": "18C"}],
        },
        {"type": "text", "text": "and tomorrow?"},
    ]
    assert body["max_tokens"] == 1024
    assert body["tools"] == TOOL_LOOP["tools"]


def test_text_before_tool_result_keeps_wire_order_for_a3() -> None:
    body = {
        "messages": [
            {"role": "user", "content": "go"},
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "t1", "name": "f", "input": {}}],
            },
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "here you go"},
                    {"type": "tool_result", "tool_use_id": "t1", "content": "ok"},
                ],
            },
        ]
    }
    t = ADAPTER.parse_request(body)
    assert t.messages[2].role == "tool"
    assert [p.kind for p in t.messages[2].parts] == ["text", "tool_result"]
    assert [v.kind for v in rings.validate(t)] == ["text_before_results"]
    assert ADAPTER.render_request(t)["messages"][2]["content"][0] == {
        "type": "text",
        "text": "here you go",
    }


def test_results_split_over_two_user_messages_stay_two_messages_a4() -> None:
    body = {
        "messages": [
            {"role": "user", "content": "go"},
            {
                "role": "assistant",
                "content": [
                    {"type": "tool_use", "id": "a", "name": "f", "input": {}},
                    {"type": "tool_use", "id": "b", "name": "f", "input": {}},
                ],
            },
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a"}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "b"}]},
        ]
    }
    t = ADAPTER.parse_request(body)
    assert [m.role for m in t.messages] == ["user", "assistant", "tool", "tool"]
    assert t.messages[2].parts == (ToolResultPart(call_id="a", content=()),)
    assert [v.kind for v in rings.validate(t)] == ["results_split"]
    assert len(ADAPTER.render_request(t)["messages"]) == 4


def test_thinking_blocks_are_byte_exact_artifacts_in_place_a15() -> None:
    thinking = {
        "type": "thinking",
        "thinking": "Let me think… \u00e9",
        "signature": "EqQBCkYIARgC+/==",
    }
    redacted = {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix/LafPsn4a"}
    call = {"type": "tool_use", "id": "toolu_9", "name": "f", "input": {"b": 1, "a": [1, 2]}}
    body = {
        "thinking": {"type": "enabled", "budget_tokens": 2048},
        "messages": [
            {"role": "user", "content": "q"},
            {"role": "assistant", "content": [thinking, redacted, call]},
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "toolu_9", "content": "r"}],
            },
        ],
    }
    t = ADAPTER.parse_request(body)
    assert t.messages[1].parts[:2] == (
        ReasoningPart("anthropic-messages", sorted_json(thinking)),
        ReasoningPart("anthropic-messages", sorted_json(redacted)),
    )
    rendered = ADAPTER.render_request(t)
    assert rendered["messages"][1]["content"] == [thinking, redacted, call]
    assert rendered["thinking"] == {"type": "enabled", "budget_tokens": 2048}


def test_mid_conversation_system_stays_in_messages_a10a() -> None:
    body = {
        "system": [{"type": "text", "text": "top"}],
        "messages": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": "hello"},
            {"role": "system", "content": "Budget is low; be brief."},
            {"role": "user", "content": "more"},
        ],
    }
    t = ADAPTER.parse_request(body)
    assert [m.role for m in t.messages] == ["system", "user", "assistant", "system", "user"]
    rendered = ADAPTER.render_request(t)
    assert rendered["system"] == "top"
    assert rendered["messages"][2] == {
        "role": "system",
        "content": [{"type": "text", "text": "Budget is low; be brief."}],
    }


def test_developer_becomes_top_level_system_text() -> None:
    t = Transcript(
        (
            Message("system", (TextPart("policy"),)),
            Message("developer", (TextPart("style"),)),
            Message("user", (TextPart("hi"),)),
        )
    )
    body = ADAPTER.render_request(t)
    assert body["system"] == [{"type": "text", "text": "policy"}, {"type": "text", "text": "style"}]
    assert body["messages"] == [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]


def test_attachments_and_error_results() -> None:
    body = {
        "messages": [
            {
                "role": "user",
                "content": [
                    {
                        "type": "image",
                        "source": {"type": "base64", "media_type": "image/png", "data": "iVBO"},
                    },
                    {"type": "image", "source": {"type": "url", "url": "https://x.test/a.png"}},
                    {
                        "type": "document",
                        "title": "spec.pdf",
                        "source": {
                            "type": "base64",
                            "media_type": "application/pdf",
                            "data": "JVBE",
                        },
                    },
                    {"type": "document", "source": {"type": "file", "file_id": "file_01"}},
                ],
            },
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "t", "name": "f", "input": {}}],
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "t",
                        "is_error": True,
                        "content": [
                            {"type": "text", "text": "boom"},
                            {
                                "type": "image",
                                "source": {"type": "url", "url": "https://x.test/e.png"},
                            },
                        ],
                    }
                ],
            },
        ]
    }
    t = ADAPTER.parse_request(body)
    assert t.messages[0].parts == (
        ImagePart("base64", "iVBO", "image/png"),
        ImagePart("url", "https://x.test/a.png"),
        FilePart("base64", "JVBE", "application/pdf", filename="spec.pdf"),
        FilePart("file_id", "file_01"),
    )
    result = t.messages[2].parts[0]
    assert isinstance(result, ToolResultPart)
    assert result.is_error
    assert result.content == (TextPart("boom"), ImagePart("url", "https://x.test/e.png"))
    assert ADAPTER.render_request(t)["messages"] == body["messages"]


def test_summary_text_in_user_messages_is_a_summary_part() -> None:
    wire = SummaryPart("goal: deploy").wire_text()
    t = ADAPTER.parse_request({"messages": [{"role": "user", "content": wire}]})
    assert t.messages[0].parts == (SummaryPart("goal: deploy"),)
    assert ADAPTER.render_request(t)["messages"][0]["content"][0]["text"] == wire


# --------------------------------------------------------------------------- extras (kept)


CACHED: dict[str, Any] = {
    "system": [
        {"type": "text", "text": "stable prefix", "cache_control": {"type": "ephemeral"}},
    ],
    "tools": [
        {
            "name": "f",
            "input_schema": {"type": "object"},
            "cache_control": {"type": "ephemeral", "ttl": "1h"},
        },
        {"type": "web_search_20250305", "name": "web_search", "max_uses": 3},
    ],
    "messages": [
        {"role": "user", "content": "old question"},
        {"role": "assistant", "content": "old answer"},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "new", "cache_control": {"type": "ephemeral"}},
            ],
        },
        {
            "role": "assistant",
            "content": [
                {
                    "type": "server_tool_use",
                    "id": "srvtoolu_1",
                    "name": "web_search",
                    "input": {"query": "x"},
                },
                {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": []},
                {
                    "type": "text",
                    "text": "found",
                    "citations": [{"type": "web_search_result_location", "url": "https://x.test"}],
                },
            ],
        },
    ],
}


def test_cache_control_server_tools_and_citations_are_kept_in_place() -> None:
    t = ADAPTER.parse_request(CACHED)
    assert t.messages[4].parts == (TextPart("found"),)  # server blocks have no neutral part...
    assert anthropic_meaning(ADAPTER.render_request(t)) == anthropic_meaning(
        CACHED
    )  # ...but nothing is lost


def test_extras_follow_their_message_when_older_messages_are_dropped() -> None:
    t = ADAPTER.parse_request(CACHED)
    trimmed = t.with_messages((t.messages[0], *t.messages[3:]))
    body = ADAPTER.render_request(trimmed)
    assert body["system"] == CACHED["system"]
    assert body["messages"] == CACHED["messages"][2:]


def test_tool_reference_inside_a_tool_result_is_kept() -> None:
    body = {
        "messages": [
            {"role": "user", "content": "q"},
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "s1", "name": "search_tools", "input": {}}],
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "s1",
                        "content": [
                            {"type": "text", "text": "see"},
                            {"type": "tool_reference", "tool_name": "get_rate"},
                        ],
                    }
                ],
            },
        ]
    }
    t = ADAPTER.parse_request(body)
    result = t.messages[2].parts[0]
    assert isinstance(result, ToolResultPart)
    assert result.content == (TextPart("see"),)
    assert anthropic_meaning(ADAPTER.render_request(t)) == anthropic_meaning(body)


# ------------------------------------------------------------------------------ parse errors

BAD_BODIES: list[tuple[object, str]] = [
    ([], "$"),
    ({}, "messages"),
    ({"messages": ["Invalid content"]}, "messages.0"),  # A12, as recorded
    ({"messages": [{"role": "robot", "content": "x"}]}, "messages.0.role"),
    (
        {"messages": [{"role": "user", "content": [{"type": "txt", "text": "x"}]}]},
        "messages.0.content.0.type",
    ),
    ({"messages": [{"role": "user", "content": [{"type": "text"}]}]}, "messages.0.content.0.text"),
    (
        {
            "messages": [
                {
                    "role": "user",
                    "content": [{"type": "tool_use", "id": "a", "name": "f", "input": {}}],
                }
            ]
        },
        "messages.0.content.0.type",
    ),
    (
        {
            "messages": [
                {
                    "role": "assistant",
                    "content": [{"type": "tool_use", "id": "a", "name": "f", "input": [1]}],
                }
            ]
        },
        "messages.0.content.0.input",
    ),
    (
        {
            "messages": [
                {"role": "assistant", "content": [{"type": "tool_result", "tool_use_id": "a"}]}
            ]
        },
        "messages.0.content.0.type",
    ),
    (
        {"messages": [{"role": "user", "content": [{"type": "tool_result"}]}]},
        "messages.0.content.0.tool_use_id",
    ),
    (
        {
            "messages": [
                {
                    "role": "user",
                    "content": [{"type": "tool_result", "tool_use_id": "a", "is_error": "yes"}],
                }
            ]
        },
        "messages.0.content.0.is_error",
    ),
    (
        {
            "messages": [
                {
                    "role": "user",
                    "content": [{"type": "image", "source": {"type": "text", "data": "x"}}],
                }
            ]
        },
        "messages.0.content.0.source.type",
    ),
    (
        {"messages": [{"role": "assistant", "content": [{"type": "thinking", "signature": "s"}]}]},
        "messages.0.content.0.thinking",
    ),
    ({"system": [{"type": "image", "source": {}}], "messages": []}, "system.0.type"),
    ({"messages": [], "tools": [{"name": "f"}]}, "tools.0.input_schema"),
    ({"messages": [], "tools": {"name": "f"}}, "tools"),
]


@pytest.mark.parametrize(("body", "where"), BAD_BODIES)
def test_malformed_bodies_raise_parse_error_with_anthropic_paths(body: object, where: str) -> None:
    assert_raises_at(ParseError, where, ADAPTER.parse_request, body)


# ----------------------------------------------------------------------- unsupported parts


def _with_assistant(*parts: Any, name: str | None = None) -> Transcript:
    return Transcript(
        (Message("user", (TextPart("q"),)), Message("assistant", tuple(parts), name=name))
    )


@pytest.mark.parametrize(
    ("transcript", "where"),
    [
        (
            _with_assistant(ReasoningPart("openai-responses", '{"type":"reasoning","id":"rs_1"}')),
            "messages[1].parts[0]",
        ),
        (
            _with_assistant(TextPart("a"), ReasoningPart("gemini", '{"thoughtSignature":"x"}')),
            "messages[1].parts[1]",
        ),
        (_with_assistant(ToolCallPart("c", "f", "[1, 2]")), "messages[1].parts[0]"),
        (_with_assistant(ToolCallPart("c", "f", "{not json")), "messages[1].parts[0]"),
        (_with_assistant(ImagePart("base64", "iVBO")), "messages[1].parts[0]"),
        (_with_assistant(TextPart("a"), name="bob"), "messages[1]"),
    ],
)
def test_parts_anthropic_cannot_carry_raise_unsupported(transcript: Transcript, where: str) -> None:
    assert_raises_at(UnsupportedPartError, where, ADAPTER.render_request, transcript)


# --------------------------------------------------------------------------------- responses


def test_rendered_response_validates_with_the_anthropic_sdk_and_round_trips() -> None:
    message = Message(
        "assistant",
        (
            ReasoningPart(
                "anthropic-messages",
                sorted_json({"type": "thinking", "thinking": "t", "signature": "sig"}),
            ),
            TextPart("Calling."),
            ToolCallPart("toolu_1", "get_weather", '{"city":"Oslo"}'),
        ),
    )
    body = ADAPTER.render_response(
        message,
        ResponseMeta(model="claude-x", response_id="msg_1", input_tokens=10, output_tokens=5),
    )
    sdk = anthropic.types.Message.model_validate(body)
    assert sdk.stop_reason == "tool_use"
    assert [b.type for b in sdk.content] == ["thinking", "text", "tool_use"]
    assert sdk.usage.input_tokens == 10
    assert ADAPTER.parse_response(body) == message


def test_parse_response_rejects_what_a_message_cannot_keep() -> None:
    body = {
        "type": "message",
        "role": "assistant",
        "content": [{"type": "server_tool_use", "id": "s", "name": "web_search", "input": {}}],
    }
    with pytest.raises(ParseError) as info:
        ADAPTER.parse_response(body)
    assert info.value.where == "content.0"
    with pytest.raises(ParseError):
        ADAPTER.parse_response({"type": "error", "error": {"type": "invalid_request_error"}})


# -------------------------------------------------------------------------------- recordings


@needs_recordings
@pytest.mark.recordings
def test_every_recorded_response_parses_and_the_sdk_accepts_our_rendering() -> None:
    replies = recorded_replies(recorded_requests("anthropic"), "content")
    for response in replies:
        message = ADAPTER.parse_response(response)
        recorded_ids = [b["id"] for b in response["content"] if b["type"] == "tool_use"]
        assert [c.id for c in message.tool_calls] == recorded_ids
        meta = ResponseMeta(model=response["model"], response_id=response["id"])
        rendered = ADAPTER.render_response(message, meta)
        anthropic.types.Message.model_validate(rendered)
        assert rendered["content"] == response["content"]
    assert len(replies) >= 3


# -------------------------------------------------------------------------------- hypothesis


_json = vocabulary_json(
    [
        "role",
        "content",
        "type",
        "text",
        "messages",
        "system",
        "tools",
        "id",
        "name",
        "input",
        "tool_use_id",
        "is_error",
        "source",
        "data",
        "media_type",
        "thinking",
        "signature",
        "input_schema",
        "user",
        "assistant",
        "tool_use",
        "tool_result",
        "image",
        "document",
    ],
    floats=True,
)


@settings(max_examples=examples(300), deadline=None)
@given(
    st.one_of(
        _json,
        st.fixed_dictionaries(
            {"messages": st.lists(_json, max_size=4)}, optional={"system": _json, "tools": _json}
        ),
    )
)
def test_arbitrary_json_gives_a_transcript_or_a_parse_error(body: Any) -> None:
    assert_transcript_or_parse_error(ADAPTER, body)


# The request-shaped bodies above rarely get past a response's first checks (role, type):
# these reach the content-block parser of parse_response with the shape's own block types.
_block = st.fixed_dictionaries(
    {"type": st.sampled_from(["text", "tool_use", "thinking", "redacted_thinking", "image", "x"])},
    optional=dict.fromkeys(("text", "id", "name", "input", "thinking", "signature", "data"), _json),
)


@settings(max_examples=examples(300), deadline=None)
@given(
    st.fixed_dictionaries(
        {"role": st.just("assistant"), "content": st.lists(_block | _json)},
        optional={"type": st.just("message"), "stop_reason": _json},
    )
)
def test_arbitrary_response_content_gives_a_message_or_a_parse_error(body: Any) -> None:
    assert_transcript_or_parse_error(ADAPTER, body)
