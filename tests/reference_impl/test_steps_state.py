"""The working state of an assembly (``steps/state.py``): lazy counting, the fit, the cost before
a unit's content changed, and the pairing re-check after a step."""

from __future__ import annotations

import pytest
from assembler_support import (
    WordCounter,
    assistant,
    protected_state,
    ring,
    session,
    system,
    user,
    words,
)
from prometheus_client import CollectorRegistry

from reference_impl import (
    AssemblyConfig,
    AssemblyMetrics,
    ContextAssemblyError,
    assemble,
)
from reference_impl.transcript import ImagePart, Message, TextPart, ToolCallPart, ToolResultPart

CONFIG = AssemblyConfig(summarize_trigger_ratio=1.0, recent_tool_rings=1, recent_user_turns=1)


def state_for(s, budget, *, counter=None, config=CONFIG):
    return protected_state(s, config, budget, counter=counter)


def middle_session():
    # prefix: system 11 + goal 5; middle: three plain turns of 10, 20 and 30 tokens, oldest
    # first; suffix: the latest user message, 5. Overhead 3: 84 in all.
    return session(
        system(),
        user("goal"),
        assistant(words(6)),
        assistant(words(16)),
        assistant(words(26)),
        user("latest"),
    )


# ---------------------------------------------------------------------------------------- fits


@pytest.mark.parametrize(
    ("budget", "middle", "fits"),
    [(84, True, True), (83, True, False), (24, False, True), (23, False, False)],
)
def test_fits_compares_everything_kept_with_the_budget(budget, middle, fits):
    # 84 with the middle; the prefix, suffix and overhead alone are 16 + 5 + 3 = 24.
    state = state_for(middle_session(), budget)
    for unit in state.units:
        if unit.bucket == "middle":
            unit.kept = middle
    assert state.fits() is fits


def test_fits_takes_a_lower_limit_and_stops_counting_at_the_first_unit_that_overflows():
    counter = WordCounter()
    s = middle_session()
    state = state_for(s, 1000, counter=counter)
    assert state.fixed_cost == 24
    counter.encoded.clear()
    # Room for 49 of the middle: the newest (30) fits, the next (20) overflows, so the oldest
    # (10) is never counted; with room for 29 the newest already overflows.
    assert state.fits(73) is False
    assert counter.encoded == [s.messages[4].id, s.messages[3].id]
    fresh = WordCounter()
    state = state_for(s, 1000, counter=fresh)
    assert state.fixed_cost == 24
    fresh.encoded.clear()
    assert state.fits(53) is False
    assert fresh.encoded == [s.messages[4].id]
    assert state.fits(84) is True


def test_a_fixed_part_over_the_limit_does_not_fit_whatever_the_middle():
    state = state_for(middle_session(), 1000)
    assert state.fits(23) is False
    assert state.fits(-1) is False


# -------------------------------------------------------------------------------------- record


def broken_ring_state():
    s = session(system(), user("goal"), ring("c1", "ok"), ring("c2", "ok"), user("latest"))
    state = state_for(s, 1000)
    ring_unit = next(u for u in state.units if u.kind == "ring")
    ring_unit.messages = ring_unit.messages[:1]  # a faulty step left the call without its result
    return state


def test_a_step_that_unpairs_the_view_is_refused_naming_the_step():
    state = broken_ring_state()
    with pytest.raises(ContextAssemblyError) as info:
        state.record("faulty_step")
    assert info.value.code == "context_assembly_pairing_error"
    assert info.value.details["step"] == "faulty_step"
    assert [v["ids"] for v in info.value.details["violations"]] == [["c1"]]
    assert state.steps[-1] == "faulty_step"


def test_a_step_that_only_dropped_whole_units_is_recorded_without_a_pairing_check():
    # The contract of revalidate=False: the step dropped whole units, so the check is skipped.
    state = broken_ring_state()
    state.record("drop_whole_units", revalidate=False)
    assert state.steps[-1] == "drop_whole_units"


# ------------------------------------------------------------------------- cost before a change


def image_ring(call_id: str) -> tuple[Message, Message]:
    img = ImagePart("base64", "aGVsbG8=", media_type="image/png")
    call = ToolCallPart(call_id, "screenshot", '{"q": 1}')
    result = ToolResultPart(call_id, (img, TextPart(words(40))))
    return Message("assistant", (call,)), Message("tool", (result,))


def test_tokens_before_are_the_sessions_even_for_content_degraded_after_counting():
    # Everything is counted while deciding (the image ring is the newest of the middle), then
    # the image is degraded: "tokens before" still describe the session, not the degraded view.
    s = session(system(), user("goal"), assistant(words(30)), image_ring("c1"), user("latest"))
    full = WordCounter().count(s).total
    a = assemble(
        s,
        CONFIG.with_changes(recent_tool_rings=0),
        counter=WordCounter(),
        metrics=AssemblyMetrics(CollectorRegistry()),
        budget=full - 60,
    )
    assert a.report.degraded_attachment_ids == (s.messages[3].id,)
    assert not a.report.tokens_before_is_lower_bound
    assert a.report.tokens_before.total == full


def test_a_unit_changed_twice_before_it_was_counted_leaves_tokens_before_a_lower_bound():
    # The image ring is older than the newest ring that already overflows, so it is degraded
    # without being counted as it was; clearing its result then counts the degraded content.
    # Its size in the session was never known: tokens before must say they are a lower bound,
    # not pass the degraded size off as the session's.
    s = session(
        system(),
        user("goal"),
        image_ring("c1"),
        ring("c2", words(80)),
        ring("c3", "ok"),
        user("latest"),
    )
    counter = WordCounter()
    config = CONFIG.with_changes(middle_delete_unit="clear_tool_result")
    a = assemble(
        s, config, counter=counter, metrics=AssemblyMetrics(CollectorRegistry()), budget=116
    )
    assert a.report.degraded_attachment_ids == (s.messages[2].id,)
    assert a.report.cleared_result_ids == ("c1", "c2")
    assert s.messages[3].digest not in counter.memo  # the image result as it was: never counted
    assert a.report.tokens_before_is_lower_bound
    assert a.report.tokens_before.middle < WordCounter().count_message(s.messages[3])
