"""bedrock-converse: hand-written Converse bodies, the public recordings, hypothesis properties.

Expected values are written by hand from the Converse API reference (Message, ContentBlock,
ToolUseBlock, ToolResultBlock, ReasoningContentBlock, ToolConfiguration), never copied from the
adapter's output.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis_support import examples
from shape_support import (
    after_question,
    assert_raises_at,
    assert_transcript_or_parse_error,
    needs_recordings,
    recorded_replies,
    recorded_requests,
    vocabulary_json,
)

from reference_impl.errors import ParseError, UnsupportedPartError
from reference_impl.shapes import ResponseMeta
from reference_impl.shapes.bedrock_converse import ADAPTER
from reference_impl.transcript import (
    FilePart,
    ImagePart,
    Message,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    Transcript,
)

REASONING = {"reasoningContent": {"reasoningText": {"text": "Think…", "signature": "c2ln+/=="}}}
REDACTED = {"reasoningContent": {"redactedContent": "cmVkYWN0ZWQ="}}

LOOP: dict[str, Any] = {
    "system": [{"text": "You are terse."}, {"cachePoint": {"type": "default"}}],
    "inferenceConfig": {"maxTokens": 512, "temperature": 0.2},
    "toolConfig": {
        "tools": [
            {
                "toolSpec": {
                    "name": "get_weather",
                    "description": "Weather for a city",
                    "inputSchema": {
                        "json": {"type": "object", "properties": {"city": {"type": "string"}}}
                    },
                }
            },
            {"cachePoint": {"type": "default"}},
        ],
        "toolChoice": {"auto": {}},
    },
    "messages": [
        {"role": "user", "content": [{"text": "Weather in Oslo and Rome?"}]},
        {
            "role": "assistant",
            "content": [
                REASONING,
                {
                    "toolUse": {
                        "toolUseId": "tooluse_a",
                        "name": "get_weather",
                        "input": {"city": "Oslo"},
                    }
                },
                {
                    "toolUse": {
                        "toolUseId": "tooluse_b",
                        "name": "get_weather",
                        "input": {"city": "Rome"},
                    }
                },
            ],
        },
        {
            "role": "user",
            "content": [
                {"toolResult": {"toolUseId": "tooluse_a", "content": [{"json": {"temp": 3}}]}},
                {
                    "toolResult": {
                        "toolUseId": "tooluse_b",
                        "content": [{"text": "no data"}],
                        "status": "error",
                    }
                },
            ],
        },
    ],
}


def test_tool_loop_maps_to_neutral_roles_and_parts() -> None:
    t = ADAPTER.parse_request(LOOP)
    assert [m.role for m in t.messages] == ["system", "user", "assistant", "tool"]
    assert t.messages[0].parts == (TextPart("You are terse."),)
    assert t.messages[2].parts == (
        ReasoningPart(
            "bedrock-converse",
            json.dumps(REASONING, sort_keys=True, separators=(",", ":"), ensure_ascii=False),
        ),
        ToolCallPart("tooluse_a", "get_weather", '{"city":"Oslo"}'),
        ToolCallPart("tooluse_b", "get_weather", '{"city":"Rome"}'),
    )
    assert t.messages[3].parts == (
        ToolResultPart("tooluse_a", (TextPart('{"temp":3}'),)),
        ToolResultPart("tooluse_b", (TextPart("no data"),), is_error=True),
    )
    assert t.param("inferenceConfig") == {"maxTokens": 512, "temperature": 0.2}
    assert t.param("toolConfig") == {"toolChoice": {"auto": {}}}
    assert [tool.name for tool in t.tools] == ["get_weather"]


def test_render_gives_the_same_body_back() -> None:
    assert ADAPTER.render_request(ADAPTER.parse_request(LOOP)) == LOOP


def test_text_before_results_and_split_results_stay_visible_b2() -> None:
    body = copy.deepcopy(LOOP)
    first, second = body["messages"][2]["content"]
    body["messages"][2]["content"] = [{"text": "here"}, first]
    body["messages"].append({"role": "user", "content": [second]})
    t = ADAPTER.parse_request(body)
    assert [m.role for m in t.messages] == ["system", "user", "assistant", "tool", "tool"]
    assert [p.kind for p in t.messages[3].parts] == ["text", "tool_result"]
    assert ADAPTER.render_request(t)["messages"] == body["messages"]


def test_media_blocks_map_both_ways() -> None:
    body = {
        "messages": [
            {
                "role": "user",
                "content": [
                    {"image": {"format": "png", "source": {"bytes": "iVBO"}}},
                    {
                        "image": {
                            "format": "jpeg",
                            "source": {"s3Location": {"uri": "s3://b/a.jpg", "bucketOwner": "123"}},
                        }
                    },
                    {"document": {"format": "pdf", "name": "spec", "source": {"bytes": "JVBE"}}},
                    {"document": {"format": "txt", "name": "notes", "source": {"text": "plain"}}},
                    {"video": {"format": "mp4", "source": {"s3Location": {"uri": "s3://b/v.mp4"}}}},
                ],
            }
        ]
    }
    t = ADAPTER.parse_request(body)
    assert t.messages[0].parts == (
        ImagePart("base64", "iVBO", "image/png"),
        ImagePart("url", "s3://b/a.jpg", "image/jpeg"),
        FilePart("base64", "JVBE", "application/pdf", filename="spec"),
    )
    assert ADAPTER.render_request(t) == body  # text-source document, video, bucketOwner kept


def test_redacted_reasoning_and_response_round_trip() -> None:
    message = Message(
        "assistant",
        (
            ReasoningPart("bedrock-converse", json.dumps(REDACTED, separators=(",", ":"))),
            TextPart("hi"),
        ),
    )
    body = ADAPTER.render_response(
        message, ResponseMeta(model="m", input_tokens=2, output_tokens=3)
    )
    assert body["output"]["message"]["content"] == [REDACTED, {"text": "hi"}]
    assert body["stopReason"] == "end_turn"
    assert body["usage"] == {"inputTokens": 2, "outputTokens": 3, "totalTokens": 5}
    assert ADAPTER.parse_response(body) == message


# ------------------------------------------------------------------------------ parse errors

BAD_BODIES: list[tuple[object, str]] = [
    (None, "$"),
    ({"messages": {}}, "messages"),
    ({"messages": [{"role": "system", "content": []}]}, "messages.0.role"),
    ({"messages": [{"role": "user"}]}, "messages.0.content"),
    ({"messages": [{"role": "user", "content": [{}]}]}, "messages.0.content.0"),
    (
        {"messages": [{"role": "user", "content": [{"text": "a", "image": {}}]}]},
        "messages.0.content.0",
    ),
    ({"messages": [{"role": "user", "content": [{"txt": "a"}]}]}, "messages.0.content.0.txt"),
    (
        {
            "messages": [
                {
                    "role": "user",
                    "content": [{"toolUse": {"toolUseId": "a", "name": "f", "input": {}}}],
                }
            ]
        },
        "messages.0.content.0.toolUse",
    ),
    (
        {
            "messages": [
                {
                    "role": "assistant",
                    "content": [{"toolResult": {"toolUseId": "a", "content": []}}],
                }
            ]
        },
        "messages.0.content.0.toolResult",
    ),
    (
        {"messages": [{"role": "user", "content": [{"toolResult": {"content": []}}]}]},
        "messages.0.content.0.toolResult.toolUseId",
    ),
    (
        {
            "messages": [
                {
                    "role": "user",
                    "content": [
                        {"toolResult": {"toolUseId": "a", "content": [], "status": "failed"}}
                    ],
                }
            ]
        },
        "messages.0.content.0.toolResult.status",
    ),
    (
        {
            "messages": [
                {
                    "role": "user",
                    "content": [{"toolResult": {"toolUseId": "a", "content": [{"xml": "<a/>"}]}}],
                }
            ]
        },
        "messages.0.content.0.toolResult.content.0.xml",
    ),
    (
        {
            "messages": [
                {
                    "role": "user",
                    "content": [{"image": {"format": "bmp", "source": {"bytes": "x"}}}],
                }
            ]
        },
        "messages.0.content.0.image.format",
    ),
    ({"messages": [], "system": [{"image": {}}]}, "system.0.image"),
    (
        {"messages": [], "toolConfig": {"tools": [{"toolSpec": {"name": "f"}}]}},
        "toolConfig.tools.0.toolSpec.inputSchema",
    ),
]


@pytest.mark.parametrize(("body", "where"), BAD_BODIES)
def test_malformed_bodies_raise_parse_error_with_bedrock_paths(body: object, where: str) -> None:
    assert_raises_at(ParseError, where, ADAPTER.parse_request, body)


# ----------------------------------------------------------------------- unsupported parts


@pytest.mark.parametrize(
    ("transcript", "where"),
    [
        (
            after_question(
                Message("assistant", (ReasoningPart("anthropic-messages", '{"type":"thinking"}'),))
            ),
            "messages[1].parts[0]",
        ),
        (after_question(Message("system", (TextPart("late"),))), "messages[1]"),
        (
            after_question(
                Message("assistant", (ImagePart("url", "https://x.test/a.png", "image/png"),))
            ),
            "messages[1].parts[0]",
        ),
        (
            after_question(Message("assistant", (ImagePart("base64", "iVBO", "image/bmp"),))),
            "messages[1].parts[0]",
        ),
        (
            after_question(Message("assistant", (FilePart("base64", "JVBE", "application/pdf"),))),
            "messages[1].parts[0]",
        ),
        (
            after_question(Message("assistant", (ToolCallPart("c", "f", "{oops"),))),
            "messages[1].parts[0]",
        ),
    ],
)
def test_parts_converse_cannot_carry_raise_unsupported(transcript: Transcript, where: str) -> None:
    assert_raises_at(UnsupportedPartError, where, ADAPTER.render_request, transcript)


# -------------------------------------------------------------------------------- recordings


@needs_recordings
@pytest.mark.recordings
def test_every_recorded_response_parses_and_renders_back() -> None:
    replies = recorded_replies(recorded_requests("bedrock"))
    for response in replies:
        message = ADAPTER.parse_response(response)
        recorded = response["output"]["message"]["content"]
        assert [c.id for c in message.tool_calls] == [
            b["toolUse"]["toolUseId"] for b in recorded if "toolUse" in b
        ]
        usage = response["usage"]
        meta = ResponseMeta(
            model="nova", input_tokens=usage["inputTokens"], output_tokens=usage["outputTokens"]
        )
        rendered = ADAPTER.render_response(message, meta)
        assert rendered["output"] == response["output"]
        assert rendered["stopReason"] == response["stopReason"]
        assert rendered["usage"] == usage
    assert len(replies) == 2


# -------------------------------------------------------------------------------- hypothesis


_json = vocabulary_json(
    [
        "role",
        "content",
        "text",
        "messages",
        "system",
        "toolConfig",
        "tools",
        "toolSpec",
        "user",
        "assistant",
        "toolUse",
        "toolResult",
        "toolUseId",
        "name",
        "input",
        "json",
        "status",
        "error",
        "image",
        "document",
        "format",
        "source",
        "bytes",
        "reasoningContent",
        "output",
        "message",
        "inputSchema",
    ]
)


@settings(max_examples=examples(300), deadline=None)
@given(
    st.one_of(
        _json,
        st.fixed_dictionaries(
            {"messages": st.lists(_json, max_size=4)},
            optional={"system": _json, "toolConfig": _json, "output": _json},
        ),
    )
)
def test_arbitrary_json_gives_a_transcript_or_a_parse_error(body: Any) -> None:
    assert_transcript_or_parse_error(ADAPTER, body)


# The request-shaped bodies above rarely get past a response's first checks (output.message,
# role): these reach the content-block parser of parse_response with the shape's own blocks.
_block = st.one_of(
    st.fixed_dictionaries({"text": st.text(max_size=5) | _json}),
    st.fixed_dictionaries(
        {
            "toolUse": st.fixed_dictionaries(
                {}, optional={"toolUseId": _json, "name": _json, "input": _json}
            )
        }
    ),
    st.fixed_dictionaries({"reasoningContent": _json}),
    st.fixed_dictionaries({"image": _json}),
    _json,
)


@settings(max_examples=examples(300), deadline=None)
@given(
    st.fixed_dictionaries(
        {
            "output": st.fixed_dictionaries(
                {
                    "message": st.fixed_dictionaries(
                        {
                            "role": st.just("assistant"),
                            "content": st.lists(_block),
                        }
                    )
                }
            )
        },
        optional={"stopReason": _json},
    )
)
def test_arbitrary_response_content_gives_a_message_or_a_parse_error(body: Any) -> None:
    assert_transcript_or_parse_error(ADAPTER, body)
