"""``bedrock-converse``: bodies of ``POST /model/{modelId}/converse`` as sent over HTTP.

Index paths in errors use Bedrock's ``messages.2.content.0.toolResult``. Every content block is an
object with exactly one member (``{"text": ...}``, ``{"toolUse": {...}}``...).

Mapping to the neutral transcript:

* ``system`` (a list of ``{"text"}``/``{"cachePoint"}``/``{"guardContent"}`` blocks) is one
  leading ``system`` message; on render, leading ``system``/``developer`` messages become
  ``system``. Converse has no system role inside ``messages``: a later system message raises
  ``UnsupportedPartError``.
* A ``user`` message holding ``toolResult`` blocks is a neutral ``tool`` message (wire order kept,
  so text before results and results split over two messages stay visible to ``rings.validate``,
  B2/B6). ``toolUse.input`` becomes ``arguments = canonical_json(input)``.
* ``toolResult.content`` items: ``{"text"}`` is text; ``{"json": value}`` is the canonical JSON text
  of the value, and on render a text that is the canonical JSON of an object or array goes back
  as ``{"json": ...}``. ``status: "error"`` is ``is_error`` (``"success"`` and absent are not).
* ``reasoningContent`` blocks (``reasoningText`` with ``signature``, or ``redactedContent``) are
  ``ReasoningPart(origin="bedrock-converse")`` holding the canonical JSON of the whole block.
* Images and documents: ``source.bytes`` (base64 in JSON) is inline data, ``source.s3Location``
  an ``s3://`` URL; ``format`` maps to and from the media type; a document's ``name`` is the file
  name (required on render). Blocks and fields without a neutral part (``cachePoint``,
  ``guardContent``, ``video``, citations, document ``context``, text/content document sources,
  ``systemTool`` entries in ``toolConfig.tools``) are kept in ``params["bedrock-converse.extras"]``.
* Other top-level keys (``inferenceConfig``, ``additionalModelRequestFields``, ``guardrailConfig``
  ...) are params, and so is ``toolConfig`` without its ``tools`` (``toolChoice``). The model id is
  part of the URL: ``Transcript.model`` is neither read nor written (a boto3-style ``modelId`` key
  stays a param).
* Not carried, by design: ``ImagePart.detail``, provider item ids, ``ToolResultPart.name`` and the
  ``empty_tool_calls`` flag. A message ``name`` or another provider's reasoning artifact raises.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from functools import partial
from typing import Any, Final, Literal

from typing_extensions import assert_never

from reference_impl.documents import loads_json
from reference_impl.shapes._extras import (
    Extras,
    MessageExtras,
    body_params,
    canonical_of,
    extra_members,
    map_messages,
    params_without,
)
from reference_impl.shapes._mapping import (
    call_arguments,
    require_assistant,
    split_system,
    text_of,
    turn_message,
    unique_tool_name,
    unsupported_part,
    with_summaries,
)
from reference_impl.shapes._wire import Wire
from reference_impl.shapes.base import (
    ForcedTools,
    GenerationOptions,
    ResponseMeta,
    ShapeAdapter,
    ShapeCapabilities,
    choice_name,
)
from reference_impl.transcript import (
    FilePart,
    ImagePart,
    Message,
    Part,
    ReasoningPart,
    Role,
    SummaryPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    ToolSpec,
    Transcript,
    canonical_json,
)
from reference_impl.wording import with_article

__all__ = ["ADAPTER", "CAPABILITIES", "parse_request", "parse_response", "render_request"]

SHAPE: Final = "bedrock-converse"
_BODY_KEYS: Final = frozenset({"messages", "system", "toolConfig"})
_RAW_BLOCKS: Final = ("cachePoint", "guardContent", "video", "citationsContent", "searchResult")
"""Content blocks without a neutral part: kept whole in the message's extras."""
_BLOCK_KEYS: Final = (
    "text",
    "image",
    "document",
    "toolUse",
    "toolResult",
    "reasoningContent",
    *_RAW_BLOCKS,
)
_RAW_KEYS: Final = frozenset(_RAW_BLOCKS)
_IMAGE_FORMATS: Final[dict[str, str]] = {
    "png": "image/png",
    "jpeg": "image/jpeg",
    "gif": "image/gif",
    "webp": "image/webp",
}
_DOCUMENT_FORMATS: Final[dict[str, str]] = {
    "pdf": "application/pdf",
    "csv": "text/csv",
    "doc": "application/msword",
    "docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    "xls": "application/vnd.ms-excel",
    "xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    "html": "text/html",
    "txt": "text/plain",
    "md": "text/markdown",
}

CAPABILITIES: Final = ShapeCapabilities(
    reasoning_origins=frozenset({"bedrock-converse"}),
    reasoning_opens_message=True,  # A13 (relayed, B10)
    merge_policy="strict",  # B3
)


class _KeepRaw(Exception):  # noqa: N818 - control flow inside this module, never escapes
    """A block mapper found no neutral form for the block; the caller keeps it raw."""


# ----------------------------------------------------------------------------------- parsing


def _block_key(block: Wire, allowed: tuple[str, ...]) -> str:
    """The one member of a content block (a Converse ContentBlock is a tagged union)."""
    names = block.key_names()
    if len(names) != 1:
        raise block.fail(
            f"a content block holds exactly one member, found {len(names)} "
            f"({', '.join(names) or 'none'}); expected one of {', '.join(allowed)}"
        )
    if names[0] not in allowed:
        raise block.get(names[0]).fail(
            f"unknown content block {names[0]!r}; expected one of {', '.join(allowed)}"
        )
    return names[0]


def _map_media(key: str, media: Wire, extras: MessageExtras, at: tuple[int, ...]) -> Part:
    """An ``image``/``document`` block; raises _KeepRaw for text/content document sources."""
    formats = _IMAGE_FORMATS if key == "image" else _DOCUMENT_FORMATS
    fmt = media.get("format").choice(tuple(formats), f"{key} format")
    source = media.get("source")
    kinds = (
        ("bytes", "s3Location") if key == "image" else ("bytes", "s3Location", "text", "content")
    )
    kind = _block_key(source, kinds)
    if kind in {"text", "content"}:
        raise _KeepRaw
    location: Literal["base64", "url"] = "base64"
    if kind == "bytes":
        data = source.get("bytes").str_()
    else:
        s3 = source.get("s3Location")
        location, data = "url", s3.get("uri").str_()
        owner = extra_members(s3, frozenset({"uri"}))
        if owner:
            extras.add_fields(at, {key: {"source": {"s3Location": owner}}})
    known = {"format", "source"} if key == "image" else {"format", "source", "name"}
    unknown = extra_members(media, frozenset(known))
    if unknown:
        extras.add_fields(at, {key: unknown})
    if key == "image":
        return ImagePart(source=location, data=data, media_type=formats[fmt])
    return FilePart(
        source=location, data=data, media_type=formats[fmt], filename=media.get("name").opt_str()
    )


_RESULT_ITEM_KEYS: Final = ("text", "json", "image", "document", "video", "searchResult")


def _map_result(result: Wire, extras: MessageExtras, at: int) -> ToolResultPart:
    content: list[TextPart | ImagePart | FilePart] = []
    for j, item in enumerate(result.get("content").items()):
        key = _block_key(item, _RESULT_ITEM_KEYS)
        if key == "text":
            content.append(TextPart(item.get("text").str_()))
        elif key == "json":
            content.append(TextPart(canonical_of(item.get("json"))))
        elif key in {"image", "document"}:
            try:
                part = _map_media(key, item.get(key), extras, (at, j))
            except _KeepRaw:
                extras.add_raw((at, j), json.loads(canonical_of(item)))
                continue
            assert isinstance(part, ImagePart | FilePart)
            content.append(part)
        else:
            extras.add_raw((at, j), json.loads(canonical_of(item)))
    status = result.get("status")
    is_error = False
    if not status.is_null:
        is_error = status.choice(("success", "error"), "toolResult status") == "error"
    unknown = extra_members(result, frozenset({"toolUseId", "content", "status"}))
    if unknown:
        extras.add_fields((at,), {"toolResult": unknown})
    return ToolResultPart(
        call_id=result.get("toolUseId").str_(), content=tuple(content), is_error=is_error
    )


def _map_block(block: Wire, role: str, extras: MessageExtras, at: int) -> Part | None:
    key = _block_key(block, _BLOCK_KEYS)
    value = block.get(key)
    if key == "text":
        return TextPart(value.str_())
    if key in _RAW_KEYS:
        extras.add_raw((at,), json.loads(canonical_of(block)))
        return None
    if key in {"image", "document"}:
        try:
            return _map_media(key, value, extras, (at,))
        except _KeepRaw:
            extras.add_raw((at,), json.loads(canonical_of(block)))
            return None
    if key in {"toolUse", "reasoningContent"} and role != "assistant":
        raise value.fail(f"{with_article(key)} block belongs in an assistant message, not {role}")
    if key == "toolUse":
        unknown = extra_members(value, frozenset({"toolUseId", "name", "input"}))
        if unknown:
            extras.add_fields((at,), {"toolUse": unknown})
        tool_input = value.get("input")
        return ToolCallPart(
            id=value.get("toolUseId").str_(),
            name=value.get("name").str_(),
            arguments=canonical_of(tool_input) if not tool_input.is_null else "{}",
        )
    if key == "reasoningContent":
        value.obj()
        return ReasoningPart(origin=SHAPE, data=canonical_of(block))
    if role != "user":
        raise value.fail(f"a toolResult block belongs in a user message, not {role}")
    return _map_result(value, extras, at)


def _map_blocks(content: Wire, role: str) -> tuple[list[Part], MessageExtras]:
    extras = MessageExtras()
    parts: list[Part] = []
    for j, block in enumerate(content.items()):
        part = _map_block(block, role, extras, j)
        if part is not None:
            parts.append(part)
    return parts, extras


_MESSAGE_ROLES: Final = ("user", "assistant")


def _plain_message(value: Any) -> tuple[Role, str] | None:
    """``(role, text)`` of a message that is a role and one text block with nothing else
    (``map_messages``); None for every other message."""
    if type(value) is not dict or len(value) != 2:
        return None
    role, content = value.get("role"), value.get("content")
    if type(role) is not str or role not in _MESSAGE_ROLES:
        return None
    if type(content) is not list or len(content) != 1:
        return None
    block = content[0]
    if type(block) is not dict or len(block) != 1 or type(text := block.get("text")) is not str:
        return None
    return role, text  # type: ignore[return-value]


def _map_message(wire: Wire) -> tuple[Message, MessageExtras]:
    wire.obj()
    role = wire.get("role").choice(_MESSAGE_ROLES, "role")
    parts, extras = _map_blocks(wire.get("content"), role)
    return turn_message("assistant" if role == "assistant" else "user", parts), extras


def _map_system(system: Wire) -> tuple[Message, MessageExtras]:
    extras = MessageExtras()
    parts: list[Part] = []
    for j, block in enumerate(system.items()):
        key = _block_key(block, ("text", "guardContent", "cachePoint"))
        if key == "text":
            parts.append(TextPart(block.get("text").str_()))
        else:
            extras.add_raw((j,), json.loads(canonical_of(block)))
    return Message(role="system", parts=with_summaries(parts, "system")), extras


def _map_tool_config(config: Wire, extras: Extras) -> tuple[tuple[ToolSpec, ...], Any]:
    """``(tools, the rest of toolConfig or None)``."""
    config.obj()
    specs: list[ToolSpec] = []
    seen: set[str] = set()
    for k, tool in enumerate(config.get("tools").items() if config.has("tools") else []):
        key = _block_key(tool, ("toolSpec", "cachePoint", "systemTool"))
        if key != "toolSpec":
            extras.raw_tools.append((k, json.loads(canonical_of(tool))))
            continue
        spec = tool.get("toolSpec")
        name = unique_tool_name(spec.get("name"), seen)
        schema = spec.get("inputSchema").get("json")
        schema.obj()
        specs.append(
            ToolSpec(
                name=name,
                description=spec.get("description").opt_str() or "",
                parameters=canonical_of(schema),
            )
        )
        extras.keep_tool_fields(name, spec, frozenset({"name", "description", "inputSchema"}))
    rest = {k: v for k, v in config.obj().items() if k != "tools"}
    return tuple(specs), (json.loads(canonical_of(Wire(rest, config.path))) if rest else None)


def parse_request(body: Mapping[str, Any]) -> Transcript:
    """A Converse request body as a transcript; ParseError with ``messages.2.content.0`` paths."""
    root = Wire.root(body, dotted=True)
    root.obj()
    extras = Extras(SHAPE)
    system = root.get("system")
    messages: list[Message] = []
    per_message: list[MessageExtras] = []
    if not system.is_null and system.items():
        system_message, system_extras = _map_system(system)
        messages.append(system_message)
        per_message.append(system_extras)
    map_messages(root.get("messages"), messages, per_message, _plain_message, _map_message)
    params = params_without(root, _BODY_KEYS)
    tools: tuple[ToolSpec, ...] = ()
    if not root.get("toolConfig").is_null:
        tools, rest = _map_tool_config(root.get("toolConfig"), extras)
        if rest is not None:
            params = tuple(sorted((*params, ("toolConfig", canonical_json(rest)))))
    return extras.transcript(messages, per_message, tools, params)


def parse_response(body: Mapping[str, Any]) -> Message:
    """The assistant message of a Converse response (``output.message``)."""
    root = Wire.root(body, dotted=True)
    root.obj()
    wire = root.get("output").get("message")
    wire.obj()
    message, extras = _map_message(wire)
    if message.role != "assistant":
        raise wire.get("role").fail("a Converse response holds an assistant message")
    extras.refuse_in_response(
        "response block",
        "cachePoint, citations, guardContent...",
        lambda position: f"output.message.content.{position[0]}",
    )
    return message


# --------------------------------------------------------------------------------- rendering


_unsupported: Final = partial(unsupported_part, SHAPE)


def _format_of(part: ImagePart | FilePart, i: int, j: int) -> str:
    formats = _IMAGE_FORMATS if isinstance(part, ImagePart) else _DOCUMENT_FORMATS
    for fmt, media_type in formats.items():
        if media_type == part.media_type:
            return fmt
    raise _unsupported(
        f"media type {part.media_type!r} is not a Converse {part.kind} format "
        f"({', '.join(formats)})",
        i,
        j,
    )


def _render_media(part: ImagePart | FilePart, i: int, j: int) -> dict[str, Any]:
    if part.source == "base64":
        source: dict[str, Any] = {"bytes": part.data}
    elif part.source == "url" and part.data.startswith("s3://"):
        source = {"s3Location": {"uri": part.data}}
    else:
        raise _unsupported(
            f"Converse takes a {part.kind} as bytes or an s3:// location, not a "
            f"{part.source} ({part.data[:40]!r})",
            i,
            j,
        )
    media: dict[str, Any] = {"format": _format_of(part, i, j)}
    if isinstance(part, ImagePart):
        media["source"] = source
        return {"image": media}
    if part.filename is None:
        raise _unsupported("a Converse document needs a name (FilePart.filename)", i, j)
    media["name"] = part.filename
    media["source"] = source
    return {"document": media}


def _render_result_item(item: TextPart | ImagePart | FilePart, i: int, j: int) -> dict[str, Any]:
    if not isinstance(item, TextPart):
        return _render_media(item, i, j)
    try:
        value = loads_json(item.text)
    except json.JSONDecodeError:
        return {"text": item.text}
    if isinstance(value, dict | list) and canonical_json(value) == item.text:
        return {"json": value}
    return {"text": item.text}


def _render_part(part: Part, i: int, j: int) -> dict[str, Any]:
    match part:
        case TextPart() | SummaryPart():
            return {"text": text_of(part)}
        case ImagePart() | FilePart():
            return _render_media(part, i, j)
        case ToolCallPart():
            value = call_arguments(part, SHAPE, i, j, field="toolUse.input", object_only=False)
            return {"toolUse": {"toolUseId": part.id, "name": part.name, "input": value}}
        case ToolResultPart():
            result: dict[str, Any] = {
                "toolUseId": part.call_id,
                "content": [_render_result_item(c, i, j) for c in part.content],
            }
            if part.is_error:
                result["status"] = "error"
            return {"toolResult": result}
        case ReasoningPart():
            if part.origin != SHAPE:
                raise _unsupported(
                    f"{with_article(part.origin)} reasoning artifact cannot be sent to Converse; signatures "
                    "only verify with the provider that issued them",
                    i,
                    j,
                )
            return dict(part.value())
        case _:
            assert_never(part)


def _nested_content(block: dict[str, Any]) -> list[Any] | None:
    result = block.get("toolResult")
    if not isinstance(result, dict):
        return None
    content = result.setdefault("content", [])
    return content if isinstance(content, list) else None


def _render_blocks(message: Message, i: int, extras: MessageExtras) -> list[Any]:
    if message.name is not None:
        raise _unsupported(f"Converse messages carry no participant name ({message.name!r})", i)
    blocks = [_render_part(p, i, j) for j, p in enumerate(message.parts)]
    return Extras.apply(blocks, extras, _nested_content)


def _render_tool_config(transcript: Transcript, extras: Extras) -> dict[str, Any] | None:
    tools: list[Any] = []
    for tool in transcript.tools:
        spec: dict[str, Any] = {"name": tool.name}
        if tool.description:
            spec["description"] = tool.description
        spec["inputSchema"] = {"json": tool.parameters_value()}
        spec.update(extras.tool_fields.get(tool.name, {}))
        tools.append({"toolSpec": spec})
    extras.insert_raw_tools(tools)
    rest = transcript.param("toolConfig")
    if not tools and rest is None:
        return None
    config: dict[str, Any] = dict(rest) if isinstance(rest, dict) else {}
    if tools:
        config["tools"] = tools
    return config


def render_request(transcript: Transcript) -> dict[str, Any]:
    """A Converse body; leading system/developer messages become ``system`` blocks."""
    extras = Extras.from_transcript(SHAPE, transcript)
    per_message = list(extras.for_messages(transcript.messages))
    body: dict[str, Any] = {}
    system, turns = split_system(
        transcript.messages,
        lambda m, i: _render_blocks(m, i, per_message[i]),
        SHAPE,
        "Converse has no system role inside messages; move the text to the leading "
        "system messages or into a user turn",
    )
    body["messages"] = [
        {"role": "assistant" if m.role == "assistant" else "user", "content": blocks}
        for m, blocks in turns
    ]
    if system:
        body["system"] = system
    config = _render_tool_config(transcript, extras)
    if config is not None:
        body["toolConfig"] = config
    body.update(body_params(transcript, _BODY_KEYS))
    return body


def render_response(message: Message, meta: ResponseMeta) -> dict[str, Any]:
    """A Converse response: ``output.message``, ``stopReason``, ``usage``, ``metrics``."""
    require_assistant(message, "a response holds an assistant message")
    content = _render_blocks(message, 0, MessageExtras())
    return {
        "output": {"message": {"role": "assistant", "content": content}},
        "stopReason": meta.stop_reason or ("tool_use" if message.tool_calls else "end_turn"),
        "usage": meta.usage("inputTokens", "outputTokens", "totalTokens"),
        "metrics": {"latencyMs": 0},
    }


def forced_tools(settings: Mapping[str, Any]) -> ForcedTools | None:
    """What ``toolConfig.toolChoice`` obliges the model to call: ``{"any": {}}`` any tool,
    ``{"tool": {"name": ...}}`` that one; None for ``{"auto": {}}`` or no choice."""
    config = settings.get("toolConfig")
    choice = config.get("toolChoice") if isinstance(config, Mapping) else None
    if not isinstance(choice, Mapping) or not choice or "auto" in choice:
        return None
    if "any" in choice:
        return "any"
    tool = choice.get("tool")
    name = tool.get("name") if isinstance(tool, Mapping) else None
    return frozenset({choice_name(name if isinstance(name, str) else choice)})


ADAPTER: Final = ShapeAdapter(
    name=SHAPE,
    label="bedrock",
    messages_key="messages",
    model_in_url=True,
    default_model="us.anthropic.claude-haiku-4-5-20251001-v1:0",
    capabilities=CAPABILITIES,
    options=GenerationOptions(
        "maxTokens",
        "temperature",
        "topP",
        "stopSequences",
        "inferenceConfig",
        output_schemas=(("outputConfig", "textFormat"),),
        bookkeeping=("requestMetadata",),
        defaults={
            "performanceConfig": {"latency": "standard"},
            "toolConfig": {"toolChoice": {"auto": {}}},
        },
        tool_settings=("toolConfig",),  # its toolChoice (the tools are the transcript's)
        forced_tools=forced_tools,
    ),
    parse_request=parse_request,
    render_request=render_request,
    parse_response=parse_response,
    render_response=render_response,
)
