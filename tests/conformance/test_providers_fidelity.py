"""Never stricter than the providers, over every public recording (both shared folders).

* Every recorded 2xx request is accepted for its model (the audit library path: shape from the URL,
  dialect from the host, profile from the model), with no violation at all in lint mode.
* No ``inferred`` rule (a wording or a type rule no recording showed) fires on any recorded 2xx
  request under any profile of its shape and dialect.
* Every recorded 4xx is classified by hand: matched by a rule (id, status and the provider's error
  type, message and param, taken from the recording by this test), or outside request validity
  (auth, unknown model, quota, context length, a URL the provider failed to download). Every 4xx
  about request validity is matched: a new recording that no rule explains fails the
  classification test until a rule (or an out-of-scope reason) is written for it.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import pytest
from paths import RECORDINGS, RECORDINGS_MORE

from conformance.providers.catalog import (
    list_profiles,
    load_catalog,
    profile_for_model,
    resolve_profile,
)
from conformance.providers.validation import lint_request, overflow_verdict, validate_request
from conformance.traffic.audit import AuditRow, audit_interaction
from conformance.traffic.reading import RecordedInteraction, detect_shape, iter_recordings
from reference_impl.retry import context_overflow

pytestmark = [
    pytest.mark.recordings,
    pytest.mark.skipif(
        not (RECORDINGS.is_dir() and RECORDINGS_MORE.is_dir()),
        reason=f"{RECORDINGS} or {RECORDINGS_MORE} is absent: the public recordings live in "
        "../shared (set CTXCONF_SHARED to point elsewhere)",
    ),
]

Key = tuple[str, int]  # "folder/file", interaction index


@cache
def _corpus() -> tuple[tuple[RecordedInteraction, AuditRow], ...]:
    out = []
    for root in (RECORDINGS, RECORDINGS_MORE):
        for interaction in iter_recordings(root):
            row = audit_interaction(interaction)
            if row is not None:
                out.append((interaction, row))
    return tuple(out)


def _key(interaction: RecordedInteraction) -> Key:
    path = Path(interaction.file)
    return f"{path.parent.name}/{path.name}", interaction.index


def _recorded(status: int | None, low: int, high: int) -> bool:
    return status is not None and low <= status < high


def test_the_corpus_holds_the_recorded_requests() -> None:
    statuses = [i.status for i, _ in _corpus()]
    # 309 judged 2xx requests (the count when every file was first read: a guard against requests
    # silently dropping out) and 49 4xx, each listed by hand below.
    assert sum(_recorded(s, 200, 300) for s in statuses) == 309
    assert sum(_recorded(s, 400, 500) for s in statuses) == 49


def test_every_recorded_2xx_is_accepted_for_its_model_with_no_violation() -> None:
    refused = []
    for interaction, row in _corpus():
        if not _recorded(interaction.status, 200, 300):
            continue
        body: Any = interaction.judged_body
        endpoint = "count" if interaction.is_token_count else "generate"
        verdicts = lint_request(
            body, row.shape, dialect=row.dialect, profile=row.verdict.profile, endpoint=endpoint
        )
        if not verdicts[0].accepted:
            refused.append((_key(interaction), row.verdict.profile, [v.rule for v in verdicts]))
    assert refused == []


def test_no_inferred_rule_rejects_a_recorded_2xx_under_any_profile() -> None:
    inferred = {rid for rid, rule in load_catalog().rules.items() if rule.evidence == "inferred"}
    assert {"C0", "R0", "A12a", "G0", "B0"} <= inferred
    fired = []
    for interaction, row in _corpus():
        if not _recorded(interaction.status, 200, 300):
            continue
        body: Any = interaction.judged_body
        for profile in list_profiles(row.shape, row.dialect):
            verdicts = lint_request(body, row.shape, dialect=row.dialect, profile=profile.id)
            fired.extend(
                (_key(interaction), profile.id, v.rule) for v in verdicts if v.rule in inferred
            )
    assert fired == []


def test_a_recorded_2xx_in_a_log_without_its_url_is_still_accepted() -> None:
    # A log line may be the bare request body (docs/auditing-traffic.md): the shape is then read
    # from the body. Every accepted request must keep its recorded shape, or be accepted as the
    # shape the body reads as (a plain Anthropic text request is valid Chat too).
    misjudged = []
    for interaction, row in _corpus():
        if not _recorded(interaction.status, 200, 300):
            continue
        body: Any = interaction.judged_body
        shape = detect_shape("", body)
        if shape == row.shape:
            continue
        verdict = validate_request(body, shape, profile=profile_for_model(shape, None, None).id)
        if shape is None or not verdict.accepted:
            misjudged.append((_key(interaction), row.shape, shape, verdict.rule))
    assert misjudged == []


# ------------------------------------------------------------------------------ 4xx


def _error_parts(body: object) -> tuple[object, object, object]:
    """(type, param, message) of an error body in any of the recorded envelopes: OpenAI
    ``{error: {type, param, message}}``, Anthropic ``{error: {type, message}}``, Gemini
    ``{error: {status, message}}``, Bedrock ``{message}``."""
    if not isinstance(body, dict):
        return None, None, body
    error = body.get("error", body)
    if not isinstance(error, dict):
        return None, None, error
    return error.get("type") or error.get("status"), error.get("param"), error.get("message")


# Matched: the rule that must reject the recorded request.
MATCHED: dict[Key, str] = {
    ("anthropic/400_input_shape_ddtrace.yaml", 0): "A12",
    ("gateways/deepseek_responses_400_interleaved_calls.yaml", 0): "DS4",
    ("gemini/vertex_400_invalid_role_otel.yaml", 0): "G7",
    ("openai_chat/400_system_role_unsupported_o1mini.yaml", 0): "C8",
    ("openai_responses/400_reasoning_without_following_item.yaml", 1): "R4",
    ("anthropic/400_empty_string_content_har__mirascope.har", 0): "A11",
    ("bedrock/400_nova_extraneous_key_toolResult__pydantic-ai.yaml", 1): "B11",
    ("bedrock/400_invoke_image_url_source_unsupported__chatlas.yaml", 1): "A23",
    ("bedrock/400_claude_video_unsupported__pydantic-ai.yaml", 1): "B12",
    ("bedrock/400_claude_document_source_type_required__pydantic-ai.yaml", 1): "B13",
    ("openai_responses/400_invalid_file_data_mime_audio__pydantic-ai.yaml", 2): "R13",
    ("openai_responses/400_error_envelope_temperature.yaml", 0): "R14",
    ("gemini/400_vertex_invalid_temperature__otel-contrib.yaml", 0): "G10",
    ("openai_chat/400_stop_unsupported_gpt5mini__mirascope.yaml", 0): "C12",
    ("openai_chat/400_stop_unsupported_o1mini__crewai.yaml", 0): "C12",
    ("openai_chat/400_strict_schema_additionalProperties_har__mirascope.har", 0): "C13",
    ("openai_chat/400_web_search_options_unsupported__pydantic-ai.yaml", 0): "C14",
    ("anthropic/400_effort_unsupported_envelope.yaml", 0): "A24",
    ("bedrock/400_count_tokens_server_tool_tag__pydantic-ai.yaml", 0): "A25",
}

# Not about the request's validity: no rule can tell from the body.
OUT_OF_SCOPE: dict[Key, str] = {
    # A file_url the provider fetches: its type is the fetched file's, not the body's.
    (
        "openai_responses/400_audio_file_type_unsupported__pydantic-ai.yaml",
        1,
    ): "type of a fetched file",
    ("bedrock/converse_400_invalid_model.yaml", 0): "unknown model id",
    ("bedrock/400_converse_invalid_model_otel__otel-contrib.yaml", 0): "unknown model id",
    ("bedrock/400_count_tokens_model_unsupported__pydantic-ai.yaml", 0): "model availability",
    ("bedrock/403_security_token_invalid__ruby_llm.yml", 0): "credentials",
    ("anthropic/404_model_typo__pydantic-ai.yaml", 0): "unknown model",
    ("gemini/404_model_typo__pydantic-ai.yaml", 0): "unknown model",
    ("openai_chat/404_model_not_found_elastic__elastic-otel.yaml", 0): "unknown model",
    ("openai_responses/400_model_does_not_exist__otel-contrib.yaml", 0): "unknown model",
    ("gateways/azure_404_deployment_missing__openllmetry.yaml", 1): "unknown deployment",
    ("gateways/azure_404_deployment_missing__openllmetry.yaml", 2): "unknown deployment",
    ("gateways/azure_404_deployment_missing__openllmetry.yaml", 3): "unknown deployment",
    ("gateways/deepseek_401_auth__ruby_llm.yml", 0): "credentials",
    ("gateways/openrouter_401_missing_auth_header__ruby_llm.yml", 0): "credentials",
    ("gateways/openrouter_401_no_cookie_auth__crewai.yaml", 0): "credentials",
    ("gateways/openrouter_401_no_cookie_auth__crewai.yaml", 1): "credentials",
    ("gateways/xai_400_invalid_api_key__ruby_llm.yml", 0): "credentials",
    ("gemini/400_api_key_invalid__mirascope.yaml", 0): "credentials",
    ("openai_chat/401_invalid_api_key__mirascope.yaml", 0): "credentials",
    ("gateways/openrouter_429_provider_error.yaml", 0): "upstream rate limit",
    ("gateways/openrouter_429_provider_error.yaml", 1): "upstream rate limit",
    ("gateways/openrouter_429_provider_error.yaml", 2): "upstream rate limit",
    ("gemini/429_quota_exceeded__ruby_llm.yml", 0): "quota",
    # Context length: judged by the overflow rules from a token count, and these bodies were
    # rewritten by the recorder (<MASSIVE_TEXT> placeholders, PROVENANCE.md), so not recomputable.
    ("gateways/deepseek_400_context_length__ruby_llm.yml", 0): "context length (scrubbed body)",
    ("gateways/ollama_cloud_400_prompt_too_long__ruby_llm.yml", 0): "context length (scrubbed)",
    ("gateways/openrouter_400_context_length__ruby_llm.yml", 0): "context length (scrubbed body)",
    ("gateways/perplexity_400_messages_too_long__ruby_llm.yml", 0): "context length (scrubbed)",
    ("gemini/400_vertex_input_token_count_exceeded__ruby_llm.yml", 1): "context length (scrubbed)",
    ("openai_responses/400_context_window_exceeded__ruby_llm.yml", 0): "context length (scrubbed)",
    (
        "openai_chat/400_image_url_download_failed__openllmetry.yaml",
        2,
    ): "the URL failed to download",
}


def _rejections() -> dict[Key, tuple[RecordedInteraction, AuditRow]]:
    return {_key(i): (i, row) for i, row in _corpus() if _recorded(i.status, 400, 500)}


def test_every_recorded_4xx_is_classified_once() -> None:
    keys = set(_rejections())
    classes = [set(MATCHED), set(OUT_OF_SCOPE)]
    assert set().union(*classes) == keys
    assert sum(len(c) for c in classes) == len(keys)


@pytest.mark.parametrize("key", sorted(MATCHED), ids=lambda k: f"{k[0]}#{k[1]}")
def test_recorded_4xx_is_matched_with_the_providers_answer(key: Key) -> None:
    interaction, row = _rejections()[key]
    verdict = row.verdict
    assert verdict.rule == MATCHED[key]
    assert verdict.status == interaction.status
    assert _error_parts(verdict.error) == _error_parts(interaction.response_body)


# ------------------------------------------------------------------------ context length

# The recorded context-length errors: their bodies were scrubbed (no token count can be
# recomputed), but their texts name both numbers, so the profile's overflow rule, given those
# numbers, must render what the provider sent. (input tokens, limit, max_tokens) per recording.
OVERFLOWS: dict[Key, tuple[int, int, int | None]] = {
    ("gateways/deepseek_400_context_length__ruby_llm.yml", 0): (1250025, 1048565, None),
    ("gateways/openrouter_400_context_length__ruby_llm.yml", 0): (2500021, 200000, None),
    ("gemini/400_vertex_input_token_count_exceeded__ruby_llm.yml", 1): (1250074, 1048576, None),
    ("openai_responses/400_context_window_exceeded__ruby_llm.yml", 0): (1_500_000, 400_000, None),
    ("gateways/perplexity_400_messages_too_long__ruby_llm.yml", 0): (1_500_000, 128_000, None),
}
# Recorded, but no overflow rule of the profile renders them (no rule in the catalog yet).
NO_OVERFLOW_RULE: frozenset[Key] = frozenset(
    {
        ("gateways/ollama_cloud_400_prompt_too_long__ruby_llm.yml", 0),
    }
)


@pytest.mark.parametrize("key", sorted(OVERFLOWS), ids=lambda k: f"{k[0]}#{k[1]}")
def test_a_recorded_context_length_error_is_what_the_profiles_overflow_rule_renders(
    key: Key,
) -> None:
    interaction, row = _rejections()[key]
    tokens, limit, max_tokens = OVERFLOWS[key]
    verdict = overflow_verdict(
        row.shape,
        dialect=row.dialect,
        profile=row.verdict.profile,
        input_tokens=tokens,
        context_limit=limit,
        max_tokens=max_tokens,
    )
    assert verdict.status == interaction.status
    assert _error_parts(verdict.error) == _error_parts(interaction.response_body)


@pytest.mark.parametrize("key", sorted(OVERFLOWS), ids=lambda k: f"{k[0]}#{k[1]}")
def test_the_reference_retry_recognises_a_recorded_context_length_error(key: Key) -> None:
    interaction, row = _rejections()[key]
    found = context_overflow(interaction.response_body, row.shape)
    assert found is not None, interaction.response_body


def test_recorded_context_length_errors_without_a_rule_are_named() -> None:
    assert set(OUT_OF_SCOPE) >= NO_OVERFLOW_RULE
    for key in NO_OVERFLOW_RULE:
        _, row = _rejections()[key]
        assert resolve_profile(row.shape, row.dialect, row.verdict.profile).overflow is None, key
