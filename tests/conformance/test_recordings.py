"""The recordings reader: every serialization under ../shared/recordings, and synthetic cassettes.

The expected counts, URLs and statuses in ``EXPECTED`` were read off the files by hand (and with
``yaml.safe_load`` + ``gzip`` outside this project), not from the reader's own output.
"""

from __future__ import annotations

import base64
import gzip
import json
import zlib
from pathlib import Path

import pytest
from paths import RECORDINGS

from conformance.errors import RecordingError
from conformance.traffic.endpoints import detect_dialect, is_token_count_url
from conformance.traffic.reading import (
    RecordedInteraction,
    detect_shape,
    iter_recordings,
    read_cassette,
    read_jsonl_log,
    read_recording,
)

needs_recordings = pytest.mark.skipif(
    not RECORDINGS.is_dir(),
    reason=f"{RECORDINGS} is absent: the public recordings live next to the repo in ../shared/recordings",
)

OPENAI_CHAT = "https://api.openai.com/v1/chat/completions"
RESPONSES = "https://api.openai.com/v1/responses"
ANTHROPIC_BETA = "https://api.anthropic.com/v1/messages?beta=true"
GEMINI_PRO = (
    "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-pro:generateContent"
)
NOVA = "https://bedrock-runtime.us-east-1.amazonaws.com/model/amazon.nova-micro-v1%3A0/converse"

# file -> (url of every interaction, statuses in order, shape)
EXPECTED: dict[str, tuple[str, tuple[int, ...], str]] = {
    "anthropic/400_effort_unsupported_envelope.yaml": (
        ANTHROPIC_BETA,
        (400,),
        "anthropic-messages",
    ),
    "anthropic/400_input_shape_ddtrace.yaml": (
        "https://api.anthropic.com/v1/messages",
        (400,),
        "anthropic-messages",
    ),
    "anthropic/count_tokens_with_tool_pair.yaml": (
        "https://api.anthropic.com/v1/messages/count_tokens?beta=true",
        (200,),
        "anthropic-messages",
    ),
    "anthropic/parallel_4_tool_use_followup.yaml": (
        ANTHROPIC_BETA,
        (200, 200),
        "anthropic-messages",
    ),
    "anthropic/tool_result_followup_plain_vcrpy_ddtrace.yaml": (
        "https://api.anthropic.com/v1/messages",
        (200,),
        "anthropic-messages",
    ),
    "bedrock/converse_400_invalid_model.yaml": (
        "https://bedrock-runtime.us-east-1.amazonaws.com/model/us.does-not-exist-model-v1%3A0/converse",
        (400,),
        "bedrock-converse",
    ),
    "bedrock/converse_parallel_toolUse_followup_otel.yaml": (NOVA, (200, 200), "bedrock-converse"),
    "gateways/deepseek_chat_thinking_tools.yaml": (
        "https://api.deepseek.com/chat/completions",
        (200, 200, 200),
        "openai-chat",
    ),
    "gateways/deepseek_responses_400_interleaved_calls.yaml": (
        "https://api.deepseek.com/responses",
        (400,),
        "openai-responses",
    ),
    "gateways/openrouter_429_provider_error.yaml": (
        "https://openrouter.ai/api/v1/chat/completions",
        (429, 429, 429),
        "openai-chat",
    ),
    "gemini/generate_content_fcall_followup.yaml": (GEMINI_PRO, (200, 200, 200), "gemini"),
    "gemini/vertex_400_invalid_role_otel.yaml": (
        (
            "https://us-central1-aiplatform.googleapis.com/v1/projects/fake-project/locations/"
            "us-central1/publishers/google/models/gemini-2.5-pro:generateContent"
            "?%24alt=json%3Benum-encoding%3Dint"
        ),
        (400,),
        "gemini",
    ),
    "openai_chat/400_system_role_unsupported_o1mini.yaml": (OPENAI_CHAT, (400,), "openai-chat"),
    "openai_chat/parallel_2_tools_followup_otel.yaml": (OPENAI_CHAT, (200, 200), "openai-chat"),
    "openai_chat/single_tool_followup.yaml": (OPENAI_CHAT, (200, 200), "openai-chat"),
    "openai_chat/three_turn_tool_history_openllmetry.yaml": (
        OPENAI_CHAT,
        (200, 200, 200),
        "openai-chat",
    ),
    "openai_responses/400_error_envelope_temperature.yaml": (RESPONSES, (400,), "openai-responses"),
    "openai_responses/400_reasoning_without_following_item.yaml": (
        RESPONSES,
        (200, 400, 200),
        "openai-responses",
    ),
    "openai_responses/input_tokens_count_with_tools.yaml": (
        "https://api.openai.com/v1/responses/input_tokens",
        (200,),
        "openai-responses",
    ),
    "openai_responses/parallel_2_fc_followup.yaml": (RESPONSES, (200, 200), "openai-responses"),
}


def _read(name: str) -> list[RecordedInteraction]:
    return read_cassette(RECORDINGS / name)


# ------------------------------------------------------------------------ public recordings


@needs_recordings
@pytest.mark.recordings
@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_every_public_recording_reads_with_its_urls_statuses_and_shape(name: str) -> None:
    url, statuses, shape = EXPECTED[name]
    interactions = _read(name)
    assert tuple(i.status for i in interactions) == statuses
    assert {i.url for i in interactions} == {url}
    assert [i.index for i in interactions] == list(range(len(statuses)))
    for interaction in interactions:
        assert interaction.method == "POST"
        assert interaction.shape == shape
        # Every request body in the corpus is a JSON object, whatever the serializer.
        assert isinstance(interaction.request_body, dict)
        assert interaction.response_body is not None


@needs_recordings
@pytest.mark.recordings
def test_iter_recordings_walks_the_whole_folder_and_skips_provenance() -> None:
    seen = list(iter_recordings(RECORDINGS))
    files = {Path(i.file).resolve().relative_to(RECORDINGS.resolve()).as_posix() for i in seen}
    assert files == set(EXPECTED)
    assert len(seen) == sum(len(statuses) for _, statuses, _ in EXPECTED.values()) == 35


@needs_recordings
@pytest.mark.recordings
def test_gzip_binary_response_is_decompressed_plain_vcrpy() -> None:
    (interaction,) = _read("anthropic/tool_result_followup_plain_vcrpy_ddtrace.yaml")
    assert interaction.response_header("Content-Encoding") == "gzip"
    body = interaction.response_body
    assert isinstance(body, dict)
    assert body["id"] == "msg_016CpjbSjMnkUfjwJbgpEsZP"
    assert body["usage"] == {"input_tokens": 768, "output_tokens": 29}
    assert interaction.raw_response_text is not None
    assert "73\u00b0F" in interaction.raw_response_text
    # The request body was a JSON string spread over folded YAML lines.
    request = interaction.request_body
    assert isinstance(request, dict)
    assert request["messages"][2]["content"][0]["tool_use_id"] == "toolu_01DYJo37oETVsCdLTTcCWcdq"


@needs_recordings
@pytest.mark.recordings
def test_gzip_responses_of_openllmetry_cassette() -> None:
    interactions = _read("openai_chat/three_turn_tool_history_openllmetry.yaml")
    ids = [i.response_body["id"] for i in interactions if isinstance(i.response_body, dict)]
    assert ids == [
        "chatcmpl-9gKNZbUWSC4s2Uh2QfVV7PYiqWIuH",
        "chatcmpl-DPTBsaFSKpfVjRS1GdlvDNAa4Uz0m",
        "chatcmpl-DPTMq9dWVwbGykdacWnIkDij8YjIE",
    ]
    first = interactions[0].request_body
    assert isinstance(first, dict)
    assert first["messages"][0]["role"] == "assistant"


@needs_recordings
@pytest.mark.recordings
def test_pretty_printed_json_literal_blocks_otel() -> None:
    first, second = _read("openai_chat/parallel_2_tools_followup_otel.yaml")
    assert isinstance(first.request_body, dict)
    assert [m["role"] for m in first.request_body["messages"]] == ["system", "user"]
    assert isinstance(second.request_body, dict)
    roles = [m["role"] for m in second.request_body["messages"]]
    assert roles[-2:] == ["tool", "tool"]
    assert first.request_header("authorization") == "Bearer test_openai_api_key"


@needs_recordings
@pytest.mark.recordings
def test_pydantic_ai_parsed_body_on_request_and_response() -> None:
    _, rejected, _ = _read("openai_responses/400_reasoning_without_following_item.yaml")
    assert rejected.raw_response_text is None  # stored as a mapping, not text
    error = rejected.response_body
    assert isinstance(error, dict)
    assert error["error"]["message"].endswith("was provided without its required following item.")
    assert error["error"]["param"] == "input"
    assert isinstance(rejected.request_body, dict)
    assert "input" in rejected.request_body


@needs_recordings
@pytest.mark.recordings
def test_binary_header_values_are_text_bedrock() -> None:
    (interaction,) = _read("bedrock/converse_400_invalid_model.yaml")
    assert interaction.request_header("content-type") == "application/json"
    assert interaction.request_header("amz-sdk-request") == "attempt=1"
    assert interaction.response_body == {"message": "The provided model identifier is invalid."}


@needs_recordings
@pytest.mark.recordings
@pytest.mark.parametrize(
    ("recording", "dialect", "message"),
    [
        # A JSON error body sent as application/octet-stream (DeepSeek).
        (
            "gateways/deepseek_responses_400_interleaved_calls.yaml",
            "deepseek",
            "No tool output found for tool call call-a.",
        ),
        (
            "gemini/vertex_400_invalid_role_otel.yaml",
            "vertex",
            "Please use a valid role: user, model.",
        ),
    ],
    ids=["deepseek-octet-stream", "vertex"],
)
def test_gateway_error_body_and_dialect(recording: str, dialect: str, message: str) -> None:
    (interaction,) = _read(recording)
    assert interaction.dialect == dialect
    body = interaction.response_body
    assert isinstance(body, dict)
    assert body["error"]["message"] == message


@needs_recordings
@pytest.mark.recordings
def test_token_count_endpoints_are_flagged() -> None:
    counted = [i for i in iter_recordings(RECORDINGS) if i.is_token_count]
    assert sorted(Path(i.file).name for i in counted) == [
        "count_tokens_with_tool_pair.yaml",
        "input_tokens_count_with_tools.yaml",
    ]


# --------------------------------------------------------------------- synthetic cassettes


def _gzip_b64(text: str) -> str:
    encoded = base64.b64encode(gzip.compress(text.encode())).decode()
    return "\n".join(encoded[i : i + 76] for i in range(0, len(encoded), 76))


def _indent(text: str, spaces: int) -> str:
    return "\n".join(" " * spaces + line for line in text.splitlines())


def test_synthetic_plain_vcrpy_with_gzip_binary_response(tmp_path: Path) -> None:
    response = '{"id": "r1", "choices": []}'
    path = tmp_path / "plain.yaml"
    path.write_text(
        "interactions:\n"
        "- request:\n"
        '    body: \'{"messages": [{"role": "user", "content": "hi"}]}\'\n'
        "    headers:\n"
        "      Content-Type:\n"
        "      - application/json\n"
        "    method: post\n"
        f"    uri: {OPENAI_CHAT}\n"
        "  response:\n"
        "    body:\n"
        "      string: !!binary |\n"
        f"{_indent(_gzip_b64(response), 8)}\n"
        "    headers:\n"
        "      Content-Encoding:\n"
        "      - gzip\n"
        "    status:\n"
        "      code: 200\n"
        "      message: OK\n"
        "version: 1\n"
    )
    (interaction,) = read_cassette(path)
    assert interaction.method == "POST"
    assert interaction.request_body == {"messages": [{"role": "user", "content": "hi"}]}
    assert interaction.request_headers == {"content-type": ("application/json",)}
    assert interaction.response_body == {"id": "r1", "choices": []}
    assert interaction.raw_response_text == response
    assert interaction.status == 200


def test_synthetic_pretty_json_literal_block_and_text_response(tmp_path: Path) -> None:
    body = json.dumps({"contents": [{"role": "user", "parts": [{"text": "x"}]}]}, indent=2)
    path = tmp_path / "pretty.yml"
    path.write_text(
        "interactions:\n"
        "- request:\n"
        "    body: |-\n"
        f"{_indent(body, 6)}\n"
        "    headers: {}\n"
        "    method: POST\n"
        "    uri: https://example.test/v1/models/m:generateContent\n"
        "  response:\n"
        "    body:\n"
        "      string: plain text, not JSON\n"
        "    headers: {}\n"
        "    status: {code: 503, message: Unavailable}\n"
    )
    (interaction,) = read_cassette(path)
    assert interaction.request_body == {"contents": [{"role": "user", "parts": [{"text": "x"}]}]}
    assert interaction.shape == "gemini"
    assert interaction.response_body == "plain text, not JSON"
    assert interaction.status == 503


def test_synthetic_parsed_body_and_binary_headers_and_python_tags(tmp_path: Path) -> None:
    path = tmp_path / "parsed.yaml"
    content_type = base64.b64encode(b"application/json").decode()
    path.write_text(
        "interactions:\n"
        "- request:\n"
        "    headers:\n"
        "      content-type:\n"
        f"      - !!binary {content_type}\n"
        "      ? !!python/object/apply:multidict._multidict.istr\n"
        "        - X-Trace\n"
        "      : - abc\n"
        "    method: POST\n"
        "    parsed_body:\n"
        "      input:\n"
        "      - {role: user, content: hello}\n"
        f"    uri: {RESPONSES}\n"
        "  response:\n"
        "    headers: {}\n"
        "    parsed_body:\n"
        "      output: []\n"
        "    status: {code: 200, message: OK}\n"
    )
    (interaction,) = read_cassette(path)
    assert interaction.request_headers == {
        "content-type": ("application/json",),
        "x-trace": ("abc",),
    }
    assert interaction.request_body == {"input": [{"role": "user", "content": "hello"}]}
    assert interaction.response_body == {"output": []}
    assert interaction.raw_response_text is None
    assert interaction.shape == "openai-responses"


def test_python_object_tags_never_build_objects(tmp_path: Path) -> None:
    path = tmp_path / "evil.yaml"
    path.write_text(
        "interactions:\n"
        "- request:\n"
        "    body: !!python/object/apply:os.system ['echo pwned']\n"
        "    method: POST\n"
        f"    uri: {OPENAI_CHAT}\n"
    )
    (interaction,) = read_cassette(path)
    assert interaction.raw_request_text == "echo pwned"  # the plain value, never executed
    assert interaction.request_body is None
    assert interaction.status is None


def test_json_cassette_and_gzip_file(tmp_path: Path) -> None:
    document = {
        "interactions": [
            {
                "request": {"method": "POST", "uri": OPENAI_CHAT, "body": '{"messages": []}'},
                "response": {"status": {"code": 400}, "body": {"string": '{"error": {}}'}},
            }
        ],
        "version": 1,
    }
    path = tmp_path / "cassette.json.gz"
    path.write_bytes(gzip.compress(json.dumps(document).encode()))
    (interaction,) = read_recording(path)
    assert interaction.status == 400
    assert interaction.request_body == {"messages": []}
    assert interaction.response_body == {"error": {}}


def test_jsonl_log_with_urls_bare_bodies_and_string_bodies(tmp_path: Path) -> None:
    lines = [
        json.dumps({"url": OPENAI_CHAT, "method": "post", "body": {"messages": []}, "status": 200}),
        "",
        json.dumps({"input": [{"role": "user", "content": "x"}]}),
        json.dumps(
            {"uri": "https://api.deepseek.com/chat/completions", "body": '{"messages": []}'}
        ),
    ]
    path = tmp_path / "log.jsonl"
    path.write_text("\n".join(lines) + "\n")
    first, bare, text_body = read_jsonl_log(path)
    assert (first.method, first.status, first.request_body) == ("POST", 200, {"messages": []})
    assert bare.index == 2
    assert bare.url == ""
    assert bare.request_body == {"input": [{"role": "user", "content": "x"}]}
    assert bare.shape == "openai-responses"
    assert text_body.request_body == {"messages": []}
    assert text_body.dialect == "deepseek"


# Characters str.splitlines() ends a line at that a JSON string may hold raw (JSON escapes only
# U+0000-U+001F and '"', '\\'): a logger writing ensure_ascii=False keeps them as they are.
SEPARATORS = "one\u2028two\u2029three\x85four\x1cfive\x1dsix\x1eseven"


def test_jsonl_log_line_holding_a_unicode_line_separator_is_one_request(tmp_path: Path) -> None:
    body = {"messages": [{"role": "user", "content": SEPARATORS}]}
    lines = [
        json.dumps({"url": OPENAI_CHAT, "body": body}, ensure_ascii=False),
        json.dumps({"url": OPENAI_CHAT, "body": {"messages": []}}) + "\r",  # a CRLF log
    ]
    path = tmp_path / "log.jsonl"
    path.write_bytes(("\n".join(lines) + "\n").encode())
    first, second = read_jsonl_log(path)
    assert first.request_body == body
    assert (second.index, second.request_body) == (1, {"messages": []})


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        (
            '{"messages": []}\n{not json\n',
            (
                "line 2 is not valid JSON "
                "(Expecting property name enclosed in double quotes at column 2)"
            ),
        ),
        # worded as `ctxconf audit` words the line (documents.json_problem), not "starting at
        # (column 14)"
        (
            '{"messages": "abc\n',
            "line 1 is not valid JSON (Unterminated string starting at column 14)",
        ),
    ],
    ids=["bad-key", "cut-in-a-string"],
)
def test_jsonl_log_names_the_bad_line(tmp_path: Path, text: str, reason: str) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(text)
    with pytest.raises(RecordingError) as info:
        read_jsonl_log(path)
    assert info.value.file == str(path)
    assert info.value.reason == reason
    assert str(info.value) == f"{path}: {reason}"
    assert isinstance(info.value, ValueError)


def test_a_json_cassette_that_is_not_json_names_the_line_and_the_column(tmp_path: Path) -> None:
    path = tmp_path / "broken.json"
    path.write_text('{"interactions": [\n  {"request": }\n]}\n')
    with pytest.raises(RecordingError) as info:
        read_recording(path)
    assert str(info.value) == f"{path}: line 2: not valid JSON (Expecting value at column 15)"


def test_a_request_body_holding_an_integer_too_long_to_read_names_its_column(
    tmp_path: Path,
) -> None:
    body = '{"model": "gpt-4o", "n": ' + "9" * 5000 + "}"
    path = tmp_path / "long.yaml"
    path.write_text(
        f"interactions:\n- request: {{uri: '{OPENAI_CHAT}', body: '{body}'}}\n"
        "  response: {status: {code: 200}, body: {string: '{}'}}\n"
    )
    with pytest.raises(RecordingError) as info:
        read_cassette(path)
    assert info.value.reason == (
        "the body holds an integer of 5,000 digits, more than the 4,300 Python reads at column 26"
    )
    assert str(info.value) == f"{path}: interactions[0].request.body: {info.value.reason}"


def test_corrupt_gzip_log_is_a_recording_error_like_a_corrupt_cassette(tmp_path: Path) -> None:
    # Truncated gzip: the JSON-lines reader must not let gzip's own exception escape.
    broken = gzip.compress(b'{"messages": []}\n')[:12]
    for name in ("log.jsonl.gz", "cassette.json.gz"):
        path = tmp_path / name
        path.write_bytes(broken)
        with pytest.raises(RecordingError, match="corrupt gzip file") as info:
            read_recording(path)
        assert info.value.file == str(path)


def test_response_text_that_is_not_json_stays_text_and_request_text_is_kept(
    tmp_path: Path,
) -> None:
    path = tmp_path / "text.yaml"
    path.write_text(
        "interactions:\n- request: {uri: 'http://x/v1/chat/completions', body: 'not json'}\n"
        "  response: {status: {code: 502}, body: {string: 'Bad Gateway'}}\n"
    )
    (interaction,) = read_cassette(path)
    assert interaction.request_body is None
    assert interaction.raw_request_text == "not json"
    assert interaction.response_body == "Bad Gateway"
    assert interaction.raw_response_text == "Bad Gateway"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("interactions: [1]\n", r"interactions\[0\]: an interaction must be a mapping"),
        ("interactions:\n- request: {method: POST}\n", r"interactions\[0\]\.request\.uri"),
        ("just: a mapping\n", "not a recording"),
        ("interactions: [\n", "not YAML"),
        (
            (
                "interactions:\n- request: {uri: 'http://x/chat/completions'}\n"
                "  response: {status: {code: teapot}}\n"
            ),
            r"status code 'teapot' is not an integer",
        ),
        (
            (
                "interactions:\n- request: {uri: 'http://x/chat/completions'}\n"
                "  response:\n    headers: {content-encoding: [br]}\n"
                "    body: {string: !!binary //79/A==}\n"
            ),
            r"the body cannot be decoded: content-encoding br; ctxconf decodes gzip and deflate",
        ),
    ],
)
def test_broken_cassettes_raise_recording_error_with_location(
    tmp_path: Path, text: str, message: str
) -> None:
    path = tmp_path / "broken.yaml"
    path.write_text(text)
    with pytest.raises(RecordingError, match=message) as info:
        read_cassette(path)
    assert str(path) in str(info.value)


# ----------------------------------------------------------------------- content codings

ANSWER = {"id": "r1", "choices": []}


def _coded(times: int, data: bytes = json.dumps(ANSWER).encode()) -> bytes:
    for _ in range(times):
        data = gzip.compress(data, mtime=0)
    return data


def _coded_cassette(tmp_path: Path, lines: list[str], body: bytes) -> Path:
    """A vcrpy cassette whose answer has ``body`` (``!!binary``) and one ``Content-Encoding``
    line per item of ``lines``, as vcrpy records repeated header lines."""
    encoded = base64.b64encode(body).decode()
    path = tmp_path / "coded.yaml"
    path.write_text(
        "interactions:\n"
        "- request:\n"
        f"    uri: {OPENAI_CHAT}\n"
        "    body: '{\"messages\": []}'\n"
        "  response:\n"
        "    status: {code: 200}\n"
        "    headers:\n"
        "      Content-Encoding:\n"
        + "".join(f"      - {line}\n" for line in lines)
        + f"    body: {{string: !!binary {encoded}}}\n"
    )
    return path


@pytest.mark.parametrize("lines", [["gzip, gzip"], ["gzip", "gzip"]], ids=["one line", "two lines"])
def test_a_body_gzipped_twice_is_decoded_twice(tmp_path: Path, lines: list[str]) -> None:
    # RFC 9110 5.3: repeated lines are one list; 8.4: codings applied in order, undone last first
    (interaction,) = read_cassette(_coded_cassette(tmp_path, lines, _coded(2)))
    assert interaction.response_body == ANSWER


def test_a_har_answer_gzipped_twice_is_decoded_twice(tmp_path: Path) -> None:
    entry = {
        "request": {"method": "POST", "url": OPENAI_CHAT, "postData": {"text": "{}"}},
        "response": {
            "status": 200,
            "headers": [
                {"name": "content-encoding", "value": "gzip"},
                {"name": "Content-Encoding", "value": "gzip"},
            ],
            "content": {"text": base64.b64encode(_coded(2)).decode(), "encoding": "base64"},
        },
    }
    path = tmp_path / "coded.har"
    path.write_text(json.dumps({"log": {"entries": [entry]}}))
    (interaction,) = read_recording(path)
    assert interaction.response_body == ANSWER


def test_a_body_its_recorder_decoded_is_read_as_recorded(tmp_path: Path) -> None:
    # some recorders store the body decoded and keep the header: nothing left to undo
    path = _coded_cassette(tmp_path, ["gzip", "gzip"], json.dumps(ANSWER).encode())
    (interaction,) = read_cassette(path)
    assert interaction.response_body == ANSWER


@pytest.mark.parametrize(
    ("lines", "body", "message"),
    [
        (
            # the sixth on a line of its own: a reader of the first line alone never sees it
            ["gzip, gzip, gzip, gzip, gzip", "gzip"],
            _coded(6),
            "content-encoding lists 6 codings, more than the 5 ctxconf decodes",
        ),
        (
            ["gzip", "gzip"],
            _coded(1, b"not gzip at all"),
            r"gzip data \(coding 1 of 2\) is corrupt",
        ),
        (
            ["br", "gzip"],
            gzip.compress(b"\xff\xfe", mtime=0),
            r"content-encoding br \(coding 1 of 2\); ctxconf decodes gzip and deflate",
        ),
        # ends before its end-of-stream marker: what decoded is not the answer recorded
        (["gzip"], _coded(1)[:-12], "gzip data is cut short"),
        (["deflate"], zlib.compress(json.dumps(ANSWER).encode())[:-4], "deflate data is cut short"),
        (
            ["gzip", "gzip"],
            gzip.compress(_coded(1)[:-12], mtime=0),
            r"gzip data \(coding 1 of 2\) is cut short",
        ),
    ],
    ids=[
        "six codings",
        "corrupt inner layer",
        "br inside gzip",
        "gzip cut short",
        "deflate cut short",
        "inner layer cut short",
    ],
)
def test_a_body_that_cannot_be_decoded_names_the_coding(
    tmp_path: Path, lines: list[str], body: bytes, message: str
) -> None:
    path = _coded_cassette(tmp_path, lines, body)
    with pytest.raises(RecordingError, match=f"the body cannot be decoded: {message}") as info:
        read_cassette(path)
    assert info.value.index == 0
    assert str(info.value).startswith(f"{path}: interactions[0].response.body.string: ")


def test_each_layer_is_decoded_within_the_input_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CTXCONF_MAX_INPUT_BYTES", "4096")
    padded = json.dumps(ANSWER).encode() + b" " * 50_000
    assert len(_coded(1, padded)) < 4096  # the outer layer decodes within the limit
    path = _coded_cassette(tmp_path, ["gzip", "gzip"], _coded(2, padded))
    with pytest.raises(
        RecordingError, match=r"over the input limit when decoded \(coding 1 of 2\)"
    ):
        read_cassette(path)


def test_unknown_suffix_and_missing_folder(tmp_path: Path) -> None:
    with pytest.raises(RecordingError, match="unknown recording type"):
        read_recording(tmp_path / "notes.md")
    with pytest.raises(RecordingError, match="no such file or folder"):
        list(iter_recordings(tmp_path / "missing"))


# ---------------------------------------------------------------------- shape and dialect


@pytest.mark.parametrize(
    ("url", "shape"),
    [
        ("https://api.openai.com/v1/chat/completions", "openai-chat"),
        ("https://api.openai.com/v1/responses", "openai-responses"),
        ("https://api.openai.com/v1/responses/input_tokens", "openai-responses"),
        ("https://api.anthropic.com/v1/messages?beta=true", "anthropic-messages"),
        ("https://api.anthropic.com/v1/messages/count_tokens", "anthropic-messages"),
        ("https://x.googleapis.com/v1beta/models/gemini-2.5-pro:generateContent", "gemini"),
        ("https://x.googleapis.com/v1beta/models/gemini-2.5-pro:streamGenerateContent", "gemini"),
        (
            "https://bedrock-runtime.us-east-1.amazonaws.com/model/a%3A0/converse",
            "bedrock-converse",
        ),
        (
            "https://bedrock-runtime.eu-west-1.amazonaws.com/model/a/converse-stream",
            "bedrock-converse",
        ),
        ("https://example.test/v1/embeddings", None),
    ],
)
def test_detect_shape_from_url(url: str, shape: str | None) -> None:
    assert detect_shape(url, None) == shape


@pytest.mark.parametrize(
    ("body", "shape"),
    [
        ({"contents": []}, "gemini"),
        ({"input": "hi", "model": "gpt-5"}, "openai-responses"),
        ({"messages": [{"role": "user", "content": [{"text": "x"}]}]}, "bedrock-converse"),
        ({"messages": [], "inferenceConfig": {}}, "bedrock-converse"),
        ({"messages": [], "system": "be brief", "max_tokens": 10}, "anthropic-messages"),
        (
            {
                "messages": [
                    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t"}]}
                ]
            },
            "anthropic-messages",
        ),
        (
            {
                "model": "claude-haiku-4-5",
                "max_tokens": 10,
                "messages": [{"role": "user", "content": "x"}],
                "tools": [{"name": "f", "input_schema": {"type": "object"}}],
            },
            "anthropic-messages",  # the first request of a tool loop: only its tools tell
        ),
        (
            {
                "messages": [{"role": "user", "content": "x"}],
                "tools": [{"type": "function", "function": {"name": "f", "parameters": {}}}],
            },
            "openai-chat",
        ),
        ({"messages": [{"role": "system", "content": "x"}]}, "openai-chat"),
        ({"messages": "hello", "model": "gpt-4o"}, "openai-chat"),  # a malformed request
        ({"messages": None, "system": "be brief"}, "anthropic-messages"),
        ({"prompt": "x"}, None),
        (["not", "a", "body"], None),
    ],
)
def test_detect_shape_from_body_keys_when_there_is_no_url(body: object, shape: str | None) -> None:
    assert detect_shape("", body) == shape


@pytest.mark.parametrize(
    ("url", "dialect"),
    [
        ("https://api.deepseek.com/chat/completions", "deepseek"),
        ("https://openrouter.ai/api/v1/chat/completions", "openrouter"),
        ("https://api.mistral.ai/v1/chat/completions", "mistral"),
        ("https://dashscope-intl.aliyuncs.com/compatible-mode/v1/chat/completions", "qwen"),
        ("https://myres.openai.azure.com/openai/deployments/d/chat/completions", "azure"),
        (
            "https://generativelanguage.googleapis.com/v1beta/openai/chat/completions",
            "gemini-openai",
        ),
        ("http://localhost:11434/v1/chat/completions", "ollama"),
        ("https://api.openai.com/v1/chat/completions", None),
        ("https://api.anthropic.com/v1/messages", None),
        ("https://evil-deepseek.com.example/chat/completions", None),
    ],
)
def test_detect_dialect_from_host(url: str, dialect: str | None) -> None:
    assert detect_dialect(url) == dialect


def test_is_token_count_url() -> None:
    assert is_token_count_url("https://x/v1beta/models/m:countTokens")
    assert not is_token_count_url("https://api.openai.com/v1/responses")


def test_detect_dialect_reads_the_emulators_path_prefix() -> None:
    from conformance.traffic.endpoints import detect_dialect

    assert detect_dialect("http://127.0.0.1:8080/dialect/mistral/v1/chat/completions") == "mistral"
    assert detect_dialect("http://127.0.0.1:8080/v1/chat/completions") is None
