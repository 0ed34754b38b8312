"""The split-half fit of ``bench/calibrate_tokens.py`` and the fitted constants of the counters,
on hand-made rows and transcripts (no recordings needed)."""

from __future__ import annotations

import math
from types import ModuleType, SimpleNamespace

import pytest
from script_support import load_script

from reference_impl.tokens import EstimateCounter, TiktokenCounter
from reference_impl.tokens._estimate_constants import (
    ESTIMATE_OVERHEADS,
    SHIPPED,
    ZERO,
    FittedConstants,
    estimate_family,
    estimate_overhead,
    fitted_features,
    thinking_enabled,
)
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


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    return load_script("bench/calibrate_tokens.py", "calibrate_tokens")


def _files(bench: ModuleType, wanted: int, count: int) -> list[str]:
    """``count`` file names that the bench puts in half ``wanted``."""
    names = []
    i = 0
    while len(names) < count:
        name = f"recordings/anthropic/case_{i}.yaml"
        if bench.half(bench.Calibration(name, 0, "x", None, None, None, "-")) == wanted:
            names.append(name)
        i += 1
    return names


def _row(bench: ModuleType, file: str, content: int, reported: int, **features: int):  # type: ignore[no-untyped-def]
    """A Claude request with tools whose shipped constants are ``with_tools`` (+ ``features``)."""
    feats = {"claude.with_tools": 1, **features}
    local = content + sum(SHIPPED.values()[k] * v for k, v in feats.items())
    return bench.Calibration(
        file,
        0,
        "anthropic-messages",
        "claude-sonnet-4-5",
        local,
        reported,
        "estimate:anthropic(x1.30,o200k)",
        safety_factor=1.3,
        tools=True,
        safe=math.ceil(local * 1.3),
        content=content,
        features=feats,
        request_key=f"{file}:{content}:{reported}",
    )


def test_fit_uses_only_the_fit_half_and_is_the_median_gap(bench: ModuleType) -> None:
    zero = _files(bench, 0, 3)
    one = _files(bench, 1, 2)
    # half 0: content 100/200/300, gaps 500/520/560 -> median 520; half 1: gaps 10 and 20
    rows = [
        _row(bench, zero[0], 100, 600),
        _row(bench, zero[1], 200, 720),
        _row(bench, zero[2], 300, 860),
        _row(bench, one[0], 100, 110),
        _row(bench, one[1], 100, 120),
    ]
    assert bench.fit_constants(rows, 0) == {"claude.with_tools": 520}
    assert bench.fit_constants(rows, 1) == {"claude.with_tools": 15}
    # changing the test half never moves the half-0 fit
    changed = [*rows[:3], _row(bench, one[0], 100, 9000), _row(bench, one[1], 100, 9000)]
    assert bench.fit_constants(changed, 0) == {"claude.with_tools": 520}


def test_each_constant_is_fitted_from_the_requests_that_incur_it(bench: ModuleType) -> None:
    files = _files(bench, 0, 6)
    # Built from known constants: prompt 500, thinking 30, 20 per tool call (plus noise the
    # medians ignore in the last row).
    rows = [
        _row(bench, files[0], 100, 600),
        _row(bench, files[1], 100, 630, **{"claude.thinking": 1}),
        _row(bench, files[2], 100, 640, **{"claude.tool_call": 2}),
        _row(bench, files[3], 100, 670, **{"claude.tool_call": 2, "claude.thinking": 1}),
        _row(bench, files[4], 200, 700),
        _row(bench, files[5], 100, 990, **{"claude.tool_call": 1}),
    ]
    fit = bench.fit_constants(rows, 0)
    assert fit == {"claude.with_tools": 500, "claude.thinking": 30, "claude.tool_call": 20}


def test_not_locally_countable_and_repeated_requests_are_not_fitted_or_judged(
    bench: ModuleType,
) -> None:
    file = _files(bench, 0, 1)[0]
    base = _row(bench, file, 100, 600)
    repeated = _row(bench, file, 100, 600)  # a count call and the generation that followed it
    fetched = bench.Calibration(
        **{**base.__dict__, "reported": 9000, "unknowable": "a file by url", "request_key": "u"}
    )
    assert bench.countable([base, repeated, fetched]) == [base]
    assert bench.fit_constants([base, repeated, fetched], 0) == {"claude.with_tools": 500}


def test_split_half_applies_the_other_halfs_constants(bench: ModuleType) -> None:
    zero = _files(bench, 0, 2)
    one = _files(bench, 1, 2)
    rows = [
        _row(bench, zero[0], 100, 600),  # gap 500
        _row(bench, zero[1], 200, 700),  # gap 500
        _row(bench, one[0], 100, 550),  # gap 450
        _row(bench, one[1], 200, 660),  # gap 460
    ]
    results = {r.fitted_on: r for r in bench.split_half(rows)}
    fit0 = results[0]
    assert (fit0.n_in, fit0.n_out, fit0.in_sample) == (2, 2, 0.0)
    # half 1 with 500: 600 vs 550 (+9.09%), 700 vs 660 (+6.06%) -> median 7.58%
    assert fit0.out_of_sample == pytest.approx((50 / 550 + 40 / 660) / 2)
    assert fit0.out_of_sample_tokens == pytest.approx(45)
    fit1 = results[1]
    # half 0 with 455: 555 vs 600 (-7.5%), 655 vs 700 (-6.43%)
    assert fit1.out_of_sample == pytest.approx((45 / 600 + 45 / 700) / 2)
    assert fit0.too_small  # two requests say nothing: the table says so rather than pass
    by_family = bench.split_half(rows, bench.shape_family)
    assert {r.group for r in by_family} == {("anthropic-messages", "claude")}


def test_safety_shortfalls_compare_the_safe_estimate(bench: ModuleType) -> None:
    file = _files(bench, 0, 1)[0]
    covered = _row(bench, file, 100, 700)  # safe ceil(625 * 1.3) >= 700
    short = _row(bench, file, 100, 900)
    assert bench.safety_shortfalls([covered, short]) == [short]


def test_reported_input_adds_cached_input_back(bench: ModuleType) -> None:
    # Anthropic: input_tokens excludes cache reads and writes; Chat's prompt_tokens includes them.
    anthropic = SimpleNamespace(
        response_body={
            "usage": {
                "input_tokens": 3,
                "cache_creation_input_tokens": 44,
                "cache_read_input_tokens": 1650,
            }
        }
    )
    assert bench.reported_input_tokens(anthropic) == 1697
    bedrock = SimpleNamespace(
        response_body={"usage": {"inputTokens": 5, "cacheReadInputTokens": 7}}
    )
    assert bench.reported_input_tokens(bedrock) == 12
    chat = SimpleNamespace(
        response_body={
            "usage": {"prompt_tokens": 20, "prompt_tokens_details": {"cached_tokens": 10}}
        }
    )
    assert bench.reported_input_tokens(chat) == 20


def test_reasoning_counts_are_carried_from_an_answer_to_the_request_that_replays_it(
    bench: ModuleType,
) -> None:
    answer = {
        "output": [
            {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "gAAA"},
            {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"},
        ],
        "usage": {"output_tokens_details": {"reasoning_tokens": 45}},
    }
    known = bench.produced_reasoning("openai-responses", answer)
    assert known == {"rs_1": 45, "gAAA": 45}
    # replayed without its id (some clients drop it): found by its encrypted content
    replayed = ReasoningPart("openai-responses", canonical_json({"encrypted_content": "gAAA"}))
    transcript = Transcript((Message("user", (TextPart("x"),)), Message("assistant", (replayed,))))
    carried = bench.with_carried_reasoning(transcript, known)
    assert [p.tokens for p in carried.messages[1].parts] == [45]
    # a Gemini signature re-encoded by an SDK (URL-safe base64, no padding) is the same one
    gemini = bench.produced_reasoning(
        "gemini",
        {
            "candidates": [
                {
                    "content": {
                        "role": "model",
                        "parts": [{"text": "ok", "thoughtSignature": "a+b/cw=="}],
                    }
                }
            ],
            "usageMetadata": {"thoughtsTokenCount": 132},
        },
    )
    resent = ReasoningPart("gemini", canonical_json({"thoughtSignature": "a-b_cw"}))
    again = bench.with_carried_reasoning(Transcript((Message("assistant", (resent,)),)), gemini)
    assert [p.tokens for p in again.messages[0].parts] == [132]


def test_what_no_local_counter_can_know_is_named(bench: ModuleType) -> None:
    from reference_impl.transcript import FilePart, ImagePart

    plain = Transcript((Message("user", (TextPart("x"),)),))
    assert bench.not_locally_countable("openai-chat", "gpt-4o", {}, plain) == ""
    url_image = Transcript((Message("user", (ImagePart("url", "https://x/a.png"),)),))
    assert "image by url" in bench.not_locally_countable("openai-chat", "gpt-4o", {}, url_image)
    low = Transcript((Message("user", (ImagePart("url", "https://x/a.png", detail="low"),)),))
    assert bench.not_locally_countable("openai-chat", "gpt-4o", {}, low) == ""  # 85, any size
    in_result = Transcript(
        (
            Message(
                "tool",
                (ToolResultPart("c1", (FilePart("file_id", "file-1"),)),),
            ),
        )
    )
    assert "file by file id" in bench.not_locally_countable(
        "anthropic-messages", None, {}, in_result
    )
    state = {"previous_response_id": "resp_1"}
    assert "server-side" in bench.not_locally_countable("openai-responses", "gpt-5", state, plain)
    server = {"tools": [{"type": "web_search_20250305", "name": "web_search"}]}
    assert "server" in bench.not_locally_countable("anthropic-messages", None, server, plain)
    blocks = {"messages": [{"role": "assistant", "content": [{"type": "mcp_tool_use"}]}]}
    assert "mcp_tool_use" in bench.not_locally_countable("anthropic-messages", None, blocks, plain)


# ------------------------------------------------------------------- the fitted constants


def test_family_of_a_model() -> None:
    assert estimate_family("anthropic-messages", None) == "claude"
    assert estimate_family("bedrock-converse", "us.anthropic.claude-sonnet-4-6") == "claude"
    assert estimate_family("bedrock-converse", "us.amazon.nova-2-lite-v1:0") == "nova"
    assert estimate_family("gemini", "gemini-2.5-flash") == "gemini"
    assert estimate_family("bedrock-converse", "moonshot.kimi-k2-thinking") == "other"
    assert estimate_overhead("bedrock-converse", "moonshot.kimi-k2-thinking", tools=True) == 0


@pytest.mark.parametrize("factor", [1.0, 1.3])
def test_estimate_overhead_is_the_family_constant_whatever_the_factor(factor: float) -> None:
    tool = ToolSpec("get_weather", "Weather of a city", '{"type":"object","properties":{}}')
    messages = (Message("user", (TextPart("hello"),)),)
    counter = EstimateCounter(
        "bedrock-converse", safety_factor=factor, model="amazon.nova-micro-v1:0"
    )
    with_tools = counter.count(Transcript(messages, tools=(tool,)))
    without = counter.count(Transcript(messages))
    nova = ESTIMATE_OVERHEADS["nova"]
    assert with_tools.overhead == nova.with_tools
    assert without.overhead == nova.request
    assert with_tools.total == sum(with_tools.messages) + with_tools.tools + with_tools.overhead


@pytest.mark.parametrize(
    ("params", "enabled"),
    [
        ({"thinking": {"type": "enabled", "budget_tokens": 1024}}, True),
        ({"thinking": {"type": "adaptive"}}, True),
        ({"thinking": {"type": "disabled"}}, False),
        ({"additionalModelRequestFields": {"thinking": {"type": "enabled"}}}, True),
        ({"additionalModelRequestFields": {"reasoning_config": {"type": "enabled"}}}, True),
        ({"additionalModelRequestFields": {"top_k": 5}}, False),
        ({}, False),
    ],
)
def test_thinking_is_read_from_either_shape(params: dict[str, object], enabled: bool) -> None:
    transcript = Transcript(
        (Message("user", (TextPart("x"),)),),
        params=tuple((k, canonical_json(v)) for k, v in params.items()),
    )
    assert thinking_enabled(transcript) is enabled


def _claude_loop(thinking: bool) -> Transcript:
    params = (("thinking", canonical_json({"type": "enabled", "budget_tokens": 1024})),)
    return Transcript(
        (
            Message("user", (TextPart("Paris?"),)),
            Message("assistant", (ToolCallPart("t1", "weather", '{"city":"Paris"}'),)),
            Message("tool", (ToolResultPart("t1", (TextPart("Sunny"),)),)),
        ),
        tools=(ToolSpec("weather", "Weather", '{"type":"object"}'),),
        params=params if thinking else (),
    )


@pytest.mark.parametrize("thinking", [False, True])
def test_the_counters_add_exactly_value_times_feature(thinking: bool) -> None:
    # What the bench relies on: shipped - zero == sum(constant x times incurred).
    transcript = _claude_loop(thinking)
    for shape, model in (
        ("anthropic-messages", "claude-sonnet-4-5"),
        ("bedrock-converse", "us.anthropic.claude-sonnet-4-5-v1:0"),
        ("gemini", "gemini-2.5-flash"),
    ):
        shipped = EstimateCounter(shape, safety_factor=1.0, model=model).count(transcript)
        zero = EstimateCounter(shape, safety_factor=1.0, model=model, constants=ZERO)
        features = fitted_features(shape, model, transcript)
        values = SHIPPED.values()
        assert shipped.total - zero.count(transcript).total == sum(
            values[k] * v for k, v in features.items()
        )
    features = fitted_features("anthropic-messages", "claude-sonnet-4-5", transcript)
    expected = {"claude.with_tools": 1, "claude.tool_call": 1}
    assert features == ({**expected, "claude.thinking": 1} if thinking else expected)


def test_constants_round_trip_by_name() -> None:
    assert FittedConstants.from_values(SHIPPED.values()) == SHIPPED
    assert FittedConstants.from_values({}).values()["claude.thinking"] == 0
    assert TiktokenCounter(model="gpt-4o", constants=ZERO).rules.page_tokens == 0


def test_an_answer_with_made_up_usage_is_not_compared(bench: ModuleType) -> None:
    # A test fixture's answer: a sentence of output billed as 1 token; its input count is made up too.
    text = "Open sesame! What would you like to unlock today, my friend?"
    made_up = SimpleNamespace(
        response_body={
            "output": [{"type": "message", "content": [{"type": "output_text", "text": text}]}],
            "usage": {"input_tokens": 10, "output_tokens": 1},
        }
    )
    real = SimpleNamespace(
        response_body={
            "choices": [{"message": {"role": "assistant", "content": text}}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 14},
        }
    )
    tool_results = SimpleNamespace(  # server tool results are not output the model wrote
        response_body={
            "content": [
                {"type": "mcp_tool_result", "content": [{"type": "text", "text": text * 9}]}
            ],
            "usage": {"input_tokens": 10, "output_tokens": 3},
        }
    )
    assert bench._made_up_usage(made_up)
    assert not bench._made_up_usage(real)
    assert not bench._made_up_usage(tool_results)
