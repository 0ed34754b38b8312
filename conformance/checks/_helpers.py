"""Small readers shared by the checks (assembled turns, ring membership, pins, ledger, config)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from conformance.checks.outcome import CaseOutcome, TurnOutcome
from conformance.checks.registry import Failure
from conformance.identity import IdentityMap
from conformance.scenarios import Scenario
from reference_impl.rings import Ring, segment
from reference_impl.transcript import Message, SummaryPart, Transcript

# The reference defaults (issue 3's example config); a scenario's `config` overrides them.
DEFAULT_KNOBS: Mapping[str, Any] = {
    "recent_tool_rings": 3,
    "recent_user_turns": 2,
    "keep_middle_error_results": 5,
    "pin": ["first_user_message", "side_effect_ledger", "security_system_prompt"],
    "memory": {"max_items": 5},
}


def knob(scenario: Scenario, name: str) -> Any:
    """A config knob of the scenario (``context_assembly:`` or top level), else the default."""
    config = scenario.config.get("context_assembly", scenario.config)
    return config.get(name, DEFAULT_KNOBS.get(name))


def describe(transcript: Transcript, index: int, *, where: str = "session") -> str:
    """``session messages[3] (assistant, ids c1,c2)``: how failures name a message."""
    message = transcript.messages[index]
    ids = [c.id for c in message.tool_calls] + [r.call_id for r in message.tool_results]
    extra = f", ids {','.join(ids)}" if ids else ""
    return f"{where} messages[{index}] ({message.role}{extra})"


def turn_label(outcome: CaseOutcome, turn: TurnOutcome) -> str:
    """``turn 2: `` in a multi-turn case (so a failure says which request), else nothing."""
    return f"turn {turn.turn}: " if len(outcome.turns) > 1 else ""


@dataclass(frozen=True, slots=True)
class Assembled:
    """One assembled turn as checks read it: its session, view and identity map, never ``None``."""

    turn: TurnOutcome
    session: Transcript
    view: Transcript
    identity: IdentityMap
    label: str
    """:func:`turn_label` of the turn, the prefix of every failure message."""

    def failure(self, title: str, message: str) -> Failure:
        """A :class:`Failure` whose message names this turn in a multi-turn case."""
        return Failure(title, f"{self.label}{message}")


def _assembled(outcome: CaseOutcome, turn: TurnOutcome) -> Assembled | None:
    if turn.view is None or turn.identity is None:
        return None
    return Assembled(turn, turn.session, turn.view, turn.identity, turn_label(outcome, turn))


def assembled_turns(outcome: CaseOutcome) -> Iterator[Assembled]:
    """Every assembled turn of the case; the engine always maps an assembled view, so a turn
    without its view or identity map is a harness bug (an error result, not a pass)."""
    for turn in outcome.assembled_turns:
        found = _assembled(outcome, turn)
        if found is None:
            raise RuntimeError(f"turn {turn.turn} was assembled but has no view or identity map")
        yield found


def final_assembled(outcome: CaseOutcome) -> Assembled | None:
    """The last turn when it was assembled (opt-in policy checks judge where the case ends)."""
    final = outcome.last
    return _assembled(outcome, final) if final.assembled else None


def complete_rings(session: Transcript) -> list[Ring]:
    """The complete rings of the session, oldest first."""
    return [s for s in segment(session) if isinstance(s, Ring) and s.complete]


def first_user_index(session: Transcript) -> int | None:
    """The first plain user message (the goal), if any."""
    for i, m in enumerate(session.messages):
        if m.role == "user" and not m.has_tool_parts:
            return i
    return None


def last_user_index(session: Transcript) -> int | None:
    """The latest plain user message with text, if any."""
    for i in range(len(session.messages) - 1, -1, -1):
        m = session.messages[i]
        if m.role == "user" and not m.has_tool_parts and m.text:
            return i
    return None


def summary_text(view: Transcript) -> str:
    """The text of every summary part of the view, one per line."""
    return "\n".join(p.text for m in view.messages for p in m.parts if isinstance(p, SummaryPart))


def has_summary(view: Transcript) -> bool:
    """Whether the view carries a summary part."""
    return any(isinstance(p, SummaryPart) for m in view.messages for p in m.parts)


def ledger_key(entry: Mapping[str, Any]) -> str:
    """What must survive of one entry: its idempotency key, else its call id."""
    return str(entry.get("idempotency_key") or entry["call_id"])


def side_effect_entries(scenario: Scenario) -> list[Mapping[str, Any]]:
    """The scenario's ledger entries that had a side effect."""
    return [e for e in scenario.ledger if e.get("side_effect", True)]


def call_ids_in(view: Transcript) -> set[str]:
    """The ids of every tool call the view carries."""
    return {c.id for m in view.messages for c in m.tool_calls}


def is_plain(message: Message) -> bool:
    """A user or assistant message without tool parts (a plain turn)."""
    return message.role in {"user", "assistant"} and not message.has_tool_parts
