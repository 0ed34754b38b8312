"""Builders the check tests share: compact transcripts, assembled and refused turns, and
one-turn assembled outcomes."""

from __future__ import annotations

from typing import Any

from conformance.checks import CaseOutcome, TurnOutcome
from conformance.identity import map_view
from conformance.providers.verdict import Verdict
from conformance.scenarios import expand_message
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
) -> TurnOutcome:
    """Turn ``turn``, in which the plug-in assembled ``view`` from ``session`` (accepted)."""
    return TurnOutcome(
        turn=turn,
        status="assembled",
        session=session,
        input_body={},
        body={},
        view=view,
        identity=map_view(session, view),
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
) -> CaseOutcome:
    """A one-turn case whose plug-in assembled ``view`` (accepted) from ``session``."""
    turn = assembled_turn(session, view, tokens=tokens)
    return CaseOutcome(shape, None, budget, "test-counter", (turn,))
