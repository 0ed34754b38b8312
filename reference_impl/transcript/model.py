"""The vendor-neutral transcript model: messages with a role and typed parts.

Every part is a frozen, slotted dataclass with a literal ``kind``. Provider code lives in
``reference_impl.shapes``; everything else speaks this model.

Conventions that the shapes rely on:

* One ``tool`` message carries *all* results of one ring (the Anthropic/Bedrock/Gemini form);
  OpenAI Chat's consecutive ``tool`` messages are merged into one on parse and split on render.
  Trailing text/image parts after the results are allowed in a ``tool`` message (Anthropic lets
  text follow ``tool_result`` blocks, rule A3); text *before* a result is a violation that
  ``rings.validate`` reports.
* Tool-call arguments are kept as the JSON *text* the model produced (byte-exact for shapes that
  carry a string). Shapes that carry an object parse it and store ``canonical_json(obj)``.
* Reasoning artifacts are opaque: ``ReasoningPart.data`` is the canonical JSON of the provider's own
  object (a Responses ``reasoning`` item, an Anthropic ``thinking``/``redacted_thinking`` block, a
  Gemini ``{"thoughtSignature": ...}`` for the part that follows it, DeepSeek
  ``{"reasoning_content": ...}``), tagged with the shape it came from.
* ``Message.id`` is stable but not part of equality: wire formats do not carry message ids, so
  ``parse(render(t)) == t`` compares content. A transcript fills missing ids from the position and
  a content digest.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import operator
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from itertools import compress, repeat
from typing import Any, Final, Literal, TypeAlias, TypeVar, get_args

from typing_extensions import assert_never

from reference_impl.documents import loads_json, non_finite_number
from reference_impl.errors import TranscriptError
from reference_impl.wording import with_article

__all__ = [
    "SUMMARY_CLOSE",
    "SUMMARY_OPEN",
    "AttachmentPart",
    "FilePart",
    "ImagePart",
    "Message",
    "Part",
    "ReasoningOrigin",
    "ReasoningPart",
    "Role",
    "ShapeName",
    "SummaryPart",
    "TextPart",
    "ToolCallPart",
    "ToolResultPart",
    "ToolSpec",
    "Transcript",
    "canonical_json",
    "default_id",
    "index_or_end",
    "kind_codes",
    "kind_positions",
    "message_digest",
    "message_digests",
    "new_text_part",
    "params_from_mapping",
    "same_messages",
    "starts_with",
    "text_message_at",
    "trusted_transcript",
]

Role: TypeAlias = Literal["system", "developer", "user", "assistant", "tool"]
INSTRUCTION_ROLES: Final[frozenset[Role]] = frozenset({"system", "developer"})
"""The roles whose text instructs the model, as a system prompt does (``developer`` is OpenAI's
name for it on reasoning models): pinned, led by nothing else, never a conversation turn."""
ShapeName: TypeAlias = Literal[
    "openai-chat", "openai-responses", "anthropic-messages", "gemini", "bedrock-converse"
]
ReasoningOrigin: TypeAlias = Literal[
    "openai-responses", "anthropic-messages", "gemini", "bedrock-converse", "deepseek"
]
ImageSource: TypeAlias = Literal["url", "base64", "file_id"]
ImageDetail: TypeAlias = Literal["auto", "low", "high"]

ROLES: Final[tuple[str, ...]] = get_args(Role)
SHAPE_NAMES: Final[tuple[str, ...]] = get_args(ShapeName)
REASONING_ORIGINS: Final[tuple[str, ...]] = get_args(ReasoningOrigin)


# A summary travels inside a text block; these markers let every shape parse it back as a summary.
SUMMARY_OPEN: Final = "<context-summary>\n"
SUMMARY_CLOSE: Final = "\n</context-summary>"


def canonical_json(value: object) -> str:
    """The one JSON text of a value: sorted keys, no spaces, UTF-8 kept; a ``ValueError`` for NaN
    or Infinity, which JSON does not have (no request is ever written with one)."""
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    )


# --------------------------------------------------------------------------------------- parts


@dataclass(frozen=True, slots=True)
class TextPart:
    """Plain text."""

    text: str
    kind: Literal["text"] = "text"


@dataclass(frozen=True, slots=True)
class ImagePart:
    """An image by URL, inline base64 or provider file id.

    ``width``/``height`` are not on the wire; when known they feed the token formulas.
    """

    source: ImageSource
    data: str
    media_type: str | None = None
    detail: ImageDetail | None = None
    width: int | None = field(default=None, compare=False)
    height: int | None = field(default=None, compare=False)
    kind: Literal["image"] = "image"


@dataclass(frozen=True, slots=True)
class FilePart:
    """A document (PDF, text, ...) by URL, inline base64 or provider file id."""

    source: ImageSource
    data: str
    media_type: str | None = None
    filename: str | None = None
    kind: Literal["file"] = "file"


AttachmentPart: TypeAlias = "TextPart | ImagePart | FilePart"


@dataclass(frozen=True, slots=True)
class ToolCallPart:
    """One tool call. ``id`` is the call id that results refer to (``call_…``, ``toolu_…``).

    ``item_id`` is a provider's separate item id where one exists (Responses ``fc_…``).
    """

    id: str
    name: str
    arguments: str
    item_id: str | None = None
    kind: Literal["tool_call"] = "tool_call"

    def arguments_value(self) -> object:
        """The arguments as a JSON value; a named error when the model produced invalid JSON."""
        try:
            return loads_json(self.arguments) if self.arguments.strip() else {}
        except json.JSONDecodeError as exc:
            raise TranscriptError(
                f"tool call arguments are not valid JSON ({exc.msg} at char {exc.pos})",
                where=f"tool call {self.id!r}",
            ) from None
        except RecursionError:
            raise TranscriptError(
                "tool call arguments are nested too deeply to decode",
                where=f"tool call {self.id!r}",
            ) from None


@dataclass(frozen=True, slots=True)
class ToolResultPart:
    """The result of one tool call. ``name`` is kept where a shape carries it (Gemini)."""

    call_id: str
    content: tuple[TextPart | ImagePart | FilePart, ...]
    is_error: bool = False
    name: str | None = None
    item_id: str | None = None
    kind: Literal["tool_result"] = "tool_result"

    @property
    def text(self) -> str:
        """The result's text parts, concatenated."""
        return "".join(p.text for p in self.content if isinstance(p, TextPart))


@dataclass(frozen=True, slots=True)
class ReasoningPart:
    """An opaque reasoning artifact, kept byte-exact as canonical JSON and tagged with its origin.

    ``tokens`` is not on the wire: the reasoning tokens the response that produced the artifact
    reported (Responses ``usage.output_tokens_details.reasoning_tokens``), when known. A provider
    bills them as input when the artifact is replayed, so the counters read it; like an image's
    size it is not compared, but it is in the digest.
    """

    origin: ReasoningOrigin
    data: str
    tokens: int | None = field(default=None, compare=False)
    kind: Literal["reasoning"] = "reasoning"

    def value(self) -> dict[str, Any]:
        """The provider's artifact as JSON data (parsed from ``data``)."""
        loaded = json.loads(self.data)
        if not isinstance(loaded, dict):  # pragma: no cover - guarded in __post_init__ of Message
            raise TranscriptError("reasoning data must be a JSON object")
        return loaded


@dataclass(frozen=True, slots=True)
class SummaryPart:
    """A structured summary that replaced part of the middle of a session."""

    text: str
    kind: Literal["summary"] = "summary"

    def wire_text(self) -> str:
        """The summary as wire text, between the summary markers."""
        return f"{SUMMARY_OPEN}{self.text}{SUMMARY_CLOSE}"

    @staticmethod
    def from_wire_text(text: str) -> SummaryPart | None:
        """The summary in wire text between the markers; None for other text."""
        if text.startswith(SUMMARY_OPEN) and text.endswith(SUMMARY_CLOSE):
            return SummaryPart(text[len(SUMMARY_OPEN) : len(text) - len(SUMMARY_CLOSE)])
        return None


Part: TypeAlias = (
    "TextPart | ImagePart | FilePart | ToolCallPart | ToolResultPart | ReasoningPart | SummaryPart"
)

_ALLOWED_KINDS: Final[Mapping[str, frozenset[str]]] = {
    "system": frozenset({"text", "summary"}),
    "developer": frozenset({"text", "summary"}),
    "user": frozenset({"text", "image", "file", "summary"}),
    "assistant": frozenset({"text", "tool_call", "reasoning", "image", "file"}),
    "tool": frozenset({"tool_result", "text", "image", "file"}),
}


# ------------------------------------------------------------------------------------- message

KIND_SYSTEM: Final = 0
KIND_DEVELOPER: Final = 1
KIND_USER: Final = 2
KIND_ASSISTANT: Final = 3
KIND_OTHER: Final = 4
"""A message's kind code (``kind_codes``): 0-3 for a message of exactly one text part from the
system, developer, user or assistant; 4 for every other message (tool parts, attachments,
reasoning, a summary, several parts, a ``tool`` role, an empty ``tool_calls``)."""
_PLAIN_KIND: Final[Mapping[str, int]] = {
    "system": KIND_SYSTEM,
    "developer": KIND_DEVELOPER,
    "user": KIND_USER,
    "assistant": KIND_ASSISTANT,
}


@dataclass(frozen=True, slots=True)
class Message:
    """One message of a session.

    ``empty_tool_calls`` records a wire ``tool_calls: []`` (rule C4) so that it can be reported
    and rendered back rather than vanish; ``wire_id`` is a provider item id (Responses ``msg_…``).
    """

    role: Role
    parts: tuple[Part, ...]
    name: str | None = None
    wire_id: str | None = None
    empty_tool_calls: bool = False
    id: str = field(default="", compare=False)
    _digest: str = field(default="", init=False, repr=False, compare=False)
    _kind: int = field(default=KIND_OTHER, init=False, repr=False, compare=False)
    _plain_text: str | None = field(default=None, init=False, repr=False, compare=False)
    """The text of a message of one text part with no name (what a counter encodes, framed by
    its role), None for every other message: read once here, where the parts are checked, so
    that counting a batch reads one slot per message, not its parts."""

    def __post_init__(self) -> None:
        if self.role not in ROLES:
            raise TranscriptError(f"unknown role {self.role!r}; expected one of {', '.join(ROLES)}")
        if not isinstance(self.parts, tuple):
            raise TranscriptError(f"parts must be a tuple, got {type(self.parts).__name__}")
        allowed = _ALLOWED_KINDS[self.role]
        for i, part in enumerate(self.parts):
            kind = getattr(part, "kind", None)
            if kind not in allowed:
                raise TranscriptError(
                    f"{with_article(self.role)} message cannot hold {with_article(repr(kind))} part "
                    f"(allowed: {', '.join(sorted(allowed))})",
                    where=f"parts[{i}]",
                )
            if isinstance(part, TextPart | SummaryPart) and not isinstance(part.text, str):
                raise TranscriptError(
                    f"{with_article(kind)} part's text must be a string, got "
                    f"{type(part.text).__name__}",
                    where=f"parts[{i}].text",
                )
        parts = self.parts
        if len(parts) == 1 and type(parts[0]) is TextPart and not self.empty_tool_calls:
            kind = _PLAIN_KIND.get(self.role, KIND_OTHER)
            object.__setattr__(self, "_kind", kind)
            if kind != KIND_OTHER and self.name is None:
                object.__setattr__(self, "_plain_text", parts[0].text)

    # -- convenience views -----------------------------------------------------------------

    @property
    def digest(self) -> str:
        """A content hash (sha256 over the fields, id excluded; ``message_digest``), computed once."""
        if not self._digest:
            object.__setattr__(self, "_digest", message_digest(self))
        return self._digest

    @property
    def tool_calls(self) -> tuple[ToolCallPart, ...]:
        """The message's tool calls, in order."""
        return tuple(p for p in self.parts if isinstance(p, ToolCallPart))

    @property
    def tool_results(self) -> tuple[ToolResultPart, ...]:
        """The message's tool results, in order."""
        return tuple(p for p in self.parts if isinstance(p, ToolResultPart))

    @property
    def text(self) -> str:
        """Concatenated text and summary text (for display and heuristics, never for the wire)."""
        return "".join(p.text for p in self.parts if isinstance(p, TextPart | SummaryPart))

    @property
    def has_tool_parts(self) -> bool:
        """Whether the message holds a tool call or a tool result."""
        return any(isinstance(p, ToolCallPart | ToolResultPart) for p in self.parts)

    def __eq__(self, other: object) -> bool:
        # The dataclass equality (fields in order, id and caches left out), written out so that
        # each comparison by value is counted: ``same_messages`` relies on it.
        next(_VALUE_COMPARISONS)
        if other.__class__ is not self.__class__:
            return NotImplemented
        assert isinstance(other, Message)
        return (self.role, self.parts, self.name, self.wire_id, self.empty_tool_calls) == (
            other.role,
            other.parts,
            other.name,
            other.wire_id,
            other.empty_tool_calls,
        )

    def __hash__(self) -> int:
        # What the dataclass would generate for a frozen class with this equality.
        return hash((self.role, self.parts, self.name, self.wire_id, self.empty_tool_calls))

    def with_id(self, message_id: str) -> Message:
        """The same message with another id (ids are not part of equality). A copy of checked
        fields, not a new construction: a long session gets an id for every message."""
        renamed: Message = object.__new__(Message)
        _SET_ROLE(renamed, self.role)
        _SET_PARTS(renamed, self.parts)
        _SET_NAME(renamed, self.name)
        _SET_WIRE_ID(renamed, self.wire_id)
        _SET_EMPTY(renamed, self.empty_tool_calls)
        _SET_ID(renamed, message_id)
        _SET_DIGEST(renamed, self._digest)  # the id is not part of the digest
        _SET_KIND(renamed, self._kind)
        _SET_PLAIN_TEXT(renamed, self._plain_text)
        return renamed


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """A tool definition offered to the model. ``parameters`` is the canonical JSON schema text."""

    name: str
    description: str = ""
    parameters: str = '{"type":"object"}'
    side_effect: bool = field(default=False, compare=False)

    def parameters_value(self) -> dict[str, Any]:
        """The JSON schema of the parameters as data."""
        loaded = json.loads(self.parameters)
        if not isinstance(loaded, dict):
            raise TranscriptError(
                "tool parameters must be a JSON object", where=f"tool {self.name!r}"
            )
        return loaded


@dataclass(frozen=True, slots=True)
class Transcript:
    """A session or a view: messages, the tools offered, the model, and shape-specific params.

    ``params`` holds top-level request options that are not messages or tools (``temperature``,
    ``max_tokens``, ``thinking`` …) as canonical JSON per key; shapes re-emit those they understand.
    """

    messages: tuple[Message, ...]
    tools: tuple[ToolSpec, ...] = ()
    model: str | None = None
    params: tuple[tuple[str, str], ...] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.messages, tuple):
            raise TranscriptError(f"messages must be a tuple, got {type(self.messages).__name__}")
        if not self._checked_at_c_speed():
            self._check_messages()
        self._check_tools()
        self._check_params()

    def _checked_at_c_speed(self) -> bool:
        """Whether every message is a ``Message`` with an id of its own, no two alike (ids
        filled in where missing): checked at C speed for the usual transcript, whose messages
        have their ids (or most of them, for a parsed one); False sends it to the careful
        check, which names what is wrong."""
        messages = self.messages
        if not all(map(operator.is_, map(type, messages), repeat(Message))):
            return False
        ids = list(map(_ID_OF, messages))
        if "" in ids:
            fixed = list(messages)
            for index in compress(range(len(ids)), map(operator.not_, ids)):
                fixed[index] = messages[index].with_id(default_id(index, messages[index]))
                ids[index] = fixed[index].id
            if len(set(ids)) != len(ids):
                return False
            object.__setattr__(self, "messages", tuple(fixed))
            return True
        return len(set(ids)) == len(ids)

    def _check_messages(self) -> None:
        """Every message a ``Message``, ids filled in from the position and the digest, no id
        twice (each error names the message)."""
        seen: dict[str, int] = {}
        fixed: list[Message] = []
        changed = False
        for index, given in enumerate(self.messages):
            if not isinstance(given, Message):
                raise TranscriptError(
                    f"expected a Message, got {type(given).__name__}", where=f"messages[{index}]"
                )
            message = given
            if not message.id:
                message = given.with_id(default_id(index, given))
                changed = True
            if message.id in seen:
                raise TranscriptError(
                    f"duplicate message id {message.id!r} (also at messages[{seen[message.id]}])",
                    where=f"messages[{index}]",
                )
            seen[message.id] = index
            fixed.append(message)
        if changed:
            object.__setattr__(self, "messages", tuple(fixed))

    def _check_tools(self) -> None:
        if not isinstance(self.tools, tuple):
            raise TranscriptError(f"tools must be a tuple, got {type(self.tools).__name__}")
        names: dict[str, int] = {}
        for index, tool in enumerate(self.tools):
            if not isinstance(tool, ToolSpec):
                raise TranscriptError(
                    f"expected a ToolSpec, got {type(tool).__name__}", where=f"tools[{index}]"
                )
            if tool.name in names:
                # Providers refuse a request that offers one name twice (A7: "Tool names must be unique").
                raise TranscriptError(
                    f"duplicate tool name {tool.name!r} (also at tools[{names[tool.name]}])",
                    where=f"tools[{index}]",
                )
            names[tool.name] = index

    def _check_params(self) -> None:
        params = self.params
        if not isinstance(params, tuple):
            raise TranscriptError(
                f"params must be a tuple of (key, canonical JSON) pairs, got "
                f"{type(params).__name__} (params_from_mapping makes one from a dict)"
            )
        for index, pair in enumerate(params):
            given: object = pair  # the annotation is a promise the caller may not have kept
            if not (
                isinstance(given, tuple)
                and len(given) == 2
                and all(isinstance(item, str) for item in given)
            ):
                raise TranscriptError(
                    "expected a (key, canonical JSON) pair of strings", where=f"params[{index}]"
                )

    def __iter__(self) -> Iterator[Message]:
        return iter(self.messages)

    def __len__(self) -> int:
        return len(self.messages)

    def param(self, key: str) -> object | None:
        """The value of param ``key`` as data, or None when absent."""
        for k, v in self.params:
            if k == key:
                value: object = json.loads(v)
                return value
        return None

    def with_messages(self, messages: Iterable[Message]) -> Transcript:
        """The same transcript with other messages (tools, model and params kept)."""
        return replace(self, messages=tuple(messages))


_KIND_OF = operator.attrgetter("_kind")
_PLAIN_TEXT_OF = operator.attrgetter("_plain_text")
_ID_OF = operator.attrgetter("id")
_VALUE_COMPARISONS: Final = itertools.count()
"""Incremented by every ``Message.__eq__`` call (``same_messages``)."""
_DIGEST_OF = operator.attrgetter("_digest")
# Each slot's own setter: what ``object.__setattr__`` does for a frozen message, without its
# lookup of the name (``text_message_at`` fills eight slots for most messages of a session).
(
    _SET_ROLE,
    _SET_PARTS,
    _SET_NAME,
    _SET_WIRE_ID,
    _SET_EMPTY,
    _SET_KIND,
    _SET_PLAIN_TEXT,
    _SET_DIGEST,
    _SET_ID,
) = (
    getattr(Message, slot).__set__
    for slot in (
        "role",
        "parts",
        "name",
        "wire_id",
        "empty_tool_calls",
        "_kind",
        "_plain_text",
        "_digest",
        "id",
    )
)


_NEW = object.__new__
_SET_TEXT, _SET_TEXT_KIND = (getattr(TextPart, slot).__set__ for slot in ("text", "kind"))


def new_text_part(text: str) -> TextPart:
    """``TextPart(text)`` for a ``text`` known to be a string, its two slots set directly: a
    frozen dataclass's ``__init__`` sets each field through ``object.__setattr__``, which costs
    more than the rest of making a parsed message of one text part."""
    part: TextPart = _NEW(TextPart)
    _SET_TEXT(part, text)
    _SET_TEXT_KIND(part, "text")
    return part


def kind_codes(messages: Sequence[Message]) -> bytes:
    """One kind code per message (``KIND_SYSTEM`` ... ``KIND_OTHER``), at C speed: a session is
    mostly messages of one text part, which can take no part in tool-call pairing; the codes let
    a pass over a long session visit only the others (``bytes.find``) and name the roles of the
    rest without reading them."""
    return bytes(map(_KIND_OF, messages))


def plain_texts(messages: Sequence[Message]) -> list[str | None]:
    """The text of each message of one text part with no name (its ``kind_codes`` code is 0-3
    and it has no ``name``), None for every other message, at C speed: what a counter encodes of
    most messages of a session, framed by the role."""
    return list(map(_PLAIN_TEXT_OF, messages))


def default_id(index: int, message: Message) -> str:
    """The id a transcript gives the message at ``index`` that has none: the position and the
    start of the content digest."""
    return f"m{index}-{(_DIGEST_OF(message) or message.digest)[:10]}"


def text_message_at(index: int, role: Role, part: TextPart | SummaryPart) -> Message:
    """``Message(role, (part,))`` with the id ``default_id`` gives it at ``index``: made once
    (where a message made without an id is copied to take one), its checks those of a message
    of one part, for the many such messages a parser meets."""
    kind = _PLAIN_KIND.get(role)
    if kind is None or (type(part) is SummaryPart and role == "assistant"):
        message = Message(role, (part,))  # the checks name what is wrong
    else:
        message = object.__new__(Message)
        _SET_ROLE(message, role)
        _SET_PARTS(message, (part,))
        _SET_NAME(message, None)
        _SET_WIRE_ID(message, None)
        _SET_EMPTY(message, False)
        if type(part) is TextPart:
            _SET_KIND(message, kind)
            _SET_PLAIN_TEXT(message, part.text)
            raw = part.text.encode("utf-8", "surrogatepass")  # _one_text_digest, no name or id
            h = hashlib.sha256(_ONE_TEXT_HEADS[role] + b"NNP1:textS%d:" % len(raw))
            h.update(raw)
            digest = h.hexdigest()
            _SET_DIGEST(message, digest)
            _SET_ID(message, f"m{index}-{digest[:10]}")  # default_id, the digest in hand
            return message
        _SET_KIND(message, KIND_OTHER)
        _SET_PLAIN_TEXT(message, None)
        _SET_DIGEST(message, "")
    _SET_ID(message, default_id(index, message))  # a new object: nobody else holds it yet
    return message


def same_messages(a: tuple[Message, ...], b: tuple[Message, ...]) -> bool:
    """Whether ``a`` and ``b`` hold the very same message objects, in order.

    At C speed: a tuple comparison passes over identical elements without calling ``__eq__``;
    ``Message.__eq__`` counts the comparisons by value (``_VALUE_COMPARISONS``, a thread-safe
    counter), so a comparison that called none met identical objects only. When one was called
    (an equal but distinct message, or another thread comparing messages meanwhile), the
    answer comes from comparing each pair by identity."""
    if len(a) != len(b):
        return False
    before = next(_VALUE_COMPARISONS)
    if a != b:
        return False
    if next(_VALUE_COMPARISONS) == before + 1:
        return True
    return all(map(operator.is_, a, b))


def _pointer_compare() -> Callable[[int, int, int], int] | None:
    """``memcmp`` from the C library, when this interpreter lays a tuple out as CPython does
    (its items an array of pointers at ``tuple.__basicsize__`` from the object's address, which
    ``id`` is) and a check on known tuples agrees; else None (``starts_with`` then slices, as on
    an interpreter without ``ctypes``)."""
    try:
        import ctypes  # noqa: PLC0415 - optional: a build without it slices
    except ImportError:
        return None
    if sys.implementation.name != "cpython" or tuple.__itemsize__ != ctypes.sizeof(ctypes.c_void_p):
        return None
    try:
        library = ctypes.PyDLL(None) if sys.platform != "win32" else ctypes.PyDLL("msvcrt")
        memcmp = library.memcmp
    except (OSError, AttributeError):
        return None
    memcmp.argtypes = (ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t)
    memcmp.restype = ctypes.c_int

    def differ(a: int, b: int, n: int) -> int:
        return int(memcmp(a + tuple.__basicsize__, b + tuple.__basicsize__, n * tuple.__itemsize__))

    x, y = object(), object()
    same, other = (x, y, x), (x, y, y)
    built = (x, y, x)  # another tuple, built apart, holding the same objects
    whole = len(same)  # not a literal: a count past the arrays would read other memory
    if differ(id(same), id(built), whole) or not differ(id(same), id(other), whole):
        return None
    if differ(id(same), id(other), 2):  # the first two only: equal
        return None
    return differ


_POINTERS_DIFFER: Final = _pointer_compare()


def trusted_transcript(
    like: Transcript, messages: tuple[Message, ...], tools: tuple[ToolSpec, ...] | None = None
) -> Transcript:
    """``like.with_messages(messages)`` (with ``tools`` instead of ``like``'s, when given)
    without the per-message checks, which would cost every turn the whole view. For the
    package's own use, on messages known to be valid together (some of a validated
    transcript's, or of two, with no id twice) and tools of a validated transcript: nothing is
    checked."""
    view = object.__new__(Transcript)
    object.__setattr__(view, "messages", messages)
    object.__setattr__(view, "tools", like.tools if tools is None else tools)
    object.__setattr__(view, "model", like.model)
    object.__setattr__(view, "params", like.params)
    return view


def starts_with(messages: tuple[Message, ...], head: tuple[Message, ...]) -> bool:
    """Whether ``messages`` begins with the very objects of ``head``, in order.

    On CPython, the two tuples' arrays of item pointers are compared with ``memcmp``: no item
    is read, nor its reference count touched, so the check costs ~0.2 ns a message, not the
    ~4 ns of a slice and a tuple comparison (``same_messages``), which touch every object and
    miss the cache on a long session. Elsewhere, that slice and comparison."""
    n = len(head)
    if len(messages) < n:
        return False
    if _POINTERS_DIFFER is not None and type(messages) is tuple and type(head) is tuple:
        return n == 0 or not _POINTERS_DIFFER(id(messages), id(head), n)
    return same_messages(messages[:n], head)


def message_digests(messages: Sequence[Message]) -> list[str]:
    """``Message.digest`` of each message; at C speed for those already computed (a session's
    messages all have theirs once the transcript has given them ids)."""
    found = list(map(_DIGEST_OF, messages))
    at = index_or_end(found, "", 0)
    while at < len(found):  # the few computed now (a merged message is a new object)
        found[at] = messages[at].digest
        at = index_or_end(found, "", at + 1)
    return found


_V = TypeVar("_V")


def index_or_end(values: list[_V], value: _V, start: int) -> int:
    """The index of the first ``value`` in ``values`` from ``start``, or ``len(values)``: a
    search at C speed (``list.index``)."""
    try:
        return values.index(value, start)
    except ValueError:
        return len(values)


def kind_positions(
    codes: bytes | bytearray, kind: int, start: int = 0, stop: int | None = None
) -> list[int]:
    """The positions of ``kind`` in ``codes[start:stop]`` (``kind_codes``), found with
    ``bytes.find``: C speed between them."""
    end = len(codes) if stop is None else stop
    out: list[int] = []
    find = codes.find
    at = find(kind, start, end)
    while at >= 0:
        out.append(at)
        at = find(kind, at + 1, end)
    return out


def params_from_mapping(values: Mapping[str, object]) -> tuple[tuple[str, str], ...]:
    """Request settings as ``Transcript.params`` holds them: canonical JSON per key. A value
    that is not JSON data (``float("nan")``, a set) is a :class:`TranscriptError` naming its
    key."""
    try:
        return tuple(sorted((k, canonical_json(v)) for k, v in values.items()))
    except (TypeError, ValueError):
        pass
    for key, value in values.items():  # the first value that is not JSON data, named
        try:
            canonical_json(value)
        except (TypeError, ValueError) as exc:  # noqa: PERF203 - the error path only
            found = non_finite_number(value) if isinstance(exc, ValueError) else None
            raise TranscriptError(f"not JSON data: {found or exc}", where=f"params.{key}") from None
    raise TranscriptError("setting names must be text", where="params")  # unsortable keys


# ------------------------------------------------------------------------------------ digest


def _digest_field(out: list[bytes], value: str | None) -> None:
    # Tagged and length-prefixed, so no two different field sequences give the same bytes.
    if value is None:
        out.append(b"N")
        return
    raw = value.encode("utf-8", "surrogatepass")
    out.append(b"S%d:" % len(raw))
    out.append(raw)


def _digest_parts(out: list[bytes], parts: Sequence[Part]) -> None:
    out.append(b"P%d:" % len(parts))
    value: str | None
    for part in parts:
        match part:
            case TextPart(text=text):
                out.append(b"text")
                _digest_field(out, text)
            case ImagePart():
                out.append(b"image")
                for value in (part.source, part.data, part.media_type, part.detail):
                    _digest_field(out, value)
                # Sizes are not compared but change the token count, so they are in the digest.
                out.append(b"W%r,H%r" % (part.width, part.height))
            case FilePart():
                out.append(b"file")
                for value in (part.source, part.data, part.media_type, part.filename):
                    _digest_field(out, value)
            case ToolCallPart():
                out.append(b"tool_call")
                for value in (part.id, part.name, part.arguments, part.item_id):
                    _digest_field(out, value)
            case ToolResultPart():
                out.append(b"tool_result!" if part.is_error else b"tool_result")
                for value in (part.call_id, part.name, part.item_id):
                    _digest_field(out, value)
                _digest_parts(out, part.content)
            case ReasoningPart():
                out.append(b"reasoning")
                _digest_field(out, part.origin)
                _digest_field(out, part.data)
                if part.tokens is not None:  # not compared, but it changes the token count
                    out.append(b"R%d" % part.tokens)
            case SummaryPart(text=text):
                out.append(b"summary")
                _digest_field(out, text)
            case _:
                assert_never(part)


def message_digest(message: Message) -> str:
    """sha256 over the message's fields, id excluded: equal content, equal digest.

    Every field is tagged and length-prefixed (no JSON is built: hashing the text once is all the
    work, which matters for a counter that digests every message of a long session).
    """
    if _KIND_OF(message) != KIND_OTHER:
        return _one_text_digest(message)
    out: list[bytes] = [b"ctxconf.message/2", b"T" if message.empty_tool_calls else b"F"]
    for text in (message.role, message.name, message.wire_id):
        _digest_field(out, text)
    _digest_parts(out, message.parts)
    return hashlib.sha256(b"".join(out)).hexdigest()


def _field_bytes(value: str | None) -> bytes:
    out: list[bytes] = []
    _digest_field(out, value)
    return b"".join(out)


_ONE_TEXT_HEADS: Final = {
    role: b"ctxconf.message/2F" + _field_bytes(role)
    for role in ("system", "developer", "user", "assistant")
}
"""The digest's bytes up to the name, for a message of one text part (never an empty tool_calls)."""


def _one_text_digest(message: Message) -> str:
    """``message_digest`` of a message of one text part: the very same bytes, written directly
    (most messages of a session are of this kind, and a parsed session digests every one)."""
    name, wire_id = message.name, message.wire_id
    middle = (
        b"NN" if name is None and wire_id is None else _field_bytes(name) + _field_bytes(wire_id)
    )
    raw = message.parts[0].text.encode("utf-8", "surrogatepass")  # type: ignore[union-attr]
    h = hashlib.sha256(_ONE_TEXT_HEADS[message.role] + middle + b"P1:textS%d:" % len(raw))
    h.update(raw)
    return h.hexdigest()
