"""The reasoning token count a response reports, carried on its reasoning parts
(``ReasoningPart.tokens``): parsed from Responses and Gemini answers, kept by session files, and
part of the digest (a replayed item costs its count: ``reference_impl.tokens``)."""

from __future__ import annotations

import json

import pytest
from paths import RECORDINGS_MORE

from reference_impl.errors import CtxconfError
from reference_impl.shapes import get_shape
from reference_impl.shapes.base import ResponseMeta
from reference_impl.transcript import (
    Message,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    Transcript,
    canonical_json,
    transcript_from_json,
    transcript_to_json,
)

RESPONSES = get_shape("openai-responses")
GEMINI = get_shape("gemini")


def _responses_answer(reasoning_tokens: object, *, items: int = 1) -> dict[str, object]:
    output: list[dict[str, object]] = [
        {"type": "reasoning", "id": f"rs_{i}", "summary": [], "encrypted_content": f"gAAA{i}"}
        for i in range(items)
    ]
    output.append(
        {
            "type": "function_call",
            "id": "fc_1",
            "call_id": "call_1",
            "name": "f",
            "arguments": "{}",
        }
    )
    return {
        "id": "resp_1",
        "object": "response",
        "output": output,
        "usage": {
            "input_tokens": 10,
            "output_tokens": 80,
            "output_tokens_details": {"reasoning_tokens": reasoning_tokens},
        },
    }


def _tokens(message: Message) -> list[int | None]:
    return [p.tokens for p in message.parts if isinstance(p, ReasoningPart)]


# ------------------------------------------------------------------------------- Responses


def test_a_responses_answer_carries_its_reasoning_tokens_on_its_item() -> None:
    message = RESPONSES.parse_response(_responses_answer(45))
    assert _tokens(message) == [45]
    # not on the wire: equality and the rendered request ignore it
    plain = RESPONSES.parse_response({**_responses_answer(45), "usage": None})
    assert _tokens(plain) == [None]
    assert message == plain
    assert message.digest != plain.digest  # but a counter's memo must tell them apart


def test_several_items_share_the_count_and_the_sum_is_kept() -> None:
    assert _tokens(RESPONSES.parse_response(_responses_answer(10, items=3))) == [4, 3, 3]


@pytest.mark.parametrize("reported", [0, None, "12", True, -3])
def test_a_zero_or_malformed_count_is_left_unknown(reported: object) -> None:
    # gpt-5-mini reports 0 for items it bills about 60 tokens for: 0 is not trusted.
    assert _tokens(RESPONSES.parse_response(_responses_answer(reported))) == [None]


def test_a_rendered_answer_reports_the_carried_tokens() -> None:
    message = RESPONSES.parse_response(_responses_answer(45))
    body = RESPONSES.render_response(message, ResponseMeta(model="gpt-5", output_tokens=60))
    assert body["usage"]["output_tokens_details"]["reasoning_tokens"] == 45
    assert _tokens(RESPONSES.parse_response(body)) == [45]


@pytest.mark.recordings
def test_recorded_answers_carry_what_they_reported() -> None:
    path = (
        RECORDINGS_MORE
        / "openai_responses/interleaved_reasoning_between_tool_calls__simonw-llm.yaml"
    )
    if not path.is_file():
        pytest.skip(f"{path} is absent: the public recordings live next to the repo")
    from conformance.traffic.reading import read_recording

    reported = []
    carried = []
    for interaction in read_recording(path):
        body = interaction.response_body
        assert isinstance(body, dict)
        reported.append(body["usage"]["output_tokens_details"]["reasoning_tokens"])
        carried.extend(_tokens(RESPONSES.parse_response(body)))
    assert carried == reported == [45, 98, 196, 17]


# ---------------------------------------------------------------------------------- Gemini


def _gemini_answer(thoughts: object) -> dict[str, object]:
    return {
        "candidates": [
            {
                "content": {
                    "role": "model",
                    "parts": [
                        {"functionCall": {"name": "f", "args": {}}, "thoughtSignature": "c2ln"},
                        {"functionCall": {"name": "g", "args": {}}},
                    ],
                }
            }
        ],
        "usageMetadata": {"promptTokenCount": 10, "thoughtsTokenCount": thoughts},
        "responseId": "r1",
    }


def test_a_gemini_answer_carries_its_thought_tokens_on_the_signature() -> None:
    message = GEMINI.parse_response(_gemini_answer(132))
    assert _tokens(message) == [132]
    assert [p.kind for p in message.parts] == ["reasoning", "tool_call", "tool_call"]
    assert _tokens(GEMINI.parse_response(_gemini_answer(None))) == [None]


# --------------------------------------------------------------------------- session files


def _session(tokens: int | None) -> Transcript:
    reasoning = ReasoningPart(
        "openai-responses", canonical_json({"type": "reasoning", "id": "rs_1"}), tokens
    )
    return Transcript(
        (
            Message("user", (TextPart("hi"),)),
            Message("assistant", (reasoning, ToolCallPart("call_1", "f", "{}"))),
        )
    )


def test_session_files_keep_the_count_and_older_files_still_load() -> None:
    text = transcript_to_json(_session(339))
    loaded = transcript_from_json(text)
    assert _tokens(loaded.messages[1]) == [339]
    data = json.loads(text)
    part = data["messages"][1]["parts"][0]
    assert part["tokens"] == 339
    del part["tokens"]  # a session file written before the count existed
    assert _tokens(transcript_from_json(json.dumps(data)).messages[1]) == [None]
    assert "tokens" not in json.loads(transcript_to_json(_session(None)))["messages"][1]["parts"][0]


def test_a_negative_count_in_a_session_file_is_a_named_error() -> None:
    data = json.loads(transcript_to_json(_session(5)))
    data["messages"][1]["parts"][0]["tokens"] = -1
    with pytest.raises(CtxconfError, match="negative"):
        transcript_from_json(json.dumps(data))
