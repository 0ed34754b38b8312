"""``anthropic-messages``: bodies of ``POST /v1/messages`` (and ``/v1/messages/count_tokens``).

Mapping to the neutral transcript (index paths in errors use Anthropic's ``messages.3.content.0``):

* Top-level ``system`` (a string or text blocks) is one leading ``system`` message (one text part
  per block). On render, every *leading* ``system``/``developer`` message goes to top-level
  ``system`` (``developer`` becomes system text: Anthropic has no such role). A system message
  anywhere else is rendered as ``role: "system"`` inside ``messages``: Claude Opus 4.8+ accepts
  that (A10a); older models reject it (A10), which the validators report, not the renderer.
* A ``user`` message holding ``tool_result`` blocks is a neutral ``tool`` message, its parts in wire
  order: results first, then any trailing text/image (A3 allows text after results). Text *before*
  a result stays where it is so that ``rings.validate`` can report A3; two consecutive user
  messages with results stay two messages (the "results split" violation, A4).
* ``tool_use.input`` (an object) becomes ``arguments = canonical_json(input)``; render parses it
  back and refuses arguments that are not a JSON object.
* ``thinking`` / ``redacted_thinking`` blocks are ``ReasoningPart(origin="anthropic-messages")``
  holding the canonical JSON of the whole block, kept in place: values survive byte-exact (A15,
  A16).
* Fields and blocks without a neutral part (``cache_control``, ``citations``, a document
  ``context``, ``tool_reference``/``search_result``/server-tool blocks, server tools in ``tools``)
  are kept in ``Transcript.params["anthropic-messages.extras"]`` (see ``_extras``) and rendered
  back in place. Other top-level keys (``max_tokens``, ``thinking``, ``tool_choice``, ``stream`` ...)
  are kept as params and re-emitted.
* Not carried, by design: ``ImagePart.detail`` (an OpenAI rendering hint), provider item ids
  (``item_id``, ``wire_id``) and ``ToolResultPart.name`` (derivable from the call), and the
  ``empty_tool_calls`` flag (an OpenAI wire quirk, C4). A message ``name`` or a reasoning artifact
  of another provider raises ``UnsupportedPartError``.
* Message content is always rendered as a block list (equal in meaning to a string).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping, Sequence
from functools import partial
from typing import Any, Final

from typing_extensions import assert_never

from reference_impl.errors import ShapeError
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
)
from reference_impl.wording import with_article

__all__ = [
    "ADAPTER",
    "CAPABILITIES",
    "parse_request",
    "parse_response",
    "place_cache_breakpoints",
    "render_request",
]

SHAPE: Final = "anthropic-messages"
_BODY_KEYS: Final = frozenset({"model", "system", "messages", "tools"})

# Anthropic block types that have no neutral part: kept raw (extras), never dropped. Any other
# unknown ``type`` is a ParseError, since the API would reject it as well.
_RAW_BLOCK_TYPES: Final = frozenset(
    {
        "tool_reference",
        "search_result",
        "server_tool_use",
        "web_search_tool_result",
        "web_fetch_tool_result",
        "code_execution_tool_result",
        "bash_code_execution_tool_result",
        "text_editor_code_execution_tool_result",
        "tool_search_tool_result",
        "mcp_tool_use",
        "mcp_tool_result",
        "container_upload",
        "advisor_tool_result",
    }
)
_KNOWN_BLOCK_TYPES: Final = (
    "text",
    "image",
    "document",
    "tool_use",
    "tool_result",
    "thinking",
    "redacted_thinking",
    *sorted(_RAW_BLOCK_TYPES),
)

CAPABILITIES: Final = ShapeCapabilities(
    reasoning_origins=frozenset({"anthropic-messages"}),
    reasoning_opens_message=True,  # A13
)


# ----------------------------------------------------------------------------------- parsing


def _map_source(block: Wire, kinds: tuple[str, ...]) -> tuple[str, str, str | None] | None:
    """``(source, data, media_type)`` of an image/document ``source``; None for text sources."""
    source = block.get("source")
    kind = source.get("type").choice(kinds, "source type")
    if kind == "base64":
        return "base64", source.get("data").str_(), source.get("media_type").str_()
    if kind == "url":
        return "url", source.get("url").str_(), None
    if kind == "file":
        return "file_id", source.get("file_id").str_(), None
    return None  # "text" / "content" document sources: kept raw


def _map_attachment(block: Wire, kind: str, extras: MessageExtras, at: tuple[int, ...]) -> Part:
    """An ``image`` or ``document`` block, or a raw one when its source has no neutral form."""
    image = kind == "image"
    kinds = ("base64", "url", "file") if image else ("base64", "url", "file", "text", "content")
    mapped = _map_source(block, kinds)
    if mapped is None:  # a document with a plain-text or content-block source
        raise _KeepRaw
    if image:
        extras.add_fields(at, extra_members(block, frozenset({"type", "source"})))
        return ImagePart(source=mapped[0], data=mapped[1], media_type=mapped[2])  # type: ignore[arg-type]
    extras.add_fields(at, extra_members(block, frozenset({"type", "source", "title"})))
    source, data, media_type = mapped
    return FilePart(
        source=source,  # type: ignore[arg-type]
        data=data,
        media_type=media_type,
        filename=block.get("title").opt_str(),
    )


class _KeepRaw(Exception):  # noqa: N818 - control flow inside this module, never escapes
    """Raised by a block mapper when the block has no neutral part and is kept raw."""


def _map_result_content(
    result: Wire, extras: MessageExtras, at: int
) -> tuple[TextPart | ImagePart | FilePart, ...]:
    content = result.get("content")
    if content.is_null:
        return ()
    if isinstance(content.value, str):
        return (TextPart(content.value),) if content.value else ()
    out: list[TextPart | ImagePart | FilePart] = []
    for j, item in enumerate(content.items()):
        kind = item.get("type").choice(_KNOWN_BLOCK_TYPES, "content block type")
        if kind == "text":
            out.append(TextPart(item.get("text").str_()))
            extras.add_fields((at, j), extra_members(item, frozenset({"type", "text"})))
        elif kind in {"image", "document"}:
            try:
                part = _map_attachment(item, kind, extras, (at, j))
            except _KeepRaw:
                extras.add_raw((at, j), dict(item.obj()))
                continue
            assert isinstance(part, ImagePart | FilePart)
            out.append(part)
        elif kind in _RAW_BLOCK_TYPES:
            canonical_of(item)
            extras.add_raw((at, j), dict(item.obj()))
        else:
            raise item.get("type").fail(
                f"a tool_result may hold text, image, document or reference blocks, not {kind!r}"
            )
    return tuple(out)


def _map_block(block: Wire, role: str, extras: MessageExtras, at: int) -> Part | None:
    """One content block; None when it was kept raw in ``extras``."""
    kind = block.get("type").choice(_KNOWN_BLOCK_TYPES, "content block type")
    if kind == "text":
        extras.add_fields((at,), extra_members(block, frozenset({"type", "text"})))
        return TextPart(block.get("text").str_())
    if kind in {"image", "document"}:
        try:
            return _map_attachment(block, kind, extras, (at,))
        except _KeepRaw:
            extras.add_raw((at,), dict(block.obj()))
            return None
    if kind in _RAW_BLOCK_TYPES:
        canonical_of(block)
        extras.add_raw((at,), dict(block.obj()))
        return None
    if kind in {"tool_use", "thinking", "redacted_thinking"} and role != "assistant":
        raise block.get("type").fail(
            f"{with_article(kind)} block belongs in an assistant message, not {role}"
        )
    if kind == "tool_use":
        tool_input = block.get("input")
        if not isinstance(tool_input.value, Mapping):
            raise tool_input.fail("tool_use input must be an object")
        extras.add_fields((at,), extra_members(block, frozenset({"type", "id", "name", "input"})))
        return ToolCallPart(
            id=block.get("id").str_(),
            name=block.get("name").str_(),
            arguments=canonical_of(tool_input),
        )
    if kind in {"thinking", "redacted_thinking"}:
        # A15/A16: the block must come back unchanged, so the whole block is the artifact.
        block.get("thinking" if kind == "thinking" else "data").str_()
        block.get("signature").opt_str()
        return ReasoningPart(origin=SHAPE, data=canonical_of(block))
    if kind == "tool_result":
        if role != "user":
            raise block.get("type").fail(
                f"a tool_result block belongs in a user message, not {role}"
            )
        extras.add_fields(
            (at,),
            extra_members(block, frozenset({"type", "tool_use_id", "content", "is_error"})),
        )
        return ToolResultPart(
            call_id=block.get("tool_use_id").str_(),
            content=_map_result_content(block, extras, at),
            is_error=block.get("is_error").bool_(),
        )
    raise block.get("type").fail(f"unhandled block type {kind!r}")  # pragma: no cover


def _map_content(
    content: Wire, role: str, *, system_text_only: bool = False
) -> tuple[list[Part], MessageExtras]:
    extras = MessageExtras()
    if isinstance(content.value, str):
        return [TextPart(content.value)], extras
    parts: list[Part] = []
    for j, block in enumerate(content.items()):
        if system_text_only and block.get("type").value != "text":
            raise block.get("type").fail("system content may only hold text blocks")
        part = _map_block(block, role, extras, j)
        if part is not None:
            parts.append(part)
    return parts, extras


_MESSAGE_ROLES: Final = ("user", "assistant", "system")


def _plain_message(value: Any) -> tuple[Role, str] | None:
    """``(role, text)`` of a message that is a role and one text: a string, or one text block
    with nothing else (``map_messages``); None for every other message."""
    if type(value) is not dict or len(value) != 2:
        return None
    role, content = value.get("role"), value.get("content")
    if type(role) is not str or role not in _MESSAGE_ROLES:
        return None
    if type(content) is list and len(content) == 1:
        block = content[0]
        if type(block) is dict and len(block) == 2 and block.get("type") == "text":
            content = block.get("text")
    return (role, content) if type(content) is str else None  # type: ignore[return-value]


def _map_message(wire: Wire) -> tuple[Message, MessageExtras]:
    wire.obj()
    role = wire.get("role").choice(_MESSAGE_ROLES, "role")
    parts, extras = _map_content(wire.get("content"), role, system_text_only=role == "system")
    return turn_message(role, parts), extras  # type: ignore[arg-type]


def _map_tools(tools: Wire, extras: Extras) -> tuple[ToolSpec, ...]:
    out: list[ToolSpec] = []
    seen: set[str] = set()
    for k, tool in enumerate(tools.items()):
        kind = tool.get("type").opt_str()
        if kind is not None and kind != "custom":
            # Server tools (web_search_2025..., tool search, code execution): no neutral spec.
            extras.raw_tools.append((k, json.loads(canonical_of(tool))))
            continue
        name = unique_tool_name(tool.get("name"), seen)
        schema = tool.get("input_schema")
        schema.obj()
        description = tool.get("description").opt_str() or ""
        out.append(ToolSpec(name=name, description=description, parameters=canonical_of(schema)))
        extras.keep_tool_fields(name, tool, frozenset({"name", "description", "input_schema"}))
    return tuple(out)


def parse_request(body: Mapping[str, Any]) -> Transcript:
    """A Messages request body as a transcript; ParseError with ``messages.3.content.0`` paths."""
    root = Wire.root(body, dotted=True)
    root.obj()
    extras = Extras(SHAPE)
    messages: list[Message] = []
    per_message: list[MessageExtras] = []
    system = root.get("system")
    if not system.is_null and system.value not in ("", []):
        parts, system_extras = _map_content(system, "system", system_text_only=True)
        messages.append(Message(role="system", parts=with_summaries(parts, "system")))
        per_message.append(system_extras)
    map_messages(root.get("messages"), messages, per_message, _plain_message, _map_message)
    tools = _map_tools(root.get("tools"), extras) if not root.get("tools").is_null else ()
    model = root.get("model").opt_str()
    return extras.transcript(messages, per_message, tools, params_without(root, _BODY_KEYS), model)


def parse_response(body: Mapping[str, Any]) -> Message:
    """The assistant message of a Messages response (``type: "message"``)."""
    root = Wire.root(body, dotted=True)
    root.obj()
    if root.get("type").value not in (None, "message"):
        raise root.get("type").fail(
            f"expected a 'message' response, got {root.get('type').value!r}"
        )
    root.get("role").choice(("assistant",), "role")
    parts, extras = _map_content(root.get("content"), "assistant")
    extras.refuse_in_response(
        "response block",
        "server-tool blocks, citations, cache_control",
        lambda position: f"content.{'.content.'.join(str(p) for p in position)}",
    )
    return Message(role="assistant", parts=tuple(parts))


# --------------------------------------------------------------------------------- rendering


_unsupported: Final = partial(unsupported_part, SHAPE)


def _render_source(part: ImagePart | FilePart, i: int, j: int) -> dict[str, Any]:
    if part.source == "base64":
        if part.media_type is None:
            raise _unsupported(f"inline {part.kind} data needs a media_type", i, j)
        return {"type": "base64", "media_type": part.media_type, "data": part.data}
    if part.source == "url":
        return {"type": "url", "url": part.data}
    return {"type": "file", "file_id": part.data}


def _render_attachment(part: TextPart | ImagePart | FilePart, i: int, j: int) -> dict[str, Any]:
    if isinstance(part, TextPart):
        return {"type": "text", "text": part.text}
    if isinstance(part, ImagePart):
        return {"type": "image", "source": _render_source(part, i, j)}
    block: dict[str, Any] = {"type": "document", "source": _render_source(part, i, j)}
    if part.filename is not None:
        block["title"] = part.filename
    return block


def _render_part(part: Part, i: int, j: int) -> dict[str, Any]:
    match part:
        case TextPart() | ImagePart() | FilePart():
            return _render_attachment(part, i, j)
        case SummaryPart():
            return {"type": "text", "text": part.wire_text()}
        case ToolCallPart():
            arguments = call_arguments(part, SHAPE, i, j, field="tool_use.input", object_only=True)
            return {"type": "tool_use", "id": part.id, "name": part.name, "input": arguments}
        case ToolResultPart():
            block: dict[str, Any] = {"type": "tool_result", "tool_use_id": part.call_id}
            if part.content:
                block["content"] = [_render_attachment(c, i, j) for c in part.content]
            if part.is_error:
                block["is_error"] = True
            return block
        case ReasoningPart():
            if part.origin != SHAPE:
                raise _unsupported(
                    f"{with_article(part.origin)} reasoning artifact cannot be sent to Anthropic; signatures "
                    "only verify with the provider that issued them (A15)",
                    i,
                    j,
                )
            return part.value()
        case _:
            assert_never(part)


def _nested_content(block: dict[str, Any]) -> list[Any] | None:
    if block.get("type") != "tool_result":
        return None
    content = block.setdefault("content", [])
    return content if isinstance(content, list) else None


def _render_blocks(message: Message, i: int, extras: MessageExtras) -> list[Any]:
    if message.name is not None:
        raise _unsupported(
            f"Anthropic messages carry no participant name (name={message.name!r})", i
        )
    blocks = [_render_part(p, i, j) for j, p in enumerate(message.parts)]
    return Extras.apply(blocks, extras, _nested_content)


_WIRE_ROLES: Final[dict[str, str]] = {
    "user": "user",
    "tool": "user",
    "assistant": "assistant",
    "system": "system",  # A10a: mid-conversation system message (Claude Opus 4.8+)
    "developer": "system",
}


def _render_tool(tool: ToolSpec, extras: Extras) -> dict[str, Any]:
    out: dict[str, Any] = {"name": tool.name}
    if tool.description:
        out["description"] = tool.description
    out["input_schema"] = tool.parameters_value()
    out.update(extras.tool_fields.get(tool.name, {}))
    return out


def render_request(transcript: Transcript) -> dict[str, Any]:
    """A Messages request body; leading system/developer messages become top-level ``system``."""
    extras = Extras.from_transcript(SHAPE, transcript)
    per_message = list(extras.for_messages(transcript.messages))
    system, turns = split_system(
        transcript.messages, lambda m, i: _render_blocks(m, i, per_message[i]), SHAPE, None
    )
    body: dict[str, Any] = {}
    if transcript.model is not None:
        body["model"] = transcript.model
    if system:
        plain = len(system) == 1 and set(system[0]) == {"type", "text"}
        body["system"] = system[0]["text"] if plain else system
    body["messages"] = [{"role": _WIRE_ROLES[m.role], "content": blocks} for m, blocks in turns]
    tools = extras.insert_raw_tools([_render_tool(t, extras) for t in transcript.tools])
    if tools:
        body["tools"] = tools
    body.update(body_params(transcript, _BODY_KEYS))
    return body


def render_response(message: Message, meta: ResponseMeta) -> dict[str, Any]:
    """A Messages response (``type: "message"``) that the ``anthropic`` SDK validates."""
    require_assistant(message, "a response holds an assistant message")
    content = _render_blocks(message, 0, MessageExtras())
    stop_reason = meta.stop_reason or ("tool_use" if message.tool_calls else "end_turn")
    return {
        "id": meta.response_id,
        "type": "message",
        "role": "assistant",
        "model": meta.model,
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": meta.usage("input_tokens", "output_tokens"),
    }


# ------------------------------------------------------------------------- cache breakpoints

_EPHEMERAL: Final = {"type": "ephemeral"}
_UNCACHEABLE: Final = frozenset({"thinking", "redacted_thinking"})


def _count_existing(body: dict[str, Any]) -> int:
    found = 0
    blocks: list[Any] = []
    if isinstance(body.get("system"), list):
        blocks.extend(body["system"])
    for m in body.get("messages", []):
        if isinstance(m.get("content"), list):
            blocks.extend(m["content"])
    blocks.extend(body.get("tools", []) or [])
    for b in blocks:
        if isinstance(b, dict) and "cache_control" in b:
            found += 1
    return found


def _mark_system(body: dict[str, Any]) -> bool:
    system = body.get("system")
    if isinstance(system, str) and system:
        body["system"] = [{"type": "text", "text": system, "cache_control": dict(_EPHEMERAL)}]
        return True
    if isinstance(system, list) and system and isinstance(system[-1], dict):
        if "cache_control" in system[-1]:
            return False
        system[-1]["cache_control"] = dict(_EPHEMERAL)
        return True
    return False


def _mark_message(body: dict[str, Any], index: int, blocks: int) -> bool:
    messages = body.get("messages", [])
    if not 0 <= index < len(messages):
        return False
    message = messages[index]
    content = message.get("content")
    if isinstance(content, str):
        if blocks != 1 or not content:
            return False
        message["content"] = [{"type": "text", "text": content, "cache_control": dict(_EPHEMERAL)}]
        return True
    if not isinstance(content, list):
        return False
    for position in range(min(blocks, len(content)) - 1, -1, -1):
        block = content[position]
        if isinstance(block, dict) and block.get("type") not in _UNCACHEABLE:
            if "cache_control" in block:
                return False
            block["cache_control"] = dict(_EPHEMERAL)
            return True
    return False


def place_cache_breakpoints(
    body: dict[str, Any], view: Transcript, boundaries: Sequence[int], limit: int
) -> dict[str, Any]:
    """A copy of ``body`` with at most ``limit`` ``cache_control`` breakpoints, those already
    present included (the config refuses more than the API's four, ``ANTHROPIC_BREAKPOINT_CAP``): the end of the system text, then after each view index in
    ``boundaries`` (``ShapeAdapter.place_cache_breakpoints``).

    A view index is mapped to the rendered body by rendering the view up to that message: the
    render of a prefix is a prefix of the render, so its last message and block count say where
    the boundary is, whatever the shape merged.
    """
    out = copy.deepcopy(body)
    room = limit - _count_existing(out)
    if room <= 0:
        return out
    if _mark_system(out):
        room -= 1
    for index in boundaries:
        if room <= 0:
            break
        try:
            partial = render_request(view.with_messages(view.messages[: index + 1]))
        except ShapeError:
            continue  # a prefix the shape cannot render on its own: no breakpoint there
        wire = partial.get("messages", [])
        if not wire:
            continue
        last = wire[-1].get("content")
        blocks = 1 if isinstance(last, str) else len(last) if isinstance(last, list) else 0
        if _mark_message(out, len(wire) - 1, blocks):
            room -= 1
    return out


def _thinking_budget(body: Mapping[str, Any]) -> tuple[str, int] | None:
    """A27: an enabled thinking budget, which the output cap must exceed; None when thinking is
    not enabled with an integer budget. Interleaved thinking lets the budget exceed the cap, but
    it is turned on by a header, or by the body's ``anthropic_beta`` only on Bedrock, and a
    rendered body does not say where it goes: the budget binds the cap all the same."""
    thinking = body.get("thinking")
    if not isinstance(thinking, Mapping) or thinking.get("type") != "enabled":
        return None
    budget = thinking.get("budget_tokens")
    if not isinstance(budget, int) or isinstance(budget, bool):
        return None
    return "thinking.budget_tokens", budget


def forced_tools(settings: Mapping[str, Any]) -> ForcedTools | None:
    """What ``tool_choice`` obliges the model to call: ``{"type": "any"}`` any tool,
    ``{"type": "tool", "name": ...}`` that one; None for ``auto``, ``none`` or no choice."""
    choice = settings.get("tool_choice")
    if not isinstance(choice, Mapping) or choice.get("type") in (None, "auto", "none"):
        return None
    if choice.get("type") == "any":
        return "any"
    name = choice.get("name")
    return frozenset({choice_name(name if choice.get("type") == "tool" and name else choice)})


ADAPTER: Final = ShapeAdapter(
    name=SHAPE,
    label="anthropic",
    messages_key="messages",
    model_in_url=False,
    default_model="claude-haiku-4-5",
    capabilities=CAPABILITIES,
    options=GenerationOptions(
        "max_tokens",
        "temperature",
        "top_p",
        "stop_sequences",
        max_output_required=True,
        output_cap_floor=_thinking_budget,
        output_schemas=(("output_config", "format"), ("output_format",)),  # GA, then the beta
        server_context=(("mcp_servers",),),  # remote servers whose tools the model is given
        transport=("stream",),
        bookkeeping=("metadata", "service_tier", "cache_control"),
        defaults={
            "thinking": {"type": "disabled"},
            "tool_choice": {"type": "auto"},
            "tool_choice.disable_parallel_tool_use": False,
        },
        tool_settings=("tool_choice",),
        forced_tools=forced_tools,
    ),
    parse_request=parse_request,
    render_request=render_request,
    parse_response=parse_response,
    render_response=render_response,
    place_cache_breakpoints=place_cache_breakpoints,
)
