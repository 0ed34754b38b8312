"""openai-chat: hand-written bodies, recorded bodies, generated transcripts, and garbage.

Expected values are written from the Chat Completions wire format (provider-rules.md section 1
and the recordings), not copied from the adapter's output. The recording round trip compares a
skeleton computed from the raw JSON by this file's own code, so a parser bug cannot hide itself.
"""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from openai.types.chat import ChatCompletion
from shape_support import (
    FUZZ_EXAMPLES,
    assert_parsed_or_located,
    assert_raises_at,
    needs_recordings,
    plain_json,
    recorded_of_shape,
    wireish_json,
)

from reference_impl.errors import ParseError, ShapeError, UnsupportedPartError
from reference_impl.shapes.base import ResponseMeta
from reference_impl.shapes.openai_chat import (
    parse_request,
    parse_response,
    render_request,
    render_response,
)
from reference_impl.transcript import (
    SUMMARY_CLOSE,
    SUMMARY_OPEN,
    FilePart,
    ImagePart,
    Message,
    ReasoningPart,
    SummaryPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    ToolSpec,
    Transcript,
    canonical_json,
)


def call(id_: str, name: str = "get_weather", args: str = '{"city":"Paris"}') -> dict[str, Any]:
    return {"id": id_, "type": "function", "function": {"name": name, "arguments": args}}


# ----------------------------------------------------------------------------- parse basics


def test_parse_roles_content_forms_and_names() -> None:
    body: dict[str, Any] = {
        "model": "gpt-4o",
        "messages": [
            {"role": "system", "content": "be brief"},
            {"role": "developer", "content": [{"type": "text", "text": "dev note"}]},
            {
                "role": "user",
                "name": "alice",
                "content": [
                    {"type": "text", "text": "look"},
                    {"type": "image_url", "image_url": {"url": "https://x/y.png", "detail": "low"}},
                    {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
                    {
                        "type": "file",
                        "file": {
                            "file_data": "data:application/pdf;base64,JVBE",
                            "filename": "a.pdf",
                        },
                    },
                    {"type": "file", "file": {"file_id": "file-123"}},
                ],
            },
            {"role": "assistant", "content": "ok"},
        ],
    }
    t = parse_request(body)
    assert t.model == "gpt-4o"
    assert [m.role for m in t.messages] == ["system", "developer", "user", "assistant"]
    assert t.messages[0].parts == (TextPart("be brief"),)
    assert t.messages[1].parts == (TextPart("dev note"),)
    user = t.messages[2]
    assert user.name == "alice"
    assert user.parts == (
        TextPart("look"),
        ImagePart(source="url", data="https://x/y.png", detail="low"),
        ImagePart(source="base64", data="AAAA", media_type="image/png"),
        FilePart(source="base64", data="JVBE", media_type="application/pdf", filename="a.pdf"),
        FilePart(source="file_id", data="file-123"),
    )
    again = render_request(t)
    assert again["messages"][2]["content"] == body["messages"][2]["content"]
    assert parse_request(again) == t


def test_consecutive_tool_messages_of_one_ring_merge_and_split_back() -> None:
    body = {
        "messages": [
            {"role": "user", "content": "weather in Paris and Rome?"},
            {"role": "assistant", "content": None, "tool_calls": [call("call_a"), call("call_b")]},
            {"role": "tool", "tool_call_id": "call_a", "content": "sunny"},
            {"role": "tool", "tool_call_id": "call_b", "content": "rain"},
            {"role": "user", "content": "thanks"},
        ]
    }
    t = parse_request(body)
    assert [m.role for m in t.messages] == ["user", "assistant", "tool", "user"]
    assert t.messages[2].parts == (
        ToolResultPart(call_id="call_a", content=(TextPart("sunny"),)),
        ToolResultPart(call_id="call_b", content=(TextPart("rain"),)),
    )
    assert render_request(t)["messages"] == body["messages"]


def test_orphan_tool_message_after_a_ring_stands_alone_C2() -> None:
    body = {
        "messages": [
            {"role": "assistant", "content": None, "tool_calls": [call("call_a")]},
            {"role": "tool", "tool_call_id": "call_a", "content": "x"},
            {"role": "tool", "tool_call_id": "call_zz", "content": "stray"},
        ]
    }
    t = parse_request(body)
    assert [len(m.parts) for m in t.messages] == [1, 1, 1]
    assert t.messages[2].parts[0] == ToolResultPart(call_id="call_zz", content=(TextPart("stray"),))
    assert render_request(t)["messages"] == body["messages"]


def test_empty_tool_calls_is_kept_for_reporting_C4() -> None:
    body = {"messages": [{"role": "assistant", "content": "hi", "tool_calls": []}]}
    t = parse_request(body)
    assert t.messages[0].empty_tool_calls is True
    assert t.messages[0].parts == (TextPart("hi"),)
    assert render_request(t)["messages"][0]["tool_calls"] == []


def test_content_null_and_absent_on_assistant_mean_no_text() -> None:
    with_null = {"role": "assistant", "content": None, "tool_calls": [call("1")]}
    absent = {"role": "assistant", "tool_calls": [call("1")]}
    a = parse_request({"messages": [with_null]})
    b = parse_request({"messages": [absent]})
    assert a == b
    assert a.messages[0].parts == (
        ToolCallPart(id="1", name="get_weather", arguments='{"city":"Paris"}'),
    )
    assert render_request(a)["messages"][0] == with_null


def test_deepseek_reasoning_content_is_first_and_round_trips() -> None:
    body = {
        "messages": [
            {
                "role": "assistant",
                "content": "Let me check.",
                "reasoning_content": "The user wants weather.",
                "tool_calls": [call("call_00_x")],
            },
            {"role": "tool", "tool_call_id": "call_00_x", "content": "{}"},
            {
                "role": "assistant",
                "content": None,
                "reasoning_content": "",
                "tool_calls": [call("auto_1")],
            },
        ]
    }
    t = parse_request(body)
    first = t.messages[0].parts
    assert first[0] == ReasoningPart(
        origin="deepseek", data='{"reasoning_content":"The user wants weather."}'
    )
    assert first[1] == TextPart("Let me check.")
    # An empty reasoning_content is still an artifact: DeepSeek accepted exactly this (§6).
    assert t.messages[2].parts[0] == ReasoningPart(
        origin="deepseek", data='{"reasoning_content":""}'
    )
    assert render_request(t)["messages"] == body["messages"]


def test_summary_text_parses_back_to_a_summary_part() -> None:
    wire = f"{SUMMARY_OPEN}goal: deploy; done: 3 steps{SUMMARY_CLOSE}"
    t = parse_request({"messages": [{"role": "user", "content": wire}]})
    assert t.messages[0].parts == (SummaryPart("goal: deploy; done: 3 steps"),)
    assert render_request(t)["messages"][0]["content"] == wire


def test_arguments_stay_byte_exact() -> None:
    raw = '{ "city" : "Zürich",\n "days": 3 }'
    t = parse_request({"messages": [{"role": "assistant", "tool_calls": [call("c", args=raw)]}]})
    assert t.messages[0].tool_calls[0].arguments == raw
    assert render_request(t)["messages"][0]["tool_calls"][0]["function"]["arguments"] == raw


def test_tools_become_tool_specs_and_strict_is_kept() -> None:
    tools = [
        {
            "type": "function",
            "function": {
                "name": "get_weather",
                "description": "Weather for a city.",
                "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
                "strict": True,
            },
        },
        {"type": "function", "function": {"name": "ping"}},
    ]
    t = parse_request({"messages": [], "tools": tools, "tool_choice": "auto", "temperature": 0.2})
    assert t.tools == (
        ToolSpec(
            name="get_weather",
            description="Weather for a city.",
            parameters='{"properties":{"city":{"type":"string"}},"type":"object"}',
        ),
        ToolSpec(name="ping"),
    )
    assert t.param("tool_choice") == "auto"
    assert t.param("temperature") == 0.2
    body = render_request(t)
    assert body["tools"][0] == tools[0]
    assert body["tools"][1]["function"]["name"] == "ping"
    assert body["tool_choice"] == "auto"
    assert parse_request(body) == t


# ---------------------------------------------------------------------------- render refusals


def _one(message: Message) -> Transcript:
    return Transcript(messages=(Message("user", (TextPart("hi"),)), message))


@pytest.mark.parametrize(
    ("message", "where", "fragment"),
    [
        (
            Message(
                "assistant",
                (ReasoningPart("anthropic-messages", '{"type":"thinking"}'), TextPart("x")),
            ),
            "messages[1].parts[0]",
            "'anthropic-messages' reasoning",
        ),
        (
            Message("user", (TextPart("a"), FilePart(source="url", data="https://x/a.pdf"))),
            "messages[1].parts[1]",
            "a file by URL",
        ),
        (
            Message("user", (ImagePart(source="file_id", data="file-1"),)),
            "messages[1].parts[0]",
            "image by file id",
        ),
        (
            Message("tool", (ToolResultPart("c", (TextPart("boom"),), is_error=True),)),
            "messages[1].parts[0]",
            "is_error",
        ),
        (
            Message("tool", (ToolResultPart("c", (TextPart("x"),)), TextPart("after"))),
            "messages[1].parts[1]",
            "'text' part in a tool message",
        ),
        (
            Message("assistant", (ToolCallPart("c", "f", "{}"), TextPart("late"))),
            "messages[1].parts[1]",
            "text after a tool call",
        ),
        (
            Message("assistant", (ToolCallPart("c", "f", "{}", item_id="fc_1"),)),
            "messages[1].parts[0]",
            "item id",
        ),
        (
            Message(
                "assistant",
                (TextPart("x"), ReasoningPart("deepseek", '{"reasoning_content":"r"}')),
            ),
            "messages[1].parts[1]",
            "not the first part",
        ),
        (Message("assistant", (TextPart("x"),), wire_id="msg_1"), "messages[1]", "msg_1"),
        (Message("tool", ()), "messages[1]", "without results"),
    ],
)
def test_render_refuses_what_chat_cannot_carry(message: Message, where: str, fragment: str) -> None:
    with pytest.raises(UnsupportedPartError) as info:
        render_request(_one(message))
    assert info.value.where == where
    assert fragment in str(info.value)


def test_render_refuses_a_param_that_would_overwrite_messages() -> None:
    t = Transcript(messages=(), params=(("messages", "[]"),))
    with pytest.raises(UnsupportedPartError, match=r"params\.messages"):
        render_request(t)


# ------------------------------------------------------------------------------ parse errors


@pytest.mark.parametrize(
    ("body", "where"),
    [
        ([], "$"),
        ({"model": "m"}, "messages"),
        ({"messages": {}}, "messages"),
        ({"messages": [3]}, "messages[0]"),
        ({"messages": [{"role": "robot", "content": "x"}]}, "messages[0].role"),
        ({"messages": [{"role": "function", "name": "f", "content": "x"}]}, "messages[0].role"),
        ({"messages": [{"role": "user"}]}, "messages[0].content"),
        ({"messages": [{"role": "user", "content": 5}]}, "messages[0].content"),
        (
            {"messages": [{"role": "user", "content": [{"type": "video"}]}]},
            "messages[0].content[0].type",
        ),
        (
            {
                "messages": [
                    {"role": "user", "content": [{"type": "input_audio", "input_audio": {}}]}
                ]
            },
            "messages[0].content[0].type",
        ),
        (
            {"messages": [{"role": "system", "content": [{"type": "image_url"}]}]},
            "messages[0].content[0].type",
        ),
        ({"messages": [{"role": "tool", "content": "x"}]}, "messages[0].tool_call_id"),
        (
            {
                "messages": [
                    {
                        "role": "assistant",
                        "tool_calls": [
                            {"type": "function", "function": {"name": "f", "arguments": "{}"}}
                        ],
                    }
                ]
            },
            "messages[0].tool_calls[0].id",
        ),
        (
            {"messages": [{"role": "assistant", "tool_calls": [call("c", args={"a": 1})]}]},  # type: ignore[arg-type]
            "messages[0].tool_calls[0].function.arguments",
        ),
        (
            {
                "messages": [
                    {
                        "role": "assistant",
                        "tool_calls": [{"id": "c", "type": "custom", "custom": {}}],
                    }
                ]
            },
            "messages[0].tool_calls[0].custom",
        ),
        ({"messages": [{"role": "assistant", "refusal": "no"}]}, "messages[0].refusal"),
        (
            {"messages": [{"role": "assistant", "reasoning_content": 1}]},
            "messages[0].reasoning_content",
        ),
        ({"messages": [{"role": "user", "content": "x", "extra": 1}]}, "messages[0].extra"),
        ({"messages": [], "model": 4}, "model"),
        ({"messages": [], "tools": [{"type": "web_search"}]}, "tools[0].type"),
        (
            {
                "messages": [],
                "tools": [{"type": "function", "function": {"name": "f", "parameters": []}}],
            },
            "tools[0].function.parameters",
        ),
        (
            {
                "messages": [
                    {
                        "role": "user",
                        "content": [
                            {"type": "image_url", "image_url": {"url": "u", "detail": "max"}}
                        ],
                    }
                ]
            },
            "messages[0].content[0].image_url.detail",
        ),
        ({"messages": [], "openai.tool_extras": {}}, "openai.tool_extras"),
    ],
)
def test_malformed_bodies_raise_parse_error_with_a_json_path(body: Any, where: str) -> None:
    assert_raises_at(ParseError, where, parse_request, body)


# --------------------------------------------------------------------------------- responses


def test_parse_response_reads_the_single_choice() -> None:
    body = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "choices": [
            {
                "index": 0,
                "finish_reason": "tool_calls",
                "message": {
                    "role": "assistant",
                    "content": "Let me load it.",
                    "reasoning_content": "need the tool",
                    "tool_calls": [dict(call("call_00_s"), index=0)],
                    "refusal": None,
                    "annotations": [],
                },
            }
        ],
    }
    message = parse_response(body)
    assert message.parts == (
        ReasoningPart("deepseek", canonical_json({"reasoning_content": "need the tool"})),
        TextPart("Let me load it."),
        ToolCallPart(id="call_00_s", name="get_weather", arguments='{"city":"Paris"}'),
    )


def test_parse_response_refuses_several_choices() -> None:
    choice = {"index": 0, "message": {"role": "assistant", "content": "a"}}
    with pytest.raises(ParseError) as info:
        parse_response({"choices": [choice, dict(choice, index=1)]})
    assert info.value.where == "choices"


def test_render_response_is_a_chat_completion_the_sdk_accepts() -> None:
    message = Message(
        "assistant",
        (
            ReasoningPart("deepseek", '{"reasoning_content":"think"}'),
            TextPart("Checking."),
            ToolCallPart("call_1", "get_weather", '{"city":"Oslo"}'),
        ),
    )
    body = render_response(
        message,
        ResponseMeta(model="deepseek-chat", response_id="r1", input_tokens=7, output_tokens=5),
    )
    sdk = ChatCompletion.model_validate(body)
    assert sdk.id == "r1"
    assert sdk.choices[0].finish_reason == "tool_calls"
    assert sdk.choices[0].message.content == "Checking."
    tool_call = sdk.choices[0].message.tool_calls[0]  # type: ignore[index]
    assert (tool_call.id, tool_call.function.name, tool_call.function.arguments) == (  # type: ignore[union-attr]
        "call_1",
        "get_weather",
        '{"city":"Oslo"}',
    )
    assert sdk.usage is not None
    assert sdk.usage.total_tokens == 12
    assert parse_response(body) == message


def test_render_response_maps_stop_reasons() -> None:
    message = Message("assistant", (TextPart("x"),))
    meta = ResponseMeta(model="m", stop_reason="max_tokens")
    assert render_response(message, meta)["choices"][0]["finish_reason"] == "length"
    with pytest.raises(ShapeError, match="unknown stop reason"):
        render_response(message, ResponseMeta(model="m", stop_reason="sleepy"))
    with pytest.raises(UnsupportedPartError):
        render_response(Message("user", (TextPart("x"),)), ResponseMeta(model="m"))


# -------------------------------------------------------------------------------- recordings


@needs_recordings
@pytest.mark.recordings
def test_recorded_deepseek_reasoning_content_survives() -> None:
    [_, _, third] = recorded_of_shape("openai-chat", "deepseek_chat_thinking_tools")
    transcript = parse_request(third.request_body)
    heads = [m for m in transcript.messages if m.role == "assistant"]
    assert [type(m.parts[0]).__name__ for m in heads] == ["ReasoningPart"] * 3
    assert heads[1].parts[0] == ReasoningPart("deepseek", '{"reasoning_content":""}')
    # Two parallel results answered in two wire tool messages -> one neutral tool message.
    assert [len(m.parts) for m in transcript.messages if m.role == "tool"] == [1, 1, 2]


@needs_recordings
@pytest.mark.recordings
def test_each_recorded_reply_reappears_in_the_next_request() -> None:
    """The assistant reply of call n is what the client sent back in call n+1 (same file)."""
    interactions = recorded_of_shape("openai-chat")
    checked = 0
    for reply, follow in itertools.pairwise(interactions):
        if reply.file != follow.file or reply.status != 200:
            continue
        message = parse_response(reply.response_body)
        sent = parse_request(follow.request_body)
        if message.tool_calls:
            assert message in sent.messages, reply
            checked += 1
        sdk = ChatCompletion.model_validate(render_response(message, ResponseMeta(model="m")))
        assert sdk.choices[0].message.role == "assistant"
    assert checked >= 3


# -------------------------------------------------------------------------------- properties


_keys = [
    "messages",
    "role",
    "content",
    "tool_calls",
    "function",
    "arguments",
    "id",
    "type",
    "tool_call_id",
    "name",
    "text",
    "image_url",
    "url",
    "file",
    "reasoning_content",
    "tools",
    "choices",
    "message",
    "parameters",
    "detail",
    "model",
]
_roles = ["system", "developer", "user", "assistant", "tool", "x"]

_wireish = wireish_json(_keys, _roles)


@settings(max_examples=FUZZ_EXAMPLES, deadline=None)
@given(
    st.one_of(
        plain_json, _wireish, st.fixed_dictionaries({"messages": st.lists(_wireish, max_size=4)})
    )
)
def test_arbitrary_json_gives_a_transcript_or_a_parse_error(body: Any) -> None:
    assert_parsed_or_located(parse_request, body, Transcript)


@settings(max_examples=FUZZ_EXAMPLES, deadline=None)
@given(
    st.one_of(
        plain_json,
        _wireish,
        st.fixed_dictionaries(
            {"choices": st.lists(st.fixed_dictionaries({"message": _wireish}), max_size=2)}
        ),
    )
)
def test_arbitrary_json_gives_a_reply_or_a_parse_error(body: Any) -> None:
    assert_parsed_or_located(parse_response, body, Message)


_SHORT_FORM_MESSAGES = st.lists(
    st.one_of(
        st.builds(
            lambda role, text: {"role": role, "content": text},
            st.sampled_from(["system", "developer", "user", "assistant"]),
            st.text(max_size=20) | st.just("<context-summary>\nold\n</context-summary>"),
        ),
        st.tuples(st.just("ring"), st.integers(1, 3), st.none() | st.text(max_size=8)),
    ),
    max_size=12,
)


def _body(items: list[Any]) -> dict[str, Any]:
    messages: list[dict[str, Any]] = []
    for n, item in enumerate(items):
        if isinstance(item, tuple):  # a ring: width calls, a text or none before them
            _, width, text = item
            ids = [f"c{n}.{k}" for k in range(width)]
            calls = [
                {"id": i, "type": "function", "function": {"name": "f", "arguments": "{}"}}
                for i in ids
            ]
            messages.append({"role": "assistant", "content": text, "tool_calls": calls})
            messages.extend({"role": "tool", "tool_call_id": i, "content": f"out {i}"} for i in ids)
        else:
            messages.append(item)
    return {"model": "gpt-4o", "messages": messages}


@settings(max_examples=100, deadline=None)
@given(_SHORT_FORM_MESSAGES)
def test_short_form_messages_parse_as_the_checked_walk_parses_them(items: list[Any]) -> None:
    # A message that is a role and a string (a tool message: a call id and a string; an
    # assistant's: plain function calls) is made directly; with a null name added it takes the
    # checked walk: the same messages, same ids
    body = _body(items)
    walked = _body(items)
    for message in walked["messages"]:
        message["name"] = None
    short, long = parse_request(body), parse_request(walked)
    assert short == long
    assert [m.id for m in short] == [m.id for m in long]


@pytest.mark.parametrize(
    ("message", "where"),
    [
        ({"role": ["user"], "content": "a"}, "messages[0].role"),
        ({"role": "user", "name": "a"}, "messages[0].content"),
        ({"role": "tool", "tool_call_id": 7, "content": "a"}, "messages[0].tool_call_id"),
        ({"role": "robot", "content": "a"}, "messages[0].role"),
        (
            {"role": "assistant", "tool_calls": [{"id": "c", "type": "fn", "function": {}}]},
            "messages[0].tool_calls[0].type",
        ),
        (
            {"role": "assistant", "content": 3, "tool_calls": [{"id": "c", "function": {}}]},
            "messages[0].content",
        ),
    ],
)
def test_short_form_lookalikes_get_the_named_error(message: dict[str, Any], where: str) -> None:
    with pytest.raises(ParseError) as info:
        parse_request({"messages": [message]})
    assert info.value.where == where
