"""Builders the check tests share: compact transcripts, assembled and refused turns, one-turn
assembled outcomes, and the checks' results on an outcome."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from conformance.checks import REGISTRY, CaseOutcome, TurnOutcome, run_checks
from conformance.identity import Declarations, map_view
from conformance.providers.verdict import Verdict
from conformance.scenarios import Scenario, expand_message
from reference_impl.tokens import TokenCounter
from reference_impl.transcript import Transcript, transcript_from_dict


def transcript(*messages: dict[str, Any]) -> Transcript:
    """A transcript from the scenarios' compact message form."""
    return transcript_from_dict({"messages": [expand_message(m) for m in messages]})


def assembled_turn(
    session: Transcript,
    view: Transcript,
    *,
    turn: int = 0,
    tokens: int = 10,
    counter: TokenCounter | None = None,
    ledger: Sequence[Mapping[str, Any]] = (),
    memory: Sequence[Mapping[str, Any]] = (),
    declared: Declarations | None = None,
) -> TurnOutcome:
    """Turn ``turn``, in which the plug-in assembled ``view`` from ``session`` (accepted); its
    identity is mapped knowing ``ledger``, ``memory`` and the ``declared`` forms."""
    return TurnOutcome(
        turn=turn,
        status="assembled",
        session=session,
        input_body={},
        body={},
        view=view,
        identity=map_view(session, view, ledger=ledger, memory=memory, declared=declared),
        verdict=Verdict("accept", 200),
        tokens=tokens,
        counter=counter,
    )


def refused_turn(session: Transcript, counter: TokenCounter) -> TurnOutcome:
    """A first turn that the plug-in refused as over budget (``no room``)."""
    return TurnOutcome(
        turn=0,
        status="refused",
        session=session,
        input_body={},
        refusal_code="context_assembly_over_budget",
        reason="no room",
        counter=counter,
    )


def assembled_outcome(
    session: Transcript,
    view: Transcript,
    *,
    shape: str = "openai-chat",
    budget: int = 100,
    tokens: int = 10,
    ledger: Sequence[Mapping[str, Any]] = (),
    memory: Sequence[Mapping[str, Any]] = (),
    declared: Declarations | None = None,
) -> CaseOutcome:
    """A one-turn case whose plug-in assembled ``view`` (accepted) from ``session``; the view's
    identity is mapped knowing ``ledger``, ``memory`` and the ``declared`` forms."""
    turn = assembled_turn(
        session, view, tokens=tokens, ledger=ledger, memory=memory, declared=declared
    )
    return CaseOutcome(shape, None, budget, "test-counter", (turn,))


def check_results(
    scenario: Scenario, outcome: CaseOutcome, *check_ids: str
) -> dict[str, tuple[str, str]]:
    """The status and message of each of the checks ``check_ids`` on ``outcome``, by check id."""
    results = run_checks(scenario, outcome, [REGISTRY[i] for i in check_ids])
    return {r.id: (r.status, r.message) for r in results}


def check_statuses(scenario: Scenario, outcome: CaseOutcome, *check_ids: str) -> dict[str, str]:
    """The status of each of the checks ``check_ids`` on ``outcome``, by check id."""
    return {i: status for i, (status, _) in check_results(scenario, outcome, *check_ids).items()}


def assert_fails_saying(result: tuple[str, str], fragment: str) -> str:
    """A check's ``(status, message)`` is a failure whose message says ``fragment``; the message."""
    status, message = result
    assert status == "fail", f"{status}: {message}"
    assert fragment in message, message
    return message
