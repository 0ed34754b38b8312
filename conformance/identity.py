"""Map an assembled view back to its session by content identity.

A plug-in returns wire bodies, not message ids, so the only honest way to know what it kept is to
compare content. Each view message is classified as:

* ``kept``: byte-equal content (same digest) to a session message not claimed yet;
* ``merged``: the ordered concatenation of the parts of several session messages of one side of
  the conversation (user and tool results, or assistant), optionally with a run of summary parts
  between them. Strict-alternation providers require it (Bedrock B3, Gemini G1: a plain model turn
  before a ring's calls), so any assembler may legitimately merge same-side neighbours; the
  merged messages must appear whole, unchanged, in session order and with the same ``name``. A
  ring's message inside the merge may be changed the way ``modified`` allows (same part kinds and
  tool ids, e.g. a cleared result); the link is then ``modified``. See ``_decompose``;
* ``modified``: the same session message with changed content, recognized by its tool-call or
  tool-result ids (a cleared or reordered result) or, for plain turns, its text (a degraded
  attachment);
* ``summary``: a message carrying a ``SummaryPart``;
* ``injected``: labelled memory or ledger text the case offered (memory items, ledger keys);
* ``synthesized``: an error result for a session call that had none (``synthesize_error_results``);
* ``invented``: none of the above.

Each session message is ``kept``, ``merged`` (kept whole inside a merged view message),
``modified`` or ``dropped``. A merge that alters, reorders or adds a part is not a decomposition,
so it falls through to ``modified`` (recognized by tool ids) or ``invented``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal, TypeAlias

from reference_impl.transcript import (
    FilePart,
    ImagePart,
    Message,
    Part,
    SummaryPart,
    TextPart,
    Transcript,
)

__all__ = ["IdentityMap", "Link", "OutputStatus", "SourceStatus", "map_view"]

OutputStatus: TypeAlias = Literal[
    "kept", "merged", "modified", "summary", "injected", "synthesized", "invented"
]
SourceStatus: TypeAlias = Literal["kept", "merged", "modified", "dropped"]

# Which side of the conversation a role speaks for: tool results travel in the user's turn.
_SIDE: Final[Mapping[str, str]] = {"user": "user", "tool": "user", "assistant": "assistant"}


@dataclass(frozen=True, slots=True)
class Link:
    """One view message: its index, what it is, and the session index it came from (if any).

    For a merged message ``source`` is the message that carries its identity (the changed ring
    message, else the ring's message, else the first) and ``merged`` lists every session message
    it holds, in order."""

    index: int
    status: OutputStatus
    source: int | None
    merged: tuple[int, ...] = ()

    @property
    def sources(self) -> tuple[int, ...]:
        """Every session message this view message holds, in session order."""
        if self.merged:
            return self.merged
        return () if self.source is None else (self.source,)


@dataclass(frozen=True, slots=True)
class IdentityMap:
    """How a view maps back to its session: a link per view message, a status per session message."""

    links: tuple[Link, ...]
    sources: tuple[SourceStatus, ...]

    def view_index_of(self, session_index: int) -> int | None:
        """The view index holding session message ``session_index``, if any."""
        for link in self.links:
            if session_index in link.sources:
                return link.index
        return None

    def present(self, session_index: int) -> bool:
        """Kept, merged or modified (its place in the view survives)."""
        return self.sources[session_index] != "dropped"

    def of_status(self, status: OutputStatus) -> tuple[Link, ...]:
        """The links (view messages) with ``status``."""
        return tuple(link for link in self.links if link.status == status)

    def kept_whole(self, session_index: int) -> bool:
        """In the view unchanged: on its own (``kept``) or inside a merged message."""
        return self.sources[session_index] in ("kept", "merged")


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
    modified_sources: set[int] = set()
    merged_sources: set[int] = set()
    call_ids = {c.id for m in session.messages for c in m.tool_calls}
    links: list[Link] = []
    for index, message in enumerate(view.messages):
        candidates = [i for i in by_digest.get(message.digest, ()) if i not in claimed]
        if candidates:
            claimed.add(candidates[0])
            links.append(Link(index, "kept", candidates[0]))
            continue
        merge = _merged_link(index, message, session, claimed)
        if merge is not None:
            link, changed = merge
            claimed.update(link.merged)
            modified_sources.update(changed)
            links.append(link)
            continue
        if any(isinstance(p, SummaryPart) for p in message.parts):
            links.append(Link(index, "summary", None))
            continue
        source = _modified_source(message, session, claimed)
        if source is not None:
            claimed.add(source)
            modified_sources.add(source)
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
    for link in links:
        merged_sources.update(link.merged)
    sources: list[SourceStatus] = [
        "modified"
        if i in modified_sources
        else "merged"
        if i in merged_sources
        else "kept"
        if i in claimed
        else "dropped"
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


# ----------------------------------------------------------------------------------- merges


@dataclass(frozen=True, slots=True)
class _Chunk:
    """A run of a merged message's parts: one session message's parts (``source``), or summary
    parts (``source`` None). ``exact`` is False for a ring's message changed in place."""

    source: int | None
    exact: bool


def _same_skeleton(given: Sequence[Part], wanted: Sequence[Part]) -> bool:
    """A changed ring message: the same part kinds in order and the same tool ids (the test of
    ``modified``; a cleared or reordered result), and at least one tool part."""
    if [p.kind for p in given] != [p.kind for p in wanted]:
        return False
    ids = [_part_ids(p) for p in wanted]
    return any(ids) and sorted(_part_ids(p) for p in given) == sorted(ids)


def _part_ids(part: Part) -> str:
    if part.kind == "tool_call":
        return part.id
    if part.kind == "tool_result":
        return part.call_id
    return ""


def _decompose(message: Message, session: Transcript, claimed: set[int]) -> list[_Chunk] | None:
    """``message``'s parts as whole session messages of its side in session order (and summary
    runs), or None. A depth-first search over (part position, last session index used) with the
    failures remembered, so it stays polynomial in the session's length."""
    side = _SIDE.get(message.role)
    if side is None:
        return None
    parts = message.parts
    candidates = [
        i
        for i, m in enumerate(session.messages)
        if i not in claimed and m.parts and _SIDE.get(m.role) == side and m.name == message.name
    ]
    failed: set[tuple[int, int]] = set()

    def walk(position: int, after: int) -> list[_Chunk] | None:
        if position == len(parts):
            return []
        if (position, after) in failed:
            return None
        if isinstance(parts[position], SummaryPart):
            end = position
            while end < len(parts) and isinstance(parts[end], SummaryPart):
                end += 1
            rest = walk(end, after)
            if rest is not None:
                return [_Chunk(None, True), *rest]
        for i in candidates:
            if i <= after:
                continue
            wanted = session.messages[i].parts
            given = parts[position : position + len(wanted)]
            exact = given == wanted
            if not exact and (len(given) != len(wanted) or not _same_skeleton(given, wanted)):
                continue
            rest = walk(position + len(wanted), i)
            if rest is not None:
                return [_Chunk(i, exact), *rest]
        failed.add((position, after))
        return None

    return walk(0, -1)


def _merged_link(
    index: int, message: Message, session: Transcript, claimed: set[int]
) -> tuple[Link, set[int]] | None:
    """The link of a merged view message and its changed session messages, or None."""
    chunks = _decompose(message, session, claimed)
    if chunks is None or len(chunks) < 2:
        return None
    held = [c.source for c in chunks if c.source is not None]
    if not held:
        return None
    roles = [session.messages[i].role for i in held]
    # Results open their wire turn (A3): a tool message may only be the first of a merge, and
    # only a tool message can carry the others after its results.
    if any(role == "tool" for role in roles[1:]) or (roles[0] == "tool") != (
        message.role == "tool"
    ):
        return None
    changed = {c.source for c in chunks if c.source is not None and not c.exact}
    carriers = [i for i in held if session.messages[i].has_tool_parts]
    source = min(changed) if changed else carriers[0] if carriers else held[0]
    status: OutputStatus = "modified" if changed else "merged"
    return Link(index, status, source, tuple(held)), changed
