"""Rings, plain turns and tool-call pairing.

A **ring** is one assistant message that carries tool calls plus the ``tool`` message(s) right after
it that answer those calls (with the reasoning artifacts inside the assistant message). It is the
unit of deletion: kept whole or dropped whole. Every other message is a **turn**.

``segment`` never fails: on a broken transcript it still returns segments (a ring may then be
incomplete, a tool message may stand alone as a turn). ``validate`` reports every pairing
violation with the message index, the ids involved, and the provider rule ids it would trigger.
"""

from __future__ import annotations

import operator
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from itertools import repeat
from typing import Final, Literal, TypeAlias, cast, get_args

from reference_impl.shapes import reasoning_opens_message
from reference_impl.transcript import (
    FilePart,
    ImagePart,
    Message,
    ReasoningPart,
    Role,
    SummaryPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    Transcript,
)
from reference_impl.transcript.model import KIND_OTHER, kind_codes, kind_positions

__all__ = [
    "VIOLATION_RULES",
    "Edge",
    "Pairing",
    "Ring",
    "Segment",
    "Turn",
    "Violation",
    "ViolationKind",
    "edges",
    "pairing",
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
        """Message indices the ring spans."""
        return range(self.start, self.stop)

    @property
    def complete(self) -> bool:
        """Whether every call of the ring has its result."""
        return set(self.call_ids) <= set(self.answered_ids) and len(self.call_ids) > 0

    @property
    def kind(self) -> Literal["ring"]:
        """Always ``ring`` (tells segments apart)."""
        return "ring"


@dataclass(frozen=True, slots=True)
class Turn:
    """One message that is not part of a ring."""

    index: int
    id: str
    role: Role

    @property
    def indices(self) -> range:
        """The one message index of the turn."""
        return range(self.index, self.index + 1)

    @property
    def kind(self) -> Literal["turn"]:
        """Always ``turn`` (tells segments apart)."""
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
    codes = kind_codes(messages)
    out: list[Segment] = []
    i = 0
    while i < len(messages):
        head = messages[i]
        if codes[i] != KIND_OTHER or not _is_ring_head(head):
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
    """The rings of a transcript, in order."""
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


# ----------------------------------------------------------------------------------- validate

VIOLATION_RULES: Final[Mapping[ViolationKind, tuple[str, ...]]] = {
    # Rule ids of provider-rules.md; "Mistral"/"Qwen" name gateway rows that carry no id.
    "unanswered_call": ("C1", "R1", "A1", "G3", "B2"),
    "orphan_result": ("C2", "R2", "A2", "G2", "B1"),
    "duplicate_id": ("C3", "A5", "R6"),
    "result_before_call": ("C2", "A2", "R2"),
    "results_split": ("A4", "B2", "G3"),
    "interleaved": ("C1a", "A1", "G2", "Mistral"),
    "text_before_results": ("A3", "A3a"),
    "reasoning_detached": ("R4", "A13", "G6"),
    "empty_tool_calls": ("C4", "Qwen"),
}
"""The provider rules each violation kind breaks, across shapes and dialects."""

_KIND_ORDER: Final[dict[str, int]] = {k: i for i, k in enumerate(get_args(ViolationKind))}
_TOOL_ROLES: Final = frozenset({"assistant", "tool"})


def _violation(kind: ViolationKind, index: int, ids: Sequence[str], detail: str) -> Violation:
    return Violation(kind, index, tuple(ids), VIOLATION_RULES[kind], detail)


def _quoted(ids: Sequence[str]) -> str:
    return ", ".join(repr(i) for i in ids)


@dataclass(frozen=True, slots=True)
class _Index:
    """Where every call id is made and answered (message indices, one entry per occurrence)."""

    calls: Mapping[str, Sequence[int]]
    results: Mapping[str, Sequence[int]]

    @staticmethod
    def of(messages: Sequence[Message], positions: Sequence[int]) -> _Index:
        """The index of the messages at ``positions`` (the only ones with tool parts)."""
        calls: dict[str, list[int]] = {}
        results: dict[str, list[int]] = {}
        for i in positions:
            message = messages[i]
            if message.role not in _TOOL_ROLES:  # only these can hold tool parts
                continue
            for part in message.parts:
                if isinstance(part, ToolCallPart):
                    calls.setdefault(part.id, []).append(i)
                elif isinstance(part, ToolResultPart):
                    results.setdefault(part.call_id, []).append(i)
        return _Index(calls, results)

    def first_result_after(self, call_id: str, index: int) -> int | None:
        return next((k for k in self.results.get(call_id, ()) if k > index), None)


def _duplicates(index: _Index) -> Iterator[Violation]:
    """C3, A5, R6: a call id made twice, or answered twice."""
    for occurrences, template in (
        (
            index.calls,
            (
                "The tool call id {id!r} is used again; it was first used {place}, "
                "and call ids must be unique."
            ),
        ),
        (
            index.results,
            (
                "The tool call {id!r} is answered a second time; its first result is {place}, "
                "and each call takes exactly one result."
            ),
        ),
    ):
        for call_id, where in occurrences.items():
            for later in where[1:]:
                first = where[0]
                place = "earlier in this message" if later == first else f"at messages[{first}]"
                yield _violation(
                    "duplicate_id", later, [call_id], template.format(id=call_id, place=place)
                )


def _ring_violations(
    messages: Sequence[Message], index: _Index, head: int, calls: Sequence[ToolCallPart]
) -> Iterator[Violation]:
    """One assistant message with calls: every call answered, right after it, in one message."""
    right_after = [head + 1]
    if all(index.results.get(c.id) == right_after for c in calls):
        return  # each answered once, in the message right after: the common case
    ids = list(dict.fromkeys(c.id for c in calls))
    answered_at = {i: index.first_result_after(i, head) for i in ids}
    unanswered = [i for i in ids if answered_at[i] is None]
    if unanswered:
        early = [i for i in unanswered if index.results.get(i)]
        note = f" (the result of {_quoted(early)} comes before the call instead)" if early else ""
        yield _violation(
            "unanswered_call",
            head,
            unanswered,
            f"The assistant message calls {_quoted(unanswered)} but no tool message after it "
            f"answers {'it' if len(unanswered) == 1 else 'them'}{note}.",
        )
    places = sorted({k for k in answered_at.values() if k is not None})
    if not places:
        return
    intruders = [j for j in range(head + 1, places[-1]) if j not in places]
    if intruders:
        first = intruders[0]
        late = [i for i in ids if (answered_at[i] or 0) > first]
        yield _violation(
            "interleaved",
            first,
            late,
            f"The {messages[first].role} message at messages[{first}] sits between the tool "
            f"calls at messages[{head}] "
            f"and their results at messages[{places[-1]}]; results must follow their calls "
            "with nothing in between.",
        )
    if len(places) > 1:
        spread = [i for i in ids if answered_at[i] not in (None, places[0])]
        where = ", ".join(f"messages[{k}]" for k in places)
        yield _violation(
            "results_split",
            places[1],
            spread,
            f"The results of the tool calls at messages[{head}] are spread over {len(places)} "
            f"tool messages ({where}); all results of one assistant turn belong in one message.",
        )


def _tool_message_violations(message: Message, index: _Index, at: int) -> Iterator[Violation]:
    """Orphans, results before their call, and text before the results (A3)."""
    results = message.tool_results
    if not results:
        yield _violation(
            "orphan_result",
            at,
            [],
            "The tool message holds no tool result, so it answers no tool call.",
        )
        return
    orphans: list[str] = []
    premature: list[str] = []
    for result in results:
        made = index.calls.get(result.call_id, ())
        if not made:
            orphans.append(result.call_id)
        elif min(made) > at:
            premature.append(result.call_id)
    if orphans:
        yield _violation(
            "orphan_result",
            at,
            orphans,
            f"The tool message answers {_quoted(orphans)}, which no assistant message calls.",
        )
    if premature:
        yield _violation(
            "result_before_call",
            at,
            premature,
            f"The tool message answers {_quoted(premature)} before the assistant message that "
            "makes the call; a result must come after its call.",
        )
    first_other = next(
        (j for j, p in enumerate(message.parts) if not isinstance(p, ToolResultPart)), None
    )
    if first_other is not None:
        after = [
            p.call_id for p in message.parts[first_other + 1 :] if isinstance(p, ToolResultPart)
        ]
        if after:
            kind = message.parts[first_other].kind
            yield _violation(
                "text_before_results",
                at,
                after,
                f"The {kind} part at parts[{first_other}] comes before the tool results for "
                f"{_quoted(after)}; tool results must come first and other content after them.",
            )


def _reasoning_reasons(message: Message) -> Iterator[tuple[ReasoningPart, str]]:
    parts = message.parts
    for j, part in enumerate(parts):
        if not isinstance(part, ReasoningPart):
            continue
        rest = parts[j + 1 :]
        if not any(not isinstance(p, ReasoningPart) for p in rest):
            yield (
                part,
                f"the {part.origin} reasoning at parts[{j}] has no part after it to belong to",
            )
        elif (
            part.origin == "openai-responses"
            and isinstance(rest[0], TextPart)
            and message.wire_id is None
        ):
            # R4 (recorded 400): the message after a reasoning item must be the original output
            # item, with its msg_ id; an id-less input message is not "its following item".
            yield (
                part,
                (
                    f"the openai-responses reasoning at parts[{j}] is followed by text without the "
                    "original message item id (msg_...), so it has lost the item it preceded"
                ),
            )
        elif part.origin == "gemini" and isinstance(rest[0], ReasoningPart) and _is_signature(part):
            # G6: a thoughtSignature travels on the very part that follows it.
            yield (
                part,
                f"the gemini thoughtSignature at parts[{j}] is not followed by the part it signs",
            )
        elif (
            reasoning_opens_message(part.origin)  # A13, B10
            and message.tool_calls
            and not isinstance(parts[0], ReasoningPart)
        ):
            yield (
                part,
                (
                    f"the {part.origin} thinking block at parts[{j}] does not open the assistant "
                    "message that carries the tool calls"
                ),
            )


def _is_signature(part: ReasoningPart) -> bool:
    try:
        value = part.value()
    except ValueError:
        return False
    return "thoughtSignature" in value and "thought" not in value


def _reasoning_id(part: ReasoningPart) -> str | None:
    try:
        value = part.value()
    except ValueError:
        return None
    item_id = value.get("id")
    return item_id if isinstance(item_id, str) else None


def _reasoning_violations(message: Message, at: int) -> Iterator[Violation]:
    """R4, A13, G6: a reasoning artifact stays attached to what it was produced with."""
    if message.parts and all(isinstance(p, ReasoningPart) for p in message.parts):
        origins = sorted({p.origin for p in message.parts if isinstance(p, ReasoningPart)})
        ids = [i for p in message.parts if isinstance(p, ReasoningPart) if (i := _reasoning_id(p))]
        yield _violation(
            "reasoning_detached",
            at,
            ids,
            f"The assistant message holds only reasoning ({', '.join(origins)}) and nothing "
            "it belongs to; keep reasoning with the text or tool calls it preceded.",
        )
        return
    reasons = list(_reasoning_reasons(message))
    if reasons:
        ids = [i for part, _ in reasons if (i := _reasoning_id(part))]
        text = "; ".join(reason for _, reason in reasons)
        yield _violation(
            "reasoning_detached",
            at,
            ids,
            f"Reasoning is detached in this assistant message: {text}.",
        )


def validate(transcript: Transcript) -> tuple[Violation, ...]:
    """Every pairing violation of the transcript, in message order (empty when valid).

    Each violation names the message index, the call ids involved and the provider rules it
    breaks (:data:`VIOLATION_RULES`). The neutral model keeps all results of a ring in one
    ``tool`` message, so two tool messages answering one assistant turn are ``results_split``
    even though OpenAI Chat sends them as consecutive messages (its shape merges them on parse).
    """
    messages = transcript.messages
    return pairing(messages, kind_positions(kind_codes(messages), KIND_OTHER)).violations


@dataclass(frozen=True, slots=True)
class Pairing:
    """The pairing facts of messages: their violations (``validate``), and the message indices
    where each call id is made and answered."""

    violations: tuple[Violation, ...]
    calls: Mapping[str, Sequence[int]]
    results: Mapping[str, Sequence[int]]


_PLAIN: Final = frozenset(
    {TextPart, SummaryPart, ToolCallPart, ToolResultPart, ImagePart, FilePart}
)
"""The exact part types that hold no reasoning: a message of only these takes no part in a
reasoning violation (``pairing`` skips the check; a subclass of a part is checked)."""
_CALL_ID: Final = operator.attrgetter("id")
_RESULT_CALL_ID: Final = operator.attrgetter("call_id")


def _answered_right_after(index: _Index, head: int, calls: Sequence[ToolCallPart]) -> bool:
    """Whether each call is answered once, in the message right after it (the common case, in
    which ``_ring_violations`` finds nothing), at C speed."""
    found = map(index.results.get, map(_CALL_ID, calls))
    return all(map(operator.eq, found, repeat([head + 1])))


def _answers_earlier_calls(message: Message, index: _Index, at: int) -> bool:
    """Whether a tool message holds only tool results (of the exact type), each answering a call
    made once, before it (the common case, in which ``_tool_message_violations`` finds
    nothing), at C speed."""
    parts = message.parts
    if not parts or set(map(type, parts)) != {ToolResultPart}:
        return False
    made = list(map(index.calls.get, map(_RESULT_CALL_ID, parts)))
    if None in made:
        return False
    return max(map(min, cast("list[Sequence[int]]", made))) < at


def pairing(messages: Sequence[Message], others: Sequence[int]) -> Pairing:
    """``validate`` of ``messages`` whose indices that are not of one text part are ``others``
    (ascending; ``kind_positions``): a message of one text part (and no empty tool_calls) can
    take part in no violation, so only the others are visited, which keeps a long session's
    check at C speed."""
    index = _Index.of(messages, others)
    found: list[Violation] = list(_duplicates(index))
    for at in others:
        message = messages[at]
        if message.empty_tool_calls:
            found.append(
                _violation(
                    "empty_tool_calls",
                    at,
                    [],
                    "The assistant message sends an empty tool_calls array; omit the field "
                    "when there are no calls.",
                )
            )
        if message.role == "assistant":
            types = set(map(type, message.parts))
            calls = message.tool_calls if ToolCallPart in types or not types <= _PLAIN else ()
            if calls and not _answered_right_after(index, at, calls):
                found.extend(_ring_violations(messages, index, at, calls))
            if not types <= _PLAIN:  # reasoning, or a part of a type of its own: checked
                found.extend(_reasoning_violations(message, at))
        elif message.role == "tool" and not _answers_earlier_calls(message, index, at):
            found.extend(_tool_message_violations(message, index, at))
    found.sort(key=lambda v: (v.message_index, _KIND_ORDER[v.kind]))
    return Pairing(tuple(found), index.calls, index.results)
