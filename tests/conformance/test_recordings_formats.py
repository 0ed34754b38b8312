"""Every recorder's format: Ruby VCR, R ``vcr``, HAR, single-interaction JSON, ``!binary`` bodies,
SSE and AWS event-stream responses; and every file of both shared folders is read.

Expected values were read off the files by hand (``grep``, ``base64 -d``, ``python -m json.tool``
outside this project), not from the reader's output. The interaction totals per folder are the
number of ``- request:`` list items in the YAML files plus the HAR entries, counted with grep.
"""

from __future__ import annotations

import base64
import json
import struct
import zlib
from pathlib import Path

import pytest
from paths import SHARED

from conformance.errors import RecordingError
from conformance.traffic.reading import (
    StreamEvent,
    decode_event_stream,
    parse_sse,
    read_cassette,
    read_recording,
)

FOLDERS = {"recordings": (20, 35), "recordings-more": (157, 339)}  # files, interactions
MORE = SHARED / "recordings-more"

needs_more = pytest.mark.skipif(
    not MORE.is_dir(),
    reason=f"{MORE} is absent: the public recordings live next to the repo in ../shared",
)


def _files(folder: str) -> list[Path]:
    root = SHARED / folder
    return sorted(p for p in root.rglob("*") if p.is_file() and p.name != "PROVENANCE.md")


@pytest.mark.recordings
@pytest.mark.parametrize("folder", sorted(FOLDERS))
def test_every_file_of_each_shared_folder_is_read(folder: str) -> None:
    if not (SHARED / folder).is_dir():
        pytest.skip(f"{SHARED / folder} is absent: the public recordings live in ../shared")
    files = _files(folder)
    expected_files, expected_interactions = FOLDERS[folder]
    assert len(files) == expected_files
    total = sum(len(read_recording(path)) for path in files)  # a RecordingError names the file
    assert total == expected_interactions


def _more(name: str) -> list:  # type: ignore[type-arg]
    return read_cassette(MORE / name)


@needs_more
@pytest.mark.recordings
def test_ruby_vcr_binary_tag_and_lower_case_method() -> None:
    first, interaction = _more("anthropic/parallel_tool_use_ruby_vcr__ruby_llm.yml")
    assert first.method == interaction.method == "POST"  # recorded as "post"
    assert first.status == interaction.status == 200
    assert interaction.request_header("x-api-key") == "<ANTHROPIC_API_KEY>"
    request = interaction.request_body
    assert isinstance(request, dict)
    assert request["model"] == "claude-haiku-4-5-20251001"
    assert [t["name"] for t in request["tools"]] == ["weather", "best_language_to_learn"]
    body = interaction.response_body  # a `!binary |-` (Ruby's local tag) base64 block
    assert isinstance(body, dict)
    assert body["usage"]["input_tokens"] == 893
    assert body["usage"]["output_tokens"] == 90


@needs_more
@pytest.mark.recordings
def test_r_vcr_bare_status_and_scalar_headers() -> None:
    interactions = _more("anthropic/count_tokens_ellmer__ellmer.yml")
    first, second = interactions[:2]
    assert {i.status for i in interactions} == {200}
    assert not interactions[2].is_token_count
    assert first.response_body == {"input_tokens": 12}
    assert second.response_body == {"input_tokens": 20}
    assert first.response_header("content-type") == "application/json"
    assert first.request_headers == {}  # R vcr records no request headers
    assert first.is_token_count


@needs_more
@pytest.mark.recordings
def test_har_entry_request_and_response() -> None:
    (interaction,) = _more("anthropic/400_empty_string_content_har__mirascope.har")
    assert interaction.url == "https://api.anthropic.com/v1/messages"
    assert interaction.status == 400
    assert interaction.request_header("x-api-key") == "[REDACTED]"
    assert interaction.request_body == {
        "model": "claude-haiku-4-5",
        "messages": [{"role": "user", "content": ""}],
        "max_tokens": 100,
    }
    error = interaction.response_body
    assert isinstance(error, dict)
    assert error["error"]["type"] == "invalid_request_error"
    assert error["error"]["message"].startswith("messages.0: all messages must have non-empty")


@needs_more
@pytest.mark.recordings
def test_bedrock_invoke_stream_is_decoded_from_aws_event_stream() -> None:
    interactions = _more("bedrock/invoke_claude_simple_chatlas__chatlas.yaml")
    invoke = interactions[2]
    assert invoke.url.endswith("/invoke-with-response-stream")
    assert invoke.shape == "anthropic-messages"  # an Anthropic body with anthropic_version
    assert invoke.raw_response_bytes is not None
    names = {event.event for event in invoke.response_events}
    assert names == {"chunk"}
    kinds = [e.data["type"] for e in invoke.response_events if isinstance(e.data, dict)]
    assert kinds[0] == "message_start"
    assert kinds[-1] == "message_stop"
    assert invoke.response_body == [event.data for event in invoke.response_events]


@needs_more
@pytest.mark.recordings
def test_sse_responses_come_out_as_events() -> None:
    first, _ = _more("gemini/parallel_fc_chatlas__chatlas.yaml")
    assert first.url.endswith(":streamGenerateContent?alt=sse")
    assert len(first.response_events) == 3
    data = first.response_events[0].data
    assert isinstance(data, dict)
    assert "functionCall" in data["candidates"][0]["content"]["parts"][0]


# ------------------------------------------------------------------------------ synthetic


def _frame(headers: dict[str, str], payload: bytes) -> bytes:
    """One AWS event-stream message, built from the published framing (string headers only)."""
    raw = b""
    for name, value in headers.items():
        encoded = value.encode()
        raw += bytes([len(name)]) + name.encode() + b"\x07" + struct.pack(">H", len(encoded))
        raw += encoded
    total = 12 + len(raw) + len(payload) + 4
    prelude = struct.pack(">II", total, len(raw))
    prelude += struct.pack(">I", zlib.crc32(prelude))
    message = prelude + raw + payload
    return message + struct.pack(">I", zlib.crc32(message))


def test_event_stream_frames_and_invoke_chunk_bytes() -> None:
    inner = base64.b64encode(json.dumps({"type": "message_stop"}).encode()).decode()
    data = _frame({":event-type": "chunk"}, json.dumps({"bytes": inner}).encode())
    data += _frame({":event-type": "metadata"}, b'{"usage": {"inputTokens": 7}}')
    assert decode_event_stream(data) == (
        StreamEvent("chunk", {"type": "message_stop"}),
        StreamEvent("metadata", {"usage": {"inputTokens": 7}}),
    )
    corrupt = bytearray(data)
    corrupt[-1] ^= 0xFF
    assert decode_event_stream(bytes(corrupt)) is None  # message CRC fails
    assert decode_event_stream(b"\x89PNG\r\n\x1a\n" + bytes(20)) is None


def test_parse_sse_joins_data_lines_and_keeps_non_json() -> None:
    text = 'event: a\ndata: {"x":\ndata: 1}\n\n: comment\ndata: [DONE]\n\n'
    assert parse_sse(text) == (StreamEvent("a", {"x": 1}), StreamEvent(None, "[DONE]"))


def test_parse_sse_ends_lines_at_cr_lf_and_crlf_only() -> None:
    # JSON data may hold U+2028, U+0085 or U+001C raw; str.splitlines() ends a line at each
    delta = "one\u2028two\x85three\x1cfour"
    data = json.dumps({"delta": delta}, ensure_ascii=False)
    for end in ("\n", "\r\n", "\r"):
        text = f"event: a{end}data: {data}{end}{end}data: [DONE]{end}{end}"
        assert parse_sse(text) == (StreamEvent("a", {"delta": delta}), StreamEvent(None, "[DONE]"))


def test_a_streamed_response_holding_a_unicode_line_separator_keeps_its_events(
    tmp_path: Path,
) -> None:
    chunk = json.dumps({"choices": [{"delta": {"content": "a\u2028b"}}]}, ensure_ascii=False)
    path = tmp_path / "stream.json"
    path.write_text(
        json.dumps(
            {
                "request": {"uri": "https://api.openai.com/v1/chat/completions", "body": "{}"},
                "response": {
                    "headers": {"content-type": ["text/event-stream"]},
                    "body": {"string": f"data: {chunk}\n\ndata: [DONE]\n\n"},
                },
            },
            ensure_ascii=False,
        ),
        "utf-8",
    )
    (interaction,) = read_recording(path)
    assert [event.data for event in interaction.response_events] == [
        {"choices": [{"delta": {"content": "a\u2028b"}}]},
        "[DONE]",
    ]


def test_single_interaction_json_file(tmp_path: Path) -> None:
    path = tmp_path / "anthropic_messages_post_1.json"
    path.write_text(
        json.dumps(
            {
                "request": {
                    "method": "POST",
                    "url": "https://api.anthropic.com/v1/messages",
                    "headers": {"content-type": "application/json"},
                    "body": json.dumps({"model": "m", "max_tokens": 1, "messages": []}),
                },
                "response": {"status": {"code": 200, "message": "OK"}, "body": '{"id": "x"}'},
            }
        )
    )
    (interaction,) = read_recording(path)
    assert interaction.status == 200
    assert interaction.request_body == {"model": "m", "max_tokens": 1, "messages": []}
    assert interaction.response_body == {"id": "x"}


def test_r_vcr_base64_string_body_and_har_base64_content(tmp_path: Path) -> None:
    request = json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}]})
    r_vcr = tmp_path / "r.yml"
    r_vcr.write_text(
        "http_interactions:\n- request:\n    method: post\n"
        "    uri: https://api.openai.com/v1/chat/completions\n"
        f"    body:\n      base64_string: {base64.b64encode(request.encode()).decode()}\n"
        "  response:\n    status:\n      status_code: '201'\n    body:\n      string: ok\n"
    )
    (interaction,) = read_recording(r_vcr)
    assert interaction.request_body == json.loads(request)
    assert interaction.status == 201
    har = tmp_path / "x.har"
    content = base64.b64encode(b'{"ok": true}').decode()
    har.write_text(
        json.dumps(
            {
                "log": {
                    "entries": [
                        {
                            "request": {"method": "POST", "url": "https://h/v1/responses"},
                            "response": {
                                "status": 200,
                                "headers": [{"name": "X-A", "value": "1"}],
                                "content": {"text": content, "encoding": "base64"},
                            },
                        }
                    ]
                }
            }
        )
    )
    (entry,) = read_recording(har)
    assert entry.response_body == {"ok": True}
    assert entry.response_header("x-a") == "1"
    assert entry.request_body is None


def test_unrecognised_structure_names_the_file_and_why(tmp_path: Path) -> None:
    path = tmp_path / "notes.yaml"
    path.write_text("just: a mapping\n")
    with pytest.raises(RecordingError) as caught:
        read_recording(path)
    assert caught.value.file == str(path)
    assert "http_interactions" in caught.value.reason
    bad = tmp_path / "bad.har"
    bad.write_text(
        json.dumps(
            {
                "log": {
                    "entries": [
                        {
                            "request": {"url": "u"},
                            "response": {"content": {"text": "%%", "encoding": "base64"}},
                        }
                    ]
                }
            }
        )
    )
    with pytest.raises(RecordingError, match="not base64") as caught:
        read_recording(bad)
    assert caught.value.where is not None
    assert "response.content.text" in caught.value.where
