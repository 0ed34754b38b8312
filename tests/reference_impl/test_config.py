"""AssemblyConfig: every key of the issue's example, and a named error with the key path otherwise."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from paths import EXAMPLES

from reference_impl import AssemblyConfig, ConfigError
from reference_impl.budget import BudgetSnapshot, plan_budget
from reference_impl.config import MemoryConfig
from reference_impl.documents import load_yaml_strict

EXAMPLE = EXAMPLES / "assembly.yaml"

ISSUE_YAML = """
context_assembly:
  model_input_limit: 128000
  output_reserve_tokens: 8192
  safety_margin_tokens: 1024
  recent_tool_rings: 3
  recent_user_turns: 2
  middle_delete_unit: tool_ring          # tool_ring | clear_tool_result
  keep_middle_error_results: 5
  summarize_trigger_ratio: 0.8
  summary_max_tokens: 1024
  summary_timeout_ms: 8000
  on_pairing_error: fail_closed          # fail_closed | synthesize_error_results
  on_still_over_budget: fail_closed      # fail_closed | drop_tools_schema_then_fail
  token_counter: provider_or_tiktoken_model_encoding
  pin: [first_user_message, side_effect_ledger, security_system_prompt]
  memory: {max_items: 5}
"""


def test_the_issue_example_loads_and_equals_the_defaults():
    config = AssemblyConfig.from_yaml(ISSUE_YAML)
    assert config == AssemblyConfig()
    assert config.input_budget == 128000 - 8192 - 1024


def test_examples_file_has_every_key_and_loads():
    loaded = yaml.safe_load(EXAMPLE.read_text("utf-8"))["context_assembly"]
    issue_keys = set(yaml.safe_load(ISSUE_YAML)["context_assembly"])
    assert issue_keys <= set(loaded)
    assert set(loaded) == set(AssemblyConfig().to_mapping()["context_assembly"])
    assert AssemblyConfig.from_yaml(EXAMPLE) == AssemblyConfig()
    assert AssemblyConfig.from_yaml(str(EXAMPLE)) == AssemblyConfig()


def test_root_is_optional_and_round_trips():
    assert AssemblyConfig.from_mapping({"recent_tool_rings": 1}).recent_tool_rings == 1
    config = AssemblyConfig(recent_tool_rings=7, pin=("first_user_message",))
    assert AssemblyConfig.from_mapping(config.to_mapping()) == config
    assert AssemblyConfig.from_yaml("") == AssemblyConfig()
    assert AssemblyConfig.from_mapping({"context_assembly": None}) == AssemblyConfig()


@pytest.mark.parametrize(
    ("body", "where", "fragment"),
    [
        (
            {"recent_tool_ring": 3},
            "context_assembly.recent_tool_ring",
            "did you mean 'recent_tool_rings'",
        ),
        (
            {"memory": {"max_item": 3}},
            "context_assembly.memory.max_item",
            "did you mean 'max_items'",
        ),
        (
            {"recent_tool_rings": "3"},
            "context_assembly.recent_tool_rings",
            "expected an integer, got string",
        ),
        (
            {"recent_tool_rings": True},
            "context_assembly.recent_tool_rings",
            "expected an integer, got boolean",
        ),
        ({"recent_tool_rings": 2.5}, "context_assembly.recent_tool_rings", "expected an integer"),
        (
            {"keep_middle_error_results": -1},
            "context_assembly.keep_middle_error_results",
            "negative",
        ),
        ({"memory": {"max_items": -2}}, "context_assembly.memory.max_items", "negative"),
        ({"memory": 5}, "context_assembly.memory", "expected a mapping"),
        ({"summarize_trigger_ratio": 0}, "context_assembly.summarize_trigger_ratio", "(0, 1]"),
        ({"compaction_headroom": -0.1}, "context_assembly.compaction_headroom", "[0, 1)"),
        ({"memory": {"max_items": True}}, "context_assembly.memory.max_items", "an integer"),
        ({"model_input_limit": 0}, "context_assembly.model_input_limit", "must be positive"),
        ({"summary_max_tokens": 0}, "context_assembly.summary_max_tokens", "must be positive"),
        ({"compaction_headroom": 1}, "context_assembly.compaction_headroom", "[0, 1)"),
        ({"compaction_headroom": True}, "context_assembly.compaction_headroom", "a number"),
        ({"compaction_headroom": "10%"}, "context_assembly.compaction_headroom", "a number"),
        ({"summarize_trigger_ratio": 1.5}, "context_assembly.summarize_trigger_ratio", "(0, 1]"),
        (
            {"summarize_trigger_ratio": "high"},
            "context_assembly.summarize_trigger_ratio",
            "expected a number",
        ),
        (
            {"output_reserve_tokens": 128000},
            "context_assembly.output_reserve_tokens",
            "must be smaller",
        ),
        (
            {"model_input_limit": 1000, "safety_margin_tokens": 600, "output_reserve_tokens": 400},
            "context_assembly.output_reserve_tokens",
            "nothing would be left",
        ),
        (
            {"pin": ["first_user_mesage"]},
            "context_assembly.pin[0]",
            "did you mean 'first_user_message'",
        ),
        ({"pin": "first_user_message"}, "context_assembly.pin", "expected a list"),
        ({"pin": ["first_user_message", "first_user_message"]}, "context_assembly.pin", "twice"),
        ({"middle_delete_unit": "ring"}, "context_assembly.middle_delete_unit", "is not one of"),
        (
            {"on_pairing_error": "fail_close"},
            "context_assembly.on_pairing_error",
            "did you mean 'fail_closed'",
        ),
        (
            {"on_still_over_budget": "ignore"},
            "context_assembly.on_still_over_budget",
            "is not one of",
        ),
        ({"token_counter": "chars"}, "context_assembly.token_counter", "is not one of"),
        ({"max_retries": 3}, "context_assembly.max_retries", "at most 2"),
        (
            {"anthropic_cache_breakpoints": 5},
            "context_assembly.anthropic_cache_breakpoints",
            "at most 4",
        ),
        ({"summary_max_depth": 0}, "context_assembly.summary_max_depth", "at least 1"),
        ({"summary_timeout_ms": 0}, "context_assembly.summary_timeout_ms", "positive"),
    ],
)
def test_bad_values_are_named_errors_with_the_key_path(body, where, fragment):
    with pytest.raises(ConfigError) as info:
        AssemblyConfig.from_mapping({"context_assembly": body})
    assert info.value.where == where
    assert fragment in info.value.message
    assert isinstance(info.value, ValueError)


def test_unknown_top_level_key_and_bad_yaml():
    with pytest.raises(ConfigError) as info:
        AssemblyConfig.from_mapping({"context_assembly": {}, "extra": 1})
    assert info.value.where == "extra"
    with pytest.raises(ConfigError) as info:
        AssemblyConfig.from_yaml("context_assembly: [unclosed\n")
    assert "not valid YAML" in info.value.message
    with pytest.raises(ConfigError):
        AssemblyConfig.from_mapping(["not", "a", "mapping"])  # type: ignore[arg-type]


def test_budget_plan_takes_the_smaller_and_validates():
    config = AssemblyConfig()
    assert plan_budget(config).input_budget == 118784
    assert plan_budget(config, 500).source == "override"
    assert plan_budget(config, 10**9).source == "model"
    assert (
        plan_budget(
            config, BudgetSnapshot(cost_remaining=1.0, price_per_input_token=0.0001)
        ).input_budget
        == 10000
    )
    with pytest.raises(ConfigError):
        plan_budget(config, -1)
    with pytest.raises(ConfigError):
        BudgetSnapshot(cost_remaining=1.0)
    with pytest.raises(ConfigError):
        plan_budget(config, True)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (10**5000, "must be at most 1,000,000,000,000 (got an integer of about 5,000 digits)"),
        (-(10**5000), "must not be negative (got an integer of about 5,000 digits)"),
        (10**12 + 1, "must be at most 1,000,000,000,000 (got 1000000000001)"),
    ],
    ids=["huge", "huge-negative", "past-the-cap"],
)
@pytest.mark.parametrize("key", ["model_input_limit", "max_retries", "summary_timeout_ms"])
def test_an_integer_past_any_meaning_is_named_by_its_size(
    key: str, value: int, message: str
) -> None:
    # an integer of thousands of digits from Python code (YAML refuses one past 4,300 digits)
    # reached arithmetic and messages that cannot print it: a bare ValueError for max_retries
    with pytest.raises(ConfigError) as info:
        AssemblyConfig.from_mapping({key: value})
    assert str(info.value) == f"context_assembly.{key}: {message}"


def test_the_headroom_is_a_share_of_the_budget_in_whole_tokens():
    assert AssemblyConfig().headroom_tokens(100_000) == 0
    assert AssemblyConfig(compaction_headroom=0.1).headroom_tokens(100_000) == 10_000
    assert AssemblyConfig(compaction_headroom=0.25).headroom_tokens(79) == 20  # 19.75, up
    assert AssemblyConfig(compaction_headroom=0.07).headroom_tokens(100_000) == 7000  # not 7001
    assert AssemblyConfig(compaction_headroom=0.2).headroom_tokens(5) == 1
    loaded = AssemblyConfig.from_mapping({"context_assembly": {"compaction_headroom": 0.2}})
    assert loaded.compaction_headroom == 0.2
    assert loaded.to_mapping()["context_assembly"]["compaction_headroom"] == 0.2


def test_a_list_of_pins_and_a_mapping_of_memory_are_taken_as_a_file_takes_them() -> None:
    # Were "expected a list, got list" and "expected a mapping, got mapping".
    for config in (
        AssemblyConfig(pin=["first_user_message"], memory={"max_items": 3}),  # type: ignore[arg-type]
        AssemblyConfig().with_changes(pin=["first_user_message"], memory={"max_items": 3}),
    ):
        assert config.pin == ("first_user_message",)
        assert config.memory == MemoryConfig(max_items=3)
    assert AssemblyConfig(pin=["first_user_message"]) == AssemblyConfig.from_mapping(  # type: ignore[arg-type]
        {"pin": ["first_user_message"]}
    )


@pytest.mark.parametrize(
    ("changes", "where", "fragment"),
    [
        ({"bogus": 1}, "context_assembly.bogus", "unknown key 'bogus'"),
        (
            {"recent_tool_ring": 1},
            "context_assembly.recent_tool_ring",
            "did you mean 'recent_tool_rings'?",
        ),
        (
            {"memory": {"max_item": 3}},
            "context_assembly.memory.max_item",
            "did you mean 'max_items'?",
        ),
        (
            {"memory": 3},
            "context_assembly.memory",
            "expected a mapping (max_items) or a MemoryConfig, got int",
        ),
        (
            {"pin": "first_user_message"},
            "context_assembly.pin",
            "expected a list of pin names, got string",
        ),
    ],
)
def test_keyword_changes_are_validated_like_a_loaded_file(
    changes: dict[str, object], where: str, fragment: str
) -> None:
    # An unknown keyword was a bare TypeError from the dataclass's __init__.
    for make in (
        lambda: AssemblyConfig(**changes),
        lambda: AssemblyConfig().with_changes(**changes),
    ):
        with pytest.raises(ConfigError) as caught:
            make()
        assert caught.value.where == where
        assert fragment in caught.value.message


def test_a_time_like_value_is_text_not_a_base_60_number(tmp_path: Path) -> None:
    # YAML 1.1 read 1:30:00 as 5400 (base 60), silently; YAML 1.2 has no such numbers.
    path = tmp_path / "assembly.yaml"
    path.write_text("context_assembly:\n  model_input_limit: 1:30:00\n")
    with pytest.raises(ConfigError, match="model_input_limit: expected an integer, got string"):
        AssemblyConfig.from_yaml(path)
    assert load_yaml_strict("a: 10:30\nb: !!int 1:30\nc: 1_000\nd: 0x1f\ne: 1.5") == {
        "a": "10:30",
        "b": 90,
        "c": 1000,
        "d": 31,
        "e": 1.5,
    }
