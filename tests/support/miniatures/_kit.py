"""What every miniature shares: reading the request, units of a session, fitting, rendering.

Written from the plug-in contract and the design's vocabulary only (docs/writing-a-plugin.md,
ARCHITECTURE.md): a miniature reads ``request.body`` with the project's shape adapters, cuts it its
own way, and renders it back. Nothing here calls the reference assembler or its pipeline steps.
"""

from __future__ import annotations

import itertools
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, ClassVar

from conformance.protocol import AssemblyRequest, Refusal
from reference_impl.rings import validate
from reference_impl.shapes import get_shape
from reference_impl.shapes.dialects import render_for_dialect
from reference_impl.transcript import Message, TextPart, Transcript

SIDE = {"user": "user", "tool": "user", "assistant": "assistant"}


def session_of(request: AssemblyRequest) -> Transcript:
    """The session as a transcript; a session with broken tool pairing is refused."""
    session = get_shape(request.shape).parse_request(request.body)
    if validate(session):
        raise Refusal("broken tool pairing in the session", code="miniature_pairing")
    return session


def cost(request: AssemblyRequest, messages: Sequence[Message], session: Transcript) -> int:
    """Tokens of ``messages`` (with the session's tools) by the request's counter."""
    return request.counter.count(session.with_messages(messages)).total


def render(request: AssemblyRequest, session: Transcript, messages: Sequence[Message]) -> Any:
    """The body for ``messages``, in the request's shape (and dialect)."""
    view = session.with_messages(messages)
    if request.dialect is not None and request.shape == "openai-chat":
        return render_for_dialect(view, request.dialect)
    return get_shape(request.shape).render_request(view)


@dataclass(frozen=True, slots=True)
class Unit:
    """A run of session messages deleted together: a ring (a call message and its results) or
    one plain message."""

    start: int
    stop: int
    call_ids: tuple[str, ...] = ()

    @property
    def indices(self) -> range:
        return range(self.start, self.stop)

    @property
    def is_ring(self) -> bool:
        return bool(self.call_ids)


def units_of(session: Transcript) -> list[Unit]:
    """Every message outside the leading system text, grouped into units, in order."""
    out: list[Unit] = []
    messages = session.messages
    i = 0
    while i < len(messages):
        message = messages[i]
        if message.role == "assistant" and message.tool_calls:
            j = i + 1
            while j < len(messages) and messages[j].tool_results:
                j += 1
            out.append(Unit(i, j, tuple(c.id for c in message.tool_calls)))
            i = j
            continue
        out.append(Unit(i, i + 1))
        i += 1
    return out


def system_indices(session: Transcript) -> list[int]:
    return [i for i, m in enumerate(session.messages) if m.role in {"system", "developer"}]


def user_text(message: Message) -> bool:
    """A user turn of text (no tool parts): the goal is the first, the latest user turn the last."""
    return message.role == "user" and not message.has_tool_parts and bool(message.text)


def goal_index(session: Transcript) -> int | None:
    return next((i for i, m in enumerate(session.messages) if user_text(m)), None)


def latest_user_index(session: Transcript) -> int | None:
    found = [i for i, m in enumerate(session.messages) if user_text(m)]
    return found[-1] if found else None


def dropped_effects(request: AssemblyRequest, calls: Collection[str]) -> list[Mapping[str, Any]]:
    """The ledger's side effects whose calls are among ``calls`` (what a note must keep)."""
    return [e for e in request.ledger if e.get("side_effect", True) and e["call_id"] in calls]


def after_system(messages: Sequence[Message], message: Message) -> list[Message]:
    """``messages`` with ``message`` after the system texts (as many places in as there are)."""
    at = sum(1 for m in messages if m.role in {"system", "developer"})
    return [*messages[:at], message, *messages[at:]]


def ledger_note(request: AssemblyRequest, dropped_calls: set[str]) -> Message | None:
    """A labelled system note with every field of the side effects whose calls were dropped."""
    lines = [
        f"- tool={e['tool']} idempotency_key={e.get('idempotency_key') or '-'} "
        f"resource_id={e.get('resource_id') or '-'} status={e['status']} call_id={e['call_id']}"
        for e in dropped_effects(request, dropped_calls)
    ]
    if not lines:
        return None
    text = "[source: execution ledger]\nSide effects already executed:\n" + "\n".join(lines)
    return Message("system", (TextPart(text),))


def prose_ledger_note(request: AssemblyRequest, dropped_calls: set[str]) -> str | None:
    """The side effects whose calls were dropped, in sentences of this kit's own wording (no
    label, no ``key=value`` fields), or None when there are none."""
    lines = [
        f"{e['tool']} already ran (idempotency key {e.get('idempotency_key') or e['call_id']}, "
        f"{e['status']}), producing {e.get('resource_id') or 'nothing to show'}."
        for e in dropped_effects(request, dropped_calls)
    ]
    return "\n".join([*lines, "Do not run them again."]) if lines else None


def merge_same_side(messages: Sequence[Message]) -> list[Message]:
    """Neighbours of one side merged (strict-alternation providers): user after user or after
    results joins that message; assistant after assistant joins it."""
    out: list[Message] = []
    for message in messages:
        if out:
            last = out[-1]
            same = SIDE.get(last.role) == SIDE.get(message.role) == "assistant" or (
                SIDE.get(last.role) == "user" and message.role == "user"
            )
            if same and last.name == message.name:
                out[-1] = replace(last, parts=last.parts + message.parts, wire_id=None)
                continue
        out.append(message)
    return out


def acceptable(request: AssemblyRequest, messages: Sequence[Message]) -> bool:
    """Whether the dialect takes this order (Mistral: no user message right after a tool
    message, 3230); a candidate view that breaks it is not sent, more is cut instead."""
    return request.dialect != "mistral" or acceptable_order(messages)


def acceptable_order(messages: Sequence[Message]) -> bool:
    """Mistral's order: no user message right after a tool message (3230)."""
    return not any(a.role == "tool" and b.role == "user" for a, b in itertools.pairwise(messages))


def _drops_tools(request: AssemblyRequest) -> bool:
    config = request.config.get("context_assembly", request.config)
    return config.get("on_still_over_budget") == "drop_tools_schema_then_fail"


STRICT = {"gemini", "bedrock-converse", "anthropic-messages"}


class Miniature:
    """Base: one instance per shape."""

    shape: ClassVar[str] = "openai-chat"

    def __init__(self, shape: str) -> None:
        self.shape = shape  # type: ignore[misc]

    def assemble(self, request: AssemblyRequest) -> Mapping[str, Any]:
        """The session unchanged when it fits the budget, else what :meth:`cut` makes of it."""
        session = session_of(request)
        messages = list(session.messages)
        if cost(request, messages, session) <= request.budget:
            return self.finish(request, session, messages)
        return self.cut(request, session, messages)

    def cut(
        self, request: AssemblyRequest, session: Transcript, messages: list[Message]
    ) -> Mapping[str, Any]:
        """The request for a session over the budget: this one sends it as it is (:meth:`finish`
        refuses it unless dropping the tool schemas is allowed and enough)."""
        return self.finish(request, session, messages)

    def finish(
        self, request: AssemblyRequest, session: Transcript, messages: list[Message]
    ) -> Mapping[str, Any]:
        """Merge for strict shapes, check the budget (refuse when over), render."""
        if self.shape in STRICT:
            messages = merge_same_side(messages)
        if cost(request, messages, session) > request.budget and _drops_tools(request):
            session = replace(session, tools=())  # the scenario's escalation knob allows it
        if cost(request, messages, session) > request.budget:
            raise Refusal("does not fit the budget", code="miniature_over_budget")
        return dict(render(request, session, messages))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.shape!r})"
