"""Make the view acceptable to the target shape without losing or inventing content.

Two invariants of provider-rules.md section 7 that trimming can break:

* **A user message comes first** (section 7.2; Bedrock B4, Gemini G1, old Anthropic A8). After
  trimming, the first message after the system text must be a ``user`` message.
  ``anchor_first_user`` protects, up front, the nearest user message before a protected
  assistant/ring that would otherwise open the conversation, and ``drop_leading_non_user`` drops
  middle units that are left in front of the first user message after trimming. Applied for every
  shape (harmless where it is not required), so a view renders validly in any shape.
* **Roles alternate** where the shape requires it. Deleting a unit between two turns of one side
  leaves two messages of that side in a row, and a summary inserted after the pinned goal is a
  second ``user`` message. ``normalize_view`` merges such neighbours, deterministically, as the
  last step before the final recount (and again when an assembly is rendered in another shape).
  What each shape requires (its ``ShapeCapabilities.merge_policy``):

  - ``bedrock-converse``: strict user/assistant alternation (B3): every pair below is merged;
  - ``gemini``: a functionCall turn must follow a user or functionResponse turn (G1), so only a
    plain model turn followed by a ring's model turn is merged. Full alternation (G4) is contested
    (an adk-go maintainer says it is not an API requirement) and the default profile does not
    enforce it, so user turns are left apart, byte-identical to the session;
  - ``anthropic-messages``: the current API merges consecutive same-role turns itself (A9 is the
    old profile), OpenAI shapes have no such rule: nothing is merged.

  The merges:

  - plain ``user`` + plain ``user`` (a summary included): one user message, parts in order;
  - plain ``assistant`` + plain ``assistant``: one assistant message;
  - a ring's ``tool`` message + a plain ``user`` message: the user's parts go *after* the
    results, in the same wire turn (results first, rule A3). The ring stays whole and first;
  - plain ``assistant`` + a ring's assistant message: the plain parts go *before* the calls,
    unless the ring's message opens with a thinking/reasoning block that must stay first
    (A13, B10); then the pair is left as it is.

  Never merged: two rings, anything placed between a ring's calls and its results, tool parts
  turned into text.

The merged message keeps the id of the message that carries the identity: the earlier one, or the
ring's assistant message, and the wire blocks no neutral part holds of both
(``normalize_transcript``). Merging is a pure function of the messages, so consecutive requests
stay byte-stable wherever their unmerged views are.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from dataclasses import replace
from itertools import islice, repeat
from typing import Final

from reference_impl.shapes import merge_policy, merged_with_extras, reasoning_opens_message
from reference_impl.shapes.base import MergePolicy
from reference_impl.steps.state import AssemblyState, Unit
from reference_impl.transcript import Message, ReasoningPart, Transcript
from reference_impl.transcript.model import INSTRUCTION_ROLES

__all__ = [
    "anchor_first_user",
    "drop_leading_non_user",
    "needs_alternation",
    "normalize_for_shape",
    "normalize_transcript",
    "normalize_view",
]

_WIRE_SIDE: Final = {"user": "user", "tool": "user", "assistant": "assistant"}
_TOOL_MESSAGE_KINDS: Final = frozenset({"tool_result", "text", "image", "file"})


def needs_alternation(shape: str) -> bool:
    """Whether the shape's default profile requires user/assistant alternation (B3, G1)."""
    return merge_policy(shape) is not None


def _opens_with_pinned_reasoning(message: Message) -> bool:
    first = message.parts[0] if message.parts else None
    return isinstance(first, ReasoningPart) and reasoning_opens_message(first.origin)


def _merge(earlier: Message, later: Message, policy: MergePolicy) -> Message | None:
    """The two messages as one wire turn, or None when they must (or need not) stay apart."""
    if policy == "function_call_turns" and not (
        earlier.role == "assistant" and not earlier.tool_calls and later.tool_calls
    ):
        return None
    side = _WIRE_SIDE.get(earlier.role)
    if side is None or side != _WIRE_SIDE.get(later.role):
        return None
    if later.role == "tool" or earlier.name != later.name:
        return None
    if earlier.role == "tool":  # a ring's results, then a plain user message (A3: results first)
        # (``later`` is a user message here: same side, and a tool message never merges.)
        if any(p.kind not in _TOOL_MESSAGE_KINDS for p in later.parts):
            return None
        return replace(earlier, parts=earlier.parts + later.parts)
    if earlier.tool_calls:  # a ring's assistant message is always followed by its results
        return None
    if later.tool_calls:  # plain assistant text, then a ring: the text goes before the calls
        if _opens_with_pinned_reasoning(later) or earlier.empty_tool_calls:
            return None
        return replace(later, parts=earlier.parts + later.parts)
    return replace(earlier, parts=earlier.parts + later.parts)


def normalize_view(
    messages: Sequence[Message], shape: str
) -> tuple[tuple[Message, ...], list[str]]:
    """``messages`` with same-side neighbours merged where ``shape`` requires alternation, and the
    ids of the messages that were merged into a neighbour (empty when nothing changed)."""
    out, absorbed, _ = _normalized(messages, shape)
    return out, absorbed


def normalize_transcript(
    view: Transcript,
    shape: str,
    make: Callable[[tuple[Message, ...]], Transcript] | None = None,
) -> tuple[Transcript, list[str]]:
    """``normalize_view`` of a transcript: a merged message also carries the raw blocks and
    fields of what it merged in ``shape``'s extras (``shapes.merged_with_extras``), which no
    address of the view names any more. ``make`` builds the merged view from its messages
    (``view.with_messages`` by default)."""
    merged, absorbed, _ = normalize_with_groups(view, shape, make)
    return merged, absorbed


def normalize_with_groups(
    view: Transcript,
    shape: str,
    make: Callable[[tuple[Message, ...]], Transcript] | None = None,
) -> tuple[Transcript, list[str], list[tuple[int, ...]]]:
    """``normalize_transcript``, and the indices in ``view`` of the messages each merged message
    holds (one group per merged message, in order)."""
    out, absorbed, groups = _normalized(view.messages, shape)
    if not absorbed:
        return view, absorbed, groups
    merged = view.with_messages(out) if make is None else make(out)
    return merged_with_extras(shape, view, merged, groups), absorbed, groups


def _normalized(
    messages: Sequence[Message], shape: str
) -> tuple[tuple[Message, ...], list[str], list[tuple[int, ...]]]:
    """``normalize_view``, and the indices of the messages each merged message holds (the
    groups of two messages or more, in order; ``carry_merged_extras``).

    Only a message on the same wire side as the one before it can merge into it (``_merge``;
    a merged message keeps that side), so only those are visited, found at C speed: a view of
    thousands of messages costs a pass over their roles, not a call per message."""
    policy = merge_policy(shape)
    if policy is None:
        return tuple(messages), [], []
    out: list[Message] = []
    absorbed: list[str] = []
    merged_groups: list[tuple[int, ...]] = []
    placed = 0  # messages[:placed] are in ``out``
    for index in _same_side(messages):
        out += messages[placed:index]
        previous = out[-1]
        placed = index + 1
        merged = _merge(previous, messages[index], policy)
        if merged is None:
            out.append(messages[index])
            continue
        absorbed.append(messages[index].id if merged.id == previous.id else previous.id)
        out[-1] = merged
        if merged_groups and merged_groups[-1][-1] == index - 1:
            merged_groups[-1] = (*merged_groups[-1], index)
        else:
            merged_groups.append((index - 1, index))
    out += messages[placed:]
    return tuple(out), absorbed, merged_groups


_SIDE_CODES: Final = {role: 1 if side == "user" else 2 for role, side in _WIRE_SIDE.items()}
_ROLE_OF: Final = operator.attrgetter("role")


def _same_side(messages: Sequence[Message]) -> list[int]:
    """The indices of the messages on the same wire side (``_WIRE_SIDE``) as the one before
    them, ascending: a pass over the roles at C speed, the rest a ``bytes.find`` between them."""
    sides = bytes(map(_SIDE_CODES.get, map(_ROLE_OF, messages), repeat(0)))
    same = bytes(map(operator.eq, sides, islice(sides, 1, None)))
    found: list[int] = []
    at = same.find(1)
    while at >= 0:
        if sides[at]:  # system and developer turns (no side) never merge
            found.append(at + 1)
        at = same.find(1, at + 1)
    return found


def normalize_for_shape(state: AssemblyState) -> None:
    """Set ``state.final_view``: the view with same-side neighbours merged where the shape
    requires alternation (``normalize_view``), recorded as ``normalize`` when anything merged."""
    view = state.view()
    state.final_view, merged = normalize_transcript(view, state.shape)
    state.merged_ids = merged
    if merged:
        state.steps.append("normalize")


# ------------------------------------------------------------------------ a user message first


def _opens_as_user(unit: Unit) -> bool:
    return unit.messages[0].role == "user"


def _conversational(unit: Unit) -> bool:
    return unit.kind != "injection" and unit.messages[0].role not in INSTRUCTION_ROLES


def anchor_first_user(state: AssemblyState) -> None:
    """Protect the nearest user message before a protected unit that would open the conversation
    without one (section 7.2). Nothing to do when the first user message is pinned."""
    units = state.units
    first = next(
        (i for i, u in enumerate(units) if _conversational(u) and u.bucket != "middle"), None
    )
    if first is None or _opens_as_user(units[first]):
        return
    for i in range(first - 1, -1, -1):
        unit = units[i]
        if unit.kind == "turn" and unit.messages[0].role == "user":
            unit.bucket = "suffix"
            state.notes.append("first_user_anchor_protected")
            return


def drop_leading_non_user(state: AssemblyState) -> None:
    """Drop kept middle units that would open the conversation before any user message."""
    dropped = False
    for unit in state.units:
        if not (unit.kept and _conversational(unit)):
            continue
        if _opens_as_user(unit) or unit.bucket != "middle":
            break
        unit.kept = False
        (state.dropped_ring_ids if unit.kind == "ring" else state.dropped_turn_ids).append(unit.id)
        dropped = True
    if dropped:
        state.record("drop_leading_non_user", revalidate=False)  # whole units only
