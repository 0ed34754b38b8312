"""Hand-made cases of ``reference_impl.rings``: what a ring absorbs, when it is complete, and the
wording of an unanswered call."""

from __future__ import annotations

from assembler_support import ring, session, user

from reference_impl.rings import Ring, segment, validate
from reference_impl.transcript import Message, TextPart, ToolCallPart, ToolResultPart


def test_a_ring_without_calls_is_not_complete():
    assert Ring(0, 1, "m0", (), ()).complete is False
    assert Ring(0, 2, "m0", ("c1",), ("c1",)).complete is True
    assert Ring(0, 2, "m0", ("c1", "c2"), ("c1",)).complete is False


def test_a_ring_absorbs_only_tool_messages_that_answer_one_of_its_calls():
    call, answer = ring("c1", "ok")
    other = Message("tool", (ToolResultPart("c9", (TextPart("late"),)),))
    s = session(user("go"), call, answer, other)
    segments = segment(s)
    assert [(x.kind, x.indices) for x in segments] == [
        ("turn", range(1)),
        ("ring", range(1, 3)),
        ("turn", range(3, 4)),
    ]
    (head, *_) = [x for x in segments if isinstance(x, Ring)]
    assert head.answered_ids == ("c1",)


def test_an_unanswered_call_is_named_it_and_two_are_named_them():
    one = session(user("go"), Message("assistant", (ToolCallPart("c1", "f", "{}"),)))
    (violation,) = validate(one)
    assert violation.kind == "unanswered_call"
    assert violation.detail.endswith("answers it.")
    two = session(
        user("go"),
        Message("assistant", (ToolCallPart("c1", "f", "{}"), ToolCallPart("c2", "f", "{}"))),
    )
    (violation,) = validate(two)
    assert violation.ids == ("c1", "c2")
    assert violation.detail.endswith("answers them.")
