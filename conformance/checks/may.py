"""``may`` checks: prompt-cache prefix stability, degradation order, labelled memory."""

from __future__ import annotations

import itertools
from typing import Final

from conformance.checks._helpers import (
    Assembled,
    assembled_turns,
    describe,
    final_assembled,
    knob,
    summary_text,
)
from conformance.checks.outcome import CaseOutcome
from conformance.checks.registry import Failure, check
from conformance.scenarios import Scenario
from reference_impl.transcript import FilePart, ImagePart, Message


def _deleted(turn: Assembled) -> set[tuple[int, str, str]]:
    """What the turn's view left out, each deletion mode alike ("Deletion modes are equal"): the
    session messages it dropped, the results it cleared and the attachments it degraded."""
    found = {(i, "dropped", "") for i, s in enumerate(turn.identity.sources) if s == "dropped"}
    found.update(
        (e.source, e.kind, e.call_id or e.detail)  # a result by its call id, an attachment as named
        for e in turn.identity.edits
        if e.kind in _DELETION_EDITS
    )
    return found


_DELETION_EDITS: Final = frozenset({"result_cleared", "attachment_degraded", "attachment_lowered"})


@check(id="prefix_stable", level="may", default=False)
def prefix_stable(_scenario: Scenario, outcome: CaseOutcome) -> None:
    """Consecutive turns share their request prefix, except at a compaction (cache hits): a
    message dropped, a result cleared or an attachment degraded anew, or a changed summary."""
    for before, after in itertools.pairwise(assembled_turns(outcome)):
        compacted = _deleted(after) - _deleted(before) or summary_text(after) != summary_text(
            before
        )
        if compacted:
            continue
        old = [m.digest for m in before.view.messages]
        new = [m.digest for m in after.view.messages]
        shared = next(
            (i for i, (a, b) in enumerate(zip(old, new, strict=False)) if a != b),
            min(len(old), len(new)),
        )
        if shared < len(old) or before.view.tools != after.view.tools:
            where = "tool schemas" if shared >= len(old) else f"view messages[{shared}]"
            raise Failure(
                "request prefix changed without a compaction",
                f"turn {after.turn.turn} differs from turn {before.turn.turn} at {where} "
                f"({shared} of {len(old)} earlier messages reused)",
            )


def _has_attachment(message: Message) -> bool:
    """Whether the message carries an image or a file."""
    return any(isinstance(p, ImagePart | FilePart) for p in message.parts)


@check(id="attachments_degraded_first", level="may", default=False)
def attachments_degraded_first(_scenario: Scenario, outcome: CaseOutcome) -> None:
    """Attachments in the middle are degraded (placeholder) before middle text is cut."""
    final = final_assembled(outcome)
    if final is None:
        return
    session = final.session
    last_user = max(
        (i for i, m in enumerate(session.messages) if m.role == "user"), default=len(session)
    )
    intact = [
        i
        for i in range(last_user)
        if _has_attachment(session.messages[i]) and final.identity.kept_whole(i)
    ]
    cut = [
        i
        for i in range(last_user)
        if not _has_attachment(session.messages[i])
        and session.messages[i].role in {"user", "assistant", "tool"}
        and final.identity.sources[i] == "dropped"
    ]
    if intact and cut:
        raise Failure(
            "text cut while an attachment was kept whole",
            f"{describe(session, cut[0])} was dropped but {describe(session, intact[0])} still "
            f"carries its attachment",
        )


@check(id="memory_labelled", level="may", default=False)
def memory_labelled(scenario: Scenario, outcome: CaseOutcome) -> None:
    """Memory items are injected (up to memory.max_items), each labelled with its source."""
    final = final_assembled(outcome)
    if final is None:
        return
    cap = int((knob(scenario, "memory") or {}).get("max_items", 5))
    found = 0
    for item in scenario.memory:
        holders = [(i, m) for i, m in enumerate(final.view.messages) if str(item["text"]) in m.text]
        if not holders:
            continue
        found += 1
        i, message = holders[0]
        if message.role == "assistant" or str(item["source"]) not in message.text:
            raise Failure(
                "memory not labelled",
                f"view messages[{i}] ({message.role}) carries memory from {item['source']!r} "
                f"without naming its source",
            )
    wanted = min(cap, len(scenario.memory))
    if found != wanted:
        raise Failure(
            "memory injection count",
            f"{found} memory item(s) in the view; expected {wanted} "
            f"({len(scenario.memory)} offered, cap {cap})",
        )
