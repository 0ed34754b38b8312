"""The session file format: a transcript as versioned JSON data and back.

``transcript_to_dict``/``transcript_to_json`` write the form ``ctxconf`` reads
(``{"format": "ctxconf.transcript", "version": 1, "messages": [...]}``);
``transcript_from_dict``/``transcript_from_json`` read it with a path in every error
(``SessionFileError``). The model itself is :mod:`reference_impl.transcript.model`.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

from typing_extensions import assert_never

from reference_impl.documents import (
    DocumentLimitError,
    DuplicateKeyError,
    json_problem,
    load_json_strict,
    loads_json,
)
from reference_impl.errors import CtxconfError, SessionFileError, TranscriptError
from reference_impl.transcript.model import (
    REASONING_ORIGINS,
    ROLES,
    FilePart,
    ImagePart,
    Message,
    Part,
    ReasoningPart,
    SummaryPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    ToolSpec,
    Transcript,
    canonical_json,
    params_from_mapping,
)

__all__ = [
    "SCHEMA_NAME",
    "SCHEMA_VERSION",
    "JsonValueReader",
    "json_type_name",
    "message_to_dict",
    "transcript_from_dict",
    "transcript_from_json",
    "transcript_to_dict",
    "transcript_to_json",
]

SCHEMA_NAME: Final = "ctxconf.transcript"
SCHEMA_VERSION: Final = 1


def _given(value: object, *fields: str) -> dict[str, Any]:
    """The optional ``fields`` of ``value`` that are set (a file leaves out the others)."""
    found = ((name, getattr(value, name)) for name in fields)
    return {name: field for name, field in found if field is not None}


def _part_to_dict(part: Part) -> dict[str, Any]:
    match part:
        case TextPart(text=text):
            return {"kind": "text", "text": text}
        case ImagePart():
            return {
                "kind": "image",
                "source": part.source,
                "data": part.data,
                **_given(part, "media_type", "detail", "width", "height"),
            }
        case FilePart():
            return {
                "kind": "file",
                "source": part.source,
                "data": part.data,
                **_given(part, "media_type", "filename"),
            }
        case ToolCallPart():
            return {
                "kind": "tool_call",
                "id": part.id,
                "name": part.name,
                "arguments": part.arguments,
                **_given(part, "item_id"),
            }
        case ToolResultPart():
            return {
                "kind": "tool_result",
                "call_id": part.call_id,
                "content": [_part_to_dict(p) for p in part.content],
                **({"is_error": True} if part.is_error else {}),
                **_given(part, "name", "item_id"),
            }
        case ReasoningPart():
            return {
                "kind": "reasoning",
                "origin": part.origin,
                "data": part.data,
                **_given(part, "tokens"),
            }
        case SummaryPart(text=text):
            return {"kind": "summary", "text": text}
        case _:
            assert_never(part)


def message_to_dict(message: Message, *, with_id: bool = True) -> dict[str, Any]:
    return {
        "role": message.role,
        **({"id": message.id} if with_id and message.id else {}),
        **_given(message, "name", "wire_id"),
        **({"empty_tool_calls": True} if message.empty_tool_calls else {}),
        "parts": [_part_to_dict(p) for p in message.parts],
    }


def transcript_to_dict(transcript: Transcript) -> dict[str, Any]:
    """The transcript as the session file's JSON data (versioned)."""
    out: dict[str, Any] = {"format": SCHEMA_NAME, "version": SCHEMA_VERSION}
    if transcript.model is not None:
        out["model"] = transcript.model
    if transcript.tools:
        out["tools"] = [
            {
                "name": t.name,
                "description": t.description,
                "parameters": json.loads(t.parameters),
                **({"side_effect": True} if t.side_effect else {}),
            }
            for t in transcript.tools
        ]
    if transcript.params:
        out["params"] = {k: json.loads(v) for k, v in transcript.params}
    out["messages"] = [message_to_dict(m) for m in transcript.messages]
    return out


def transcript_to_json(transcript: Transcript, *, indent: int | None = 2) -> str:
    """The transcript as session file text."""
    return json.dumps(transcript_to_dict(transcript), indent=indent, ensure_ascii=False)


class JsonValueReader(ABC):
    """Reads one JSON value with its path, so that a wrong type is an error naming the path.

    What every path-aware reader shares; a subclass says which error carries the path
    (:meth:`fail`) and how it walks into containers. The session file reader here and the
    shapes' ``Wire`` (which also names a missing key and writes Anthropic's dotted indices)
    are the two.
    """

    __slots__ = ()
    value: Any
    path: str

    @abstractmethod
    def fail(self, what: str) -> CtxconfError:
        """The error for ``what`` at this value's path (the caller raises it)."""

    def came(self) -> str:
        """What was found instead of the expected value (``got an integer`` ...)."""
        return f"got {json_type_name(self.value)}"

    def obj(self) -> Mapping[str, Any]:
        """The value as an object, or the error."""
        value = self.value
        if type(value) is not dict and not isinstance(value, Mapping):  # a dict: no ABC check
            raise self.fail(f"expected an object, {self.came()}")
        return value

    def has(self, key: str) -> bool:
        """Whether the object has ``key`` (null counts as present)."""
        return key in self.obj()

    def str_(self) -> str:
        """The value as a string, or the error."""
        if not isinstance(self.value, str):
            raise self.fail(f"expected a string, {self.came()}")
        return self.value

    def opt_str(self) -> str | None:
        """A string, or None when the value is absent or null."""
        return None if self.value is None else self.str_()

    def bool_(self, default: bool = False) -> bool:
        """The value as a boolean; ``default`` when absent or null."""
        if self.value is None:
            return default
        if not isinstance(self.value, bool):
            raise self.fail(f"expected true or false, {self.came()}")
        return self.value


class _Reader(JsonValueReader):
    """Reads a session file's values; errors are ``SessionFileError``."""

    __slots__ = ("path", "value")

    def __init__(self, value: Any, path: str) -> None:
        self.value = value
        self.path = path

    def fail(self, what: str) -> SessionFileError:
        return SessionFileError(what, where=self.path or "$")

    def get(self, key: str) -> _Reader:
        return _Reader(self.obj().get(key), f"{self.path}.{key}" if self.path else key)

    def items(self) -> list[_Reader]:
        if not isinstance(self.value, list):
            raise self.fail(f"expected an array, {self.came()}")
        return [_Reader(v, f"{self.path}[{i}]") for i, v in enumerate(self.value)]

    def opt_int(self) -> int | None:
        if self.value is None:
            return None
        if isinstance(self.value, bool) or not isinstance(self.value, int):
            raise self.fail(f"expected an integer, {self.came()}")
        return self.value

    def only_keys(self, allowed: Iterable[str]) -> None:
        """Refuse keys this format does not define: a typo must not vanish silently."""
        known = set(allowed)
        unknown = sorted(k for k in self.obj() if k not in known)
        if unknown:
            raise self.fail(
                f"unknown key{'s' if len(unknown) > 1 else ''} {', '.join(map(repr, unknown))}; "
                f"expected some of {', '.join(sorted(known))}"
            )

    def choice(self, options: Sequence[str]) -> str:
        text = self.str_()
        if text not in options:
            raise self.fail(f"{text!r} is not one of {', '.join(options)}")
        return text


def json_type_name(value: object) -> str:
    """The JSON name of a value (``object``, ``array``, ``null``...) for error messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, Mapping):
        return "object"
    if isinstance(value, list | tuple):
        return "array"
    if isinstance(value, str):
        return "string"
    return type(value).__name__


def _attachment_from(r: _Reader) -> TextPart | ImagePart | FilePart:
    part = _part_from(r)
    if not isinstance(part, TextPart | ImagePart | FilePart):
        raise r.fail(f"a tool result may only hold text, image or file parts, not {part.kind!r}")
    return part


_PART_KEYS: Final[Mapping[str, tuple[str, ...]]] = {
    "text": ("text",),
    "summary": ("text",),
    "image": ("source", "data", "media_type", "detail", "width", "height"),
    "file": ("source", "data", "media_type", "filename"),
    "tool_call": ("id", "name", "arguments", "item_id"),
    "tool_result": ("call_id", "content", "is_error", "name", "item_id"),
    "reasoning": ("origin", "data", "tokens"),
}


def _part_from(r: _Reader) -> Part:
    kind = r.get("kind").choice(tuple(_PART_KEYS))
    r.only_keys(("kind", *_PART_KEYS[kind]))
    if kind == "text":
        return TextPart(r.get("text").str_())
    if kind == "summary":
        return SummaryPart(r.get("text").str_())
    if kind == "image":
        detail = r.get("detail")
        return ImagePart(
            source=r.get("source").choice(("url", "base64", "file_id")),  # type: ignore[arg-type]
            data=r.get("data").str_(),
            media_type=r.get("media_type").opt_str(),
            detail=None if detail.value is None else detail.choice(("auto", "low", "high")),  # type: ignore[arg-type]
            width=r.get("width").opt_int(),
            height=r.get("height").opt_int(),
        )
    if kind == "file":
        return FilePart(
            source=r.get("source").choice(("url", "base64", "file_id")),  # type: ignore[arg-type]
            data=r.get("data").str_(),
            media_type=r.get("media_type").opt_str(),
            filename=r.get("filename").opt_str(),
        )
    if kind == "tool_call":
        args = r.get("arguments")
        arguments = args.value if isinstance(args.value, str) else canonical_json(args.value)
        return ToolCallPart(
            id=r.get("id").str_(),
            name=r.get("name").str_(),
            arguments=arguments if args.value is not None else "{}",
            item_id=r.get("item_id").opt_str(),
        )
    if kind == "tool_result":
        return ToolResultPart(
            call_id=r.get("call_id").str_(),
            content=tuple(_attachment_from(c) for c in r.get("content").items()),
            is_error=r.get("is_error").bool_(),
            name=r.get("name").opt_str(),
            item_id=r.get("item_id").opt_str(),
        )
    data = r.get("data")
    text = data.value if isinstance(data.value, str) else canonical_json(data.value)
    try:
        loaded = loads_json(text)
    except json.JSONDecodeError:
        loaded = None
    if not isinstance(loaded, dict):
        raise data.fail("reasoning data must be a JSON object (or its JSON text)")
    tokens = r.get("tokens")
    count = tokens.opt_int()
    if count is not None and count < 0:
        raise tokens.fail(f"a reasoning token count cannot be negative, got {count}")
    return ReasoningPart(
        origin=r.get("origin").choice(REASONING_ORIGINS),  # type: ignore[arg-type]
        data=canonical_json(loaded),
        tokens=count,
    )


def _message_from(r: _Reader) -> Message:
    r.only_keys(("role", "parts", "name", "wire_id", "empty_tool_calls", "id"))
    parts = tuple(_part_from(p) for p in r.get("parts").items())
    try:
        return Message(
            role=r.get("role").choice(ROLES),  # type: ignore[arg-type]
            parts=parts,
            name=r.get("name").opt_str(),
            wire_id=r.get("wire_id").opt_str(),
            empty_tool_calls=r.get("empty_tool_calls").bool_(),
            id=r.get("id").opt_str() or "",
        )
    except SessionFileError:
        raise
    except TranscriptError as exc:
        where = f"{r.path}.{exc.where}" if exc.where else r.path
        raise SessionFileError(exc.message, where=where) from None


def transcript_from_dict(value: object) -> Transcript:
    """Read a transcript document (``format: ctxconf.transcript``, ``version: 1``)."""
    r = _Reader(value, "")
    # ``ledger`` and ``memory`` belong to the execution layer; commands read them from the same file.
    r.only_keys(("format", "version", "model", "tools", "params", "messages", "ledger", "memory"))
    if r.has("format") and r.get("format").value != SCHEMA_NAME:
        raise r.get("format").fail(f"expected {SCHEMA_NAME!r}")
    version = r.get("version").opt_int()
    if version is not None and version != SCHEMA_VERSION:
        raise r.get("version").fail(
            f"unsupported transcript version {version}; this release reads version {SCHEMA_VERSION}"
        )
    tools: list[ToolSpec] = []
    if r.has("tools"):
        for t in r.get("tools").items():
            t.only_keys(("name", "description", "parameters", "side_effect"))
            schema = t.get("parameters")
            tools.append(
                ToolSpec(
                    name=t.get("name").str_(),
                    description=t.get("description").opt_str() or "",
                    parameters=canonical_json(
                        schema.obj() if schema.value is not None else {"type": "object"}
                    ),
                    side_effect=t.get("side_effect").bool_(),
                )
            )
    params: tuple[tuple[str, str], ...] = ()
    if r.has("params"):
        params = params_from_mapping(r.get("params").obj())
    messages = tuple(_message_from(m) for m in r.get("messages").items())
    try:
        return Transcript(
            messages=messages, tools=tuple(tools), model=r.get("model").opt_str(), params=params
        )
    except SessionFileError:
        raise
    except TranscriptError as exc:
        raise SessionFileError(exc.message, where=exc.where) from None


def transcript_from_json(text: str | bytes, *, source: str = "<string>") -> Transcript:
    """A transcript from session file text (TranscriptError with the path on bad input).

    Read as every session file is (:func:`reference_impl.documents.load_json_strict`): a key
    given twice, nesting deeper than the parser can walk and text over the input limit are
    refused by name, as is a ``text`` that is not a string (a parsed ``dict`` goes to
    :func:`transcript_from_dict`)."""
    given: object = text
    if isinstance(given, bytes | bytearray):
        try:
            given = bytes(given).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise SessionFileError(f"not UTF-8 text (byte {exc.start})", where=source) from None
    if not isinstance(given, str):
        hint = "; pass a parsed object to transcript_from_dict" if isinstance(given, dict) else ""
        raise SessionFileError(
            f"expected session file text (str or bytes), got {type(given).__name__}{hint}",
            where=source,
        )
    try:
        value = load_json_strict(given)
    except json.JSONDecodeError as exc:
        raise SessionFileError(
            f"not valid JSON ({json_problem(exc)})", where=f"{source}:{exc.lineno}"
        ) from None
    except (DuplicateKeyError, DocumentLimitError) as exc:
        raise SessionFileError(str(exc), where=source) from None
    return transcript_from_dict(value)
