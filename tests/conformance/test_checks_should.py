"""The ``should`` checks at their edges: what passes as well as what fails (a check that fails
everything is as wrong as one that passes everything), boundaries of budgets and counts, later
turns of a multi-turn case, and the wording of what a failure names."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from checks_support import assembled_turn, refused_turn, transcript
from deploy_session import LEDGER as DEPLOY_LEDGER
from deploy_session import MESSAGES as DEPLOY
from deploy_session import SCENARIO as DEPLOY_SCENARIO
from deploy_session import SINGLE_TOOL

from conformance.checks import REGISTRY, CaseOutcome, TurnOutcome, run_checks
from conformance.identity import map_view
from conformance.scenarios import Expectation, Scenario
from reference_impl.tokens import counter_for
from reference_impl.transcript import Message, SummaryPart, TextPart, ToolSpec, Transcript

# The deploy-bot session the identity tests share, with results and later turns of its own: the
# results are shorter ("posted" names neither the idempotency key nor the message id) and the
# canary turn restarts a pod (a side effect of its own, RESTART below).
SESSION = transcript(
    *DEPLOY[:3],  # 0-2: the system prompt, the goal, the parallel ring's calls
    {
        "role": "tool",
        "results": [
            {"id": "call_a", "text": "pod=checkout-7f9c ready=true"},
            {"id": "call_b", "text": "posted"},
        ],
    },  # 3
    DEPLOY[4],  # 4
    {"role": "user", "text": "Go on with the canary."},  # 5
    {"role": "assistant", "calls": [{"id": "call_c", "name": "restart_pod", "args": {}}]},  # 6
    {"role": "tool", "results": [{"id": "call_c", "text": "restarted"}]},  # 7
    DEPLOY[8],  # 8
    {"role": "user", "text": "What next?"},  # 9
)
BASE = SINGLE_TOOL
SESSION = replace(SESSION, tools=BASE.tools)
M = SESSION.messages
(NOTIFY,) = DEPLOY_LEDGER
RESTART = {
    "tool": "restart_pod",
    "call_id": "call_c",
    "status": "succeeded",
    "idempotency_key": "restart-42",
    "resource_id": "pod-7f9c",
}
COUNTER = counter_for("openai-chat", "gpt-4o")
SCENARIO = replace(DEPLOY_SCENARIO, session=SESSION)


def _text(role: str, text: str) -> Message:
    return Message(role, (TextPart(text),))  # type: ignore[arg-type]


def _view(*items: int | Message, session: Transcript = SESSION) -> Transcript:
    return session.with_messages(session.messages[i] if isinstance(i, int) else i for i in items)


def _turn(
    view: Transcript, *, session: Transcript = SESSION, scenario: Scenario = SCENARIO, turn: int = 0
) -> TurnOutcome:
    return assembled_turn(
        session, view, turn=turn, counter=COUNTER, ledger=scenario.ledger, memory=scenario.memory
    )


def _outcome(*turns: TurnOutcome, budget: int = 5000) -> CaseOutcome:
    return CaseOutcome("openai-chat", None, budget, COUNTER.name, turns)


def _check(
    check_id: str, *turns: TurnOutcome, scenario: Scenario = SCENARIO, budget: int = 5000
) -> tuple[str, str]:
    (result,) = run_checks(scenario, _outcome(*turns, budget=budget), [REGISTRY[check_id]])
    return result.status, result.message


def _one(check_id: str, view: Transcript, **kw: Any) -> tuple[str, str]:
    scenario = kw.pop("scenario", SCENARIO)
    session = kw.pop("session", SESSION)
    return _check(
        check_id, _turn(view, session=session, scenario=scenario), scenario=scenario, **kw
    )


ALL = tuple(range(len(M)))


# -- what a failure quotes ---------------------------------------------------------------------------


def test_a_lost_system_text_and_a_dropped_goal_are_quoted_to_sixty_characters() -> None:
    system = "S" * 59 + "ystem prompt"
    goal = "G" * 59 + "oal of the session"
    session = SESSION.with_messages([_text("system", system), _text("user", goal), *M[2:]])
    view = _view(*range(2, len(M)), session=session)
    status, message = _one("system_kept", view, session=session)
    assert (status, message) == (
        "fail",
        f"session messages[0] (system) {system[:60]!r} is not in the view",
    )
    status, message = _one("first_user_goal_pinned", view, session=session)
    assert message == (
        f"session messages[1] (user) {goal[:60]!r} is pinned but missing from the view"
    )


# -- ledger_pinned and ledger_in_summary ------------------------------------------------------------


def test_a_kept_result_keeps_its_side_effect_even_when_its_text_does_not_quote_the_ledger() -> None:
    # "posted" carries neither the idempotency key nor the message id: the kept result itself is
    # the fact, no ledger note is needed while it is in the view.
    assert _one("ledger_pinned", _view(*ALL)) == ("pass", "")


def test_a_dropped_ring_is_not_kept_by_an_older_ring_that_is() -> None:
    scenario = replace(SCENARIO, ledger=(RESTART,))
    status, message = _one("ledger_pinned", _view(0, 1, 2, 3, 4, 5, 8, 9), scenario=scenario)
    assert status == "fail"
    assert message == (
        "ledger entry restart_pod call call_c: restart-42, pod-7f9c is in no kept result, pinned "
        "ledger note or summary"
    )


def test_a_ledger_entry_whose_call_the_session_no_longer_holds_must_be_noted() -> None:
    # An earlier compaction removed the call: only a note (or a summary) can keep the fact.
    gone = {"tool": "refund", "call_id": "call_z", "status": "succeeded", "resource_id": "rf_1"}
    scenario = replace(SCENARIO, ledger=(NOTIFY, gone))
    status, message = _one("ledger_pinned", _view(*ALL), scenario=scenario)
    assert (status, message.split(":")[0]) == ("fail", "ledger entry refund call call_z")
    note = _text("system", "- tool=refund call_id=call_z resource_id=rf_1 status=succeeded")
    assert _one("ledger_pinned", _view(0, note, *ALL[1:]), scenario=scenario)[0] == "pass"


SUMMARY_OF_FIRST_RING = "Earlier: get_status showed checkout healthy; ops were told."


def test_a_summary_without_the_tool_name_is_missing_its_ledger_entry() -> None:
    # Key and resource id are there; what they belong to is not.
    summary = _text("user", "Earlier: get_status showed checkout healthy (notify-7781, msg_991).")
    status, message = _one("ledger_in_summary", _view(0, 1, summary, 6, 7, 8, 9))
    assert status == "fail"
    assert message.endswith("neither the summary nor a pinned ledger names 'notify_ops'")


def test_a_summary_missing_everything_names_the_tool_first() -> None:
    summary = _text("user", SUMMARY_OF_FIRST_RING)
    status, message = _one("ledger_in_summary", _view(0, 1, summary, 6, 7, 8, 9))
    assert status == "fail"
    assert message == (
        "call call_b (notify_ops) was summarized away; neither the summary nor a pinned ledger "
        "names 'notify_ops', 'notify-7781', 'msg_991'"
    )


def test_a_summary_of_plain_turns_next_to_a_kept_side_effect_ring_needs_no_ledger() -> None:
    summary = _text("user", "Earlier: status read, ops notified, the canary comes next.")
    view = _view(0, 1, 2, 3, summary, 6, 7, 8, 9)
    assert map_view(SESSION, view, ledger=(NOTIFY,)).links[4].status == "summary"
    assert _one("ledger_in_summary", view) == ("pass", "")


def test_a_later_turns_summary_is_judged_after_an_earlier_turn_without_one() -> None:
    summary = _text("user", SUMMARY_OF_FIRST_RING)
    first = _turn(_view(*ALL))
    second = _turn(_view(0, 1, summary, 6, 7, 8, 9), turn=1)
    status, message = _check("ledger_in_summary", first, second)
    assert status == "fail"
    assert message.startswith("turn 1: call call_b (notify_ops) was summarized away")


# -- order_preserved ----------------------------------------------------------------------------------


def _renamed_first_ring() -> tuple[Message, Message]:
    calls = tuple(replace(c, id=c.id.replace("call_", "id_")) for c in M[2].tool_calls)
    results = tuple(
        replace(r, call_id=r.call_id.replace("call_", "id_")) for r in M[3].tool_results
    )
    return Message("assistant", calls), Message("tool", results)


def test_renamed_ids_are_not_reordered_results() -> None:
    # The renaming is tool_payloads_intact's finding (must); the order is the session's.
    call, result = _renamed_first_ring()
    view = _view(0, 1, call, result, 4, 5, 6, 7, 8, 9)
    assert _one("order_preserved", view) == ("pass", "")
    assert _one("tool_payloads_intact", view)[0] == "fail"


def test_a_message_moved_after_a_summary_is_reordered() -> None:
    summary = _text("user", SUMMARY_OF_FIRST_RING)
    view = _view(0, 1, summary, 6, 7, 4, 9)
    identity = map_view(SESSION, view, ledger=(NOTIFY,))
    assert [link.status for link in identity.links][2] == "summary"
    status, message = _one("order_preserved", view)
    assert status == "fail"
    assert message == (
        "view messages[5] holds session messages[4] (assistant) but comes after session messages[7]"
    )


# A session that stored a parallel ring's results in another order than its calls (the order
# they completed in): results may be sent in the session's order or in the calls', no other.
OUT_OF_CALL_ORDER = transcript(
    {"role": "system", "text": "sys"},
    {"role": "user", "text": "check both"},
    {
        "role": "assistant",
        "calls": [
            {"id": "p1", "name": "get_status", "args": {}},
            {"id": "p2", "name": "get_metrics", "args": {}},
            {"id": "p3", "name": "get_logs", "args": {}},
        ],
    },
    {"role": "tool", "results": [{"id": "p2", "text": "p99=120ms"}]},  # 3
    {"role": "tool", "results": [{"id": "p3", "text": "no errors"}]},  # 4
    {"role": "tool", "results": [{"id": "p1", "text": "healthy"}]},  # 5
    {"role": "user", "text": "and now?"},
)
OM = OUT_OF_CALL_ORDER.messages


def test_results_may_be_sent_in_their_calls_order_where_the_session_stored_them_otherwise() -> None:
    def verdict(*items: int | Message) -> tuple[str, str]:
        view = _view(*items, session=OUT_OF_CALL_ORDER)
        return _one("order_preserved", view, session=OUT_OF_CALL_ORDER)

    assert verdict(0, 1, 2, 3, 4, 5, 6) == ("pass", "")  # the session's order
    assert verdict(0, 1, 2, 5, 3, 4, 6) == ("pass", "")  # the calls' order
    status, message = verdict(0, 1, 2, 4, 3, 5, 6)  # p3 before p2: neither order
    assert status == "fail"
    assert message.endswith("comes after session messages[4]")
    status, _ = verdict(0, 1, 2, 3, 4, 6, 5)  # a result after the next user turn: a move
    assert status == "fail"
    # p1 first, as the calls, then back to the session's p2, p3? No: p1, p3, p2 is neither order
    status, message = verdict(0, 1, 2, 5, 4, 3, 6)
    assert status == "fail"
    assert message.endswith("comes after session messages[4]")
    assert verdict(0, 1, 2, 3, 4, 6)[0] == "pass"  # a result left out, the rest in order
    # a message of results with a text beside them is a turn, not results alone: not moved back
    noted = OUT_OF_CALL_ORDER.with_messages(
        (*OM[:5], Message("tool", (*OM[5].parts, TextPart("see above"))), OM[6])
    )
    view = _view(0, 1, 2, 5, 3, 4, 6, session=noted)
    assert _one("order_preserved", view, session=noted)[0] == "fail"
    # one message of results (Anthropic, Gemini): the same two orders
    joined = OUT_OF_CALL_ORDER.with_messages(
        (*OM[:3], Message("tool", (*OM[3].parts, *OM[4].parts, *OM[5].parts)), OM[6])
    )
    j = joined.messages

    def in_one(*ids: str) -> tuple[str, str]:
        by_id = {p.call_id: p for p in j[3].tool_results}
        results = Message("tool", tuple(by_id[i] for i in ids))
        view = _view(0, 1, 2, results, 4, session=joined)
        return _one("order_preserved", view, session=joined)

    assert in_one("p2", "p3", "p1") == ("pass", "")
    assert in_one("p1", "p2", "p3") == ("pass", "")
    assert in_one("p3", "p2", "p1")[0] == "fail"


# -- reasoning_kept_with_ring ------------------------------------------------------------------------

REASONING = [{"origin": "openai-responses", "data": {"type": "reasoning", "id": "rs_1"}}]
THOUGHTFUL = transcript(
    {"role": "system", "text": "sys"},
    {"role": "user", "text": "go"},
    {"role": "assistant", "reasoning": REASONING, "calls": [{"id": "c1", "name": "f", "args": {}}]},
    {"role": "tool", "results": [{"id": "c1", "text": "ok"}]},
    {"role": "assistant", "reasoning": REASONING, "text": "All done."},
    {"role": "user", "text": "thanks"},
)
T = THOUGHTFUL.messages


def test_only_a_ring_of_the_current_turn_must_keep_its_reasoning() -> None:
    # The ring answers "go"; the session's latest user text is "thanks": an earlier turn's ring,
    # whose reasoning the providers do not ask for (Anthropic drops it itself)
    bare_call = Message("assistant", T[2].tool_calls)
    view = _view(0, 1, bare_call, 3, 4, 5, session=THOUGHTFUL)
    assert _one("reasoning_kept_with_ring", view, session=THOUGHTFUL) == ("pass", "")
    # the same ring in the current turn (no user text after it): its reasoning must go with it
    current = THOUGHTFUL.with_messages(T[:4])
    view = _view(0, 1, bare_call, 3, session=current)
    status, message = _one("reasoning_kept_with_ring", view, session=current)
    assert status == "fail"
    assert message.startswith("session messages[2] (assistant, ids c1): 1 reasoning artifact(s)")
    bare_text = _text("assistant", "All done.")
    view = _view(0, 1, 2, 3, bare_text, 5, session=THOUGHTFUL)
    assert _one("reasoning_kept_with_ring", view, session=THOUGHTFUL) == ("pass", "")
    # the turn is the user's: an assistant text after the ring does not start another one
    answered = THOUGHTFUL.with_messages(T[:5])
    view = _view(0, 1, bare_call, 3, 4, session=answered)
    assert _one("reasoning_kept_with_ring", view, session=answered)[0] == "fail"
    # the latest user text is found wherever it is (here one message before the last)
    replied = THOUGHTFUL.with_messages((*T[:4], T[5], _text("assistant", "ok")))
    view = _view(0, 1, bare_call, 3, 4, 5, session=replied)
    assert _one("reasoning_kept_with_ring", view, session=replied) == ("pass", "")


def test_an_earlier_turn_s_reasoning_is_not_sent_altered_and_deepseek_s_is_kept() -> None:
    altered = Message(
        "assistant",
        (replace(T[2].parts[0], data='{"id":"rs_2","type":"reasoning"}'), *T[2].parts[1:]),
    )
    view = _view(0, 1, altered, 3, 4, 5, session=THOUGHTFUL)
    assert _one("reasoning_kept_with_ring", view, session=THOUGHTFUL)[0] == "fail"
    # DeepSeek passes a tool-call turn's reasoning_content back in every later request (DS3)
    deepseek = [{"origin": "deepseek", "data": {"reasoning_content": "look at the logs"}}]
    session = transcript(
        {"role": "system", "text": "sys"},
        {"role": "user", "text": "go"},
        {
            "role": "assistant",
            "reasoning": deepseek,
            "calls": [{"id": "c1", "name": "f", "args": {}}],
        },
        {"role": "tool", "results": [{"id": "c1", "text": "ok"}]},
        {"role": "assistant", "text": "All done."},
        {"role": "user", "text": "thanks"},
    )
    bare = Message("assistant", session.messages[2].tool_calls)
    view = _view(0, 1, bare, 3, 4, 5, session=session)
    assert _one("reasoning_kept_with_ring", view, session=session)[0] == "fail"


def test_changed_arguments_are_no_reasoning_finding() -> None:
    changed = Message(
        "assistant", (T[2].parts[0], replace(T[2].tool_calls[0], arguments='{"x": 1}'))
    )
    view = _view(0, 1, changed, 3, 4, 5, session=THOUGHTFUL)
    assert _one("reasoning_kept_with_ring", view, session=THOUGHTFUL) == ("pass", "")
    assert _one("tool_payloads_intact", view, session=THOUGHTFUL)[0] == "fail"


def test_a_responses_reasoning_item_sent_inline_without_its_id_is_kept() -> None:
    # R5: with store false, items "cannot be referenced by id": send them inline or drop the
    # id. The item with its encrypted content and no id is the same artifact; its content
    # changed is not.
    item = {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "gAAAAB-ring"}
    session = transcript(
        {"role": "system", "text": "sys"},
        {"role": "user", "text": "go"},
        {
            "role": "assistant",
            "reasoning": [{"origin": "openai-responses", "data": item}],
            "calls": [{"id": "c1", "name": "f", "args": {}}],
        },
        {"role": "tool", "results": [{"id": "c1", "text": "ok"}]},
    )
    (reasoning, call) = session.messages[2].parts
    for data, status in (
        ({k: v for k, v in item.items() if k != "id"}, "pass"),
        ({**item, "id": "rs_2"}, "fail"),
        ({k: v for k, v in item.items() if k != "id"} | {"encrypted_content": "gAAAAB-x"}, "fail"),
    ):
        sent = Message("assistant", (replace(reasoning, data=json.dumps(data)), call))
        view = _view(0, 1, sent, 3, session=session)
        found = _one("reasoning_kept_with_ring", view, session=session)
        assert found[0] == status, (data, found)


# -- refuses_only_below_minimum ----------------------------------------------------------------------

SWEEP = replace(
    SCENARIO, expect=Expectation("either"), budget=replace(BASE.budget, default=(100, 5000))
)


def _refused(session: Transcript = SESSION, turn: int = 0) -> TurnOutcome:
    return replace(refused_turn(session, COUNTER), turn=turn)


def _allowed(scenario: Scenario = SWEEP) -> int:
    """The lowest budget at which a refusal counts as above the minimum (as the check says)."""
    message = _check("refuses_only_below_minimum", _refused(), scenario=scenario, budget=5000)[1]
    return int(message.split("a refusal is accepted below ")[1].split(":")[0])


def test_a_refusal_in_a_later_turn_above_the_minimum_fails() -> None:
    status, message = _check(
        "refuses_only_below_minimum", _turn(_view(*ALL)), _refused(turn=1), scenario=SWEEP
    )
    assert status == "fail"
    assert message.startswith("turn 1: the protected minimum costs ")


BROKEN = SESSION.with_messages([*M[:3], *M[4:]])  # the first ring's results are missing


def test_a_broken_session_may_be_refused_at_any_budget() -> None:
    assert _check("refuses_only_below_minimum", _refused(BROKEN), scenario=SWEEP) == ("pass", "")


def test_a_refused_broken_turn_does_not_excuse_a_later_refusal_above_the_minimum() -> None:
    status, message = _check(
        "refuses_only_below_minimum", _refused(BROKEN), _refused(turn=1), scenario=SWEEP
    )
    assert status == "fail"
    assert message.startswith("turn 1: the protected minimum costs ")


def test_a_case_expecting_an_assembly_refused_at_the_allowed_budget_is_above_the_minimum() -> None:
    expected = replace(SWEEP, expect=Expectation("assembled"))
    allowed = _allowed(expected)
    (result,) = run_checks(
        expected, _outcome(_refused(), budget=allowed), [REGISTRY["refuses_only_below_minimum"]]
    )
    assert result.title == "refused above the protected minimum"
    (below,) = run_checks(
        expected, _outcome(_refused(), budget=allowed - 1), [REGISTRY["refuses_only_below_minimum"]]
    )
    assert below.title == "refused where the scenario's knobs allow an assembly"


# -- summary_quality: no summary of a summary ---------------------------------------------------------

OLD_SUMMARY = "Earlier summary: the build was fixed by pinning setuptools."
SUMMARIZED = transcript(
    {"role": "system", "text": "You are a build bot."},  # 0
    {"role": "user", "text": "GOAL: keep the build green."},  # 1
    {"role": "user", "summary": OLD_SUMMARY},  # 2
    {"role": "assistant", "calls": [{"id": "c1", "name": "run_tests", "args": {}}]},  # 3
    {"role": "tool", "results": [{"id": "c1", "text": "412 passed"}]},  # 4
    {"role": "assistant", "text": "Tests pass."},  # 5
    {"role": "user", "text": "Ship it."},  # 6
)
S = SUMMARIZED.messages


def _summary(text: str) -> Message:
    return Message("user", (SummaryPart(text),))


def test_a_summary_that_wraps_a_dropped_summary_whole_is_a_summary_of_a_summary() -> None:
    wrapped = _summary(f"{OLD_SUMMARY} Then run_tests passed (412).")
    view = _view(0, 1, wrapped, 6, session=SUMMARIZED)
    status, message = _one("summary_quality", view, session=SUMMARIZED)
    assert status == "fail"
    assert message == (
        "view messages[2] wraps the whole of the earlier summary session messages[2] (user)"
    )


def test_a_summary_that_quotes_a_kept_summary_or_none_is_no_summary_of_a_summary() -> None:
    quoting = _summary(f"{OLD_SUMMARY} Then run_tests passed (412).")
    kept = _view(0, 1, 2, quoting, 6, session=SUMMARIZED)
    assert _one("summary_quality", kept, session=SUMMARIZED) == ("pass", "")
    fresh = _summary("run_tests passed (412); the build is green.")
    replaced = _view(0, 1, fresh, 6, session=SUMMARIZED)
    assert _one("summary_quality", replaced, session=SUMMARIZED) == ("pass", "")


# -- summary_used and tools_dropped ---------------------------------------------------------------------

USES_SUMMARY = replace(SCENARIO, expect=Expectation("assembled", checks=("summary_used",)))


def _minimum() -> int:
    """The protected minimum as summary_used states it (below it deletion alone cannot fit)."""
    _, message = _one("summary_used", _view(0, 1, 6, 7, 8, 9), scenario=USES_SUMMARY, budget=10)
    return int(message.split("the protected minimum costs ")[1].split(" ")[0])


def test_deletion_alone_passes_summary_used_at_exactly_the_minimum() -> None:
    minimum = _minimum()
    deleted = _view(0, 1, 6, 7, 8, 9)
    assert _one("summary_used", deleted, scenario=USES_SUMMARY, budget=minimum)[0] == "pass"
    status, message = _one("summary_used", deleted, scenario=USES_SUMMARY, budget=minimum - 1)
    assert status == "fail"
    assert message.endswith("the view has 6 messages and no summary")


def test_a_summary_below_the_minimum_passes_summary_used() -> None:
    summary = _text("user", SUMMARY_OF_FIRST_RING)
    view = _view(0, 1, summary, 6, 7, 8, 9)
    assert _one("summary_used", view, scenario=USES_SUMMARY, budget=10) == ("pass", "")


def test_tools_dropped_passes_a_view_without_tools_and_a_refused_case() -> None:
    scenario = replace(SCENARIO, expect=Expectation("assembled", checks=("tools_dropped",)))
    without = replace(SESSION, tools=())
    assert _one("tools_dropped", without, scenario=scenario) == ("pass", "")
    assert _check("tools_dropped", _refused(), scenario=scenario) == ("pass", "")
    status, message = _one("tools_dropped", SESSION, scenario=scenario)
    assert (status, message.split(";")[0]) == (
        "fail",
        "the scenario only fits without (some of) its tool schemas",
    )


def test_tools_dropped_passes_a_view_that_keeps_a_schema_the_budget_still_holds() -> None:
    # The escalation drops schemas before the request is refused: as many as the budget needs
    # (a read-only tool kept) is that escalation too; one schema left out of two is enough here,
    # and none left out is not.
    lookup = ToolSpec("get_incident", "Read an incident.", '{"type":"object"}')
    session = replace(SESSION, tools=(*SESSION.tools, lookup))
    scenario = replace(SCENARIO, expect=Expectation("assembled", checks=("tools_dropped",)))
    partial = replace(session, tools=(lookup,))
    assert _one("tools_dropped", partial, scenario=scenario, session=session) == ("pass", "")
    assert _one("tools_dropped", session, scenario=scenario, session=session)[0] == "fail"


# -- the middle: rings removed oldest first, error results kept, plain turns first in first out -------

RINGS = transcript(
    {"role": "system", "text": "You are the ops bot."},  # 0
    {"role": "user", "text": "GOAL: find the slow query."},  # 1
    {"role": "assistant", "calls": [{"id": "c1", "name": "query_log", "args": {"n": 1}}]},  # 2
    {"role": "tool", "results": [{"id": "c1", "text": "timed out", "is_error": True}]},  # 3
    {"role": "assistant", "calls": [{"id": "c2", "name": "query_log", "args": {"n": 2}}]},  # 4
    {"role": "tool", "results": [{"id": "c2", "text": "select 1: 3 ms"}]},  # 5
    {"role": "assistant", "calls": [{"id": "c3", "name": "query_log", "args": {"n": 3}}]},  # 6
    {"role": "tool", "results": [{"id": "c3", "text": "select 2: 3 ms"}]},  # 7
    {"role": "assistant", "calls": [{"id": "c4", "name": "query_log", "args": {"n": 4}}]},  # 8
    {"role": "tool", "results": [{"id": "c4", "text": "select 3: 900 ms"}]},  # 9
    {"role": "user", "text": "Which one is slow?"},  # 10
)


def _middle(check_id: str, *keep: int, recent_tool_rings: int = 1, **knobs: int) -> tuple[str, str]:
    scenario = replace(
        SCENARIO,
        session=RINGS,
        ledger=(),
        config={"recent_tool_rings": recent_tool_rings, "recent_user_turns": 1, **knobs},
        expect=Expectation("assembled", checks=(check_id,)),
    )
    return _one(check_id, _view(*keep, session=RINGS), session=RINGS, scenario=scenario)


def test_removing_every_middle_ring_passes_oldest_rings_first() -> None:
    # Rings c2 and c3 are the successful middle (c1 failed, c4 is the recent ring).
    assert _middle("oldest_rings_first", 0, 1, 2, 3, 8, 9, 10) == ("pass", "")
    assert _middle("oldest_rings_first", 0, 1, 2, 3, 6, 7, 8, 9, 10) == ("pass", "")


def test_keeping_every_middle_ring_counts_only_the_middle() -> None:
    everything = tuple(range(len(RINGS.messages)))
    assert _middle("oldest_rings_first", *everything) == (
        "fail",
        "all 2 middle rings were kept (none dropped, cleared or summarized)",
    )
    # No recent ring protected: every successful ring is middle.
    assert _middle("oldest_rings_first", *everything, recent_tool_rings=0)[1].startswith(
        "all 3 middle rings"
    )


def test_a_kept_middle_error_ring_passes_and_a_dropped_one_fails() -> None:
    cap = {"keep_middle_error_results": 5}
    assert _middle("middle_error_results_kept", 0, 1, 2, 3, 8, 9, 10, **cap) == ("pass", "")
    status, message = _middle("middle_error_results_kept", 0, 1, 8, 9, 10, **cap)
    assert status == "fail"
    assert message.startswith("0 of 1 middle error rings kept (cap 5)")
    # A cap the scenario does not state is the reference assembler's default, which the
    # plug-in is never told: nothing to judge.
    assert _middle("middle_error_results_kept", 0, 1, 8, 9, 10) == ("pass", "")


PLAIN = transcript(
    {"role": "system", "text": "You are a helpful bot."},  # 0
    {"role": "user", "text": "GOAL: plan the offsite."},  # 1
    {"role": "assistant", "text": "Where would you like to go?"},  # 2
    {"role": "user", "text": "Somewhere near the sea."},  # 3
    {"role": "assistant", "text": "Lisbon or Porto, then."},  # 4
    {"role": "assistant", "calls": [{"id": "c1", "name": "weather", "args": {"city": "Porto"}}]},
    {"role": "tool", "results": [{"id": "c1", "text": "sunny"}]},  # 6
    {"role": "user", "text": "Porto it is."},  # 7
    {"role": "assistant", "text": "Booked."},  # 8
)


def _fifo(*keep: int, **config: Any) -> tuple[str, str]:
    scenario = replace(
        SCENARIO,
        session=PLAIN,
        ledger=(),
        config={"recent_tool_rings": 1, "recent_user_turns": 1} | config,
        expect=Expectation("assembled", checks=("plain_turns_fifo",)),
    )
    return _one("plain_turns_fifo", _view(*keep, session=PLAIN), session=PLAIN, scenario=scenario)


def test_dropping_the_oldest_plain_turn_first_passes() -> None:
    assert _fifo(0, 1, 3, 4, 5, 6, 7, 8) == ("pass", "")
    assert _fifo(0, 1, 4, 5, 6, 7, 8) == ("pass", "")
    status, message = _fifo(0, 1, 2, 4, 5, 6, 7, 8)
    assert status == "fail"
    assert message == (
        "session messages[3] (user) dropped while the older session messages[2] (assistant) "
        "was kept"
    )


def test_the_middle_plain_turns_are_those_before_the_recent_user_turns_but_the_goal() -> None:
    everything = tuple(range(len(PLAIN.messages)))
    # Messages 2, 3 and 4: the goal is pinned, the ring is no plain turn, 7 on are recent.
    assert _fifo(*everything) == ("fail", "all 3 middle plain turns kept")
    # An unpinned goal is middle too; with no recent user turn, so is everything after it.
    assert _fifo(*everything, pin=[]) == ("fail", "all 4 middle plain turns kept")
    assert _fifo(*everything, recent_user_turns=0) == ("fail", "all 5 middle plain turns kept")


def test_with_no_more_user_turns_than_protected_no_plain_turn_is_middle() -> None:
    # Three user turns, all of them recent: nothing is left to drop first in, first out.
    everything = tuple(range(len(PLAIN.messages)))
    assert _fifo(*everything, recent_user_turns=3) == ("pass", "")
    assert _fifo(*everything, recent_user_turns=4) == ("pass", "")


# -- latest_user_kept and the ledger notes a summary may lean on ----------------------------------------

CHAT = transcript(
    {"role": "system", "text": "You are a helpful bot."},  # 0
    {"role": "user", "text": "GOAL: plan the offsite."},  # 1
    {"role": "assistant", "text": "Where to?"},  # 2
    {"role": "user", "text": "Somewhere near the sea."},  # 3
    {"role": "assistant", "text": "Lisbon or Porto?"},  # 4
    {"role": "user", "text": "Porto."},  # 5
    {"role": "assistant", "text": "Booked Porto."},  # 6
)


def test_the_latest_user_turn_is_the_last_user_message_even_when_the_assistant_spoke_last() -> None:
    assert _one("latest_user_kept", _view(0, 1, 2, 3, 4, 5, session=CHAT), session=CHAT) == (
        "pass",
        "",
    )
    status, message = _one("latest_user_kept", _view(0, 1, 2, 3, 4, 6, session=CHAT), session=CHAT)
    assert (status, message) == ("fail", "session messages[5] (user) is dropped in the view")


def test_every_check_passes_an_empty_conversation_sent_back_empty() -> None:
    empty = replace(SESSION.with_messages([]), tools=())
    scenario = replace(
        SCENARIO,
        session=empty,
        ledger=(),
        expect=Expectation("assembled", checks=tuple(REGISTRY)),
    )
    outcome = _outcome(_turn(empty, session=empty, scenario=scenario))
    results = run_checks(scenario, outcome, list(REGISTRY.values()))
    assert {(r.id, r.status) for r in results} == {(c, "pass") for c in REGISTRY}


LEDGER_NOTE = "- tool=notify_ops idempotency_key=notify-7781 resource_id=msg_991"


def test_a_ledger_note_sent_as_a_user_message_or_a_system_block_backs_a_summary() -> None:
    summary = _text("user", "Earlier: get_status showed checkout healthy; notify_ops was called.")
    as_user = _view(0, _text("user", LEDGER_NOTE), 1, summary, 6, 7, 8, 9)
    assert map_view(SESSION, as_user, ledger=(NOTIFY,)).links[1].status == "ledger"
    assert _one("ledger_in_summary", as_user) == ("pass", "")
    # Anthropic's one system field: the session's system text and the note as two blocks.
    block = Message("system", (*M[0].parts, TextPart(LEDGER_NOTE)))
    as_block = _view(block, 1, summary, 6, 7, 8, 9)
    assert map_view(SESSION, as_block, ledger=(NOTIFY,)).links[0].status == "merged"
    assert _one("ledger_in_summary", as_block) == ("pass", "")


def test_a_ledger_quoted_by_a_kept_assistant_text_is_no_pinned_ledger() -> None:
    summary = _text("user", "Earlier: get_status showed checkout healthy; notify_ops was called.")
    chatter = _text("assistant", f"For the record: {LEDGER_NOTE}")
    session = SESSION.with_messages([*M, chatter])
    view = _view(0, 1, summary, 6, 7, 8, 9, 10, session=session)
    status, message = _one("ledger_in_summary", view, session=session)
    assert status == "fail"
    assert message.endswith("names 'notify-7781', 'msg_991'")


def test_a_ring_with_one_of_its_results_cleared_still_carries_its_content() -> None:
    # oldest_rings_first counts a ring as removed when every result is cleared, not one of two.
    scenario = replace(SCENARIO, expect=Expectation("assembled", checks=("oldest_rings_first",)))
    (a, b) = M[3].tool_results
    placeholder = (TextPart("[result cleared]"),)
    one = Message("tool", (replace(a, content=placeholder), b))
    both = Message("tool", (replace(a, content=placeholder), replace(b, content=placeholder)))
    status, message = _one("oldest_rings_first", _view(0, 1, 2, one, *ALL[4:]), scenario=scenario)
    assert (status, message) == (
        "fail",
        "all 1 middle rings were kept (none dropped, cleared or summarized)",
    )
    assert _one("oldest_rings_first", _view(0, 1, 2, both, *ALL[4:]), scenario=scenario) == (
        "pass",
        "",
    )


# -- recent_rings_kept: a recent ring's results cleared is the ring removed -------------------------


def _cleared(index: int, session: Transcript = RINGS) -> Message:
    message = session.messages[index]
    parts = tuple(
        replace(p, content=(TextPart("[old result cleared]"),)) for p in message.tool_results
    )
    return Message(message.role, parts)


def test_a_recent_ring_with_its_results_cleared_fails_recent_rings_kept() -> None:
    ring = RINGS.messages[8].id  # a ring is named by its call message
    status, message = _middle("recent_rings_kept", *range(9), _cleared(9), 10)
    assert status == "fail"
    assert message == (
        f"ring {ring} (messages[8:10], calls c4): tool result c4 cleared ('[old result cleared]')"
    )
    # With two recent rings, clearing the older of them is as much a removal.
    kept = (*range(7), _cleared(7), 8, 9, 10)
    assert _middle("recent_rings_kept", *kept, recent_tool_rings=2)[0] == "fail"


def test_older_rings_may_lose_their_results() -> None:
    view = (0, 1, 2, _cleared(3), 4, _cleared(5), 6, _cleared(7), 8, 9, 10)
    assert _middle("recent_rings_kept", *view) == ("pass", "")
    assert _middle("recent_rings_kept", *view[:7], 7, 8, 9, 10, recent_tool_rings=2) == (
        "pass",
        "",
    )


# -- settings_kept -------------------------------------------------------------------------------


def test_settings_kept_names_a_setting_left_out_or_changed_and_allows_what_it_says() -> None:
    from conformance.checks.should import settings_edits

    given = (
        ("max_tokens", "512"),
        ("parallel_tool_calls", "false"),
        ("temperature", "0.2"),
        ("tool_choice", '"required"'),
    )
    session = replace(SESSION, params=given)

    def edits(*params: tuple[str, str], view: Transcript = session) -> list[str]:
        return settings_edits("openai-chat", session, replace(view, params=tuple(sorted(params))))

    fair = [
        given,
        # the output cap lowered, or under its other name; streaming asked for; a shape's own
        # record of wire content; the same value written otherwise (0.2 as 0.20)
        (("max_tokens", "256"), *given[1:]),
        (("max_completion_tokens", "512"), *given[1:]),
        (*given, ("stream", "true"), ("stream_options", '{"include_usage":true}')),
        (*given, ("openai-chat.extras", "{}")),
        (*given[:2], ("temperature", "0.20"), given[3]),
        # bookkeeping keys added: caching, storage, tracing
        (*given, ("prompt_cache_key", '"agent-7"'), ("store", "false"), ("metadata", "{}")),
    ]
    for params in fair:
        assert edits(*params) == [], params
    # a setting added that changes what the model does
    assert edits(*given, ("seed", "7")) == ["seed added: 7"]
    assert edits(*given, ("logit_bias", '{"1750":-100}')) == ['logit_bias added: {"1750":-100}']
    assert edits(*given[:2], given[3]) == ["temperature left out (was 0.2)"]
    assert edits(*given[:3], ("tool_choice", '"auto"')) == [
        'tool_choice changed: "required" -> "auto"'
    ]
    assert edits(("max_tokens", "4096"), *given[1:]) == ["output cap raised: 512 -> 4096"]
    assert edits(*given[1:]) == ["output cap left out (was 512)"]
    # Tool settings may go with the tools: fewer tools offered, a choice among them may change.
    toolless = replace(session, tools=())
    assert edits(given[0], given[2], view=toolless) == []
    assert edits(given[0], given[2], view=session) == [
        "parallel_tool_calls left out (was false)",
        'tool_choice left out (was "required")',
    ]
    # A container of options (Gemini's generationConfig) is compared member by member.
    gemini = replace(session, params=(("generationConfig", '{"maxOutputTokens":512,"topK":4}'),))
    lowered = (("generationConfig", '{"maxOutputTokens":100,"topK":4}'),)
    assert settings_edits("gemini", gemini, replace(gemini, params=lowered)) == []
    other = (("generationConfig", '{"maxOutputTokens":512,"topK":40}'),)
    assert settings_edits("gemini", gemini, replace(gemini, params=other)) == [
        "generationConfig.topK changed: 4 -> 40"
    ]
    # The model is a setting too.
    assert settings_edits(
        "openai-chat", replace(session, model="gpt-4o"), replace(session, model="gpt-4o-mini")
    )[0] == ("model changed: gpt-4o -> gpt-4o-mini")


def test_settings_kept_takes_a_tool_choice_that_obliges_the_same_call() -> None:
    from conformance.checks.should import settings_edits

    tools = (ToolSpec("fetch"), ToolSpec("wipe"))
    named = '{"function":{"name":"%s"},"type":"function"}'
    allowed = '{"allowed_tools":{"mode":"required","tools":[%s]},"type":"allowed_tools"}'

    def edits(was: str, now: str, kept: tuple[ToolSpec, ...] = tools, shape: str = "openai-chat"):
        key = "toolConfig" if shape in ("gemini", "bedrock-converse") else "tool_choice"
        session = replace(SESSION, tools=tools, params=((key, was),))
        return settings_edits(shape, session, replace(session, tools=kept, params=((key, now),)))

    every = allowed % f"{named % 'fetch'},{named % 'wipe'}"
    # "any tool" is every tool offered by name; one tool left is that tool
    assert edits('"required"', every) == []
    assert edits('"required"', named % "fetch", kept=(ToolSpec("fetch"),)) == []
    assert edits(every, '"required"') == []
    # a choice narrowed only by the tools dropped; a parallel switch at its default
    assert edits(every, named % "fetch", kept=(ToolSpec("fetch"),)) == []
    anthropic = '{"disable_parallel_tool_use":false,"type":"any"}'
    assert edits('{"type":"any"}', anthropic, shape="anthropic-messages") == []
    gemini = '{"functionCallingConfig":{"allowedFunctionNames":["fetch","wipe"],"mode":"ANY"}}'
    assert edits('{"functionCallingConfig":{"mode":"ANY"}}', gemini, shape="gemini") == []
    # the rest of Gemini's toolConfig is the session's: a member beside the choice changed is a
    # change
    where = ',"retrievalConfig":{"languageCode":"%s"}}'
    assert edits(gemini[:-1] + where % "en", gemini[:-1] + where % "de", shape="gemini") != []
    # narrowed while the other tool is still offered, the parallel switch turned on, another
    # mode: changes
    assert edits('"required"', named % "wipe") != []
    on = '{"disable_parallel_tool_use":true,"type":"any"}'
    assert edits('{"type":"any"}', on, shape="anthropic-messages") != []
    assert edits('"required"', '"auto"') != []


def test_settings_kept_names_a_setting_added_but_a_default_choice_or_the_cap() -> None:
    from conformance.checks.should import settings_edits

    def added(shape: str, was: dict[str, str], now: dict[str, str]) -> list[str]:
        session = replace(SESSION, tools=(ToolSpec("fetch"),), params=tuple(sorted(was.items())))
        return settings_edits(shape, session, replace(session, params=tuple(sorted(now.items()))))

    # a tool choice at its default, the output cap, an Anthropic cache switch: nothing new
    assert added("openai-chat", {}, {"tool_choice": '"auto"', "parallel_tool_calls": "true"}) == []
    # null, empty, or the provider's documented default: what a serializer writes for it
    quiet = {"stop": "null", "temperature": "null", "n": "1", "logprobs": "false", "seed": "null"}
    assert added("openai-chat", {}, {**quiet, "response_format": '{"type":"text"}'}) == []
    assert (
        added("openai-responses", {}, {"truncation": '"disabled"', "max_tool_calls": "null"}) == []
    )
    thinking = {"thinking": '{"type":"disabled"}', "stop_sequences": "[]"}
    auto = '{"disable_parallel_tool_use":false,"type":"auto"}'
    assert added("anthropic-messages", {}, {**thinking, "tool_choice": auto}) == []
    defaults = '{"candidateCount":1,"responseMimeType":"text/plain","stopSequences":[]}'
    assert added("gemini", {}, {"generationConfig": defaults, "safetySettings": "[]"}) == []
    assert added("bedrock-converse", {}, {"performanceConfig": '{"latency":"standard"}'}) == []
    assert (
        added("anthropic-messages", {}, {"max_tokens": "512", "tool_choice": '{"type":"auto"}'})
        == []
    )
    gemini_cap = {"generationConfig": '{"maxOutputTokens":100}'}
    assert added("gemini", {}, gemini_cap) == []
    # what changes the model's answers: a stop sequence in the container, safety settings
    # turned off, a server-side truncation, a reasoning effort
    stop = {"generationConfig": '{"maxOutputTokens":100,"stopSequences":[" not "]}'}
    assert added("gemini", gemini_cap, stop) == ['generationConfig.stopSequences added: [" not "]']
    off = '[{"category":"HARM_CATEGORY_DANGEROUS_CONTENT","threshold":"BLOCK_NONE"}]'
    assert added("gemini", {}, {"safetySettings": off})[0].startswith("safetySettings added")
    assert added("openai-responses", {}, {"truncation": '"auto"'}) == ['truncation added: "auto"']
    effort = {"reasoning": '{"effort":"minimal"}'}
    assert added("openai-responses", {}, effort) == ['reasoning added: {"effort":"minimal"}']


def test_settings_kept_fails_with_the_settings_named() -> None:
    session = replace(SESSION, params=(("temperature", "0.2"), ("tool_choice", '"required"')))
    status, message = _one("settings_kept", replace(session, params=()), session=session)
    assert status == "fail"
    assert message == 'temperature left out (was 0.2); tool_choice left out (was "required")'
    assert _one("settings_kept", session, session=session)[0] == "pass"


def test_settings_kept_allows_a_budget_lowered_with_the_cap_and_either_spelling() -> None:
    from conformance.checks.should import settings_edits
    from reference_impl.shapes import get_shape

    def edits(shape: str, session: dict[str, Any], view: dict[str, Any]) -> list[str]:
        adapter = get_shape(shape)
        return settings_edits(shape, adapter.parse_request(session), adapter.parse_request(view))

    user = [{"role": "user", "content": "hi"}]
    claude = {"model": "claude-sonnet-4-5", "messages": user}
    thinking = {"type": "enabled", "budget_tokens": 10000}
    session = {**claude, "max_tokens": 16000, "thinking": thinking}
    lowered = {**claude, "max_tokens": 4096, "thinking": {**thinking, "budget_tokens": 2048}}
    assert edits("anthropic-messages", session, lowered) == []
    raised = {**session, "thinking": {**thinking, "budget_tokens": 12000}}
    was, now = (
        '{"budget_tokens":10000,"type":"enabled"}',
        '{"budget_tokens":12000,"type":"enabled"}',
    )
    assert edits("anthropic-messages", session, raised) == [f"thinking changed: {was} -> {now}"]
    # Gemini takes snake_case and camelCase alike
    contents = [{"role": "user", "parts": [{"text": "hi"}]}]
    snake = {"contents": contents, "generation_config": {"max_output_tokens": 1000, "top_k": 4}}
    camel = {"contents": contents, "generationConfig": {"maxOutputTokens": 500, "topK": 4}}
    assert edits("gemini", snake, camel) == []
    # a choice of a server tool goes with it; a choice changed with a tool dropped is a change
    web = {"type": "web_search_20250305", "name": "web_search"}
    lookup = {"name": "lookup", "input_schema": {"type": "object"}}
    tools = {**claude, "max_tokens": 100, "tools": [lookup, web]}
    chosen = {**tools, "tool_choice": {"type": "tool", "name": "web_search"}}
    assert edits("anthropic-messages", chosen, {**tools, "tools": [lookup]}) == []
    functions = [
        {"type": "function", "function": {"name": n, "parameters": {"type": "object"}}}
        for n in ("a", "b")
    ]
    chat = {"model": "gpt-4o", "messages": user, "tools": functions, "tool_choice": "none"}
    one = {**chat, "tools": functions[:1]}
    assert edits("openai-chat", chat, {**one, "tool_choice": "required"}) == [
        'tool_choice changed: "none" -> "required"'
    ]
    assert edits("openai-chat", chat, {k: v for k, v in one.items() if k != "tool_choice"}) == [
        'tool_choice left out (was "none")'
    ]
    # the model left out where the body carries it; the cap raised under its other name
    assert edits("openai-chat", chat, {k: v for k, v in chat.items() if k != "model"}) == [
        "model left out (was gpt-4o)"
    ]
    capped = {**chat, "max_tokens": 512}
    assert edits("openai-chat", capped, {**capped, "max_completion_tokens": 100000}) == [
        "output cap raised: 512 -> 100000"
    ]


def test_settings_kept_judges_every_setting_after_a_transport_one_and_an_equal_budget() -> None:
    from conformance.checks.should import settings_edits

    session = replace(SESSION, params=(("stream", "true"), ("temperature", "0.2")))
    view = replace(SESSION, params=(("stream", "false"), ("temperature", "1")))
    assert settings_edits("openai-chat", session, view) == ["temperature changed: 0.2 -> 1"]
    thinking = '{"budget_tokens":1024,"type":"enabled"}'
    given = replace(SESSION, params=(("max_tokens", "4096"), ("thinking", thinking)))
    lowered = replace(SESSION, params=(("max_tokens", "2048"), ("thinking", thinking)))
    assert settings_edits("anthropic-messages", given, lowered) == []
