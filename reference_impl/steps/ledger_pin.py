"""``narrow_ledger_pin``: with ``ledger_pin_mode: when_not_visible``, the pinned ledger note lists
only the side effects that nothing else in the view shows.

The ledger note is placed in the prefix, right after the system text. Listing every side effect
there changes the request's prefix at every new side effect, and so the provider's prompt cache
misses on almost the whole request. A side effect whose ring is still in the view, or whose
idempotency key or resource id is in kept text (a summary's ledger section, a result), is already
visible; the note is needed only for the others. The step runs after every keep/drop decision
(the note was counted at full size while deciding, so the budget still holds) and rewrites the
note, or drops it when nothing is left to list.
"""

from __future__ import annotations

from reference_impl.ledger import Ledger, LedgerEntry
from reference_impl.memory import ledger_message
from reference_impl.steps.state import AssemblyState, Unit

__all__ = ["LEDGER_INJECTION_PREFIX", "narrow_ledger_pin", "visible_entry"]

LEDGER_INJECTION_PREFIX = "inject-ledger-"


def _texts(units: list[Unit]) -> str:
    chunks: list[str] = []
    for unit in units:
        for message in unit.messages:
            chunks.append(message.text)
            chunks.extend(c.arguments for c in message.tool_calls)
            chunks.extend(r.text for r in message.tool_results)
    return "\n".join(chunks)


def visible_entry(entry: LedgerEntry, call_ids: set[str], text: str) -> bool:
    """Whether a ledger entry's facts are in the view without the pinned note: its idempotency
    key or resource id in kept text (call arguments and results included), or, for an entry
    that has neither, its call still in the view. A kept call id alone is not enough: a cleared
    result loses the resource id."""
    facts = [f for f in (entry.idempotency_key, entry.resource_id) if f]
    if not facts:
        return entry.call_id in call_ids
    return any(fact in text for fact in facts)


def narrow_ledger_pin(state: AssemblyState) -> None:
    """Rewrite the pinned ledger note to the side effects not visible elsewhere (see above)."""
    if state.config.ledger_pin_mode != "when_not_visible":
        return
    note = next(
        (
            u
            for u in state.units
            if u.kept and u.kind == "injection" and u.id.startswith(LEDGER_INJECTION_PREFIX)
        ),
        None,
    )
    if note is None:
        return
    others = [u for u in state.units if u.kept and u is not note]
    call_ids = {c.id for u in others if u.kind == "ring" for c in u.messages[0].tool_calls}
    text = _texts(others)
    hidden = tuple(e for e in state.ledger.side_effects if not visible_entry(e, call_ids, text))
    if len(hidden) == len(state.ledger.side_effects):
        return
    message = ledger_message(Ledger(hidden))
    if message is None:
        note.kept = False
    else:
        note.replace_messages((message,))
    state.record("narrow_ledger_pin")
