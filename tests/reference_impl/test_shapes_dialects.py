"""Gateway dialects of openai-chat: each one shown to differ from first-party OpenAI somewhere.

Expected texts are the wordings quoted in provider-rules.md section 6 (typed from the document,
not from the module), and the id rule is Mistral's own: nine characters from a-z, A-Z, 0-9.
"""

from __future__ import annotations

import re
from dataclasses import fields, replace
from typing import Any

import pytest
from hypothesis import given, settings
from paths import RECORDINGS

from conformance.strategies import transcripts
from reference_impl.errors import ShapeError, UnsupportedPartError
from reference_impl.shapes.dialects import (
    DIALECTS,
    Dialect,
    dialect_names,
    get_dialect,
    remap_tool_ids,
    render_for_dialect,
)
from reference_impl.shapes.openai_chat import CAPABILITIES, parse_request, render_request
from reference_impl.transcript import (
    Message,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    Transcript,
)

BASE = get_dialect("openai")
REQUIRED = (
    "azure",
    "deepseek",
    "mistral",
    "vllm",
    "ollama",
    "openrouter",
    "qwen",
    "groq",
    "xai",
)


def ring(call_id: str = "call_abc123XYZ", *, content_null: bool = True) -> Transcript:
    parts: tuple[Any, ...] = (ToolCallPart(call_id, "get_weather", '{"city":"Paris"}'),)
    if not content_null:
        parts = (TextPart("checking"), *parts)
    return Transcript(
        messages=(
            Message("user", (TextPart("weather?"),)),
            Message("assistant", parts),
            Message("tool", (ToolResultPart(call_id, (TextPart("sunny"),)),)),
            Message("assistant", (TextPart("It is sunny."),)),
        )
    )


# ------------------------------------------------------------------------------------ registry


def test_every_required_dialect_is_there_and_based_on_openai_chat() -> None:
    assert set(REQUIRED) <= set(dialect_names())
    for name in dialect_names():
        assert DIALECTS[name].base_shape == "openai-chat"


@pytest.mark.parametrize(
    ("alias", "name"),
    [
        ("azure-openai", "azure"),
        ("dashscope", "qwen"),
        ("Grok", "xai"),
        ("llama.cpp", "llamacpp"),
        ("lm-studio", "lmstudio"),
    ],
)
def test_aliases_resolve(alias: str, name: str) -> None:
    # "azure" is what conformance.traffic.endpoints.detect_dialect reports for *.openai.azure.com.
    assert get_dialect(alias).name == name


def test_unknown_dialect_is_a_named_error_listing_the_known_ones() -> None:
    with pytest.raises(ShapeError) as info:
        get_dialect("bogus-gw")
    assert "bogus-gw" in str(info.value)
    for name in REQUIRED:
        assert name in str(info.value)


_BEHAVIOUR = [
    f.name for f in fields(Dialect) if f.name not in ("name", "description", "aliases", "evidence")
]


@pytest.mark.parametrize("name", [n for n in DIALECTS if n != "openai"])
def test_each_dialect_differs_from_openai_in_data_and_cites_section_6(name: str) -> None:
    dialect = DIALECTS[name]
    differences = [f for f in _BEHAVIOUR if getattr(dialect, f) != getattr(BASE, f)]
    assert differences, f"{name} is identical to first-party OpenAI"
    assert dialect.evidence
    assert all("provider-rules.md" in e.rule for e in dialect.evidence)
    assert {e.evidence for e in dialect.evidence} <= {
        "documented",
        "recorded",
        "observed",
        "inferred",
    }


# ---------------------------------------------------------------------- behaviour by dialect


def test_azure_spells_preceding_where_openai_spells_preceeding_C2a() -> None:
    assert "preceeding" in (BASE.error_text("C2") or "")
    assert "a preceding message" in (get_dialect("azure").error_text("C2") or "")


def test_deepseek_takes_reasoning_content_back_and_openai_does_not() -> None:
    reasoning = ReasoningPart("deepseek", '{"reasoning_content":"need weather"}')
    t = ring()
    head = replace(t.messages[1], parts=(reasoning, *t.messages[1].parts))
    t = t.with_messages((t.messages[0], head, *t.messages[2:]))
    body = render_for_dialect(t, "deepseek")
    assert body["messages"][1]["reasoning_content"] == "need weather"
    with pytest.raises(UnsupportedPartError) as info:
        render_for_dialect(t, BASE)
    assert info.value.where == "messages[1].parts[0]"
    assert "(insufficient tool messages following tool_calls message)" in (
        get_dialect("deepseek").error_text("C1") or ""
    )


def test_mistral_refuses_openai_style_ids_unless_asked_to_remap() -> None:
    t = ring("call_RTlWVuE5MqEb3WZJgTIl7Rsb")
    render_for_dialect(t, BASE)  # fine for OpenAI
    with pytest.raises(UnsupportedPartError) as info:
        render_for_dialect(t, "mistral")
    assert info.value.where == "messages[1].parts[0]"
    assert "call_RTlWVuE5MqEb3WZJgTIl7Rsb" in str(info.value)
    body = render_for_dialect(t, "mistral", remap_ids=True)
    new_id = body["messages"][1]["tool_calls"][0]["id"]
    assert re.fullmatch(r"[a-zA-Z0-9]{9}", new_id)
    assert body["messages"][2]["tool_call_id"] == new_id
    assert render_for_dialect(t, "mistral", remap_ids=True) == body  # same session, same ids


def test_mistral_keeps_ids_that_are_already_valid() -> None:
    t = ring("abcDEF123")
    assert render_for_dialect(t, "mistral") == render_request(t)
    assert remap_tool_ids(t, get_dialect("mistral")) == (t, {})


def test_mistral_remap_never_collides_with_existing_ids() -> None:
    mistral = get_dialect("mistral")
    t = Transcript(
        messages=(
            Message(
                "assistant",
                (ToolCallPart("bad-1", "f", "{}"), ToolCallPart("okOKok123", "f", "{}")),
            ),
            Message("tool", (ToolResultPart("bad-1", ()), ToolResultPart("okOKok123", ()))),
        )
    )
    renamed, mapping = remap_tool_ids(t, mistral)
    assert set(mapping) == {"bad-1"}
    ids = [c.id for c in renamed.messages[0].tool_calls]
    assert ids[1] == "okOKok123"
    assert len(set(ids)) == 2
    assert [r.call_id for r in renamed.messages[1].tool_results] == ids


def test_mistral_refuses_a_user_message_right_after_a_tool_message() -> None:
    t = ring("abcDEF123")
    t = t.with_messages((*t.messages[:3], Message("user", (TextPart("and tomorrow?"),))))
    render_for_dialect(t, BASE)
    with pytest.raises(UnsupportedPartError) as info:
        render_for_dialect(t, "mistral")
    assert info.value.where == "messages[3]"
    assert "Unexpected role 'user' after role 'tool'" in str(info.value)


def test_vllm_pairing_lives_in_the_chat_template() -> None:
    assert BASE.pairing == "server"
    vllm = get_dialect("vllm")
    assert vllm.pairing == "template"
    assert "conversation roles must alternate user/assistant" in (
        vllm.error_text("alternation") or ""
    )


@pytest.mark.parametrize("name", ["ollama", "lmstudio", "llamacpp"])
def test_local_servers_get_an_empty_string_instead_of_null_content(name: str) -> None:
    t = ring("abc")
    assert render_for_dialect(t, BASE)["messages"][1]["content"] is None
    body = render_for_dialect(t, name)
    assert body["messages"][1]["content"] == ""
    assert parse_request(body) != t  # "" is a text part on the wire: the same request in meaning
    assert parse_request(body).messages[1].tool_calls == t.messages[1].tool_calls


def test_ollama_errors_are_a_bare_string_envelope() -> None:
    ollama = get_dialect("ollama")
    assert ollama.error_envelope == "ollama"
    assert ollama.error_text("C5") == "invalid message content type: <nil>"


def test_openrouter_wraps_upstream_errors() -> None:
    openrouter = get_dialect("openrouter")
    assert (BASE.error_envelope, openrouter.error_envelope) == ("openai", "openrouter")
    assert openrouter.error_text("upstream") == "Provider returned error"


@pytest.mark.skipif(
    not RECORDINGS.is_dir(), reason=f"{RECORDINGS} is absent (../shared/recordings)"
)
@pytest.mark.recordings
def test_openrouter_envelope_matches_the_recording() -> None:
    from conformance.traffic.reading import read_cassette

    [first, *_] = read_cassette(RECORDINGS / "gateways" / "openrouter_429_provider_error.yaml")
    assert get_dialect(first.dialect or "").name == "openrouter"
    error = first.response_body["error"]  # type: ignore[index]
    assert error["message"] == get_dialect("openrouter").error_text("upstream")
    assert set(error["metadata"]) >= {"raw", "provider_name"}


def test_qwen_prefixes_its_errors_and_names_empty_tool_calls() -> None:
    qwen = get_dialect("qwen")
    assert (qwen.error_text("C1") or "").startswith("<400> InternalError.Algo.InvalidParameter:")
    assert qwen.error_text("C4") == "Empty tool_calls is not supported in message"
    t = Transcript(messages=(Message("assistant", (TextPart("x"),), empty_tool_calls=True),))
    assert render_request(t)["messages"][0]["tool_calls"] == []  # the base shape keeps it (C4)
    with pytest.raises(UnsupportedPartError, match="empty tool_calls"):
        render_for_dialect(t, qwen)


def test_groq_reports_tool_use_failed() -> None:
    assert BASE.error_text("tool_use_failed") is None
    assert (
        get_dialect("groq").error_text("tool_use_failed")
        == "Tool choice is required, but model did not call a tool"
    )


def test_xai_accepts_name_only_on_user_messages() -> None:
    named_user = Transcript(messages=(Message("user", (TextPart("hi"),), name="ann"),))
    assert render_for_dialect(named_user, "xai")["messages"][0]["name"] == "ann"
    named_system = Transcript(messages=(Message("system", (TextPart("s"),), name="ops"),))
    render_for_dialect(named_system, BASE)
    with pytest.raises(UnsupportedPartError) as info:
        render_for_dialect(named_system, "xai")
    assert "Only messages of role 'user' can have a name." in str(info.value)


def test_perplexity_wants_strict_alternation() -> None:
    assert (BASE.strict_alternation, get_dialect("perplexity").strict_alternation) == (False, True)


def test_litellm_and_gemini_openai_have_their_own_wording() -> None:
    assert get_dialect("litellm").error_envelope == "litellm"
    assert "Name cannot be empty." in (get_dialect("gemini-openai").error_text("C2") or "")


def test_moonshot_lowercases_C1() -> None:
    assert (get_dialect("moonshot").error_text("C1") or "").startswith("an assistant message")
    assert (BASE.error_text("C1") or "").startswith("An assistant message")


# ------------------------------------------------------------------------------- property

_NO_REASONING = replace(CAPABILITIES, reasoning_origins=frozenset())


@settings(max_examples=100, deadline=None)
@given(transcripts(_NO_REASONING))
def test_mistral_remap_keeps_every_ring_linked(transcript: Transcript) -> None:
    body = render_for_dialect(transcript, "mistral", remap_ids=True)
    calls = [c["id"] for m in body["messages"] for c in m.get("tool_calls") or []]
    results = [m["tool_call_id"] for m in body["messages"] if m["role"] == "tool"]
    assert all(re.fullmatch(r"[a-zA-Z0-9]{9}", i) for i in calls + results)
    assert calls == results  # the strategy answers every call, in order
    original = [c.id for m in transcript.messages for c in m.tool_calls]
    assert len(set(calls)) == len(set(original))  # one new id per old id
