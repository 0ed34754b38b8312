"""Small readers shared by the checks (ring membership, pinned messages, ledger keys, config)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from conformance.checks.outcome import CaseOutcome, TurnOutcome
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
    config = scenario.config.get("context_assembly", scenario.config)
    return config.get(name, DEFAULT_KNOBS.get(name))


def describe(session: Transcript, index: int) -> str:
    """``messages[3] (assistant, ids c1,c2)``: how failures name a session message."""
    message = session.messages[index]
    ids = [c.id for c in message.tool_calls] + [r.call_id for r in message.tool_results]
    extra = f", ids {','.join(ids)}" if ids else ""
    return f"session messages[{index}] ({message.role}{extra})"


def turn_label(outcome: CaseOutcome, turn: TurnOutcome) -> str:
    return f"turn {turn.turn}: " if len(outcome.turns) > 1 else ""


def complete_rings(session: Transcript) -> list[Ring]:
    return [s for s in segment(session) if isinstance(s, Ring) and s.complete]


def first_user_index(session: Transcript) -> int | None:
    for i, m in enumerate(session.messages):
        if m.role == "user" and not m.has_tool_parts:
            return i
    return None


def last_user_index(session: Transcript) -> int | None:
    for i in range(len(session.messages) - 1, -1, -1):
        m = session.messages[i]
        if m.role == "user" and not m.has_tool_parts and m.text:
            return i
    return None


def summary_text(view: Transcript) -> str:
    return "\n".join(p.text for m in view.messages for p in m.parts if isinstance(p, SummaryPart))


def has_summary(view: Transcript) -> bool:
    return any(isinstance(p, SummaryPart) for m in view.messages for p in m.parts)


def ledger_key(entry: Mapping[str, Any]) -> str:
    """What must survive of one entry: its idempotency key, else its call id."""
    return str(entry.get("idempotency_key") or entry["call_id"])


def side_effect_entries(scenario: Scenario) -> list[Mapping[str, Any]]:
    return [e for e in scenario.ledger if e.get("side_effect", True)]


def call_ids_in(view: Transcript) -> set[str]:
    return {c.id for m in view.messages for c in m.tool_calls}


def is_plain(message: Message) -> bool:
    return message.role in {"user", "assistant"} and not message.has_tool_parts
