"""Checks and the content-identity map: classification, failure messages, crashing checks."""

from __future__ import annotations

from dataclasses import replace

from checks_support import assembled_outcome, transcript
from deploy_session import SINGLE_TOOL
from hypothesis import given, settings
from hypothesis import strategies as st

from conformance.checks import REGISTRY, CaseOutcome, checks_for, run_checks
from conformance.checks.registry import Failure
from conformance.identity import map_view
from conformance.providers.verdict import Verdict
from conformance.scenarios import load_corpus
from reference_impl.transcript import Message, TextPart, Transcript

SESSION = transcript(
    {"role": "system", "text": "sys"},
    {"role": "user", "text": "goal"},
    {"role": "assistant", "calls": [{"id": "c1", "name": "f"}, {"id": "c2", "name": "f"}]},
    {"role": "tool", "results": [{"id": "c1", "text": "r1"}, {"id": "c2", "text": "r2"}]},
    {"role": "assistant", "text": "done"},
    {"role": "user", "text": "next"},
)


@settings(max_examples=80, deadline=None)
@given(st.lists(st.booleans(), min_size=len(SESSION), max_size=len(SESSION)))
def test_a_subsequence_is_kept_and_dropped_exactly(keep: list[bool]) -> None:
    view = SESSION.with_messages(
        m.with_id("") for m, k in zip(SESSION.messages, keep, strict=True) if k
    )
    identity = map_view(SESSION, view)
    assert [s != "dropped" for s in identity.sources] == keep
    assert all(link.status == "kept" for link in identity.links)


def test_changed_results_are_modified_and_new_text_is_invented() -> None:
    reordered = transcript(
        {"role": "tool", "results": [{"id": "c2", "text": "r2"}, {"id": "c1", "text": "r1"}]}
    )
    invented = Message("assistant", (TextPart("I made this up"),))
    view = SESSION.with_messages(
        [
            *(m.with_id("") for m in SESSION.messages[:3]),
            reordered.messages[0].with_id(""),
            invented.with_id("x"),
        ]
    )
    identity = map_view(SESSION, view)
    assert [link.status for link in identity.links] == [
        "kept",
        "kept",
        "kept",
        "modified",
        "invented",
    ]
    assert identity.sources[3] == "modified"
    assert identity.sources[5] == "dropped"


def _outcome(view: Transcript, tokens: int = 10, budget: int = 100) -> CaseOutcome:
    return assembled_outcome(SESSION, view, budget=budget, tokens=tokens)


SCENARIO = SINGLE_TOOL


def test_failures_name_indices_and_ids() -> None:
    view = SESSION.with_messages(m.with_id("") for i, m in enumerate(SESSION.messages) if i != 3)
    results = {r.id: r for r in run_checks(SCENARIO, _outcome(view), checks_for(SCENARIO))}
    assert results["whole_rings"].status == "fail"
    assert "calls c1,c2" in results["whole_rings"].message
    assert "dropped messages[3]" in results["whole_rings"].message
    assert results["system_kept"].status == "pass"


def test_within_budget_states_the_counter() -> None:
    results = {
        r.id: r for r in run_checks(SCENARIO, _outcome(SESSION, tokens=120), checks_for(SCENARIO))
    }
    assert results["within_budget"].status == "fail"
    assert (
        results["within_budget"].message == "120 tokens by test-counter > budget 100 (over by 20)"
    )


def test_provider_rejection_states_provenance() -> None:
    outcome = _outcome(SESSION)
    rejected = Verdict(
        "reject",
        400,
        provenance="recorded-emulated",
        rule="C1",
        evidence="recorded",
        error={"error": {"message": "tool_call_ids did not have response messages: c1"}},
    )
    outcome = replace(outcome, turns=(replace(outcome.turns[0], verdict=rejected),))
    (result,) = run_checks(SCENARIO, outcome, [REGISTRY["provider_valid"]])
    assert result.status == "fail"
    assert "rule C1" in result.title
    assert "provenance recorded-emulated" in result.message


def test_a_crashing_check_is_an_error_result_and_the_others_still_run() -> None:
    from conformance.checks.registry import CheckSpec

    def broken(scenario, outcome):  # type: ignore[no-untyped-def]
        raise KeyError("oops")

    spec = CheckSpec("broken", "should", broken, True, "broken")
    results = run_checks(SCENARIO, _outcome(SESSION), [spec, REGISTRY["system_kept"]])
    assert [(r.id, r.status) for r in results] == [("broken", "error"), ("system_kept", "pass")]
    assert results[0].message == "KeyError: 'oops'"


def test_failure_is_an_assertion_error() -> None:
    failure = Failure("title", "message")
    assert isinstance(failure, AssertionError)
    assert str(failure) == "title: message"


def test_opt_in_checks_run_only_where_named() -> None:
    default_ids = {c.id for c in checks_for(SCENARIO)}
    assert "summary_used" not in default_ids
    assert "provider_valid" in default_ids
    summary = next(s for s in load_corpus() if s.id == "summary-replacement")
    assert "summary_used" in {c.id for c in checks_for(summary)}
    assert all(c.level == "must" for c in checks_for(summary, level="must"))


def test_failures_in_a_multi_turn_case_name_the_turn() -> None:
    view = SESSION.with_messages(m.with_id("") for i, m in enumerate(SESSION.messages) if i != 3)
    single = _outcome(view)
    first = _outcome(SESSION).turns[0]  # kept whole: passes
    outcome = replace(single, turns=(first, replace(single.turns[0], turn=1)))
    (result,) = run_checks(SCENARIO, outcome, [REGISTRY["whole_rings"]])
    assert result.status == "fail"
    assert result.message.startswith("turn 1: ring ")
    (alone,) = run_checks(SCENARIO, single, [REGISTRY["whole_rings"]])
    assert alone.message.startswith("ring ")


def test_nothing_invented_names_the_view_message_its_role_and_ids() -> None:
    invented = Message("assistant", (TextPart("I made this up"),))
    view = SESSION.with_messages([*SESSION.messages, invented.with_id("x")])
    (result,) = run_checks(SCENARIO, _outcome(view), [REGISTRY["nothing_invented"]])
    assert result.status == "fail"
    assert result.title == "1 message(s) match nothing in the session"
    assert result.message == "view messages[6] (assistant): 'I made this up'"


def test_an_assembled_turn_without_its_identity_map_is_an_error_not_a_pass() -> None:
    outcome = _outcome(SESSION)
    broken = replace(outcome, turns=(replace(outcome.turns[0], identity=None),))
    per_turn = run_checks(SCENARIO, broken, [REGISTRY["whole_rings"], REGISTRY["system_kept"]])
    assert [r.status for r in per_turn] == ["error", "error"]
    assert "no view or identity map" in per_turn[0].message
