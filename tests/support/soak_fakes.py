"""Assemblers written for the soak tests, in the neutral transcript (openai-chat on the wire).

Each keeps the system text and the first user message, then the newest whole units (rings and
plain turns) that fit the budget, counted with the request's reference counter: valid requests
that pass every ``must`` check. They differ only in what the long-run measurements must catch:

* :class:`DropLedger` never pins the ledger: once a side effect's ring falls out of the window,
  nothing in the request says it happened, and the simulated model repeats it.
* :class:`HeadSummary` re-inserts a summary at the head of every request, with the turn number in
  it: the request prefix changes every turn, so no prompt cache can serve it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any, ClassVar

from conformance.protocol import AssemblyRequest
from reference_impl.rings import segment
from reference_impl.shapes import get_shape
from reference_impl.transcript import Message, SummaryPart, TextPart, Transcript


def _newest_that_fit(request: AssemblyRequest, head: list[Message]) -> Transcript:
    adapter = get_shape(request.shape)
    session = adapter.parse_request(request.body)
    messages = session.messages
    pinned = [i for i, m in enumerate(messages) if m.role == "system"]
    first_user = next(i for i, m in enumerate(messages) if m.role == "user")
    pinned.append(first_user)
    units = [s.indices for s in segment(session) if s.indices[0] > first_user]
    chosen: list[range] = []
    for unit in reversed(units):
        trial = [unit, *chosen]
        kept = [*head, *(messages[i] for i in pinned), *(messages[i] for u in trial for i in u)]
        view = session.with_messages(m.with_id("") for m in kept)
        if request.counter.count(view).total > request.budget:
            break
        chosen = trial
    kept = [*head, *(messages[i] for i in pinned), *(messages[i] for u in chosen for i in u)]
    return session.with_messages(m.with_id("") for m in kept)


class DropLedger:
    """Newest whole units that fit; the ledger is never shown."""

    shape: ClassVar[str] = "openai-chat"

    def assemble(self, request: AssemblyRequest) -> Mapping[str, Any]:
        return get_shape(self.shape).render_request(_newest_that_fit(request, []))


class HeadSummary:
    """Like :class:`DropLedger`, with a new summary at the head of every request."""

    shape: ClassVar[str] = "openai-chat"

    def assemble(self, request: AssemblyRequest) -> Mapping[str, Any]:
        text = f"Summary before turn {request.turn}: {len(request.messages)} messages so far."
        head = [Message("system", (SummaryPart(text),))]
        return get_shape(self.shape).render_request(_newest_that_fit(request, head))


class DropLastResult:
    """Drops the newest tool result once the session holds 3 rings: an unanswered call."""

    shape: ClassVar[str] = "openai-chat"

    def assemble(self, request: AssemblyRequest) -> Mapping[str, Any]:
        view = _newest_that_fit(request, [])
        messages = list(view.messages)
        rings = sum(1 for m in request.messages if m.get("tool_calls"))
        if rings >= 3 and messages and messages[-1].role == "tool":
            messages.pop()
        return get_shape(self.shape).render_request(view.with_messages(messages))


class ClearOlderResults:
    """Like :class:`DropLedger`, with the results of every ring but the newest replaced by a
    placeholder no undeclared reading accepts (German, bare); it declares it
    (``ctxconf_result_placeholder``) unless ``declared`` is False."""

    shape: ClassVar[str] = "openai-chat"
    PLACEHOLDER: ClassVar[str] = "Werkzeugausgabe entfernt"

    def __init__(self, *, declared: bool = True) -> None:
        if declared:
            self.ctxconf_result_placeholder = self.PLACEHOLDER

    def assemble(self, request: AssemblyRequest) -> Mapping[str, Any]:
        view = _newest_that_fit(request, [])
        rings = [i for i, m in enumerate(view.messages) if m.tool_results]
        messages = [
            replace(
                m,
                parts=tuple(
                    replace(p, content=(TextPart(self.PLACEHOLDER),)) for p in m.tool_results
                ),
            )
            if i in rings[:-1]
            else m
            for i, m in enumerate(view.messages)
        ]
        return get_shape(self.shape).render_request(view.with_messages(messages))
