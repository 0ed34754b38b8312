"""The split-half fit of ``bench/calibrate_tokens.py`` and the fitted family overheads of the
estimate counters, on hand-made rows (no recordings needed)."""

from __future__ import annotations

import math
from types import ModuleType, SimpleNamespace

import pytest
from script_support import load_script

from reference_impl.tokens import EstimateCounter
from reference_impl.tokens._estimate_constants import (
    ESTIMATE_OVERHEADS,
    estimate_family,
    estimate_overhead,
)
from reference_impl.transcript import Message, TextPart, ToolSpec, Transcript


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


def _row(bench: ModuleType, file: str, local: int, reported: int, overhead: int = 0):  # type: ignore[no-untyped-def]
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
        overhead=overhead,
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
    key = ("estimate", "claude", True)
    assert bench.fit_overheads(rows, 0) == {key: 520}
    assert bench.fit_overheads(rows, 1) == {key: 15}
    # changing the test half never moves the half-0 fit
    changed = [*rows[:3], _row(bench, one[0], 100, 9000), _row(bench, one[1], 100, 9000)]
    assert bench.fit_overheads(changed, 0) == {key: 520}


def test_split_half_applies_the_other_halfs_constant(bench: ModuleType) -> None:
    zero = _files(bench, 0, 2)
    one = _files(bench, 1, 2)
    # the fitted overhead is already inside ``local``: content = local - overhead
    rows = [
        _row(bench, zero[0], 600, 600, overhead=500),  # content 100, gap 500
        _row(bench, zero[1], 700, 700, overhead=500),  # content 200, gap 500
        _row(bench, one[0], 600, 550, overhead=500),  # content 100, gap 450
        _row(bench, one[1], 700, 660, overhead=500),  # content 200, gap 460
    ]
    results = {r.fitted_on: r for r in bench.split_half(rows)}
    fit0 = results[0]
    assert (fit0.offset, fit0.n_in, fit0.n_out) == (500, 2, 2)
    assert fit0.in_sample == 0.0
    # half 1 with 500: 600 vs 550 (+9.09%), 700 vs 660 (+6.06%) -> median 7.58%
    assert fit0.out_of_sample == pytest.approx((50 / 550 + 40 / 660) / 2)
    # the shipped counter (local as is) gives the same numbers here
    assert fit0.out_of_sample_raw == pytest.approx(fit0.out_of_sample)
    fit1 = results[1]
    assert fit1.offset == 455
    # half 0 with 455: 555 vs 600 (-7.5%), 655 vs 700 (-6.43%)
    assert fit1.out_of_sample == pytest.approx((45 / 600 + 45 / 700) / 2)


def test_safety_shortfalls_compare_the_safe_estimate(bench: ModuleType) -> None:
    file = _files(bench, 0, 1)[0]
    covered = _row(bench, file, 100, 125)  # safe 130 >= 125
    short = _row(bench, file, 100, 140)  # safe 130 < 140
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
