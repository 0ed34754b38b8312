"""Pairing first: validate the session before anything else, then reject or repair.

``fail_closed`` (the default) refuses any violation. ``synthesize_error_results`` fills in only the
calls that the execution layer itself marked ``timed_out`` or ``cancelled`` (never a call that may
still be running), with a fixed ``is_error`` text that carries no internals; every other violation is
still refused. Nothing is ever dropped to "fix" pairing and rings are never flattened into text.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Final

from reference_impl.errors import ContextAssemblyError
from reference_impl.ledger import Ledger
from reference_impl.rings import Ring, Violation, segment, validate
from reference_impl.transcript import Message, TextPart, ToolResultPart, Transcript

__all__ = ["SYNTHESIZED_RESULT_TEXT", "check_pairing", "synthesize_error_results"]

SYNTHESIZED_RESULT_TEXT: Final = (
    "This tool call did not complete: the execution layer recorded it as {status}. "
    "No result is available."
)
_FILLABLE: Final = frozenset({"timed_out", "cancelled"})


def violations_details(violations: tuple[Violation, ...]) -> list[dict[str, Any]]:
    """Machine-readable violations: kinds, positions, ids and rule ids, never content."""
    return [
        {
            "kind": v.kind,
            "message_index": v.message_index,
            "ids": list(v.ids),
            "rules": list(v.rules),
        }
        for v in violations
    ]


def synthesize_error_results(session: Transcript, ledger: Ledger) -> tuple[Transcript, list[str]]:
    """Add error results for unanswered calls the ledger marks timed out or cancelled."""
    answered = {r.call_id for m in session.messages for r in m.tool_results}
    messages = list(session.messages)
    repaired: list[str] = []
    # Walk rings from the end so that inserting a message does not shift the rings still to visit.
    for seg in reversed(segment(session)):
        if not isinstance(seg, Ring):
            continue
        fills: list[ToolResultPart] = []
        for call in messages[seg.start].tool_calls:
            entry = ledger.for_call(call.id)
            if call.id in answered or entry is None or entry.status not in _FILLABLE:
                continue
            text = SYNTHESIZED_RESULT_TEXT.format(status=entry.status.replace("_", " "))
            fills.append(
                ToolResultPart(
                    call_id=call.id, content=(TextPart(text),), is_error=True, name=call.name
                )
            )
            repaired.append(call.id)
        if not fills:
            continue
        if seg.stop - seg.start > 1:
            # Results go after the ring's last result and before any trailing text (rule A3).
            last = messages[seg.stop - 1]
            cut = max(i for i, p in enumerate(last.parts) if isinstance(p, ToolResultPart)) + 1
            parts = (*last.parts[:cut], *fills, *last.parts[cut:])
            messages[seg.stop - 1] = replace(last, parts=parts)
        else:
            head = messages[seg.start]
            messages.insert(seg.start + 1, Message("tool", tuple(fills), id=f"{head.id}-synth"))
    repaired.sort()
    return session.with_messages(messages), repaired


def check_pairing(
    session: Transcript, *, on_error: str, ledger: Ledger
) -> tuple[Transcript, list[str]]:
    """The session to assemble (possibly repaired) and the call ids that were filled in."""
    violations = validate(session)
    if not violations:
        return session, []
    repaired: list[str] = []
    if on_error == "synthesize_error_results":
        session, repaired = synthesize_error_results(session, ledger)
        violations = validate(session) if repaired else violations
    if violations:
        kinds = sorted({v.kind for v in violations})
        raise ContextAssemblyError(
            f"the session breaks tool-call pairing ({len(violations)} violation(s): "
            f"{', '.join(kinds)}; first at messages[{violations[0].message_index}], rules "
            f"{', '.join(violations[0].rules)}); fix the session or set on_pairing_error: "
            "synthesize_error_results for calls the execution layer timed out or cancelled",
            code="context_assembly_pairing_error",
            where=f"messages[{violations[0].message_index}]",
            details={"violations": violations_details(violations), "repaired": repaired},
        )
    return session, repaired
