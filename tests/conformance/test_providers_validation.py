"""The validation API: never raises on any body, envelopes per provider, overflow, headers."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis_support import examples

from conformance.providers.catalog import list_profiles, load_catalog
from conformance.providers.validation import (
    betas_of_headers,
    error_headers_for,
    lint_request,
    malformed_body_verdict,
    overflow_verdict,
    validate_request,
)

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)
# Mostly known roles, sometimes any JSON value (a role that is an object must not crash a check).
ROLES = st.sampled_from(["user", "assistant", "tool", "system", "developer", "model", "x"]) | JSON
# Bodies that look like requests, so the checks past the structure gate run too.
MESSAGE = st.fixed_dictionaries(
    {"role": ROLES},
    optional={
        "content": JSON,
        "tool_calls": JSON,
        "tool_call_id": JSON,
        "parts": JSON,
        "name": JSON,
    },
)
BODY = st.one_of(
    JSON,
    st.fixed_dictionaries({"messages": st.lists(MESSAGE, max_size=6)}, optional={"tools": JSON}),
    st.fixed_dictionaries({"input": st.lists(JSON | MESSAGE, max_size=6)}),
    st.fixed_dictionaries({"contents": st.lists(MESSAGE, max_size=6)}),
)
PROFILES = [(p.shape, p.id) for p in list_profiles()]


@settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(body=BODY, which=st.sampled_from(PROFILES))
def test_any_body_gets_a_verdict_never_an_exception(body: Any, which: tuple[str, str]) -> None:
    shape, profile = which
    verdict = validate_request(body, shape, profile=profile)
    assert verdict.provenance == "emulated"
    assert verdict.profile == profile
    if verdict.accepted:
        assert verdict.status == 200
        assert verdict.error is None
    else:
        assert verdict.status >= 400
        assert verdict.rule in load_catalog().rules
        assert verdict.error
    assert lint_request(body, shape, profile=profile)[0] == verdict


def test_not_an_object_gets_the_providers_own_400() -> None:
    openai = validate_request(["x"], "openai-chat")  # type: ignore[arg-type]
    assert openai.rule == "C0"
    assert openai.error == {
        "error": {
            "message": "Invalid type for 'body': expected an object, but got an array instead.",
            "type": "invalid_request_error",
            "param": "body",
            "code": "invalid_type",
        }
    }
    anthropic = validate_request({"messages": ["Hello"]}, "anthropic-messages")
    assert anthropic.rule == "A12"
    assert anthropic.error is not None
    # Recorded text: recordings/anthropic/400_input_shape_ddtrace.yaml
    assert anthropic.error["error"] == {
        "type": "invalid_request_error",
        "message": "messages.0: Input does not match the expected shape.",
    }
    assert anthropic.error["type"] == "error"
    assert anthropic.error["request_id"].startswith("req_")


def test_envelopes_per_provider() -> None:
    gemini = validate_request(
        {"contents": [{"role": "system", "parts": [{"text": "x"}]}]}, "gemini"
    )
    assert gemini.error == {
        "error": {
            "code": 400,
            "message": "Please use a valid role: user, model.",
            "status": "INVALID_ARGUMENT",
        }
    }
    bedrock = validate_request({"messages": [{"role": "user", "content": []}]}, "bedrock-converse")
    assert bedrock.rule == "B8"
    assert set(bedrock.error or {}) == {"message"}
    assert error_headers_for(bedrock)["x-amzn-ErrorType"].startswith("ValidationException")


def test_same_body_same_error_bytes() -> None:
    body = {"messages": [{"role": "user", "content": ""}]}
    assert validate_request(body, "anthropic-messages") == validate_request(
        body, "anthropic-messages"
    )


def test_lint_lists_every_violation_in_order() -> None:
    body = {
        "messages": [
            {"role": "user", "content": "q", "name": "bad name"},
            {"role": "tool", "tool_call_id": "c9", "content": "x"},
        ],
        "parallel_tool_calls": True,
    }
    rules = [v.rule for v in lint_request(body, "openai-chat")]
    assert rules == ["C9", "C7", "C2"]  # top-level parameter first, then by message index


def test_overflow_per_provider() -> None:
    assert overflow_verdict("gemini", input_tokens=10, context_limit=100).accepted
    gemini = overflow_verdict("gemini", input_tokens=1200293, context_limit=1048576)
    assert gemini.rule == "G8"
    assert gemini.error is not None
    assert gemini.error["error"]["message"] == (
        "The input token count (1200293) exceeds the maximum number of tokens allowed (1048576)."
    )
    bedrock_claude = overflow_verdict(
        "bedrock-converse", profile="bedrock-claude", input_tokens=903884, context_limit=200000
    )
    assert bedrock_claude.error == {
        "message": "The model returned the following errors: prompt is too long: 903884 tokens > 200000 maximum"
    }
    responses = overflow_verdict("openai-responses", input_tokens=5, context_limit=4)
    assert responses.error is not None
    assert responses.error["error"]["code"] == "context_length_exceeded"


def test_validate_applies_the_context_limit_after_structure() -> None:
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    assert validate_request(body, "openai-chat", context_limit=10, input_tokens=11).rule == "C10"
    assert validate_request(body, "openai-chat", context_limit=10, input_tokens=10).accepted
    # Without input_tokens the tokens are estimated locally: a huge body overflows a tiny limit.
    assert validate_request(body, "openai-chat", context_limit=1).rule == "C10"


def test_malformed_json_verdict() -> None:
    verdict = malformed_body_verdict("anthropic-messages", detail="not JSON")
    assert verdict.rule == "A12"
    assert verdict.status == 400


@pytest.mark.parametrize(
    "shape", ["openai-chat", "anthropic-messages", "gemini", "bedrock-converse"]
)
def test_empty_object_does_not_crash(shape: str) -> None:
    assert validate_request({}, shape).status in {200, 400}


def test_validator_readers_skip_non_objects_and_count_leading_runs() -> None:
    from conformance.providers.validators._base import last_index, leading, messages_of, objects

    body = {"messages": [{"role": "user"}, "junk", {"role": "assistant"}, {"role": "user"}]}
    assert messages_of(body) == [{"role": "user"}, {"role": "assistant"}, {"role": "user"}]
    assert objects("not an array") == []
    assert last_index(messages_of(body), "assistant") == 1
    assert last_index(messages_of(body), "tool") is None
    assert leading([1, 1, 2, 1], lambda x: x == 1) == 2
    assert leading([], lambda x: True) == 0
    assert leading([1, 1], lambda x: x == 1) == 2


def test_a_body_changed_between_two_judgements_is_read_afresh() -> None:
    """The Anthropic detectors share one view of the body judged now (its blocks, its turns):
    judged again after a change, the body gets the verdict of what it holds now (A1 then A5)."""
    use = {"type": "tool_use", "id": "toolu_1", "name": "f", "input": {}}
    body: dict[str, Any] = {
        "model": "claude-sonnet-4-5",
        "max_tokens": 16,
        "messages": [
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": [use]},
        ],
    }
    assert validate_request(body, "anthropic-messages").rule == "A1"  # the tool_use unanswered
    result = {"type": "tool_result", "tool_use_id": "toolu_1", "content": "ok"}
    body["messages"] += [
        {"role": "user", "content": [result]},
        {"role": "assistant", "content": [dict(use)]},  # the same id again
        {"role": "user", "content": [dict(result)]},
    ]
    verdict = validate_request(body, "anthropic-messages")
    assert (verdict.rule, verdict.accepted) == ("A5", False)
    del body["messages"][3:]
    assert validate_request(body, "anthropic-messages").accepted


def test_max_tokens_is_required_on_generation_not_on_a_count() -> None:
    # A26: /v1/messages needs max_tokens; /v1/messages/count_tokens takes none.
    body = {"model": "claude-haiku-4-5", "messages": [{"role": "user", "content": "hi"}]}
    generate = validate_request(body, "anthropic-messages")
    assert (generate.rule, generate.status) == ("A26", 400)
    assert generate.error["error"]["message"] == "max_tokens: Field required"
    assert validate_request(body, "anthropic-messages", endpoint="count").accepted
    assert validate_request({**body, "max_tokens": 16}, "anthropic-messages").accepted


_THINKING_BODY: dict[str, Any] = {
    "model": "claude-sonnet-4-5",
    "max_tokens": 1024,
    "thinking": {"type": "enabled", "budget_tokens": 2048},
    "messages": [{"role": "user", "content": "hi"}],
}


def test_a27_a_cap_at_or_under_the_thinking_budget_is_refused_on_generation() -> None:
    refused = validate_request(_THINKING_BODY, "anthropic-messages")
    assert (refused.rule, refused.status) == ("A27", 400)
    assert refused.error["error"]["message"].startswith(
        "`max_tokens` must be greater than `thinking.budget_tokens`."
    )
    equal = {**_THINKING_BODY, "max_tokens": 2048}
    assert validate_request(equal, "anthropic-messages").rule == "A27"
    assert validate_request({**_THINKING_BODY, "max_tokens": 2049}, "anthropic-messages").accepted
    # the count endpoint takes no max_tokens, so no cap to compare
    assert validate_request(_THINKING_BODY, "anthropic-messages", endpoint="count").accepted


@pytest.mark.parametrize(
    "change",
    [
        {"thinking": {"type": "disabled", "budget_tokens": 2048}},
        {"thinking": {"type": "adaptive"}},
        {"thinking": {"type": "enabled", "budget_tokens": True}},
        {"max_tokens": 1024.0},
    ],
    ids=["disabled", "adaptive", "a-bool-budget", "a-float-cap"],
)
def test_a27_judges_only_an_enabled_budget_and_a_cap_given_as_integers(
    change: dict[str, Any],
) -> None:
    # a float cap or a bool budget is another rule's (A12a: wrong JSON type), not this one's
    assert validate_request({**_THINKING_BODY, **change}, "anthropic-messages").rule != "A27"


def test_a27_interleaved_thinking_in_the_header_lets_the_budget_exceed_the_cap() -> None:
    # first-party and Vertex requests turn the beta on in the anthropic-beta header
    betas = betas_of_headers(["context-1m-2025-08-07, interleaved-thinking-2025-05-14"])
    assert betas == {"context-1m-2025-08-07", "interleaved-thinking-2025-05-14"}
    assert validate_request(_THINKING_BODY, "anthropic-messages", betas=betas).accepted
    assert lint_request(_THINKING_BODY, "anthropic-messages", betas=betas)[0].accepted
    other = betas_of_headers(["context-1m-2025-08-07"])
    assert validate_request(_THINKING_BODY, "anthropic-messages", betas=other).rule == "A27"
    # one name given as a string is that name
    one = "interleaved-thinking-2025-05-14"
    assert validate_request(_THINKING_BODY, "anthropic-messages", betas=one).accepted
    # a first-party body has no anthropic_beta field: naming the beta there turns nothing on
    named = {**_THINKING_BODY, "anthropic_beta": ["interleaved-thinking-2025-05-14"]}
    assert validate_request(named, "anthropic-messages").rule == "A27"


def test_a27_interleaved_thinking_named_in_the_body_lets_the_budget_exceed_the_cap() -> None:
    body = {
        **{k: v for k, v in _THINKING_BODY.items() if k != "model"},
        "anthropic_version": "bedrock-2023-05-31",
        "anthropic_beta": ["interleaved-thinking-2025-05-14"],
    }
    assert validate_request(body, "anthropic-messages", dialect="bedrock").rule != "A27"
    refused = validate_request(
        {**body, "anthropic_beta": ["context-1m-2025-08-07"]},
        "anthropic-messages",
        dialect="bedrock",
    )
    assert refused.rule == "A27"


def test_a27_is_not_judged_when_the_request_headers_are_not_known() -> None:
    # betas=None: the caller does not know the request's headers (a recording that does not
    # hold them), so whether interleaved thinking was on is not known
    assert validate_request(_THINKING_BODY, "anthropic-messages", betas=None).accepted
    assert lint_request(_THINKING_BODY, "anthropic-messages", betas=None)[0].accepted
    # the other rules are judged as ever
    orphan = {**_THINKING_BODY, "messages": []}
    assert validate_request(orphan, "anthropic-messages", betas=None).rule == "A22"
    # through Bedrock InvokeModel the betas are in the body: headers or not, it is judged
    body = {
        **{k: v for k, v in _THINKING_BODY.items() if k != "model"},
        "anthropic_version": "bedrock-2023-05-31",
    }
    assert validate_request(body, "anthropic-messages", dialect="bedrock", betas=None).rule == "A27"


_CONVERSE_THINKING: dict[str, Any] = {
    "modelId": "anthropic.claude-sonnet-4-5",
    "inferenceConfig": {"maxTokens": 1024},
    "additionalModelRequestFields": {"thinking": {"type": "enabled", "budget_tokens": 1024}},
    "messages": [{"role": "user", "content": [{"text": "hi"}]}],
}


def test_b15_converse_relays_the_cap_over_the_thinking_budget_for_claude() -> None:
    refused = validate_request(_CONVERSE_THINKING, "bedrock-converse", profile="bedrock-claude")
    assert (refused.rule, refused.status) == ("B15", 400)
    assert refused.error["message"].startswith(
        "The model returned the following errors: `max_tokens` must be greater than"
    )
    extra = _CONVERSE_THINKING["additionalModelRequestFields"]
    for changed in (
        {"inferenceConfig": {"maxTokens": 1025}},
        {"inferenceConfig": {}},  # no cap: the model's own
        {
            "additionalModelRequestFields": {
                **extra,
                "anthropic_beta": ["interleaved-thinking-2025-05-14"],
            }
        },
        {"additionalModelRequestFields": {"thinking": {"type": "adaptive"}}},
    ):
        body = {**_CONVERSE_THINKING, **changed}
        assert validate_request(body, "bedrock-converse", profile="bedrock-claude").rule != "B15"
    # the older spelling of the reasoning field is judged alike; other models are not Claude
    older = {
        **_CONVERSE_THINKING,
        "additionalModelRequestFields": {"reasoning_config": extra["thinking"]},
    }
    assert validate_request(older, "bedrock-converse", profile="bedrock-claude").rule == "B15"
    assert (
        validate_request(_CONVERSE_THINKING, "bedrock-converse", profile="bedrock-default").rule
        != "B15"
    )


def _marked_text(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text, "cache_control": {"type": "ephemeral"}}


def test_a17_counts_blocks_with_cache_control_not_keys_in_the_callers_data() -> None:
    # A17: "A maximum of 4 blocks with cache_control may be provided". A key of that name inside a
    # tool call's input or a tool's input schema is the caller's data, not a breakpoint.
    data_keys = {"cache_control": {"type": "ephemeral"}}
    body = {
        "model": "claude-sonnet-4-5",
        "max_tokens": 10,
        "tools": [
            {
                "name": "f",
                "input_schema": {"type": "object", "properties": data_keys},
                "cache_control": {"type": "ephemeral"},
            }
        ],
        "system": [_marked_text("s")],
        "messages": [
            {"role": "user", "content": [_marked_text("q")]},
            {
                "role": "assistant",
                "content": [
                    {"type": "tool_use", "id": "toolu_1", "name": "f", "input": dict(data_keys)},
                    {
                        "type": "tool_use",
                        "id": "toolu_2",
                        "name": "f",
                        "input": {"items": [data_keys] * 3},
                    },
                ],
            },
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_1", "content": "a"},
                    {
                        "type": "tool_result",
                        "tool_use_id": "toolu_2",
                        "content": [_marked_text("b")],
                    },
                ],
            },
        ],
    }
    assert validate_request(body, "anthropic-messages").accepted  # 4 blocks
    # a fifth marked block, nested in a tool result's content, is one too many
    body["messages"][2]["content"][0]["content"] = [_marked_text("a")]
    verdict = validate_request(body, "anthropic-messages")
    assert verdict.rule == "A17"
    assert verdict.error is not None
    assert "Found 5" in str(verdict.error)


def test_a17_a_null_cache_control_is_no_breakpoint_and_a_top_level_one_is() -> None:
    # A17: serialisers that keep None send "cache_control": null on every block: no breakpoint.
    # Automatic caching (a top-level cache_control) takes one of the four slots.
    blocks = [_marked_text(str(n)) for n in range(4)]
    nulls = [{"type": "text", "text": "n", "cache_control": None} for _ in range(3)]
    body: dict[str, Any] = {
        "model": "claude-sonnet-4-5",
        "max_tokens": 10,
        "system": [*nulls, blocks[0]],
        "messages": [{"role": "user", "content": [*nulls, *blocks[1:]]}],
    }
    assert validate_request(body, "anthropic-messages").accepted
    body["cache_control"] = {"type": "ephemeral"}
    verdict = validate_request(body, "anthropic-messages")
    assert verdict.rule == "A17"
    assert "Found 5" in str(verdict.error)


def test_the_rule_catalog_is_read_whatever_input_limit_the_user_sets(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # CTXCONF_MAX_INPUT_BYTES limits the files a user gives; rules.yaml (over 80 KiB) is the
    # package's own: a lowered limit made every command an internal error
    from conformance.providers.catalog import load_catalog
    from reference_impl.documents import DocumentTooLargeError, load_yaml_safe

    monkeypatch.setenv("CTXCONF_MAX_INPUT_BYTES", "10KiB")
    with pytest.raises(DocumentTooLargeError):
        load_yaml_safe("x: " + "y" * 20_000)  # an input is still refused
    assert load_catalog.__wrapped__().rules
