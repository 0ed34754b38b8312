"""The public hypothesis strategies: what they draw is valid (or broken) the way they promise.

These checks read the drawn transcripts directly, without ``rings.validate``, so they hold the
generator to its contract independently; ``tests/reference_impl/test_rings.py`` adds the validator's
view.
"""

from __future__ import annotations

import importlib
import itertools
import json
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument

from conformance.strategies import (
    ALL_CAPABILITIES,
    VIOLATION_KINDS,
    broken_transcripts,
    budgets,
    fixed_generation,
    transcripts,
)
from reference_impl.rings import ViolationKind
from reference_impl.shapes.base import ShapeCapabilities
from reference_impl.transcript import (
    FilePart,
    ImagePart,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    Transcript,
    canonical_json,
    transcript_from_json,
    transcript_to_json,
)

FAST = settings(
    max_examples=50, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow]
)
NAME = re.compile(r"^[a-zA-Z0-9_-]+$")  # C7, A6

# A strict shape: system text only as 'system' at top level, no reasoning, no attachments,
# arguments as objects, no error flag.
STRICT = ShapeCapabilities(
    system_roles=frozenset({"system"}),
    system_in_messages=False,
    reasoning_origins=frozenset(),
    raw_arguments=False,
    tool_result_attachments=frozenset({"text"}),
    user_attachments=frozenset({"text"}),
    message_names=False,
    tool_result_errors=False,
)
GEMINI_LIKE = ShapeCapabilities(
    system_roles=frozenset(),
    system_in_messages=False,
    reasoning_origins=frozenset({"gemini"}),
    raw_arguments=False,
    tool_result_attachments=frozenset({"text", "image"}),
    user_attachments=frozenset({"text", "image", "file"}),
)


def _all_strings(transcript: Transcript) -> list[str]:
    return [json.dumps(json.loads(transcript_to_json(transcript)), ensure_ascii=False)]


def _assert_valid_structure(t: Transcript) -> None:
    messages = t.messages
    seen_calls: set[str] = set()
    i = 0
    # System text only at the start, then the user's goal.
    while i < len(messages) and messages[i].role in {"system", "developer"}:
        i += 1
    assert i <= 1
    assert messages[i].role == "user"
    while i < len(messages):
        message = messages[i]
        assert message.role not in {"system", "developer"}
        assert not message.empty_tool_calls
        if message.role == "assistant" and message.tool_calls:
            calls = message.tool_calls
            assert 1 <= len(calls) <= 8
            ids = [c.id for c in calls]
            assert len(set(ids)) == len(ids)
            assert not seen_calls & set(ids)
            seen_calls |= set(ids)
            assert i + 1 < len(messages), "a ring always ends with its results"
            tool = messages[i + 1]
            assert tool.role == "tool"
            assert all(isinstance(p, ToolResultPart) for p in tool.parts)
            assert [r.call_id for r in tool.tool_results] == ids
            i += 2
            continue
        assert message.role != "tool", f"tool message at {i} outside a ring"
        i += 1
    for message in messages:
        reasoning = [k for k, p in enumerate(message.parts) if isinstance(p, ReasoningPart)]
        # Reasoning opens its message and is followed by what it belongs to (R4, A13, G6).
        assert reasoning in ([], [0])
        if reasoning:
            assert len(message.parts) > 1
    names = {c.name for m in messages for c in m.tool_calls}
    assert names <= {tool.name for tool in t.tools}
    assert all(NAME.match(n) for n in names)
    for text in _all_strings(t):
        text.encode("utf-8")  # raises on a lone surrogate


@FAST
@given(transcripts())
def test_transcripts_are_well_formed_rings_and_turns(t: Transcript) -> None:
    assert 2 <= len(t) <= 16
    _assert_valid_structure(t)


@FAST
@given(transcripts(ALL_CAPABILITIES, min_messages=1, max_messages=3))
def test_small_message_bounds_are_respected(t: Transcript) -> None:
    assert 1 <= len(t) <= 3
    _assert_valid_structure(t)


@FAST
@given(transcripts(STRICT, min_messages=6, max_messages=20))
def test_strict_shape_gets_only_what_it_can_carry(t: Transcript) -> None:
    assert 6 <= len(t) <= 20
    _assert_valid_structure(t)
    for message in t.messages:
        assert message.name is None
        assert message.role != "developer"
        for part in message.parts:
            assert not isinstance(part, ReasoningPart | ImagePart | FilePart)
            if isinstance(part, ToolCallPart):
                # raw_arguments=False: the canonical JSON text of an object
                assert part.arguments == canonical_json(json.loads(part.arguments))
            if isinstance(part, ToolResultPart):
                assert not part.is_error
                assert all(isinstance(c, TextPart) for c in part.content)


@FAST
@given(transcripts(GEMINI_LIKE))
def test_reasoning_origin_and_attachments_follow_the_capabilities(t: Transcript) -> None:
    _assert_valid_structure(t)
    assert t.messages[0].role == "user"  # no system roles at all
    for message in t.messages:
        for part in message.parts:
            if isinstance(part, ReasoningPart):
                assert part.origin == "gemini"
                assert set(part.value()) == {"thoughtSignature"}
            if isinstance(part, ToolResultPart):
                assert not any(isinstance(c, FilePart) for c in part.content)


@FAST
@given(transcripts())
def test_transcripts_survive_the_session_file_round_trip(t: Transcript) -> None:
    assert transcript_from_json(transcript_to_json(t)) == t


def test_transcripts_reach_the_interesting_cases() -> None:
    """Parallel rings, errors, reasoning and attachments all show up within a modest sample."""
    found: set[str] = set()

    @settings(max_examples=200, database=None, deadline=None, derandomize=True)
    @given(transcripts())
    def collect(t: Transcript) -> None:
        for message in t.messages:
            if len(message.tool_calls) >= 2:
                found.add("parallel")
            for part in message.parts:
                if isinstance(part, ToolResultPart) and part.is_error:
                    found.add("error")
                if isinstance(part, ReasoningPart):
                    found.add("reasoning")
                if isinstance(part, ImagePart | FilePart):
                    found.add("attachment")

    with fixed_generation():  # what the sample reaches must not depend on earlier tests' imports
        collect()
    assert found == {"parallel", "error", "reasoning", "attachment"}


@pytest.mark.parametrize("kind", VIOLATION_KINDS)
def test_broken_transcripts_report_the_requested_kind(kind: ViolationKind) -> None:
    @settings(max_examples=30, database=None, deadline=None)
    @given(broken_transcripts(kind))
    def check(pair: tuple[Transcript, ViolationKind]) -> None:
        transcript, drawn = pair
        assert drawn == kind
        assert isinstance(transcript, Transcript)

    check()


@FAST
@given(broken_transcripts())
def test_broken_transcripts_without_a_kind_draw_every_kind(
    pair: tuple[Transcript, ViolationKind],
) -> None:
    assert pair[1] in VIOLATION_KINDS


@FAST
@given(broken_transcripts("results_split", STRICT))
def test_results_split_puts_one_rings_results_in_two_tool_messages(
    pair: tuple[Transcript, ViolationKind],
) -> None:
    transcript, _ = pair
    messages = transcript.messages
    assert any(
        a.role == "tool" and b.role == "tool" and a.tool_results and b.tool_results
        for a, b in itertools.pairwise(messages)
    )


@FAST
@given(broken_transcripts("empty_tool_calls"))
def test_empty_tool_calls_marks_one_assistant_message(
    pair: tuple[Transcript, ViolationKind],
) -> None:
    flagged = [m for m in pair[0].messages if m.empty_tool_calls]
    assert len(flagged) == 1
    assert flagged[0].role == "assistant"
    assert not flagged[0].tool_calls


@FAST
@given(budgets(min_value=10, max_value=5_000))
def test_budgets_stay_in_range(budget: int) -> None:
    assert 10 <= budget <= 5_000


def test_budgets_hit_the_edges() -> None:
    seen: set[int] = set()

    @settings(max_examples=100, database=None, derandomize=True)
    @given(budgets(max_value=1_000))
    def collect(budget: int) -> None:
        seen.add(budget)

    with fixed_generation():
        collect()
    assert {0, 1_000} <= seen


@pytest.mark.parametrize(
    "make",
    [
        lambda: transcripts(min_messages=0),
        lambda: transcripts(min_messages=5, max_messages=4),
        lambda: broken_transcripts("not_a_kind"),  # type: ignore[arg-type]
        lambda: budgets(min_value=-1),
        lambda: budgets(min_value=10, max_value=5),
    ],
)
def test_bad_arguments_raise_invalid_argument(make: object) -> None:
    assert callable(make)
    with pytest.raises(InvalidArgument):
        make()


# A local module whose source holds constants hypothesis would pick up once it is imported.
_PROBE_CONSTANTS = tuple(7_000_000_001 + 13 * i for i in range(400))


def _seeded_draws() -> list[int]:
    drawn: list[int] = []

    @seed(20261201)
    @settings(max_examples=300, database=None, deadline=None, derandomize=False)
    @given(st.integers())
    def collect(n: int) -> None:
        drawn.append(n)

    collect()
    return drawn


def test_fixed_generation_draws_the_same_examples_whatever_was_imported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The cause of the seed-dependent fuzz flake: hypothesis draws constants from every loaded
    local module, so one import changed what a fixed seed generates (the same ``--seed`` found a
    different session, or none, under the full suite). Inside ``fixed_generation`` it does not."""
    with fixed_generation():
        before = _seeded_draws()
    probe = tmp_path / "ctxconf_constants_probe.py"
    probe.write_text(
        "VALUES = (\n" + "".join(f"    {n},\n" for n in _PROBE_CONSTANTS) + ")\n", "utf-8"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.import_module("ctxconf_constants_probe")
    with fixed_generation():
        after = _seeded_draws()
    assert after == before
    # The control: outside the block the same seed draws the probe's constants, so the block is
    # what kept the two searches equal.
    outside = _seeded_draws()
    assert set(outside) & set(_PROBE_CONSTANTS)
    assert not set(before) & set(_PROBE_CONSTANTS)
