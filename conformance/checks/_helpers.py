"""Small readers shared by the checks (assembled turns, ring membership, pins, ledger, config)."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Final

from conformance.checks.outcome import CaseOutcome, TurnOutcome
from conformance.checks.registry import Failure
from conformance.identity import IdentityMap
from conformance.scenarios import Scenario
from reference_impl.config import ROOT, AssemblyConfig
from reference_impl.rings import Ring, segment
from reference_impl.transcript import Message, TextPart, Transcript

DEFAULT_KNOBS: Final[Mapping[str, Any]] = AssemblyConfig().to_mapping()[ROOT]
"""The reference assembler's defaults, as a config file spells them; a scenario's ``config``
overrides them."""


def knob(scenario: Scenario, name: str) -> Any:
    """A config knob of the scenario (``context_assembly:`` or top level), else the default."""
    config = scenario.config.get("context_assembly", scenario.config)
    return config.get(name, DEFAULT_KNOBS.get(name))


def stated_knob(scenario: Scenario, name: str) -> Any:
    """A config knob the scenario states (and so hands the plug-in in ``request.config``);
    None when it leaves it to the reference assembler's default."""
    return scenario.config.get("context_assembly", scenario.config).get(name)


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


def summary_text(turn: Assembled) -> str:
    """The text of every summary of the turn's view (declared or by contract), one per line."""
    return "\n".join(turn.view.messages[link.index].text for link in turn.identity.summaries())


def has_summary(turn: Assembled) -> bool:
    """Whether the turn's view carries a summary (declared or by contract, see identity)."""
    return bool(turn.identity.summaries())


def notes_text(turn: Assembled) -> str:
    """The text of the view's prefix notes: system/developer messages, pinned ledger notes and
    labelled injections (where a pinned ledger lives)."""
    return "\n".join(
        turn.view.messages[link.index].text
        for link in turn.identity.links
        if link.status in {"ledger", "injected"}
        or turn.view.messages[link.index].role in {"system", "developer"}
    )


def ledger_facts(entry: Mapping[str, Any]) -> list[str]:
    """What must survive of one side-effect entry: its idempotency key and resource id (those it
    has), else its call id."""
    facts = [str(entry[k]) for k in ("idempotency_key", "resource_id") if entry.get(k)]
    return facts or [str(entry["call_id"])]


def protected_minimum(scenario: Scenario, turn: TurnOutcome) -> int | None:
    """The tokens of the smallest request that keeps what the seed protects with the case's
    knobs: system and developer text, the pinned goal, a ledger note of the side effects not
    kept otherwise, the latest ``recent_user_turns`` user turns, the last ``recent_tool_rings``
    complete rings (at least the newest) and everything after the oldest of them, with the tool
    schemas; counted with the case's reference counter (None without one)."""
    counter = turn.counter
    if counter is None:
        return None
    session = turn.session
    keep: set[int] = {
        i for i, m in enumerate(session.messages) if m.role in {"system", "developer"}
    }
    first = first_user_index(session)
    if first is not None and "first_user_message" in knob(scenario, "pin"):
        keep.add(first)
    users = [i for i, m in enumerate(session.messages) if m.role == "user" and is_plain(m)]
    keep.update(users[-max(1, int(knob(scenario, "recent_user_turns"))) :])
    rings = complete_rings(session)
    if rings:
        oldest = rings[-max(1, int(knob(scenario, "recent_tool_rings"))) :][0]
        keep.update(range(oldest.start, len(session.messages)))
    kept_calls = {c.id for i in keep for c in session.messages[i].tool_calls}
    lines = [
        f"- tool={e['tool']} idempotency_key={e.get('idempotency_key') or '-'} "
        f"resource_id={e.get('resource_id') or '-'} status={e['status']} call_id={e['call_id']}"
        for e in side_effect_entries(scenario)
        if e["call_id"] not in kept_calls
    ]
    messages = [session.messages[i] for i in sorted(keep)]
    if lines:  # a labelled note with every field of a ledger entry (the seed's definition)
        text = "[source: side-effect ledger]\nSide effects already executed:\n" + "\n".join(lines)
        at = sum(1 for m in messages if m.role in {"system", "developer"})
        messages.insert(at, Message("system", (TextPart(text),)))
    return counter.count(session.with_messages(messages)).total


MINIMUM_SLACK: Final = 0.05
"""How far above the computed protected minimum a refusal is still accepted: the minimum uses a
compact ledger note, a plug-in's own note (and its bucket arithmetic) may cost a little more."""


def minimum_with_slack(minimum: int | None) -> int | None:
    """The lowest budget at which refusing counts as refusing above the protected minimum."""
    return None if minimum is None else math.ceil(minimum * (1 + MINIMUM_SLACK))


def session_tokens(turn: TurnOutcome) -> int | None:
    """The whole session's tokens by the case's reference counter (None without one)."""
    return None if turn.counter is None else turn.counter.count(turn.session).total


def side_effect_entries(scenario: Scenario) -> list[Mapping[str, Any]]:
    """The scenario's ledger entries that had a side effect."""
    return [e for e in scenario.ledger if e.get("side_effect", True)]


def settings_of(transcript: Transcript) -> dict[str, Any]:
    """The request settings of a transcript (its params, each a JSON value; a shape's private
    record of wire content, a dotted key, is none)."""
    out: dict[str, Any] = {}
    for key, text in transcript.params:
        if "." in key:
            continue
        try:
            out[key] = json.loads(text)
        except ValueError:
            out[key] = text
    return out


def is_plain(message: Message) -> bool:
    """A user or assistant message without tool parts (a plain turn)."""
    return message.role in {"user", "assistant"} and not message.has_tool_parts
