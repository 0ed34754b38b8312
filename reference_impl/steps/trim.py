"""Cutting the middle: degrade attachments, clear old results, then delete by tier.

Keep priority inside the middle, highest kept longest: an earlier summary; short
error results (the newest ``keep_middle_error_results``); plain user/assistant turns; successful
(verbose) tool rings, which go first. Within a tier the oldest unit goes first. A ring is always
deleted as one unit.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Final

from reference_impl.steps.state import KEEP_ORDER, AssemblyState, Tier, Unit
from reference_impl.transcript import (
    FilePart,
    ImagePart,
    Message,
    Part,
    TextPart,
    ToolCallPart,
    ToolResultPart,
)

__all__ = [
    "CHARS_PER_TOKEN_CEILING",
    "CLEARED_RESULT_TEXT",
    "DROP_STEPS",
    "KEEP_ORDER",
    "classify_middle",
    "clear_tool_results",
    "degrade_attachments",
    "degrade_message",
    "drop_middle_by_tier",
    "has_attachment",
    "is_short_error_ring",
    "short_error",
    "unit_chars",
]

# Fixed text, like Anthropic's server-side clear_tool_uses edit: ids and calls stay, content goes.
CLEARED_RESULT_TEXT: Final = "[Old tool result content cleared to fit the context budget]"
DROP_STEPS: Final[tuple[tuple[Tier, str], ...]] = (
    ("verbose_ring", "drop_middle_rings"),
    ("plain_turn", "drop_plain_turns"),
    ("error_ring", "drop_error_rings"),
    ("summary", "drop_old_summary"),
)
"""The step each tier's deletions are recorded as, in the order a report lists them."""


CHARS_PER_TOKEN_CEILING: Final = 8
"""An error ring with more than this many characters per allowed token is long without being
encoded: ordinary text runs 3-5 characters a token and only long repeated runs compress further,
which are not the short error messages this tier is for. It keeps the old end of a long session
unencoded (ARCHITECTURE section 6)."""


def unit_chars(messages: Sequence[Message]) -> int:
    """Characters of text, arguments and result text in a unit's messages (attachments count
    as 0)."""
    n = 0
    for m in messages:
        for p in m.parts:
            if isinstance(p, TextPart):
                n += len(p.text)
            elif isinstance(p, ToolCallPart):
                n += len(p.name) + len(p.arguments)
            elif isinstance(p, ToolResultPart):
                n += sum(len(c.text) for c in p.content if isinstance(c, TextPart))
    return n


def is_short_error_ring(state: AssemblyState, unit: Unit) -> bool:
    """An error ring within ``short_error_max_tokens`` (``short_error``)."""
    if not unit.has_error_result:
        return False
    return short_error(
        lambda: unit_chars(unit.messages),
        lambda: state.cost(unit),
        state.config.short_error_max_tokens,
    )


def short_error(chars: Callable[[], int], cost: Callable[[], int], limit: int) -> bool:
    """Whether an error ring of ``chars()`` characters costing ``cost()`` tokens is short: within
    ``limit`` tokens, encoded only when its characters allow it (``CHARS_PER_TOKEN_CEILING``)."""
    if chars() > limit * CHARS_PER_TOKEN_CEILING:
        return False
    return cost() <= limit


def classify_middle(state: AssemblyState) -> None:
    """Give middle units their tier. Only the newest short error rings are raised above turns."""
    left = state.config.keep_middle_error_results
    for unit in reversed(state.units):
        if unit.bucket != "middle":
            continue
        if unit.kind == "ring":
            short = left > 0 and is_short_error_ring(state, unit)
            unit.tier = "error_ring" if short else "verbose_ring"
            left -= short
        elif unit.kind == "summary":
            unit.tier = "summary"
        else:
            unit.tier = "plain_turn"


def _attachment_name(part: ImagePart | FilePart) -> str:
    if isinstance(part, FilePart) and part.filename:
        return part.filename
    if part.source == "base64":
        digest = hashlib.sha256(part.data.encode("utf-8")).hexdigest()[:12]
        return f"{part.media_type or part.kind} sha256:{digest}"
    return part.data if len(part.data) <= 200 else part.data[:200] + "…"


def _placeholder(part: ImagePart | FilePart) -> TextPart:
    return TextPart(f"[{part.kind} omitted to fit the context budget: {_attachment_name(part)}]")


def degrade_message(message: Message) -> Message:
    """The message with every image/file (also inside tool results) replaced by a placeholder."""
    parts: list[Part] = []
    for p in message.parts:
        if isinstance(p, ImagePart | FilePart):
            parts.append(_placeholder(p))
        elif isinstance(p, ToolResultPart) and any(
            isinstance(c, ImagePart | FilePart) for c in p.content
        ):
            content = tuple(
                _placeholder(c) if isinstance(c, ImagePart | FilePart) else c for c in p.content
            )
            parts.append(replace(p, content=content))
        else:
            parts.append(p)
    return replace(message, parts=tuple(parts))


def has_attachment(messages: Sequence[Message]) -> bool:
    """Whether any of ``messages`` holds an image or a file (also inside a tool result)."""
    return any(
        isinstance(p, ImagePart | FilePart)
        or (
            isinstance(p, ToolResultPart)
            and any(isinstance(c, ImagePart | FilePart) for c in p.content)
        )
        for m in messages
        for p in m.parts
    )


def degrade_attachments(state: AssemblyState) -> None:
    """Replace images/files in the middle by a named placeholder, oldest first, before any text
    of the middle is cut, until the view fits (``AssemblyState.cut_budget``: the budget, less
    the ``compaction_headroom`` once the middle must be cut).

    A middle without attachments is left as it is, uncounted (the fill counts what it keeps).
    Otherwise linear: the fit is kept as a running total over the middle in keep order (the
    order the fill keeps it, ``AssemblyState.keep_order``), walked until the first unit that
    overflows (the *window*); degrading a unit outside the window cannot change that verdict,
    and degrading one inside it lowers the total by what it won, after which the window grows
    while it fits. So each unit is counted at most twice (as it was, and degraded), what the
    fill will drop is not counted, and which attachments go does not depend on the order (the
    step stops at the first one after which the whole middle fits).
    """
    order = state.keep_order()
    if not any(has_attachment(u.messages) for u in order):
        return
    room = state.cut_budget() - state.fixed_cost
    rank = {id(u): k for k, u in enumerate(order)}
    used, reach = 0, 0  # order[:reach] is counted
    while reach < len(order) and used <= room:
        used += state.cost(order[reach])
        reach += 1
    if used <= room:  # the whole middle fits (room >= 0, as used >= 0)
        return
    # Some middle unit holds an attachment, so the loop degrades one at least.
    for unit in [u for u in state.units if u.kept and u.bucket == "middle"]:  # oldest first
        if not has_attachment(unit.messages):
            continue
        counted = rank[id(unit)] < reach
        before = state.cost(unit) if counted else 0
        unit.replace_messages(tuple(degrade_message(m) for m in unit.messages))
        state.degraded_attachment_ids.append(unit.id)
        if counted:
            used += state.cost(unit) - before
        while reach < len(order) and used <= room:  # the window grows while it fits
            used += state.cost(order[reach])
            reach += 1
        if used <= room and reach == len(order):  # (used >= 0, so room >= 0 too)
            break  # fits() would now say True
    state.record("degrade_attachments")


def _cleared(message: Message) -> Message:
    parts = tuple(
        replace(p, content=(TextPart(CLEARED_RESULT_TEXT),)) if isinstance(p, ToolResultPart) else p
        for p in message.parts
    )
    return replace(message, parts=parts)


def clear_tool_results(state: AssemblyState) -> None:
    """``clear_tool_result`` mode: replace old successful results by a fixed placeholder, oldest
    first, keeping calls and ids; a ring is cleared only when that wins ``clear_min_tokens_won``,
    until the view fits ``AssemblyState.cut_budget``."""
    if state.config.middle_delete_unit != "clear_tool_result":
        return
    target = state.cut_budget()
    if state.fits(target):
        return
    changed = False
    for unit in state.units:
        if not (unit.kept and unit.bucket == "middle" and unit.tier == "verbose_ring"):
            continue
        before = state.cost(unit)
        cleared = (unit.messages[0], *(_cleared(m) for m in unit.messages[1:]))
        after = sum(state.counter.count_message(m) for m in cleared)
        won = before - after
        if won <= 0 or won < state.config.clear_min_tokens_won:
            continue
        unit.replace_messages(cleared)
        state.cleared_result_ids.extend(r.call_id for m in cleared[1:] for r in m.tool_results)
        changed = True
        if state.fits(target):
            break
    if changed:
        state.record("clear_tool_results")


def drop_middle_by_tier(state: AssemblyState) -> None:
    """Delete whole units of the middle in tier order until the rest fits the budget (less the
    ``compaction_headroom`` when something must go: ``AssemblyState.cut_budget``).

    Implemented as a fill in keep order (newest first within a tier), which keeps exactly what
    deleting oldest-first in drop order would keep, but encodes only what is kept plus one unit:
    the old end of a long history is dropped without being counted. The fill is its own fit
    test: it walks the middle in the order ``AssemblyState.fits`` does, so a middle that fits is
    kept whole with the same units counted.
    """
    room = state.cut_budget() - state.fixed_cost
    exhausted = room < 0
    dropped: dict[Tier, bool] = {}
    for unit in state.keep_order():
        if not exhausted:
            cost = state.cost(unit)
            if cost <= room:
                room -= cost
                continue
            exhausted = True
        unit.kept = False
        dropped[unit.tier] = True
        if unit.kind == "ring":
            state.dropped_ring_ids.append(unit.id)
        else:
            state.dropped_turn_ids.append(unit.id)
    if not dropped:
        return
    for tier, step in DROP_STEPS:
        if dropped.get(tier):
            state.record(step, revalidate=False)  # whole units only
    position = _order(state)
    state.dropped_ring_ids.sort(key=position)
    state.dropped_turn_ids.sort(key=position)


def _order(state: AssemblyState) -> Callable[[str], int]:
    positions = {u.id: i for i, u in enumerate(state.units)}
    return positions.__getitem__
