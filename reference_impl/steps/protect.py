"""Load the session into units, and protect the prefix and the suffix.

* prefix: the leading system/developer text (the security prompt), memory and ledger injections
  (labelled, capped by ``memory.max_items``), the pinned first user message, and, with the
  ``security_system_prompt`` pin, system/developer text found later in the session;
* suffix: the latest user message, the last ``recent_tool_rings`` complete rings, the latest
  ``recent_user_turns`` user turns, and everything after the earliest of those.

Everything else is the middle. Order never changes: units stay in session order, injections go
right after the leading system text.
"""

from __future__ import annotations

from collections.abc import Sequence

from reference_impl.rings import Ring, segment
from reference_impl.steps.state import AssemblyState, Unit
from reference_impl.transcript import Message, SummaryPart, Transcript

__all__ = ["load_units", "protect_prefix", "protect_suffix"]


def _is_summary(message: Message) -> bool:
    return any(isinstance(p, SummaryPart) for p in message.parts)


def load_units(session: Transcript, injections: Sequence[Message]) -> list[Unit]:
    """Units in view order: rings whole, one unit per other message, injections after the system."""
    units: list[Unit] = []
    leading_system = True
    placed = False
    for seg in segment(session):
        messages = (
            session.messages[seg.start : seg.stop]
            if isinstance(seg, Ring)
            else (session.messages[seg.index],)
        )
        head = messages[0]
        if leading_system and head.role not in ("system", "developer"):
            leading_system = False
        if not leading_system and not placed:
            units.extend(Unit("injection", (m,), bucket="prefix") for m in injections)
            placed = True
        if isinstance(seg, Ring):
            has_error = any(r.is_error for m in messages for r in m.tool_results)
            units.append(Unit("ring", messages, tier="verbose_ring", has_error_result=has_error))
        elif _is_summary(head):
            units.append(Unit("summary", messages, tier="summary"))
        else:
            unit = Unit("turn", messages)
            if leading_system:
                unit.bucket = "prefix"
            units.append(unit)
    if not placed:
        units.extend(Unit("injection", (m,), bucket="prefix") for m in injections)
    return units


def protect_prefix(state: AssemblyState) -> None:
    config = state.config
    first_user_done = False
    for unit in state.units:
        if unit.kind != "turn":
            continue
        role = unit.messages[0].role
        if role == "user" and not first_user_done:
            first_user_done = True
            if config.pinned("first_user_message"):
                unit.bucket = "prefix"
        elif role in ("system", "developer") and config.pinned("security_system_prompt"):
            unit.bucket = "prefix"
    state.steps.append("protect_prefix")


def protect_suffix(state: AssemblyState) -> None:
    config = state.config
    units = state.units
    starts: list[int] = []
    user_positions = [
        i for i, u in enumerate(units) if u.kind == "turn" and u.messages[0].role == "user"
    ]
    if user_positions:
        starts.append(user_positions[-1])  # the latest user message, always
        if config.recent_user_turns > 0:
            starts.append(user_positions[-min(config.recent_user_turns, len(user_positions))])
    complete_rings = [i for i, u in enumerate(units) if u.kind == "ring" and _complete(u)]
    if config.recent_tool_rings > 0 and complete_rings:
        starts.append(complete_rings[-min(config.recent_tool_rings, len(complete_rings))])
    start = min(starts) if starts else len(units)
    for unit in units[start:]:
        if unit.bucket != "prefix":
            unit.bucket = "suffix"
    state.steps.append("protect_suffix")


def _complete(unit: Unit) -> bool:
    calls = {c.id for c in unit.messages[0].tool_calls}
    answered = {r.call_id for m in unit.messages[1:] for r in m.tool_results}
    return bool(calls) and calls <= answered
