"""Provider count-API counters, offline: the real SDKs talk to an in-process mock transport.

The answers mimic the documented bodies (token-counting.md sections 5 and 6):
``{"input_tokens": N}`` and ``{"object": "response.input_tokens", "input_tokens": N}``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import anthropic
import httpx2
import openai
import pytest

from reference_impl import tokens
from reference_impl.errors import TokenCountError
from reference_impl.token_apis import AnthropicCountTokensCounter, OpenAIInputTokensCounter
from reference_impl.tokens import AnthropicEstimateCounter, TokenCounter
from reference_impl.transcript import Message, TextPart, Transcript


class Recorder:
    def __init__(self, status: int, answer: Mapping[str, Any]) -> None:
        self.status = status
        self.answer = answer
        self.requests: list[httpx2.Request] = []

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        self.requests.append(request)
        return httpx2.Response(self.status, json=dict(self.answer))

    def body(self, index: int = -1) -> dict[str, Any]:
        loaded: dict[str, Any] = json.loads(self.requests[index].content)
        return loaded


def _transcript() -> Transcript:
    return Transcript(
        (
            Message("system", (TextPart("You are a scientist"),)),
            Message("user", (TextPart("Hello, Claude"),)),
        )
    )


def _anthropic_render(t: Transcript) -> dict[str, Any]:
    # A minimal rendering so this test does not depend on the shape module.
    return {
        "system": t.messages[0].text,
        "messages": [{"role": m.role, "content": m.text} for m in t.messages[1:]],
    }


def _responses_render(t: Transcript) -> dict[str, Any]:
    return {
        "instructions": t.messages[0].text,
        "input": [{"role": m.role, "content": m.text} for m in t.messages[1:]],
    }


def _client(sdk: Any, base_url: str, recorder: Recorder, **options: Any) -> Any:
    """A client of ``sdk`` (``anthropic.Anthropic``, ``openai.OpenAI``) that only reaches
    ``recorder``."""
    transport = httpx2.MockTransport(recorder)
    client = httpx2.Client(transport=transport)
    return sdk(api_key="test-key", base_url=base_url, http_client=client, **options)


def _anthropic_counter(
    recorder: Recorder, model: str, **options: Any
) -> AnthropicCountTokensCounter:
    client = _client(anthropic.Anthropic, "http://anthropic.test", recorder, **options)
    return AnthropicCountTokensCounter(client, model, render=_anthropic_render)


def _openai_counter(recorder: Recorder, model: str, **options: Any) -> OpenAIInputTokensCounter:
    client = _client(openai.OpenAI, "http://openai.test/v1", recorder, **options)
    return OpenAIInputTokensCounter(client, model, render=_responses_render)


def test_anthropic_count_tokens_through_the_sdk() -> None:
    recorder = Recorder(200, {"input_tokens": 14})  # the docs' basic example value
    counter = _anthropic_counter(recorder, "claude-sonnet-4-5")
    assert isinstance(counter, TokenCounter)
    result = counter.count(_transcript())
    assert result.total == 14
    assert result.counter == "anthropic:count_tokens(claude-sonnet-4-5)"
    assert result.encoding is None
    assert result.total == sum(result.messages) + result.tools + result.overhead
    request = recorder.requests[0]
    assert request.url.path == "/v1/messages/count_tokens"
    assert recorder.body() == {
        "model": "claude-sonnet-4-5",
        "system": "You are a scientist",
        "messages": [{"role": "user", "content": "Hello, Claude"}],
    }
    counter.count(_transcript())
    assert len(recorder.requests) == 1  # the same view costs no second call
    # the per-message numbers come from Anthropic's estimate for the model
    assert isinstance(counter.fallback, AnthropicEstimateCounter)
    assert counter.fallback.model == "claude-sonnet-4-5"


def test_openai_input_tokens_through_the_sdk() -> None:
    recorder = Recorder(200, {"object": "response.input_tokens", "input_tokens": 51})
    counter = _openai_counter(recorder, "gpt-4.1-mini")
    result = counter.count(_transcript())
    assert result.total == 51
    assert result.counter == "openai:responses.input_tokens(gpt-4.1-mini)"
    assert recorder.requests[0].url.path == "/v1/responses/input_tokens"
    assert recorder.body() == {
        "model": "gpt-4.1-mini",
        "instructions": "You are a scientist",
        "input": [{"role": "user", "content": "Hello, Claude"}],
    }
    # per-message numbers are local (no call per message), by the shape's reference counter
    assert counter.count_message(_transcript().messages[1]) > 0
    assert len(recorder.requests) == 1
    assert counter.fallback is tokens.counter_for("openai-responses", "gpt-4.1-mini")


@pytest.mark.parametrize(
    ("counter_for", "model", "status", "answer", "match"),
    [
        (
            _anthropic_counter,
            "claude-x",
            400,
            {"type": "error", "error": {"type": "invalid_request_error", "message": "bad model"}},
            r"count_tokens failed \(HTTP 400",
        ),
        (
            _openai_counter,
            "gpt-4o",
            500,
            {"error": {"message": "oops", "type": "server_error"}},
            "input_tokens failed",
        ),
    ],
    ids=["anthropic", "openai"],
)
def test_count_api_failure_is_a_named_error(
    counter_for: Any, model: str, status: int, answer: Mapping[str, Any], match: str
) -> None:
    counter = counter_for(Recorder(status, answer), model, max_retries=0)
    with pytest.raises(TokenCountError, match=match):
        counter.count(_transcript())


def test_default_render_uses_the_anthropic_shape() -> None:
    pytest.importorskip("reference_impl.shapes.anthropic_messages")
    recorder = Recorder(200, {"input_tokens": 20})
    client = _client(anthropic.Anthropic, "http://anthropic.test", recorder)
    counter = AnthropicCountTokensCounter(client, "claude-sonnet-4-5")
    assert counter.count(_transcript()).total == 20
    body = recorder.body()
    assert body["model"] == "claude-sonnet-4-5"
    assert "max_tokens" not in body  # count_tokens has no max_tokens
    assert body["messages"][0]["role"] == "user"
