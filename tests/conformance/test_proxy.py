"""``ctxconf proxy`` end to end: the official SDKs -> the proxy -> the emulator, all on loopback.

Every answer compared here is compared with the emulator's own answer to the same request sent
directly (byte for byte), and the emulator counts what reached it, so "refused locally" and
"forwarded unchanged" are both observed rather than assumed.
"""

from __future__ import annotations

import asyncio
import gzip
import http.client
import json
import os
import re
import socket
import subprocess
import sys
import threading
import time
import zlib
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import anthropic
import httpx
import openai
import pytest
from asgi_support import post_scope
from audit_support import ORPHAN
from click.testing import CliRunner
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from conformance.cli import cli
from conformance.providers.emulator import create_app
from conformance.providers.emulator_transport import serving
from conformance.providers.proxy import (
    PROXY_ERROR_HEADER,
    PROXY_HEADER,
    create_proxy_app,
    judge,
)
from conformance.providers.proxy_cassettes import VERDICT_KEY
from conformance.traffic.audit import audit_file
from conformance.traffic.cassette import load_cassette_document
from conformance.traffic.content_coding import MAX_CONTENT_CODINGS, Undecodable, decoded_body
from conformance.traffic.scrubbing import find_secrets
from conformance.traffic.verdicts import load_library
from reference_impl.documents import long_integers_capped

OPENAI_KEY = "sk-proj-PROXYTESTSECRET0123456789abcdef"
ANTHROPIC_KEY = "sk-ant-api03-PROXYTESTSECRET0123456789"
GEMINI_KEY = "AIza" + "P" * 35
SECRETS = (OPENAI_KEY, ANTHROPIC_KEY, GEMINI_KEY, "PROXYTESTSECRET")

CHAT = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "Status of checkout?"}]}
MESSAGES = {
    "model": "claude-haiku-4-5",
    "max_tokens": 64,
    "messages": [{"role": "user", "content": "Status of checkout?"}],
}
ORPHAN_MESSAGES = {
    "model": "claude-haiku-4-5",
    "max_tokens": 64,
    "messages": [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "checking"},
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "ok"}],
        },
    ],
}


class _Counting:
    """The emulator, counting the requests that reach it."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.seen: list[str] = []

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            self.seen.append(scope["path"])
        await self.app(scope, receive, send)


@pytest.fixture(scope="module")
def emulator() -> Iterator[tuple[str, _Counting]]:
    counting = _Counting(create_app())
    with serving(counting) as url:
        yield url, counting


@pytest.fixture
def upstream(emulator: tuple[str, _Counting]) -> str:
    return emulator[0]


def _proxy(upstream: str, **options: Any) -> Any:
    return serving(create_proxy_app(upstream, **options), lifespan=True)


_CLIENTS: dict[tuple[str, str], Any] = {}


@pytest.fixture(scope="module", autouse=True)
def _close_clients() -> Iterator[None]:
    """SDK clients are made once per address (each one builds a TLS context) and closed here."""
    yield
    for client in _CLIENTS.values():
        client.close()
    _CLIENTS.clear()


def _openai(base: str) -> openai.OpenAI:
    key = ("openai", base)
    if key not in _CLIENTS:
        _CLIENTS[key] = openai.OpenAI(base_url=f"{base}/v1", api_key=OPENAI_KEY, max_retries=0)
    client: openai.OpenAI = _CLIENTS[key]
    return client


def _anthropic(base: str) -> anthropic.Anthropic:
    key = ("anthropic", base)
    if key not in _CLIENTS:
        _CLIENTS[key] = anthropic.Anthropic(base_url=base, api_key=ANTHROPIC_KEY, max_retries=0)
    client: anthropic.Anthropic = _CLIENTS[key]
    return client


def _openai_raw(base: str, body: dict[str, Any]) -> httpx.Response:
    response = _openai(base).chat.completions.with_raw_response.create(**body)
    return response.http_response  # type: ignore[return-value]


def _anthropic_raw(base: str, body: dict[str, Any]) -> httpx.Response:
    response = _anthropic(base).messages.with_raw_response.create(**body)
    return response.http_response  # type: ignore[return-value]


# ---------------------------------------------------------------------------- valid traffic


@pytest.mark.parametrize("mode", ["enforce", "observe"])
def test_valid_requests_pass_through_byte_equal_with_both_sdks(
    upstream: str, mode: str, tmp_path: Path
) -> None:
    record = {"record_dir": str(tmp_path)} if mode == "observe" else {}
    with _proxy(upstream, mode=mode, **record) as proxy:
        for send, body in ((_openai_raw, CHAT), (_anthropic_raw, MESSAGES)):
            via, direct = send(proxy, body), send(upstream, body)
            assert via.status_code == direct.status_code == 200
            assert via.content == direct.content
            assert via.headers[PROXY_HEADER] == "forwarded; ours=accept"
            assert via.headers["x-ctxconf-provenance"] == "emulated"  # the upstream's own header


def test_streams_pass_through_byte_equal_and_parse_in_both_sdks(upstream: str) -> None:
    with _proxy(upstream, mode="enforce") as proxy:
        streamed = {}
        for base in (proxy, upstream):
            chat = _openai(base).chat.completions.with_streaming_response
            with chat.create(**CHAT, stream=True) as response:
                chat_bytes = b"".join(response.iter_bytes())
            messages = _anthropic(base).messages.with_streaming_response
            with messages.create(**MESSAGES, stream=True) as response:
                message_bytes = b"".join(response.iter_bytes())
            streamed[base] = (chat_bytes, message_bytes)
        assert streamed[proxy] == streamed[upstream]
        assert streamed[proxy][0].startswith(b"data: ")
        assert streamed[proxy][1].startswith(b"event: message_start")
        chunks = _openai(proxy).chat.completions.create(**CHAT, stream=True)
        text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
        with _anthropic(proxy).messages.stream(**MESSAGES) as stream:
            final = stream.get_final_message()
        assert text
        assert final.content[0].type == "text"


def test_a_stream_is_relayed_before_the_upstream_finishes_it() -> None:
    """The upstream sends one event, then waits until the client has read it through the proxy:
    a proxy that buffered the answer whole would never deliver it (the wait is bounded)."""
    first_read = threading.Event()

    async def events() -> AsyncIterator[bytes]:
        yield b'data: {"n": 1}\n\n'
        for _ in range(500):  # at most ~5 s, then the test fails below instead of hanging
            if first_read.is_set():
                break
            await asyncio.sleep(0.01)
        yield b'data: {"n": 2}\n\n'

    async def handle(_: Request) -> Response:
        return StreamingResponse(events(), media_type="text/event-stream")

    app = Starlette(routes=[Route("/v1/chat/completions", handle, methods=["POST"])])
    with serving(app) as slow, _proxy(slow) as proxy, httpx.Client() as client:
        body = {**CHAT, "stream": True}
        with client.stream("POST", f"{proxy}/v1/chat/completions", json=body) as response:
            lines = response.iter_lines()
            assert next(lines) == 'data: {"n": 1}'
            first_read.set()
            rest = list(lines)
    assert 'data: {"n": 2}' in rest


# -------------------------------------------------------------------------- invalid traffic


def test_enforce_refuses_with_the_providers_exact_answer_in_both_sdks(
    emulator: tuple[str, _Counting],
) -> None:
    upstream, counting = emulator
    with _proxy(upstream, mode="enforce") as proxy:
        for send, body, error in (
            (_openai_raw, ORPHAN, openai.BadRequestError),
            (_anthropic_raw, ORPHAN_MESSAGES, anthropic.BadRequestError),
        ):
            reached = len(counting.seen)
            with pytest.raises(error) as refused:
                send(proxy, body)
            assert len(counting.seen) == reached, "a refused request reached the upstream"
            with pytest.raises(error) as direct:
                send(upstream, body)
            via, answer = refused.value.response, direct.value.response
            assert via.status_code == answer.status_code == 400
            assert via.content == answer.content
            for name in ("x-ctxconf-rule", "x-ctxconf-provenance", "request-id"):
                assert via.headers.get(name) == answer.headers.get(name)
            assert via.headers[PROXY_HEADER] == f"refused; rule={answer.headers['x-ctxconf-rule']}"
    assert refused.value.body == direct.value.body  # the SDK reads the same error


def test_observe_forwards_a_request_our_rules_reject(
    emulator: tuple[str, _Counting], tmp_path: Path
) -> None:
    upstream, counting = emulator
    folder = tmp_path / "observed"
    with _proxy(upstream, mode="observe", record_dir=str(folder)) as proxy:
        reached = len(counting.seen)
        with pytest.raises(openai.BadRequestError) as answered:
            _openai_raw(proxy, ORPHAN)
        assert len(counting.seen) == reached + 1
        headers = answered.value.response.headers
        assert headers[PROXY_HEADER] == "forwarded; ours=reject; rule=C2"
    (path,) = folder.rglob("*.yaml")
    document = load_cassette_document(path)
    (interaction,) = document["interactions"]
    ours = interaction[VERDICT_KEY]
    assert ours["judged_by"] == "validators"
    assert (ours["verdict"], ours["rule"], ours["provenance"]) == ("reject", "C2", "emulated")
    assert interaction["response"]["status"]["code"] == 400
    assert json.loads(interaction["response"]["body"]["string"]) == ours["error"]
    assert document["ctxconf"]["recorded_against"] == "emulator:openai-default"
    assert document["ctxconf"]["recorded_by"] == "ctxconf proxy --mode observe"
    # The client sent it, not the proxy: the proxy's own SDK versions would be another's.
    assert document["ctxconf"]["sdk"] == {}
    assert interaction["request"]["headers"]["user-agent"]


def test_observe_keeps_every_line_of_a_repeated_request_header(
    upstream: str, tmp_path: Path
) -> None:
    # A27: a thinking budget over the cap is accepted when an anthropic-beta line turns on
    # interleaved thinking. The request names it on its second header line: the proxy judges it
    # accepted, and the cassette it writes must say the same when audited (the lines joined).
    body = {
        "model": "claude-sonnet-4-5",
        "max_tokens": 1024,
        "thinking": {"type": "enabled", "budget_tokens": 2048},
        "messages": [{"role": "user", "content": "hi"}],
    }
    lines = [
        ("x-api-key", ANTHROPIC_KEY),
        ("anthropic-version", "2023-06-01"),
        ("anthropic-beta", "context-1m-2025-08-07"),
        ("anthropic-beta", "interleaved-thinking-2025-05-14"),
    ]
    folder = tmp_path / "observed"
    with _proxy(upstream, mode="observe", record_dir=str(folder)) as proxy:
        answered = httpx.post(f"{proxy}/v1/messages", json=body, headers=lines)
        assert answered.status_code == 200
        assert answered.headers[PROXY_HEADER].startswith("forwarded; ours=accept")
    (path,) = folder.rglob("*.yaml")
    request = load_cassette_document(path)["interactions"][0]["request"]
    assert request["headers"]["anthropic-beta"] == [
        "context-1m-2025-08-07, interleaved-thinking-2025-05-14"
    ]
    (row,) = audit_file(path)
    assert row.verdict is not None
    assert row.verdict.accepted, row.verdict


def test_observe_stores_a_compressed_request_decoded_and_its_audit_agrees(tmp_path: Path) -> None:
    # The proxy judges a gzipped request decoded; its cassette held the request as sent, which
    # is not UTF-8: "<body not stored: 80 bytes that are not UTF-8>" beside content-encoding,
    # which ctxconf audit judged as no body (C0, reject) where the proxy had accepted it.
    async def accept(request: Request) -> Response:
        return JSONResponse({"id": "chatcmpl-1", "object": "chat.completion", "choices": []})

    valid = {"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]}
    orphan = {
        "model": "gpt-4o",
        "messages": [{"role": "tool", "tool_call_id": "x", "content": "o"}],
    }
    sent = [
        (valid, [("content-encoding", "gzip")], 1),
        (orphan, [("content-encoding", "gzip"), ("content-encoding", "gzip")], 2),
    ]
    folder = tmp_path / "observed"
    app = Starlette(routes=[Route("/{path:path}", accept, methods=["POST"])])
    with (
        serving(app) as upstream,
        _proxy(upstream, mode="observe", record_dir=str(folder)) as proxy,
    ):
        for body, codings, times in sent:
            data = json.dumps(body).encode()
            for _ in range(times):
                data = gzip.compress(data, mtime=0)
            headers = [("content-type", "application/json"), *codings]
            answered = httpx.post(f"{proxy}/v1/chat/completions", content=data, headers=headers)
            assert answered.status_code == 200
    paths = sorted(folder.rglob("*.yaml"))
    assert len(paths) == 2
    for path, (body, _, _) in zip(paths, sent, strict=True):
        interaction = load_cassette_document(path)["interactions"][0]
        request = interaction["request"]
        assert json.loads(request["body"]) == body
        assert "content-encoding" not in request["headers"]
        (row,) = audit_file(path)
        assert row.verdict is not None
        ours = interaction[VERDICT_KEY]
        assert (row.verdict.verdict, row.verdict.rule) == (ours["verdict"], ours.get("rule"))
    assert [
        load_cassette_document(p)["interactions"][0][VERDICT_KEY]["verdict"] for p in paths
    ] == [
        "accept",
        "reject",
    ]


# ------------------------------------------------------------------------- secrets, headers


def test_observe_writes_no_secret_and_forwards_the_auth_headers(
    upstream: str, tmp_path: Path
) -> None:
    folder = tmp_path / "observed"
    with _proxy(upstream, mode="observe", record_dir=str(folder)) as proxy:
        _openai_raw(proxy, CHAT)
        _anthropic_raw(proxy, MESSAGES)
        with _anthropic(proxy).messages.stream(**MESSAGES) as stream:
            stream.get_final_message()
        gemini = {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}
        url = f"{proxy}/v1beta/models/gemini-2.5-flash:generateContent?key={GEMINI_KEY}"
        headers = {"x-goog-api-key": GEMINI_KEY, "cookie": f"session={OPENAI_KEY}"}
        assert httpx.post(url, json=gemini, headers=headers).status_code == 200
    written = sorted(folder.rglob("*"))
    cassettes = [p for p in written if p.suffix == ".yaml"]
    assert len(cassettes) == 4
    assert not [p for p in written if p.name.startswith(".")], "a partial file was left"
    for path in cassettes:
        text = path.read_text(encoding="utf-8")
        assert not [secret for secret in SECRETS if secret in text], path
        assert find_secrets(load_cassette_document(path)) == [], path
        request = load_cassette_document(path)["interactions"][0]["request"]
        assert "x-stainless-os" not in request["headers"]  # the scrubber's SDK fingerprint rule
    streamed = [p for p in cassettes if "event: message_start" in p.read_text()]
    assert len(streamed) == 1


def _echo_app() -> Starlette:
    async def echo(request: Request) -> Response:
        return JSONResponse(
            {"headers": request.headers.items(), "body": (await request.body()).decode()},
            headers={
                "x-upstream": "1",
                "connection": "close, x-upstream-hop",
                "x-upstream-hop": "1",
            },
        )

    return Starlette(routes=[Route("/{path:path}", echo, methods=["GET", "POST"])])


def test_request_headers_are_forwarded_except_hop_by_hop_ones() -> None:
    with serving(_echo_app()) as echo, _proxy(echo) as proxy:
        response = httpx.post(
            f"{proxy}/v1/chat/completions?api-version=1",
            content=json.dumps(CHAT).encode(),
            headers={
                "authorization": f"Bearer {OPENAI_KEY}",
                "x-custom": "kept",
                "keep-alive": "timeout=5",
                "x-named-hop": "dropped",
                "connection": "keep-alive, x-named-hop",
                "content-type": "application/json",
            },
        )
    seen = dict(response.json()["headers"])
    assert seen["authorization"] == f"Bearer {OPENAI_KEY}"
    assert seen["x-custom"] == "kept"
    assert seen["host"] == echo.removeprefix("http://")
    assert "keep-alive" not in seen
    assert "x-named-hop" not in seen
    assert "user-agent" in seen  # the client's own, not one the proxy adds
    assert seen["user-agent"].startswith("python-httpx/")
    assert response.json()["body"] == json.dumps(CHAT)
    assert response.headers["x-upstream"] == "1"
    assert "x-upstream-hop" not in response.headers
    assert response.headers[PROXY_HEADER] == "forwarded; ours=accept"


def test_unknown_endpoints_are_forwarded_unjudged_with_a_note(upstream: str) -> None:
    with _proxy(upstream) as proxy:
        via = httpx.get(f"{proxy}/v1/models")
        direct = httpx.get(f"{upstream}/v1/models")
    assert via.status_code == direct.status_code == 404
    assert via.content == direct.content
    assert via.headers[PROXY_HEADER] == "forwarded; unjudged=no-provider-endpoint"


@pytest.mark.parametrize(
    "path",
    [
        "/v1/./chat/completions",
        "/v1/chat/../chat/completions",
        "/v1/%2e/chat/completions",
        "//v1/chat/completions",
        "/v1//chat/completions",
    ],
)
def test_enforce_judges_a_path_with_dot_segments_or_doubled_slashes_as_its_endpoint(
    path: str,
) -> None:
    # httpx removes dot segments before sending and servers merge slashes: the upstream routes
    # such a path to its chat endpoint, so it is judged as one (http.client sends it as written)
    body = json.dumps(
        {"model": "gpt-4o", "messages": [{"role": "tool", "tool_call_id": "x", "content": "o"}]}
    )
    with serving(_echo_app()) as echo, _proxy(echo, mode="enforce") as proxy:
        connection = http.client.HTTPConnection(urlsplit(proxy).netloc, timeout=30)
        try:
            connection.request("POST", path, body, {"content-type": "application/json"})
            answer = connection.getresponse()
            answer.read()
        finally:
            connection.close()
    assert answer.getheader("x-upstream") is None  # never reached the upstream
    assert answer.status == 400
    assert answer.getheader(PROXY_HEADER) == "refused; rule=C2"


@pytest.mark.parametrize("mode", ["enforce", "observe"])
def test_a_key_given_twice_is_judged_in_both_readings(mode: str) -> None:
    # our parser keeps the last "messages", a provider's may keep the first: the invalid first
    # copy must not pass because a valid one follows it
    orphan = [{"role": "tool", "tool_call_id": "x", "content": "o"}]
    valid = [{"role": "user", "content": "hi"}]
    smuggled = (
        f'{{"model": "gpt-4o", "messages": {json.dumps(orphan)}, "messages": {json.dumps(valid)}}}'
    )
    repeated = f'{{"model": "gpt-4o", "messages": {json.dumps(valid)}, "model": "gpt-4o"}}'
    with serving(_echo_app()) as echo, _proxy(echo, mode=mode) as proxy:
        refused = httpx.post(f"{proxy}/v1/chat/completions", content=smuggled.encode())
        harmless = httpx.post(f"{proxy}/v1/chat/completions", content=repeated.encode())
    if mode == "enforce":
        assert "x-upstream" not in refused.headers  # never reached the upstream
        assert refused.status_code == 400
        assert refused.headers[PROXY_HEADER] == "refused; rule=C2"
        assert refused.headers["x-ctxconf-reading"] == "first copy kept"  # as the emulator says
    else:
        assert refused.headers[PROXY_HEADER] == "forwarded; ours=reject; rule=C2"
    assert harmless.headers[PROXY_HEADER] == "forwarded; ours=accept"


def test_a_key_given_twice_is_refused_when_its_last_copy_is_invalid() -> None:
    orphan = [{"role": "tool", "tool_call_id": "x", "content": "o"}]
    valid = [{"role": "user", "content": "hi"}]
    body = (
        f'{{"model": "gpt-4o", "messages": {json.dumps(valid)}, "messages": {json.dumps(orphan)}}}'
    )
    with serving(_echo_app()) as echo, _proxy(echo, mode="enforce") as proxy:
        refused = httpx.post(f"{proxy}/v1/chat/completions", content=body.encode())
    assert "x-upstream" not in refused.headers
    assert refused.headers[PROXY_HEADER] == "refused; rule=C2"
    assert refused.headers["x-ctxconf-reading"] == "last copy kept"


@pytest.mark.parametrize("mode", ["enforce", "observe"])
@pytest.mark.parametrize(
    ("header", "value", "named"),
    [
        (
            "x-ctxconf-profile",
            "opneai-default",
            "no profile 'opneai-default' for shape openai-chat",
        ),
        (
            "x-ctxconf-profile",
            "anthropic-current",
            (
                "no profile 'anthropic-current' for shape openai-chat: 'anthropic-current' is a "
                "profile of shape anthropic-messages, for anthropic-messages requests only (to use "
                "it, change the shape, not the name)"
            ),
        ),
        ("x-ctxconf-dialect", "mistrall", "no dialect 'mistrall' for shape openai-chat"),
    ],
)
def test_a_profile_header_naming_no_profile_is_refused_in_enforce_mode(
    mode: str, header: str, value: str, named: str
) -> None:
    # a misspelled header must not turn enforcement off: enforce mode answers with the proxy's
    # own named error, the profiles of that shape listed; observe mode forwards with a note
    with serving(_echo_app()) as echo, _proxy(echo, mode=mode) as proxy:
        response = httpx.post(
            f"{proxy}/v1/chat/completions", content=json.dumps(CHAT), headers={header: value}
        )
    if mode == "observe":
        assert response.headers["x-upstream"] == "1"  # the echo answered: forwarded
        assert response.headers[PROXY_HEADER] == "forwarded; unjudged=unknown-profile"
        return
    assert "x-upstream" not in response.headers  # never reached the upstream
    assert response.status_code == 400
    assert response.headers[PROXY_HEADER] == "failed; error=unknown_profile"
    assert response.headers[PROXY_ERROR_HEADER] == "unknown_profile"
    assert response.headers["x-ctxconf-provenance"] == "proxy"
    message = response.json()["error"]["message"]
    assert message.startswith(f"ctxconf proxy: unknown_profile: {header}: {named}")
    if header == "x-ctxconf-profile":
        assert "known: openai-default, " in message


@pytest.mark.parametrize("mode", ["enforce", "observe"])
def test_a_compressed_body_over_the_limit_once_decoded_is_refused_in_enforce_mode(
    mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # sent plainly it is a 413; padded and gzipped it must not pass enforcement unjudged
    monkeypatch.setenv("CTXCONF_MAX_INPUT_BYTES", "4096")
    orphan = {
        "model": "gpt-4o",
        "messages": [{"role": "tool", "tool_call_id": "x", "content": "o"}],
    }
    padded = gzip.compress((json.dumps(orphan) + " " * 5000).encode(), mtime=0)
    with serving(_bytes_echo_app()) as echo, _proxy(echo, mode=mode) as proxy:
        response = httpx.post(
            f"{proxy}/v1/chat/completions",
            content=padded,
            headers={"content-encoding": "gzip", "content-type": "application/json"},
        )
    if _refused_unless_observed(response, mode, 413, "request_too_large"):
        assert "once its content-encoding is decoded" in response.json()["error"]["message"]


def test_a_compressed_body_is_judged_decoded() -> None:
    orphan = {
        "model": "gpt-4o",
        "messages": [{"role": "tool", "tool_call_id": "x", "content": "o"}],
    }
    valid = {"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]}
    gzipped = {"content-encoding": "gzip", "content-type": "application/json"}
    with serving(_echo_app()) as echo, _proxy(echo, mode="enforce") as proxy:
        url = f"{proxy}/v1/chat/completions"
        refused = httpx.post(
            url, content=gzip.compress(json.dumps(orphan).encode()), headers=gzipped
        )
        passed = httpx.post(url, content=gzip.compress(json.dumps(valid).encode()), headers=gzipped)
        unread = httpx.post(url, content=b"\x00", headers={"content-encoding": "br"})
        # the same orphan in two gzip members: judged whole, not as its first member's prefix
        text = json.dumps(orphan).encode()
        members = gzip.compress(text[:20]) + gzip.compress(text[20:])
        split = httpx.post(url, content=members, headers=gzipped)
    assert "x-upstream" not in split.headers
    assert split.headers[PROXY_HEADER] == "refused; rule=C2"  # not unjudged=unreadable-json
    assert "x-upstream" not in refused.headers  # never reached the upstream
    assert refused.headers[PROXY_HEADER] == "refused; rule=C2"
    assert passed.headers[PROXY_HEADER] == "forwarded; ours=accept"  # not "not JSON" (C0)
    # a coding the proxy does not read is not forwarded unjudged in enforce mode (as observe does)
    assert "x-upstream" not in unread.headers
    assert unread.status_code == 415
    assert unread.headers[PROXY_HEADER] == "failed; error=unsupported_content_encoding"
    assert "content-encoding br" in unread.json()["error"]["message"]


def _bytes_echo_app() -> Starlette:
    """An upstream that says what reached it: the body's bytes (hex) and its content-encoding
    lines, so a forwarded compressed body is seen unchanged."""

    async def echo(request: Request) -> Response:
        return JSONResponse(
            {
                "body": (await request.body()).hex(),
                "content-encoding": request.headers.getlist("content-encoding"),
            },
            headers={"x-upstream": "1"},
        )

    return Starlette(routes=[Route("/{path:path}", echo, methods=["POST"])])


def _refused_unless_observed(response: httpx.Response, mode: str, status: int, name: str) -> bool:
    """What a body the proxy cannot judge gets: in observe mode forwarded, said unjudged (False);
    in enforce mode refused before the upstream with ``status`` and the error ``name``, said by
    the proxy (True: the caller may read the message)."""
    if mode == "observe":
        assert response.headers["x-upstream"] == "1"  # forwarded, said unjudged
        assert response.headers[PROXY_HEADER] == "forwarded; unjudged=content-encoding"
        return False
    assert "x-upstream" not in response.headers  # never reached the upstream
    assert response.status_code == status
    assert response.headers[PROXY_HEADER] == f"failed; error={name}"
    assert response.headers[PROXY_ERROR_HEADER] == name
    assert response.headers["x-ctxconf-provenance"] == "proxy"
    return True


def _gzipped(data: object, times: int) -> bytes:
    raw = json.dumps(data).encode()
    for _ in range(times):
        raw = gzip.compress(raw, mtime=0)
    return raw


# RFC 9110 5.3: repeated field lines are one comma-separated list; 8.4: codings apply in order
_TWICE = {
    "one line": [("content-encoding", "gzip, gzip")],
    "two lines": [("content-encoding", "gzip"), ("content-encoding", "gzip")],
}


@pytest.mark.parametrize("lines", list(_TWICE), ids=list(_TWICE))
def test_a_body_gzipped_twice_is_judged_decoded_twice(lines: str) -> None:
    orphan = {
        "model": "gpt-4o",
        "messages": [{"role": "tool", "tool_call_id": "x", "content": "o"}],
    }
    valid = {"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]}
    headers = [*_TWICE[lines], ("content-type", "application/json")]
    with serving(_bytes_echo_app()) as echo, _proxy(echo, mode="enforce") as proxy:
        url = f"{proxy}/v1/chat/completions"
        passed = httpx.post(url, content=_gzipped(valid, 2), headers=headers)
        refused = httpx.post(url, content=_gzipped(orphan, 2), headers=headers)
    # judged as the JSON inside both layers, not as gzip data (C0, "not JSON"), and forwarded
    # as it came: the same bytes, the same content-encoding lines
    assert passed.headers[PROXY_HEADER] == "forwarded; ours=accept"
    assert passed.json() == {
        "body": _gzipped(valid, 2).hex(),
        "content-encoding": [value for _, value in _TWICE[lines]],
    }
    assert "x-upstream" not in refused.headers  # never reached the upstream
    assert refused.headers[PROXY_HEADER] == "refused; rule=C2"


@pytest.mark.parametrize("lines", list(_TWICE), ids=list(_TWICE))
@pytest.mark.parametrize("mode", ["enforce", "observe"])
def test_a_body_gzipped_twice_is_held_to_the_limit_once_decoded(
    lines: str, mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CTXCONF_MAX_INPUT_BYTES", "4096")
    padded = gzip.compress(gzip.compress(json.dumps(CHAT).encode() + b" " * 50_000, mtime=0))
    assert len(gzip.compress(json.dumps(CHAT).encode() + b" " * 50_000, mtime=0)) < 4096
    with serving(_bytes_echo_app()) as echo, _proxy(echo, mode=mode) as proxy:
        response = httpx.post(f"{proxy}/v1/chat/completions", content=padded, headers=_TWICE[lines])
    _refused_unless_observed(response, mode, 413, "request_too_large")


@pytest.mark.parametrize("mode", ["enforce", "observe"])
def test_more_content_codings_than_the_proxy_decodes_are_refused_in_enforce_mode(
    mode: str,
) -> None:
    times = MAX_CONTENT_CODINGS + 1
    # the last line of six: the one a reader of the first line alone would never see
    headers = [("content-encoding", "gzip, " * (times - 2) + "gzip"), ("content-encoding", "gzip")]
    with serving(_bytes_echo_app()) as echo, _proxy(echo, mode=mode) as proxy:
        response = httpx.post(
            f"{proxy}/v1/chat/completions", content=_gzipped(CHAT, times), headers=headers
        )
    if _refused_unless_observed(response, mode, 415, "too_many_content_encodings"):
        message = response.json()["error"]["message"]
        assert f"content-encoding lists {times} codings, more than the 5 ctxconf decodes" in message


def test_a_corrupt_inner_layer_is_named_with_its_place() -> None:
    # the outer gzip decodes; what it holds is not gzip data
    body = gzip.compress(b"not gzip at all", mtime=0)
    with serving(_bytes_echo_app()) as echo, _proxy(echo, mode="enforce") as proxy:
        response = httpx.post(
            f"{proxy}/v1/chat/completions", content=body, headers=_TWICE["two lines"]
        )
    assert "x-upstream" not in response.headers
    assert response.status_code == 400
    assert response.headers[PROXY_HEADER] == "failed; error=corrupt_content_encoding"
    assert "gzip data (coding 1 of 2) is corrupt" in response.json()["error"]["message"]


@pytest.mark.parametrize(
    ("encoding", "body", "status", "name"),
    [
        ("br", b"\x00", 415, "unsupported_content_encoding"),
        ("zstd", b"zstd frame", 415, "unsupported_content_encoding"),
        ("gzip", b"not gzip at all", 400, "corrupt_content_encoding"),
    ],
)
@pytest.mark.parametrize("mode", ["enforce", "observe"])
def test_a_body_the_proxy_cannot_decode_is_refused_in_enforce_mode(
    mode: str, encoding: str, body: bytes, status: int, name: str
) -> None:
    with serving(_echo_app()) as echo, _proxy(echo, mode=mode) as proxy:
        response = httpx.post(
            f"{proxy}/v1/chat/completions", content=body, headers={"content-encoding": encoding}
        )
    _refused_unless_observed(response, mode, status, name)


_UNREAD_BR = (
    "ctxconf proxy: unsupported_content_encoding: the request body cannot be read to be judged "
    "(content-encoding br); enforce mode forwards no request it has not judged: send it "
    "uncompressed, gzip or deflate (--mode observe forwards it unjudged)"
)


def test_the_proxys_415_is_a_client_error_in_gemini_and_bedrock_envelopes() -> None:
    # it was INTERNAL and InternalServerException: the request's fault named as the server's
    gemini = "/v1beta/models/gemini-2.5-flash:generateContent"
    bedrock = "/model/us.anthropic.claude-haiku-4-5-v1:0/converse"
    br = {"content-encoding": "br"}
    with serving(_echo_app()) as echo, _proxy(echo, mode="enforce") as proxy:
        to_gemini = httpx.post(f"{proxy}{gemini}", content=b"\x00", headers=br)
        to_bedrock = httpx.post(f"{proxy}{bedrock}", content=b"\x00", headers=br)
    assert to_gemini.status_code == to_bedrock.status_code == 415
    assert to_gemini.json() == {
        "error": {"code": 415, "message": _UNREAD_BR, "status": "INVALID_ARGUMENT"}
    }
    assert to_bedrock.json() == {"message": _UNREAD_BR}
    assert to_bedrock.headers["x-amzn-errortype"] == "ValidationException"


def test_the_proxys_502_stays_a_server_error_in_gemini_and_bedrock_envelopes() -> None:
    gemini = "/v1beta/models/gemini-2.5-flash:generateContent"
    bedrock = "/model/us.anthropic.claude-haiku-4-5-v1:0/converse"
    with _proxy(f"http://127.0.0.1:{_closed_port()}") as proxy:
        to_gemini = httpx.post(f"{proxy}{gemini}", json={"contents": []})
        to_bedrock = httpx.post(f"{proxy}{bedrock}", json={"messages": []})
    assert to_gemini.status_code == to_bedrock.status_code == 502
    assert to_gemini.json()["error"]["status"] == "INTERNAL"
    assert to_bedrock.headers["x-amzn-errortype"] == "InternalServerException"


def test_a_client_that_disconnects_mid_body_is_no_proxy_failure(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # ClientDisconnect escaped the proxy's handler: Starlette answered 500 and raised it again,
    # and uvicorn logged "Exception in ASGI application" with a traceback
    app = create_proxy_app(f"http://127.0.0.1:{_closed_port()}")
    answer: dict[str, Any] = {}
    pieces = iter([b'{"model": "gpt-4o", "mess'])

    async def receive() -> dict[str, Any]:
        piece = next(pieces, None)
        if piece is None:
            return {"type": "http.disconnect"}
        return {"type": "http.request", "body": piece, "more_body": True}

    async def send(message: Any) -> None:
        if message["type"] == "http.response.start":
            answer["status"] = message["status"]
            answer["headers"] = {k.decode(): v.decode() for k, v in message["headers"]}

    scope = post_scope("/v1/chat/completions", [(b"content-length", b"400")], server="proxy.test")

    async def call() -> None:
        async with app.router.lifespan_context(app):
            await app(scope, receive, send)

    with caplog.at_level("DEBUG", logger="conformance.providers.proxy"):
        asyncio.run(call())
    assert answer["status"] == 400  # reaches no one: the client is gone
    assert answer["headers"][PROXY_ERROR_HEADER] == "client_disconnected"
    records = [r for r in caplog.records if r.name == "conformance.providers.proxy"]
    assert [(r.levelname, r.getMessage(), r.exc_info) for r in records] == [
        (
            "DEBUG",
            (
                "ctxconf proxy: the client disconnected before sending the whole body of POST "
                "/v1/chat/completions; nothing forwarded"
            ),
            None,
        )
    ]


# ------------------------------------------------------------------------- failures, named


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def test_an_unreachable_upstream_is_a_named_provider_shaped_502_in_both_sdks() -> None:
    with _proxy(f"http://127.0.0.1:{_closed_port()}") as proxy:
        with pytest.raises(openai.InternalServerError) as chat:
            _openai_raw(proxy, CHAT)
        with pytest.raises(anthropic.InternalServerError) as messages:
            _anthropic_raw(proxy, MESSAGES)
    for failure in (chat.value, messages.value):
        assert failure.status_code == 502
        assert failure.response.headers[PROXY_ERROR_HEADER] == "upstream_unreachable"
        assert failure.response.headers["x-ctxconf-provenance"] == "proxy"
        # Every answer carries the note, the proxy's own failures too.
        assert failure.response.headers[PROXY_HEADER] == "failed; error=upstream_unreachable"
        assert "ctxconf proxy: upstream_unreachable: upstream http://127.0.0.1:" in str(
            failure.message
        )
    assert chat.value.body["type"] == "api_error"  # type: ignore[index]
    assert messages.value.body["error"]["type"] == "api_error"  # type: ignore[index]


def test_an_upstream_that_does_not_answer_in_time_is_a_named_504() -> None:
    release = threading.Event()

    async def stalled(_: Request) -> Response:
        for _ in range(500):  # bounded: the proxy gives up long before
            if release.is_set():
                break
            await asyncio.sleep(0.01)
        return JSONResponse({})

    app = Starlette(routes=[Route("/v1/messages", stalled, methods=["POST"])])
    with serving(app) as slow, _proxy(slow, timeout=0.2) as proxy:
        with pytest.raises(anthropic.APIStatusError) as late:
            _anthropic_raw(proxy, MESSAGES)
        release.set()
    assert late.value.status_code == 504
    assert late.value.response.headers[PROXY_ERROR_HEADER] == "upstream_timeout"


def test_a_stream_the_upstream_breaks_is_broken_for_the_client_and_recorded(
    tmp_path: Path,
) -> None:
    async def breaking(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        while (await receive()).get("more_body"):
            pass
        headers = [(b"content-type", b"text/event-stream")]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": b'data: {"n": 1}\n\n', "more_body": True})
        raise ConnectionResetError("the upstream went away")  # uvicorn drops the connection

    folder = tmp_path / "observed"
    body = {**CHAT, "stream": True}
    with (
        serving(breaking) as broken,
        _proxy(broken, mode="observe", record_dir=str(folder)) as proxy,
        httpx.Client() as client,
        client.stream("POST", f"{proxy}/v1/chat/completions", json=body) as response,
    ):
        lines = response.iter_lines()
        assert next(lines) == 'data: {"n": 1}'
        with pytest.raises(httpx.RemoteProtocolError):
            list(lines)  # the blank line ending the event, then the cut
    (path,) = folder.rglob("*.yaml")
    (interaction,) = load_cassette_document(path)["interactions"]
    assert interaction[VERDICT_KEY]["stream_broken"].startswith("upstream_protocol_error:")
    assert interaction["response"]["body"]["string"] == 'data: {"n": 1}\n\n'


def test_a_body_over_the_input_limit_is_refused_locally_with_a_named_413(
    emulator: tuple[str, _Counting], monkeypatch: pytest.MonkeyPatch
) -> None:
    upstream, counting = emulator
    monkeypatch.setenv("CTXCONF_MAX_INPUT_BYTES", "2000")
    body = {**MESSAGES, "messages": [{"role": "user", "content": "x" * 3000}]}
    with _proxy(upstream) as proxy:
        reached = len(counting.seen)
        with pytest.raises(anthropic.APIStatusError) as big:
            _anthropic_raw(proxy, body)
        assert len(counting.seen) == reached
        assert _anthropic_raw(proxy, MESSAGES).status_code == 200  # under the limit: forwarded
    assert big.value.status_code == 413
    assert big.value.response.headers[PROXY_ERROR_HEADER] == "request_too_large"
    assert big.value.body["error"]["type"] == "request_too_large"  # type: ignore[index]


def test_the_proxy_keeps_the_input_limit_it_read_at_start(monkeypatch: pytest.MonkeyPatch) -> None:
    # a compressed body was decoded within the limit read again for each request: a value that
    # is not a size, set after start-up, made judging fail and the body went on unjudged
    monkeypatch.setenv("CTXCONF_MAX_INPUT_BYTES", "4096")
    padded = gzip.compress(b" " * 5000, mtime=0)
    with serving(_bytes_echo_app()) as echo, _proxy(echo) as proxy:
        monkeypatch.setenv("CTXCONF_MAX_INPUT_BYTES", "lots")
        response = httpx.post(
            f"{proxy}/v1/chat/completions", content=padded, headers={"content-encoding": "gzip"}
        )
    assert "x-upstream" not in response.headers  # never reached the upstream
    assert response.status_code == 413
    assert response.json()["error"]["message"] == (
        "ctxconf proxy: request_too_large: the request body, once its content-encoding is "
        "decoded, is over the proxy's input limit of 4096 bytes (set CTXCONF_MAX_INPUT_BYTES "
        "to raise it)"
    )


@pytest.mark.parametrize("framing", ["content-length", "chunked"])
def test_the_refusal_of_a_body_over_the_limit_says_the_limit_and_the_size(
    framing: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # read as the emulator reads a body (one reader): a streamed body is said "at least" as long
    # as what was read when the limit was passed, not as long as that
    monkeypatch.setenv("CTXCONF_MAX_INPUT_BYTES", "4096")
    pieces = [b" " * 1000] * 5
    content: Any = b"".join(pieces) if framing == "content-length" else iter(pieces)
    with serving(_bytes_echo_app()) as echo, _proxy(echo) as proxy:
        response = httpx.post(f"{proxy}/v1/chat/completions", content=content)
    assert "x-upstream" not in response.headers  # never reached the upstream
    assert response.status_code == 413
    assert response.headers[PROXY_ERROR_HEADER] == "request_too_large"
    message = response.json()["error"]["message"]
    size = "5000 bytes"
    if framing == "chunked":  # the network may hand the last piece over in parts
        found = re.search(r"\(at least (\d+) bytes\)", message)
        assert found is not None, message
        assert 4096 < int(found.group(1)) <= 5000
        size = f"at least {found.group(1)} bytes"
    assert message == (
        f"ctxconf proxy: request_too_large: the request body ({size}) is over the proxy's "
        "input limit of 4096 bytes (set CTXCONF_MAX_INPUT_BYTES to raise it)"
    )


# ------------------------------------------------------------------- diff: the upgrade check

DEVELOPER_CHAT = {
    "model": "gpt-4o-mini",
    "messages": [{"role": "developer", "content": "Be brief."}, {"role": "user", "content": "hi"}],
}
TWO_USER_TURNS = {
    "model": "claude-haiku-4-5",
    "max_tokens": 64,
    "messages": [{"role": "user", "content": "first"}, {"role": "user", "content": "second"}],
}


def test_diff_lists_every_disagreement_between_our_verdicts_and_the_providers(
    tmp_path: Path,
) -> None:
    """The upstream plays a provider whose rules moved: it rejects the developer role (C8) that
    our default OpenAI profile accepts, and it accepts consecutive user turns that the proxy's
    profile (strict alternation, A9) rejects. Two requests agree (one accepted, one rejected)."""
    folder = tmp_path / "observed"
    moved = create_app(profile="openai-developer-unsupported")
    judged_by = ["anthropic-2024-strict-alternation"]
    with (
        serving(moved) as upstream,
        _proxy(upstream, mode="observe", record_dir=str(folder), profiles=judged_by) as proxy,
    ):
        with pytest.raises(openai.BadRequestError):
            _openai_raw(proxy, DEVELOPER_CHAT)  # provider-stricter
        assert _anthropic_raw(proxy, TWO_USER_TURNS).status_code == 200  # ours-stricter
        assert _openai_raw(proxy, CHAT).status_code == 200  # agreed: accept
        with pytest.raises(openai.BadRequestError):
            _openai_raw(proxy, ORPHAN)  # agreed: reject, same error
    runner = CliRunner()
    result = runner.invoke(cli, ["diff", f"ours:{folder}", str(folder), "--format", "json"])
    assert result.exit_code == 1, result.output
    document = json.loads(result.output)
    assert document["compared"] == 4
    found = sorted(
        (d["kind"], d["shape"], d["old"]["verdict"], d["new"]["verdict"]) for d in document["drift"]
    )
    assert found == [
        ("ours-stricter", "anthropic-messages", "reject", "accept"),
        ("provider-stricter", "openai-chat", "accept", "reject"),
    ]
    table = runner.invoke(cli, ["diff", str(folder), f"ours:{folder}"])
    assert table.exit_code == 1
    lines = table.output.splitlines()
    assert lines[0] == "compared 4 requests (4 skeletons); 2 drift(s)"
    assert sorted(line.split()[0] for line in lines[1:]) == ["ours-stricter", "provider-stricter"]


def test_diff_of_an_agreeing_observation_finds_nothing(upstream: str, tmp_path: Path) -> None:
    folder = tmp_path / "observed"
    with _proxy(upstream, mode="observe", record_dir=str(folder)) as proxy:
        _anthropic_raw(proxy, MESSAGES)
        with pytest.raises(anthropic.BadRequestError):
            _anthropic_raw(proxy, ORPHAN_MESSAGES)
    result = CliRunner().invoke(cli, ["diff", f"ours:{folder}", str(folder)])
    assert result.exit_code == 0, result.output
    assert result.output.splitlines() == ["compared 2 requests (2 skeletons); 0 drift(s)"]


def test_diff_refuses_a_folder_without_our_verdicts(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["diff", f"ours:{tmp_path}", str(tmp_path)])
    assert result.exit_code == 2
    assert "no cassette interactions found" in result.output


# ---------------------------------------------------------------------------------- command


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--upstream", "ftp://x"], "--upstream: upstream 'ftp://x' is not an http(s) URL"),
        (["--upstream", "http://x", "--mode", "observe"], "--mode observe needs --record-dir"),
        (["--upstream", "http://x", "--record-dir", "d"], "--record-dir applies to --mode observe"),
        (
            ["--upstream", "http://x", "--listen", "nowhere"],
            "--listen 'nowhere': expected HOST:PORT",
        ),
        (["--upstream", "http://x", "--profile", "nope"], "--profile: unknown profile 'nope'"),
    ],
)
def test_bad_options_are_one_named_line_and_exit_2(arguments: list[str], message: str) -> None:
    result = CliRunner().invoke(cli, ["proxy", *arguments])
    assert result.exit_code == 2
    assert f"ctxconf: error: {message}" in result.output
    assert "Traceback" not in result.output


def test_a_listen_address_in_use_is_a_named_error() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = CliRunner().invoke(
            cli, ["proxy", "--upstream", "http://127.0.0.1:9", "--listen", f"127.0.0.1:{port}"]
        )
    assert result.exit_code == 2
    assert f"ctxconf: error: --listen: cannot listen on 127.0.0.1:{port}" in result.output


# --------------------------------------------------------------- judging as the emulator does


def test_the_proxy_judges_every_recorded_request_as_the_emulator_answered_it() -> None:
    """Every interaction of the project's cassettes (recorded against the emulator, kept fresh
    by the stale-cassette tests): a rule's rejection is the proxy's too, with the same rule and
    the same error body; an accepted request, or one the emulator refused by no rule (its own
    parse errors), is forwarded."""
    library = load_library()
    assert len(library) > 100
    disagreements = []
    for item in library.interactions:
        dialect = item.skeleton.get("dialect")
        judged = judge(
            "POST",
            urlsplit(item.uri).path,
            json.dumps(item.request_body).encode(),
            {"x-ctxconf-dialect": dialect} if dialect else {},
            profiles=[item.metadata.profile] if item.metadata.profile else [],
        )
        assert judged.verdict is not None, f"{library.label(item)}: {judged.unjudged}"
        rule = item.headers.get("x-ctxconf-rule")
        ours = judged.verdict
        same = (ours.rule, ours.status, ours.error) == (rule, item.status, item.response_body)
        if not (ours.accepted if rule is None else same):
            recorded = f"recorded {item.status} {rule}, ours {ours.status} {ours.rule}"
            disagreements.append(f"{library.label(item)}: {recorded}")
    assert disagreements == []


@pytest.mark.parametrize("mode", ["enforce", "observe"])
def test_a_body_too_deep_to_judge_is_refused_in_enforce_and_forwarded_in_observe(
    mode: str,
) -> None:
    # nothing enforce mode has not judged reaches the upstream; observe forwards it with a note
    with serving(_echo_app()) as echo, _proxy(echo, mode=mode) as proxy:
        response = httpx.post(f"{proxy}/v1/messages", content=b"[" * 100_000)
    if mode == "enforce":
        assert "x-upstream" not in response.headers  # never reached the upstream
        assert response.status_code == 400
        assert response.headers[PROXY_HEADER] == "failed; error=body_too_deep"
        assert response.headers[PROXY_ERROR_HEADER] == "body_too_deep"
        assert response.headers["x-ctxconf-provenance"] == "proxy"
        error = response.json()["error"]  # Anthropic's envelope: the SDK raises its own error
        assert error["type"] == "invalid_request_error"
        assert error["message"].startswith("ctxconf proxy: body_too_deep: the request body nests")
    else:
        assert response.headers["x-upstream"] == "1"  # the echo answered: forwarded
        assert response.headers[PROXY_HEADER] == "forwarded; unjudged=unreadable-json"


def test_the_emulator_names_a_body_too_deep_to_read() -> None:
    # a named 400 of the emulator's own, not a 500 and a traceback in its log
    with serving(create_app()) as emulator:
        response = httpx.post(f"{emulator}/v1/chat/completions", content=b"[" * 100_000)
    assert response.status_code == 400
    assert "nested deeper than the emulator's parser can walk" in response.text


def test_the_emulator_never_fails_on_a_deep_body_its_parser_reads() -> None:
    # near the interpreter's limit the parser reads the body and a validator walking the tool
    # schema runs out of stack: at every depth a verdict or a named 400, never a 500
    def body(depth: int) -> bytes:
        schema = '{"a": ' * depth + "1" + "}" * depth
        return (
            '{"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}], "tools": '
            f'[{{"type": "function", "function": {{"name": "f", "parameters": {schema}}}}}]}}'
        ).encode()

    with serving(create_app()) as emulator:
        statuses = {
            depth: httpx.post(f"{emulator}/v1/chat/completions", content=body(depth)).status_code
            for depth in range(880, 1000, 2)
        }
    assert set(statuses.values()) <= {200, 400}, statuses


@pytest.mark.parametrize("mode", ["enforce", "observe"])
def test_an_integer_too_long_to_read_never_carries_a_body_past_the_rules(mode: str) -> None:
    # Python reads at most 4,300 digits: the body is judged with the integer read as the longest
    # one it reads, so an extra long number does not turn the rules off
    long = "9" * 5000
    orphan = '[{"role": "tool", "tool_call_id": "x", "content": "o"}]'
    last = '[{"role": "user", "content": "hi"}]'
    refused = f'{{"model": "gpt-4o", "messages": {orphan}, "x": -{long}}}'
    valid = f'{{"model": "gpt-4o", "messages": {last}, "seed": {long}}}'
    # and with the orphan in the first copy of a key given twice
    twice = f'{{"model": "gpt-4o", "messages": {orphan}, "messages": {last}, "n": {long}}}'
    with serving(_echo_app()) as echo, _proxy(echo, mode=mode) as proxy:
        url = f"{proxy}/v1/chat/completions"
        answers = [httpx.post(url, content=body.encode()) for body in (refused, twice)]
        passed = httpx.post(url, content=valid.encode())
    for answer in answers:
        if mode == "enforce":
            assert "x-upstream" not in answer.headers  # never reached the upstream
            assert answer.headers[PROXY_HEADER] == "refused; rule=C2"
        else:
            assert answer.headers[PROXY_HEADER] == "forwarded; ours=reject; rule=C2"
    assert passed.headers[PROXY_HEADER] == "forwarded; ours=accept"
    assert passed.json()["body"] == valid  # forwarded as sent, every digit


def test_long_integers_are_capped_outside_strings_only() -> None:
    long = "1" * 4301
    text = f'{{"s": "{long}", "a": [{long}, -{long}, 1.{long}, 1e{long}], "b": 7}}'
    capped = long_integers_capped(text)
    assert capped is not None
    assert json.loads(capped) == {
        "s": long,
        "a": [int("9" * 4300), -int("9" * 4300), float("1." + long), float("1e" + long)],
        "b": 7,
    }
    assert long_integers_capped('{"a": 1}') is None


def test_a_long_integer_with_a_leading_zero_stays_no_json() -> None:
    # "0111..." is no JSON number: capped to nines it would make a body no provider reads valid
    long = "1" * 4301
    capped = long_integers_capped(f"[{long}, 0{long}]")
    assert capped is not None
    with pytest.raises(json.JSONDecodeError):
        json.loads(capped)


def test_capping_takes_time_linear_in_runs_of_digits_just_under_the_limit() -> None:
    # the quick scan tried a run of 4,301 digits from every digit: ~15 ms per run of 4,300
    # digits, a minute of the proxy's event loop for a body of 32 MiB of them
    runs = ",".join(["9" * 4300] * 400)
    body = f'{{"model": "gpt-4o", "x": [{runs}], "y": {"1" * 4301}}}'
    started = time.perf_counter()
    assert long_integers_capped(body) is not None
    assert time.perf_counter() - started < 1.0


@pytest.mark.parametrize("token", ["NaN", "Infinity", "-Infinity"])
def test_enforce_never_forwards_a_body_holding_nan_or_infinity(token: str) -> None:
    # json.dumps writes them; no provider's parser reads them: the 400 of a body that is not JSON
    body = b'{"model": "gpt-4o", "messages": [], "temperature": ' + token.encode() + b"}"
    with serving(_echo_app()) as echo, _proxy(echo, mode="enforce") as proxy:
        response = httpx.post(f"{proxy}/v1/chat/completions", content=body)
        not_json = httpx.post(f"{proxy}/v1/chat/completions", content=b'{"model": ')
    assert "x-upstream" not in response.headers  # never reached the upstream
    assert response.status_code == not_json.status_code == 400
    assert response.headers[PROXY_HEADER] == not_json.headers[PROXY_HEADER] == "refused; rule=C0"
    column = body.index(token.encode()) + 1
    assert response.json()["error"]["message"] == (
        "Invalid type for 'body': expected an object, but got invalid JSON "
        f"({token} is not a JSON number at column {column}) instead."
    )


_PADDED = json.dumps({"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]}).encode()
_PADDED += b" " * 200_000
_PADDED_GZIP = gzip.compress(_PADDED, mtime=0)


@pytest.mark.parametrize(
    ("body", "encoding"),
    [
        (_PADDED_GZIP[:-12], "gzip"),  # valid JSON decoded before the cut: was ours=accept
        (_PADDED_GZIP[: len(_PADDED_GZIP) // 2], "gzip"),  # was judged partial: rule=C0
        (zlib.compress(_PADDED)[:-4], "deflate"),
    ],
    ids=["gzip-tail-cut", "gzip-cut-in-half", "deflate-tail-cut"],
)
@pytest.mark.parametrize("mode", ["enforce", "observe"])
def test_a_body_cut_short_is_corrupt_not_judged_on_what_decoded(
    mode: str, body: bytes, encoding: str
) -> None:
    with serving(_bytes_echo_app()) as echo, _proxy(echo, mode=mode) as proxy:
        response = httpx.post(
            f"{proxy}/v1/chat/completions", content=body, headers={"content-encoding": encoding}
        )
    if _refused_unless_observed(response, mode, 400, "corrupt_content_encoding"):
        assert f"{encoding} data is cut short" in response.json()["error"]["message"]


@pytest.mark.parametrize(
    ("encoding", "data", "limit", "stored"),
    [
        ("", b"plain", None, b"plain"),
        ("gzip", gzip.compress(b'{"a": 1}', mtime=0), 100, b'{"a": 1}'),
        ("deflate", zlib.compress(b"zz"), None, b"zz"),
        (
            "gzip",
            gzip.compress(b"x" * 5000, mtime=0),
            1000,
            "<body not stored: over the input limit when decoded>",
        ),
        ("br", b"\x00", None, "<body not stored: content-encoding br>"),
        ("gzip", b"not gzip", None, "<body not stored: gzip data is corrupt"),
        # several gzip members (RFC 1952 2.2): the body is all of them, as a provider reads it
        (
            "gzip",
            gzip.compress(b'{"a":', mtime=0) + gzip.compress(b" 1}", mtime=0) + b"\0\0",
            100,
            b'{"a": 1}',
        ),
        (
            "gzip",
            gzip.compress(b"x" * 600, mtime=0) + gzip.compress(b"x" * 600, mtime=0),
            1000,
            "<body not stored: over the input limit when decoded>",
        ),
        (
            "gzip",
            gzip.compress(b'{"a": 1}', mtime=0) + b"junk",
            None,
            "<body not stored: gzip data is corrupt",
        ),
        # a stream that ends before its end-of-stream marker is corrupt, not the part decoded
        ("gzip", _PADDED_GZIP[:-12], None, "<body not stored: gzip data is cut short>"),
        ("gzip", _PADDED_GZIP[:-1], None, "<body not stored: gzip data is cut short>"),
        (
            "deflate",
            zlib.compress(_PADDED)[:-4],
            None,
            "<body not stored: deflate data is cut short>",
        ),
        (
            "gzip, gzip",
            gzip.compress(_PADDED_GZIP[: len(_PADDED_GZIP) // 2], mtime=0),
            None,
            "<body not stored: gzip data (coding 1 of 2) is cut short>",
        ),
        # codings apply in the order listed (RFC 9110 8.4): undone last first
        ("gzip, gzip", gzip.compress(gzip.compress(b'{"a": 1}', mtime=0)), 100, b'{"a": 1}'),
        ("deflate, gzip", gzip.compress(zlib.compress(b'{"a": 1}'), mtime=0), 100, b'{"a": 1}'),
        (
            "gzip, gzip",
            gzip.compress(gzip.compress(b"x" * 5000, mtime=0), mtime=0),
            1000,
            "<body not stored: over the input limit when decoded (coding 1 of 2)",
        ),
        (
            ", ".join(["gzip"] * (MAX_CONTENT_CODINGS + 1)),
            b"\x00",
            None,
            "<body not stored: content-encoding lists 6 codings, more than the 5",
        ),
    ],
    ids=[
        "identity",
        "gzip",
        "deflate",
        "gzip-over-limit",
        "br",
        "corrupt-gzip",
        "gzip-members",
        "gzip-members-over-limit",
        "gzip-trailing-junk",
        "gzip-cut-short",
        "gzip-without-its-last-byte",
        "deflate-cut-short",
        "gzip-inner-layer-cut-short",
        "gzip-twice",
        "deflate-then-gzip",
        "gzip-twice-over-limit-once-decoded",
        "six-codings",
    ],
)
def test_recorded_bodies_are_decoded_within_the_limit(
    encoding: str, data: bytes, limit: int | None, stored: bytes | str
) -> None:
    decoded = decoded_body(data, encoding, limit)
    if isinstance(stored, str):
        assert isinstance(decoded, Undecodable)
        assert decoded.stored.startswith(stored)
    else:
        assert decoded == stored


def test_a_body_of_many_gzip_members_is_decoded_in_linear_work(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # 4,000 empty members (20 bytes each), gzipped again: a 0.3 kB body. Each member was fed
    # all that followed it (zlib copies it back as unused_data), 160 MB fed in all for 80 kB;
    # at the input limit, 32 MiB of members held the proxy's event loop for minutes.
    inner = gzip.compress(b"", mtime=0) * 4000
    body = gzip.compress(inner, mtime=0)
    fed: list[int] = []
    make = zlib.decompressobj

    class Counting:
        def __init__(self, wbits: int) -> None:
            self.inflater = make(wbits=wbits)

        def decompress(self, data: bytes, max_length: int = 0) -> bytes:
            fed.append(len(data))
            return self.inflater.decompress(data, max_length)

        def __getattr__(self, name: str) -> object:
            return getattr(self.inflater, name)

    monkeypatch.setattr(zlib, "decompressobj", Counting)
    assert decoded_body(body, "gzip, gzip", 32 * 1024 * 1024) == b""
    assert sum(fed) < 8 * (len(inner) + len(body))


@pytest.mark.slow
def test_the_command_serves_until_terminated(upstream: str) -> None:
    """``ctxconf proxy`` in its own process: the address on the first line, traffic relayed,
    lifespan shutdown on SIGTERM without a traceback."""
    process = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "from conformance.cli import main; main()",
            "proxy",
            "--upstream",
            upstream,
            "--listen",
            "127.0.0.1:0",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        first: list[str] = []
        reader = threading.Thread(target=lambda: first.append(process.stdout.readline()))  # type: ignore[union-attr]
        reader.start()
        reader.join(timeout=60)
        assert first, "ctxconf proxy printed no address"
        assert first[0].startswith("ctxconf proxy listening on http://127.0.0.1:"), first[0]
        address = first[0].split()[4]
        response = _anthropic_raw(address, MESSAGES)
        assert response.content == _anthropic_raw(upstream, MESSAGES).content
        with pytest.raises(anthropic.BadRequestError):
            _anthropic_raw(address, ORPHAN_MESSAGES)
    finally:
        process.terminate()
        try:
            _, err = process.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            _, err = process.communicate(timeout=5)
    assert "Traceback" not in err


@pytest.mark.parametrize(
    ("payload", "note"),
    [
        (
            {"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]},
            "forwarded; ours=accept",
        ),
        (
            {
                "model": "gpt-4o",
                "messages": [{"role": "tool", "tool_call_id": "x", "content": "o"}],
            },
            "refused; rule=C2",
        ),
    ],
    ids=["valid", "orphan-tool-result"],
)
def test_the_emulator_reads_a_gzipped_request_as_the_proxy_does(
    upstream: str, payload: dict[str, Any], note: str
) -> None:
    # The proxy judges the body decoded and forwards it compressed: the emulator, as the
    # provider does, must read it decoded too, or the two answers differ (it said C0, not JSON).
    body = gzip.compress(json.dumps(payload).encode(), mtime=0)
    headers = {"content-encoding": "gzip", "content-type": "application/json"}
    direct = httpx.post(f"{upstream}/v1/chat/completions", content=body, headers=headers)
    with _proxy(upstream, mode="enforce") as proxy:
        proxied = httpx.post(f"{proxy}/v1/chat/completions", content=body, headers=headers)
    assert proxied.headers[PROXY_HEADER] == note
    assert direct.status_code == proxied.status_code == (200 if "accept" in note else 400)
    assert direct.content == proxied.content
    assert direct.headers.get("x-ctxconf-rule") == proxied.headers.get("x-ctxconf-rule")


@pytest.mark.parametrize(
    ("encoding", "body", "status", "name"),
    [
        ("br", b"\x00", 415, "unsupported_content_encoding"),
        (", ".join(["gzip"] * 6), b"\x00", 415, "too_many_content_encodings"),
        ("gzip", _PADDED_GZIP[:-12], 400, "corrupt_content_encoding"),
    ],
    ids=["br", "six-codings", "cut-short"],
)
def test_the_emulator_refuses_an_undecodable_body_as_the_proxy_does(
    upstream: str, encoding: str, body: bytes, status: int, name: str
) -> None:
    headers = {"content-encoding": encoding}
    direct = httpx.post(f"{upstream}/v1/chat/completions", content=body, headers=headers)
    with _proxy(upstream, mode="enforce") as proxy:
        proxied = httpx.post(f"{proxy}/v1/chat/completions", content=body, headers=headers)
    assert direct.status_code == proxied.status_code == status
    assert proxied.headers[PROXY_ERROR_HEADER] == name
    assert direct.json()["error"]["message"].startswith(f"{name}: the request body cannot be read")


def test_the_emulator_refuses_a_body_over_the_limit_once_decoded(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("CTXCONF_MAX_INPUT_BYTES", "4096")  # read when the emulator is made
    body = gzip.compress(_PADDED, mtime=0)
    assert len(body) < 4096
    with serving(create_app()) as limited:
        direct = httpx.post(
            f"{limited}/v1/chat/completions", content=body, headers={"content-encoding": "gzip"}
        )
    assert direct.status_code == 413
    assert "request_too_large" in direct.json()["error"]["message"]
