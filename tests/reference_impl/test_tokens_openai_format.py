"""The OpenAI prompt-format model behind ``TiktokenCounter`` (reference_impl/tokens/_openai_costs.py).

Expected numbers are computed independently of the implementation: each test writes the prompt
the model would read *as text*, in the format of openai-cookbook ``articles/openai-harmony.md``
(``<|start|>{header}<|message|>{content}<|end|>``), and tokenizes the whole string with an
``o200k_harmony``-like encoding built here (o200k ranks plus the harmony special tokens, each one
token). The implementation instead adds up cached pieces per message; both must agree.
"""

from __future__ import annotations

import json

import pytest
import tiktoken
from assembler_support import Call, parallel_ring
from hypothesis import given, settings
from hypothesis import strategies as st

from reference_impl.tokens import TiktokenCounter, counter_for
from reference_impl.tokens._tool_namespace import render_namespace
from reference_impl.tokens.encodings import get_encoding
from reference_impl.transcript import (
    Message,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    ToolSpec,
    Transcript,
    canonical_json,
)

_BASE = get_encoding("o200k_base")
# openai-harmony.md "Special Tokens" table (token ids as published there).
_HARMONY = tiktoken.Encoding(
    name="o200k_harmony_test",
    pat_str=_BASE._pat_str,
    mergeable_ranks=_BASE._mergeable_ranks,
    special_tokens={
        "<|start|>": 200006,
        "<|end|>": 200007,
        "<|message|>": 200008,
        "<|channel|>": 200005,
        "<|constrain|>": 200003,
        "<|return|>": 200002,
        "<|call|>": 200012,
    },
)


def prompt_tokens(prompt: str) -> int:
    return len(_HARMONY.encode(prompt, allowed_special="all"))


def chatml(*messages: tuple[str, str]) -> str:
    """ChatML messages as the cookbook describes them (3-token frame) plus the 3-token primer."""
    body = "".join(f"<|start|>{header}<|message|>{content}<|end|>" for header, content in messages)
    return body + "<|start|>assistant<|message|>"


# ----------------------------------------------------------------------------- ChatML


def test_single_call_is_a_message_to_the_function_and_its_result_is_authored_by_it() -> None:
    counter = TiktokenCounter("o200k_base", "openai-chat", model="gpt-4o")
    transcript = Transcript(
        (
            Message("system", (TextPart("You are deploy-bot."),)),
            Message("user", (TextPart("Status of staging?"),)),
            Message("assistant", (ToolCallPart("call_a1B2", "get_status", '{"env": "staging"}'),)),
            Message("tool", (ToolResultPart("call_a1B2", (TextPart("healthy"),)),)),
        )
    )
    expected = chatml(
        ("system", "You are deploy-bot."),
        ("user", "Status of staging?"),
        ("assistant to=functions.get_status", '{"env": "staging"}'),  # arguments verbatim
        ("functions.get_status", "healthy"),  # no tool_call_id on the model's side
    )
    assert counter.count(transcript).total == prompt_tokens(expected)


def test_parallel_calls_are_one_multi_tool_use_call_with_compact_arguments() -> None:
    counter = TiktokenCounter("o200k_base", "openai-chat", model="gpt-4o-mini")
    transcript = Transcript(
        (
            Message("user", (TextPart("Weather in Oslo and Rome?"),)),
            *parallel_ring(
                Call("c1", "weather", '{"city": "Oslo"}', "-3C"),
                Call("c2", "weather", '{ "city" : "Rome" }', "18C"),
            ),
        )
    )
    wrapper = (
        '{"tool_uses":[{"recipient_name":"functions.weather","parameters":{"city":"Oslo"}},'
        '{"recipient_name":"functions.weather","parameters":{"city":"Rome"}}]}'
    )
    expected = chatml(
        ("user", "Weather in Oslo and Rome?"),
        ("assistant to=multi_tool_use.parallel", wrapper),
        ("functions.weather", "-3C"),
        ("functions.weather", "18C"),
    )
    assert counter.count(transcript).total == prompt_tokens(expected)


def test_tool_result_header_is_charged_to_the_call_ring_attribution() -> None:
    counter = TiktokenCounter("o200k_base", "openai-chat", model="gpt-4o")
    result = Message("tool", (ToolResultPart("call_1", (TextPart("42"),)),))
    two = Message(
        "tool",
        (ToolResultPart("call_1", (TextPart("42"),)), ToolResultPart("call_2", (TextPart("42"),))),
    )
    # a tool message costs its frames and outputs; the ids are not rendered, so they cost nothing
    assert counter.count_message(result) == 3 + 1
    assert counter.count_message(two) == 2 * (3 + 1)
    long_id = Message("tool", (ToolResultPart("call_" + "x" * 40, (TextPart("42"),)),))
    assert counter.count_message(long_id) == counter.count_message(result)


def test_tool_message_trailing_text_is_a_user_message() -> None:
    counter = TiktokenCounter("o200k_base", "openai-chat", model="gpt-4o")
    message = Message("tool", (ToolResultPart("c", (TextPart("ok"),)), TextPart("Continue.")))
    frames = prompt_tokens("<|start|><|message|>ok<|end|><|start|>user<|message|>Continue.<|end|>")
    assert counter.count_message(message) == frames


def test_tools_namespace_shares_the_system_message() -> None:
    counter = counter_for("openai-chat", "gpt-4o")
    tool = ToolSpec("get_status", "Status of an environment.", canonical_json({"type": "object"}))
    namespace = "namespace functions {\n\n// Status of an environment.\ntype get_status = () => any;\n\n} // namespace functions"
    alone = Transcript((Message("user", (TextPart("hi"),)),), tools=(tool,))
    with_system = Transcript(
        (Message("system", (TextPart("Be brief."),)), Message("user", (TextPart("hi"),))),
        tools=(tool,),
    )
    n = len(_BASE.encode_ordinary(namespace))
    # litellm / hmarr: +9 for the tools' own message, 4 fewer when a system message is present
    assert counter.count(alone).total == prompt_tokens(chatml(("user", "hi"))) + n + 9
    assert counter.count(with_system).total == (
        prompt_tokens(chatml(("system", "Be brief."), ("user", "hi"))) + n + 9 - 4
    )


# ---------------------------------------------------------------------------- harmony


def test_harmony_history_and_primer_for_reasoning_models() -> None:
    counter = counter_for("openai-responses", "gpt-5")
    tool = ToolSpec(
        "get_weather",
        "Get the current weather for a city.",
        canonical_json(
            {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
        ),
    )
    transcript = Transcript(
        (
            Message("user", (TextPart("Paris?"),)),
            Message("assistant", (ToolCallPart("call_9", "get_weather", '{"city":"Paris"}'),)),
            Message("tool", (ToolResultPart("call_9", (TextPart("Sunny, 22C"),)),)),
            Message("assistant", (TextPart("It is sunny."),)),
            Message("user", (TextPart("Thanks"),)),
        ),
        tools=(tool,),
    )
    namespace = (
        "namespace functions {\n\n// Get the current weather for a city.\n"
        "type get_weather = (_: {\ncity: string,\n}) => any;\n\n} // namespace functions"
    )
    prompt = (
        f"<|start|>developer<|message|># Tools\n\n## functions\n\n{namespace}<|end|>"
        "<|start|>user<|message|>Paris?<|end|>"
        "<|start|>assistant<|channel|>commentary to=functions.get_weather<|message|>"
        '{"city":"Paris"}<|call|>'
        "<|start|>functions.get_weather to=assistant<|channel|>commentary<|message|>"
        "Sunny, 22C<|end|>"
        "<|start|>assistant<|channel|>final<|message|>It is sunny.<|end|>"
        "<|start|>user<|message|>Thanks<|end|>"
        "<|start|>assistant"
    )
    assert counter.count(transcript).total == prompt_tokens(prompt)


def test_which_models_use_harmony() -> None:
    assert (
        counter_for("openai-chat", "gpt-5-mini")
        .count(Transcript((Message("user", (TextPart("x"),)),)))
        .overhead
        == 2
    )
    for model in ("gpt-4o", "gpt-4.1-mini", "gpt-3.5-turbo", "gpt-5-chat-latest", None):
        assert (
            counter_for("openai-chat", model)
            .count(Transcript((Message("user", (TextPart("x"),)),)))
            .overhead
            == 3
        ), model


# ----------------------------------------------------------------------- tool namespace


def test_namespace_reproduces_the_harmony_guide_example() -> None:
    # openai-cookbook articles/openai-harmony.md, "Defining available tools": the schemas of the
    # guide's renderer example and the namespace text it shows for them.
    fmt = {"type": "string", "enum": ["celsius", "fahrenheit"], "default": "celsius"}
    tools = [
        ToolSpec("get_location", "Gets the location of the user.", json.dumps({})),
        ToolSpec(
            "get_current_weather",
            "Gets the current weather in the provided location.",
            json.dumps(  # the guide's key order (canonical_json would sort "format" first)
                {
                    "type": "object",
                    "properties": {
                        "location": {
                            "type": "string",
                            "description": "The city and state, e.g. San Francisco, CA",
                        },
                        "format": fmt,
                    },
                    "required": ["location"],
                }
            ),
        ),
        ToolSpec(
            "get_multiple_weathers",
            "Gets the current weather in the provided list of locations.",
            json.dumps(
                {
                    "type": "object",
                    "properties": {
                        "locations": {
                            "type": "array",
                            "items": {"type": "string"},
                            "description": 'List of city and state, e.g. ["San Francisco, CA", "New York, NY"]',
                        },
                        "format": fmt,
                    },
                    "required": ["locations"],
                }
            ),
        ),
    ]
    expected = """namespace functions {

// Gets the location of the user.
type get_location = () => any;

// Gets the current weather in the provided location.
type get_current_weather = (_: {
// The city and state, e.g. San Francisco, CA
location: string,
format?: "celsius" | "fahrenheit", // default: celsius
}) => any;

// Gets the current weather in the provided list of locations.
type get_multiple_weathers = (_: {
// List of city and state, e.g. ["San Francisco, CA", "New York, NY"]
locations: string[],
format?: "celsius" | "fahrenheit", // default: celsius
}) => any;

} // namespace functions"""
    assert render_namespace(tools) == expected


def test_a_description_holding_a_unicode_line_separator_is_one_comment_line() -> None:
    # str.splitlines() also ends a line at U+2028, U+0085, U+001C, \x0b and \x0c: a "// " added
    # there would be counted though no renderer writes it; CR, LF and CRLF end lines as before
    odd = "one\u2028two\x85three\x1cfour\x0bfive\x0csix"
    schema = {"type": "object", "properties": {"q": {"type": "string", "description": odd}}}
    tool = ToolSpec("f", f"{odd}\r\nseven\rB\n", json.dumps(schema))
    assert render_namespace([tool]) == (
        "namespace functions {\n\n"
        f"// {odd}\n// seven\n// B\n"
        "type f = (_: {\n"
        f"// {odd}\n"
        "q?: string,\n"
        "}) => any;\n\n"
        "} // namespace functions"
    )


def test_schema_keywords_the_model_never_sees_are_free() -> None:
    counter = counter_for("openai-chat", "gpt-4o")
    schema = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
    plain = ToolSpec("f", "d", canonical_json(schema))
    strict = ToolSpec("f", "d", canonical_json({**schema, "additionalProperties": False}))
    assert counter.count_tools([plain]) == counter.count_tools([strict])


@settings(max_examples=100, deadline=None)
@given(
    st.recursive(
        st.sampled_from(
            [{"type": t} for t in ("string", "integer", "number", "boolean", "null", "object")]
        )
        | st.builds(lambda e: {"enum": e}, st.lists(st.text(max_size=5), min_size=1, max_size=3)),
        lambda inner: (
            st.builds(lambda i: {"type": "array", "items": i}, inner)
            | st.builds(
                lambda props: {
                    "type": "object",
                    "properties": props,
                    "required": sorted(props)[:1],
                },
                st.dictionaries(st.from_regex(r"[a-z_]{1,8}", fullmatch=True), inner, max_size=3),
            )
            | st.builds(lambda xs: {"anyOf": xs}, st.lists(inner, min_size=1, max_size=3))
        ),
        max_leaves=12,
    )
    | st.just([1, 2])
    | st.just("not a schema"),
)
def test_any_schema_renders_and_counts(schema: object) -> None:
    tool = ToolSpec("tool_x", "A tool.", canonical_json(schema))
    text = render_namespace([tool])
    assert text.startswith("namespace functions {")
    assert "tool_x" in text
    assert counter_for("openai-chat", "gpt-4o").count_tools([tool]) > 0


# ------------------------------------------------------------ the harmony system message

# openai-cookbook articles/openai-harmony.md renders this system message first (its example has
# another date; a date's token count does not change with it).
_HARMONY_SYSTEM_TEXT = (
    "You are ChatGPT, a large language model trained by OpenAI.\n"
    "Knowledge cutoff: 2024-06\nCurrent date: 2025-06-28\n\nReasoning: medium\n\n"
    "# Valid channels: analysis, commentary, final. Channel must be included for every message."
)
_TOOLS_LINE = "\nCalls to these tools must go to the commentary channel: 'functions'."
_TOOL = ToolSpec(
    "get_weather",
    "Get the current weather for a city.",
    canonical_json(
        {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
    ),
)
_NAMESPACE = (
    "namespace functions {\n\n// Get the current weather for a city.\n"
    "type get_weather = (_: {\ncity: string,\n}) => any;\n\n} // namespace functions"
)


def test_a_hosted_reasoning_model_in_chat_with_tools_reads_the_harmony_system_message() -> None:
    transcript = Transcript((Message("user", (TextPart("Paris?"),)),), tools=(_TOOL,))
    prompt = (
        f"<|start|>system<|message|>{_HARMONY_SYSTEM_TEXT}{_TOOLS_LINE}<|end|>"
        f"<|start|>developer<|message|># Tools\n\n## functions\n\n{_NAMESPACE}<|end|>"
        "<|start|>user<|message|>Paris?<|end|><|start|>assistant"
    )
    assert counter_for("openai-chat", "gpt-5-mini").count(transcript).total == prompt_tokens(prompt)
    # not without tools, and not in Responses (the recordings match without it)
    bare = Transcript((Message("user", (TextPart("Paris?"),)),))
    assert counter_for("openai-chat", "gpt-5-mini").count(bare).total == prompt_tokens(
        "<|start|>user<|message|>Paris?<|end|><|start|>assistant"
    )
    responses = counter_for("openai-responses", "gpt-5-mini").count(transcript).total
    assert responses == prompt_tokens(prompt) - prompt_tokens(
        f"<|start|>system<|message|>{_HARMONY_SYSTEM_TEXT}{_TOOLS_LINE}<|end|>"
    )


@pytest.mark.parametrize("shape", ["openai-chat", "openai-responses"])
def test_gpt_oss_always_reads_the_harmony_system_message(shape: str) -> None:
    bare = Transcript((Message("user", (TextPart("Hi"),)),))
    prompt = (
        f"<|start|>system<|message|>{_HARMONY_SYSTEM_TEXT}<|end|>"
        "<|start|>user<|message|>Hi<|end|><|start|>assistant"
    )
    assert counter_for(shape, "openai/gpt-oss-120b").count(bare).total == prompt_tokens(prompt)


# --------------------------------------------------------------- replayed reasoning items


def _reasoning(tokens: int | None, summary: str = "") -> ReasoningPart:
    item = {
        "type": "reasoning",
        "id": "rs_1",
        "summary": [{"type": "summary_text", "text": summary}] if summary else [],
        "encrypted_content": "gAAAA" + "x" * 400,
    }
    return ReasoningPart("openai-responses", canonical_json(item), tokens)


def _tool_loop(reasoning: ReasoningPart, *, new_user_turn: bool) -> Transcript:
    messages = [
        Message("user", (TextPart("Paris?"),)),
        Message(
            "assistant", (reasoning, ToolCallPart("call_9", "get_weather", '{"city":"Paris"}'))
        ),
        Message("tool", (ToolResultPart("call_9", (TextPart("Sunny, 22C"),)),)),
    ]
    if new_user_turn:
        messages += [
            Message("assistant", (TextPart("It is sunny."),)),
            Message("user", (TextPart("Thanks"),)),
        ]
    return Transcript(tuple(messages), tools=(_TOOL,))


def test_a_replayed_reasoning_item_costs_its_reasoning_tokens_frame_included() -> None:
    counter = counter_for("openai-responses", "gpt-5")
    prompt = (
        f"<|start|>developer<|message|># Tools\n\n## functions\n\n{_NAMESPACE}<|end|>"
        "<|start|>user<|message|>Paris?<|end|>"
        "<|start|>assistant<|channel|>commentary to=functions.get_weather<|message|>"
        '{"city":"Paris"}<|call|>'
        "<|start|>functions.get_weather to=assistant<|channel|>commentary<|message|>"
        "Sunny, 22C<|end|><|start|>assistant"
    )
    # The recordings: three replayed items cost 45, 98 and 196 tokens, the counts the responses
    # that produced them reported, and nothing for their (encrypted) text or frame besides.
    loop = _tool_loop(_reasoning(98, summary="I should look up the weather."), new_user_turn=False)
    assert counter.count(loop).total == prompt_tokens(prompt) + 98


def test_reasoning_items_of_earlier_turns_are_dropped_unless_all_turns_are_kept() -> None:
    counter = counter_for("openai-responses", "gpt-5")
    with_item = _tool_loop(_reasoning(300), new_user_turn=True)
    without = Transcript(
        tuple(
            Message(m.role, tuple(p for p in m.parts if not isinstance(p, ReasoningPart)))
            for m in with_item.messages
        ),
        tools=with_item.tools,
    )
    assert counter.count(with_item).total == counter.count(without).total
    # the per-message count cannot see the turn: it charges the item, the overhead takes it back
    assert counter.count(with_item).overhead == counter.count(without).overhead - 300
    kept = Transcript(
        with_item.messages,
        tools=with_item.tools,
        params=(("reasoning", canonical_json({"context": "all_turns"})),),
    )
    assert counter.count(kept).total == counter.count(without).total + 300


def test_an_item_without_a_carried_count_falls_back_to_its_summary() -> None:
    counter = counter_for("openai-responses", "gpt-5")
    summary = "I should look up the weather in Paris first."
    unknown = _tool_loop(_reasoning(None, summary), new_user_turn=False)
    none = _tool_loop(_reasoning(0), new_user_turn=False)
    frame = prompt_tokens("<|start|>assistant<|channel|>analysis<|message|><|end|>")
    assert counter.count(unknown).total - counter.count(none).total == frame + len(
        _BASE.encode_ordinary(summary)
    )


_SCHEMA_KEYS = (
    "type",
    "properties",
    "required",
    "items",
    "description",
    "default",
    "enum",
    "anyOf",
    "$ref",
    "nullable",
    "additionalProperties",
)
_SCHEMA_LEAF = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.text(max_size=3)
    | st.sampled_from(["object", "array", "string", "number", "null"])
)
_SCHEMA_VALUE = st.recursive(
    _SCHEMA_LEAF,
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.sampled_from([*_SCHEMA_KEYS, "a"]), inner, max_size=4)
    ),
    max_leaves=12,
)
_ODD_SCHEMAS = st.fixed_dictionaries(
    {
        "type": st.just("object"),
        "properties": st.dictionaries(st.sampled_from(["a", "b"]), _SCHEMA_VALUE, min_size=1),
    },
    optional=dict.fromkeys(_SCHEMA_KEYS[2:], _SCHEMA_VALUE),
)


@settings(max_examples=150, deadline=None)
@given(schema=_ODD_SCHEMAS)
def test_a_tool_schema_of_any_json_is_counted_without_an_error(schema: dict[str, object]) -> None:
    # A schema a provider would refuse ("required": [["a"]], a property that is a list) is the
    # validators' to judge: counting it never fails (it failed with "unhashable type: 'list'").
    tool = ToolSpec("f", "d", json.dumps(schema))
    for shape in ("openai-chat", "openai-responses"):
        assert counter_for(shape, "gpt-4o").count_tools((tool,)) > 0


def test_required_names_of_other_types_are_left_out_of_the_namespace() -> None:
    schema = {
        "type": "object",
        "properties": {"a": {"type": "string"}, "b": {"type": "string"}},
        "required": [["a"], {}, "b"],
    }
    rendered = render_namespace((ToolSpec("f", "", json.dumps(schema)),))
    assert "a?: string" in rendered
    assert "b: string" in rendered
