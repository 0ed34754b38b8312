"""Correct assemblers with different strategies: each must pass every ``must`` case it is run on.

* :class:`RingDropper`: drops whole middle units (rings first, then plain turns), oldest first,
  keeping the system text, the goal, the last ``recent_tool_rings`` rings with what follows and
  the latest user turn; pins a ledger note for dropped side effects.
* :class:`KeepFewerRings`: the same, but keeps only the newest ring whatever the config says,
  and drops plain turns before rings.
* :class:`ResultClearer`: Anthropic-context-editing style: replaces old tool results by a
  placeholder (ids kept), oldest first, then drops whole rings if that is not enough.
* :class:`Compactor`: Codex style: replaces the whole middle by one plain assistant message of its
  own wording (no markers), listing what was done and the ledger.
* :class:`ClearOlderResults`: the result clearer, honouring ``recent_tool_rings``: only rings
  older than the last ones lose their results.
* :class:`SystemSummary`: the compactor, its summary a system message right after the system text
  (a block of the top-level system where the shape has one).
* :class:`ParenthesesClearer`: the same, its placeholder in parentheses instead of brackets;
  :class:`NamedResultClearer` names the tool and the call in it (``[search result (call_mx5)
  cleared]``).
* :class:`PassThrough`: sends the session unchanged when it fits, refuses otherwise (valid only
  where the session fits).
* :class:`ClearAllResults`: the result clearer, clearing error results too (Anthropic's context
  editing clears whatever the status).
* :class:`CodexCompactor`: everything between the goal and the newest ring becomes one message of
  its own wording right before that ring: a user turn as Codex writes it, an assistant turn where
  the shape merges same-side neighbours (there it folds into the ring's call turn).
* :class:`UserTurnCompactor`: the Codex compactor, its summary a user turn in every shape (merged
  into the goal's turn where the shape merges same-side neighbours); :class:`SummaryInGoalText`
  appends it to the goal's text (one string).
* :class:`OneSystemText`: the ring dropper, sending its system texts and its ledger note as one
  system text (Anthropic's ``system`` string, a Chat client that joins its system messages).
* :class:`ProseLedger`: the ring dropper, writing its ledger note in sentences of its own
  ("notify_ops already ran (idempotency key notify-7781, succeeded), producing msg_991.") as a
  system message of its own; :class:`ProseLedgerOneSystemText` joins it after the system text
  into one system text, :class:`LedgerFirstSystemText` puts it before the system text.
* :class:`LedgerInUserTurn`: the ring dropper, sending its prose ledger note as a user message
  right before the latest user turn (a block of that turn where the shape merges neighbours).
* :class:`LedgerInLatestText`: the same note appended to the latest user turn's text.
* :class:`JoinedTurns`: the ring dropper, joining neighbouring plain turns of one role that its
  cuts leave side by side into one string (as clients do for providers that want alternation).
* :class:`AttachmentDegrader`: before dropping anything, replaces the images and files of the
  middle (inside tool results too) by a placeholder of its own wording, one by one, oldest first.
* :class:`LowDetailFirst`: the same, but first sends the middle's images at low detail (the
  OpenAI shapes' cheap mode), then degrades them if that is not enough.
* :class:`JsonLedger`, :class:`TableLedger`, :class:`YamlLedger`, :class:`XmlLedger`,
  :class:`CsvLedger`: the ring dropper, its ledger note as pretty-printed JSON, a Markdown table
  under a heading, YAML, an XML element per entry or CSV.
* :class:`GapMarker`: the ring dropper, leaving a bracketed marker of its own where it dropped
  messages (a user turn); :class:`SkippedMarker` words it as AutoGen does, unbracketed
  (``Skipped 3 messages.``); :class:`AssistantGapMarker` sends it as an assistant turn.
* :class:`PlainImagePlaceholder`: the attachment degrader, its placeholder a plain sentence;
  :class:`DescribedPlaceholder` names and describes the attachment inside its brackets.
* :class:`ReversedSchemas`: the ring dropper, offering the tool schemas in reverse order.
* :class:`MemoryInjector`: the ring dropper, injecting the offered memory items after the system
  text in a framing of its own ("Relevant memory:", one "- (source) text" line each).
* :class:`FewestSchemasDropped`: the ring dropper, its schema escalation leaving out only as many
  tool schemas (the largest first) as the budget needs.
* :class:`WireDressed`: the ring dropper, its body in other valid spellings of the shape (prompt
  caching blocks, contents as lists of text parts, compact sorted JSON arguments...).

``FUNCTIONS`` holds plain message functions (``f(messages, budget)`` and the keyword form) that
drop whole units oldest first, for every shape.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar

from conformance.protocol import MESSAGE_KEYS, AssemblyRequest, Refusal
from conformance.scenarios import DEFAULT_MODELS
from miniatures._kit import (
    STRICT,
    Miniature,
    Unit,
    acceptable,
    acceptable_order,
    after_system,
    cost,
    dropped_effects,
    goal_index,
    latest_user_index,
    ledger_note,
    merge_same_side,
    prose_ledger_note,
    render,
    session_of,
    system_indices,
    units_of,
)
from reference_impl.rings import validate
from reference_impl.shapes import get_shape
from reference_impl.shapes.dialects import render_for_dialect
from reference_impl.tokens import TokenCounter, counter_for
from reference_impl.transcript import (
    SHAPE_NAMES,
    FilePart,
    ImagePart,
    Message,
    Part,
    TextPart,
    ToolResultPart,
    Transcript,
)


def _protected(
    session: Transcript, units: list[Unit], rings_kept: int
) -> tuple[set[int], list[Unit]]:
    """(protected session indices, deletable middle units in session order)."""
    keep = set(system_indices(session))
    goal = goal_index(session)
    latest = latest_user_index(session)
    keep.update(i for i in (goal, latest) if i is not None)
    rings = [u for u in units if u.is_ring]
    if rings and rings_kept > 0:
        oldest = rings[-rings_kept:][0]
        keep.update(range(oldest.start, len(session.messages)))
    middle = [u for u in units if not any(i in keep for i in u.indices)]
    return keep, middle


def _knob(request: AssemblyRequest, name: str, default: int) -> int:
    config = request.config.get("context_assembly", request.config)
    value = config.get(name, default)
    return value if isinstance(value, int) else default


@dataclass(slots=True)
class Dropped:
    """What a ring dropper has cut so far: session indices and the calls of the rings among them."""

    indices: set[int] = field(default_factory=set)
    calls: set[str] = field(default_factory=set)


class RingDropper(Miniature):
    rings_first = True

    def rings_kept(self, request: AssemblyRequest) -> int:
        return _knob(request, "recent_tool_rings", 3)

    def cut(
        self, request: AssemblyRequest, session: Transcript, messages: list[Message]
    ) -> Mapping[str, Any]:
        units = units_of(session)
        _, middle = _protected(session, units, self.rings_kept(request))
        order = [u for u in middle if u.is_ring] + [u for u in middle if not u.is_ring]
        if not self.rings_first:
            order = [u for u in middle if not u.is_ring] + [u for u in middle if u.is_ring]
        dropped = Dropped()
        for unit in order:
            dropped.indices.update(unit.indices)
            dropped.calls.update(unit.call_ids)
            view = self._view(request, session, dropped)
            if cost(request, view, session) <= request.budget and acceptable(request, view):
                return self.finish(request, session, view)
        return self.finish(request, session, self._view(request, session, dropped))

    def _view(
        self, request: AssemblyRequest, session: Transcript, dropped: Dropped
    ) -> list[Message]:
        kept = [m for i, m in enumerate(session.messages) if i not in dropped.indices]
        note = self.note_text(request, dropped.calls)
        return kept if note is None else self.noted(session, kept, note)

    def note_text(self, request: AssemblyRequest, dropped_calls: set[str]) -> str | None:
        """The ledger note for the side effects of ``dropped_calls`` (None without any)."""
        note = ledger_note(request, dropped_calls)
        return None if note is None else note.text

    def noted(self, session: Transcript, kept: list[Message], note: str) -> list[Message]:
        """``kept`` with ``note`` where this miniature puts it: a system message after the
        system texts."""
        return after_system(kept, Message("system", (TextPart(note),)))


class KeepFewerRings(RingDropper):
    rings_first = False

    def rings_kept(self, request: AssemblyRequest) -> int:
        return min(1, super().rings_kept(request))


PLACEHOLDER = "[old tool result cleared to save context]"


class ResultClearer(Miniature):
    """Clears old successful results (keeping the newest ring), then drops rings if needed."""

    clear_errors = False
    placeholder = PLACEHOLDER

    def rings_kept(self, request: AssemblyRequest) -> int:
        """How many of the newest rings keep their results (this one: only the newest)."""
        return min(1, _knob(request, "recent_tool_rings", 3))

    def cut(
        self, request: AssemblyRequest, session: Transcript, messages: list[Message]
    ) -> Mapping[str, Any]:
        units = units_of(session)
        _, middle = _protected(session, units, self.rings_kept(request))
        rings = [u for u in middle if u.is_ring]
        names = {c.id: c.name for m in session.messages for c in m.tool_calls}
        for ring in rings:
            for i in ring.indices:
                if messages[i].tool_results:
                    messages[i] = _cleared(
                        messages[i], self.placeholder, errors=self.clear_errors, names=names
                    )
            if cost(request, messages, session) <= request.budget:
                return self.finish(request, session, messages)
        dropped: set[int] = set()
        for unit in [*rings, *(u for u in middle if not u.is_ring)]:
            dropped.update(unit.indices)
            view = [m for i, m in enumerate(messages) if i not in dropped]
            if cost(request, view, session) <= request.budget and acceptable(request, view):
                return self.finish(request, session, view)
        return self.finish(
            request, session, [m for i, m in enumerate(messages) if i not in dropped]
        )


class ClearOlderResults(ResultClearer):
    """Clears the results of every ring older than the last ``recent_tool_rings`` (the knob
    honoured: the newest rings keep their results), then drops whole rings if needed."""

    def rings_kept(self, request: AssemblyRequest) -> int:
        return _knob(request, "recent_tool_rings", 3)


class ParenthesesClearer(ClearOlderResults):
    """Clears the older rings' results with a placeholder of its own in parentheses."""

    placeholder = "(old tool output removed to save context)"


class NamedResultClearer(ClearOlderResults):
    """Clears the older rings' results with a placeholder naming the tool and the call:
    ``[search result (call_mx5) cleared]``."""

    placeholder = "[{tool} result ({call_id}) cleared]"


def _cleared(
    message: Message,
    placeholder: str,
    *,
    errors: bool = False,
    names: Mapping[str, str] | None = None,
) -> Message:
    """``message`` with its (successful, or all) results replaced by ``placeholder``, which may
    name the call's ``{tool}`` and ``{call_id}``."""
    names = names or {}
    parts = tuple(
        replace(
            p,
            content=(
                TextPart(placeholder.format(tool=names.get(p.call_id, "tool"), call_id=p.call_id)),
            ),
        )
        if isinstance(p, ToolResultPart) and (errors or not p.is_error)
        else p
        for p in message.parts
    )
    return replace(message, parts=parts)


class Compactor(Miniature):
    """Replaces everything between the goal and the recent part with its own plain summary."""

    def cut(
        self, request: AssemblyRequest, session: Transcript, messages: list[Message]
    ) -> Mapping[str, Any]:
        goal = goal_index(session)
        if goal is None:
            raise Refusal("no goal to keep", code="miniature_over_budget")
        # Keep the longest recent part that starts at a user turn and fits with the summary, so
        # the summary (an assistant turn) always sits between two user turns. Where the shape
        # carries a ring's results and the next user text in one turn (Bedrock, Gemini), that
        # turn's text can start the recent part: its results go into the summary with their calls.
        starts = [
            i
            for i, m in enumerate(messages)
            if i > goal + 1
            and m.text
            and (m.role == "user" or (m.role == "tool" and m.tool_results))
        ]
        if not starts:  # nothing between two user turns to compact
            return self.finish(request, session, messages)
        for start in starts:
            span = messages[goal + 1 : start + 1 if messages[start].tool_results else start]
            head = messages[start]
            if head.tool_results:
                head = Message("user", tuple(p for p in head.parts if isinstance(p, TextPart)))
            for detail in (2, 1, 0):
                text = self._summary(request, span, detail)
                if "\n" not in text:
                    continue  # a header alone says nothing of what it replaces
                summary = Message("assistant", (TextPart(text),))
                view = [*messages[: goal + 1], summary, head, *messages[start + 1 :]]
                if cost(request, view, session) <= request.budget and acceptable(request, view):
                    return self.finish(request, session, view)
        raise Refusal("cannot compact into the budget", code="miniature_over_budget")

    @staticmethod
    def take_summary(messages: list[Message]) -> Message | None:
        """Its summary, taken out of ``messages`` (None where it compacted nothing)."""
        at = next(
            (
                i
                for i, m in enumerate(messages)
                if m.role == "assistant" and m.text.startswith("Summary of")
            ),
            None,
        )
        return None if at is None else messages.pop(at)

    @staticmethod
    def _summary(request: AssemblyRequest, span: list[Message], detail: int) -> str:
        """Its own wording, shorter with a lower ``detail``; the ledger facts always."""
        lines = ["Summary of the earlier conversation (compacted):"]
        if detail >= 1:
            lines.extend(f"- called {c.name} ({c.id})" for m in span for c in m.tool_calls)
        if detail >= 2:
            lines.extend(
                f"- {m.role}: {m.text[:60]}"
                for m in span
                if m.role in {"user", "assistant"} and m.text
            )
        if detail == 0:
            found = {w for m in span for w in re.findall(r"[A-Za-z]{5,}", m.text)}
            words = sorted(found, key=lambda w: (-len(w), w))[:4]
            tools = sorted({c.name for m in span for c in m.tool_calls})
            used = f" using {', '.join(tools)}" if tools else ""
            lines.append(f"- {len(span)} earlier messages{used} about {' '.join(words)}")
        calls = {c.id for m in span for c in m.tool_calls}
        lines.extend(
            f"- side effect: {e['tool']} key={e.get('idempotency_key') or '-'} "
            f"resource={e.get('resource_id') or '-'} status={e['status']}"
            for e in dropped_effects(request, calls)
        )
        return "\n".join(lines)


class SystemSummary(Compactor):
    """The compactor, sending its summary as a system message right after the system text (as
    memory classes that keep a running summary in a system message do)."""

    def finish(
        self, request: AssemblyRequest, session: Transcript, messages: list[Message]
    ) -> Mapping[str, Any]:
        summary = self.take_summary(messages)
        if summary is not None:
            messages = after_system(messages, Message("system", summary.parts))
        return super().finish(request, session, messages)


class PassThrough(Miniature):
    """Sends the session unchanged when it fits (same-side neighbours merged where the shape
    requires it); refuses otherwise (the base's :meth:`~Miniature.cut`)."""


class ClearAllResults(ResultClearer):
    """Clears old results whatever their status, error results included."""

    clear_errors = True


class CodexCompactor(Miniature):
    """One message of its own wording in place of everything between the goal and the newest
    ring (or the latest user turn, if that comes first); without room for it, the span goes."""

    def cut(
        self, request: AssemblyRequest, session: Transcript, messages: list[Message]
    ) -> Mapping[str, Any]:
        goal, latest = goal_index(session), latest_user_index(session)
        rings = [u for u in units_of(session) if u.is_ring]
        # Where the shape carries a ring's results and the next user text in one turn (Bedrock,
        # Gemini), the latest user text may be the goal's: the newest ring starts the tail then.
        starts = [
            i
            for i in (rings[-1].start if rings else None, latest)
            if i is not None and goal is not None and i > goal
        ]
        if goal is None or not starts or min(starts) <= goal + 1:
            raise Refusal("nothing to compact", code="miniature_over_budget")
        tail = min(starts)
        span = messages[goal + 1 : tail]
        role = self.summary_role()
        for detail in (2, 1, 0, None):
            text = "" if detail is None else self._text(request, span, detail)
            if detail is not None and "\n" not in text:
                continue  # a header alone says nothing of what it replaces
            middle = [Message(role, (TextPart(text),))] if text else []
            view = [*messages[: goal + 1], *middle, *messages[tail:]]
            if cost(request, view, session) <= request.budget and acceptable(request, view):
                return self.finish(request, session, view)
        raise Refusal("cannot compact into the budget", code="miniature_over_budget")

    def summary_role(self) -> str:
        """A user turn as Codex writes it; an assistant turn where the shape merges same-side
        neighbours (it folds into the ring's call turn)."""
        return "assistant" if self.shape in STRICT else "user"

    @staticmethod
    def _text(request: AssemblyRequest, span: list[Message], detail: int) -> str:
        return Compactor._summary(request, span, detail).replace(
            "Summary of the earlier conversation (compacted):", "Where we are so far:"
        )


class UserTurnCompactor(CodexCompactor):
    """The Codex compactor with its summary a user turn in every shape: where the shape merges
    same-side neighbours, it becomes a block of the goal's turn (with the latest user turn too
    when nothing is left between them)."""

    def summary_role(self) -> str:
        return "user"


class SummaryInGoalText(UserTurnCompactor):
    """The user-turn compactor, its summary appended to the goal's text (one string, as a
    client that keeps one opening user turn does; the shapes that merge same-side neighbours
    then merge the latest user turn into it as a second part)."""

    def finish(
        self, request: AssemblyRequest, session: Transcript, messages: list[Message]
    ) -> Mapping[str, Any]:
        goal = goal_index(session)
        at = None if goal is None else messages.index(session.messages[goal])
        if at is not None and at + 1 < len(messages) and _is_codex_summary(messages[at + 1]):
            summary = messages.pop(at + 1)
            text = f"{messages[at].text}\n\n{summary.text}"
            messages[at] = Message("user", (TextPart(text),))
        return super().finish(request, session, messages)


def _is_codex_summary(message: Message) -> bool:
    return message.role == "user" and message.text.startswith("Where we are so far:")


class OneSystemText(RingDropper):
    """Joins the system texts it sends (its ledger note included) into one."""

    def finish(
        self, request: AssemblyRequest, session: Transcript, messages: list[Message]
    ) -> Mapping[str, Any]:
        system = [m for m in messages if m.role == "system"]
        if len(system) > 1:
            joined = Message("system", (TextPart("\n\n".join(m.text for m in system)),))
            messages = [joined, *(m for m in messages if m.role != "system")]
        return super().finish(request, session, messages)


class ProseLedger(RingDropper):
    """The ring dropper, with its ledger note in sentences of its own wording (no label, no
    ``key=value`` fields) as a system message of its own after the system text."""

    def note_text(self, request: AssemblyRequest, dropped_calls: set[str]) -> str | None:
        return prose_ledger_note(request, dropped_calls)


class BareHeaderLedger(ProseLedger):
    """The prose ledger note under a header sentence that ends with a full stop, not a colon
    ("Side effects already done."): punctuation is no fact, so no reason to fail it."""

    def note_text(self, request: AssemblyRequest, dropped_calls: set[str]) -> str | None:
        note = prose_ledger_note(request, dropped_calls)
        return None if note is None else f"Side effects already done. {note}"


class LedgerInUserTurn(ProseLedger):
    """The prose ledger note as a user message right before the latest user turn (the shapes
    that merge same-side neighbours send it as a block of that turn)."""

    def noted(self, session: Transcript, kept: list[Message], note: str) -> list[Message]:
        latest = latest_user_index(session)
        if latest is None:
            return kept
        at = kept.index(session.messages[latest])
        return [*kept[:at], Message("user", (TextPart(note),)), *kept[at:]]


class LedgerInLatestText(ProseLedger):
    """The prose ledger note appended to the latest user turn's text (one string)."""

    def noted(self, session: Transcript, kept: list[Message], note: str) -> list[Message]:
        latest = latest_user_index(session)
        if latest is None:
            return kept
        at = kept.index(session.messages[latest])
        noted = Message("user", (TextPart(f"{kept[at].text}\n\n{note}"),))
        return [*kept[:at], noted, *kept[at + 1 :]]


class JoinedTurns(RingDropper):
    """The ring dropper, sending neighbouring plain user turns (and assistant texts) that its
    cuts leave side by side as one turn of one string, joined by a blank line."""

    def finish(
        self, request: AssemblyRequest, session: Transcript, messages: list[Message]
    ) -> Mapping[str, Any]:
        out: list[Message] = []
        for message in messages:
            last = out[-1] if out else None
            if (
                last is not None
                and last.role == message.role
                and message.role in {"user", "assistant"}
                and last.name == message.name
                and all(isinstance(p, TextPart) for p in (*last.parts, *message.parts))
                and last.text
                and message.text
            ):
                out[-1] = Message(message.role, (TextPart(f"{last.text}\n\n{message.text}"),))
                continue
            out.append(message)
        return super().finish(request, session, out)


class ProseLedgerOneSystemText(ProseLedger, OneSystemText):
    """The prose ledger note joined after its system texts into one system text."""


class LedgerFirstSystemText(ProseLedger):
    """One system text that opens with the prose ledger note, the system texts after it."""

    def finish(
        self, request: AssemblyRequest, session: Transcript, messages: list[Message]
    ) -> Mapping[str, Any]:
        system = [m for m in messages if m.role == "system"]
        if len(system) > 1:  # the note is the last system message _view made
            texts = [system[-1].text, *(m.text for m in system[:-1])]
            joined = Message("system", (TextPart("\n\n".join(texts)),))
            messages = [joined, *(m for m in messages if m.role != "system")]
        return super().finish(request, session, messages)


class AttachmentDegrader(RingDropper):
    """Degrades the middle's attachments, oldest first, before the ring dropper cuts anything."""

    placeholder = "(attachment not sent: {kind})"
    low_detail = False

    def cut(
        self, request: AssemblyRequest, session: Transcript, messages: list[Message]
    ) -> Mapping[str, Any]:
        keep, _ = _protected(session, units_of(session), self.rings_kept(request))
        middle = [i for i in range(len(messages)) if i not in keep]
        steps = [self._lowered, self._degraded] if self.low_detail else [self._degraded]
        for step in steps:
            for i in middle:
                changed = step(messages[i])
                if changed == messages[i]:
                    continue
                messages[i] = changed
                if cost(request, messages, session) <= request.budget:
                    return self.finish(request, session, messages)
        return super().cut(request, session.with_messages(messages), messages)

    def _degraded(self, message: Message) -> Message:
        return replace(message, parts=tuple(self._part(p) for p in message.parts))

    def _part(self, part: Part) -> Part:
        if isinstance(part, ImagePart | FilePart):
            return TextPart(self.placeholder.format(kind=part.kind))
        if isinstance(part, ToolResultPart):
            content = tuple(
                TextPart(self.placeholder.format(kind=c.kind))
                if isinstance(c, ImagePart | FilePart)
                else c
                for c in part.content
            )
            return replace(part, content=content)
        return part

    @staticmethod
    def _lowered(message: Message) -> Message:
        parts = tuple(
            replace(p, detail="low") if isinstance(p, ImagePart) else p for p in message.parts
        )
        return replace(message, parts=parts)


class LowDetailFirst(AttachmentDegrader):
    """Sends the middle's images at low detail first, then degrades them."""

    low_detail = True


class JsonLedger(RingDropper):
    """The ring dropper, its ledger note a header and the entries as pretty-printed JSON."""

    def note_text(self, request: AssemblyRequest, dropped_calls: set[str]) -> str | None:
        fields = ("tool", "call_id", "idempotency_key", "resource_id", "status")
        entries = [{k: e.get(k) for k in fields} for e in dropped_effects(request, dropped_calls)]
        if not entries:
            return None
        return "Side effects already executed (do not repeat):\n" + json.dumps(entries, indent=2)


class RowsLedger(RingDropper):
    """The ring dropper, its ledger note its ``head`` lines, a :meth:`row` per entry, its
    ``tail`` lines (no note without an entry)."""

    head: ClassVar[tuple[str, ...]] = ()
    tail: ClassVar[tuple[str, ...]] = ()

    def row(self, e: Mapping[str, Any]) -> str:
        raise NotImplementedError

    def note_text(self, request: AssemblyRequest, dropped_calls: set[str]) -> str | None:
        rows = [self.row(e) for e in dropped_effects(request, dropped_calls)]
        return "\n".join([*self.head, *rows, *self.tail]) if rows else None


class TableLedger(RowsLedger):
    """The ring dropper, its ledger note a Markdown heading and table."""

    head = (
        "## Executed side effects",
        "| tool | call id | idempotency key | resource | status |",
        "|---|---|---|---|---|",
    )

    def row(self, e: Mapping[str, Any]) -> str:
        return (
            f"| {e['tool']} | {e['call_id']} | {e.get('idempotency_key') or '-'} | "
            f"{e.get('resource_id') or '-'} | {e['status']} |"
        )


class YamlLedger(RowsLedger):
    """The ring dropper, its ledger note a header and the entries as YAML."""

    head = ("Side effects already executed:",)

    def row(self, e: Mapping[str, Any]) -> str:
        return "\n".join(
            [
                f"- tool: {e['tool']}",
                f"  call_id: {e['call_id']}",
                f"  idempotency_key: {e.get('idempotency_key') or 'null'}",
                f"  resource_id: {e.get('resource_id') or 'null'}",
                f"  status: {e['status']}",
            ]
        )


class XmlLedger(RowsLedger):
    """The ring dropper, its ledger note an XML element per entry."""

    head = ("<side_effects>",)
    tail = ("</side_effects>",)

    def row(self, e: Mapping[str, Any]) -> str:
        return (
            f'  <entry tool="{e["tool"]}" call_id="{e["call_id"]}" '
            f'idempotency_key="{e.get("idempotency_key") or ""}" '
            f'resource_id="{e.get("resource_id") or ""}" status="{e["status"]}"/>'
        )


class CsvLedger(RowsLedger):
    """The ring dropper, its ledger note a CSV header and a row per entry."""

    head = ("Executed side effects:", "tool,call_id,idempotency_key,resource_id,status")

    def row(self, e: Mapping[str, Any]) -> str:
        return (
            f"{e['tool']},{e['call_id']},{e.get('idempotency_key') or ''},"
            f"{e.get('resource_id') or ''},{e['status']}"
        )


class GapMarker(RingDropper):
    """The ring dropper, leaving a marker of its own where it dropped messages (a user turn, as
    AutoGen's head-and-tail context does): ``[3 earlier messages omitted to save context]``."""

    marker = "[{n} earlier messages omitted to save context]"
    role = "user"

    def _view(
        self, request: AssemblyRequest, session: Transcript, dropped: Dropped
    ) -> list[Message]:
        kept: list[Message] = []
        run = 0
        for i, message in enumerate(session.messages):
            if i in dropped.indices:
                run += 1
                continue
            if run:
                kept.append(Message(self.role, (TextPart(self.marker.format(n=run)),)))  # type: ignore[arg-type]
                run = 0
            kept.append(message)
        note = self.note_text(request, dropped.calls)
        return kept if note is None else self.noted(session, kept, note)


class SkippedMarker(GapMarker):
    """The gap marker in AutoGen's own words, unbracketed: ``Skipped 3 messages.``"""

    marker = "Skipped {n} messages."


class AssistantGapMarker(GapMarker):
    """The gap marker as an assistant turn (merged into the assistant text after it where the
    shape requires alternation)."""

    role = "assistant"


class PlainImagePlaceholder(AttachmentDegrader):
    """The attachment degrader, its placeholder a plain sentence: ``Image omitted to save
    context.``"""

    placeholder = "{kind} omitted to save context."


class DescribedPlaceholder(AttachmentDegrader):
    """The attachment degrader, its bracketed placeholder naming the attachment's kind and
    describing it: ``[image: screenshot of the login page, removed to save space]``."""

    placeholder = "[{kind}: screenshot of the login page, removed to save space]"


class MemoryInjector(RingDropper):
    """The ring dropper, injecting the offered memory items in a framing of its own after the
    system text: "Relevant memory:" and one "- (source) text" line per item."""

    def _view(
        self, request: AssemblyRequest, session: Transcript, dropped: Dropped
    ) -> list[Message]:
        view = super()._view(request, session, dropped)
        text = self.memory_text(request)
        return view if text is None else after_system(view, Message("system", (TextPart(text),)))

    def memory_text(self, request: AssemblyRequest) -> str | None:
        """The system text carrying the offered memory items (None without any)."""
        lines = [f"- ({m['source']}) {m['text']}" for m in request.memory]
        return "\n".join(["Relevant memory:", *lines]) if lines else None

    def assemble(self, request: AssemblyRequest) -> Mapping[str, Any]:
        """Cut even where the session fits: the memory items are added to every request."""
        session = session_of(request)
        return self.cut(request, session, list(session.messages))


class ReversedSchemas(RingDropper):
    """The ring dropper, offering the tool schemas in reverse order (a set, to the provider)."""

    def finish(
        self, request: AssemblyRequest, session: Transcript, messages: list[Message]
    ) -> Mapping[str, Any]:
        return super().finish(request, replace(session, tools=session.tools[::-1]), messages)


class WireDressed(RingDropper):
    """The ring dropper's body in other valid spellings of its shape, as SDKs and hand-written
    clients send them: Anthropic prompt caching (``cache_control`` on the system text, the last
    block and the last tool schema; the system text as blocks; tool results as text blocks),
    Bedrock ``cachePoint`` blocks, Chat and Responses contents as lists of text parts, a tool
    message carrying its call's function name, Responses messages as typed items and function
    outputs as ``input_text`` lists, tool-call arguments re-serialized as compact JSON with sorted
    keys. Nothing the model reads changes."""

    def finish(
        self, request: AssemblyRequest, session: Transcript, messages: list[Message]
    ) -> Mapping[str, Any]:
        body = json.loads(json.dumps(super().finish(request, session, messages)))
        dress = {
            "anthropic-messages": _dress_anthropic,
            "bedrock-converse": _dress_bedrock,
            "openai-chat": _dress_chat,
            "openai-responses": _dress_responses,
        }.get(self.shape)
        if dress is not None:
            dress(body)
        return dict(body)


def _canonical(arguments: str) -> str:
    return json.dumps(json.loads(arguments or "{}"), sort_keys=True, separators=(",", ":"))


def _dress_anthropic(body: dict[str, Any]) -> None:
    cache = {"type": "ephemeral"}
    system = body.get("system")
    if isinstance(system, str) and system:
        body["system"] = [{"type": "text", "text": system, "cache_control": cache}]
    elif isinstance(system, list) and system:
        system[-1]["cache_control"] = cache
    for message in body["messages"]:
        if isinstance(message["content"], str):
            message["content"] = [{"type": "text", "text": message["content"]}]
        for block in message["content"]:
            if block.get("type") == "tool_result" and isinstance(block.get("content"), str):
                block["content"] = [{"type": "text", "text": block["content"]}]
    body["messages"][-1]["content"][-1]["cache_control"] = cache
    if body.get("tools"):
        body["tools"][-1]["cache_control"] = cache


def _dress_bedrock(body: dict[str, Any]) -> None:
    if body.get("system"):
        body["system"].append({"cachePoint": {"type": "default"}})
    body["messages"][-1]["content"].append({"cachePoint": {"type": "default"}})


def _dress_chat(body: dict[str, Any]) -> None:
    names = {
        call["id"]: call["function"]["name"]
        for message in body["messages"]
        for call in message.get("tool_calls") or ()
    }
    for message in body["messages"]:
        for call in message.get("tool_calls") or ():
            call["function"]["arguments"] = _canonical(call["function"]["arguments"])
        if isinstance(message.get("content"), str) and message["content"]:
            message["content"] = [{"type": "text", "text": message["content"]}]
        if message["role"] == "tool" and message.get("tool_call_id") in names:
            message["name"] = names[message["tool_call_id"]]


def _dress_responses(body: dict[str, Any]) -> None:
    for item in body["input"]:
        if item.get("role") in {"user", "system", "developer"} and isinstance(
            item.get("content"), str
        ):
            item["type"] = "message"
            item["content"] = [{"type": "input_text", "text": item["content"]}]
        elif item.get("type") == "function_call":
            item["arguments"] = _canonical(item["arguments"])
        elif item.get("type") == "function_call_output" and isinstance(item.get("output"), str):
            item["output"] = [{"type": "input_text", "text": item["output"]}]


class FewestSchemasDropped(RingDropper):
    """The ring dropper, whose escalation (``on_still_over_budget: drop_tools_schema_then_fail``)
    leaves out tool schemas one at a time, the largest first, only as far as the budget needs:
    a small read-only tool stays offered."""

    def finish(
        self, request: AssemblyRequest, session: Transcript, messages: list[Message]
    ) -> Mapping[str, Any]:
        if self.shape in STRICT:
            messages = merge_same_side(messages)
        config = request.config.get("context_assembly", request.config)
        tools = list(session.tools)
        if config.get("on_still_over_budget") == "drop_tools_schema_then_fail":
            sizes = {
                t.name: request.counter.count(replace(session, tools=(t,), messages=())).total
                for t in tools
            }
            while tools and cost(request, messages, replace(session, tools=tuple(tools))) > (
                request.budget
            ):
                tools.remove(max(tools, key=lambda t: sizes[t.name]))
        session = replace(session, tools=tuple(tools))
        if cost(request, messages, session) > request.budget:
            raise Refusal("does not fit the budget", code="miniature_over_budget")
        return dict(render(request, session, messages))


GOOD: dict[str, type[Miniature]] = {
    "RingDropper": RingDropper,
    "KeepFewerRings": KeepFewerRings,
    "ResultClearer": ResultClearer,
    "Compactor": Compactor,
    "PassThrough": PassThrough,
    "ClearAllResults": ClearAllResults,
    "CodexCompactor": CodexCompactor,
    "OneSystemText": OneSystemText,
    "AttachmentDegrader": AttachmentDegrader,
    "LowDetailFirst": LowDetailFirst,
    "ClearOlderResults": ClearOlderResults,
    "ProseLedger": ProseLedger,
    "ProseLedgerOneSystemText": ProseLedgerOneSystemText,
    "BareHeaderLedger": BareHeaderLedger,
    "LedgerFirstSystemText": LedgerFirstSystemText,
    "LedgerInUserTurn": LedgerInUserTurn,
    "JoinedTurns": JoinedTurns,
    "LedgerInLatestText": LedgerInLatestText,
    "UserTurnCompactor": UserTurnCompactor,
    "SummaryInGoalText": SummaryInGoalText,
    "SystemSummary": SystemSummary,
    "ParenthesesClearer": ParenthesesClearer,
    "NamedResultClearer": NamedResultClearer,
    "JsonLedger": JsonLedger,
    "TableLedger": TableLedger,
    "YamlLedger": YamlLedger,
    "XmlLedger": XmlLedger,
    "CsvLedger": CsvLedger,
    "GapMarker": GapMarker,
    "SkippedMarker": SkippedMarker,
    "AssistantGapMarker": AssistantGapMarker,
    "PlainImagePlaceholder": PlainImagePlaceholder,
    "DescribedPlaceholder": DescribedPlaceholder,
    "ReversedSchemas": ReversedSchemas,
    "MemoryInjector": MemoryInjector,
    "WireDressed": WireDressed,
    "FewestSchemasDropped": FewestSchemasDropped,
}


# -- plain message functions -------------------------------------------------------------------


def fifo_function(shape: str, *, keywords: bool) -> Callable[..., list[dict[str, Any]]]:
    """A plain function over ``shape``'s message list: drops whole middle units oldest first
    (the system text, the goal, the newest ring and what follows kept), refuses when that is not
    enough. The plain form counts with the corpus model's counter for the shape; the keyword form
    ``(messages, budget, *, dialect, counter)`` counts with the case's and keeps Mistral's order."""
    key = MESSAGE_KEYS[shape]
    adapter = get_shape(shape)
    own = counter_for(shape, DEFAULT_MODELS[shape])

    def trim(
        messages: list[dict[str, Any]], budget: int, dialect: str | None, counter: TokenCounter
    ) -> list[dict[str, Any]]:
        session = adapter.parse_request({key: messages})
        if validate(session):
            raise Refusal("broken tool pairing in the session", code="miniature_pairing")
        units = units_of(session)
        _, middle = _protected(session, units, 1)
        dropped: set[int] = set()
        for unit in [None, *middle]:
            if unit is not None:
                dropped.update(unit.indices)
            kept = [m for i, m in enumerate(session.messages) if i not in dropped]
            if shape in STRICT:
                kept = merge_same_side(kept)
            view = session.with_messages(kept)
            fits = counter.count(view).total <= budget
            if fits and (dialect != "mistral" or acceptable_order(kept)):
                if dialect is not None and shape == "openai-chat":
                    return list(render_for_dialect(view, dialect)[key])
                return list(adapter.render_request(view)[key])
        raise Refusal("does not fit", code="miniature_over_budget")

    if keywords:

        def fifo(
            messages: list[dict[str, Any]],
            budget: int,
            *,
            dialect: str | None,
            counter: TokenCounter,
        ) -> list[dict[str, Any]]:
            return trim(messages, budget, dialect, counter)

        return fifo

    def fifo_plain(messages: list[dict[str, Any]], budget: int) -> list[dict[str, Any]]:
        return trim(messages, budget, None, own)

    return fifo_plain


FUNCTIONS: dict[str, Callable[..., list[dict[str, Any]]]] = {
    **{f"fifo[{shape}]": fifo_function(shape, keywords=True) for shape in SHAPE_NAMES},
    "fifo_plain[openai-chat]": fifo_function("openai-chat", keywords=False),
}
"""Plain message functions by name (``name[shape]``): the keyword form in every shape, the plain
form over OpenAI Chat (the shape whose corpus model a function can know without being told)."""
