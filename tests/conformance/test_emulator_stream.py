"""``stream: true`` gets the provider's event stream, and the official SDKs' streaming helpers
accumulate it into the same answer the emulator gives without streaming (ids aside: the
``stream`` flag is part of the request skeleton that seeds them)."""

from __future__ import annotations

from typing import Any

import anthropic
import httpx2
import openai
import pytest
from shape_support import chat_unanswered

from conformance.providers.emulator import create_app
from conformance.providers.emulator_transport import httpx2_transport

APP = create_app()
CHAT: Any = [{"role": "user", "content": "Hi there [emulator: say Hello from the event stream]"}]
CALLS: Any = [{"role": "user", "content": "Weather? [emulator: think] [emulator: call lookup x2]"}]


def _openai() -> openai.OpenAI:
    client = httpx2.Client(transport=httpx2_transport(APP))
    return openai.OpenAI(
        base_url="http://emulator.test/v1", api_key="test", http_client=client, max_retries=0
    )


def _anthropic() -> anthropic.Anthropic:
    client = httpx2.Client(transport=httpx2_transport(APP))
    return anthropic.Anthropic(
        base_url="http://emulator.test", api_key="test", http_client=client, max_retries=0
    )


def test_openai_chat_stream_true_yields_the_text_in_several_chunks() -> None:
    chunks = list(
        _openai().chat.completions.create(model="gpt-4o-mini", messages=CHAT, stream=True)
    )
    pieces = [c.choices[0].delta.content or "" for c in chunks if c.choices]
    assert "".join(pieces) == "Hello from the event stream"
    assert len([p for p in pieces if p]) > 1
    assert chunks[-1].choices[0].finish_reason == "stop"
    assert all(c.object == "chat.completion.chunk" for c in chunks)


def test_openai_chat_stream_helper_accumulates_tool_calls_and_usage() -> None:
    plain = _openai().chat.completions.create(model="gpt-4o-mini", messages=CALLS)
    with _openai().chat.completions.stream(
        model="gpt-4o-mini", messages=CALLS, stream_options={"include_usage": True}
    ) as stream:
        final = stream.get_final_completion()
    streamed_calls = final.choices[0].message.tool_calls or []
    plain_calls = plain.choices[0].message.tool_calls or []
    assert [(c.function.name, c.function.arguments) for c in streamed_calls] == [  # type: ignore[union-attr]
        (c.function.name, c.function.arguments)  # type: ignore[union-attr]
        for c in plain_calls
    ]
    assert all(c.id.startswith("call_") for c in streamed_calls)
    assert final.choices[0].finish_reason == "tool_calls"
    assert final.usage is not None
    assert plain.usage is not None
    assert final.usage.prompt_tokens == plain.usage.prompt_tokens


def test_openai_chat_stream_without_include_usage_has_no_usage_chunk() -> None:
    chunks = list(
        _openai().chat.completions.create(model="gpt-4o-mini", messages=CHAT, stream=True)
    )
    assert all(c.choices for c in chunks)


def test_openai_responses_stream_helper_gives_text_and_the_completed_response() -> None:
    with _openai().responses.stream(model="gpt-4o-mini", input="Hi [emulator: say a b c d]") as s:
        kinds = [event.type for event in s]
        final = s.get_final_response()
    assert kinds[0] == "response.created"
    assert kinds[-1] == "response.completed"
    assert kinds.count("response.output_text.delta") > 1
    assert final.output_text == "a b c d"
    assert final.status == "completed"


def test_openai_responses_stream_true_carries_reasoning_and_calls() -> None:
    plain = _openai().responses.create(model="gpt-4o-mini", input=CALLS)
    events = list(_openai().responses.create(model="gpt-4o-mini", input=CALLS, stream=True))
    numbers = [e.sequence_number for e in events]
    assert numbers == list(range(len(events)))
    completed = events[-1]
    assert completed.type == "response.completed"
    streamed = completed.response.output  # type: ignore[union-attr]
    assert [item.type for item in streamed] == [item.type for item in plain.output]
    assert [getattr(i, "arguments", None) for i in streamed] == [
        getattr(i, "arguments", None) for i in plain.output
    ]
    deltas = [e for e in events if e.type == "response.function_call_arguments.delta"]
    assert deltas


def test_anthropic_messages_stream_get_final_message_matches_the_plain_answer() -> None:
    plain = _anthropic().messages.create(model="claude-haiku-4-5", max_tokens=100, messages=CALLS)
    with _anthropic().messages.stream(
        model="claude-haiku-4-5", max_tokens=100, messages=CALLS
    ) as stream:
        final = stream.get_final_message()
    assert [b.type for b in final.content] == ["thinking", "tool_use", "tool_use"]
    assert [b.type for b in final.content] == [b.type for b in plain.content]
    uses = [(b.name, b.input) for b in final.content if b.type == "tool_use"]
    assert uses == [(b.name, b.input) for b in plain.content if b.type == "tool_use"]
    thinking = final.content[0]
    assert thinking.type == "thinking"
    assert thinking.signature  # the signature_delta arrived
    assert final.stop_reason == plain.stop_reason == "tool_use"
    assert final.usage.input_tokens == plain.usage.input_tokens


def test_anthropic_text_stream_yields_the_text() -> None:
    with _anthropic().messages.stream(
        model="claude-haiku-4-5", max_tokens=100, messages=CHAT
    ) as stream:
        pieces = list(stream.text_stream)
        assert stream.response.headers["x-ctxconf-provenance"] == "emulated"
        assert stream.response.headers["content-type"].startswith("text/event-stream")
    assert "".join(pieces) == "Hello from the event stream"
    assert len(pieces) > 1


def test_a_rejected_streaming_request_is_a_json_error_not_a_stream() -> None:
    broken: Any = chat_unanswered("call_a")
    with pytest.raises(openai.BadRequestError) as caught:
        _openai().chat.completions.create(model="gpt-4o-mini", messages=broken, stream=True)
    assert caught.value.response.headers["x-ctxconf-rule"] == "C1"


def test_stream_false_is_still_plain_json() -> None:
    raw = _openai().chat.completions.with_raw_response.create(
        model="gpt-4o-mini", messages=CHAT, stream=False
    )
    assert raw.headers["content-type"].startswith("application/json")
