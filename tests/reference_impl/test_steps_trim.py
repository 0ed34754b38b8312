"""Cutting the middle (``steps/trim.py``), one step at a time with a transparent word counter:
the tiers, the attachment placeholders, clearing old results and the fill by tier.

The word counter (``assembler_support.WordCounter``) costs a message 4 tokens plus one per word of
text, 1 plus one per word of arguments for a call, and 100 for an image; the request overhead is 3.
"""

from __future__ import annotations

import hashlib

import pytest
from assembler_support import (
    WordCounter,
    assemble_words,
    assistant,
    protected_state,
    ring,
    session,
    system,
    user,
    words,
)

from reference_impl import AssemblyConfig
from reference_impl.steps import (
    CLEARED_RESULT_TEXT,
    classify_middle,
    clear_tool_results,
    degrade_attachments,
    drop_middle_by_tier,
)
from reference_impl.steps.trim import (
    degrade_message,
    has_attachment,
    is_short_error_ring,
    short_error,
    unit_chars,
)
from reference_impl.transcript import (
    FilePart,
    ImagePart,
    Message,
    SummaryPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    ToolSpec,
)

# Every ring is in the middle (no recent ring is protected); the suffix is the latest user turn.
CONFIG = AssemblyConfig(summarize_trigger_ratio=1.0, recent_tool_rings=0, recent_user_turns=1)
FIXED = 11 + 5 + 5 + 3  # system, "goal", "latest", overhead


def state_for(s, budget, *, counter=None, config=CONFIG):
    state = protected_state(s, config, budget, counter=counter)
    classify_middle(state)
    return state


def framed(*middle):
    """system, goal, ``middle``, latest: the fixed part costs ``FIXED``."""
    return session(system(), user("goal"), *middle, user("latest"))


def middle_units(state):
    return [u for u in state.units if u.bucket == "middle"]


# ----------------------------------------------------------------------------------- unit_chars


def test_unit_chars_counts_text_call_names_arguments_and_result_text_only():
    messages = (
        user("abcde"),
        Message("assistant", (TextPart("ok"), ToolCallPart("c1", "get_status", '{"q": 1}'))),
        Message(
            "tool",
            (
                ToolResultPart(
                    "c1", (TextPart("xyz"), ImagePart("url", "https://x/a.png"), TextPart("hi"))
                ),
            ),
        ),
        Message("user", (ImagePart("url", "https://x/b.png"),)),
    )
    # 5 + (2 + 10 + 8) + (3 + 2); images count 0
    assert unit_chars(messages) == 30
    assert unit_chars(()) == 0
    assert unit_chars((Message("user", (ImagePart("url", "https://x/b.png"),)),)) == 0


# ---------------------------------------------------------------------------------- short_error


@pytest.mark.parametrize(
    ("chars", "cost", "short"),
    [(80, 10, True), (81, 10, False), (80, 11, False), (0, 0, True), (10, 9, True)],
)
def test_short_error_is_within_the_limit_and_at_most_eight_characters_a_token(chars, cost, short):
    assert short_error(lambda: chars, lambda: cost, 10) is short


def test_a_long_error_is_not_counted_to_be_found_long():
    def never() -> int:
        raise AssertionError("counted")

    assert short_error(lambda: 81, never, 10) is False


def test_an_error_ring_of_many_characters_a_token_is_not_short():
    # 256 tokens allowed; 2100 characters of one long word are 5 tokens for the word counter but
    # more than 8 characters a token: not a short error message.
    s = framed(ring("c1", "x" * 2100, error=True))
    state = state_for(s, 10_000)
    (unit,) = middle_units(state)
    assert state.cost(unit) == 7 + 5
    assert is_short_error_ring(state, unit) is False
    assert unit.tier == "verbose_ring"


def test_only_rings_with_an_error_result_are_short_error_rings():
    s = framed(ring("c1", "ok"), ring("c2", "failed", error=True))
    state = state_for(s, 10_000)
    ok, failed = middle_units(state)
    assert is_short_error_ring(state, ok) is False
    assert is_short_error_ring(state, failed) is True


# ------------------------------------------------------------------------------- classify_middle


def test_only_the_newest_short_error_rings_are_raised_and_long_ones_use_no_place():
    summary = Message("user", (SummaryPart("earlier: checked the hosts"),))
    s = framed(
        summary,
        ring("e1", "failed", error=True),
        ring("e2", "failed", error=True),
        assistant("plain"),
        ring("e3", words(300), error=True),  # long: over 256 tokens
        ring("v1", "ok"),
        ring("e4", "failed", error=True),
    )
    state = state_for(s, 10_000, config=CONFIG.with_changes(keep_middle_error_results=2))
    tiers = [u.tier for u in middle_units(state)]
    assert tiers == [
        "summary",
        "verbose_ring",  # e1: beyond the two newest short ones
        "error_ring",  # e2
        "plain_turn",
        "verbose_ring",  # e3: long, does not take one of the two places
        "verbose_ring",
        "error_ring",  # e4
    ]


def test_no_error_ring_is_raised_when_none_is_to_be_kept():
    s = framed(ring("e1", "failed", error=True))
    state = state_for(s, 10_000, config=CONFIG.with_changes(keep_middle_error_results=0))
    assert [u.tier for u in middle_units(state)] == ["verbose_ring"]


def test_classify_leaves_the_prefix_and_the_suffix_alone():
    config = CONFIG.with_changes(recent_tool_rings=1, keep_middle_error_results=5)
    s = framed(ring("e1", "failed", error=True))  # the one complete ring: protected
    state = state_for(s, 10_000, config=config)
    (protected,) = [u for u in state.units if u.kind == "ring"]
    assert protected.bucket == "suffix"
    assert protected.tier == "verbose_ring"  # as loaded: classify only tiers the middle


# --------------------------------------------------------------------------- attachment helpers

IMAGE_URL = ImagePart("url", "https://x/a.png")
# "[image omitted to fit the context budget: https://x/a.png]": 8 words
PLACEHOLDER_WORDS = 8


def image_turn(text: str) -> Message:
    return Message("user", (TextPart(text), IMAGE_URL))


def test_placeholders_name_the_attachment():
    data = "aGVsbG8="
    digest = hashlib.sha256(data.encode()).hexdigest()[:12]
    message = Message(
        "user",
        (
            TextPart("see"),
            ImagePart("base64", data, media_type="image/png"),
            ImagePart("base64", data),
            FilePart("url", "https://x/r.pdf", filename="report.pdf"),
            FilePart("base64", data),
            ImagePart("url", "u" * 200),
            ImagePart("url", "v" * 201),
        ),
    )
    texts = [p.text for p in degrade_message(message).parts]
    assert texts == [
        "see",
        f"[image omitted to fit the context budget: image/png sha256:{digest}]",
        f"[image omitted to fit the context budget: image sha256:{digest}]",
        "[file omitted to fit the context budget: report.pdf]",
        f"[file omitted to fit the context budget: file sha256:{digest}]",
        f"[image omitted to fit the context budget: {'u' * 200}]",
        f"[image omitted to fit the context budget: {'v' * 200}…]",
    ]


def test_degrading_a_tool_result_keeps_its_id_and_its_text():
    result = ToolResultPart("c1", (TextPart("before"), IMAGE_URL), is_error=True)
    plain = ToolResultPart("c2", (TextPart("plain"),))
    degraded = degrade_message(Message("tool", (result, plain)))
    first, second = degraded.parts
    assert isinstance(first, ToolResultPart)
    assert (first.call_id, first.is_error) == ("c1", True)
    assert [c.text for c in first.content] == [
        "before",
        "[image omitted to fit the context budget: https://x/a.png]",
    ]
    assert second == plain


def test_has_attachment_looks_inside_tool_results():
    assert has_attachment((image_turn("a"),))
    assert has_attachment((Message("tool", (ToolResultPart("c1", (IMAGE_URL,)),)),))
    assert not has_attachment(
        (user("a"), Message("tool", (ToolResultPart("c1", (TextPart("x"),)),)))
    )
    assert not has_attachment(())


# --------------------------------------------------------------------------- degrade_attachments


def attachments_session():
    # middle: A image turn (4 + 1 + 100 = 105), B 10, C image turn 105, D 10, E image turn 105.
    # Degraded, an image turn costs 4 + 1 + 8 = 13 (92 won each). 335 in all, FIXED 24.
    return framed(
        image_turn("a"),
        assistant(words(6)),
        image_turn("c"),
        assistant(words(6)),
        image_turn("e"),
    )


@pytest.mark.parametrize(
    ("budget", "degraded"),
    [
        (FIXED + 335, ""),  # fits as it is
        (FIXED + 334, "A"),  # 243 after A
        (FIXED + 243, "A"),
        (FIXED + 242, "AC"),  # 151 after A and C
        (FIXED + 200, "AC"),  # C is inside the counted window: degrading it is seen to fit
        (FIXED + 151, "AC"),
        (FIXED + 150, "ACE"),  # 59 after all three
        (FIXED + 10, "ACE"),  # never fits: all degraded all the same
    ],
)
def test_attachments_are_degraded_oldest_first_until_the_view_fits(budget, degraded):
    s = attachments_session()
    state = state_for(s, budget)
    units = middle_units(state)
    degrade_attachments(state)
    names = dict(zip("ABCDE", units, strict=True))
    expected = [names[n].id for n in degraded]
    assert state.degraded_attachment_ids == expected
    assert ("degrade_attachments" in state.steps) is bool(degraded)
    for name, unit in names.items():
        assert has_attachment(unit.messages) is (name in "ACE" and name not in degraded)
    cost = sum(state.cost(u) for u in units)
    assert cost == 335 - 92 * len(degraded)
    assert state.fits() is (cost <= budget - FIXED)


def test_the_fit_sums_the_middle_in_keep_order_so_a_newer_verbose_ring_waits_for_the_turns():
    # Middle: turns of 10 and 20, then the newest unit, a verbose ring. The fit walks the plain
    # turns first (newest first: 20, then 10), the tier the fill keeps longer; with room for 25
    # the second turn overflows and the ring is never counted, although it is the newest.
    counter = WordCounter()
    s = framed(assistant(words(6)), assistant(words(16)), ring("v1", words(40)))
    state = state_for(s, 1000, counter=counter)
    assert [u.tier for u in middle_units(state)] == ["plain_turn", "plain_turn", "verbose_ring"]
    assert state.fixed_cost == FIXED
    counter.encoded.clear()
    assert state.fits(FIXED + 25) is False
    assert counter.encoded == [s.messages[3].id, s.messages[2].id]
    ring_cost = WordCounter().count_message(s.messages[4]) + WordCounter().count_message(
        s.messages[5]
    )
    assert state.fits(FIXED + 30 + ring_cost) is True
    assert state.fits(FIXED + 29 + ring_cost) is False
    assert counter.encoded == [
        s.messages[3].id,
        s.messages[2].id,
        s.messages[4].id,
        s.messages[5].id,
    ]


def test_degrading_leaves_a_middle_without_attachments_uncounted():
    counter = WordCounter()
    state = state_for(
        framed(assistant(words(6)), ring("v1", words(40))), FIXED + 5, counter=counter
    )
    assert state.fixed_cost == FIXED
    counter.encoded.clear()
    degrade_attachments(state)
    assert counter.encoded == []
    assert "degrade_attachments" not in state.steps
    assert not state.fits()  # over budget: what to drop is the fill's to decide


def test_attachments_are_degraded_when_the_fixed_part_alone_is_over_budget_without_counting():
    counter = WordCounter()
    state = state_for(framed(image_turn("a"), image_turn("b")), FIXED - 1, counter=counter)
    assert state.fixed_cost == FIXED
    counter.encoded.clear()
    degrade_attachments(state)
    assert len(state.degraded_attachment_ids) == 2
    assert counter.encoded == []  # nothing of the middle can fit: none of it is counted


def test_the_walk_counts_the_middle_newest_first_up_to_the_unit_that_overflows():
    # Room 334: the whole middle (335) overflows only at A, the oldest; A is counted as it was,
    # so the session's cost of every unit stays known (tokens before are not a lower bound).
    counter = WordCounter()
    s = attachments_session()
    state = state_for(s, FIXED + 334, counter=counter)
    assert state.fixed_cost == FIXED
    counter.encoded.clear()
    degrade_attachments(state)
    a = middle_units(state)[0]
    assert state.degraded_attachment_ids == [a.id]
    assert a.original_cost == 105
    assert s.messages[2].id in counter.encoded


def test_an_image_just_past_an_exact_fit_is_counted_before_it_is_degraded():
    # middle: A image 105, B 10, C image 105, D 10. Room 125 holds B, C and D exactly, so the walk
    # goes on to A, which overflows: A is counted as it was (105), then degraded (138 in all,
    # still over), then C (46).
    s = framed(image_turn("a"), assistant(words(6)), image_turn("c"), assistant(words(6)))
    state = state_for(s, FIXED + 125)
    a, _, c, _ = middle_units(state)
    degrade_attachments(state)
    assert state.degraded_attachment_ids == [a.id, c.id]
    assert a.original_cost == 105
    assert state.fits()
    # Room 20: C already overflows (10 + 105). A, older, is degraded without being counted as
    # it was; C is counted (105) and degraded: 23 for C and D, still over.
    state = state_for(s, FIXED + 20)
    a, _, c, _ = middle_units(state)
    degrade_attachments(state)
    assert state.degraded_attachment_ids == [a.id, c.id]
    assert c.original_cost == 105
    assert a.original_cost is None


def test_after_a_degrade_the_walk_goes_on_up_to_the_unit_that_overflows():
    # middle: P 10, B 10, C image 105, D 10; room 33. The walk stops at C (115); C degraded (13)
    # leaves 23, and the walk goes on: B makes 33, exactly the room, so it goes on to P, which
    # overflows (43): P is counted as it was.
    s = framed(assistant(words(6)), assistant(words(6)), image_turn("c"), assistant(words(6)))
    state = state_for(s, FIXED + 33)
    p, _, c, _ = middle_units(state)
    degrade_attachments(state)
    assert state.degraded_attachment_ids == [c.id]
    assert p.original_cost == 10
    assert not state.fits()


def _image_turn_then_ring_holding_an_image(*older):
    """``older``, then U an image turn (105; degraded 13), then R a verbose ring whose result
    holds an image (call 7 + result 105 = 112; degraded 7 + 13 = 20). The fill keeps plain turns
    before rings, so the walk meets U (and ``older``) before R."""
    r_call = Message("assistant", (ToolCallPart("c1", "get_status", '{"q": 1}'),))
    r_result = Message("tool", (ToolResultPart("c1", (TextPart("r"), IMAGE_URL)),))
    return framed(*older, image_turn("u"), r_call, r_result)


def test_an_attachment_the_walk_reaches_before_its_turn_is_counted_as_it_was():
    # middle: U, R. Room 33 = 13 + 20: U's degrade lets the walk reach R, which is counted whole
    # (112) before its own turn; degraded too, the middle fits exactly.
    s = _image_turn_then_ring_holding_an_image()
    state = state_for(s, FIXED + 33)
    u, r = middle_units(state)
    degrade_attachments(state)
    assert state.degraded_attachment_ids == [u.id, r.id]
    assert (u.original_cost, r.original_cost) == (105, 112)
    assert state.fits()


FREE_IMAGE = ImagePart("url", "https://x/free.png")


class _FreeImage(WordCounter):
    """Charges nothing for ``FREE_IMAGE`` (its placeholder costs 8 words: dearer)."""

    def _words(self, message):
        return super()._words(message) - 100 * message.parts.count(FREE_IMAGE)


def test_a_placeholder_dearer_than_its_attachment_does_not_make_the_older_ones_go_too():
    # middle: A an image turn (105; degraded 13), then B whose image costs nothing (5; degraded
    # 13). Room 20: degrading A alone makes the middle fit (13 + 5), so B keeps its image, although
    # the middle would not fit with both degraded (26).
    b = Message("user", (TextPart("b"), FREE_IMAGE))
    state = state_for(framed(image_turn("a"), b), FIXED + 20, counter=_FreeImage())
    assert state.fixed_cost == FIXED
    first, second = middle_units(state)
    degrade_attachments(state)
    assert state.degraded_attachment_ids == [first.id]
    assert has_attachment(second.messages)
    assert state.fits()


class _FreeNotes(WordCounter):
    """Charges nothing for a message that reads "(free)"."""

    def _words(self, message):
        return 0 if message.text == "(free)" else super()._words(message)


def test_a_unit_that_costs_nothing_fits_in_no_room():
    # The fixed part fills the budget exactly (room 0): the newest turn, which the counter
    # charges nothing for, still fits; the older one, which costs 10, is dropped.
    s = framed(assistant(words(6)), assistant("(free)"))
    state = state_for(s, FIXED, counter=_FreeNotes())
    assert state.fixed_cost == FIXED
    drop_middle_by_tier(state)
    assert [u.kept for u in middle_units(state)] == [False, True]
    assert state.dropped_turn_ids == [middle_units(state)[0].id]


def test_no_attachment_no_degrade_step():
    state = state_for(framed(assistant(words(50))), FIXED)
    degrade_attachments(state)
    assert state.degraded_attachment_ids == []
    assert "degrade_attachments" not in state.steps


# ---------------------------------------------------------------------------- clear_tool_results

CLEAR = CONFIG.with_changes(middle_delete_unit="clear_tool_result")
CLEARED_COST = 4 + len(CLEARED_RESULT_TEXT.split())  # 14


@pytest.mark.parametrize(("minimum", "cleared"), [(0, True), (10, True), (11, False)])
def test_a_result_is_cleared_only_when_that_wins_at_least_the_minimum(minimum, cleared):
    # The result costs 4 + 20, cleared 14: 10 won.
    s = framed(ring("c1", words(20)))
    state = state_for(s, FIXED, config=CLEAR.with_changes(clear_min_tokens_won=minimum))
    clear_tool_results(state)
    assert state.cleared_result_ids == (["c1"] if cleared else [])
    (unit,) = middle_units(state)
    assert (unit.messages[1].tool_results[0].content[0].text == CLEARED_RESULT_TEXT) is cleared
    assert ("clear_tool_results" in state.steps) is cleared


@pytest.mark.parametrize("result_words", [5, 10])
def test_a_result_no_longer_than_the_placeholder_is_not_cleared(result_words):
    s = framed(ring("c1", words(result_words)))
    state = state_for(s, FIXED, config=CLEAR)
    clear_tool_results(state)
    assert state.cleared_result_ids == []
    assert "clear_tool_results" not in state.steps


def test_a_result_one_token_longer_than_the_placeholder_is_cleared():
    s = framed(ring("c1", words(11)))  # 15 -> 14
    state = state_for(s, FIXED, config=CLEAR)
    clear_tool_results(state)
    assert state.cleared_result_ids == ["c1"]


def test_a_ring_not_worth_clearing_does_not_stop_newer_ones_from_being_cleared():
    s = framed(ring("c1", words(5)), ring("c2", words(20)))
    state = state_for(s, FIXED, config=CLEAR)
    clear_tool_results(state)
    assert state.cleared_result_ids == ["c2"]


def test_results_are_cleared_oldest_first_keeping_the_calls_until_the_view_fits():
    # three rings of 7 + 24 = 31, 93 in all; each clearing wins 10.
    s = framed(ring("c1", words(20)), ring("c2", words(20)), ring("c3", words(20)))
    state = state_for(s, FIXED + 83, config=CLEAR)
    calls_before = [u.messages[0] for u in middle_units(state)]
    clear_tool_results(state)
    assert state.cleared_result_ids == ["c1"]
    assert state.fits()
    assert [u.messages[0] for u in middle_units(state)] == calls_before
    state = state_for(s, FIXED + 73, config=CLEAR)
    clear_tool_results(state)
    assert state.cleared_result_ids == ["c1", "c2"]
    state = state_for(s, FIXED + 62, config=CLEAR)
    clear_tool_results(state)
    assert state.cleared_result_ids == ["c1", "c2", "c3"]
    assert not state.fits()


def test_clearing_skips_short_error_rings_fitting_views_and_the_tool_ring_mode():
    s = framed(ring("e1", words(20), error=True), ring("c2", words(20)))
    state = state_for(s, FIXED, config=CLEAR)
    clear_tool_results(state)
    assert state.cleared_result_ids == ["c2"]  # e1 is a short error ring, kept as it is
    state = state_for(s, FIXED + 62, config=CLEAR)
    clear_tool_results(state)
    assert state.cleared_result_ids == []
    state = state_for(s, FIXED, config=CONFIG)
    clear_tool_results(state)
    assert state.cleared_result_ids == []
    assert "clear_tool_results" not in state.steps


def test_a_parallel_ring_reports_every_cleared_call():
    s = framed(ring("c1", words(20), extra_calls=("c2",)))
    state = state_for(s, FIXED, config=CLEAR)
    clear_tool_results(state)
    assert state.cleared_result_ids == ["c1", "c2"]


# --------------------------------------------------------------------------- drop_middle_by_tier


def tiered_session():
    # P1 plain 10, V1 verbose ring 7 + 5 = 12, E1 short error ring 12, P2 plain 10, V2 ring 12
    return framed(
        assistant(words(6)),
        ring("v1", "ok"),
        ring("e1", "failed", error=True),
        assistant(words(6)),
        ring("v2", "ok"),
    )


@pytest.mark.parametrize(
    ("room", "kept", "steps"),
    [
        (56, "P1 V1 E1 P2 V2", []),
        (55, "P1 E1 P2 V2", ["drop_middle_rings"]),  # the oldest verbose ring goes first
        (44, "P1 E1 P2 V2", ["drop_middle_rings"]),
        (43, "P1 E1 P2", ["drop_middle_rings"]),
        (32, "P1 E1 P2", ["drop_middle_rings"]),
        (31, "E1 P2", ["drop_middle_rings", "drop_plain_turns"]),
        (12, "E1", ["drop_middle_rings", "drop_plain_turns"]),
        (11, "", ["drop_middle_rings", "drop_plain_turns", "drop_error_rings"]),
    ],
)
def test_whole_units_go_by_tier_oldest_first_until_the_rest_fits(room, kept, steps):
    state = state_for(tiered_session(), FIXED + room)
    names = dict(zip(["P1", "V1", "E1", "P2", "V2"], middle_units(state), strict=True))
    drop_middle_by_tier(state)
    assert [n for n, u in names.items() if u.kept] == kept.split()
    assert [s for s in state.steps if s.startswith("drop_")] == steps
    dropped = [n for n in names if n not in kept.split()]
    assert state.dropped_ring_ids == [names[n].id for n in dropped if n[0] in "VE"]
    assert state.dropped_turn_ids == [names[n].id for n in dropped if n[0] == "P"]


def test_dropped_ids_are_reported_in_session_order():
    # Twelve messages, so the ids m2 and m10 do not sort as text in session order.
    s = framed(ring("v1", "ok"), *(assistant(words(6)) for _ in range(6)), ring("v2", "ok"))
    state = state_for(s, FIXED + 60)
    drop_middle_by_tier(state)
    assert state.dropped_ring_ids == [s.messages[2].id, s.messages[10].id]
    assert state.dropped_ring_ids == ["m2-" + s.messages[2].id[3:], "m10-" + s.messages[10].id[4:]]


def test_a_smaller_unit_after_one_that_overflows_is_dropped_too():
    # P1 10, P2 20, E1 12; room 25: E1 is kept, then P2 overflows and P1 goes with it though it
    # would fit in the 13 left: deleting plain turns oldest first drops P1 (32 left, still over)
    # and then P2.
    s = framed(assistant(words(6)), assistant(words(16)), ring("e1", "failed", error=True))
    state = state_for(s, FIXED + 25)
    drop_middle_by_tier(state)
    assert [u.kept for u in middle_units(state)] == [False, False, True]


def test_an_earlier_summary_is_kept_longest_and_dropped_last():
    summary = Message("user", (SummaryPart("earlier: " + words(4)),))  # 4 + 5 = 9
    s = framed(summary, assistant(words(6)), ring("e1", "failed", error=True))
    state = state_for(s, FIXED + 9)
    drop_middle_by_tier(state)
    assert [u.kept for u in middle_units(state)] == [True, False, False]
    state = state_for(s, FIXED + 8)
    drop_middle_by_tier(state)
    assert [u.kept for u in middle_units(state)] == [False, False, False]
    assert [s for s in state.steps if s.startswith("drop_")] == [
        "drop_plain_turns",
        "drop_error_rings",
        "drop_old_summary",
    ]
    assert state.dropped_turn_ids == [middle_units(state)[0].id, middle_units(state)[1].id]


def test_a_middle_over_a_budget_the_fixed_part_fills_is_dropped_without_being_counted():
    # Room 0: the fit counts the first unit in keep order (the plain turn, a tier kept longer
    # than the newer ring) and finds it over; the fill stops at the same unit, so the ring is
    # never counted. Room -1: nothing is counted.
    counter = WordCounter()
    s = framed(assistant(words(6)), ring("v1", "ok"))
    state = state_for(s, FIXED, counter=counter)
    assert state.fixed_cost == FIXED
    counter.encoded.clear()
    drop_middle_by_tier(state)
    assert not any(u.kept for u in middle_units(state))
    assert counter.encoded == [s.messages[2].id]
    state = state_for(s, FIXED - 1, counter=(counter := WordCounter()))
    assert state.fixed_cost == FIXED
    counter.encoded.clear()
    drop_middle_by_tier(state)
    assert not any(u.kept for u in middle_units(state))
    assert counter.encoded == []


# ----------------------------------------------------------------------- compaction_headroom


def test_a_cut_with_headroom_drops_until_the_headroom_is_free():
    # budget FIXED + 55 = 79: cutting just enough keeps P1 E1 P2 V2 (room 55, 44 used); with
    # a headroom of 0.2 (15.8 tokens, rounded up to 16) the cut aims at 63, room 39: V2 goes too.
    budget = FIXED + 55
    state = state_for(tiered_session(), budget, config=CONFIG.with_changes(compaction_headroom=0.2))
    names = dict(zip(["P1", "V1", "E1", "P2", "V2"], middle_units(state), strict=True))
    drop_middle_by_tier(state)
    assert [n for n, u in names.items() if u.kept] == ["P1", "E1", "P2"]
    assert state.cutting is True
    assert state.cut_budget() == budget - 16


def test_with_headroom_a_view_that_fits_as_it_is_is_not_cut():
    state = state_for(
        tiered_session(), FIXED + 56, config=CONFIG.with_changes(compaction_headroom=0.3)
    )
    drop_middle_by_tier(state)
    assert all(u.kept for u in middle_units(state))
    assert state.cutting is False
    assert state.cut_budget() == FIXED + 56


def test_a_headroom_over_what_can_be_cut_stops_at_the_part_that_is_never_cut():
    # 0.9 of 79 is 71: the budget less the headroom (8) is below the fixed part (24), so the
    # cut aims at the fixed part: the whole middle goes, and nothing is refused.
    state = state_for(
        tiered_session(), FIXED + 55, config=CONFIG.with_changes(compaction_headroom=0.9)
    )
    assert state.cut_budget() == FIXED
    drop_middle_by_tier(state)
    assert not any(u.kept for u in middle_units(state))


def test_without_headroom_the_cut_budget_is_the_budget_and_nothing_is_counted_for_it():
    counter = WordCounter()
    state = state_for(tiered_session(), FIXED + 10, counter=counter)
    counter.encoded.clear()
    assert state.cut_budget() == FIXED + 10
    assert counter.encoded == []
    assert state.cutting is None


def test_attachments_are_degraded_until_the_headroom_is_free():
    # 335 in all: with room 334 A alone goes (243 left); a headroom of 0.3 of 358 (107) leaves
    # room 227: C goes too (151).
    state = state_for(
        attachments_session(), FIXED + 334, config=CONFIG.with_changes(compaction_headroom=0.3)
    )
    units = middle_units(state)
    degrade_attachments(state)
    assert state.degraded_attachment_ids == [units[0].id, units[2].id]
    assert state.fits(state.cut_budget())


def test_the_cut_is_decided_on_the_view_as_loaded_so_a_drop_after_a_degrade_aims_as_low():
    # Every attachment degraded leaves 59, within the budget but not within the room the
    # headroom leaves (0.9 of 358 is 322: room 12): the drop that follows still cuts.
    config = CONFIG.with_changes(compaction_headroom=0.9)
    state = state_for(attachments_session(), FIXED + 334, config=config)
    degrade_attachments(state)
    assert len(state.degraded_attachment_ids) == 3
    assert state.fits()  # the budget: met
    drop_middle_by_tier(state)
    assert not any(u.kept for u in middle_units(state))


def test_results_are_cleared_until_the_headroom_is_free():
    # three rings of 31 (93): room 83 clears c1; a headroom of 0.09 of 107 (9.63, rounded up to
    # 10) leaves room 73: c2 is cleared too, and c3 is not.
    s = framed(ring("c1", words(20)), ring("c2", words(20)), ring("c3", words(20)))
    state = state_for(s, FIXED + 83, config=CLEAR.with_changes(compaction_headroom=0.09))
    clear_tool_results(state)
    assert state.cleared_result_ids == ["c1", "c2"]


def test_tool_schemas_the_bucket_check_leaves_out_do_not_make_the_middle_cut():
    # Ten schemas of 10 tokens: prefix, suffix and tools do not fit, so the bucket check leaves
    # out the schemas no kept ring calls (and the middle ring that calls one). The rest fits:
    # nothing of the middle is cut for the headroom (a tool list too long for every turn would
    # otherwise cut the middle on every turn, what the headroom is there to prevent).
    tools = [ToolSpec(f"t{i}", "x", '{"type": "object"}') for i in range(10)]
    s = session(
        system(),
        user("GOAL: audit"),
        *ring("c0", words(20), name="t2"),
        assistant(words(20)),
        user(words(20)),
        assistant(words(20)),
        *ring("c1", words(5), name="t1"),
        user("latest"),
        tools=tools,
    )
    config = CONFIG.with_changes(
        recent_tool_rings=1, on_still_over_budget="drop_tools_schema_then_fail"
    )
    budget = 136
    just_enough = assemble_words(s, config, budget=budget)
    assert just_enough.report.dropped_tool_names
    assert just_enough.report.total_after > budget - 41  # the plain turns are kept
    roomy = assemble_words(s, config.with_changes(compaction_headroom=0.3), budget=budget)
    assert roomy.view == just_enough.view
    assert roomy.report.dropped_tool_names == just_enough.report.dropped_tool_names
    assert "drop_plain_turns" not in roomy.report.steps
