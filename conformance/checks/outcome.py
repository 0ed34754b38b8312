"""What checks look at: the outcome of one case, turn by turn.

The engine builds these; checks only read them. ``session`` is the session as the plug-in saw it
(rendered into the case's shape and parsed back), so shape artifacts never count as changes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

from conformance.identity import IdentityMap
from conformance.json_diff import json_difference
from conformance.providers.verdict import Verdict
from conformance.traffic.verdicts import Judgement
from reference_impl.tokens import TokenCounter
from reference_impl.transcript import Transcript

__all__ = ["CaseOutcome", "StepStatus", "TurnOutcome", "first_difference"]

StepStatus: TypeAlias = Literal["assembled", "refused", "error"]


@dataclass(frozen=True, slots=True)
class TurnOutcome:
    """One request of a case (a multi-turn scenario has one per turn)."""

    turn: int
    status: StepStatus
    session: Transcript
    input_body: Mapping[str, Any]
    body: Mapping[str, Any] | None = None
    view: Transcript | None = None
    identity: IdentityMap | None = None
    verdict: Verdict | None = None
    judgement: Judgement | None = None
    """Where ``verdict`` came from (a cassette or the validators) and any contradiction."""
    tokens: int | None = None
    refusal_code: str | None = None
    reason: str | None = None
    """Refusal message or error reason."""
    counter: TokenCounter | None = None
    """The reference counter of the case (what fits is computed with it)."""
    input_mutation: str | None = None
    """Where the plug-in changed the body it was handed (``None``: unchanged or not known)."""

    @property
    def assembled(self) -> bool:
        """Whether the plug-in returned a request body for this turn."""
        return self.status == "assembled"


@dataclass(frozen=True, slots=True)
class CaseOutcome:
    """Everything the checks read about one case: shape, dialect, budget, counter, turns."""

    shape: str
    dialect: str | None
    budget: int
    counter: str
    turns: tuple[TurnOutcome, ...]

    @property
    def last(self) -> TurnOutcome:
        """The last turn (the one a case's final state is judged on)."""
        return self.turns[-1]

    @property
    def assembled_turns(self) -> tuple[TurnOutcome, ...]:
        """The turns for which the plug-in returned a request body."""
        return tuple(t for t in self.turns if t.assembled)

    @property
    def error(self) -> str | None:
        """The first plug-in error of the case (prefixed with its turn in a multi-turn case), if
        any."""
        for t in self.turns:
            if t.status == "error":
                return f"turn {t.turn}: {t.reason}" if len(self.turns) > 1 else t.reason
        return None


def first_difference(before: Any, after: Any, where: str = "body") -> str | None:
    """The first place where ``after`` differs from ``before`` (``body.messages[2].content``),
    or None when they are equal (JSON data compared by value and type)."""
    found = json_difference(before, after, where, exact_types=True)
    if found is None:
        return None
    match found.kind:
        case "only_first":
            return f"{found.path} was removed"
        case "only_second":
            return f"{found.path} was added"
        case "length":
            return f"{found.path} has {len(found.second)} items instead of {len(found.first)}"
        case _:
            return f"{found.path} was changed"
