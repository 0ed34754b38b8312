"""openai-responses: hand-written bodies, recorded bodies, generated transcripts, and garbage.

Expected values follow the Responses wire format (provider-rules.md section 2 and the
recordings). The recording round trip compares a skeleton computed from the raw JSON here.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from openai.types.responses import Response
from shape_support import (
    FUZZ_EXAMPLES,
    assert_parsed_or_located,
    assert_raises_at,
    needs_recordings,
    plain_json,
    recorded_of_shape,
    recorded_replies,
    wireish_json,
)

from reference_impl.errors import ParseError, UnsupportedPartError
from reference_impl.shapes.base import ResponseMeta
from reference_impl.shapes.openai_responses import (
    parse_request,
    parse_response,
    render_request,
    render_response,
)
from reference_impl.transcript import (
    FilePart,
    ImagePart,
    Message,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    Transcript,
    canonical_json,
)

REASONING = {
    "type": "reasoning",
    "id": "rs_1",
    "summary": [{"type": "summary_text", "text": "thinking about weather"}],
    "encrypted_content": "gAAAAB-opaque",
}


def fc(call_id: str, item_id: str | None = None, args: str = '{"city":"Paris"}') -> dict[str, Any]:
    item = {"type": "function_call", "call_id": call_id, "name": "get_weather", "arguments": args}
    if item_id is not None:
        item["id"] = item_id
    return item


def out(call_id: str, output: Any = "sunny") -> dict[str, Any]:
    return {"type": "function_call_output", "call_id": call_id, "output": output}


# ----------------------------------------------------------------------------- parse basics


def test_string_input_is_one_user_message() -> None:
    t = parse_request({"model": "gpt-5", "input": "hello"})
    assert t.model == "gpt-5"
    assert t.messages == (Message("user", (TextPart("hello"),)),)


def test_a_ring_groups_reasoning_message_and_calls_then_outputs() -> None:
    body: dict[str, Any] = {
        "input": [
            {"role": "user", "content": "weather in Paris and Rome?"},
            REASONING,
            {
                "type": "message",
                "id": "msg_1",
                "role": "assistant",
                "content": [{"type": "output_text", "text": "Checking both.", "annotations": []}],
            },
            fc("call_a", "fc_a"),
            fc("call_b", "fc_b", '{"city":"Rome"}'),
            out("call_a"),
            dict(out("call_b", [{"type": "input_text", "text": "rain"}]), id="fco_b"),
            {"role": "user", "content": "thanks"},
        ]
    }
    t = parse_request(body)
    assert [m.role for m in t.messages] == ["user", "assistant", "tool", "user"]
    head = t.messages[1]
    assert head.wire_id == "msg_1"
    assert head.parts == (
        ReasoningPart("openai-responses", canonical_json(REASONING)),
        TextPart("Checking both."),
        ToolCallPart("call_a", "get_weather", '{"city":"Paris"}', item_id="fc_a"),
        ToolCallPart("call_b", "get_weather", '{"city":"Rome"}', item_id="fc_b"),
    )
    assert t.messages[2].parts == (
        ToolResultPart("call_a", (TextPart("sunny"),)),
        ToolResultPart("call_b", (TextPart("rain"),), item_id="fco_b"),
    )
    rendered = render_request(t)
    assert rendered["input"][1] == REASONING  # kept whole, byte-exact in meaning
    assert rendered["input"][2] == body["input"][2]
    assert rendered["input"][3:5] == body["input"][3:5]
    assert parse_request(rendered) == t


def test_interleaved_messages_and_calls_keep_their_item_order() -> None:
    """DeepSeek rejected this order (§6); the shape must still carry it faithfully."""
    items = [
        {"role": "assistant", "content": "inspect inputs"},
        fc("call-a"),
        {"role": "assistant", "content": "inspect views"},
        fc("call-b"),
        out("call-a"),
        out("call-b"),
    ]
    t = parse_request({"input": items})
    assert [m.role for m in t.messages] == ["assistant", "tool"]
    assert [p.kind for p in t.messages[0].parts] == ["text", "tool_call", "text", "tool_call"]
    assert render_request(t)["input"] == items


def test_two_message_items_in_a_row_stay_two_messages() -> None:
    items = [
        {"role": "assistant", "content": "<think>...</think>"},
        {"role": "assistant", "content": "The meaning of life is 42"},
    ]
    t = parse_request({"input": items})
    assert len(t.messages) == 2
    assert render_request(t)["input"] == items


def test_a_later_message_id_starts_a_new_assistant_message() -> None:
    items = [
        {"role": "assistant", "content": "first"},
        fc("c1"),
        {
            "type": "message",
            "id": "msg_2",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "second"}],
        },
    ]
    t = parse_request({"input": items})
    assert [(m.role, m.wire_id) for m in t.messages] == [
        ("assistant", None),
        ("assistant", "msg_2"),
    ]


def test_an_id_without_text_travels_as_an_empty_message_item() -> None:
    t = Transcript(
        messages=(Message("assistant", (ToolCallPart("c1", "f", "{}"),), wire_id="msg_9"),)
    )
    items = render_request(t)["input"]
    assert items[0] == {"type": "message", "id": "msg_9", "role": "assistant", "content": []}
    assert parse_request({"input": items}) == t


def test_instructions_are_the_leading_system_message() -> None:
    t = parse_request({"instructions": "be brief", "input": [{"role": "user", "content": "hi"}]})
    assert t.messages[0] == Message("system", (TextPart("be brief"),))
    body = render_request(t)
    assert body["instructions"] == "be brief"
    assert body["input"] == [{"role": "user", "content": "hi"}]
    # The recorded empty instructions ("") survive too.
    assert render_request(parse_request({"instructions": "", "input": "x"}))["instructions"] == ""


def test_a_leading_system_item_renders_as_instructions_and_means_the_same() -> None:
    as_item = parse_request(
        {"input": [{"role": "system", "content": "rules"}, {"role": "user", "content": "q"}]}
    )
    as_field = parse_request({"instructions": "rules", "input": [{"role": "user", "content": "q"}]})
    assert as_item == as_field
    # A developer message, or a second system message, stays an input item.
    dev = parse_request(
        {"input": [{"role": "developer", "content": "d"}, {"role": "system", "content": "s"}]}
    )
    assert "instructions" not in render_request(dev)


def test_attachments_in_user_messages_and_outputs() -> None:
    content = [
        {"type": "input_text", "text": "see"},
        {"type": "input_image", "image_url": "data:image/png;base64,iVBO", "detail": "high"},
        {"type": "input_image", "file_id": "file-img"},
        {"type": "input_file", "file_url": "https://x/a.pdf"},
        {
            "type": "input_file",
            "file_data": "data:application/pdf;base64,JVBE",
            "filename": "a.pdf",
        },
    ]
    t = parse_request({"input": [{"role": "user", "content": content}]})
    assert t.messages[0].parts == (
        TextPart("see"),
        ImagePart(source="base64", data="iVBO", media_type="image/png", detail="high"),
        ImagePart(source="file_id", data="file-img"),
        FilePart(source="url", data="https://x/a.pdf"),
        FilePart(source="base64", data="JVBE", media_type="application/pdf", filename="a.pdf"),
    )
    assert render_request(t)["input"][0]["content"] == content


# ---------------------------------------------------------------------------- render refusals


@pytest.mark.parametrize(
    ("message", "where", "fragment"),
    [
        (Message("user", (TextPart("x"),), name="bob"), "messages[1]", "message name"),
        (
            Message(
                "assistant", (ReasoningPart("deepseek", '{"reasoning_content":"r"}'), TextPart("x"))
            ),
            "messages[1].parts[0]",
            "'deepseek' reasoning",
        ),
        (
            Message("tool", (ToolResultPart("c", (TextPart("x"),), is_error=True),)),
            "messages[1].parts[0]",
            "is_error",
        ),
        (
            Message("tool", (ToolResultPart("c", (TextPart("x"),), name="f"),)),
            "messages[1].parts[0]",
            "result name",
        ),
        (
            Message("tool", (ToolResultPart("c", (TextPart("x"),)), TextPart("t"))),
            "messages[1].parts[1]",
            "tool message",
        ),
        (
            Message("assistant", (TextPart("x"),), empty_tool_calls=True),
            "messages[1]",
            "empty tool_calls",
        ),
        (
            Message("assistant", (ImagePart(source="url", data="https://x/i.png"),)),
            "messages[1].parts[0]",
            "'image' part in an assistant",
        ),
    ],
)
def test_render_refuses_what_responses_cannot_carry(
    message: Message, where: str, fragment: str
) -> None:
    t = Transcript(messages=(Message("user", (TextPart("hi"),)), message))
    with pytest.raises(UnsupportedPartError) as info:
        render_request(t)
    assert info.value.where == where
    assert fragment in str(info.value)


# ------------------------------------------------------------------------------ parse errors


@pytest.mark.parametrize(
    ("body", "where"),
    [
        ("input", "$"),
        ({}, "input"),
        ({"input": 3}, "input"),
        ({"input": [{"role": "tool", "content": "x"}]}, "input[0].role"),  # R8
        ({"input": [{"content": "x"}]}, "input[0].type"),
        ({"input": [{"type": "item_reference", "id": "msg_1"}]}, "input[0].type"),
        (
            {"input": [{"type": "function_call", "name": "f", "arguments": "{}"}]},
            "input[0].call_id",
        ),
        ({"input": [fc("c", args={"a": 1})]}, "input[0].arguments"),  # type: ignore[arg-type]
        ({"input": [{"type": "function_call_output", "output": "x"}]}, "input[0].call_id"),
        ({"input": [out("c", 7)]}, "input[0].output"),
        (
            {"input": [{"role": "user", "content": [{"type": "input_audio"}]}]},
            "input[0].content[0].type",
        ),
        (
            {"input": [{"role": "assistant", "content": [{"type": "refusal", "refusal": "no"}]}]},
            "input[0].content[0].type",
        ),
        (
            {
                "input": [
                    {
                        "role": "assistant",
                        "content": [
                            {
                                "type": "output_text",
                                "text": "x",
                                "annotations": [{"type": "url_citation"}],
                            }
                        ],
                    }
                ]
            },
            "input[0].content[0].annotations",
        ),
        (
            {
                "input": [
                    {"role": "assistant", "content": [{"type": "input_image", "image_url": "u"}]}
                ]
            },
            "input[0].content[0].type",
        ),
        ({"input": "x", "instructions": ["a"]}, "instructions"),
        ({"input": "x", "tools": [{"type": "web_search"}]}, "tools[0].type"),
        ({"input": "x", "tools": [{"type": "function"}]}, "tools[0].name"),
        ({"input": [{"role": "user", "content": "x", "name": "n"}]}, "input[0].name"),
    ],
)
def test_malformed_bodies_raise_parse_error_with_a_json_path(body: Any, where: str) -> None:
    assert_raises_at(ParseError, where, parse_request, body)


# --------------------------------------------------------------------------------- responses


def test_render_response_is_a_response_the_sdk_accepts() -> None:
    message = Message(
        "assistant",
        (
            ReasoningPart("openai-responses", canonical_json(REASONING)),
            TextPart("Checking."),
            ToolCallPart("call_1", "get_weather", '{"city":"Oslo"}', item_id="fc_1"),
        ),
        wire_id="msg_abc",
    )
    body = render_response(
        message, ResponseMeta(model="gpt-5", response_id="resp_1", input_tokens=9, output_tokens=4)
    )
    sdk = Response.model_validate(body)
    assert sdk.id == "resp_1"
    assert [o.type for o in sdk.output] == ["reasoning", "message", "function_call"]
    assert sdk.output_text == "Checking."
    assert sdk.output[1].id == "msg_abc"
    assert sdk.usage is not None
    assert sdk.usage.total_tokens == 13
    assert parse_response(body) == message


def test_render_response_gives_message_items_ids_and_marks_truncation() -> None:
    body = render_response(
        Message("assistant", (TextPart("x"),)), ResponseMeta(model="m", stop_reason="max_tokens")
    )
    sdk = Response.model_validate(body)
    assert sdk.status == "incomplete"
    first_id = sdk.output[0].id
    assert first_id is not None
    assert first_id.startswith("msg_")  # required by the SDK; derived, deterministic
    again = render_response(
        Message("assistant", (TextPart("x"),)), ResponseMeta(model="m", stop_reason="max_tokens")
    )
    assert again == body


def test_parse_response_refuses_non_assistant_output() -> None:
    with pytest.raises(ParseError) as info:
        parse_response({"output": [out("c")]})
    assert info.value.where == "output[0]"


# -------------------------------------------------------------------------------- recordings


@needs_recordings
@pytest.mark.recordings
def test_recorded_reasoning_item_is_kept_whole() -> None:
    [first, second, _] = recorded_of_shape("openai-responses", "400_reasoning_without")
    sent = parse_request(second.request_body)
    [reasoning] = [p for m in sent.messages for p in m.parts if isinstance(p, ReasoningPart)]
    recorded = second.request_body["input"][1]
    assert json.loads(reasoning.data) == recorded
    # ... and it is the very item the first call returned (same id, same encrypted content).
    reply = parse_response(first.response_body)
    assert reply.parts[0] == reasoning


@needs_recordings
@pytest.mark.recordings
def test_recorded_replies_parse_and_render_back() -> None:
    replies = recorded_replies(recorded_of_shape("openai-responses"), "output")
    for body in replies:
        message = parse_response(body)
        assert [o["type"] for o in body["output"]] == [
            "function_call" if p.kind == "tool_call" else "message" if p.kind == "text" else p.kind
            for p in message.parts
        ]
        rendered = render_response(
            message, ResponseMeta(model=body["model"], response_id=body["id"])
        )
        Response.model_validate(rendered)
        again = parse_response(rendered)
        if message.wire_id is not None:
            assert again == message
        else:  # the SDK needs an id on every message item; a derived one is added
            assert again.parts == message.parts
    assert len(replies) == 4


# -------------------------------------------------------------------------------- properties


_keys = [
    "input",
    "instructions",
    "type",
    "role",
    "content",
    "id",
    "call_id",
    "name",
    "arguments",
    "output",
    "text",
    "annotations",
    "image_url",
    "file_id",
    "file_data",
    "detail",
    "tools",
    "parameters",
    "summary",
    "status",
]
_atoms = [
    "message",
    "function_call",
    "function_call_output",
    "reasoning",
    "input_text",
    "output_text",
    "input_image",
    "input_file",
    "user",
    "assistant",
    "system",
    "developer",
    "tool",
    "function",
]

_wireish = wireish_json(_keys, _atoms)


@pytest.mark.parametrize(
    ("parse", "key", "result"),
    [(parse_request, "input", Transcript), (parse_response, "output", Message)],
    ids=["request", "reply"],
)
@settings(max_examples=FUZZ_EXAMPLES, deadline=None)
@given(data=st.data())
def test_arbitrary_json_gives_a_result_or_a_parse_error(
    parse: Callable[[Any], object],
    key: str,
    result: type[Transcript | Message],
    data: st.DataObject,
) -> None:
    items = st.fixed_dictionaries({key: st.lists(_wireish, max_size=4)})
    assert_parsed_or_located(parse, data.draw(st.one_of(plain_json, _wireish, items)), result)


_SHORT_FORM_ITEMS = st.lists(
    st.one_of(
        st.builds(
            lambda role, text, typed: (
                {"role": role, "content": text} | ({"type": "message"} if typed else {})
            ),
            st.sampled_from(["system", "developer", "user", "assistant"]),
            st.text(max_size=20) | st.just("<context-summary>\nold\n</context-summary>"),
            st.booleans(),
        ),
        st.tuples(st.just("ring"), st.integers(1, 3)),
    ),
    max_size=12,
)


def _items_body(items: list[Any], instructions: str | None) -> dict[str, Any]:
    input_items: list[dict[str, Any]] = []
    for n, item in enumerate(items):
        if isinstance(item, tuple):  # a ring: width function calls, then their outputs
            ids = [f"c{n}.{k}" for k in range(item[1])]
            input_items.extend(
                {"type": "function_call", "call_id": i, "name": "f", "arguments": "{}"} for i in ids
            )
            input_items.extend(
                {"type": "function_call_output", "call_id": i, "output": f"out {i}"} for i in ids
            )
        else:
            input_items.append(dict(item))
    body: dict[str, Any] = {"model": "gpt-4o", "input": input_items}
    if instructions is not None:
        body["instructions"] = instructions
    return body


@settings(max_examples=100, deadline=None)
@given(_SHORT_FORM_ITEMS, st.none() | st.text(max_size=8))
def test_short_form_items_parse_as_the_checked_walk_parses_them(
    items: list[Any], instructions: str | None
) -> None:
    # A message item that is a role and a string is made directly, with its id; with a null id
    # added it takes the checked walk: the same messages. Their ids and digests are those the
    # transcript gives the same messages made without ids.
    body = _items_body(items, instructions)
    walked = _items_body(items, instructions)
    for item in walked["input"]:
        if "role" in item:
            item["id"] = None
    short, long = parse_request(body), parse_request(walked)
    assert short == long
    assert [m.id for m in short] == [m.id for m in long]
    fresh = Transcript(
        tuple(Message(m.role, m.parts, m.name, m.wire_id, m.empty_tool_calls) for m in short)
    )
    assert [m.id for m in short] == [m.id for m in fresh]
    assert [m.digest for m in short] == [m.digest for m in fresh]


@pytest.mark.parametrize(
    ("item", "where"),
    [
        ({"role": "tool", "content": "a"}, "input[0].role"),
        ({"role": "user", "content": "a", "type": "other"}, "input[0].type"),
        ({"role": "user", "content": 7}, "input[0].content"),
        ({"role": "user", "content": "a", "name": "n"}, "input[0].name"),
    ],
)
def test_short_form_lookalikes_get_the_named_error(item: dict[str, Any], where: str) -> None:
    with pytest.raises(ParseError) as info:
        parse_request({"model": "gpt-4o", "input": [item]})
    assert info.value.where == where


def test_an_assistant_text_made_directly_ends_the_ring_as_the_checked_walk_does() -> None:
    # Results that follow an assistant text belong to no ring, whatever came before it: two
    # stray outputs after it are one tool message, made directly or through the checked walk.
    def body(walked: bool) -> dict[str, Any]:
        text = {"role": "assistant", "content": "a"} | ({"id": None} if walked else {})
        return {
            "model": "gpt-4o",
            "input": [
                {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"},
                {"type": "function_call_output", "call_id": "c1", "output": "one"},
                {"role": "user", "content": "u"},
                text,
                {"role": "user", "content": "b"},
                {"type": "function_call_output", "call_id": "c1", "output": "again"},
                {"type": "function_call_output", "call_id": "c9", "output": "stray"},
            ],
        }

    direct, walked = parse_request(body(False)), parse_request(body(True))
    assert direct == walked
    assert [m.role for m in direct] == ["assistant", "tool", "user", "assistant", "user", "tool"]
