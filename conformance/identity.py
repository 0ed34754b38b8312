"""Map an assembled view back to its session by content identity.

A plug-in returns wire bodies, not message ids, so the only honest way to know what it kept is to
compare content. Each view message is classified as:

* ``kept``: byte-equal content (same digest) to a session message not claimed yet;
* ``modified``: the same session message with changed content, recognized by its tool-call or
  tool-result ids (a cleared or reordered result) or, for plain turns, its text (a degraded
  attachment);
* ``summary``: a message carrying a ``SummaryPart``;
* ``injected``: labelled memory or ledger text the case offered (memory items, ledger keys);
* ``synthesized``: an error result for a session call that had none (``synthesize_error_results``);
* ``invented``: none of the above.

Each session message is ``kept``, ``modified`` or ``dropped``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

from reference_impl.transcript import (
    FilePart,
    ImagePart,
    Message,
    SummaryPart,
    TextPart,
    Transcript,
)

__all__ = ["IdentityMap", "Link", "OutputStatus", "SourceStatus", "map_view"]

OutputStatus: TypeAlias = Literal[
    "kept", "modified", "summary", "injected", "synthesized", "invented"
]
SourceStatus: TypeAlias = Literal["kept", "modified", "dropped"]


@dataclass(frozen=True, slots=True)
class Link:
    """One view message: its index, what it is, and the session index it came from (if any)."""

    index: int
    status: OutputStatus
    source: int | None


@dataclass(frozen=True, slots=True)
class IdentityMap:
    links: tuple[Link, ...]
    sources: tuple[SourceStatus, ...]

    def view_index_of(self, session_index: int) -> int | None:
        for link in self.links:
            if link.source == session_index:
                return link.index
        return None

    def present(self, session_index: int) -> bool:
        """Kept or modified (its place in the view survives)."""
        return self.sources[session_index] != "dropped"

    def of_status(self, status: OutputStatus) -> tuple[Link, ...]:
        return tuple(link for link in self.links if link.status == status)


def _ids(message: Message) -> frozenset[str]:
    return frozenset(c.id for c in message.tool_calls) | frozenset(
        r.call_id for r in message.tool_results
    )


def _is_injection(
    message: Message, ledger: Sequence[Mapping[str, Any]], memory: Sequence[Mapping[str, Any]]
) -> bool:
    if message.role not in {"system", "developer", "user"} or message.has_tool_parts:
        return False
    text = message.text
    if any(str(item.get("text", "")) and str(item["text"]) in text for item in memory):
        return True
    keys = [str(e.get("idempotency_key") or e.get("call_id") or "") for e in ledger]
    return any(key and key in text for key in keys)


def map_view(
    session: Transcript,
    view: Transcript,
    *,
    ledger: Sequence[Mapping[str, Any]] = (),
    memory: Sequence[Mapping[str, Any]] = (),
) -> IdentityMap:
    """Classify every view message and every session message (see the module docstring)."""
    by_digest: dict[str, list[int]] = {}
    for i, message in enumerate(session.messages):
        by_digest.setdefault(message.digest, []).append(i)
    claimed: set[int] = set()
    call_ids = {c.id for m in session.messages for c in m.tool_calls}
    links: list[Link] = []
    for index, message in enumerate(view.messages):
        candidates = [i for i in by_digest.get(message.digest, ()) if i not in claimed]
        if candidates:
            claimed.add(candidates[0])
            links.append(Link(index, "kept", candidates[0]))
            continue
        if any(isinstance(p, SummaryPart) for p in message.parts):
            links.append(Link(index, "summary", None))
            continue
        source = _modified_source(message, session, claimed)
        if source is not None:
            claimed.add(source)
            links.append(Link(index, "modified", source))
            continue
        if _is_injection(message, ledger, memory):
            links.append(Link(index, "injected", None))
            continue
        results = message.tool_results
        if results and all(r.is_error and r.call_id in call_ids for r in results):
            links.append(Link(index, "synthesized", None))
            continue
        links.append(Link(index, "invented", None))
    modified = {link.source for link in links if link.status == "modified"}
    sources: list[SourceStatus] = [
        "modified" if i in modified else "kept" if i in claimed else "dropped"
        for i in range(len(session.messages))
    ]
    return IdentityMap(tuple(links), tuple(sources))


def _modified_source(message: Message, session: Transcript, claimed: set[int]) -> int | None:
    ids = _ids(message)
    best: tuple[int, int] | None = None  # (overlap, -index) maximized
    for i, candidate in enumerate(session.messages):
        if i in claimed or candidate.role != message.role:
            continue
        if ids:
            overlap = len(ids & _ids(candidate))
            if overlap and (best is None or overlap > best[0]):
                best = (overlap, i)
        elif not candidate.has_tool_parts and _same_text(candidate, message):
            return i
    return best[1] if best is not None else None


def _same_text(candidate: Message, message: Message) -> bool:
    """Equal text, or every text part of ``candidate`` kept while its attachments were replaced
    by placeholders (degraded): a changed message, not a new one."""
    if message.text and candidate.text == message.text:
        return True
    kept = [p.text for p in message.parts if isinstance(p, TextPart)]
    wanted = [p.text for p in candidate.parts if isinstance(p, TextPart)]
    degraded = any(isinstance(p, ImagePart | FilePart) for p in candidate.parts)
    return degraded and bool(wanted) and all(t in kept for t in wanted)
