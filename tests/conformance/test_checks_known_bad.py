"""One known-bad outcome per check that the corpus fakes cannot target cheaply, and the proof that
it is caught by that check alone: every default check plus the target runs, and only the target
fails. (The corpus-wide fakes are in tests/support/fakes.py and tests/support/miniatures/.)"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest
from checks_support import assembled_turn, refused_turn, transcript
from deploy_session import SINGLE_TOOL

from conformance.checks import REGISTRY, CaseOutcome, TurnOutcome, checks_for, run_checks
from conformance.scenarios import Expectation, Scenario
from reference_impl.tokens import counter_for
from reference_impl.transcript import Transcript

SESSION = transcript(
    {"role": "system", "text": "You are the ops bot."},  # 0
    {"role": "user", "text": "GOAL: keep checkout healthy."},  # 1
    {"role": "assistant", "calls": [{"id": "call_a", "name": "read_logs", "args": {"n": 1}}]},  # 2
    {"role": "tool", "results": [{"id": "call_a", "text": "log line one"}]},  # 3
    {"role": "assistant", "text": "Logs look fine so far."},  # 4
    {"role": "user", "text": "Check the queue as well."},  # 5
    {"role": "assistant", "calls": [{"id": "call_b", "name": "read_queue", "args": {}}]},  # 6
    {"role": "tool", "results": [{"id": "call_b", "text": "queue depth 3"}]},  # 7
    {"role": "assistant", "calls": [{"id": "call_c", "name": "read_logs", "args": {"n": 2}}]},  # 8
    {"role": "tool", "results": [{"id": "call_c", "text": "log line two"}]},  # 9
    {"role": "user", "text": "Anything else?"},  # 10
)
BASE = SINGLE_TOOL
SESSION = replace(SESSION, tools=BASE.tools)
COUNTER = counter_for("openai-chat", "gpt-4o")


def _scenario(**changes: Any) -> Scenario:
    config = {"recent_tool_rings": 1, "recent_user_turns": 1} | changes.pop("config", {})
    return replace(
        BASE,
        session=changes.pop("session", SESSION),
        config=config,
        ledger=(),
        memory=changes.pop("memory", ()),
        expect=Expectation(changes.pop("outcome", "assembled"), checks=changes.pop("checks", ())),
        **changes,
    )


def _turn(
    session: Transcript, keep: list[int] | Transcript, number: int = 0, **kw: Any
) -> TurnOutcome:
    view = (
        keep
        if isinstance(keep, Transcript)
        else session.with_messages(session.messages[i] for i in keep)
    )
    return assembled_turn(session, view, turn=number, tokens=kw.get("tokens", 10), counter=COUNTER)


def _outcome(*turns: TurnOutcome, budget: int = 5000) -> CaseOutcome:
    return CaseOutcome("openai-chat", None, budget, COUNTER.name, turns)


def _failing(scenario: Scenario, outcome: CaseOutcome, target: str) -> dict[str, str]:
    specs = list(checks_for(scenario))
    if REGISTRY[target] not in specs:
        specs.append(REGISTRY[target])
    return {r.id: r.message for r in run_checks(scenario, outcome, specs) if r.status != "pass"}


ALL = list(range(len(SESSION.messages)))


def _without(*drop: int) -> list[int]:
    return [i for i in ALL if i not in drop]


def _error_session() -> Transcript:
    messages = list(SESSION.messages)
    errored = transcript(
        {"role": "tool", "results": [{"id": "call_a", "text": "timed out", "is_error": True}]}
    ).messages[0]
    messages[3] = errored
    return SESSION.with_messages(messages)


def _image_session() -> Transcript:
    extra = transcript(
        {
            "role": "user",
            "text": "Here is a screenshot.",
            "images": [{"url": "https://example.org/a.png", "media_type": "image/png"}],
        }
    ).messages[0]
    messages = list(SESSION.messages)
    messages[5] = extra
    return SESSION.with_messages(messages)


def _refused_below_the_whole_session() -> tuple[Scenario, CaseOutcome]:
    scenario = _scenario(outcome="either", budget=replace(BASE.budget, default=(100, 5000)))
    turn = refused_turn(SESSION, COUNTER)
    whole = COUNTER.count(SESSION).total
    return scenario, _outcome(turn, budget=whole - 1)


def _edited(index: int, message: dict[str, Any]) -> Transcript:
    """The whole session with message ``index`` replaced (compact scenario form)."""
    messages = list(SESSION.messages)
    messages[index] = transcript(message).messages[0]
    return SESSION.with_messages(messages)


def _with(view: list[Any]) -> Transcript:
    """A view of session indices and compact new messages, in the order given."""
    return SESSION.with_messages(
        SESSION.messages[i] if isinstance(i, int) else transcript(i).messages[0] for i in view
    )


def _mutated() -> tuple[Scenario, CaseOutcome]:
    turn = replace(_turn(SESSION, ALL), input_mutation="body.messages[0] was removed")
    return _scenario(), _outcome(turn)


def _reasoning_dropped() -> tuple[Scenario, CaseOutcome]:
    """The ring of the current turn kept without the reasoning item it was produced with
    (which Responses accepts when no server id ties them: R3 is not judgeable)."""
    reasoning = [{"origin": "openai-responses", "data": {"type": "reasoning", "id": "rs_1"}}]
    session = transcript(
        {"role": "system", "text": "You are the ops bot."},
        {"role": "user", "text": "GOAL: keep checkout healthy."},
        {"role": "assistant", "reasoning": reasoning, "calls": [{"id": "c1", "name": "read_logs"}]},
        {"role": "tool", "results": [{"id": "c1", "text": "log line one"}]},
    )
    session = replace(session, tools=BASE.tools)
    ring = session.messages[2]
    bare = replace(ring, parts=ring.tool_calls)
    view = session.with_messages([*session.messages[:2], bare, *session.messages[3:]])
    return _scenario(session=session), _outcome(_turn(session, view))


CASES: dict[str, Callable[[], tuple[Scenario, CaseOutcome]]] = {
    "reasoning_kept_with_ring": _reasoning_dropped,
    "within_budget": lambda: (_scenario(), _outcome(_turn(SESSION, ALL, tokens=5001))),
    "assembles_when_feasible": lambda: (
        _scenario(outcome="either"),
        _outcome(refused_turn(SESSION, COUNTER)),
    ),
    "tool_payloads_intact": lambda: (
        _scenario(),
        _outcome(
            _turn(
                SESSION,
                _edited(3, {"role": "tool", "results": [{"id": "call_a", "text": "all clear"}]}),
            )
        ),
    ),
    "pins_unaltered": lambda: (
        _scenario(),
        _outcome(
            _turn(
                SESSION,
                # Cut, not added to: words put into a user turn are invented too.
                _edited(1, {"role": "user", "text": "GOAL: keep checkout."}),
            )
        ),
    ),
    "nothing_invented": lambda: (
        _scenario(),
        _outcome(
            _turn(
                SESSION,
                _with([*ALL[:5], {"role": "assistant", "text": "I paged the CEO."}, *ALL[5:]]),
            )
        ),
    ),
    "latest_user_kept": lambda: (_scenario(), _outcome(_turn(SESSION, _without(10)))),
    "first_user_goal_pinned": lambda: (_scenario(), _outcome(_turn(SESSION, _without(1)))),
    "session_not_mutated": _mutated,
    "summary_quality": lambda: (
        _scenario(),
        _outcome(
            _turn(
                SESSION,
                _with(
                    [
                        0,
                        {"role": "assistant", "text": "Earlier: read_logs showed log line one."},
                        1,
                        *ALL[6:],
                    ]
                ),
            )
        ),
    ),
    "text_unedited": lambda: (
        _scenario(),
        _outcome(_turn(SESSION, _edited(4, {"role": "assistant", "text": "Logs look"}))),
    ),
    "refuses_only_below_minimum": _refused_below_the_whole_session,
    "system_kept": lambda: (_scenario(), _outcome(_turn(SESSION, _without(0)))),
    "settings_kept": lambda: (
        _scenario(),
        _outcome(
            _turn(
                replace(SESSION, params=(("temperature", "0.2"), ("tool_choice", '"required"'))),
                replace(SESSION, params=(("temperature", "0.2"),)),
            )
        ),
    ),
    "whole_rings": lambda: (_scenario(), _outcome(_turn(SESSION, _without(3)))),
    "order_preserved": lambda: (
        _scenario(),
        _outcome(_turn(SESSION, [0, 1, 2, 3, 5, 4, 6, 7, 8, 9, 10])),
    ),
    "refuses_broken_input": lambda: (_scenario(outcome="refused"), _outcome(_turn(SESSION, ALL))),
    "tools_dropped": lambda: (_scenario(checks=("tools_dropped",)), _outcome(_turn(SESSION, ALL))),
    "summary_used": lambda: (
        _scenario(checks=("summary_used",)),
        _outcome(_turn(SESSION, _without(2, 3, 4, 5)), budget=20),
    ),
    "oldest_rings_first": lambda: (
        _scenario(checks=("oldest_rings_first",)),
        _outcome(_turn(SESSION, _without(6, 7))),
    ),
    "middle_error_results_kept": lambda: (
        _scenario(
            session=_error_session(),
            checks=("middle_error_results_kept",),
            config={"keep_middle_error_results": 5},
        ),
        _outcome(_turn(_error_session(), _without(2, 3))),
    ),
    "plain_turns_fifo": lambda: (
        _scenario(checks=("plain_turns_fifo",)),
        _outcome(_turn(SESSION, _without(5))),
    ),
    "prefix_stable": lambda: (
        _scenario(checks=("prefix_stable",)),
        _outcome(
            _turn(SESSION, ALL),
            _turn(SESSION, replace(SESSION, tools=()), number=1),
        ),
    ),
    "attachments_degraded_first": lambda: (
        _scenario(session=_image_session(), checks=("attachments_degraded_first",)),
        _outcome(_turn(_image_session(), _without(4))),
    ),
    "memory_labelled": lambda: (
        _scenario(
            checks=("memory_labelled",), memory=({"source": "crm", "text": "Prefers email."},)
        ),
        _outcome(_turn(SESSION, ALL)),
    ),
}


@pytest.mark.parametrize("target", sorted(CASES))
def test_the_known_bad_outcome_is_caught_by_its_check_alone(target: str) -> None:
    scenario, outcome = CASES[target]()
    failing = _failing(scenario, outcome, target)
    assert set(failing) == {target}, failing


def test_summary_used_accepts_deletion_where_the_minimum_fits() -> None:
    scenario, outcome = CASES["summary_used"]()
    roomy = replace(outcome, budget=5000)
    assert "summary_used" not in _failing(scenario, roomy, "summary_used")


def test_middle_error_results_kept_names_the_dropped_error_ring() -> None:
    scenario, outcome = CASES["middle_error_results_kept"]()
    message = _failing(scenario, outcome, "middle_error_results_kept")["middle_error_results_kept"]
    # The ring is named by its first message (the assistant call at index 2).
    ring_id = _error_session().messages[2].id
    assert message == f"0 of 1 middle error rings kept (cap 5); dropped: {ring_id}"
