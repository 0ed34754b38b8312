"""The ``may`` checks, passing cases as well as failing ones: a request prefix that grows from turn
to turn, attachments degraded before middle text is cut, and labelled memory up to its cap."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from checks_support import assembled_turn, refused_turn, transcript
from deploy_session import SINGLE_TOOL

from conformance.checks import REGISTRY, CaseOutcome, TurnOutcome, run_checks
from conformance.scenarios import Expectation, Scenario
from reference_impl.tokens import counter_for
from reference_impl.transcript import Message, TextPart, Transcript

BASE = SINGLE_TOOL
COUNTER = counter_for("openai-chat", "gpt-4o")
FULL = replace(
    transcript(
        {"role": "system", "text": "You are the ops bot."},  # 0
        {"role": "user", "text": "GOAL: keep checkout healthy."},  # 1
        {"role": "assistant", "calls": [{"id": "c1", "name": "get_status", "args": {}}]},  # 2
        {"role": "tool", "results": [{"id": "c1", "text": "healthy"}]},  # 3
        {"role": "assistant", "text": "Checkout is healthy."},  # 4
        {"role": "user", "text": "And now?"},  # 5
        {"role": "assistant", "text": "Still healthy."},  # 6
        {"role": "user", "text": "And now again?"},  # 7
        {"role": "assistant", "text": "Healthy as ever."},  # 8
        {"role": "user", "text": "Thanks."},  # 9
    ),
    tools=BASE.tools,
)
F = FULL.messages


def _scenario(check_id: str, **changes: Any) -> Scenario:
    return replace(
        BASE,
        session=changes.pop("session", FULL),
        ledger=(),
        memory=changes.pop("memory", ()),
        config={"recent_tool_rings": 1, "recent_user_turns": 1} | changes.pop("config", {}),
        expect=Expectation("assembled", checks=(check_id,)),
    )


def _turn(
    session: Transcript, keep: tuple[int, ...], *, turn: int = 0, tools: bool = True
) -> TurnOutcome:
    view = session.with_messages(session.messages[i] for i in keep)
    if not tools:
        view = replace(view, tools=())
    return assembled_turn(session, view, turn=turn, counter=COUNTER)


def _check(check_id: str, scenario: Scenario, *turns: TurnOutcome) -> tuple[str, str]:
    outcome = CaseOutcome("openai-chat", None, 5000, COUNTER.name, turns)
    (result,) = run_checks(scenario, outcome, [REGISTRY[check_id]])
    return result.status, result.message


# -- prefix_stable: turn n's session is turn n-1's plus what happened since -------------------------

TURN_0 = FULL.with_messages(F[:6])
TURN_1 = FULL.with_messages(F[:8])
TURN_2 = FULL


def _prefix(*turns: TurnOutcome) -> tuple[str, str]:
    return _check("prefix_stable", _scenario("prefix_stable"), *turns)


def test_a_request_that_only_grows_keeps_its_prefix() -> None:
    grown = (_turn(TURN_0, (0, 1, 2, 3, 4, 5)), _turn(TURN_1, tuple(range(8)), turn=1))
    assert _prefix(*grown) == ("pass", "")


def test_a_prefix_changed_by_a_compaction_passes() -> None:
    dropped = (_turn(TURN_0, (0, 1, 2, 3, 4, 5)), _turn(TURN_1, (0, 1, 4, 5, 6, 7), turn=1))
    assert _prefix(*dropped) == ("pass", "")


def test_a_result_cleared_anew_is_a_compaction_as_a_ring_dropped_is() -> None:
    # Deletion modes are equal: clearing the old ring's result (its call id kept) changes the
    # prefix where it stands, as dropping the ring would; changing it in any other way does not
    cleared = replace(
        F[3], parts=(replace(F[3].tool_results[0], content=(TextPart("[cleared]"),)),)
    )
    rewritten = replace(cleared, parts=(replace(F[3].tool_results[0], content=(TextPart("ok"),)),))
    first = _turn(TURN_0, (0, 1, 2, 3, 4, 5))
    for message, status in ((cleared, "pass"), (rewritten, "fail")):
        view = TURN_1.with_messages([*F[:3], message, *F[4:8]])
        second = assembled_turn(TURN_1, view, turn=1, counter=COUNTER)
        assert _prefix(first, second)[0] == status


def test_a_prefix_changed_without_a_compaction_fails_and_says_where() -> None:
    _, message = _prefix(
        _turn(TURN_0, (0, 1, 2, 3, 4, 5)),
        _turn(TURN_1, tuple(range(8)), turn=1, tools=False),
    )
    assert message == (
        "turn 1 differs from turn 0 at tool schemas (6 of 6 earlier messages reused)"
    )


def test_a_compaction_that_came_earlier_does_not_excuse_a_later_change() -> None:
    compacted = (0, 1, 4, 5)
    first = _turn(TURN_0, compacted)
    second = _turn(TURN_1, (*compacted, 6, 7), turn=1)
    third = _turn(TURN_2, (*compacted, 6, 7, 8, 9), turn=2, tools=False)
    status, message = _prefix(first, second, third)
    assert status == "fail"
    assert message.startswith("turn 2 differs from turn 1 at tool schemas")
    # And after a compaction between turns 0 and 1, a change between 1 and 2 is still judged.
    status, message = _prefix(_turn(TURN_0, tuple(range(6))), second, third)
    assert message.startswith("turn 2 differs from turn 1")


def test_a_refused_turn_between_two_requests_is_skipped() -> None:
    turns = (
        _turn(TURN_0, tuple(range(6))),
        replace(refused_turn(TURN_1, COUNTER), turn=1),
        _turn(TURN_2, tuple(range(10)), turn=2),
    )
    assert _prefix(*turns) == ("pass", "")


# -- attachments_degraded_first ----------------------------------------------------------------------

IMAGE = {"url": "https://example.org/dashboard.png", "media_type": "image/png"}
PICTURED = replace(
    transcript(
        {"role": "system", "text": "You are the ops bot."},  # 0
        {"role": "user", "text": "GOAL: keep checkout healthy."},  # 1
        {"role": "user", "text": "Here is the dashboard.", "images": [IMAGE]},  # 2
        {"role": "assistant", "text": "The dashboard shows a spike at noon."},  # 3
        {"role": "user", "text": "And this one?", "images": [IMAGE]},  # 4
        {"role": "assistant", "text": "The same spike, an hour later."},  # 5
        {"role": "user", "text": "Explain the spike.", "images": [IMAGE]},  # 6
        {"role": "assistant", "text": "Looking."},  # 7
    ),
    tools=BASE.tools,
)
P = PICTURED.messages


def _attachments(*items: int | Message) -> tuple[str, str]:
    view = PICTURED.with_messages(P[i] if isinstance(i, int) else i for i in items)
    turn = assembled_turn(PICTURED, view, counter=COUNTER)
    scenario = _scenario("attachments_degraded_first", session=PICTURED)
    return _check("attachments_degraded_first", scenario, turn)


def test_cutting_text_after_degrading_the_middle_attachments_passes() -> None:
    degraded = [Message("user", (TextPart(P[i].text),)) for i in (2, 4)]
    assert _attachments(0, 1, degraded[0], degraded[1], 5, 6, 7) == ("pass", "")
    assert _attachments(*range(8)) == ("pass", "")  # nothing cut at all


def test_the_latest_user_turns_own_attachment_is_no_middle_attachment() -> None:
    degraded = [Message("user", (TextPart(P[i].text),)) for i in (2, 4)]
    assert _attachments(0, 1, degraded[0], degraded[1], 6, 7) == ("pass", "")


def test_cut_text_beside_whole_attachments_names_the_first_of_each() -> None:
    status, message = _attachments(0, 1, 2, 4, 6, 7)
    assert status == "fail"
    assert message == (
        "session messages[3] (assistant) was dropped but session messages[2] (user) still "
        "carries its attachment"
    )


# -- memory_labelled ----------------------------------------------------------------------------------

EMAIL = {"source": "crm", "text": "The customer prefers email."}
PHONE = {"source": "support-notes", "text": "Never call before 10 am."}


def _memory(
    *injected: Message,
    memory: tuple[dict[str, Any], ...] = (EMAIL,),
    knob: dict[str, Any] | None = None,
) -> tuple[str, str]:
    view = FULL.with_messages([F[0], *injected, *F[1:]])
    turn = assembled_turn(FULL, view, counter=COUNTER, memory=memory)
    config = {} if knob is None else {"memory": knob}
    scenario = _scenario("memory_labelled", memory=memory, config=config)
    return _check("memory_labelled", scenario, turn)


def _labelled(*items: dict[str, Any], role: str = "system") -> Message:
    text = "\n".join(f"[memory source: {i['source']}] {i['text']}" for i in items)
    return Message(role, (TextPart(text),))  # type: ignore[arg-type]


def test_labelled_memory_passes_and_a_later_copy_of_its_text_does_not_matter() -> None:
    assert _memory(_labelled(EMAIL)) == ("pass", "")
    echo = Message("assistant", (TextPart(f"Noted: {EMAIL['text']}"),))
    assert _memory(_labelled(EMAIL), echo) == ("pass", "")


def test_memory_without_its_source_or_in_an_assistant_turn_is_not_labelled() -> None:
    bare = Message("system", (TextPart(EMAIL["text"]),))
    assert _memory(bare) == (
        "fail",
        "view messages[1] (system) carries memory from 'crm' without naming its source",
    )
    spoken = _labelled(EMAIL, role="assistant")
    assert _memory(spoken)[1].startswith("view messages[1] (assistant) carries memory")


def test_memory_is_injected_up_to_its_cap() -> None:
    both = (EMAIL, PHONE)
    assert _memory(_labelled(EMAIL, PHONE), memory=both) == ("pass", "")
    assert _memory(_labelled(PHONE), memory=both) == (
        "fail",
        "1 memory item(s) in the view; expected 2 (2 offered, cap 5)",
    )
    capped = {"max_items": 1}
    assert _memory(_labelled(EMAIL), memory=both, knob=capped) == ("pass", "")
    assert _memory(_labelled(EMAIL, PHONE), memory=both, knob=capped) == (
        "fail",
        "2 memory item(s) in the view; expected 1 (2 offered, cap 1)",
    )


def test_without_a_max_items_knob_the_cap_is_five() -> None:
    six = tuple({"source": f"note-{n}", "text": f"Fact number {n} of six."} for n in range(6))
    status, message = _memory(_labelled(*six), memory=six, knob={})
    assert (status, message) == (
        "fail",
        "6 memory item(s) in the view; expected 5 (6 offered, cap 5)",
    )
