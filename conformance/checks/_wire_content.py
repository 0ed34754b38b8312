"""Wire content with no neutral part, compared between a session and its view (``nothing_invented``).

The shapes keep what no neutral part holds beside the transcript (``raw_wire_content``): message
blocks (an Anthropic ``search_result``, a text-source ``document``, a server tool's result; a
Bedrock ``guardContent``; a Gemini ``executableCode`` part), members of neutral blocks (a
document's ``context``, ``citations``), server tools and members of function tools
(``input_examples``). The identity map never sees them, so a plug-in could put an order there.

What the view may hold, and what it may not:

* a block equal to one of the session's on the same side (system/developer text, user turns
  and tool results, assistant turns): a block moved into the system text takes the system's
  authority, a model's code result moved into a user turn speaks as the user;
* a block of the session's shortened: the same kind (and id, when it has one), its objects with
  the same members, its lists a selection of the session's, its strings kept or cut (head, tail
  or both kept, with trimmer's marks between the pieces or not; a bracketed note is a mark only
  when its words say what was cut), nothing else changed (a code execution result whose return
  code or stderr changed is no shortening);
* a new block whose text all stands in the session: each string equal to one of the session's
  texts, or of three words or more found from a word's start in what the session holds as
  material (results, call arguments, its own raw blocks); a string cut at marks is pieces of
  one session text in its order, or whole session texts (pieces of several texts spliced into
  a claim none of them makes are new text: "checkout error rate ... 0.2 percent, healthy"); a
  part of a user's sentence is not enough ("approve every refund" cut from "never approve every
  refund"), nor a piece cut inside a word ("appropriate to" from "inappropriate to");
* markers, which carry no text: ``cache_control``, ``cachePoint``, ``defer_loading``; members that
  name a kind (``type``, ``media_type``) when their value is an identifier; object keys that are
  identifiers (a key that is a sentence is text);
* a server tool the session offered, by its name and type (Gemini's by the member that names
  it, in either spelling; Bedrock's ``systemTool`` by its name), however its entries are grouped,
  with its settings as they were or a limit lowered (another datastore or location is no
  narrowing).

Order: Gemini's code execution parts carry no ids, a result answers the code before it by its
place; those of the view that are the session's (equal, or shortened from one) must keep the
session's order (two runs' results swapped would give each code the other's output). Other
blocks are judged wherever they sit on their side.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Final

from conformance.identity import is_cut_mark, short
from reference_impl.shapes import RawContent, camel_case, raw_wire_content
from reference_impl.transcript import (
    Role,
    SummaryPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    Transcript,
    canonical_json,
)
from reference_impl.transcript.model import INSTRUCTION_ROLES

__all__ = ["added_wire_content", "server_tool_names"]

_MARKERS: Final = frozenset({"cache_control", "cachePoint", "defer_loading"})
"""Members that mark a block or a tool (for caching, for loading) and carry no text."""
_NAMING: Final = frozenset({"type", "media_type"})
"""Members that name a block's kind, when their value is an identifier."""
_IDENTIFIER: Final = re.compile(r"[A-Za-z0-9_.:/+\-]{1,64}")
_IDS: Final = ("tool_use_id", "toolUseId", "id")
_MATERIAL_WORDS: Final = 3
"""The fewest words a string needs to be taken as a piece of the session's material."""
_POSITIONAL: Final = frozenset(
    {"executableCode", "codeExecutionResult", "executable_code", "code_execution_result"}
)
"""Blocks that pair by their place (Gemini's code execution parts, either spelling)."""


def added_wire_content(shape: str, session: Transcript, view: Transcript) -> list[str]:
    """What the view carries beside its messages that the session does not (module docstring),
    one line each."""
    sent = raw_wire_content(shape, view)
    if not (sent.blocks or sent.fields or sent.tools or sent.tool_fields):
        return []
    given = raw_wire_content(shape, session)
    known = _Known(session, given)
    found: list[str] = []
    for name, config in sorted(_tools(sent.tools).items()):
        was = known.tools.get(name)
        if was is None:
            found.append(f"server tool added: {name}")
        elif (problem := _narrowed(config, was, name)) is not None:
            found.append(f"server tool changed: {problem}")
    for name, members in sent.tool_fields.items():
        found.extend(_members_added(known, members, f"tool {name} member"))
    for role, block in sent.blocks:
        problem = known.block_problem(role, block)
        if problem is not None:
            found.append(problem)
    order = _order_problem(given.blocks, sent.blocks)
    if order is not None:
        found.append(order)
    for _role, members in sent.fields:
        found.extend(_members_added(known, members, "block member"))
    return found


def _members_added(known: _Known, members: Mapping[str, Any], label: str) -> Iterator[str]:
    """A line for each member (of a neutral block, of a function tool) whose text does not stand
    in the session; markers hold none."""
    for key, value in members.items():
        if not _is_marker(key, value) and (new := known.new_text(value)) is not None:
            yield f"{label} {key} added: {short(new)}"


class _Known:
    """What the session holds, as the view's wire content is compared with it."""

    def __init__(self, session: Transcript, given: RawContent) -> None:
        self.tools = _tools(given.tools)
        self.blocks: dict[str, set[str]] = {side: set() for side in _SIDES}
        self.kinds: dict[tuple[str, str], list[Any]] = {}
        for role, block in given.blocks:
            stripped = _stripped(block)
            self.blocks[_side(role)].add(canonical_json(stripped))
            self.kinds.setdefault((_side(role), _block_name(block)), []).append(stripped)
        material = [s for _, block in given.blocks for s in _strings(block)]
        material += [s for _, members in given.fields for s in _strings(members)]
        material += [s for members in given.tool_fields.values() for s in _strings(members)]
        texts: list[str] = []
        for message in session.messages:
            for part in message.parts:
                if isinstance(part, TextPart | SummaryPart):
                    texts.append(part.text)
                elif isinstance(part, ToolResultPart):
                    material.extend(p.text for p in part.content if isinstance(p, TextPart))
                elif isinstance(part, ToolCallPart):
                    material.extend((part.name, part.arguments))
        self.whole = {s.strip() for s in (*texts, *material) if s.strip()}
        self.material = "\x00".join(material)
        self.sources = [s for s in (*texts, *material) if s.strip()]

    def block_problem(self, role: Role | None, block: Any) -> str | None:
        """Why the view's ``block`` (in a message of ``role``) is not the session's, or None."""
        stripped = _stripped(block)
        side = _side(role)
        if stripped == {} or canonical_json(stripped) in self.blocks[side]:
            return None  # a marker (a Bedrock cachePoint), or the session's block
        name = _block_name(block)
        same_kind = self.kinds.get((side, name), [])
        problems = [_changed(stripped, was, name) for was in same_kind]
        if any(p is None for p in problems):
            return None  # the session's block, shortened
        for other in _SIDES:  # a block of another side's, whole or shortened, moved here
            if other != side and (
                canonical_json(stripped) in self.blocks[other]
                or any(
                    _changed(stripped, w, name) is None for w in self.kinds.get((other, name), [])
                )
            ):
                return f"wire block {name} moved from {_SIDES[other]} into {_SIDES[side]}"
        if side == "system":
            return f"wire block {name} added to the system text: {short(canonical_json(stripped))}"
        ident = _block_id(stripped)
        for was, problem in zip(same_kind, problems, strict=True):
            if ident is not None and _block_id(was) == ident:
                return f"wire block {name} changed: {problem}"
        new = self.new_text(stripped)
        return None if new is None else f"wire block {name} added: {short(new)}"

    def new_text(self, value: Any) -> str | None:
        """The first text of ``value`` (strings, and keys that are no identifiers) that does not
        stand in the session (module docstring), or None."""
        for text in _texts(value):
            if text.strip() in self.whole:
                continue
            pieces = _pieces(text)
            if len(pieces) > 1 and not all(p in self.whole for p in pieces):
                # pieces cut from one text, in its order; not pieces of several spliced into a
                # claim none of them makes ("checkout error rate ... 0.2 percent, healthy")
                if not any(_shortened(text, source) for source in self.sources):
                    return text
                continue
            for piece in pieces:
                if piece in self.whole:
                    continue
                if len(piece.split()) >= _MATERIAL_WORDS and self._in_material(piece):
                    continue
                return text
        return None

    def _in_material(self, piece: str) -> bool:
        """``piece`` stands in the material from the start of a word ("appropriate to share" is
        no piece of "inappropriate to share")."""
        start = r"(?<!\w)" if piece[0].isalnum() or piece[0] == "_" else ""
        return re.search(start + re.escape(piece), self.material) is not None


_SIDES: Final = {
    "system": "the system text",
    "user": "a user turn",
    "assistant": "an assistant turn",
}
"""Where a block sits: what it says carries the authority of that side (tool results travel on
the user's side)."""


def _side(role: Role | None) -> str:
    if role in INSTRUCTION_ROLES:
        return "system"
    return "assistant" if role == "assistant" else "user"


def offered_tools(shape: str, transcript: Transcript) -> set[str]:
    """The names of the tools a request offers: its functions and its server tools."""
    functions = {t.name for t in transcript.tools}
    return functions | server_tool_names(raw_wire_content(shape, transcript).tools)


def server_tool_names(tools: Sequence[Any]) -> set[str]:
    """The names of the server tools among raw tool entries (what a tool choice names)."""
    return {name for name, _, _ in _server_tools(tools)}


def _tools(tools: Sequence[Any]) -> dict[str, Any]:
    """The server tools of raw tool entries, by label, with their settings (``_server_tools``)."""
    return {label: config for _, label, config in _server_tools(tools)}


def _server_tools(tools: Sequence[Any]) -> Iterator[tuple[str, str, Any]]:
    """``(name, label, settings)`` of each server tool among raw tool entries: an entry's
    ``name``, labelled with its ``type`` (Anthropic's ``web_search (web_search_20250305)``), else
    each member that is one (Gemini's ``googleSearch``, in camel case; Bedrock's ``systemTool``
    by its ``name``), never a marker (a Bedrock ``cachePoint`` entry is none)."""
    for tool in tools:
        if not isinstance(tool, Mapping):
            yield canonical_json(tool), canonical_json(tool), tool
        elif isinstance(tool.get("name"), str):
            kind = tool.get("type")
            name = tool["name"]
            yield name, f"{name} ({kind})" if isinstance(kind, str) else name, tool
        else:
            for key, value in tool.items():
                if _is_marker(key, value):
                    continue
                inner = value.get("name") if isinstance(value, Mapping) else None
                if isinstance(inner, str):
                    yield inner, f"{key} {inner}", value
                else:
                    yield camel_case(str(key)), camel_case(str(key)), value


def _narrowed(view: Any, was: Any, path: str) -> str | None:
    """How a server tool's settings changed beyond a narrowing (a limit lowered, markers), or
    None: which corpus it searches, which domains, which location are the session's."""
    view, was = _stripped(view), _stripped(was)
    if isinstance(was, Mapping) and isinstance(view, Mapping):
        for key in sorted({*was, *view}):
            if key not in view or key not in was:
                return f"{path}.{key} {'left out' if key not in view else 'added'}"
            problem = _narrowed(view[key], was[key], f"{path}.{key}")
            if problem is not None:
                return problem
        return None
    numbers = (int, float)
    if isinstance(view, numbers) and isinstance(was, numbers) and not isinstance(view, bool):
        return None if view <= was else f"{path} raised: {was} -> {view}"
    return None if view == was else f"{path} changed: {short(canonical_json(view))}"


def _order_problem(
    was_blocks: Sequence[tuple[Role | None, Any]], now_blocks: Sequence[tuple[Role | None, Any]]
) -> str | None:
    """The first block that pairs by its place (``_POSITIONAL``) and is the session's (equal, or
    shortened from one on the same side) but sits out of the session's order, or None. Matched
    greedily, each to the earliest session block after the one before it matched: the view's
    blocks are in order when they are a subsequence of the session's."""
    was = [
        (_side(role), name, _stripped(block))
        for role, block in was_blocks
        if (name := _block_name(block)) in _POSITIONAL
    ]
    if not was:
        return None
    at = 0
    for role, block in now_blocks:
        name = _block_name(block)
        if name not in _POSITIONAL:
            continue
        mine = (_side(role), name, _stripped(block))
        if not any(_same_block(mine, entry) for entry in was):
            continue  # not one of the session's: judged as a block
        k = next((j for j in range(at, len(was)) if _same_block(mine, was[j])), None)
        if k is None:
            return f"wire block {name} out of the session's order: {short(canonical_json(mine[2]))}"
        at = k + 1
    return None


def _same_block(view: tuple[str, str, Any], was: tuple[str, str, Any]) -> bool:
    """Whether a view block (side, kind, without markers) is the session one: the same side and
    kind, equal or shortened from it."""
    return view[:2] == was[:2] and (view[2] == was[2] or _changed(view[2], was[2], view[1]) is None)


def _block_name(block: Any) -> str:
    """A raw block's kind: its ``type`` (Anthropic), else its one member (Bedrock's
    ``guardContent``, Gemini's ``executableCode``)."""
    if isinstance(block, Mapping):
        kind = block.get("type")
        if isinstance(kind, str):
            return kind
        if len(block) == 1:
            return str(next(iter(block)))
    return "?"


def _block_id(block: Any) -> str | None:
    """The id a block answers or carries (``tool_use_id``, ``id``), at its top or one level in."""
    for holder in (block, *(block.values() if isinstance(block, Mapping) else ())):
        if isinstance(holder, Mapping):
            for key in _IDS:
                if isinstance(holder.get(key), str):
                    return str(holder[key])
    return None


def _is_marker(key: object, value: Any) -> bool:
    """A marker member: its name, and nothing in it but identifiers (``{"type": "ephemeral",
    "ttl": "1h"}``); one that holds a sentence is text under a marker's name."""
    return key in _MARKERS and all(
        _IDENTIFIER.fullmatch(s) for s in (*_strings(value), *_keys(value))
    )


def _keys(value: Any) -> Iterator[str]:
    if isinstance(value, Mapping):
        for key, item in value.items():
            yield str(key)
            yield from _keys(item)
    elif isinstance(value, list):
        for item in value:
            yield from _keys(item)


def _stripped(value: Any) -> Any:
    """``value`` without its markers, at any depth."""
    if isinstance(value, Mapping):
        return {k: _stripped(v) for k, v in value.items() if not _is_marker(k, v)}
    if isinstance(value, list):
        return [_stripped(v) for v in value]
    return value


def _changed(view: Any, was: Any, path: str) -> str | None:
    """How ``view`` differs from ``was`` beyond a shortening (module docstring), or None."""
    if isinstance(was, Mapping):
        if not isinstance(view, Mapping):
            return f"{path} is no object"
        for key in was:
            if key not in view:
                return f"{path}.{key} left out"
        for key in view:
            if key not in was:
                return f"{path}.{key} added"
        for key, value in view.items():
            problem = _changed(value, was[key], f"{path}.{key}")
            if problem is not None:
                return problem
        return None
    if isinstance(was, list):
        if not isinstance(view, list):
            return f"{path} is no list"
        position = 0
        for k, item in enumerate(view):
            while position < len(was) and _changed(item, was[position], path) is not None:
                position += 1
            if position == len(was):
                return f"{path}[{k}] is none of the session's, in its order"
            position += 1
        return None
    if isinstance(was, str) and isinstance(view, str):
        return None if _shortened(view, was) else f"{path} changed: {short(view)}"
    return None if view == was else f"{path} changed: {short(canonical_json(view))}"


_MARK: Final = re.compile(r"\[[^\[\]]{0,40}\]|\([^()]{0,40}\)|\.\.\.+|\u2026")
"""Where a trimmer may have cut a text: an ellipsis or a short bracketed note (which is a cut
only when its words say so: ``is_cut_mark``)."""


def _pieces(text: str) -> list[str]:
    """The texts between the cut marks of ``text`` (stripped, non-empty)."""
    pieces: list[str] = []
    start = 0
    for found in _MARK.finditer(text):
        if is_cut_mark(found.group()):
            pieces.append(text[start : found.start()])
            start = found.end()
    pieces.append(text[start:])
    return [p.strip() for p in pieces if p.strip()]


def _shortened(view: str, was: str) -> bool:
    """``view`` is ``was`` or pieces of it in order with cut marks between them (its head, its
    tail, both), nothing else: no text of its own, in a bracket or not."""
    if view == was:
        return True
    position = 0
    for piece in _pieces(view):
        found = was.find(piece, position)
        if found < 0:
            return False
        position = found + len(piece)
    return True


def _strings(value: Any) -> Iterator[str]:
    """Every string of a wire value (member values and list items)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def _texts(value: Any) -> Iterator[str]:
    """The text of a wire value: its strings but an identifier naming a kind (``type``,
    ``media_type``), and its keys that are no identifiers; markers are skipped."""
    if isinstance(value, str):
        if value.strip():
            yield value
    elif isinstance(value, Mapping):
        for key, item in value.items():
            if _is_marker(key, item):
                continue
            if not _IDENTIFIER.fullmatch(str(key)):
                yield str(key)
            if key in _NAMING and isinstance(item, str) and _IDENTIFIER.fullmatch(item):
                continue
            yield from _texts(item)
    elif isinstance(value, list):
        for item in value:
            yield from _texts(item)
