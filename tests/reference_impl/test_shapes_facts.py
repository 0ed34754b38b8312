"""Per-shape facts live on the shape adapters; the tables other modules publish are views of them."""

from __future__ import annotations

import pytest

from conformance.protocol import MESSAGE_KEYS
from conformance.scenarios import DEFAULT_MODELS
from reference_impl.shapes import (
    SHAPE_NAMES,
    ShapeFact,
    get_shape,
    merge_policy,
    reasoning_opens_message,
)
from reference_impl.steps import needs_alternation


def test_published_tables_read_the_adapters():
    for table, read in ((MESSAGE_KEYS, "messages_key"), (DEFAULT_MODELS, "default_model")):
        assert list(table) == list(SHAPE_NAMES)
        assert dict(table) == {n: getattr(get_shape(n), read) for n in SHAPE_NAMES}


def test_wire_facts_per_shape():
    # Where each API keeps its turns: Chat/Anthropic/Bedrock "messages", Responses "input",
    # Gemini "contents"; Gemini and Bedrock name the model in the URL path.
    assert dict(MESSAGE_KEYS) == {
        "openai-chat": "messages",
        "openai-responses": "input",
        "anthropic-messages": "messages",
        "gemini": "contents",
        "bedrock-converse": "messages",
    }
    assert {n for n in SHAPE_NAMES if get_shape(n).model_in_url} == {"gemini", "bedrock-converse"}


def test_ordering_rules_per_shape():
    # A13 (Anthropic thinking first) and B10 (Claude on Bedrock); DeepSeek is an origin, not a shape.
    assert {o for o in (*SHAPE_NAMES, "deepseek") if reasoning_opens_message(o)} == {
        "anthropic-messages",
        "bedrock-converse",
    }
    # B3 strict alternation, G1 function-call turns; the others merge nothing.
    assert {n: merge_policy(n) for n in SHAPE_NAMES if needs_alternation(n)} == {
        "bedrock-converse": "strict",
        "gemini": "function_call_turns",
    }
    assert merge_policy("not-a-shape") is None


def test_shape_fact_is_a_read_only_mapping():
    labels = ShapeFact(lambda adapter: adapter.label)
    assert labels["anthropic-messages"] == "anthropic"
    assert labels.get("mistral", "mistral") == "mistral"
    with pytest.raises(KeyError):
        labels["mistral"]
    assert len(labels) == len(SHAPE_NAMES)


def test_generation_option_names_per_shape():
    # The output cap as each API reference names it: Chat ``max_tokens`` (and
    # ``max_completion_tokens`` for o-series models), Responses ``max_output_tokens``, Anthropic
    # ``max_tokens``, Gemini ``generationConfig.maxOutputTokens``, Converse
    # ``inferenceConfig.maxTokens``; Responses has no stop sequences.
    caps = {
        n: (get_shape(n).options.container, get_shape(n).options.max_output) for n in SHAPE_NAMES
    }
    assert caps == {
        "openai-chat": (None, "max_tokens"),
        "openai-responses": (None, "max_output_tokens"),
        "anthropic-messages": (None, "max_tokens"),
        "gemini": ("generationConfig", "maxOutputTokens"),
        "bedrock-converse": ("inferenceConfig", "maxTokens"),
    }
    assert get_shape("openai-chat").options.max_output_aliases == ("max_completion_tokens",)
    assert {n for n in SHAPE_NAMES if get_shape(n).options.stop is None} == {"openai-responses"}


# What each shape's tool choice obliges the model to call (GenerationOptions.forced_tools), in
# the spellings the APIs document: None for no obligation, "any" for any tool offered, else the
# names one of which must be called.
FORCED = {
    "openai-chat": [
        ({}, None),
        ({"tool_choice": "auto"}, None),
        ({"tool_choice": "none"}, None),
        ({"tool_choice": "required"}, "any"),
        ({"tool_choice": {"type": "function", "function": {"name": "wipe"}}}, {"wipe"}),
        ({"tool_choice": {"type": "custom", "custom": {"name": "patch"}}}, {"patch"}),
        (
            {"tool_choice": {"type": "allowed_tools", "allowed_tools": {"mode": "auto",
             "tools": [{"type": "function", "function": {"name": "a"}}]}}},
            None,
        ),
        (
            {"tool_choice": {"type": "allowed_tools", "allowed_tools": {"mode": "required",
             "tools": [{"type": "function", "function": {"name": "a"}},
                       {"type": "function", "function": {"name": "b"}}]}}},
            {"a", "b"},
        ),
    ],
    "openai-responses": [
        ({"tool_choice": "auto"}, None),
        ({"tool_choice": "required"}, "any"),
        ({"tool_choice": {"type": "function", "name": "wipe"}}, {"wipe"}),
        ({"tool_choice": {"type": "file_search"}}, {"file_search"}),
        ({"tool_choice": {"type": "mcp", "server_label": "wiki"}}, {"wiki"}),
        ({"tool_choice": {"type": "mcp", "server_label": "wiki", "name": "ask"}}, {"ask"}),
        (
            {"tool_choice": {"type": "allowed_tools", "mode": "required",
             "tools": [{"type": "function", "name": "a"}, {"type": "image_generation"}]}},
            {"a", "image_generation"},
        ),
        ({"tool_choice": {"type": "allowed_tools", "mode": "auto", "tools": []}}, None),
    ],
    "anthropic-messages": [
        ({"tool_choice": {"type": "auto"}}, None),
        ({"tool_choice": {"type": "none"}}, None),
        ({"tool_choice": {"type": "any", "disable_parallel_tool_use": True}}, "any"),
        ({"tool_choice": {"type": "tool", "name": "wipe"}}, {"wipe"}),
    ],
    "gemini": [
        ({"toolConfig": {"functionCallingConfig": {"mode": "AUTO"}}}, None),
        ({"toolConfig": {"functionCallingConfig": {"mode": "VALIDATED"}}}, None),
        ({"toolConfig": {"functionCallingConfig": {"mode": "ANY"}}}, "any"),
        (
            {"toolConfig": {"functionCallingConfig": {"mode": "ANY",
             "allowedFunctionNames": ["wipe"]}}},
            {"wipe"},
        ),
        (
            {"tool_config": {"function_calling_config": {"mode": "ANY",
             "allowed_function_names": ["a", "b"]}}},
            {"a", "b"},
        ),
    ],
    "bedrock-converse": [
        ({"toolConfig": {"toolChoice": {"auto": {}}}}, None),
        ({"toolConfig": {}}, None),
        ({"toolConfig": {"toolChoice": {"any": {}}}}, "any"),
        ({"toolConfig": {"toolChoice": {"tool": {"name": "wipe"}}}}, {"wipe"}),
    ],
}  # fmt: skip


@pytest.mark.parametrize("shape", SHAPE_NAMES)
def test_forced_tools_reads_each_shapes_tool_choice(shape: str) -> None:
    read = get_shape(shape).options.forced_tools
    assert read is not None
    for settings, wanted in FORCED[shape]:
        found = read(settings)
        assert (set(found) if isinstance(found, frozenset) else found) == wanted, settings
