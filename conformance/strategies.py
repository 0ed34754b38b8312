"""Hypothesis strategies for sessions, valid and broken. Part of the public API.

>>> from hypothesis import given
>>> from conformance.strategies import transcripts, broken_transcripts
>>> @given(transcripts(max_messages=12))
... def test_my_assembler_keeps_pairing(session): ...

* :func:`transcripts` draws **valid** sessions: optional system text first, the user's goal, then
  alternating plain turns and complete **rings** (an assistant message with 1..8 tool calls, then
  one ``tool`` message holding every result in call order). Everything drawn is something the
  given shape can carry (reasoning origins, attachments, error flags, argument text), ids are
  unique and names match ``^[a-zA-Z0-9_-]+$`` (C7, A6). ``rings.validate`` reports nothing on them.
* :func:`broken_transcripts` draws sessions broken in exactly one named way, one for each
  ``rings.ViolationKind``, and returns ``(transcript, kind)``.
* :func:`budgets` draws input-token budgets, weighted towards the edges (0, tiny, huge).
* :func:`fixed_generation` makes a seeded (or derandomized) search draw the same examples in
  every process, whatever else the process has imported.

Turns alternate the way the strictest providers want (Bedrock B3, Gemini G1, Mistral's
``tool`` -> ``user`` ban): after a user turn or a ring's results comes the model (text or a new
ring), after the model's text comes the user. Attachments are inline base64, the one source every
shape accepts. Requires ``hypothesis`` (the ``dev`` extra).
"""

from __future__ import annotations

import base64
import importlib
import json
import string
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Final, Literal, get_args

from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument

from reference_impl.rings import ViolationKind
from reference_impl.shapes import reasoning_opens_message
from reference_impl.shapes.base import ShapeCapabilities
from reference_impl.transcript import (
    FilePart,
    ImagePart,
    Message,
    Part,
    ReasoningOrigin,
    ReasoningPart,
    Role,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    ToolSpec,
    Transcript,
    canonical_json,
)

__all__ = [
    "ALL_CAPABILITIES",
    "MAX_CALLS_PER_RING",
    "VIOLATION_KINDS",
    "broken_transcripts",
    "budgets",
    "fixed_generation",
    "transcripts",
]

VIOLATION_KINDS: Final[tuple[ViolationKind, ...]] = get_args(ViolationKind)
_LOCAL_CONSTANTS: Final = "_get_local_constants"


@contextmanager
def fixed_generation() -> Iterator[None]:
    """Within the block, a seeded or derandomized hypothesis search draws the same examples in
    every process.

    Hypothesis (6.131 on) also draws, now and then, constants it finds in the source of every
    *local* module loaded (anything in ``sys.modules`` outside the standard library and
    site-packages, test files excepted): a plug-in, another test's fake written to a temporary
    folder, a lazily imported part of this package. Which of those are loaded depends on what the
    process did before, so the same ``--seed`` searched different cases (``ctxconf fuzz`` from the
    command line and from a test run found different sessions, or none). Inside the block that
    pool is empty; hypothesis's own built-in constants are still drawn. Hypothesis has no setting
    for this (the pool is module state of ``hypothesis.internal.conjecture.providers``); with a
    hypothesis that has no such pool, the block changes nothing."""
    try:
        providers = importlib.import_module("hypothesis.internal.conjecture.providers")
    except ImportError:  # pragma: no cover - a hypothesis without the module has no such pool
        yield
        return
    original = getattr(providers, _LOCAL_CONSTANTS, None)
    cache = getattr(providers, "CONSTANTS_CACHE", None)
    if original is None or cache is None:  # pragma: no cover - as above
        yield
        return
    empty = providers.Constants()
    setattr(providers, _LOCAL_CONSTANTS, lambda: empty)
    cache.cache.clear()  # pools drawn before the block hold the loaded modules' constants
    try:
        yield
    finally:
        setattr(providers, _LOCAL_CONSTANTS, original)
        cache.cache.clear()


_ALL_ORIGINS: Final[tuple[ReasoningOrigin, ...]] = get_args(ReasoningOrigin)

ALL_CAPABILITIES: Final = ShapeCapabilities(
    system_roles=frozenset({"system", "developer"}),
    system_in_messages=True,
    reasoning_origins=frozenset(_ALL_ORIGINS),
    raw_arguments=True,
    tool_result_attachments=frozenset({"text", "image", "file"}),
    user_attachments=frozenset({"text", "image", "file"}),
    message_names=True,
    tool_result_errors=True,
)
"""Everything the neutral model can hold; what ``transcripts()`` draws from without a shape."""

MAX_CALLS_PER_RING: Final = 8

# A 1x1 PNG and a tiny PDF: valid bytes, so shapes that sniff or count them do not choke.
_PNG_1X1: Final = base64.b64encode(
    bytes.fromhex(
        "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
        "1f15c4890000000d49444154789c6300010000050001"
        "0d0a2db40000000049454e44ae426082"
    )
).decode()
_PDF_TINY: Final = base64.b64encode(b"%PDF-1.4\n%%EOF\n").decode()

_TOOL_NAMES: Final = (
    "get_weather",
    "search_docs",
    "read_file",
    "run_query",
    "notify_ops",
    "create_ticket",
    "get_status",
    "list_items",
)
_NAME_CHARS: Final = string.ascii_letters + string.digits + "_-"
_ID_CHARS: Final = string.ascii_letters + string.digits


# ------------------------------------------------------------------------------ leaf values

# Excluding the category Cs rules out lone surrogates, the only code points UTF-8 cannot encode:
# the same characters as ``codec="utf-8"``, without the seconds Hypothesis spends (once per
# process) encoding every code point to derive that codec's intervals.
_texts: Final = st.text(
    st.characters(exclude_categories=["Cs", "Cc"]),  # no control characters either
    min_size=1,
    max_size=24,
).map(lambda s: s if s.strip() else f"ok{s}")  # A11: content must not be blank

_argument_values: Final = st.dictionaries(
    st.sampled_from(("city", "query", "limit", "path", "force", "id", "ünïcode")),
    st.one_of(
        st.integers(-1000, 1000),
        st.booleans(),
        st.none(),
        st.text(st.characters(exclude_categories=["Cs"]), max_size=8),
    ),
    max_size=3,
)

_generated_names: Final = st.builds(
    lambda first, rest: first + rest,
    st.sampled_from(string.ascii_letters),
    st.text(_NAME_CHARS, max_size=15),
)


def _arguments_text(draw: st.DrawFn, raw: bool) -> str:
    """Canonical JSON when the shape carries objects; otherwise any JSON text the model might emit."""
    value = draw(_argument_values)
    if not raw:
        return canonical_json(value)
    style = draw(st.sampled_from(("canonical", "spaced", "indented")))
    if style == "canonical":
        return canonical_json(value)
    if style == "spaced":
        return json.dumps(value, ensure_ascii=False)
    return json.dumps(value, indent=2, ensure_ascii=True)


def _attachment(draw: st.DrawFn, kinds: frozenset[str]) -> TextPart | ImagePart | FilePart:
    options = sorted(kinds & {"text", "image", "file"}) or ["text"]
    kind = draw(st.sampled_from(options))
    if kind == "image":
        return ImagePart(source="base64", data=_PNG_1X1, media_type="image/png")
    if kind == "file":
        return FilePart(
            source="base64", data=_PDF_TINY, media_type="application/pdf", filename="report.pdf"
        )
    return TextPart(draw(_texts))


# --------------------------------------------------------------------------- session builder


@dataclass
class _Draft:
    """Mutable state while drawing one session: fresh ids, the tools used, the reasoning origin."""

    caps: ShapeCapabilities
    id_prefix: str
    origin: ReasoningOrigin | None
    tools: dict[str, ToolSpec] = field(default_factory=dict)
    counter: int = 0

    def fresh(self, kind: str) -> str:
        self.counter += 1
        return f"{kind}{self.id_prefix}{self.counter:03d}"


@dataclass
class _Block:
    """A plain turn (one message) or a ring (head + one tool message), kept apart for mutation."""

    kind: Literal["turn", "ring"]
    messages: list[Message]


def _reasoning(draw: st.DrawFn, draft: _Draft, origin: ReasoningOrigin) -> ReasoningPart:
    """An artifact shaped like the provider's own (opaque to everything but its shape)."""
    blob = base64.b64encode(draw(st.binary(min_size=4, max_size=24))).decode()
    data: dict[str, object]
    if origin == "openai-responses":
        data = {
            "type": "reasoning",
            "id": draft.fresh("rs_"),
            "summary": [],
            "encrypted_content": blob,
        }
    elif origin == "anthropic-messages":
        if draw(st.booleans()):
            data = {"type": "thinking", "thinking": draw(_texts), "signature": blob}
        else:
            data = {"type": "redacted_thinking", "data": blob}
    elif origin == "gemini":
        data = {"thoughtSignature": blob}
    elif origin == "bedrock-converse":
        data = {"reasoningContent": {"reasoningText": {"text": draw(_texts), "signature": blob}}}
    else:
        data = {"reasoning_content": draw(_texts)}
    return ReasoningPart(origin=origin, data=canonical_json(data))


def _tool(draw: st.DrawFn, draft: _Draft) -> ToolSpec:
    if draft.tools and draw(st.integers(0, 3)) > 0:
        return draft.tools[draw(st.sampled_from(sorted(draft.tools)))]
    name = draw(st.one_of(st.sampled_from(_TOOL_NAMES), _generated_names))
    return draft.tools.setdefault(
        name, ToolSpec(name=name, description=f"{name} tool", side_effect=name == "notify_ops")
    )


def _maybe_reasoning(draw: st.DrawFn, draft: _Draft) -> tuple[Part, ...]:
    if draft.origin is None or not draw(st.booleans()):
        return ()
    return (_reasoning(draw, draft, draft.origin),)


def _ring(draw: st.DrawFn, draft: _Draft, *, min_calls: int = 1) -> _Block:
    # Mostly one to three calls, sometimes the full fan-out: keeps examples small and fast.
    few = st.integers(min_calls, min_calls + 2)
    count = draw(few | st.integers(min_calls, max(min_calls, MAX_CALLS_PER_RING)))
    calls = tuple(
        ToolCallPart(
            id=draft.fresh("call_"),
            name=_tool(draw, draft).name,
            arguments=_arguments_text(draw, draft.caps.raw_arguments),
        )
        for _ in range(count)
    )
    # Reasoning first: it belongs to what follows it (R4, A13, G6).
    lead: tuple[Part, ...] = _maybe_reasoning(draw, draft)
    if draw(st.integers(0, 3)) == 0:
        lead += (TextPart(draw(_texts)),)
    head = Message("assistant", (*lead, *calls), wire_id=_wire_id(draft, lead))
    results = tuple(
        ToolResultPart(
            call_id=call.id,
            content=(_attachment(draw, draft.caps.tool_result_attachments),),
            is_error=draft.caps.tool_result_errors and draw(st.integers(0, 5)) == 0,
        )
        for call in calls
    )
    return _Block("ring", [head, Message("tool", results)])


def _user_turn(draw: st.DrawFn, draft: _Draft) -> _Block:
    parts: list[Part] = [TextPart(draw(_texts))]
    if draw(st.integers(0, 4)) == 0:
        parts.append(_attachment(draw, draft.caps.user_attachments))
    name = None
    if draft.caps.message_names and draw(st.integers(0, 5)) == 0:
        name = draw(_generated_names)
    return _Block("turn", [Message("user", tuple(parts), name=name)])


def _assistant_turn(draw: st.DrawFn, draft: _Draft) -> _Block:
    parts = (*_maybe_reasoning(draw, draft), TextPart(draw(_texts)))
    return _Block("turn", [Message("assistant", parts, wire_id=_wire_id(draft, parts))])


def _wire_id(draft: _Draft, parts: tuple[Part, ...]) -> str | None:
    """R4: text after a Responses reasoning item is the original output message, with its id."""
    if (
        len(parts) >= 2
        and isinstance(parts[0], ReasoningPart)
        and parts[0].origin == "openai-responses"
        and isinstance(parts[1], TextPart)
    ):
        return draft.fresh("msg_")
    return None


def _draft(draw: st.DrawFn, caps: ShapeCapabilities) -> _Draft:
    origins = sorted(caps.reasoning_origins)
    origin = draw(st.none() | st.sampled_from(origins)) if origins else None
    prefix = draw(st.text(_ID_CHARS, min_size=2, max_size=6))
    return _Draft(caps=caps, id_prefix=prefix, origin=origin)


def _blocks(draw: st.DrawFn, draft: _Draft, min_messages: int, max_messages: int) -> list[_Block]:
    """System (optional), the user's goal, then model and user turns alternating."""
    target = draw(st.integers(min_messages, max_messages))
    blocks: list[_Block] = []
    count = 0
    roles = sorted(draft.caps.system_roles)
    if roles and max_messages >= 2 and draw(st.booleans()):
        role: Role = draw(st.sampled_from(roles))
        blocks.append(_Block("turn", [Message(role, (TextPart(draw(_texts)),))]))
        count += 1
    blocks.append(_user_turn(draw, draft))
    count += 1
    model_next = True
    while count < target:
        if not model_next:
            blocks.append(_user_turn(draw, draft))
            count += 1
            model_next = True
            continue
        if max_messages - count >= 2 and draw(st.integers(0, 2)) > 0:
            blocks.append(_ring(draw, draft))
            count += 2
            continue  # after a ring's results the model speaks again
        blocks.append(_assistant_turn(draw, draft))
        count += 1
        model_next = False
    return blocks


def _transcript(draft: _Draft, blocks: list[_Block]) -> Transcript:
    messages = tuple(m for block in blocks for m in block.messages)
    return Transcript(messages=messages, tools=tuple(draft.tools.values()))


def _check_sizes(min_messages: int, max_messages: int) -> None:
    if min_messages < 1:
        raise InvalidArgument(f"min_messages={min_messages} must be at least 1")
    if max_messages < min_messages:
        raise InvalidArgument(
            f"max_messages={max_messages} must be at least min_messages={min_messages}"
        )


# ------------------------------------------------------------------------------ public: valid


def transcripts(
    capabilities: ShapeCapabilities | None = None,
    *,
    min_messages: int = 2,
    max_messages: int = 16,
) -> st.SearchStrategy[Transcript]:
    """Valid sessions that a shape with ``capabilities`` can carry (any shape when None).

    The message count lies in ``[min_messages, max_messages]``. Tool specs for every tool called
    are on ``Transcript.tools``; ``notify_ops`` is marked side-effecting.
    """
    _check_sizes(min_messages, max_messages)
    caps = capabilities or ALL_CAPABILITIES

    @st.composite
    def draw_transcript(draw: st.DrawFn) -> Transcript:
        draft = _draft(draw, caps)
        return _transcript(draft, _blocks(draw, draft, min_messages, max_messages))

    return draw_transcript()


# ----------------------------------------------------------------------------- public: broken


@dataclass
class _Site:
    """Where one mutation happens: the blocks of a session and the index of the ring to break."""

    draw: st.DrawFn
    draft: _Draft
    blocks: list[_Block]
    at: int

    @property
    def head(self) -> Message:
        return self.blocks[self.at].messages[0]

    @property
    def tool(self) -> Message:
        return self.blocks[self.at].messages[1]

    def set(self, *messages: Message) -> None:
        self.blocks[self.at].messages = list(messages)

    def insert_turn(self, message: Message) -> None:
        """A plain turn placed right before the ring (a block boundary, never inside a ring)."""
        self.blocks.insert(self.at, _Block("turn", [message]))

    def split_results(self) -> tuple[Message, Message]:
        parts = self.tool.parts
        cut = self.draw(st.integers(1, len(parts) - 1))
        return replace(self.tool, parts=parts[:cut]), replace(self.tool, parts=parts[cut:])


def _break_unanswered(site: _Site) -> None:
    """Drop one result (or the whole tool message for a one-call ring): C1, R1, A1, G3, B2."""
    parts = site.tool.parts
    if len(parts) == 1:
        site.set(site.head)
        return
    drop = site.draw(st.integers(0, len(parts) - 1))
    site.set(site.head, replace(site.tool, parts=parts[:drop] + parts[drop + 1 :]))


def _break_orphan(site: _Site) -> None:
    """Drop the ring's assistant message, or answer a call nobody made: C2, R2, A2, G2, B1."""
    if site.draw(st.booleans()):
        site.set(site.tool)
        return
    stray = ToolResultPart(call_id=site.draft.fresh("call_"), content=(TextPart("stray"),))
    parts = site.tool.parts
    where = site.draw(st.integers(0, len(parts)))
    site.set(site.head, replace(site.tool, parts=(*parts[:where], stray, *parts[where:])))


def _break_duplicate(site: _Site) -> None:
    """Two calls of one ring share an id (and so do their results): C3, A5, R6."""
    calls = site.head.tool_calls
    picks = site.draw(st.lists(st.integers(0, len(calls) - 1), min_size=2, max_size=2, unique=True))
    reused, renamed = calls[min(picks)].id, calls[max(picks)].id
    head_parts = tuple(
        replace(p, id=reused) if isinstance(p, ToolCallPart) and p.id == renamed else p
        for p in site.head.parts
    )
    tool_parts = tuple(
        replace(p, call_id=reused) if isinstance(p, ToolResultPart) and p.call_id == renamed else p
        for p in site.tool.parts
    )
    site.set(replace(site.head, parts=head_parts), replace(site.tool, parts=tool_parts))


def _break_result_first(site: _Site) -> None:
    """The results come before their calls: C2, A2, R2 (and the calls go unanswered)."""
    site.set(site.tool, site.head)


def _break_split(site: _Site) -> None:
    """One ring's results in two tool messages: A4, B2, G3."""
    site.set(site.head, *site.split_results())


def _break_interleaved(site: _Site) -> None:
    """A user/system/assistant message between a ring's calls and its results: C1a, A1, G2."""
    role: Role = site.draw(st.sampled_from(("user", "system", "assistant")))
    intruder = Message(role, (TextPart(site.draw(_texts)),))
    if len(site.tool.parts) > 1 and site.draw(st.booleans()):
        first, second = site.split_results()
        site.set(site.head, first, intruder, second)
    else:
        site.set(site.head, intruder, site.tool)


def _break_text_first(site: _Site) -> None:
    """Text before the tool results in the tool message: A3, A3a."""
    parts = site.tool.parts
    where = site.draw(st.integers(0, len(parts) - 1))
    text = TextPart(site.draw(_texts))
    site.set(site.head, replace(site.tool, parts=(*parts[:where], text, *parts[where:])))


def _break_reasoning(site: _Site) -> None:
    """Reasoning with nothing after it to belong to, or thinking not first: R4, A13, G6."""
    # A shape without reasoning still gets a break of this kind, in some provider's artifact.
    origins = sorted(site.draft.caps.reasoning_origins) or list(_ALL_ORIGINS)
    origin: ReasoningOrigin = site.draw(st.sampled_from(origins))
    if site.draft.origin is not None:
        origin = site.draft.origin
    artifact = _reasoning(site.draw, site.draft, origin)
    variants = ["trailing", "alone"]
    if reasoning_opens_message(origin):  # A13, B10
        variants.append("not_first")
    variant = site.draw(st.sampled_from(variants))
    if variant == "trailing":  # R4: a reasoning item last, nothing follows it
        site.set(replace(site.head, parts=(*site.head.parts, artifact)), site.tool)
    elif variant == "alone":  # an assistant message holding only reasoning
        site.insert_turn(Message("assistant", (artifact,)))
    else:  # A13: the thinking block after text or a tool call instead of at the start
        rest: list[Part] = [p for p in site.head.parts if not isinstance(p, ReasoningPart)]
        last = rest.pop()
        if not rest:  # one lone call: something must come before the thinking block
            rest.append(TextPart(site.draw(_texts)))
        site.set(replace(site.head, parts=(*rest, artifact, last)), site.tool)


def _break_empty_calls(site: _Site) -> None:
    """An assistant message with ``tool_calls: []`` on the wire: C4, Qwen."""
    site.insert_turn(Message("assistant", (TextPart(site.draw(_texts)),), empty_tool_calls=True))


_MUTATIONS: Final[dict[ViolationKind, Callable[[_Site], None]]] = {
    "unanswered_call": _break_unanswered,
    "orphan_result": _break_orphan,
    "duplicate_id": _break_duplicate,
    "result_before_call": _break_result_first,
    "results_split": _break_split,
    "interleaved": _break_interleaved,
    "text_before_results": _break_text_first,
    "reasoning_detached": _break_reasoning,
    "empty_tool_calls": _break_empty_calls,
}

# Kinds whose mutation needs a ring with at least two calls.
_NEEDS_TWO_CALLS: Final = frozenset({"duplicate_id", "results_split"})


def broken_transcripts(
    kind: ViolationKind | None = None,
    capabilities: ShapeCapabilities | None = None,
    *,
    max_messages: int = 8,
) -> st.SearchStrategy[tuple[Transcript, ViolationKind]]:
    """Sessions broken in exactly one named way, with the kind: ``(transcript, kind)``.

    A valid session gets one extra ring at a random place, and that ring is broken by the
    mutation for ``kind`` (any kind when None). ``rings.validate`` reports at least one violation
    of that kind; a few mutations imply a second kind (results placed before their calls also
    leave those calls unanswered; results split around an intruding message are also split).
    """
    if kind is not None and kind not in _MUTATIONS:
        raise InvalidArgument(f"unknown violation kind {kind!r}; expected one of {VIOLATION_KINDS}")
    _check_sizes(1, max_messages)
    caps = capabilities or ALL_CAPABILITIES
    kinds = st.just(kind) if kind is not None else st.sampled_from(VIOLATION_KINDS)

    @st.composite
    def draw_broken(draw: st.DrawFn) -> tuple[Transcript, ViolationKind]:
        chosen: ViolationKind = draw(kinds)
        draft = _draft(draw, caps)
        blocks = _blocks(draw, draft, 1, max_messages)
        ring = _ring(draw, draft, min_calls=2 if chosen in _NEEDS_TWO_CALLS else 1)
        # Never before the first user turn, so the break is the only thing wrong.
        first_user = next(i for i, b in enumerate(blocks) if b.messages[0].role == "user")
        at = draw(st.integers(first_user + 1, len(blocks)))
        blocks.insert(at, ring)
        _MUTATIONS[chosen](_Site(draw, draft, blocks, at))
        return _transcript(draft, blocks), chosen

    return draw_broken()


# ---------------------------------------------------------------------------- public: budgets


def budgets(*, min_value: int = 0, max_value: int = 200_000) -> st.SearchStrategy[int]:
    """Input-token budgets: the edges (``min_value``, tiny, ``max_value``) as often as the middle."""
    if min_value < 0 or max_value < min_value:
        raise InvalidArgument(
            f"need 0 <= min_value <= max_value, got min_value={min_value}, max_value={max_value}"
        )
    tiny = st.integers(min_value, min(max_value, min_value + 64))
    typical = st.integers(min_value, min(max_value, 8_192))
    return st.one_of(
        st.sampled_from(sorted({min_value, max_value})),
        tiny,
        typical,
        st.integers(min_value, max_value),
    )
