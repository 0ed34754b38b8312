"""The protected minimum a refusal is judged against: the smallest request that keeps what the seed
protects with the case's knobs (system text, the pinned goal, a ledger note of side effects not
kept otherwise, the latest user turns, the recent rings and everything after them, the tools).

Each expected value is the count of a request written out here by hand from that definition, and
the minimum is read where a user reads it: in the message of refuses_only_below_minimum."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from checks_support import refused_turn, transcript
from deploy_session import SINGLE_TOOL

from conformance.checks import REGISTRY, CaseOutcome, run_checks
from conformance.scenarios import Expectation
from reference_impl.tokens import counter_for
from reference_impl.transcript import Message, TextPart, Transcript

BASE = SINGLE_TOOL
SESSION = transcript(
    {"role": "system", "text": "You are deploy-bot."},  # 0
    {"role": "user", "text": "GOAL: roll out checkout v2 and keep ops informed."},  # 1
    {"role": "assistant", "text": "Which region should go first, and at what share?"},  # 2
    {"role": "user", "text": "Start with eu-west, five percent of the traffic."},  # 3
    {"role": "assistant", "calls": [{"id": "c1", "name": "notify_ops", "args": {"t": "go"}}]},  # 4
    {"role": "tool", "results": [{"id": "c1", "text": "posted"}]},  # 5
    {"role": "assistant", "text": "Ops know."},  # 6
    {"role": "user", "text": "Now the canary."},  # 7
    {"role": "assistant", "calls": [{"id": "c2", "name": "get_status", "args": {}}]},  # 8
    {"role": "tool", "results": [{"id": "c2", "text": "canary healthy"}]},  # 9
    {"role": "assistant", "calls": [{"id": "c3", "name": "get_status", "args": {"n": 2}}]},  # 10
    {"role": "tool", "results": [{"id": "c3", "text": "canary still healthy"}]},  # 11
)
SESSION = replace(SESSION, tools=BASE.tools)
M = SESSION.messages
LEDGER = {
    "tool": "notify_ops",
    "call_id": "c1",
    "status": "succeeded",
    "idempotency_key": "notify-7781",
    "resource_id": "msg_991",
}
COUNTER = counter_for("openai-chat", "gpt-4o")


def _note(*entries: str) -> Message:
    """The ledger note the minimum counts: a label, a header and every field of each entry."""
    text = "[source: side-effect ledger]\nSide effects already executed:\n" + "\n".join(entries)
    return Message("system", (TextPart(text),))


NOTE = _note(
    "- tool=notify_ops idempotency_key=notify-7781 resource_id=msg_991 status=succeeded call_id=c1"
)


def _tokens(*items: int | Message, session: Transcript = SESSION) -> int:
    kept = session.with_messages(session.messages[i] if isinstance(i, int) else i for i in items)
    return COUNTER.count(kept).total


def _minimum(
    session: Transcript = SESSION, ledger: tuple[dict[str, Any], ...] = (LEDGER,), **config: Any
) -> int:
    scenario = replace(
        BASE,
        session=session,
        ledger=ledger,
        config={"recent_tool_rings": 1, "recent_user_turns": 1} | config,
        expect=Expectation("either"),
        budget=replace(BASE.budget, default=(100, 100_000)),
    )
    outcome = CaseOutcome(
        "openai-chat", None, 100_000, COUNTER.name, (refused_turn(session, COUNTER),)
    )
    (result,) = run_checks(scenario, outcome, [REGISTRY["refuses_only_below_minimum"]])
    assert result.status == "fail", result
    return int(result.message.split("the protected minimum costs ")[1].split(" ")[0])


def test_the_minimum_keeps_system_goal_ledger_note_latest_user_turn_and_newest_ring() -> None:
    assert _minimum() == _tokens(0, NOTE, 1, 7, 10, 11)


def test_an_unpinned_goal_is_not_in_the_minimum() -> None:
    assert _minimum(pin=["side_effect_ledger"]) == _tokens(0, NOTE, 7, 10, 11)


def test_the_minimum_keeps_the_latest_recent_user_turns_and_at_least_one() -> None:
    assert _minimum(recent_user_turns=2) == _tokens(0, NOTE, 1, 3, 7, 10, 11)
    assert _minimum(recent_user_turns=0) == _tokens(0, NOTE, 1, 7, 10, 11)


def test_the_minimum_keeps_everything_from_the_oldest_recent_ring_on() -> None:
    assert _minimum(recent_tool_rings=2) == _tokens(0, NOTE, 1, 7, 8, 9, 10, 11)
    assert _minimum(recent_tool_rings=0) == _tokens(0, NOTE, 1, 7, 10, 11)


def test_a_side_effect_whose_ring_the_minimum_keeps_needs_no_note() -> None:
    assert _minimum(recent_tool_rings=3) == _tokens(0, 1, 4, 5, 6, 7, 8, 9, 10, 11)


def test_a_ledger_entry_without_key_or_resource_id_is_noted_with_dashes() -> None:
    bare = {"tool": "notify_ops", "call_id": "c1", "status": "succeeded"}
    note = _note("- tool=notify_ops idempotency_key=- resource_id=- status=succeeded call_id=c1")
    assert _minimum(ledger=(bare,)) == _tokens(0, note, 1, 7, 10, 11)
    # An entry without a side effect needs no note at all.
    assert _minimum(ledger=(LEDGER | {"side_effect": False},)) == _tokens(0, 1, 7, 10, 11)


def test_a_session_without_rings_keeps_its_latest_user_turns() -> None:
    plain = SESSION.with_messages([*M[:4], M[6], M[7]])
    assert _minimum(session=plain, ledger=()) == _tokens(0, 1, 5, session=plain)
