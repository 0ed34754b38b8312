"""Wire content that has no neutral part, kept beside the transcript so it is never lost.

Some wire content has no neutral part: an Anthropic ``cache_control`` or ``citations`` field, a
``tool_reference`` or ``server_tool_use`` block, a Bedrock ``cachePoint``, a Gemini
``executableCode`` part, a server tool such as ``googleSearch``. Rather than drop it (or invent a
part kind for each), a shape records it here and ``Extras.to_params`` stores it in
``Transcript.params`` under ``"<shape>.extras"`` (a shape-private key: other shapes do not emit
it, and ``Transcript.params`` compares by value, so round trips still hold).

Extras are addressed by the **content digest** of the message they belong to plus its occurrence
number among equal messages (``"<digest16>#<n>"``), not by its index: an assembler that drops older
messages keeps the extras of the messages it kept. A message whose content changed is a new
message and loses them; that is intended (a ``cache_control`` breakpoint on a block that no longer
exists means nothing). When a content that more than one message has carries extras on one of
them (two user turns of one ``document`` block each and the same text, whose neutral parts are
alike), the record also keeps the ids of that content's messages in order (``occurrences``): a
message found by its id keeps its own occurrence number when an equal one before it is dropped,
so it is never rendered with the dropped one's blocks. Ids are unique in a transcript and survive
into the views the reference makes; the parser gives such messages their position id with the
occurrence number after it (``Extras.transcript``), so that a view whose messages were made again
without ids (which take the ids of their new positions) matches none of them. A message whose id
the record does not hold falls back to its occurrence number among the equal messages of the
view.

Positions are *wire* positions: ``[i]`` is the i-th block of the message's content list as sent,
``[i, j]`` the j-th block inside block i (a tool result's content). On render, raw blocks are
re-inserted at their positions first, then fields are merged, so the rendered list equals the
parsed one.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any, Final, TypeAlias

from reference_impl.errors import ParseError, TranscriptError
from reference_impl.shapes._mapping import text_part
from reference_impl.shapes._wire import Wire
from reference_impl.transcript import Message, Role, ToolSpec, Transcript, canonical_json
from reference_impl.transcript.model import default_id, text_message_at

__all__ = [
    "Extras",
    "MessageExtras",
    "RawContent",
    "body_params",
    "canonical_of",
    "carries_raw_blocks",
    "carry_merged_extras",
    "extra_members",
    "map_messages",
    "params_without",
    "raw_block_texts_by_message",
    "raw_blocks_by_message",
    "raw_wire_content",
    "single_message_record",
]


def canonical_of(wire: Wire) -> str:
    """The canonical JSON text of a wire value; a ParseError if it is not JSON data (YAML dates,
    mixed key types, nesting deeper than the interpreter can walk)."""
    return wire.canonical()


def extra_members(wire: Wire, known: frozenset[str]) -> dict[str, Any]:
    """Members outside ``known`` with a non-null value: kept as extras, never dropped."""
    extra = {k: v for k, v in wire.obj().items() if k not in known and v is not None}
    if extra:
        canonical_of(Wire(extra, wire.path))
    return extra


def params_without(
    body: Wire, consumed: frozenset[str], *, drop_null: bool = False
) -> tuple[tuple[str, str], ...]:
    """Top-level request options the shape does not map to messages/tools, as Transcript.params."""
    out = []
    for key, value in body.obj().items():
        if key in consumed or (drop_null and value is None):
            continue
        out.append(
            (str(key), canonical_of(Wire(value, f"{body.path}.{key}" if body.path else str(key))))
        )
    return tuple(sorted(out))


def body_params(transcript: Transcript, consumed: frozenset[str]) -> dict[str, Any]:
    """The inverse of :func:`params_without`: the top-level options to put back in a body.
    Dotted keys (``"<shape>.extras"``) are shape-private and never sent."""
    return {
        key: json.loads(value)
        for key, value in transcript.params
        if "." not in key and key not in consumed
    }


# ------------------------------------------------------------------------------------ extras

Position: TypeAlias = "tuple[int, ...]"


@dataclass(slots=True)
class MessageExtras:
    """What one wire message carried beyond its neutral parts, by wire position."""

    raw: list[tuple[Position, Any]] = field(default_factory=list)
    fields: list[tuple[Position, dict[str, Any]]] = field(default_factory=list)

    def add_raw(self, position: Position, block: Any) -> None:
        """Keep a whole block that has no neutral part, at its wire position."""
        self.raw.append((position, block))

    def add_fields(self, position: Position, values: Mapping[str, Any]) -> None:
        """Keep members of the block at ``position`` that no neutral part holds (nothing when
        empty)."""
        if values:
            self.fields.append((position, dict(values)))

    def __bool__(self) -> bool:
        return bool(self.raw or self.fields)

    def refuse_in_response(
        self, carrier: str, examples: str, where: Callable[[Position], str]
    ) -> None:
        """A ``ParseError`` at ``where(position)`` of the first thing kept, if anything is kept: a
        parsed response has no transcript params to keep it in (the follow-up request has)."""
        if self:
            position, _ = (self.raw or self.fields)[0]
            raise ParseError(
                f"this {carrier} carries content the neutral message cannot keep ({examples}); "
                "parse the follow-up request instead",
                where=where(position),
            )


def map_messages(
    array: Wire,
    messages: list[Message],
    per_message: list[MessageExtras],
    plain: Callable[[Any], tuple[Role, str] | None],
    walk: Callable[[Wire], tuple[Message, MessageExtras]],
) -> None:
    """Append the messages of the wire ``array`` to ``messages`` and their extras to
    ``per_message`` (the two lists ``Extras`` takes). A message that ``plain`` reads as a role
    and one text (most of a long conversation) is made directly with the id the transcript
    gives its position (``text_message_at``), with no extras; every other one goes through
    ``walk``, the checked walk (``Wire``) that names what it cannot take."""
    values = array.value
    if not isinstance(values, list):
        array.items()  # the named error
    for i, value in enumerate(values):
        easy = plain(value)
        if easy is None:
            message, extras = walk(array.at(i))
        else:
            role, text = easy
            message = text_message_at(len(messages), role, text_part(text, role))
            extras = MessageExtras()
        messages.append(message)
        per_message.append(extras)


NestedList: TypeAlias = "Callable[[dict[str, Any]], list[Any] | None]"


@dataclass(slots=True)
class Extras:
    """The extras of one transcript for one shape (see the module docstring)."""

    shape: str
    messages: dict[str, MessageExtras] = field(default_factory=dict)
    tool_fields: dict[str, dict[str, Any]] = field(default_factory=dict)
    raw_tools: list[tuple[int, Any]] = field(default_factory=list)
    values: dict[str, Any] = field(default_factory=dict)
    """Shape-private scalars (Gemini's OpenAPI-schema tool names, for instance)."""
    occurrences: dict[str, list[str]] = field(default_factory=dict)
    """For a content (digest prefix) that more than one message has and one of them carries
    extras: the ids of those messages, in order (the n-th is ``#n``; see the module docstring)."""

    @property
    def key(self) -> str:
        """The ``Transcript.params`` key of this shape's extras."""
        return f"{self.shape}.extras"

    # -- parse side ------------------------------------------------------------------------

    def attach(self, messages: Sequence[Message], per_message: Sequence[MessageExtras]) -> None:
        """Address each message's extras by its content (see the module docstring)."""
        if not any(per_message):  # the usual request: nothing to address
            return
        self._attach(messages, per_message)

    def _attach(
        self, messages: Sequence[Message], per_message: Sequence[MessageExtras]
    ) -> dict[str, list[int]]:
        """``attach``; returns, for each content listed in ``occurrences``, the indices of its
        messages."""
        at: dict[str, list[int]] = {}  # content -> the indices of its messages
        carried: set[str] = set()
        for index, (message, extras) in enumerate(zip(messages, per_message, strict=True)):
            digest = message.digest[:DIGEST_CHARS]
            same = at.setdefault(digest, [])
            if extras:
                self.messages[f"{digest}#{len(same)}"] = extras
                carried.add(digest)
            same.append(index)
        repeated = {d: at[d] for d in sorted(carried) if len(at[d]) > 1}
        self._list_occurrences(messages, repeated)
        return repeated

    def _list_occurrences(
        self, messages: Sequence[Message], repeated: Mapping[str, Sequence[int]]
    ) -> None:
        """``occurrences``: the ids of the messages at ``repeated``'s indices, by content."""
        self.occurrences = {
            digest: [messages[i].id or default_id(i, messages[i]) for i in indices]
            for digest, indices in repeated.items()
        }

    def transcript(
        self,
        messages: Sequence[Message],
        per_message: Sequence[MessageExtras],
        tools: tuple[ToolSpec, ...],
        params: tuple[tuple[str, str], ...],
        model: str | None = None,
    ) -> Transcript:
        """The parsed request: ``messages`` with their extras attached and kept in ``params``.
        A message of a content listed in ``occurrences`` whose id is the one its position gives
        (``default_id``) takes that id with its occurrence number after it (``"m4-1a2b3c4d5e.1"``):
        a view whose messages were made again without ids gets position ids of that form, which
        then cannot name another message of the record (it goes by order instead)."""
        out = list(messages)
        if any(per_message):
            repeated = self._attach(out, per_message)
            for indices in repeated.values():
                for n, i in enumerate(indices):
                    position_id = default_id(i, out[i])
                    if out[i].id in ("", position_id):
                        out[i] = out[i].with_id(f"{position_id}.{n}")
            self._list_occurrences(out, repeated)
        return Transcript(
            messages=tuple(out), tools=tools, model=model, params=self.to_params(params)
        )

    def to_params(self, params: tuple[tuple[str, str], ...]) -> tuple[tuple[str, str], ...]:
        """``params`` plus this shape's extras entry when there is anything to keep."""
        record: dict[str, Any] = {}
        if self.messages:
            record["messages"] = {
                address: {
                    **({"raw": [[list(p), b] for p, b in e.raw]} if e.raw else {}),
                    **({"fields": [[list(p), f] for p, f in e.fields]} if e.fields else {}),
                }
                for address, e in self.messages.items()
            }
        if self.tool_fields:
            record["tool_fields"] = self.tool_fields
        if self.raw_tools:
            record["raw_tools"] = [[i, t] for i, t in self.raw_tools]
        if self.occurrences and self.messages:
            record["occurrences"] = self.occurrences
        record.update(self.values)
        if not record:
            return params
        return tuple(sorted((*params, (self.key, canonical_json(record)))))

    def keep_tool_fields(self, name: str, spec: Wire, known: frozenset[str]) -> None:
        """Keep the members of tool ``name``'s spec outside ``known`` (``cache_control``...)."""
        fields = extra_members(spec, known)
        if fields:
            self.tool_fields[name] = fields

    # -- render side -----------------------------------------------------------------------

    @classmethod
    def from_transcript(cls, shape: str, transcript: Transcript) -> Extras:
        """The extras a parser of ``shape`` stored in the transcript's params."""
        return cls.from_record(shape, transcript.param(f"{shape}.extras"))

    @classmethod
    def from_record(cls, shape: str, record: object) -> Extras:
        """The extras of ``record``, the value of the ``"<shape>.extras"`` param (None: none)."""
        extras = cls(shape)
        if record is None:
            return extras
        try:
            assert isinstance(record, dict)
            for address, entry in (record.get("messages") or {}).items():
                extras.messages[str(address)] = MessageExtras(
                    raw=[(tuple(int(i) for i in p), b) for p, b in entry.get("raw", [])],
                    fields=[
                        (tuple(int(i) for i in p), dict(f)) for p, f in entry.get("fields", [])
                    ],
                )
            extras.tool_fields = {
                str(k): dict(v) for k, v in (record.get("tool_fields") or {}).items()
            }
            extras.raw_tools = [(int(i), t) for i, t in record.get("raw_tools") or []]
            extras.occurrences = _occurrences(record)
        except (AssertionError, AttributeError, TypeError, ValueError):
            raise TranscriptError(
                "not an extras record written by this shape's parser; remove it or re-parse "
                "the request",
                where=f"params[{extras.key!r}]",
            ) from None
        extras.values = {k: v for k, v in record.items() if k not in _RECORD_MEMBERS}
        return extras

    def for_messages(self, messages: Sequence[Message]) -> Iterator[MessageExtras]:
        """The extras of each message, in order (empty for messages that carried none)."""
        if not self.messages:  # the common case: no digests to compute
            for _ in messages:
                yield MessageExtras()
            return
        for address in _addresses(messages, _places(self.occurrences)):
            yield self.messages.get(address) or MessageExtras()

    def insert_raw_tools(self, tools: list[Any]) -> list[Any]:
        """Put the tools kept raw (server tools) back at their wire positions, in place."""
        for position, raw in sorted(self.raw_tools, key=lambda e: e[0]):
            tools.insert(min(position, len(tools)), raw)
        return tools

    @staticmethod
    def apply(blocks: list[Any], extras: MessageExtras, nested: NestedList) -> list[Any]:
        """Re-insert raw blocks and merge fields (deeply) into a rendered wire list, in place."""
        for position, block in sorted(
            (e for e in extras.raw if len(e[0]) == 1), key=lambda e: e[0]
        ):
            blocks.insert(min(position[0], len(blocks)), _copy(block))
        for position, block in sorted(
            (e for e in extras.raw if len(e[0]) == 2), key=lambda e: e[0]
        ):
            inner = _nested_at(blocks, position[0], nested)
            if inner is not None:
                inner.insert(min(position[1], len(inner)), _copy(block))
        for position, values in extras.fields:
            target: Any = None
            if len(position) == 1 and position[0] < len(blocks):
                target = blocks[position[0]]
            elif len(position) == 2:
                inner = _nested_at(blocks, position[0], nested)
                if inner is not None and position[1] < len(inner):
                    target = inner[position[1]]
            if isinstance(target, dict):
                _merge(target, _copy(values))
        return blocks


_RECORD_MEMBERS: Final = frozenset({"messages", "tool_fields", "raw_tools", "occurrences"})


def _occurrences(record: Mapping[str, Any]) -> dict[str, list[str]]:
    """The ``occurrences`` of a record (see ``Extras.occurrences``), checked."""
    found = record.get("occurrences", {})
    if not isinstance(found, dict):
        raise TypeError("occurrences")
    out: dict[str, list[str]] = {}
    for digest, ids in found.items():
        if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
            raise TypeError(digest)
        out[str(digest)] = list(ids)
    return out


def _merge(target: dict[str, Any], values: Mapping[str, Any]) -> None:
    """Merge ``values`` into ``target``, object members recursively (Gemini keeps unknown keys of
    a ``functionResponse`` as ``{"functionResponse": {"willContinue": true}}``)."""
    for key, value in values.items():
        current = target.get(key)
        if isinstance(current, dict) and isinstance(value, Mapping):
            _merge(current, value)
        else:
            target[key] = value


def _nested_at(blocks: list[Any], index: int, nested: NestedList) -> list[Any] | None:
    if index >= len(blocks) or not isinstance(blocks[index], dict):
        return None
    return nested(blocks[index])


def _copy(value: Any) -> Any:
    copied: Any = json.loads(canonical_json(value))
    return copied


def raw_blocks_by_message(shape: str, transcript: Transcript) -> list[tuple[Any, ...]] | None:
    """The raw blocks (wire content no neutral part holds) that each message of ``transcript``
    carries in ``shape``'s extras, in message order, as new objects; None when none does (the
    usual transcript: answered without a digest). What a counter adds to a message's tokens:
    the blocks are sent with it, and go when it goes or its content changes (it then has
    another address)."""
    found = raw_block_texts_by_message(shape, transcript)
    if found is None:
        return None
    return [tuple(json.loads(text) for text in texts) for texts in found]


def raw_block_texts_by_message(shape: str, transcript: Transcript) -> list[tuple[str, ...]] | None:
    """``raw_blocks_by_message`` as each block's canonical JSON (read once per record and
    shared: what a counter memoizes a message's blocks by)."""
    by_address, occurrences = _raw_texts(shape, transcript)
    if not by_address:
        return None
    return [by_address.get(address, ()) for address in _addresses(transcript.messages, occurrences)]


def carries_raw_blocks(shape: str, transcript: Transcript) -> bool:
    """Whether a message of ``transcript`` carries raw blocks in ``shape``'s extras (its record
    read once per text: a session's record is the same string from one turn to the next)."""
    return bool(_raw_texts(shape, transcript)[0])


_NOTHING_RAW: Final[tuple[Mapping[str, tuple[str, ...]], Mapping[str, Mapping[str, int]]]] = (
    MappingProxyType({}),
    MappingProxyType({}),
)


def _raw_texts(
    shape: str, transcript: Transcript
) -> tuple[Mapping[str, tuple[str, ...]], Mapping[str, Mapping[str, int]]]:
    key = f"{shape}.extras"
    text = next((value for k, value in transcript.params if k == key), None)
    return _NOTHING_RAW if text is None else _raw_by_address(shape, text)


@functools.lru_cache(maxsize=16)
def _raw_by_address(
    shape: str, text: str
) -> tuple[Mapping[str, tuple[str, ...]], Mapping[str, Mapping[str, int]]]:
    """The raw blocks of an extras record's messages, each as its canonical JSON, by address,
    and the record's ``occurrences`` (read-only: the cache shares them). An assembly reads its
    session's record three or four times; 16 records keep a process serving several sessions at
    once from parsing each again."""
    try:
        record = json.loads(text)
    except ValueError:
        raise TranscriptError(
            "not a JSON extras record; remove it or re-parse the request",
            where=f"params[{shape + '.extras'!r}]",
        ) from None
    extras = Extras.from_record(shape, record)
    by_address = {
        address: tuple(canonical_json(block) for _, block in entry.raw)
        for address, entry in extras.messages.items()
        if entry.raw
    }
    return MappingProxyType(by_address), MappingProxyType(
        {digest: MappingProxyType(ids) for digest, ids in _places(extras.occurrences).items()}
    )


def carry_merged_extras(
    shape: str,
    before: Transcript,
    after: Transcript,
    groups: Sequence[Sequence[int]],
    block_count: Callable[[Message, MessageExtras], int],
) -> Transcript:
    """``after`` (``before``'s messages with neighbours merged: ``groups`` the indices in
    ``before`` of what each merged message holds, one group per merged message in order, every
    other message of ``before`` alone in ``after``) with its messages' extras in
    ``shape``'s record: a merged message has a content of its own, so no address of ``before``
    names it, and without this it would be rendered without its parts' raw blocks and fields.
    Each part's positions move by the wire blocks of the parts before it (``block_count``: a
    message rendered alone with its extras). The record is rebuilt for ``after``'s addresses;
    extras of messages ``after`` does not hold are left out. Left as it is when no address it
    holds has the content of a merged message or of one merged into it: then every message with
    extras keeps its address (a content's occurrence number moves only when a message of that
    content leaves or comes in), and nothing needs carrying."""
    extras = Extras.from_transcript(shape, before)
    if not extras.messages:
        return after
    every = _every_group(groups, len(before.messages))
    merged = [k for k, group in enumerate(every) if len(group) > 1]
    touched = {before.messages[i].digest[:DIGEST_CHARS] for k in merged for i in every[k]}
    touched.update(after.messages[k].digest[:DIGEST_CHARS] for k in merged)
    if touched.isdisjoint(address.partition("#")[0] for address in extras.messages):
        return after
    per_message = list(extras.for_messages(before.messages))
    carried: list[MessageExtras] = []
    for group in every:
        if len(group) == 1:
            carried.append(per_message[group[0]])
            continue
        combined = MessageExtras()
        offset = 0
        for i in group:
            own = per_message[i]
            combined.raw.extend(((p[0] + offset, *p[1:]), b) for p, b in own.raw)
            combined.fields.extend(((p[0] + offset, *p[1:]), f) for p, f in own.fields)
            offset += block_count(before.messages[i], own)
        carried.append(combined)
    rebuilt = replace(extras, messages={}, occurrences={})
    rebuilt.attach(after.messages, carried)
    params = tuple(pair for pair in after.params if pair[0] != extras.key)
    return replace(after, params=rebuilt.to_params(params))


def _every_group(merged: Sequence[Sequence[int]], count: int) -> list[Sequence[int]]:
    """For each message after the merges, the indices of the ``count`` messages before them it
    holds: the ``merged`` groups, and every other message alone."""
    every: list[Sequence[int]] = []
    placed = 0
    for group in merged:
        every += ((k,) for k in range(placed, group[0]))
        every.append(group)
        placed = group[-1] + 1
    every += ((k,) for k in range(placed, count))
    return every


def single_message_record(shape: str, message: Message, extras: MessageExtras) -> Transcript:
    """``message`` alone in a transcript, with ``extras`` as its own (what a renderer needs to
    render it as it would be sent)."""
    record = Extras(shape)
    if extras:
        record.messages[f"{message.digest[:DIGEST_CHARS]}#0"] = extras
    return Transcript((message,), params=record.to_params(()))


DIGEST_CHARS: Final = 16


def _places(occurrences: Mapping[str, Sequence[str]]) -> dict[str, dict[str, int]]:
    """``occurrences`` as each content's ids with their occurrence numbers."""
    return {digest: {i: n for n, i in enumerate(ids)} for digest, ids in occurrences.items()}


def _addresses(
    messages: Sequence[Message], places: Mapping[str, Mapping[str, int]] | None = None
) -> Iterator[str]:
    """``<digest prefix>#<n>``: the n-th message (0-based) with that content in the transcript;
    for a content in ``places`` (``_places`` of ``Extras.occurrences``), the occurrence number
    of the message's id, where it lists it."""
    seen: dict[str, int] = {}
    for message in messages:
        digest = message.digest[:DIGEST_CHARS]
        ids = places.get(digest) if places else None
        n = ids.get(message.id) if ids is not None else None
        if n is None:
            n = seen.get(digest, 0)
            seen[digest] = n + 1
        yield f"{digest}#{n}"


@dataclass(frozen=True, slots=True)
class RawContent:
    """What a shape's parser kept raw beside a transcript's neutral parts (``raw_wire_content``)."""

    blocks: tuple[tuple[Role | None, Any], ...]
    """Message blocks with no neutral part (an Anthropic ``search_result`` or text-source
    ``document``, a Bedrock ``guardContent`` or ``cachePoint``, a Gemini ``executableCode``
    part), each with the role of the message that holds it (None: no message of the transcript
    has its address)."""
    fields: tuple[tuple[Role | None, dict[str, Any]], ...]
    """Members of neutral blocks that no neutral part holds (``cache_control``, ``citations``,
    a document's ``context``), one dict per block, with the role of its message."""
    tools: tuple[Any, ...]
    """Tools with no neutral form (server tools, a Bedrock ``cachePoint`` among the tools)."""
    tool_fields: Mapping[str, Mapping[str, Any]]
    """Members of function tools that no ``ToolSpec`` field holds, by tool name."""


def raw_wire_content(shape: str, transcript: Transcript) -> RawContent:
    """What ``shape``'s parser kept raw beside ``transcript``'s neutral parts (see
    :class:`RawContent`): content a model may read that no neutral part holds, which a judge of
    the transcript compares separately. Blocks and fields come in message order (each message's
    in wire order; those no message of the transcript addresses last), so that content whose
    order matters (Gemini's code execution parts) can be compared by order."""
    extras = Extras.from_transcript(shape, transcript)
    roles: dict[str, Role] = {}
    entries: list[tuple[str, MessageExtras]] = []
    if extras.messages:
        roles = {
            address: message.role
            for address, message in zip(
                _addresses(transcript.messages, _places(extras.occurrences)),
                transcript.messages,
                strict=True,
            )
        }
        place = {address: i for i, address in enumerate(roles)}
        entries = sorted(extras.messages.items(), key=lambda e: place.get(e[0], len(place)))
    tool_fields: dict[str, Mapping[str, Any]] = dict(extras.tool_fields)
    from reference_impl.shapes._openai_common import TOOL_EXTRAS_PARAM  # noqa: PLC0415

    openai = transcript.param(TOOL_EXTRAS_PARAM)  # the OpenAI shapes' function tool members
    if isinstance(openai, Mapping):
        tool_fields.update((str(k), v) for k, v in openai.items() if isinstance(v, Mapping))
    return RawContent(
        blocks=tuple((roles.get(a), block) for a, e in entries for _, block in e.raw),
        fields=tuple((roles.get(a), values) for a, e in entries for _, values in e.fields),
        tools=tuple(tool for _, tool in extras.raw_tools),
        tool_fields=tool_fields,
    )
