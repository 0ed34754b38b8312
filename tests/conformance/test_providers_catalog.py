"""The rule catalog: complete against provider-rules.md, consistent, and loudly validated."""

from __future__ import annotations

import json
import re

import jsonschema
import pytest
from paths import SHARED

from conformance.errors import CatalogError, UnknownProfileError
from conformance.providers import catalog as catalog_module
from conformance.providers.catalog import (
    SHAPES,
    list_profiles,
    load_catalog,
    message_pattern,
    profile_for_model,
    resolve_profile,
    rules_for,
)
from reference_impl.documents import load_yaml_safe

DESIGN = SHARED / "design" / "provider-rules.md"


def test_every_rule_id_of_provider_rules_md_is_catalogued() -> None:
    if not DESIGN.is_file():
        pytest.skip(f"{DESIGN} is absent: ../shared/design holds provider-rules.md")
    ids = set(re.findall(r"^\| ([CRAGB]\d+[a-z]?) \|", DESIGN.read_text("utf-8"), re.MULTILINE))
    assert len(ids) > 60  # the table parse itself worked
    assert sorted(ids - set(load_catalog().rules)) == []


def test_gateway_rows_have_their_own_ids() -> None:
    rules = load_catalog().rules
    for rule_id in ("DS1", "DS4", "MI1", "MI4", "OL1", "OL2", "QW1", "XA1", "LM1", "LC1", "PP1"):
        assert rules[rule_id].dialect is not None, rule_id


def test_rules_carry_envelope_evidence_and_source() -> None:
    for rule in load_catalog().rules.values():
        assert rule.evidence in {"documented", "recorded", "observed", "inferred"}
        assert rule.source
        assert all(shape in SHAPES for shape in rule.shapes)
        if rule.judgeable and rule.status >= 400:
            assert rule.message, rule.id


def test_param_uses_each_providers_index_notation() -> None:
    rules = load_catalog().rules
    assert rules["C1"].error.param == "messages.[{index}].role"  # OpenAI pairing errors
    assert rules["C4"].error.param == "messages[{index}].tool_calls"  # OpenAI schema errors
    assert rules["A2"].message.startswith("messages.{index}.content.{block}:")  # Anthropic
    assert "messages.{index}.content" in rules["B2"].message  # Bedrock


def test_profiles_cover_every_shape_with_one_default() -> None:
    for shape in SHAPES:
        assert resolve_profile(shape).default
        assert [p for p in list_profiles(shape) if p.default and p.dialect is None]


def test_rules_for_lists_a_profiles_rules_with_overflow_last() -> None:
    ids = [
        rule.id
        for rule in rules_for("anthropic-messages", profile="anthropic-2024-strict-alternation")
    ]
    assert {"A8", "A9", "A1"} <= set(ids)
    assert ids[-1] == "A18a"
    current = [rule.id for rule in rules_for("anthropic-messages")]
    assert "A9" not in current
    assert current[-1] == "A18"


def test_dialect_profiles_replace_wordings() -> None:
    ids = [rule.id for rule in rules_for("openai-chat", dialect="deepseek")]
    assert "DS1" in ids
    assert "C1" not in ids


@pytest.mark.parametrize(
    ("shape", "dialect", "profile"),
    [
        ("no-such-shape", None, None),
        ("openai-chat", "no-such-gateway", None),
        ("openai-chat", None, "anthropic-current"),
        ("openai-chat", "mistral", "openai-o1-mini"),
    ],
)
def test_unknown_names_raise_a_named_error(
    shape: str, dialect: str | None, profile: str | None
) -> None:
    with pytest.raises(UnknownProfileError):
        resolve_profile(shape, dialect, profile)


def test_profiles_chosen_by_model() -> None:
    assert profile_for_model("openai-chat", None, "o1-mini").id == "openai-o1-mini"
    # Gemini 2.5 accepts calls without thought signatures (recorded 200); Gemini 3 requires them.
    assert profile_for_model("gemini", None, "gemini-2.5-pro").id == "gemini-default"
    assert profile_for_model("gemini", None, "gemini-3-pro-preview").id == "gemini-thinking"
    assert profile_for_model("openai-chat", None, "gpt-4o").id == "openai-default"
    assert profile_for_model("openai-chat", "mistral", "o1-mini").id == "mistral-default"


@pytest.mark.parametrize(
    ("shape", "dialect", "model", "profile"),
    [
        # C14: the search models take web_search_options (documented); gpt-5-search-api keeps
        # the GPT-5 facts (C10b, C12) of the profile it extends.
        ("openai-chat", None, "gpt-4o-search-preview", "openai-search"),
        ("openai-chat", None, "gpt-4o-mini-search-preview", "openai-search"),
        ("openai-chat", None, "gpt-5-search-api", "openai-gpt-5-search"),
        ("openai-chat", None, "gpt-5-mini", "openai-gpt-5"),
        # A24: claude-opus-4-6's effort levels (recorded).
        ("anthropic-messages", None, "claude-opus-4-6", "anthropic-opus-4.6"),
        ("anthropic-messages", None, "claude-opus-4-5", "anthropic-current"),
        # A25: Claude Sonnet 4's tool tags on Bedrock, with or without a cross-region prefix.
        (
            "anthropic-messages",
            "bedrock",
            "us.anthropic.claude-sonnet-4-20250514-v1:0",
            "anthropic-bedrock-claude-sonnet-4",
        ),
        (
            "anthropic-messages",
            "bedrock",
            "anthropic.claude-3-5-sonnet",
            "anthropic-bedrock-invoke",
        ),
        ("anthropic-messages", None, "claude-sonnet-4-20250514", "anthropic-current"),
    ],
)
def test_per_model_profiles_of_c14_a24_a25(
    shape: str, dialect: str | None, model: str, profile: str
) -> None:
    assert profile_for_model(shape, dialect, model).id == profile


def test_gpt_5_search_keeps_the_gpt_5_rules_but_c14() -> None:
    search = resolve_profile("openai-chat", profile="openai-gpt-5-search")
    gpt5 = resolve_profile("openai-chat", profile="openai-gpt-5")
    assert set(gpt5.rules) - set(search.rules) == {"C14"}
    assert search.overflow == gpt5.overflow == "C10b"


def test_message_pattern_matches_real_wording_and_not_others() -> None:
    rules = load_catalog().rules
    observed = (
        "messages.22: `tool_use` ids were found without `tool_result` blocks immediately after: "
        "toolu_01Gho1LhNQt7FjqEiiHkrVMK. Each `tool_use` block must have a corresponding "
        "`tool_result` block in the next message."
    )
    assert message_pattern(rules["A1"]).fullmatch(observed)
    assert not message_pattern(rules["A2"]).fullmatch(observed)


def test_the_shipped_catalog_matches_its_schema() -> None:
    # The catalog the package ships is checked here, so that loading it need not (it is not
    # checked again at every start when its digest is the one recorded).
    text, schema = (catalog_module._read_resource(n) for n in ("rules.yaml", "rules.schema.json"))
    jsonschema.validate(load_yaml_safe(text), json.loads(schema))
    digest = catalog_module.catalog_digest(text, schema)
    assert digest == catalog_module.SCHEMA_CHECKED, (
        "rules.yaml or its schema changed and matches it (checked above): record "
        f"SCHEMA_CHECKED = {digest!r} in conformance/providers/catalog.py"
    )


def test_any_other_catalog_is_checked_against_the_schema_when_loaded(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    text_of = catalog_module._read_resource
    broken = text_of("rules.yaml").replace("\nversion: 1\n", "\nversion: 2\n", 1)

    def fake(name: str) -> str:
        return broken if name == "rules.yaml" else text_of(name)

    monkeypatch.setattr(catalog_module, "_read_resource", fake)
    catalog_module.load_catalog.cache_clear()
    try:
        with pytest.raises(CatalogError, match="does not match its schema") as raised:
            catalog_module.load_catalog()
        assert raised.value.where == "version"
    finally:
        monkeypatch.undo()
        catalog_module.load_catalog.cache_clear()
    assert load_catalog().version == 1


def test_a_broken_catalog_fails_loudly(monkeypatch: pytest.MonkeyPatch) -> None:
    text = catalog_module._read_resource("rules.yaml")
    broken = text.replace("rules: [C0, C9, C1a,", "rules: [C0, C9, NOPE1,", 1)
    assert broken != text

    def fake(name: str) -> str:
        return broken if name == "rules.yaml" else text_of(name)

    text_of = catalog_module._read_resource
    monkeypatch.setattr(catalog_module, "_read_resource", fake)
    catalog_module.load_catalog.cache_clear()
    try:
        with pytest.raises(CatalogError, match="NOPE1"):
            catalog_module.load_catalog()
    finally:
        monkeypatch.undo()
        catalog_module.load_catalog.cache_clear()
    assert load_catalog().rules["C1a"].id == "C1a"
