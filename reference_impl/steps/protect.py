"""Load the session into units, and protect the prefix and the suffix.

* prefix: the leading system/developer text (the security prompt), memory and ledger injections
  (labelled, capped by ``memory.max_items``), the pinned first user message, and, with the
  ``security_system_prompt`` pin, system/developer text found later in the session;
* suffix, defined exactly (ARCHITECTURE section 2: "the latest user message, the last
  ``recent_tool_rings`` complete rings, and everything after"):

  1. a **range**: the last ``recent_tool_rings`` complete rings and every unit after the oldest of
     them. With ``recent_tool_rings: 0`` or no complete ring, the range is every unit after the
     last ring; in a session without rings it starts at the latest user message;
  2. **single messages**: the latest user message, and the latest ``recent_user_turns`` user
     messages (at least the latest one), each protected on its own. The units *between* them stay
     in the middle: in a long agent loop the latest user message is the task and many rings follow
     it, and only the newest rings are protected, not every ring since the task was given.

  "User message" means a plain ``user`` turn (no tool results). A unit already in the prefix stays
  there.

Everything else is the middle. Order never changes: units stay in session order, injections go
right after the leading system text.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from reference_impl.budget import BudgetPlan
from reference_impl.config import AssemblyConfig
from reference_impl.ledger import Ledger
from reference_impl.rings import Ring, segment
from reference_impl.steps.pairing import check_pairing
from reference_impl.steps.state import AssemblyState, Unit
from reference_impl.summary import Summarizer
from reference_impl.tokens import RawCosting, TokenCounter
from reference_impl.transcript import Message, SummaryPart, Transcript
from reference_impl.transcript.model import INSTRUCTION_ROLES

__all__ = [
    "latest_user_positions",
    "load_state",
    "load_units",
    "protect_prefix",
    "protect_suffix",
    "range_start",
    "suffix_start",
]


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
        if leading_system and head.role not in INSTRUCTION_ROLES:
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


def load_state(
    session: Transcript,
    *,
    config: AssemblyConfig,
    counter: TokenCounter,
    summarizer: Summarizer,
    ledger: Ledger,
    plan: BudgetPlan,
    shape: str,
    injections: Sequence[Message],
) -> AssemblyState:
    """The state the pipeline starts from: pairing checked first, before anything else
    (rejected or repaired per ``on_pairing_error``), then the session loaded into units
    with the injections placed after the leading system text (steps ``load`` and
    ``validate_pairing``/``synthesize_error_results``)."""
    checked, repairs = check_pairing(session, on_error=config.on_pairing_error, ledger=ledger)
    state = AssemblyState(
        config=config,
        counter=counter,
        ledger=ledger,
        plan=plan,
        units=load_units(checked, injections),
        tools=session.tools,
        session=session,
        shape=shape,
        summarizer=summarizer,
        repairs=repairs,
    )
    state.steps.append("load")
    state.steps.append("synthesize_error_results" if repairs else "validate_pairing")
    state.tools_cost = counter.count_tools(session.tools)
    state.refresh_overhead()
    state.raw_costs = raw_costs_by_message(counter, checked, shape)
    return state


def raw_costs_by_message(
    counter: TokenCounter, session: Transcript, shape: str
) -> dict[tuple[str, str], int]:
    """What ``counter`` charges the raw wire blocks of ``session``'s messages in ``shape``, by
    message id and digest (empty for a counter without ``raw_costs``, or nothing raw): a
    message whose content changed (degraded, cleared) keeps its id and is rendered without
    them; messages of equal content are each charged their own."""
    found = counter.raw_costs(session, shape) if isinstance(counter, RawCosting) else None
    return {
        (message.id, message.digest): cost
        for message, cost in zip(session.messages, found or (), strict=False)
        if cost
    }


def protect_prefix(state: AssemblyState) -> None:
    """Move the pinned units (system text, first user message, memory, ledger) to the prefix."""
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
        elif role in INSTRUCTION_ROLES and config.pinned("security_system_prompt"):
            unit.bucket = "prefix"
    state.steps.append("protect_prefix")


def protect_suffix(state: AssemblyState) -> None:
    """Mark the suffix (see the module docstring for the exact definition)."""
    config = state.config
    units = state.units
    start = suffix_start(units, config.recent_tool_rings)
    for unit in units[start:]:
        if unit.bucket != "prefix":
            unit.bucket = "suffix"
    for i in latest_user_positions(units, config.recent_user_turns):
        if units[i].bucket != "prefix":
            units[i].bucket = "suffix"
    state.steps.append("protect_suffix")


def suffix_start(units: Sequence[Unit], recent_tool_rings: int) -> int:
    """Where the suffix range starts in ``units`` (``range_start``)."""
    rings = [i for i, u in enumerate(units) if u.kind == "ring"]
    complete = [i for i in rings if _complete(units[i])]
    return range_start(
        complete, rings, lambda: latest_user_positions(units, 1), len(units), recent_tool_rings
    )


def range_start(
    complete_rings: Sequence[int],
    rings: Sequence[int],
    latest_user: Callable[[], Sequence[int]],
    count: int,
    recent_tool_rings: int,
) -> int:
    """Where the suffix range starts, from unit positions: the oldest of the last
    ``recent_tool_rings`` complete rings; else just after the last ring; else the latest user
    message (``latest_user()``, asked only then); else the end (``count`` units)."""
    if recent_tool_rings > 0 and complete_rings:
        return complete_rings[-min(recent_tool_rings, len(complete_rings))]
    if rings:
        return rings[-1] + 1
    users = latest_user()
    return users[-1] if users else count


def latest_user_positions(units: Sequence[Unit], recent_user_turns: int) -> list[int]:
    """Positions of the latest ``max(1, recent_user_turns)`` plain user turns, oldest first."""
    wanted = max(1, recent_user_turns)
    found: list[int] = []
    for i in range(len(units) - 1, -1, -1):
        unit = units[i]
        if unit.kind == "turn" and unit.messages[0].role == "user":
            found.append(i)
            if len(found) == wanted:
                break
    found.reverse()
    return found


def _complete(unit: Unit) -> bool:
    calls = {c.id for c in unit.messages[0].tool_calls}
    answered = {r.call_id for m in unit.messages[1:] for r in m.tool_results}
    return bool(calls) and calls <= answered
