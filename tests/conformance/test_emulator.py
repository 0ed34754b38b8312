"""The emulator answers the official SDKs in their own schemas, judges by the rule catalog, and
never answers bad input with a 500."""

from __future__ import annotations

import asyncio
import gzip
import json
import re
import socket
from collections.abc import MutableMapping
from typing import Any
from urllib.parse import urlsplit

import anthropic
import httpx
import httpx2
import openai
import pytest
from asgi_support import post_scope
from audit_support import GOOD, ORPHAN, messages_twice
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from shape_support import chat_ring, chat_unanswered

from conformance.errors import EmulatorConfigError
from conformance.providers.emulator import create_app, read_request
from conformance.providers.emulator_responses import EmulatorReply, error_envelope
from conformance.providers.emulator_transport import (
    call_app,
    httpx2_transport,
    httpx_transport,
    serving,
)
from conformance.traffic.endpoints import endpoint_for_path
from reference_impl.shapes import get_shape

WEATHER = {
    "type": "function",
    "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {}}},
}
ROUTES = (
    "/v1/chat/completions",
    "/v1/responses",
    "/v1/responses/input_tokens",
    "/v1/messages",
    "/v1/messages/count_tokens",
    "/v1beta/models/gemini-2.5-flash:generateContent",
    "/model/us.anthropic.claude-haiku-4-5-v1:0/converse",
)
APP = create_app()


def _openai(app: Any = APP, prefix: str = "") -> openai.OpenAI:
    client = httpx2.Client(transport=httpx2_transport(app))
    return openai.OpenAI(
        base_url=f"http://emulator.test{prefix}/v1",
        api_key="test",
        http_client=client,
        max_retries=0,
    )


def _anthropic(app: Any = APP) -> anthropic.Anthropic:
    client = httpx2.Client(transport=httpx2_transport(app))
    return anthropic.Anthropic(
        base_url="http://emulator.test", api_key="test", http_client=client, max_retries=0
    )


def _raw(app: Any = APP) -> httpx.Client:
    return httpx.Client(transport=httpx_transport(app), base_url="http://emulator.test")


# ------------------------------------------------------------------------------ SDKs parse it


def test_openai_chat_text_reply_parses_in_the_sdk() -> None:
    reply = _openai().chat.completions.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": "Hello"}]
    )
    assert reply.choices[0].message.role == "assistant"
    assert reply.choices[0].message.content
    assert reply.usage is not None
    assert reply.usage.prompt_tokens > 0


def test_openai_chat_parallel_tool_calls_follow_the_directive() -> None:
    reply = _openai().chat.completions.create(
        model="gpt-4o-mini",
        messages=[{"role": "user", "content": "go [emulator: call get_weather x3]"}],
        tools=[WEATHER],  # type: ignore[list-item]
    )
    calls = reply.choices[0].message.tool_calls or []
    assert [c.function.name for c in calls] == ["get_weather"] * 3  # type: ignore[union-attr]
    assert len({c.id for c in calls}) == 3
    assert all(c.id.startswith("call_") for c in calls)


def test_openai_responses_reasoning_and_call_items_parse() -> None:
    response = _openai().responses.create(
        model="gpt-4o-mini", input="weather? [emulator: think] [emulator: call get_weather]"
    )
    kinds = [item.type for item in response.output]
    assert kinds[0] == "reasoning"
    assert "function_call" in kinds


def test_anthropic_thinking_then_tool_use_parses_in_the_sdk() -> None:
    message = _anthropic().messages.create(
        model="claude-haiku-4-5",
        max_tokens=100,
        messages=[{"role": "user", "content": "[emulator: think] [emulator: call lookup x2]"}],
    )
    kinds = [block.type for block in message.content]
    assert kinds == ["thinking", "tool_use", "tool_use"]
    assert message.stop_reason == "tool_use"


def test_count_endpoints_answer_through_the_sdks() -> None:
    counted = _anthropic().messages.count_tokens(
        model="claude-haiku-4-5", messages=[{"role": "user", "content": "Hello there"}]
    )
    assert counted.input_tokens > 0
    tokens = _openai().responses.input_tokens.count(model="gpt-4o-mini", input="Hello there")
    assert tokens.input_tokens > 0


@pytest.mark.parametrize(
    ("path", "body"),
    [
        (
            "/v1beta/models/gemini-2.5-flash:generateContent",
            {"contents": [{"role": "user", "parts": [{"text": "hi [emulator: call f]"}]}]},
        ),
        (
            "/model/us.anthropic.claude-haiku-4-5-v1:0/converse",
            {"messages": [{"role": "user", "content": [{"text": "hi [emulator: call f]"}]}]},
        ),
    ],
)
def test_gemini_and_bedrock_replies_parse_back_into_the_transcript(
    path: str, body: dict[str, Any]
) -> None:
    response = _raw().post(path, json=body)
    assert response.status_code == 200, response.text
    shape = "gemini" if "generateContent" in path else "bedrock-converse"
    message = get_shape(shape).parse_response(response.json())
    assert [c.name for c in message.tool_calls] == ["f"]


# --------------------------------------------------------------------------- judging requests


def test_C1_unanswered_call_is_rejected_with_the_openai_envelope_and_rule_header() -> None:
    with pytest.raises(openai.BadRequestError) as caught:
        _openai().chat.completions.create(
            model="gpt-4o-mini",
            messages=chat_unanswered("call_a"),
        )
    response = caught.value.response
    assert response.headers["x-ctxconf-rule"] == "C1"
    assert response.headers["x-ctxconf-provenance"] == "emulated"
    assert "call_a" in response.json()["error"]["message"]


def test_A9_profiles_differ_on_consecutive_user_turns() -> None:
    messages: Any = [{"role": "user", "content": "a"}, {"role": "user", "content": "b"}]
    current = _anthropic().messages.create(
        model="claude-haiku-4-5", max_tokens=10, messages=messages
    )
    assert current.content
    strict = _anthropic(create_app(profile="anthropic-2024-strict-alternation"))
    with pytest.raises(anthropic.BadRequestError) as caught:
        strict.messages.create(model="claude-haiku-4-5", max_tokens=10, messages=messages)
    headers = caught.value.response.headers
    assert headers["x-ctxconf-rule"] == "A9"
    assert headers["x-ctxconf-profile"] == "anthropic-2024-strict-alternation"


# A Converse body with thinking on whose last assistant turn opens with its tool call, not its
# reasoning block: B10 refuses it for a Claude model on Bedrock; Nova has no such rule.
_REASONING_AFTER_THE_CALL_B10: dict[str, Any] = {
    "messages": [
        {"role": "user", "content": [{"text": "hi"}]},
        {
            "role": "assistant",
            "content": [
                {"toolUse": {"toolUseId": "t1", "name": "f", "input": {}}},
                {"reasoningContent": {"reasoningText": {"text": "hm", "signature": "sig"}}},
            ],
        },
        {
            "role": "user",
            "content": [{"toolResult": {"toolUseId": "t1", "content": [{"text": "ok"}]}}],
        },
    ],
    "toolConfig": {
        "tools": [{"toolSpec": {"name": "f", "inputSchema": {"json": {"type": "object"}}}}]
    },
    "additionalModelRequestFields": {"thinking": {"type": "enabled", "budget_tokens": 1024}},
}


def test_profile_follows_the_model_when_none_is_asked_for_B10() -> None:
    # A Claude model on Bedrock is judged by bedrock-claude (as `ctxconf audit` judges it): with
    # thinking on, the last assistant turn must open with its reasoning block (B10); Nova has no
    # such rule, so the same body is accepted there.
    body = _REASONING_AFTER_THE_CALL_B10
    client = httpx.Client(transport=httpx_transport(create_app()), base_url="http://emulator")
    claude = client.post("/model/us.anthropic.claude-haiku-4-5-20251001-v1:0/converse", json=body)
    assert claude.status_code == 400
    assert claude.headers["x-ctxconf-profile"] == "bedrock-claude"
    assert claude.headers["x-ctxconf-rule"] == "B10"
    nova = client.post("/model/amazon.nova-micro-v1:0/converse", json=body)
    assert nova.status_code == 200
    assert nova.headers["x-ctxconf-profile"] == "bedrock-nova"


def test_dialect_from_path_prefix_applies_mistral_id_rule_MI4() -> None:
    messages = [{"role": "user", "content": "hi"}, *chat_ring("call_abc")]
    body = {"model": "mistral-large-latest", "messages": messages}
    base = _raw().post("/v1/chat/completions", json=body)
    assert base.status_code == 200
    mistral = _raw().post("/dialect/mistral/v1/chat/completions", json=body)
    assert mistral.status_code == 400
    assert mistral.headers["x-ctxconf-rule"] == "MI4"
    by_header = _raw().post(
        "/v1/chat/completions", json=body, headers={"x-ctxconf-dialect": "mistral"}
    )
    assert by_header.headers.get("x-ctxconf-rule") == "MI4"


def test_C10_context_limit_gives_the_overflow_error() -> None:
    small = create_app(context_limit=20)
    with pytest.raises(openai.BadRequestError) as caught:
        _openai(small).chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": "word " * 200}]
        )
    error = caught.value.response.json()["error"]
    assert error["code"] == "context_length_exceeded"
    assert "maximum context length is 20 tokens" in error["message"]
    ok = _openai(small).chat.completions.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": "hi"}]
    )
    assert ok.choices


def test_fixed_script_and_deterministic_ids() -> None:
    app = create_app(script=EmulatorReply(text=None, calls=(("lookup", {"q": 1}),)))
    body = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "anything"}]}
    first = _raw(app).post("/v1/chat/completions", json=body).json()
    again = _raw(app).post("/v1/chat/completions", json=body).json()
    assert first == again
    changed = {
        "model": "gpt-4o-mini",
        "messages": [{"role": "system", "content": "x"}, *body["messages"]],
    }  # type: ignore[list-item]
    other = _raw(app).post("/v1/chat/completions", json=changed).json()
    assert (
        other["choices"][0]["message"]["tool_calls"][0]["id"]
        != first["choices"][0]["message"]["tool_calls"][0]["id"]
    )


def test_unknown_profile_is_a_named_error() -> None:
    with pytest.raises(EmulatorConfigError, match="no-such-profile"):
        create_app(profile="no-such-profile")
    with pytest.raises(EmulatorConfigError):
        create_app(context_limit=0)


@pytest.mark.parametrize(
    ("header", "value", "named"),
    [
        ("x-ctxconf-profile", "opneai-default", "x-ctxconf-profile: no profile 'opneai-default'"),
        ("x-ctxconf-dialect", "mistrall", "x-ctxconf-dialect: no dialect 'mistrall'"),
    ],
)
def test_a_header_naming_no_profile_is_a_named_400_not_another_profile(
    header: str, value: str, named: str
) -> None:
    # as the validating proxy refuses it in enforce mode: never answered by a profile it did not ask
    body = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}]}
    response = _raw().post("/v1/chat/completions", json=body, headers={header: value})
    assert response.status_code == 400
    message = response.json()["error"]["message"]
    assert message.startswith(f"{named} for shape openai-chat (did you mean ")
    assert "; known" in message
    assert "x-ctxconf-rule" not in response.headers


def test_unknown_path_and_wrong_method_are_not_500() -> None:
    assert _raw().post("/v2/whatever", json={}).status_code == 404
    response = _raw().get("/v1/chat/completions")
    assert response.status_code == 405
    assert response.headers["x-ctxconf-provenance"] == "emulated"


# ------------------------------------------------------------------------------ bad input


@pytest.mark.parametrize("path", ROUTES)
@pytest.mark.parametrize(
    "body",
    [b"", b"not json", b"{", b"\xff\xfe", b"[]", b"null", b"42"],
)
def test_unparsable_or_non_object_bodies_get_a_provider_400(path: str, body: bytes) -> None:
    response = _raw().post(path, content=body)
    assert response.status_code == 400, response.text
    assert response.headers["x-ctxconf-provenance"] == "emulated"
    json.loads(response.text)


@pytest.mark.parametrize("path", ROUTES)
def test_an_integer_too_long_to_read_is_the_emulators_own_400_not_a_500(path: str) -> None:
    # Python reads at most 4,300 digits; whether the provider reads more is unknown: the answer
    # says the emulator could not read it and gives no verdict (it was a 500 "failed" before)
    response = _raw().post(path, content=b'{"max_tokens": ' + b"9" * 5000 + b"}")
    assert response.status_code == 400, response.text
    assert "x-ctxconf-rule" not in response.headers
    answer = response.json()
    message = answer["message"] if "message" in answer else answer["error"]["message"]
    assert message == (
        "The emulator cannot read this body: an integer of 5,000 digits, more than the 4,300 "
        "Python reads at column 16. A provider's parser may read it; no verdict is given."
    )


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=12,
)
_keys = st.sampled_from(["model", "messages", "input", "contents", "system", "tools", "max_tokens"])
_bodies = st.dictionaries(_keys, _json, max_size=4) | _json


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(path=st.sampled_from(ROUTES), body=_bodies)
def test_garbage_json_never_gets_a_500(path: str, body: Any) -> None:
    response = _raw().post(path, json=body)
    assert response.status_code < 500, (path, body, response.text)
    assert response.headers["x-ctxconf-provenance"] == "emulated"


def test_validate_picks_the_models_profile_like_the_emulator(tmp_path: Any) -> None:
    from click.testing import CliRunner

    from conformance.cli import cli

    body = _REASONING_AFTER_THE_CALL_B10
    path = tmp_path / "body.json"
    path.write_text(json.dumps(body))
    args = ["validate", str(path), "--shape", "bedrock-converse"]
    plain = CliRunner().invoke(cli, args)
    assert plain.exit_code == 0
    assert json.loads(plain.stdout)["profile"] == "bedrock-default"
    claude = CliRunner().invoke(
        cli, [*args, "--model", "us.anthropic.claude-haiku-4-5-20251001-v1:0"]
    )
    assert claude.exit_code == 1
    assert json.loads(claude.stdout)["rule"] == "B10"


def test_count_endpoints_refuse_wrong_types_but_not_pairing() -> None:
    client = httpx.Client(transport=httpx_transport(create_app()), base_url="http://emulator")
    wrong_type = {
        "model": "claude-haiku-4-5",
        "messages": [{"role": "user", "content": [{"type": "text", "text": 5}]}],
    }
    refused = client.post("/v1/messages/count_tokens", json=wrong_type)
    assert refused.status_code == 400
    assert refused.headers["x-ctxconf-rule"] in {"A12", "A12a"}
    # An orphan result is a pairing matter: no evidence that count_tokens refuses it.
    orphan = {
        "model": "claude-haiku-4-5",
        "messages": [
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "toolu_x", "content": "ok"}],
            }
        ],
    }
    counted = client.post("/v1/messages/count_tokens", json=orphan)
    assert counted.status_code == 200
    assert counted.json()["input_tokens"] > 0


def test_the_anthropic_beta_header_turns_on_what_it_names() -> None:
    # A27: a thinking budget over the cap is refused, unless the request's anthropic-beta
    # header turns on interleaved thinking (the body of a first-party request cannot)
    body = {
        "model": "claude-sonnet-4-5",
        "max_tokens": 1024,
        "thinking": {"type": "enabled", "budget_tokens": 2048},
        "messages": [{"role": "user", "content": "hi"}],
    }
    refused = _raw().post("/v1/messages", json=body)
    assert refused.status_code == 400
    assert "must be greater than `thinking.budget_tokens`" in refused.text
    beta = {"anthropic-beta": "interleaved-thinking-2025-05-14"}
    assert _raw().post("/v1/messages", json=body, headers=beta).status_code == 200
    other = {"anthropic-beta": "context-1m-2025-08-07"}
    assert _raw().post("/v1/messages", json=body, headers=other).status_code == 400
    # repeated header lines mean what one comma-separated line does, the beta second or not
    lines = [("anthropic-beta", "context-1m-2025-08-07"), *beta.items()]
    assert _raw().post("/v1/messages", json=body, headers=lines).status_code == 200
    # a plain mapping (the proxy's judge, a caller's headers) is read by name in any case
    endpoint = endpoint_for_path("/v1/messages")
    assert endpoint is not None
    raw = json.dumps(body).encode()
    spelled = read_request(endpoint, raw, {"Anthropic-Beta": "interleaved-thinking-2025-05-14"})
    assert spelled.betas == {"interleaved-thinking-2025-05-14"}


@pytest.mark.parametrize(
    ("first", "last", "reading"),
    [(ORPHAN, GOOD, "first copy kept"), (GOOD, ORPHAN, "last copy kept")],
)
def test_a_key_given_twice_is_judged_in_both_readings(
    first: dict[str, Any], last: dict[str, Any], reading: str
) -> None:
    # the emulator reads the last "messages" as Python does; a server that keeps the first
    # would refuse an orphan result there, so the emulator refuses it too and says why
    body = messages_twice(first, last).encode()
    refused = _raw().post("/v1/chat/completions", content=body)
    assert refused.status_code == 400, refused.text
    assert refused.headers["x-ctxconf-rule"] == "C2"
    assert refused.headers["x-ctxconf-reading"] == reading


def test_a_key_given_twice_with_valid_copies_is_answered() -> None:
    body = (
        b'{"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}], "model": "gpt-4o"}'
    )
    answered = _raw().post("/v1/chat/completions", content=body)
    assert answered.status_code == 200, answered.text
    assert "x-ctxconf-reading" not in answered.headers


# ------------------------------------------------------------------ a plain body over the limit

_LIMIT = 4096
LIMITED = create_app(input_limit=_LIMIT)  # as CTXCONF_MAX_INPUT_BYTES=4096 makes it, at start


def _too_large(size: str) -> str:
    return (
        f"request_too_large: the request body ({size}) is over the emulator's input limit of "
        f"{_LIMIT} bytes (set CTXCONF_MAX_INPUT_BYTES to raise it)"
    )


class _Sender:
    """An ASGI ``receive`` handing the app ``body`` in pieces of ``piece`` bytes, counting the
    pieces the app asked for: how much of a body it read before answering."""

    def __init__(self, body: bytes, piece: int = 1000) -> None:
        self.body = body
        self.piece = piece
        self.pulled = 0

    async def __call__(self) -> dict[str, Any]:
        start = self.pulled * self.piece
        self.pulled += 1
        chunk = self.body[start : start + self.piece]
        return {
            "type": "http.request",
            "body": chunk,
            "more_body": start + self.piece < len(self.body),
        }


def _asgi_post(
    path: str, headers: list[tuple[bytes, bytes]], sender: _Sender, app: Any = LIMITED
) -> Any:
    """``POST path`` straight into the app (``sender`` gives the body): status, headers, JSON."""
    answer: dict[str, Any] = {"body": b""}

    async def send(message: MutableMapping[str, Any]) -> None:
        if message["type"] == "http.response.start":
            answer["status"] = message["status"]
            answer["headers"] = {k.decode(): v.decode() for k, v in message["headers"]}
        elif message["type"] == "http.response.body":
            answer["body"] += message.get("body", b"")

    asyncio.run(app(post_scope(path, headers), sender, send))
    return answer["status"], answer["headers"], json.loads(answer["body"])


@pytest.mark.parametrize(
    ("path", "kind"),
    [("/v1/chat/completions", "invalid_request_error"), ("/v1/messages", "request_too_large")],
)
def test_a_plain_body_declared_over_the_limit_is_refused_before_it_is_read(
    path: str, kind: str
) -> None:
    sender = _Sender(b" " * 10_000)
    headers = [(b"content-length", b"10000"), (b"content-type", b"application/json")]
    status, answer_headers, body = _asgi_post(path, headers, sender)
    assert sender.pulled == 0  # refused on its content-length: not one byte read
    assert status == 413
    assert answer_headers["x-ctxconf-provenance"] == "emulated"
    assert body["error"] == {**body["error"], "type": kind, "message": _too_large("10000 bytes")}


def test_a_plain_body_without_a_length_stops_being_read_past_the_limit() -> None:
    # chunked, or an ASGI server that gives no content-length: read until it is over the limit
    sender = _Sender(b" " * 1_000_000)  # a megabyte, were it all read
    status, _, body = _asgi_post("/v1/chat/completions", [], sender)
    assert sender.pulled == 5  # 5,000 bytes: the first piece over 4,096, and no further
    assert status == 413
    assert body["error"]["message"] == _too_large("at least 5000 bytes")


@pytest.mark.parametrize("declared", [True, False], ids=["content-length", "no-length"])
def test_a_plain_body_at_the_limit_is_read_and_judged(declared: bool) -> None:
    text = json.dumps(GOOD).encode()
    at_limit = text[:-1] + b" " * (_LIMIT - len(text)) + b"}"
    assert len(at_limit) == _LIMIT
    for body, answer in ((at_limit, 200), (at_limit + b" ", 413)):
        headers = [(b"content-length", str(len(body)).encode())] if declared else []
        status, _, answered = _asgi_post("/v1/chat/completions", headers, _Sender(body))
        assert status == answer, answered
    size = f"{_LIMIT + 1} bytes" if declared else f"at least {_LIMIT + 1} bytes"
    assert answered["error"]["message"] == _too_large(size)


def _served_answer(url: str, head: bytes, body: bytes) -> bytes:
    """What the emulator at ``url`` answers to ``head`` and ``body`` sent raw over a socket, the
    body never finished: the answer comes only if the emulator stops reading on its own."""
    host, port = urlsplit(url).hostname, urlsplit(url).port
    with socket.create_connection((host, port), timeout=10) as sock:
        sock.sendall(head + body)
        answer = b""
        while b"\r\n\r\n" not in answer or not answer.rstrip().endswith(b"}"):
            piece = sock.recv(65536)  # socket.timeout here: the emulator waits for the rest
            if not piece:
                break
            answer += piece
    return answer


@pytest.mark.parametrize("framing", ["content-length", "chunked"])
def test_ctxconf_serves_refusal_of_an_endless_plain_body_comes_without_its_end(
    framing: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # over uvicorn, as `ctxconf serve` runs it: a client declaring (or streaming) gigabytes gets
    # the 413 as soon as the limit is passed, not after the emulator has held the whole body
    monkeypatch.setenv("CTXCONF_MAX_INPUT_BYTES", str(_LIMIT))
    head = b"POST /v1/chat/completions HTTP/1.1\r\nhost: emulator.test\r\n"
    if framing == "content-length":
        head += b"content-length: 10000000000\r\n\r\n"
        body = b" " * 1000
        size = "10000000000 bytes"
    else:
        head += b"transfer-encoding: chunked\r\n\r\n"
        body = b"3e8\r\n" + b" " * 1000 + b"\r\n"
        body *= 5  # 5,000 bytes and no last chunk: read as it arrives, past 4,096 at the last
        size = "at least 5000 bytes"
    with serving(create_app()) as url:
        answer = _served_answer(url, head, body)
    status_line, _, rest = answer.partition(b"\r\n")
    assert status_line == b"HTTP/1.1 413 Request Entity Too Large"
    message = json.loads(rest.partition(b"\r\n\r\n")[2])["error"]["message"]
    if framing == "chunked":  # the network may hand the last chunk over in parts
        found = re.search(r"\(at least (\d+) bytes\)", message)
        assert found is not None, message
        assert _LIMIT < int(found.group(1)) <= 5000
        size = f"at least {found.group(1)} bytes"
    assert message == _too_large(size)


# ------------------------------------------------------- in process, the headers as over HTTP


def test_in_process_the_app_sees_header_names_in_lower_case_as_asgi_requires() -> None:
    # httpx keeps a header's name as it was sent (Content-Encoding); an ASGI scope's are lower
    # case, and Starlette looks them up lower case: the app answers what it was sent
    seen: list[tuple[bytes, bytes]] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        seen.extend(scope["headers"])
        await send({"type": "http.response.start", "status": 204, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    url = httpx.URL("http://emulator.test/v1/chat/completions")
    sent = [(b"Content-Encoding", b"gzip"), (b"X-Ctxconf-Dialect", b"Mistral")]
    assert call_app(app, "POST", url, sent, b"{}")[0] == 204
    assert seen == [(b"content-encoding", b"gzip"), (b"x-ctxconf-dialect", b"Mistral")]


def test_a_gzipped_request_is_answered_in_process_as_over_http() -> None:
    # in process it got the 400 of a body that is not JSON (the gzip bytes were read as JSON:
    # "Content-Encoding" was not found), over HTTP the 200 of the decoded request
    headers = {"Content-Encoding": "gzip", "Content-Type": "application/json"}
    body = gzip.compress(json.dumps(GOOD).encode(), mtime=0)
    in_process = _raw().post("/v1/chat/completions", content=body, headers=headers)
    with serving(create_app()) as url:
        over_http = httpx.post(f"{url}/v1/chat/completions", content=body, headers=headers)
    assert (in_process.status_code, over_http.status_code) == (200, 200)
    assert in_process.json() == over_http.json()
    assert in_process.json()["choices"][0]["message"]["content"] == "ok (1 messages)"


def test_in_process_a_body_over_the_limit_is_refused_on_its_content_length() -> None:
    # httpx sends "Content-Length": unseen, the body was read and said to be "at least" its size
    response = _raw(LIMITED).post("/v1/chat/completions", content=b" " * 10_000)
    assert response.status_code == 413
    assert response.json()["error"]["message"] == _too_large("10000 bytes")


# ------------------------------------------------ the emulator's own errors, client or server

GEMINI_ROUTE = "/v1beta/models/gemini-2.5-flash:generateContent"
BEDROCK_ROUTE = "/model/us.anthropic.claude-haiku-4-5-v1:0/converse"


@pytest.mark.parametrize(
    ("status", "gemini", "bedrock"),
    [
        (400, "INVALID_ARGUMENT", "ValidationException"),
        (404, "NOT_FOUND", "ResourceNotFoundException"),
        (405, "INVALID_ARGUMENT", "ValidationException"),
        (413, "INVALID_ARGUMENT", "ValidationException"),
        (415, "INVALID_ARGUMENT", "ValidationException"),
        (429, "RESOURCE_EXHAUSTED", "ThrottlingException"),
        (500, "INTERNAL", "InternalServerException"),
        (502, "INTERNAL", "InternalServerException"),
        (504, "INTERNAL", "InternalServerException"),
    ],
)
def test_a_client_error_is_named_as_the_clients_a_server_error_as_the_servers(
    status: int, gemini: str, bedrock: str
) -> None:
    # 413 and 415 were INTERNAL and InternalServerException: refusals of the request, named as
    # the server's failure
    body, extra = error_envelope("gemini", status, "m")
    assert (body, extra) == ({"error": {"code": status, "message": "m", "status": gemini}}, {})
    body, extra = error_envelope("bedrock-converse", status, "m")
    assert (body, extra) == ({"message": "m"}, {"x-amzn-errortype": bedrock})


def test_the_emulators_415_is_gemini_s_invalid_argument() -> None:
    response = _raw().post(GEMINI_ROUTE, content=b"\x00", headers={"content-encoding": "br"})
    assert response.status_code == 415
    assert response.json() == {
        "error": {
            "code": 415,
            "message": "unsupported_content_encoding: the request body cannot be read "
            "(content-encoding br); send it uncompressed, gzip or deflate, within the input "
            "limit (CTXCONF_MAX_INPUT_BYTES)",
            "status": "INVALID_ARGUMENT",
        }
    }


def test_the_emulators_413_is_bedrock_s_validation_exception() -> None:
    response = _raw(LIMITED).post(BEDROCK_ROUTE, content=b" " * 5000)
    assert response.status_code == 413
    assert response.headers["x-amzn-errortype"] == "ValidationException"
    assert response.json() == {"message": _too_large("5000 bytes")}


# ------------------------------------------------------------- a client that leaves mid-body


class _Leaver:
    """An ASGI ``receive`` that hands over part of a body, then says the client disconnected."""

    def __init__(self) -> None:
        self.calls = 0

    async def __call__(self) -> dict[str, Any]:
        self.calls += 1
        if self.calls == 1:
            return {"type": "http.request", "body": b'{"model": "gpt-4o", "mess', "more_body": True}
        return {"type": "http.disconnect"}


def test_a_client_that_disconnects_mid_body_is_no_emulator_failure(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # it was logged as "emulator failed on POST /v1/chat/completions" with a traceback and a 500
    answer: dict[str, Any] = {}

    async def send(message: MutableMapping[str, Any]) -> None:
        if message["type"] == "http.response.start":
            answer["status"] = message["status"]

    scope = post_scope("/v1/chat/completions", [(b"content-length", b"400")])
    with caplog.at_level("DEBUG", logger="conformance.providers.emulator"):
        asyncio.run(APP(scope, _Leaver(), send))
    assert answer["status"] == 400  # reaches no one: the client is gone
    records = [r for r in caplog.records if r.name == "conformance.providers.emulator"]
    assert [(r.levelname, r.getMessage(), r.exc_info) for r in records] == [
        (
            "DEBUG",
            (
                "the client disconnected before sending the whole body of POST "
                "/v1/chat/completions; not answered"
            ),
            None,
        )
    ]


# --------------------------------------------------------- the input limit, read once at start


def test_the_input_limit_is_read_when_the_app_is_made_and_kept(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # it was read for each request: a value set afterwards (a bad one: every request a 500)
    # changed the answers of an app already made
    monkeypatch.setenv("CTXCONF_MAX_INPUT_BYTES", str(_LIMIT))
    app = create_app()
    monkeypatch.setenv("CTXCONF_MAX_INPUT_BYTES", "lots")
    assert _raw(app).post("/v1/chat/completions", json=GOOD).status_code == 200
    refused = _raw(app).post("/v1/chat/completions", content=b" " * 5000)
    assert refused.status_code == 413
    assert refused.json()["error"]["message"] == _too_large("5000 bytes")
    gzipped = gzip.compress(b" " * 5000, mtime=0)  # the limit once decoded is the same one
    decoded = _raw(app).post(
        "/v1/chat/completions", content=gzipped, headers={"content-encoding": "gzip"}
    )
    assert decoded.status_code == 413
    assert decoded.json()["error"]["message"] == (
        "request_too_large: the request body cannot be read (over the input limit when "
        "decoded); send it uncompressed, gzip or deflate, within the input limit "
        "(CTXCONF_MAX_INPUT_BYTES)"
    )


def test_no_input_limit_is_no_limit_whatever_the_environment_says(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("CTXCONF_MAX_INPUT_BYTES", "lots")
    app = create_app(input_limit=None)
    body = json.dumps(GOOD).encode() + b" " * 100_000
    assert _raw(app).post("/v1/chat/completions", content=body).status_code == 200


def test_an_input_limit_that_is_not_a_size_is_a_named_config_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("CTXCONF_MAX_INPUT_BYTES", "lots")
    with pytest.raises(EmulatorConfigError) as caught:
        create_app()
    assert caught.value.where == "CTXCONF_MAX_INPUT_BYTES"
    assert caught.value.message == (
        "$CTXCONF_MAX_INPUT_BYTES='lots' is not a size (examples: 1000000, 500kB, 64MiB, none)"
    )


# ------------------------------------------------------------------ bad JSON, worded as one


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        (b'{"model": ', "Expecting value at column 11"),
        (b'{"model": "gpt-4o", "temperature": NaN}', "NaN is not a JSON number at column 36"),
        (b'{"model": "\xff"}', "not UTF-8 text, byte 11"),
    ],
    ids=["expecting-value", "nan", "not-utf-8"],
)
def test_a_body_that_is_not_json_is_worded_as_every_reader_words_it(
    body: bytes, problem: str
) -> None:
    # it was Python's own wording: "invalid JSON (Expecting value: line 1 column 11 (char 10))",
    # "invalid JSON ('utf-8' codec can't decode byte 0xff in position 11: ...)"
    endpoint = endpoint_for_path("/v1/chat/completions")
    assert endpoint is not None
    assert read_request(endpoint, body, {}).bad_json == f"invalid JSON ({problem})"
    response = _raw().post("/v1/chat/completions", content=body)
    assert response.status_code == 400
    assert response.json()["error"]["message"] == (
        f"Invalid type for 'body': expected an object, but got invalid JSON ({problem}) instead."
    )


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        (b'{\n "model": "gpt-4o",\n "messages": [,]\n}', "line 3: Expecting value at column 15"),
        (b'{\n "model": "gpt-4o",\n "temperature": NaN\n}', "line 3: NaN is not a JSON number"),
    ],
    ids=["expecting-value", "nan"],
)
def test_bad_json_in_a_body_of_several_lines_says_the_line(body: bytes, problem: str) -> None:
    # json_problem gives the column only; before json_problem the emulator said the line
    # ("line 3 column 15"), and a column alone does not say where in a pretty-printed body
    endpoint = endpoint_for_path("/v1/chat/completions")
    assert endpoint is not None
    bad_json = read_request(endpoint, body, {}).bad_json
    assert bad_json is not None
    assert bad_json.startswith(f"invalid JSON ({problem}")
