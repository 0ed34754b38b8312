"""Builders the check tests share: compact transcripts and one-turn assembled outcomes."""

from __future__ import annotations

from typing import Any

from conformance.checks import CaseOutcome, TurnOutcome
from conformance.identity import map_view
from conformance.providers.verdict import Verdict
from conformance.scenarios import expand_message
from reference_impl.transcript import Transcript, transcript_from_dict


def transcript(*messages: dict[str, Any]) -> Transcript:
    """A transcript from the scenarios' compact message form."""
    return transcript_from_dict({"messages": [expand_message(m) for m in messages]})


def assembled_outcome(
    session: Transcript,
    view: Transcript,
    *,
    shape: str = "openai-chat",
    budget: int = 100,
    tokens: int = 10,
) -> CaseOutcome:
    """A one-turn case whose plug-in assembled ``view`` (accepted) from ``session``."""
    turn = TurnOutcome(
        turn=0,
        status="assembled",
        session=session,
        input_body={},
        body={},
        view=view,
        identity=map_view(session, view),
        verdict=Verdict("accept", 200),
        tokens=tokens,
    )
    return CaseOutcome(shape, None, budget, "test-counter", (turn,))
