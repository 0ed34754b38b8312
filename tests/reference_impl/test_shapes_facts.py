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
