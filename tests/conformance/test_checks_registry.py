"""The check plumbing: registering a check, choosing checks by level, a result as the report
stores it, a case's plug-in error, and where the plug-in changed the body it was handed."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

import pytest
from checks_support import refused_turn, transcript
from deploy_session import SINGLE_TOOL

from conformance.checks import REGISTRY, CaseOutcome, CheckResult, check, checks_for
from conformance.checks.outcome import TurnOutcome, first_difference
from conformance.scenarios import LEVELS, Scenario
from reference_impl.tokens import counter_for

SCENARIO = SINGLE_TOOL


@pytest.fixture
def registry() -> Iterator[None]:
    """Checks a test registers are removed again afterwards."""
    before = dict(REGISTRY)
    yield
    REGISTRY.clear()
    REGISTRY.update(before)


def _passes(_scenario: Scenario, _outcome: CaseOutcome) -> None:
    """A check that always passes.

    Its second line is no part of its title."""


def _undocumented(_scenario: Scenario, _outcome: CaseOutcome) -> None:
    pass


@pytest.mark.usefixtures("registry")
def test_a_registered_check_is_found_with_its_level_and_title() -> None:
    returned = check(id="always_passes", level="should", default=False)(_passes)
    assert returned is _passes  # the decorated function is still the function
    spec = REGISTRY["always_passes"]
    assert (spec.level, spec.default, spec.title) == (
        "should",
        False,
        "A check that always passes.",
    )
    assert spec.function is _passes
    check(id="undocumented", level="may")(_undocumented)
    assert REGISTRY["undocumented"].title == "undocumented"  # no docstring: its id


@pytest.mark.usefixtures("registry")
def test_a_second_check_with_the_same_id_or_an_unknown_level_is_refused() -> None:
    check(id="always_passes", level="should")(_passes)
    with pytest.raises(ValueError, match="check id 'always_passes' is registered twice"):
        check(id="always_passes", level="must")(_undocumented)
    assert REGISTRY["always_passes"].function is _passes
    with pytest.raises(ValueError, match="level 'shall' is not one of must, should, may"):
        check(id="other", level="shall")  # type: ignore[arg-type]
    assert "other" not in REGISTRY


def test_checks_up_to_a_level_include_that_level() -> None:
    scenario = replace(SCENARIO, expect=replace(SCENARIO.expect, checks=("prefix_stable",)))
    by_level = {
        level: {spec.level for spec in checks_for(scenario, level=level)} for level in LEVELS
    }
    assert by_level == {"must": {"must"}, "should": {"must", "should"}, "may": set(LEVELS)}


def test_a_result_in_the_report_has_a_title_and_message_only_when_not_passed() -> None:
    assert CheckResult("within_budget", "must", "pass", "t", "m").to_dict() == {
        "id": "within_budget",
        "level": "must",
        "status": "pass",
    }
    assert CheckResult("within_budget", "must", "fail", "over budget", "12 > 10").to_dict() == {
        "id": "within_budget",
        "level": "must",
        "status": "fail",
        "title": "over budget",
        "message": "12 > 10",
    }


# -- a case's error and the body the plug-in changed ---------------------------------------------

SESSION = transcript({"role": "user", "text": "hello"})
COUNTER = counter_for("openai-chat", "gpt-4o")


def _failed(turn: int, reason: str) -> TurnOutcome:
    return TurnOutcome(turn, "error", SESSION, {}, reason=reason)


def _case(*turns: TurnOutcome) -> CaseOutcome:
    return CaseOutcome("openai-chat", None, 100, COUNTER.name, turns)


def test_a_case_error_is_its_first_failed_turn_named_by_turn_when_there_are_several() -> None:
    refused = refused_turn(SESSION, COUNTER)
    assert _case(refused).error is None
    assert _case(_failed(0, "ValueError: boom")).error == "ValueError: boom"
    assert _case(refused, _failed(1, "KeyError: 'x'")).error == "turn 1: KeyError: 'x'"
    several = _case(refused, _failed(1, "KeyError: 'x'"), _failed(2, "later"))
    assert several.error == "turn 1: KeyError: 'x'"


def test_the_first_difference_of_a_handed_body_is_worded_by_kind() -> None:
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "n": 1}
    assert first_difference(body, dict(body)) is None
    assert first_difference(body, {k: v for k, v in body.items() if k != "n"}) == (
        "body.n was removed"
    )
    assert first_difference(body, body | {"stream": True}) == "body.stream was added"
    assert first_difference(body, body | {"messages": []}) == (
        "body.messages has 0 items instead of 1"
    )
    changed = body | {"messages": [{"role": "user", "content": "bye"}]}
    assert first_difference(body, changed) == "body.messages[0].content was changed"
    # JSON is compared by type as well: a plug-in that turned 1 into 1.0 changed the body.
    assert first_difference(body, body | {"n": 1.0}) == "body.n was changed"
