"""Rings, plain turns and tool-call pairing.

A **ring** is one assistant message that carries tool calls plus the ``tool`` message(s) right after
it that answer those calls (with the reasoning artifacts inside the assistant message). It is the
unit of deletion: kept whole or dropped whole. Every other message is a **turn**.

``segment`` never fails: on a broken transcript it still returns segments (a ring may then be
incomplete, a tool message may stand alone as a turn). ``validate`` reports every pairing
violation with the message index, the ids involved, and the provider rule ids it would trigger.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, TypeAlias

from reference_impl.transcript import Message, Role, Transcript

__all__ = [
    "Edge",
    "Ring",
    "Segment",
    "Turn",
    "Violation",
    "ViolationKind",
    "edges",
    "rings",
    "segment",
    "validate",
]


@dataclass(frozen=True, slots=True)
class Ring:
    """Messages ``start`` (the assistant with calls) up to ``stop`` (exclusive)."""

    start: int
    stop: int
    id: str
    call_ids: tuple[str, ...]
    answered_ids: tuple[str, ...]

    @property
    def indices(self) -> range:
        return range(self.start, self.stop)

    @property
    def complete(self) -> bool:
        return set(self.call_ids) <= set(self.answered_ids) and len(self.call_ids) > 0

    @property
    def kind(self) -> Literal["ring"]:
        return "ring"


@dataclass(frozen=True, slots=True)
class Turn:
    """One message that is not part of a ring."""

    index: int
    id: str
    role: Role

    @property
    def indices(self) -> range:
        return range(self.index, self.index + 1)

    @property
    def kind(self) -> Literal["turn"]:
        return "turn"


Segment: TypeAlias = "Ring | Turn"


@dataclass(frozen=True, slots=True)
class Edge:
    """One tool call and where it is answered (``result_index`` is None when unanswered)."""

    call_id: str
    call_index: int
    result_index: int | None


ViolationKind: TypeAlias = Literal[
    "unanswered_call",
    "orphan_result",
    "duplicate_id",
    "result_before_call",
    "results_split",
    "interleaved",
    "text_before_results",
    "reasoning_detached",
    "empty_tool_calls",
]


@dataclass(frozen=True, slots=True)
class Violation:
    """One pairing violation. ``rules`` are the provider rule ids (``provider-rules.md``) it breaks."""

    kind: ViolationKind
    message_index: int
    ids: tuple[str, ...]
    rules: tuple[str, ...]
    detail: str

    def __str__(self) -> str:
        ids = f" ({', '.join(self.ids)})" if self.ids else ""
        return f"messages[{self.message_index}] {self.kind}{ids} [{', '.join(self.rules)}]: {self.detail}"


def _is_ring_head(message: Message) -> bool:
    return message.role == "assistant" and bool(message.tool_calls)


def segment(transcript: Transcript) -> tuple[Segment, ...]:
    """Split a transcript into rings and turns, in order. Never raises."""
    messages = transcript.messages
    out: list[Segment] = []
    i = 0
    while i < len(messages):
        head = messages[i]
        if not _is_ring_head(head):
            out.append(Turn(i, head.id, head.role))
            i += 1
            continue
        call_ids = tuple(c.id for c in head.tool_calls)
        wanted = set(call_ids)
        answered: list[str] = []
        j = i + 1
        # A ring absorbs the tool messages right after it that answer at least one of its calls.
        while j < len(messages) and messages[j].role == "tool":
            results = messages[j].tool_results
            if not results or not any(r.call_id in wanted for r in results):
                break
            answered.extend(r.call_id for r in results if r.call_id in wanted)
            j += 1
        out.append(Ring(i, j, head.id, call_ids, tuple(answered)))
        i = j
    return tuple(out)


def rings(transcript: Transcript) -> tuple[Ring, ...]:
    return tuple(s for s in segment(transcript) if isinstance(s, Ring))


def edges(transcript: Transcript) -> tuple[Edge, ...]:
    """Every tool call with the index of the first message that answers it after the call."""
    answered_at: dict[str, list[int]] = {}
    for index, message in enumerate(transcript.messages):
        for result in message.tool_results:
            answered_at.setdefault(result.call_id, []).append(index)
    out: list[Edge] = []
    for index, message in enumerate(transcript.messages):
        for call in message.tool_calls:
            later = [k for k in answered_at.get(call.id, ()) if k > index]
            out.append(Edge(call.id, index, later[0] if later else None))
    return tuple(out)


def validate(transcript: Transcript) -> tuple[Violation, ...]:
    """Every pairing violation of the transcript, in message order (empty when valid)."""
    raise NotImplementedError("rings.validate is being written")
