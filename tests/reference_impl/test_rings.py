"""Rings: segmentation, pairing edges, and ``validate`` for every violation kind.

Hand-built transcripts pin each kind (positive and negative); hypothesis checks that every valid
session from ``conformance.strategies.transcripts`` validates clean and every session broken in
one named way is reported with that kind. The public recordings calibrate the validator against
what providers actually accepted (200) and rejected (the recorded R4 400).
"""

from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis_support import examples
from paths import RECORDINGS, SHARED

from conformance.strategies import VIOLATION_KINDS, broken_transcripts, transcripts
from conformance.traffic.reading import iter_recordings, read_cassette
from reference_impl.rings import (
    VIOLATION_RULES,
    Ring,
    Turn,
    Violation,
    ViolationKind,
    edges,
    rings,
    segment,
    validate,
)
from reference_impl.shapes import get_shape, shape_names
from reference_impl.transcript import (
    ImagePart,
    Message,
    Part,
    ReasoningOrigin,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    Transcript,
    canonical_json,
)

RULES_DOC = SHARED / "design" / "provider-rules.md"

PROPERTY = settings(
    max_examples=examples(200),
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)

# ------------------------------------------------------------------------------- builders


def user(text: str = "hello") -> Message:
    return Message("user", (TextPart(text),))


def system(text: str = "be careful") -> Message:
    return Message("system", (TextPart(text),))


def say(text: str = "done") -> Message:
    return Message("assistant", (TextPart(text),))


def call(call_id: str, name: str = "get_status") -> ToolCallPart:
    return ToolCallPart(call_id, name, "{}")


def calls(*ids: str, lead: tuple[Part, ...] = ()) -> Message:
    return Message("assistant", (*lead, *(call(i) for i in ids)))


def result(call_id: str) -> ToolResultPart:
    return ToolResultPart(call_id, (TextPart(f"result of {call_id}"),))


def results(*ids: str) -> Message:
    return Message("tool", tuple(result(i) for i in ids))


def reasoning(origin: ReasoningOrigin, **data: object) -> ReasoningPart:
    return ReasoningPart(origin, canonical_json(data))


def session(*messages: Message) -> Transcript:
    return Transcript(messages=messages)


def kinds(transcript: Transcript) -> list[tuple[ViolationKind, int, tuple[str, ...]]]:
    return [(v.kind, v.message_index, v.ids) for v in validate(transcript)]


# ------------------------------------------------------------------------------ the table


def test_rule_ids_per_kind_are_the_documented_ones() -> None:
    # Written from the rule table of provider-rules.md, not from the implementation.
    assert VIOLATION_RULES == {
        "unanswered_call": ("C1", "R1", "A1", "G3", "B2"),
        "orphan_result": ("C2", "R2", "A2", "G2", "B1"),
        "duplicate_id": ("C3", "A5", "R6"),
        "result_before_call": ("C2", "A2", "R2"),
        "results_split": ("A4", "B2", "G3"),
        "interleaved": ("C1a", "A1", "G2", "Mistral"),
        "text_before_results": ("A3", "A3a"),
        "reasoning_detached": ("R4", "A13", "G6"),
        "empty_tool_calls": ("C4", "Qwen"),
    }
    assert set(VIOLATION_RULES) == set(VIOLATION_KINDS)


@pytest.mark.skipif(not RULES_DOC.is_file(), reason=f"{RULES_DOC} is absent (../shared/design)")
def test_every_cited_rule_id_exists_in_provider_rules() -> None:
    text = RULES_DOC.read_text(encoding="utf-8")
    cited = {rule for rules in VIOLATION_RULES.values() for rule in rules}
    for rule in cited - {"Mistral", "Qwen"}:
        assert re.search(rf"^\| {re.escape(rule)} \|", text, re.MULTILINE), rule
    for gateway in ("Mistral", "Qwen"):
        assert f"**{gateway}" in text


# ----------------------------------------------------------------------- clean sessions


def test_a_complete_session_has_no_violations() -> None:
    t = session(
        system(),
        user(),
        calls("a", "b", lead=(TextPart("checking"),)),
        results("a", "b"),
        calls("c"),
        results("c"),
        say(),
        user("thanks"),
    )
    assert validate(t) == ()


def test_results_may_be_followed_by_text_in_the_tool_message_A3() -> None:
    tool = Message("tool", (result("a"), TextPart("note after the results")))
    assert validate(session(user(), calls("a"), tool)) == ()


# ------------------------------------------------------------------------ unanswered_call


def test_unanswered_call_C1_R1_A1_G3_B2() -> None:
    t = session(user(), calls("a", "b"), results("a"), say())
    (v,) = validate(t)
    assert (v.kind, v.message_index, v.ids) == ("unanswered_call", 1, ("b",))
    assert v.rules == ("C1", "R1", "A1", "G3", "B2")
    assert "'b'" in v.detail
    assert v.detail.endswith(".")


def test_pending_call_at_the_end_is_unanswered() -> None:
    assert kinds(session(user(), calls("a"))) == [("unanswered_call", 1, ("a",))]


def test_answered_call_is_not_unanswered() -> None:
    assert validate(session(user(), calls("a", "b"), results("a", "b"))) == ()


# -------------------------------------------------------------------------- orphan_result


def test_orphan_result_C2_R2_A2_G2_B1() -> None:
    (v,) = validate(session(user(), results("x"), say()))
    assert (v.kind, v.message_index, v.ids) == ("orphan_result", 1, ("x",))
    assert v.rules == ("C2", "R2", "A2", "G2", "B1")


def test_extra_result_in_a_ring_is_an_orphan_B1() -> None:
    t = session(user(), calls("a"), results("a", "ghost"))
    assert kinds(t) == [("orphan_result", 2, ("ghost",))]


def test_tool_message_without_results_is_an_orphan() -> None:
    t = session(user(), Message("tool", (TextPart("no result here"),)))
    assert kinds(t) == [("orphan_result", 1, ())]


def test_result_with_its_call_is_not_an_orphan() -> None:
    assert validate(session(user(), calls("x"), results("x"))) == ()


# --------------------------------------------------------------------------- duplicate_id


def test_call_id_reused_across_rings_C3_A5_R6() -> None:
    t = session(user(), calls("a"), results("a"), calls("a"), results("a"))
    found = validate(t)
    assert [(v.kind, v.message_index, v.ids) for v in found] == [
        ("duplicate_id", 3, ("a",)),  # the second call
        ("duplicate_id", 4, ("a",)),  # the second result (C3: two tool messages, one id)
    ]
    assert all(v.rules == ("C3", "A5", "R6") for v in found)
    assert "messages[1]" in found[0].detail


def test_call_id_twice_in_one_message() -> None:
    t = session(user(), calls("a", "a"), results("a"))
    assert kinds(t) == [("duplicate_id", 1, ("a",))]
    assert "earlier in this message" in validate(t)[0].detail


def test_distinct_ids_are_not_duplicates() -> None:
    assert validate(session(user(), calls("a", "b"), results("a", "b"))) == ()


# --------------------------------------------------------------------- result_before_call


def test_result_before_call_C2_A2_R2_and_the_call_goes_unanswered() -> None:
    t = session(user(), results("a"), calls("a"), say())
    found = validate(t)
    assert [(v.kind, v.message_index, v.ids) for v in found] == [
        ("result_before_call", 1, ("a",)),
        ("unanswered_call", 2, ("a",)),
    ]
    assert found[0].rules == ("C2", "A2", "R2")
    assert "before the call" in found[1].detail


def test_result_after_call_is_not_before_it() -> None:
    assert validate(session(user(), calls("a"), results("a"), say())) == ()


# -------------------------------------------------------------------------- results_split


def test_results_split_A4_B2_G3_even_though_openai_chat_sends_them_apart() -> None:
    # The neutral model merges OpenAI Chat's consecutive tool messages into one, so two neutral
    # tool messages for one ring are a real split (Bedrock B2, Gemini G3, Anthropic A4).
    t = session(user(), calls("a", "b", "c"), results("a"), results("b", "c"))
    (v,) = validate(t)
    assert (v.kind, v.message_index, v.ids) == ("results_split", 3, ("b", "c"))
    assert v.rules == ("A4", "B2", "G3")
    assert "2 tool messages" in v.detail


def test_results_in_one_message_are_not_split() -> None:
    assert validate(session(user(), calls("a", "b", "c"), results("c", "a", "b"))) == ()


# ---------------------------------------------------------------------------- interleaved


@pytest.mark.parametrize("intruder", [user("wait"), system("note"), say("hmm")])
def test_message_between_call_and_results_is_interleaved_C1a_A1_G2(intruder: Message) -> None:
    t = session(user(), calls("a"), intruder, results("a"))
    (v,) = validate(t)
    assert (v.kind, v.message_index, v.ids) == ("interleaved", 2, ("a",))
    assert v.rules == ("C1a", "A1", "G2", "Mistral")
    assert f"The {intruder.role} message at messages[2]" in v.detail


def test_user_between_two_results_is_interleaved_and_split_C1a() -> None:
    # "tool(c1), user, tool(c2) -> 400" (C1a)
    t = session(user(), calls("a", "b"), results("a"), user("wait"), results("b"))
    assert kinds(t) == [("interleaved", 3, ("b",)), ("results_split", 4, ("b",))]


def test_calls_of_two_assistant_messages_before_their_results_are_interleaved() -> None:
    # The DeepSeek /responses 400: [asst, fc a, asst, fc b, out a, out b]
    t = session(user(), calls("a"), calls("b"), results("a", "b"))
    assert kinds(t) == [("interleaved", 2, ("a",))]


def test_results_right_after_calls_are_not_interleaved() -> None:
    assert validate(session(user(), calls("a"), results("a"), user())) == ()


# -------------------------------------------------------------------- text_before_results


def test_text_before_results_A3_A3a() -> None:
    tool = Message("tool", (result("a"), TextPart("oops"), result("b")))
    (v,) = validate(session(user(), calls("a", "b"), tool))
    assert (v.kind, v.message_index, v.ids) == ("text_before_results", 2, ("b",))
    assert v.rules == ("A3", "A3a")
    assert "parts[1]" in v.detail


def test_image_before_results_is_also_reported() -> None:
    tool = Message("tool", (ImagePart("url", "https://x.test/a.png"), result("a")))
    assert kinds(session(user(), calls("a"), tool)) == [("text_before_results", 2, ("a",))]


# --------------------------------------------------------------------- reasoning_detached


def test_trailing_responses_reasoning_is_detached_R4() -> None:
    rs = reasoning("openai-responses", type="reasoning", id="rs_1", summary=[])
    head = Message("assistant", (call("a"), rs))
    (v,) = validate(session(user(), head, results("a")))
    assert (v.kind, v.message_index, v.ids) == ("reasoning_detached", 1, ("rs_1",))
    assert v.rules == ("R4", "A13", "G6")
    assert "parts[1]" in v.detail


def test_assistant_message_holding_only_reasoning_is_detached() -> None:
    only = Message("assistant", (reasoning("deepseek", reasoning_content="thinking"),))
    assert kinds(session(user(), only, user())) == [("reasoning_detached", 1, ())]


def test_thinking_not_opening_a_tool_call_message_is_detached_A13() -> None:
    thinking = reasoning("anthropic-messages", type="thinking", thinking="t", signature="s")
    late = Message("assistant", (TextPart("let me check"), thinking, call("a")))
    assert kinds(session(user(), late, results("a"))) == [("reasoning_detached", 1, ())]
    first = Message("assistant", (thinking, TextPart("let me check"), call("a")))
    assert validate(session(user(), first, results("a"))) == ()


def test_gemini_signature_must_precede_the_part_it_signs_G6() -> None:
    signature = reasoning("gemini", thoughtSignature="c2ln")
    thought = reasoning("gemini", text="pondering", thought=True)
    bad = Message("assistant", (signature, thought, call("a")))
    assert kinds(session(user(), bad, results("a"))) == [("reasoning_detached", 1, ())]
    # A thought part, then the signature of the call that follows it: as Gemini sends it.
    good = Message("assistant", (thought, signature, call("a")))
    assert validate(session(user(), good, results("a"))) == ()


def test_a_gemini_thought_that_carries_a_signature_may_precede_another_thought_G6() -> None:
    # Only a bare signature (no thought text of its own) signs the part after it: a thought part
    # that also carries a signature, or reasoning data that is not JSON, is not held to G6.
    signed_thought = reasoning("gemini", text="pondering", thought=True, thoughtSignature="c2ln")
    thought = reasoning("gemini", text="more", thought=True)
    message = Message("assistant", (signed_thought, thought, call("a")))
    assert validate(session(user(), message, results("a"))) == ()
    opaque = ReasoningPart("gemini", "not json")
    message = Message("assistant", (opaque, thought, call("a")))
    assert validate(session(user(), message, results("a"))) == ()


def test_responses_reasoning_before_an_id_less_message_is_detached_R4_recorded() -> None:
    rs = reasoning("openai-responses", type="reasoning", id="rs_2", summary=[])
    lost = Message("assistant", (rs, TextPart("42")))
    assert kinds(session(user(), lost, user())) == [("reasoning_detached", 1, ("rs_2",))]
    kept = Message("assistant", (rs, TextPart("42")), wire_id="msg_2")
    assert validate(session(user(), kept, user())) == ()
    before_call = Message("assistant", (rs, call("a")))
    assert validate(session(user(), before_call, results("a"))) == ()


def test_reasoning_before_what_it_belongs_to_is_attached() -> None:
    deepseek = Message("assistant", (reasoning("deepseek", reasoning_content=""), call("a")))
    assert validate(session(user(), deepseek, results("a"))) == ()


# ----------------------------------------------------------------------- empty_tool_calls


def test_empty_tool_calls_C4_Qwen() -> None:
    empty = Message("assistant", (TextPart("nothing to call"),), empty_tool_calls=True)
    (v,) = validate(session(user(), empty))
    assert (v.kind, v.message_index, v.ids, v.rules) == ("empty_tool_calls", 1, (), ("C4", "Qwen"))


def test_assistant_without_the_flag_is_fine() -> None:
    assert validate(session(user(), say())) == ()


# ------------------------------------------------------------------- reporting every one


def test_every_violation_is_reported_in_message_order() -> None:
    t = session(
        user(),
        results("orphan"),  # 1
        calls("a", "b"),  # 2: b unanswered
        results("a"),  # 3
        Message("assistant", (TextPart("x"),), empty_tool_calls=True),  # 4
        calls("a"),  # 5: duplicate id
        results("a"),  # 6: duplicate result
    )
    assert kinds(t) == [
        ("orphan_result", 1, ("orphan",)),
        ("unanswered_call", 2, ("b",)),
        ("empty_tool_calls", 4, ()),
        ("duplicate_id", 5, ("a",)),
        ("duplicate_id", 6, ("a",)),
    ]


def test_violation_str_names_index_kind_ids_and_rules() -> None:
    (v,) = validate(session(user(), calls("a")))
    assert str(v).startswith("messages[1] unanswered_call (a) [C1, R1, A1, G3, B2]: ")
    assert isinstance(v, Violation)


# -------------------------------------------------------------------------- segmentation


def test_segment_splits_rings_and_turns() -> None:
    t = session(system(), user(), calls("a", "b"), results("a", "b"), say(), user())
    segments = segment(t)
    assert [s.kind for s in segments] == ["turn", "turn", "ring", "turn", "turn"]
    ring = segments[2]
    assert isinstance(ring, Ring)
    assert (ring.start, ring.stop, ring.call_ids, ring.answered_ids) == (
        2,
        4,
        ("a", "b"),
        ("a", "b"),
    )
    assert ring.complete
    assert ring.id == t.messages[2].id
    assert list(ring.indices) == [2, 3]
    assert rings(t) == (ring,)


def test_segment_keeps_a_split_ring_together() -> None:
    t = session(user(), calls("a", "b"), results("a"), results("b"), user())
    (ring,) = rings(t)
    assert (ring.start, ring.stop, ring.complete) == (1, 4, True)


def test_segment_never_fails_on_broken_sessions() -> None:
    t = session(user(), results("x"), calls("a", "b"), results("a"), user())
    segments = segment(t)
    assert isinstance(segments[1], Turn)
    assert segments[1].role == "tool"
    ring = segments[2]
    assert isinstance(ring, Ring)
    assert (ring.start, ring.stop, ring.complete) == (2, 4, False)
    pending = rings(session(user(), calls("a")))[0]
    assert (pending.stop, pending.complete, pending.answered_ids) == (2, False, ())


def test_edges_point_from_calls_to_results() -> None:
    t = session(user(), calls("a", "b"), results("b"), user())
    assert [(e.call_id, e.call_index, e.result_index) for e in edges(t)] == [
        ("a", 1, None),
        ("b", 1, 2),
    ]


def _assert_segments_cover(t: Transcript) -> None:
    covered = [i for s in segment(t) for i in s.indices]
    assert covered == list(range(len(t)))


# ------------------------------------------------------------------ hypothesis properties


@PROPERTY
@given(transcripts())
def test_every_valid_transcript_validates_clean(t: Transcript) -> None:
    assert validate(t) == (), [str(v) for v in validate(t)]
    _assert_segments_cover(t)
    heads = [i for i, m in enumerate(t.messages) if m.role == "assistant" and m.tool_calls]
    assert [r.start for r in rings(t)] == heads
    assert all(r.complete and r.stop == r.start + 2 for r in rings(t))


@pytest.mark.parametrize("shape", shape_names())
def test_transcripts_for_each_shape_validate_clean(shape: str) -> None:
    @settings(max_examples=40, deadline=None, database=None)
    @given(transcripts(get_shape(shape).capabilities))
    def check(t: Transcript) -> None:
        assert validate(t) == ()

    check()


# What a mutation implies besides its own kind (see broken_transcripts' docstring).
_ALSO_IMPLIED: dict[str, set[str]] = {
    "result_before_call": {"unanswered_call"},
    "interleaved": {"results_split"},
}


@pytest.mark.parametrize("kind", VIOLATION_KINDS)
def test_every_broken_transcript_reports_its_kind(kind: ViolationKind) -> None:
    @PROPERTY
    @given(broken_transcripts(kind))
    def check(pair: tuple[Transcript, ViolationKind]) -> None:
        transcript, drawn = pair
        found = validate(transcript)
        reported = {v.kind for v in found}
        assert drawn in reported, [str(v) for v in found]
        assert reported <= {drawn} | _ALSO_IMPLIED.get(drawn, set()), [str(v) for v in found]
        assert all(v.rules == VIOLATION_RULES[v.kind] and v.detail for v in found)
        _assert_segments_cover(transcript)

    check()


# -------------------------------------------------------------- the common-case shortcuts


def _every_check_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """``pairing`` without its shortcuts: each message goes through its full checks."""
    import reference_impl.rings as rings_module

    monkeypatch.setattr(rings_module, "_answered_right_after", lambda *_: False)
    monkeypatch.setattr(rings_module, "_answers_earlier_calls", lambda *_: False)
    monkeypatch.setattr(rings_module, "_PLAIN", frozenset())


@pytest.mark.parametrize("kind", [None, *VIOLATION_KINDS])
def test_the_shortcuts_give_the_verdict_of_the_full_checks(kind: ViolationKind | None) -> None:
    # The shortcuts only skip a check that would find nothing: with and without them, every
    # session (valid, or broken in each named way) gets the same violations, in order.
    @settings(max_examples=examples(60), deadline=None, database=None)
    @given(transcripts() if kind is None else broken_transcripts(kind))
    def check(drawn: Transcript | tuple[Transcript, ViolationKind]) -> None:
        transcript = drawn if isinstance(drawn, Transcript) else drawn[0]
        quick = validate(transcript)
        with pytest.MonkeyPatch.context() as patch:
            _every_check_run(patch)
            assert validate(transcript) == quick

    check()


class _OwnReasoning(ReasoningPart):
    """A part of a type of its own (a subclass): the shortcuts do not know it."""


class _OwnResult(ToolResultPart):
    pass


class _OwnCall(ToolCallPart):
    pass


def test_a_subclass_of_a_reasoning_part_is_still_checked_R4() -> None:
    rs = ReasoningPart("openai-responses", canonical_json({"type": "reasoning", "id": "rs_9"}))
    own = _OwnReasoning(rs.origin, rs.data)
    head = Message("assistant", (call("a"), own))
    assert kinds(session(user(), head, results("a"))) == [("reasoning_detached", 1, ("rs_9",))]


def test_a_subclass_of_a_tool_result_is_still_checked_C2() -> None:
    orphan = Message("tool", (_OwnResult("ghost", (TextPart("x"),)),))
    assert kinds(session(user(), calls("a"), results("a"), orphan)) == [
        ("orphan_result", 3, ("ghost",))
    ]
    early = Message("tool", (_OwnResult("b", (TextPart("x"),)),))
    t = session(user(), early, calls("b"), results("b"))
    assert ("result_before_call", 1, ("b",)) in kinds(t)


def test_a_subclass_of_a_tool_call_is_still_a_call_C1() -> None:
    head = Message("assistant", (_OwnCall("a", "get_status", "{}"),))
    assert kinds(session(user(), head, say())) == [("unanswered_call", 1, ("a",))]


def test_a_result_answering_a_call_made_twice_is_checked_in_full_C3() -> None:
    # the call made again after the result: the shortcut declines (a call of the id is not
    # before the message), the full check decides (a duplicate, not a result before its call)
    t = session(user(), calls("a"), results("a"), calls("a"), results("a"))
    assert [k for k, _, _ in kinds(t)] == ["duplicate_id", "duplicate_id"]


# ------------------------------------------------------------------- recorded calibration

needs_recordings = pytest.mark.skipif(
    not RECORDINGS.is_dir(),
    reason=f"{RECORDINGS} is absent: the public recordings live next to the repo in ../shared/recordings",
)


@needs_recordings
@pytest.mark.recordings
def test_requests_providers_accepted_validate_clean() -> None:
    accepted = [i for i in iter_recordings(RECORDINGS) if i.status == 200 and i.shape is not None]
    assert len(accepted) >= 20
    for interaction in accepted:
        assert isinstance(interaction.request_body, dict)
        transcript = get_shape(interaction.shape).parse_request(interaction.request_body)  # type: ignore[arg-type]
        assert validate(transcript) == (), str(interaction)


@needs_recordings
@pytest.mark.recordings
def test_recorded_R4_rejection_is_reported_as_reasoning_detached() -> None:
    name = RECORDINGS / "openai_responses" / "400_reasoning_without_following_item.yaml"
    _, rejected, repaired = read_cassette(name)
    assert rejected.status == 400
    shape = get_shape("openai-responses")
    assert isinstance(rejected.request_body, dict)
    found = validate(shape.parse_request(rejected.request_body))
    assert [(v.kind, v.ids) for v in found] == [
        ("reasoning_detached", ("rs_68c42de022c881948db7ed1cc2529f2e0202c9ad459e0d23",))
    ]
    assert isinstance(repaired.request_body, dict)
    assert validate(shape.parse_request(repaired.request_body)) == ()
