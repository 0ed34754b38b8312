"""What the two OpenAI shapes share: data URLs, attachments, tool results, function tools,
top-level params.

Function tools become :class:`ToolSpec` (name, description, canonical JSON ``parameters``). The
fields a ``ToolSpec`` has no slot for (``strict`` above all) are not dropped: they travel in
``Transcript.params`` under :data:`TOOL_EXTRAS_PARAM` as ``{tool name: {field: value}}`` and are
put back on render, for the tools that are still offered.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from typing import Any, Final

from reference_impl.errors import ParseError, TranscriptError, UnsupportedPartError
from reference_impl.shapes._mapping import text_of
from reference_impl.shapes._wire import Wire
from reference_impl.shapes.base import ForcedTools, ShapeCapabilities
from reference_impl.transcript import (
    FilePart,
    ImagePart,
    Message,
    ToolResultPart,
    ToolSpec,
    Transcript,
    canonical_json,
)
from reference_impl.wording import with_article

__all__ = [
    "IMAGE_DETAILS",
    "OPENAI_CAPABILITIES",
    "TOOL_EXTRAS_PARAM",
    "build_message",
    "build_transcript",
    "data_url",
    "file_from_data",
    "image_detail",
    "image_from_url",
    "parse_data_url",
    "parse_head",
    "parse_params",
    "parse_tool",
    "render_params",
    "render_tool",
    "text_of",
    "tool_results",
    "unsupported",
]


def openai_forced_tools(
    settings: Mapping[str, Any],
    *,
    allowed: Callable[[Mapping[str, Any]], object],
    name_of: Callable[[object], str],
) -> ForcedTools | None:
    """What an OpenAI ``tool_choice`` obliges the model to call (both shapes'
    ``GenerationOptions.forced_tools``): ``"required"`` any tool; an object names one
    (``name_of``), but ``allowed_tools``, which obliges a call of one of its list only in mode
    ``required`` (``allowed``: where the shape keeps that mode and list); None for ``auto``,
    ``none`` or no choice."""
    choice = settings.get("tool_choice")
    if choice == "required":
        return "any"
    if not isinstance(choice, Mapping) or choice.get("type") in (None, "auto", "none"):
        return None
    if choice.get("type") != "allowed_tools":
        return frozenset({name_of(choice)})
    holder = allowed(choice)
    if not isinstance(holder, Mapping) or holder.get("mode") != "required":
        return None
    listed = holder.get("tools")
    return frozenset(map(name_of, listed if isinstance(listed, list) else [holder]))


OPENAI_DEFAULTS: Final[Mapping[str, Any]] = {
    "top_p": 1,
    "frequency_penalty": 0,
    "presence_penalty": 0,
    "parallel_tool_calls": True,
    "tool_choice": "auto",
}
"""Settings both OpenAI shapes document at these values when left out."""

BOOKKEEPING: Final = (
    *("prompt_cache_key", "prompt_cache_retention", "store", "metadata", "user"),
    *("safety_identifier", "service_tier"),
)
"""The keys both OpenAI shapes take about caching, storage, billing and abuse tracing
(``GenerationOptions.bookkeeping``)."""

OPENAI_CAPABILITIES: Final = ShapeCapabilities(
    system_roles=frozenset({"system", "developer"}),
    system_in_messages=True,
    raw_arguments=True,
    tool_result_errors=False,
)
"""What Chat Completions and Responses share: system text as ``system`` or ``developer``
messages in the list, tool-call arguments as JSON text, no error flag on a tool result."""

TOOL_EXTRAS_PARAM: Final = "openai.tool_extras"
"""Reserved ``Transcript.params`` key: per-tool wire fields beyond name/description/parameters."""

IMAGE_DETAILS: Final = ("auto", "low", "high")
_FUNCTION_FIELDS: Final = frozenset({"name", "description", "parameters"})


# ------------------------------------------------------------------------------- data URLs


def parse_data_url(url: str) -> tuple[str | None, str] | None:
    """``data:<media type>;base64,<data>`` -> (media type or None, data); None for other URLs."""
    if not url.startswith("data:"):
        return None
    head, sep, data = url[len("data:") :].partition(",")
    if not sep or not head.endswith(";base64"):
        return None
    media_type = head[: -len(";base64")]
    return (media_type or None, data)


def data_url(media_type: str | None, data: str) -> str:
    """The inverse of :func:`parse_data_url` (an unknown media type is left empty)."""
    return f"data:{media_type or ''};base64,{data}"


# ----------------------------------------------------------------------------------- parts


def image_from_url(url: str, detail: Any) -> ImagePart:
    """An image given by URL: inline (base64) for a data URL, else by reference."""
    inline = parse_data_url(url)
    if inline is not None:
        return ImagePart(source="base64", data=inline[1], media_type=inline[0], detail=detail)
    return ImagePart(source="url", data=url, detail=detail)


def file_from_data(raw: str, filename: str | None) -> FilePart:
    """A ``file_data`` value: a data URL, or bare base64 whose media type is unknown."""
    inline = parse_data_url(raw)
    media_type, data = inline if inline is not None else (None, raw)
    return FilePart(source="base64", data=data, media_type=media_type, filename=filename)


def image_detail(w: Wire) -> Any:
    """An image ``detail`` (``auto``/``low``/``high``) or None when absent."""
    return None if w.is_null else w.choice(IMAGE_DETAILS, "image detail")


def unsupported(shape: str, index: int, part_index: int | None, what: str) -> UnsupportedPartError:
    """The error for something of neutral message ``index`` (part ``part_index``) a shape cannot carry."""
    if part_index is None:
        return UnsupportedPartError(
            f"{shape} cannot carry {what} (message {index})", where=f"messages[{index}]"
        )
    return UnsupportedPartError(
        f"{shape} cannot carry {what} (message {index}, part {part_index})",
        where=f"messages[{index}].parts[{part_index}]",
    )


def tool_results(shape: str, message: Message, index: int) -> Iterator[tuple[int, ToolResultPart]]:
    """``(part index, result)`` of a tool message; refuses an empty one, a part that is not a
    result, and an ``is_error`` flag (neither OpenAI wire has one: put it in the text)."""
    if not message.parts:
        raise unsupported(shape, index, None, "a tool message without results")
    for j, part in enumerate(message.parts):
        if not isinstance(part, ToolResultPart):
            raise unsupported(
                shape, index, j, f"{with_article(repr(part.kind))} part in a tool message"
            )
        if part.is_error:
            raise unsupported(
                shape, index, j, "an is_error flag on a tool result (put it in the text)"
            )
        yield j, part


# ----------------------------------------------------------------------------- messages


def build_message(w: Wire, **fields: Any) -> Message:
    """A ``Message``, with a model-level refusal turned into a ParseError at the wire path."""
    try:
        return Message(**fields)
    except TranscriptError as exc:
        raise ParseError(exc.message, where=w.where) from None


def build_transcript(
    w: Wire,
    messages: Iterable[Message],
    tools: tuple[ToolSpec, ...],
    model: str | None,
    params: tuple[tuple[str, str], ...],
) -> Transcript:
    """A ``Transcript``, with a model-level refusal turned into a ParseError at the wire path."""
    try:
        return Transcript(messages=tuple(messages), tools=tools, model=model, params=params)
    except TranscriptError as exc:
        raise ParseError(exc.message, where=w.where) from None


# ---------------------------------------------------------------------------------- tools


def parse_tool(fn: Wire, extras: dict[str, dict[str, Any]], names: set[str]) -> ToolSpec:
    """One function definition (``name``, ``description``, ``parameters``, extra fields)."""
    name = fn.get("name").str_()
    if name in names:
        raise fn.get("name").fail(f"duplicate tool name {name!r}")
    names.add(name)
    schema = fn.get("parameters")
    if not schema.is_null:
        schema.obj()
    parameters = '{"type":"object"}' if schema.is_null else schema.canonical()
    kept = {k: v for k, v in fn.obj().items() if k not in _FUNCTION_FIELDS}
    for key in kept:
        fn.get(key).canonical()  # extras must be JSON data; they travel as canonical JSON
    if kept:
        extras[name] = kept
    return ToolSpec(
        name=name, description=fn.get("description").opt_str() or "", parameters=parameters
    )


def parse_head(
    body: Mapping[str, Any], function_of: Callable[[Wire], Wire]
) -> tuple[Wire, str | None, dict[str, dict[str, Any]], tuple[ToolSpec, ...]]:
    """What both OpenAI request bodies open with: the root object, its ``model``, the fields of
    its tools that a ``ToolSpec`` has no slot for (by tool name) and the ``tools`` array (none
    when null), each entry's function definition as the shape's ``function_of`` finds it inside
    the entry's envelope (checking the envelope)."""
    root = Wire.root(body)
    root.obj()
    model = root.get("model").opt_str()
    extras: dict[str, dict[str, Any]] = {}
    tools = root.get("tools")
    if tools.is_null:
        return root, model, extras, ()
    names: set[str] = set()
    return (
        root,
        model,
        extras,
        tuple(parse_tool(function_of(t), extras, names) for t in tools.items()),
    )


def render_tool(tool: ToolSpec, extras: dict[str, Any]) -> dict[str, Any]:
    """The function fields of one tool (the caller adds the shape's envelope)."""
    out: dict[str, Any] = {"name": tool.name}
    if tool.description:
        out["description"] = tool.description
    out["parameters"] = json.loads(tool.parameters)
    out.update(extras.get(tool.name, {}))
    return out


# --------------------------------------------------------------------------------- params


def parse_params(
    root: Wire, structural: Collection[str], extras: dict[str, dict[str, Any]]
) -> tuple[tuple[str, str], ...]:
    """Every top-level key that is not structural, as canonical JSON, plus the tool extras."""
    params = {k: root.get(k).canonical() for k in root.key_names() if k not in structural}
    if TOOL_EXTRAS_PARAM in params:
        raise root.get(TOOL_EXTRAS_PARAM).fail(
            f"{TOOL_EXTRAS_PARAM!r} is reserved for the tool fields of the OpenAI shapes and cannot appear in a request body"
        )
    if extras:
        params[TOOL_EXTRAS_PARAM] = canonical_json(extras)
    return tuple(sorted(params.items()))


def render_params(
    transcript: Transcript, shape: str, structural: Collection[str]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """(top-level keys to emit, tool extras). A param that would overwrite structure is refused."""
    body: dict[str, Any] = {}
    extras: dict[str, Any] = {}
    for key, text in transcript.params:
        value = json.loads(text)
        if key == TOOL_EXTRAS_PARAM:
            if not isinstance(value, dict):
                raise UnsupportedPartError(
                    f"{TOOL_EXTRAS_PARAM} must map tool names to objects", where=f"params.{key}"
                )
            extras = value
        elif key in structural:
            raise UnsupportedPartError(
                f"param {key!r} would overwrite the {shape} request structure",
                where=f"params.{key}",
            )
        else:
            body[key] = value
    return body, extras
