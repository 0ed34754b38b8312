"""Each catalogued rule: a violating body is rejected with that rule, a fixed body is accepted.

Cases are data (tests/conformance/provider_rule_cases.yaml), written by hand from provider-rules.md.
Extra checks tie the data to the catalog: every enforceable rule has a case, every rule that cannot
be judged from one body says why, and every profile differs from its base on at least one case.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml
from shape_support import chat_ring

from conformance.providers.catalog import (
    Profile,
    Rule,
    load_catalog,
    message_pattern,
    profile_for_model,
    resolve_profile,
    rules_for,
)
from conformance.providers.validation import lint_request, validate_request
from conformance.providers.verdict import Verdict

CASES_FILE = Path(__file__).with_name("provider_rule_cases.yaml")


def _expand(value: Any) -> Any:
    """``{long_text: N}`` stands for a string of N characters (C11) to keep the data small."""
    if isinstance(value, dict):
        if set(value) == {"long_text"}:
            return "x" * int(value["long_text"])
        return {k: _expand(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_expand(v) for v in value]
    return value


DATA: dict[str, Any] = yaml.safe_load(CASES_FILE.read_text("utf-8"))
CASES: list[dict[str, Any]] = [_expand(case) for case in DATA["cases"]]


def _case_id(case: Mapping[str, Any]) -> str:
    where = case.get("profile") or case.get("dialect") or "default"
    label = f"-{case['label']}" if "label" in case else ""
    return f"{case['rule']}-{where}{label}"


def _judge(case: Mapping[str, Any], body: Any, *, tokens: int | None = None) -> Verdict:
    return validate_request(
        body,
        case["shape"],
        dialect=case.get("dialect"),
        profile=case.get("profile"),
        context_limit=case.get("limit"),
        input_tokens=tokens if tokens is not None else case.get("tokens"),
    )


def _message_of(verdict: Verdict) -> str:
    """The provider's message text, wherever its envelope keeps it."""
    error = verdict.error or {}
    inner = error.get("error", error)
    if isinstance(inner, str):
        return inner
    if isinstance(inner, dict) and isinstance(inner.get("metadata"), dict):
        return str(inner["metadata"].get("raw", ""))
    return str(inner.get("message", ""))


@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_violating_body_is_rejected_by_its_rule(case: dict[str, Any]) -> None:
    verdict = _judge(case, case["violating"])
    expected = load_catalog().rules[case.get("expect", case["rule"])]
    assert verdict.verdict == "reject", verdict
    assert verdict.rule == expected.id
    assert verdict.status == expected.status
    assert verdict.evidence == expected.evidence
    assert verdict.provenance == "emulated"
    # The text is the catalogued template (or one of its wordings) with values filled in,
    # nothing left unfilled.
    message = _message_of(verdict)
    patterns = [message_pattern(expected)]
    patterns += [message_pattern(expected, variant) for variant in expected.variants]
    assert any(p.search(" ".join(message.split())) for p in patterns), message
    assert not re.search(r"\{[a-z_]+\}", message), message
    # Cases that spell out the provider's text (and OpenAI's param) must match it exactly.
    if "message" in case:
        assert message == case["message"]
    if "param" in case:
        assert (verdict.error or {})["error"]["param"] == case["param"]


@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_fixed_body_is_accepted(case: dict[str, Any]) -> None:
    if "fixed" in case:
        verdict = _judge(case, case["fixed"])
    else:
        verdict = _judge(case, case["violating"], tokens=case["fixed_tokens"])
    assert verdict.verdict == "accept", verdict
    assert verdict.status == 200
    assert verdict.error is None


@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_lint_lists_the_first_violation_first(case: dict[str, Any]) -> None:
    first = _judge(case, case["violating"])
    every = lint_request(
        case["violating"],
        case["shape"],
        dialect=case.get("dialect"),
        profile=case.get("profile"),
        context_limit=case.get("limit"),
        input_tokens=case.get("tokens"),
    )
    assert every[0] == first


def test_every_enforceable_rule_has_a_case() -> None:
    catalog = load_catalog()
    covered = {case["rule"] for case in CASES}
    enforceable = {rid for rid, rule in catalog.rules.items() if rule.judgeable}
    assert sorted(enforceable - covered) == []
    assert sorted(covered - set(catalog.rules)) == []


def test_rules_that_cannot_be_judged_say_why_and_have_no_case() -> None:
    covered = {case["rule"] for case in CASES}
    for rule in load_catalog().rules.values():
        if not rule.judgeable:
            assert rule.not_judgeable_reason, rule.id
            assert rule.id not in covered, f"{rule.id} is marked judgeable: false but has a case"


def _base_of(profile: Profile) -> Profile | None:
    if profile.extends is not None:
        return load_catalog().profiles[profile.extends]
    if profile.dialect is not None:  # a dialect root differs from its shape's first-party default
        return resolve_profile(profile.shape)
    return None


def _differs(case: Mapping[str, Any], profile: Profile, base: Profile) -> bool:
    """Whether some body of the case gets a different verdict (or error body) under the two."""

    def judged(p: Profile, body: Any) -> tuple[str, str | None, Any]:
        v = validate_request(
            body,
            p.shape,
            profile=p.id,
            context_limit=case.get("limit"),
            input_tokens=case.get("tokens"),
        )
        return v.verdict, v.rule, v.error

    bodies = [case["violating"], *([case["fixed"]] if "fixed" in case else [])]
    return any(judged(profile, body) != judged(base, body) for body in bodies)


@pytest.mark.parametrize(
    "profile",
    [p for p in load_catalog().profiles.values() if _base_of(p) is not None],
    ids=lambda p: p.id,
)
def test_each_dialect_and_profile_differs_from_its_base_somewhere(profile: Profile) -> None:
    base = _base_of(profile)
    assert base is not None
    if profile.id in DATA["same_as_base"]:
        assert all(not _differs(c, profile, base) for c in CASES if c["shape"] == profile.shape)
        return
    differing = [
        _case_id(c) for c in CASES if c["shape"] == profile.shape and _differs(c, profile, base)
    ]
    assert differing, f"no case shows how {profile.id} differs from {base.id}"


def _rule(rule_id: str) -> Rule:
    return load_catalog().rules[rule_id]


def test_anthropic_merges_consecutive_turns_today_but_not_in_2024() -> None:
    # A9: the same body is fine on anthropic-current and rejected on the strict 2024 profile.
    body = {"model": "c", "max_tokens": 5, "messages": [{"role": "user", "content": "a"}] * 2}
    assert validate_request(body, "anthropic-messages").accepted
    strict = validate_request(
        body, "anthropic-messages", profile="anthropic-2024-strict-alternation"
    )
    assert strict.rule == "A9"
    assert strict.error is not None
    assert 'multiple "user" roles in a row' in strict.error["error"]["message"]


def test_opus_4_8_accepts_system_after_a_user_turn_only() -> None:
    body = {
        "model": "claude-opus-4-8",
        "max_tokens": 5,
        "messages": [{"role": "user", "content": "a"}, {"role": "system", "content": "s"}],
    }
    assert validate_request(body, "anthropic-messages").rule == "A10"
    assert validate_request(body, "anthropic-messages", profile="anthropic-opus-4.8").accepted


def test_c14_web_search_options_only_off_the_search_models() -> None:
    for model in ("gpt-4o-search-preview", "gpt-5-search-api"):
        body = {"model": model, "messages": [{"role": "user", "content": "today?"}]}
        body["web_search_options"] = {"search_context_size": "low"}
        assert validate_request(body, "openai-chat").rule == "C14"  # the default profile
        profile = profile_for_model("openai-chat", None, model).id
        assert validate_request(body, "openai-chat", profile=profile).accepted
    # Gateways are not OpenAI: neither C14 nor C13 is known to apply there.
    assert "C14" not in rules_ids("openai-chat", "openrouter")
    assert "C13" not in rules_ids("openai-chat", "azure")


def test_c13_judges_strict_tools_only() -> None:
    open_schema = {"type": "object", "properties": {"x": {"type": "string"}}}
    tool = {"type": "function", "function": {"name": "f", "parameters": open_schema}}
    body = {"model": "gpt-4o", "messages": [{"role": "user", "content": "q"}], "tools": [tool]}
    assert validate_request(body, "openai-chat").accepted  # not strict: no schema rule
    tool["function"]["strict"] = True
    assert validate_request(body, "openai-chat").rule == "C13"
    open_schema["additionalProperties"] = False
    assert validate_request(body, "openai-chat").accepted


def test_a24_judges_effort_only_where_the_levels_are_known() -> None:
    body = {
        "model": "claude-opus-4-6",
        "max_tokens": 5,
        "messages": [{"role": "user", "content": "2+2?"}],
        "output_config": {"effort": "xhigh"},
    }
    assert validate_request(body, "anthropic-messages").accepted  # no levels in the default
    assert validate_request(body, "anthropic-messages", profile="anthropic-opus-4.6").rule == "A24"
    for level in ("low", "medium", "high", "max"):
        body["output_config"] = {"effort": level}
        assert validate_request(body, "anthropic-messages", profile="anthropic-opus-4.6").accepted


def test_a25_server_tools_refused_on_bedrock_only() -> None:
    body = {
        "max_tokens": 5,
        "messages": [{"role": "user", "content": "weather in Paris?"}],
        "tools": [{"type": "web_search_20250305", "name": "web_search"}],
    }
    # Anthropic's own API takes the server tool (recorded 200 on claude-sonnet-4-5).
    assert validate_request(
        {**body, "model": "claude-sonnet-4-20250514"}, "anthropic-messages"
    ).accepted
    bedrock = validate_request(
        body, "anthropic-messages", profile="anthropic-bedrock-claude-sonnet-4"
    )
    assert bedrock.rule == "A25"
    assert bedrock.status == 400
    custom = {**body, "tools": [{"name": "f", "input_schema": {"type": "object"}}]}
    assert validate_request(
        custom, "anthropic-messages", profile="anthropic-bedrock-claude-sonnet-4"
    ).accepted
    # With a beta the tool list is not the recorded one (computer use adds its tools): not judged.
    computer = {
        **body,
        "anthropic_beta": ["computer-use-2025-01-24"],
        "tools": [{"type": "computer_20250124", "name": "computer", "display_width_px": 1024}],
    }
    profile = "anthropic-bedrock-claude-sonnet-4"
    assert validate_request(computer, "anthropic-messages", profile=profile).accepted
    assert (
        validate_request(
            {**computer, "anthropic_beta": []}, "anthropic-messages", profile=profile
        ).rule
        == "A25"
    )


def rules_ids(shape: str, dialect: str | None) -> set[str]:
    return {rule.id for rule in rules_for(shape, dialect)}


def test_mistral_reports_its_id_rule_where_openai_accepts() -> None:
    body = {"model": "m", "messages": [{"role": "user", "content": "q"}, *chat_ring("call_1")]}
    assert validate_request(body, "openai-chat").accepted
    verdict = validate_request(body, "openai-chat", dialect="mistral")
    assert verdict.rule == "MI4"
    # Mistral's flat envelope (not OpenAI's nested "error") with its numeric string code.
    assert verdict.error == {
        "object": "error",
        "message": "Tool call id was call_1 but must be a-z, A-Z, 0-9, with a length of 9.",
        "type": "invalid_function_call",
        "param": None,
        "code": "3280",
    }
    assert _rule("MI4").dialect == "mistral"
