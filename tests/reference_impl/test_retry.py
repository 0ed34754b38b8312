"""Retry on a provider's context-length error: recognised per shape, tightened, at most twice."""

from __future__ import annotations

import httpx
import openai
import pytest
from assembler_support import (
    WordCounter,
    assistant,
    ring,
    session,
    system,
    user,
    words,
)
from prometheus_client import CollectorRegistry

from reference_impl import AssemblyConfig, AssemblyMetrics, ConfigError, ContextAssemblyError
from reference_impl.retry import call_with_context_retry, context_overflow

C10 = (
    "This model's maximum context length is 128000 tokens. However, your messages resulted in "
    "202868 tokens (202767 in the messages, 101 in the functions)."
)


@pytest.mark.parametrize(
    ("shape", "error", "rule", "numbers"),
    [
        (
            "openai-chat",
            {"error": {"code": "context_length_exceeded", "message": C10}},
            "C10",
            (202868, 128000),
        ),
        (
            "openai-responses",
            {
                "error": {
                    "code": "context_length_exceeded",
                    "message": "Your input exceeds the context window of this model.",
                }
            },
            "R10",
            (None, None),
        ),
        (
            "anthropic-messages",
            {
                "type": "error",
                "error": {
                    "type": "invalid_request_error",
                    "message": "prompt is too long: 208310 tokens > 200000 maximum",
                },
            },
            "A18",
            (208310, 200000),
        ),
        (
            "gemini",
            {
                "error": {
                    "code": 400,
                    "status": "INVALID_ARGUMENT",
                    "message": "The input token count (1200293) exceeds the maximum number of tokens allowed (1048576).",
                }
            },
            "G8",
            (1200293, 1048576),
        ),
        (
            "bedrock-converse",
            {
                "message": "The model returned the following errors: Input is too long for requested model."
            },
            "B9",
            (None, None),
        ),
    ],
)
def test_each_shapes_context_length_error_is_recognised(shape, error, rule, numbers):
    found = context_overflow(error, shape)
    assert found is not None
    assert found.rule == rule
    assert (found.prompt_tokens, found.limit) == numbers


def test_other_errors_and_other_shapes_wording_are_not_context_errors():
    assert context_overflow({"error": {"message": "rate limited"}}, "openai-chat") is None
    assert context_overflow("prompt is too long: 5 tokens > 4 maximum", "gemini") is None
    assert context_overflow(ValueError("boom")) is None


def test_sdk_exception_objects_are_recognised():
    request = httpx.Request("POST", "http://openai.test/v1/chat/completions")
    response = httpx.Response(400, request=request)
    exc = openai.BadRequestError(
        C10,
        response=response,
        body={"code": "context_length_exceeded", "message": C10, "type": "invalid_request_error"},
    )
    found = context_overflow(exc, "openai-chat")
    assert found is not None
    assert found.limit == 128000


def long():
    return session(
        system(),
        user("goal"),
        *[ring(f"c{i}", words(30)) for i in range(6)],
        assistant("ok"),
        user("latest"),
    )


CONFIG = AssemblyConfig(recent_tool_rings=1, recent_user_turns=1, summarize_trigger_ratio=1.0)


def _retry(call, shape):
    """``call`` through the retry, over the long session, counted in words, with fresh metrics."""
    return call_with_context_retry(
        call,
        long(),
        CONFIG,
        shape=shape,
        counter=WordCounter(),
        metrics=AssemblyMetrics(CollectorRegistry()),
    )


def _provider(error, message, *, fails=None):
    """A provider call that keeps every body it is sent and raises ``error(message)`` on its
    first ``fails`` calls (on every call when None), answering ``"answer"`` after."""
    bodies = []

    def call(body):
        bodies.append(body)
        if fails is None or len(bodies) <= fails:
            raise error(message)
        return "answer"

    return bodies, call


def test_retry_tightens_one_notch_and_succeeds():
    bodies, call = _provider(
        ValueError,
        "This model's maximum context length is 100 tokens. However, your "
        "messages resulted in 120 tokens.",
        fails=1,
    )
    assert _retry(call, "openai-chat") == "answer"
    assert len(bodies) == 2
    assert len(bodies[1]["messages"]) < len(bodies[0]["messages"])


def test_retry_without_numbers_drops_exactly_one_more_unit():
    bodies, call = _provider(RuntimeError, "Input is too long for requested model.", fails=1)
    _retry(call, "bedrock-converse")
    assert len(bodies[0]["messages"]) - len(bodies[1]["messages"]) == 2  # one ring: call + results


def test_retries_at_most_twice_then_raises_and_never_loops():
    calls, call = _provider(RuntimeError, "Input is too long for requested model.")
    with pytest.raises(ContextAssemblyError) as info:
        _retry(call, "bedrock-converse")
    assert len(calls) == 3
    assert info.value.code == "context_assembly_over_budget"
    assert info.value.details["attempts"] == 3


def test_an_overflow_that_cannot_be_met_is_refused_by_the_assembler():
    calls, call = _provider(RuntimeError, "prompt is too long: 999999 tokens > 1000 maximum")
    with pytest.raises(ContextAssemblyError) as info:
        _retry(call, "anthropic-messages")
    assert len(calls) == 1
    assert info.value.code.endswith("_over_budget")


def test_other_errors_propagate_unchanged_and_retries_are_capped():
    _, call = _provider(KeyError, "not a context error")
    with pytest.raises(KeyError):
        _retry(call, "openai-chat")
    with pytest.raises(ConfigError):
        call_with_context_retry(call, long(), CONFIG, shape="openai-chat", max_retries=3)
