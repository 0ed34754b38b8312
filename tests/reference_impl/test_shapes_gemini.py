"""gemini: hand-written generateContent bodies, the public recordings, hypothesis properties.

Expected values are written by hand from the Gemini API reference (Content, Part, FunctionCall,
FunctionResponse, thought signatures), never copied from the adapter's output.
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
    assert_round_trips_in_meaning,
    assert_transcript_or_parse_error,
    gemini_meaning,
    needs_recordings,
    recorded_replies,
    recorded_requests,
    split_refused,
    vocabulary_json,
)

from reference_impl import rings
from reference_impl.errors import ParseError, UnsupportedPartError
from reference_impl.shapes import ResponseMeta
from reference_impl.shapes.gemini import ADAPTER
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


def signature(sig: str) -> ReasoningPart:
    return ReasoningPart("gemini", '{"thoughtSignature":"' + sig + '"}')


PARALLEL: dict[str, Any] = {
    "systemInstruction": {"parts": [{"text": "Be brief."}]},
    "generationConfig": {"temperature": 0.0},
    "tools": [
        {
            "functionDeclarations": [
                {
                    "name": "get_capital",
                    "description": "Capital of a country",
                    "parametersJsonSchema": {
                        "type": "object",
                        "properties": {"country": {"type": "string"}},
                    },
                }
            ]
        }
    ],
    "contents": [
        {"role": "user", "parts": [{"text": "Capitals of France and Peru?"}]},
        {
            "role": "model",
            "parts": [
                # G6a: with parallel calls the signature comes on the first call only.
                {
                    "functionCall": {"name": "get_capital", "args": {"country": "France"}},
                    "thoughtSignature": "SIG1",
                },
                {"functionCall": {"name": "get_capital", "args": {"country": "Peru"}}},
            ],
        },
        {
            "role": "user",
            "parts": [
                {"functionResponse": {"name": "get_capital", "response": {"output": "Paris"}}},
                {"functionResponse": {"name": "get_capital", "response": {"output": "Lima"}}},
            ],
        },
    ],
}


def test_id_less_calls_get_synthesized_ids_and_results_link_by_order_and_name() -> None:
    t = ADAPTER.parse_request(PARALLEL)
    assert [m.role for m in t.messages] == ["system", "user", "assistant", "tool"]
    model = t.messages[2]
    assert model.parts == (
        signature("SIG1"),
        ToolCallPart("gemini-call-2-0", "get_capital", '{"country":"France"}'),
        ToolCallPart("gemini-call-2-1", "get_capital", '{"country":"Peru"}'),
    )
    assert t.messages[3].parts == (
        ToolResultPart("gemini-call-2-0", (TextPart("Paris"),)),
        ToolResultPart("gemini-call-2-1", (TextPart("Lima"),)),
    )
    assert t.param("generationConfig") == {"temperature": 0.0}


def test_render_omits_synthesized_ids_and_reattaches_the_signature() -> None:
    assert ADAPTER.render_request(ADAPTER.parse_request(PARALLEL)) == PARALLEL


def test_results_link_by_name_when_the_order_differs() -> None:
    body = copy.deepcopy(PARALLEL)
    body["contents"][1]["parts"][1]["functionCall"]["name"] = "get_weather"
    body["contents"][2]["parts"] = [
        {"functionResponse": {"name": "get_weather", "response": {"output": "sunny"}}},
        {"functionResponse": {"name": "get_capital", "response": {"output": "Paris"}}},
        {"functionResponse": {"name": "nobody_called_me", "response": {}}},
    ]
    t = ADAPTER.parse_request(body)
    results = t.messages[3].tool_results
    assert [r.call_id for r in results] == [
        "gemini-call-2-1",
        "gemini-call-2-0",
        "gemini-result-3-2",
    ]
    orphans = [(v.kind, v.ids) for v in rings.validate(t)]
    assert orphans == [("orphan_result", ("gemini-result-3-2",))]
    assert ADAPTER.render_request(t)["contents"] == body["contents"]


def test_explicit_ids_are_kept_and_rendered() -> None:
    body = {
        "contents": [
            {"role": "user", "parts": [{"text": "q"}]},
            {"role": "model", "parts": [{"functionCall": {"id": "c1", "name": "f", "args": {}}}]},
            {
                "role": "user",
                "parts": [{"functionResponse": {"id": "c1", "name": "f", "response": {"a": 1}}}],
            },
        ]
    }
    t = ADAPTER.parse_request(body)
    assert t.messages[1].parts == (ToolCallPart("c1", "f", "{}"),)
    assert t.messages[2].parts == (ToolResultPart("c1", (TextPart('{"a":1}'),)),)
    assert ADAPTER.render_request(t) == body


@pytest.mark.parametrize(
    ("response", "content", "is_error"),
    [
        ({"output": "Paris"}, (TextPart("Paris"),), False),
        ({"error": "not found"}, (TextPart("not found"),), True),
        ({"error": {"code": 404}}, (TextPart('{"code":404}'),), True),
        ({"return_value": "Paris"}, (TextPart('{"return_value":"Paris"}'),), False),
        ({}, (), False),
    ],
)
def test_function_response_objects_map_to_text_and_back(
    response: dict[str, Any], content: tuple[TextPart, ...], is_error: bool
) -> None:
    body = {
        "contents": [
            {"role": "model", "parts": [{"functionCall": {"id": "c", "name": "f", "args": {}}}]},
            {
                "role": "user",
                "parts": [{"functionResponse": {"id": "c", "name": "f", "response": response}}],
            },
        ]
    }
    t = ADAPTER.parse_request(body)
    assert t.messages[1].parts == (ToolResultPart("c", content, is_error=is_error),)
    assert (
        ADAPTER.render_request(t)["contents"][1]["parts"][0]["functionResponse"]["response"]
        == response
    )


def test_result_text_that_is_canonical_json_of_an_object_is_sent_as_that_object() -> None:
    def response_for(text: str) -> Any:
        t = after_question(
            Message("assistant", (ToolCallPart("c", "f", "{}"),)),
            Message("tool", (ToolResultPart("c", (TextPart(text),)),)),
        )
        return ADAPTER.render_request(t)["contents"][2]["parts"][0]["functionResponse"]["response"]

    assert response_for('{"x":1}') == {"x": 1}
    assert response_for('{"x": 1}') == {"output": '{"x": 1}'}  # not canonical: kept as text
    assert response_for('{"output":"y"}') == {"output": '{"output":"y"}'}  # would be unwrapped
    assert response_for("[1]") == {"output": "[1]"}


def test_a_result_name_that_differs_from_its_call_is_kept() -> None:
    body = {
        "contents": [
            {"role": "model", "parts": [{"functionCall": {"id": "c1", "name": "f", "args": {}}}]},
            {
                "role": "user",
                "parts": [{"functionResponse": {"id": "c1", "name": "g", "response": {}}}],
            },
        ]
    }
    t = ADAPTER.parse_request(body)
    assert t.messages[1].parts == (ToolResultPart("c1", (), name="g"),)
    assert ADAPTER.render_request(t) == body


def test_results_from_other_shapes_take_their_name_from_the_call_g9() -> None:
    t = Transcript(
        (
            Message("user", (TextPart("q"),)),
            Message("assistant", (ToolCallPart("call_1", "lookup", '{"k":"v"}'),)),
            Message("tool", (ToolResultPart("call_1", (TextPart("plain text"),)),)),
        )
    )
    body = ADAPTER.render_request(t)
    assert body["contents"][2]["parts"] == [
        {
            "functionResponse": {
                "name": "lookup",
                "response": {"output": "plain text"},
                "id": "call_1",
            }
        }
    ]


def test_thought_parts_snake_case_and_media() -> None:
    body = {
        "system_instruction": {"parts": [{"text": "sys"}]},
        "contents": [
            {
                "parts": [
                    {"text": "look"},
                    {"inline_data": {"mime_type": "image/png", "data": "iVBO"}},
                    {"file_data": {"mime_type": "application/pdf", "file_uri": "gs://b/spec.pdf"}},
                ]
            },
            {
                "role": "model",
                "parts": [
                    {"text": "planning", "thought": True, "thought_signature": "T1"},
                    {"text": "done", "thought_signature": "T2"},
                ],
            },
        ],
    }
    t = ADAPTER.parse_request(body)
    assert t.messages[1].parts == (
        TextPart("look"),
        ImagePart("base64", "iVBO", "image/png"),
        FilePart("url", "gs://b/spec.pdf", "application/pdf"),
    )
    assert t.messages[2].parts == (
        ReasoningPart(
            "gemini",
            json.dumps(
                {"text": "planning", "thought": True, "thought_signature": "T1"},
                sort_keys=True,
                separators=(",", ":"),
            ),
        ),
        signature("T2"),
        TextPart("done"),
    )
    rendered = ADAPTER.render_request(t)
    assert rendered["systemInstruction"] == {"parts": [{"text": "sys"}]}
    assert rendered["contents"][0] == {
        "role": "user",
        "parts": [
            {"text": "look"},
            {"inlineData": {"mimeType": "image/png", "data": "iVBO"}},
            {"fileData": {"mimeType": "application/pdf", "fileUri": "gs://b/spec.pdf"}},
        ],
    }
    assert rendered["contents"][1]["parts"][1] == {"text": "done", "thoughtSignature": "T2"}
    assert ADAPTER.parse_request(rendered) == t


def test_code_execution_parts_and_search_tools_are_kept() -> None:
    body = {
        "tools": [
            {"googleSearch": {}},
            {"functionDeclarations": [{"name": "f", "parameters": {"type": "OBJECT"}}]},
        ],
        "contents": [
            {"role": "user", "parts": [{"text": "compute"}]},
            {
                "role": "model",
                "parts": [
                    {
                        "executableCode": {"language": "PYTHON", "code": "print(1)"},
                        "thoughtSignature": "S",
                    },
                    {"codeExecutionResult": {"outcome": "OUTCOME_OK", "output": "1"}},
                    {"text": "1", "videoMetadata": {"fps": 1}},
                ],
            },
        ],
    }
    t = ADAPTER.parse_request(body)
    assert t.messages[1].parts == (TextPart("1"),)
    rendered = ADAPTER.render_request(t)
    assert rendered["contents"] == body["contents"]
    # The OpenAPI-subset schema key is kept as "parameters" (not parametersJsonSchema).
    assert sorted(map(json.dumps, rendered["tools"])) == sorted(map(json.dumps, body["tools"]))


def test_summary_in_user_text() -> None:
    wire = SummaryPart("goal").wire_text()
    t = ADAPTER.parse_request({"contents": [{"role": "user", "parts": [{"text": wire}]}]})
    assert t.messages[0].parts == (SummaryPart("goal"),)


# ------------------------------------------------------------------------------ parse errors

BAD_BODIES: list[tuple[object, str]] = [
    ("x", "$"),
    ({}, "contents"),
    ({"contents": [{"role": "invalid_role", "parts": [{"text": "t"}]}]}, "contents[0].role"),  # G7
    ({"contents": [{"role": "user"}]}, "contents[0].parts"),
    ({"contents": [{"role": "user", "parts": [{}]}]}, "contents[0].parts[0]"),
    (
        {"contents": [{"role": "user", "parts": [{"text": "a", "inlineData": {}}]}]},
        "contents[0].parts[0]",
    ),
    ({"contents": [{"role": "user", "parts": [{"text": 3}]}]}, "contents[0].parts[0].text"),
    (
        {"contents": [{"role": "user", "parts": [{"functionCall": {"name": "f"}}]}]},
        "contents[0].parts[0].functionCall",
    ),
    (
        {"contents": [{"role": "model", "parts": [{"functionResponse": {"name": "f"}}]}]},
        "contents[0].parts[0].functionResponse",
    ),
    (
        {"contents": [{"role": "model", "parts": [{"functionCall": {"name": "f", "args": [1]}}]}]},
        "contents[0].parts[0].functionCall.args",
    ),
    (
        {
            "contents": [
                {"role": "user", "parts": [{"functionResponse": {"name": "f", "response": "x"}}]}
            ]
        },
        "contents[0].parts[0].functionResponse.response",
    ),
    (
        {"contents": [{"role": "user", "parts": [{"text": "a", "thoughtSignature": "s"}]}]},
        "contents[0].parts[0].thoughtSignature",
    ),
    (
        {"contents": [{"role": "user", "parts": [{"inlineData": {"data": "x"}}]}]},
        "contents[0].parts[0].inlineData.mimeType",
    ),
    (
        {"contents": [], "systemInstruction": {"parts": [{"inlineData": {}}]}},
        "systemInstruction.parts[0]",
    ),
    (
        {"contents": [], "tools": [{"functionDeclarations": [{"description": "d"}]}]},
        "tools[0].functionDeclarations[0].name",
    ),
]


@pytest.mark.parametrize(("body", "where"), BAD_BODIES)
def test_malformed_bodies_raise_parse_error_with_protobuf_paths(body: object, where: str) -> None:
    assert_raises_at(ParseError, where, ADAPTER.parse_request, body)


# ----------------------------------------------------------------------- unsupported parts


@pytest.mark.parametrize(
    ("transcript", "where"),
    [
        (
            after_question(Message("assistant", (TextPart("a"), signature("S")))),
            "messages[1].parts[1]",
        ),
        (
            after_question(
                Message(
                    "assistant",
                    (
                        ReasoningPart(
                            "anthropic-messages", '{"type":"redacted_thinking","data":"x"}'
                        ),
                    ),
                )
            ),
            "messages[1].parts[0]",
        ),
        (after_question(Message("system", (TextPart("late system"),))), "messages[1]"),
        (
            after_question(Message("assistant", (ToolCallPart("c", "f", "[]"),))),
            "messages[1].parts[0]",
        ),
        (
            after_question(Message("tool", (ToolResultPart("orphan", (TextPart("r"),)),))),
            "messages[1].parts[0]",
        ),
        (
            after_question(Message("assistant", (ImagePart("file_id", "file-1", "image/png"),))),
            "messages[1].parts[0]",
        ),
        (
            after_question(Message("assistant", (ImagePart("base64", "iVBO"),))),
            "messages[1].parts[0]",
        ),
    ],
)
def test_parts_gemini_cannot_carry_raise_unsupported(transcript: Transcript, where: str) -> None:
    assert_raises_at(UnsupportedPartError, where, ADAPTER.render_request, transcript)


# --------------------------------------------------------------------------------- responses


def test_response_round_trip_and_shape() -> None:
    message = Message(
        "assistant", (signature("S1"), ToolCallPart("call_7", "f", '{"a":1}'), TextPart("ok"))
    )
    body = ADAPTER.render_response(
        message,
        ResponseMeta(model="gemini-2.5-pro", response_id="r1", input_tokens=3, output_tokens=4),
    )
    assert body["candidates"][0]["content"]["parts"][0] == {
        "functionCall": {"name": "f", "args": {"a": 1}, "id": "call_7"},
        "thoughtSignature": "S1",
    }
    assert body["usageMetadata"] == {
        "promptTokenCount": 3,
        "candidatesTokenCount": 4,
        "totalTokenCount": 7,
    }
    assert ADAPTER.parse_response(body) == message


def test_response_without_candidates_is_a_parse_error() -> None:
    with pytest.raises(ParseError) as info:
        ADAPTER.parse_response({"promptFeedback": {"blockReason": "SAFETY"}})
    assert info.value.where == "candidates"
    assert "SAFETY" in info.value.message


# -------------------------------------------------------------------------------- recordings


@needs_recordings
@pytest.mark.recordings
def test_every_recorded_signature_survives_the_round_trip_g6() -> None:
    # G6: every recorded signature survives, byte-exact, on the same functionCall.
    _, accepted = split_refused(recorded_requests("gemini"), "Please use a valid role")
    renders = assert_round_trips_in_meaning(ADAPTER, accepted, gemini_meaning)
    for interaction, rendered in zip(accepted, renders, strict=True):
        body = interaction.request_body
        recorded = [p.get("thoughtSignature") for c in body["contents"] for p in c["parts"]]
        again = [p.get("thoughtSignature") for c in rendered["contents"] for p in c["parts"]]
        assert recorded == again
    assert len(renders) == 3


@needs_recordings
@pytest.mark.recordings
def test_every_recorded_response_parses_with_its_signature_first() -> None:
    replies = recorded_replies(recorded_requests("gemini"))
    for response in replies:
        message = ADAPTER.parse_response(response)
        parts = response["candidates"][0]["content"]["parts"]
        if "thoughtSignature" in parts[0]:
            assert message.parts[0] == signature(parts[0]["thoughtSignature"])
        rendered = ADAPTER.render_response(
            message, ResponseMeta(model="m", response_id=response["responseId"])
        )
        assert rendered["candidates"][0]["content"]["parts"] == parts
    assert len(replies) == 3


# -------------------------------------------------------------------------------- hypothesis


_json = vocabulary_json(
    [
        "role",
        "parts",
        "text",
        "contents",
        "systemInstruction",
        "tools",
        "user",
        "model",
        "functionCall",
        "functionResponse",
        "name",
        "args",
        "response",
        "id",
        "inlineData",
        "fileData",
        "mimeType",
        "data",
        "thoughtSignature",
        "thought",
        "candidates",
        "content",
        "functionDeclarations",
        "parametersJsonSchema",
        "output",
        "error",
    ]
)


@settings(max_examples=examples(300), deadline=None)
@given(
    st.one_of(
        _json,
        st.fixed_dictionaries(
            {"contents": st.lists(_json, max_size=4)},
            optional={"systemInstruction": _json, "tools": _json},
        ),
    )
)
def test_arbitrary_json_gives_a_transcript_or_a_parse_error(body: Any) -> None:
    assert_transcript_or_parse_error(ADAPTER, body)


# The request-shaped bodies above rarely get past a response's first checks (candidates,
# content): these reach the part parser of parse_response with the shape's own part keys.
_part = st.one_of(
    st.fixed_dictionaries({"text": st.text(max_size=5) | _json}, optional={"thought": _json}),
    st.fixed_dictionaries(
        {"functionCall": st.fixed_dictionaries({}, optional={"name": _json, "args": _json})},
        optional={"thoughtSignature": _json},
    ),
    st.fixed_dictionaries({"inlineData": _json}),
)


@settings(max_examples=examples(300), deadline=None)
@given(
    st.fixed_dictionaries(
        {
            "candidates": st.lists(
                st.fixed_dictionaries(
                    {"content": st.fixed_dictionaries({"parts": st.lists(_part | _json)})},
                    optional={"finishReason": _json},
                ),
                min_size=1,
                max_size=2,
            )
        },
        optional={"responseId": st.text(max_size=5)},
    )
)
def test_arbitrary_response_parts_give_a_message_or_a_parse_error(body: Any) -> None:
    assert_transcript_or_parse_error(ADAPTER, body)
