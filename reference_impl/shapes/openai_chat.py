"""OpenAI Chat Completions (``POST /v1/chat/completions``) and the wire every gateway copies.

Mapping decisions (provider-rules.md section 1):

* Consecutive ``tool`` messages that answer the calls of the latest assistant message merge into
  one neutral ``tool`` message (one ``ToolResultPart`` each) and split again on render; a ``tool``
  message answering none of those calls (an orphan, C2) starts its own neutral message so that
  ``rings.validate`` can report it where it stands.
* ``content`` may be a string, an array of parts, ``null`` or absent. ``null``/absent means no
  content parts; a one-text-part message renders as a plain string. A text that carries the
  summary markers parses back to a ``SummaryPart`` (system, developer and user messages).
* ``tool_calls: []`` is kept as ``Message.empty_tool_calls`` and rendered back (C4), so that it
  can be reported instead of vanishing.
* DeepSeek's ``reasoning_content`` on an assistant message becomes the first part:
  ``ReasoningPart(origin="deepseek", data={"reasoning_content": ...})``.
* Arguments stay the exact JSON text the model produced. The wire has no ``is_error`` flag, no
  item ids and no place for text after a tool call or inside a ``tool`` message: such parts raise
  ``UnsupportedPartError`` naming the message and part index.
* Every top-level key other than ``messages``/``tools``/``model`` is kept in ``Transcript.params``
  and re-emitted verbatim; converting between shapes is the caller's business.
* A wire key this module cannot represent (``refusal``, ``audio``, legacy ``function_call``,
  OpenRouter ``reasoning``...) is a ``ParseError``, never silently ignored.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any, Final

from reference_impl.errors import ShapeError
from reference_impl.shapes._mapping import require_assistant, text_part
from reference_impl.shapes._openai_common import (
    BOOKKEEPING,
    OPENAI_CAPABILITIES,
    OPENAI_DEFAULTS,
    build_message,
    build_transcript,
    data_url,
    file_from_data,
    image_detail,
    image_from_url,
    openai_forced_tools,
    parse_head,
    parse_params,
    render_params,
    render_tool,
    text_of,
    tool_results,
    unsupported,
)
from reference_impl.shapes._wire import Wire
from reference_impl.shapes.base import (
    ForcedTools,
    GenerationOptions,
    ResponseMeta,
    ShapeAdapter,
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
    Transcript,
    canonical_json,
)
from reference_impl.transcript.model import text_message_at
from reference_impl.wording import with_article

__all__ = ["ADAPTER", "CAPABILITIES", "parse_request", "parse_response", "render_request"]

SHAPE: Final = "openai-chat"
ROLES: Final = ("system", "developer", "user", "assistant", "tool")

CAPABILITIES: Final = replace(
    OPENAI_CAPABILITIES,
    reasoning_origins=frozenset({"deepseek"}),
    # C6: tool message content blocks may be "either text or image_url type".
    tool_result_attachments=frozenset({"text", "image"}),
    message_names=True,
)

_STRUCTURAL: Final = frozenset({"messages", "tools", "model"})
_MESSAGE_KEYS: Final[Mapping[str, frozenset[str]]] = {
    "system": frozenset({"role", "content", "name"}),
    "developer": frozenset({"role", "content", "name"}),
    "user": frozenset({"role", "content", "name"}),
    # refusal/audio/function_call/annotations appear when a client echoes a response message;
    # they are accepted only when empty (null or []).
    "assistant": frozenset(
        {
            "role",
            "content",
            "name",
            "tool_calls",
            "reasoning_content",
            "refusal",
            "audio",
            "function_call",
            "annotations",
        }
    ),
    "tool": frozenset({"role", "content", "tool_call_id", "name"}),
}
_EMPTY_ONLY: Final = ("refusal", "audio", "function_call", "annotations")
_CALLS_KEYS: Final = frozenset({"role", "content", "tool_calls"})
_CALL_KEYS: Final = frozenset({"id", "type", "function"})
_FUNCTION_KEYS: Final = frozenset({"name", "arguments"})
_PLAIN_ROLES: Final[Mapping[str, Role]] = {
    "system": "system",
    "developer": "developer",
    "user": "user",
    "assistant": "assistant",
}
"""The roles of a message that may be a role and a string content only (``_map_messages``)."""

# ------------------------------------------------------------------------------ parse request


def parse_request(body: Mapping[str, Any]) -> Transcript:
    """A Chat Completions request body -> transcript (``ParseError`` with a JSON path)."""
    root, model, extras, tools = parse_head(body, _function_of)
    messages = _map_messages(root.get("messages"))
    params = parse_params(root, _STRUCTURAL, extras)
    return build_transcript(root, messages, tools, model, params)


def _function_of(tool: Wire) -> Wire:
    tool.only_keys({"type", "function"}, "a tool")
    tool.get("type").choice(("function",), "tool type")
    return tool.get("function")


def _map_messages(array: Wire) -> list[Message]:
    """The neutral messages of the wire's ``messages`` array. A message that is a role and a
    string content (most of a long conversation) is made directly, with its id; every other one
    goes through the checked walk below (``Wire``), which names what it cannot take."""
    values = array.value
    if not isinstance(values, list):
        array.items()  # the named error
    out: list[Message] = []
    ring_ids: frozenset[str] = frozenset()
    pending: list[ToolResultPart] = []
    pending_in_ring = False
    pending_at: Wire | None = None

    def flush() -> None:
        if pending_at is not None and pending:
            out.append(build_message(pending_at, role="tool", parts=tuple(pending)))
        pending.clear()

    for i, value in enumerate(values):
        named = value.get("role") if type(value) is dict else None
        plain = _PLAIN_ROLES.get(named) if type(named) is str else None
        if plain is not None and len(value) == 2 and type(content := value.get("content")) is str:
            if pending:
                flush()
            pending_at = None
            out.append(text_message_at(len(out), plain, text_part(content, plain)))
            if plain == "assistant":
                ring_ids = frozenset()
            continue
        item = Wire(value, f"{array.path}[{i}]")
        short = _plain_tool_result(value) if named == "tool" else None
        role: Role = "tool" if short else item.get("role").choice(ROLES, "role")  # type: ignore[assignment]
        if role == "tool":
            result = short or _map_tool_message(item)
            in_ring = result.call_id in ring_ids
            # A tool message joins the previous one only when both answer the same ring.
            if pending and in_ring != pending_in_ring:
                flush()
            if not pending:
                pending_at, pending_in_ring = item, in_ring
            pending.append(result)
            continue
        flush()
        pending_at = None
        message = (role == "assistant" and _plain_calls(value)) or _map_message(item, role)
        if role == "assistant":
            ring_ids = frozenset(c.id for c in message.tool_calls)
        out.append(message)
    flush()
    return out


def _map_message(item: Wire, role: Role) -> Message:
    if role == "assistant":
        return _map_assistant(item)
    item.only_keys(_MESSAGE_KEYS[role], f"{with_article(role)} message")
    content = item.get("content")
    if not content.present:
        raise content.fail(f"{with_article(role)} message needs content")
    parts = _map_content(content, role)
    return build_message(item, role=role, parts=parts, name=item.get("name").opt_str())


def _map_content(w: Wire, role: Role) -> tuple[TextPart | SummaryPart | ImagePart | FilePart, ...]:
    if w.is_null:
        return ()
    if isinstance(w.value, str):
        return (text_part(w.value, role),)
    allowed = {
        "system": ("text",),
        "developer": ("text",),
        "user": ("text", "image_url", "file"),
        "tool": ("text", "image_url"),  # C6
        "assistant": ("text",),
    }[role]
    return tuple(_map_content_part(p, role, allowed) for p in w.items())


def _map_content_part(
    w: Wire, role: Role, allowed: tuple[str, ...]
) -> TextPart | SummaryPart | ImagePart | FilePart:
    kind = w.get("type").str_()
    if kind not in allowed:
        raise w.get("type").fail(
            f"{with_article(role)} message cannot hold {with_article(repr(kind))} content part here; supported: {', '.join(allowed)}"
        )
    if kind == "text":
        w.only_keys({"type", "text"}, "a text part")
        return text_part(w.get("text").str_(), role)
    if kind == "image_url":
        w.only_keys({"type", "image_url"}, "an image_url part")
        image = w.get("image_url")
        image.only_keys({"url", "detail"}, "image_url")
        url = image.get("url").str_()
        detail = image_detail(image.get("detail"))
        return image_from_url(url, detail)
    w.only_keys({"type", "file"}, "a file part")
    file = w.get("file")
    file.only_keys({"file_id", "file_data", "filename"}, "file")
    filename = file.get("filename").opt_str()
    if file.has("file_id"):
        return FilePart(source="file_id", data=file.get("file_id").str_(), filename=filename)
    raw = file.get("file_data").str_()
    return file_from_data(raw, filename)


def _map_assistant(item: Wire) -> Message:
    item.only_keys(_MESSAGE_KEYS["assistant"], "an assistant message")
    for key in _EMPTY_ONLY:
        value = item.get(key).value
        if value not in (None, []):
            raise item.get(key).fail(
                f"an assistant {key!r} cannot be represented in the neutral transcript"
            )
    parts: list[Part] = []
    reasoning = item.get("reasoning_content")
    if not reasoning.is_null:
        # DeepSeek thinking mode: the reasoning of a tool-call turn must be passed back (§6).
        payload = canonical_json({"reasoning_content": reasoning.str_()})
        parts.append(ReasoningPart(origin="deepseek", data=payload))
    parts.extend(_map_content(item.get("content"), "assistant"))
    calls = item.get("tool_calls")
    if not calls.is_null:
        parts.extend(_map_tool_call(c) for c in calls.items())
    return build_message(
        item,
        role="assistant",
        parts=tuple(parts),
        name=item.get("name").opt_str(),
        empty_tool_calls=calls.value == [],  # C4: kept so that it is reported, not lost
    )


def _map_tool_call(w: Wire) -> ToolCallPart:
    w.only_keys({"id", "type", "function", "index"}, "a tool call")
    if w.has("type"):
        w.get("type").choice(("function",), "tool call type")
    fn = w.get("function")
    fn.only_keys({"name", "arguments"}, "a tool call function")
    return ToolCallPart(
        id=w.get("id").str_(), name=fn.get("name").str_(), arguments=fn.get("arguments").str_()
    )


def _plain_calls(value: Mapping[str, Any]) -> Message | None:
    """An assistant message that is an optional string content and a non-empty list of plain
    function calls (``id``, ``type: function``, ``function: {name, arguments}`` with strings),
    made directly; None for any other, left to ``_map_assistant``."""
    content, calls = value.get("content"), value.get("tool_calls")
    if not value.keys() <= _CALLS_KEYS or type(calls) is not list or not calls:
        return None
    if content is not None and type(content) is not str:
        return None
    parts: list[Part] = [TextPart(content)] if content is not None else []
    for call in calls:
        function = call.get("function") if type(call) is dict else None
        if (
            type(function) is not dict
            or call.keys() != _CALL_KEYS
            or call["type"] != "function"
            or type(call_id := call["id"]) is not str
            or function.keys() != _FUNCTION_KEYS
            or type(name := function["name"]) is not str
            or type(arguments := function["arguments"]) is not str
        ):
            return None
        parts.append(ToolCallPart(id=call_id, name=name, arguments=arguments))
    return Message("assistant", tuple(parts))


def _plain_tool_result(value: Mapping[str, Any]) -> ToolResultPart | None:
    """The result of a tool message that is a call id and a string content (the usual one),
    made directly; None for any other, left to ``_map_tool_message``."""
    call_id, content = value.get("tool_call_id"), value.get("content")
    if len(value) == 3 and type(call_id) is str and type(content) is str:
        return ToolResultPart(call_id=call_id, content=(TextPart(content),))
    return None


def _map_tool_message(item: Wire) -> ToolResultPart:
    item.only_keys(_MESSAGE_KEYS["tool"], "a tool message")
    content = item.get("content")
    if not content.present:
        raise content.fail("a tool message needs content")
    attachments: list[TextPart | ImagePart | FilePart] = []
    for part in _map_content(content, "tool"):
        assert not isinstance(part, SummaryPart)  # text_part() keeps summaries out of tool text
        attachments.append(part)
    return ToolResultPart(
        call_id=item.get("tool_call_id").str_(),
        content=tuple(attachments),
        name=item.get("name").opt_str(),
    )


# ----------------------------------------------------------------------------- render request


def render_request(transcript: Transcript) -> dict[str, Any]:
    """Transcript -> Chat Completions body (``UnsupportedPartError`` for what it cannot carry)."""
    params, extras = render_params(transcript, SHAPE, _STRUCTURAL)
    body: dict[str, Any] = {}
    if transcript.model is not None:
        body["model"] = transcript.model
    messages: list[dict[str, Any]] = []
    for index, message in enumerate(transcript.messages):
        messages.extend(_render_message(message, index))
    body["messages"] = messages
    if transcript.tools:
        body["tools"] = [
            {"type": "function", "function": render_tool(t, extras)} for t in transcript.tools
        ]
    body.update(params)
    return body


def _render_message(message: Message, index: int) -> list[dict[str, Any]]:
    if message.wire_id is not None:
        raise unsupported(SHAPE, index, None, f"a message item id ({message.wire_id!r})")
    if message.role == "tool":
        return _render_tool_message(message, index)
    if message.role == "assistant":
        out = _render_assistant(message, index)
    else:
        out = {"role": message.role, "content": _render_content(message.parts, index)}
    if message.name is not None:
        out["name"] = message.name
    return [out]


def _render_content(parts: tuple[Part, ...], index: int) -> str | list[dict[str, Any]]:
    if len(parts) == 1 and isinstance(parts[0], TextPart | SummaryPart):
        return text_of(parts[0])
    return [_render_content_part(p, index, j) for j, p in enumerate(parts)]


def _render_content_part(part: Part, index: int, j: int) -> dict[str, Any]:
    if isinstance(part, TextPart | SummaryPart):
        return {"type": "text", "text": text_of(part)}
    if isinstance(part, ImagePart):
        if part.source == "file_id":
            raise unsupported(SHAPE, index, j, "an image by file id (use a URL or base64)")
        url = part.data if part.source == "url" else data_url(part.media_type, part.data)
        image: dict[str, Any] = {"url": url}
        if part.detail is not None:
            image["detail"] = part.detail
        return {"type": "image_url", "image_url": image}
    if isinstance(part, FilePart):
        if part.source == "url":
            raise unsupported(SHAPE, index, j, "a file by URL (use a file id or base64)")
        file: dict[str, Any] = (
            {"file_id": part.data}
            if part.source == "file_id"
            else {"file_data": data_url(part.media_type, part.data)}
        )
        if part.filename is not None:
            file["filename"] = part.filename
        return {"type": "file", "file": file}
    raise unsupported(SHAPE, index, j, f"{with_article(repr(part.kind))} part in a content array")


def _render_assistant(message: Message, index: int) -> dict[str, Any]:
    out: dict[str, Any] = {"role": "assistant"}
    texts: list[TextPart] = []
    calls: list[dict[str, Any]] = []
    for j, part in enumerate(message.parts):
        if isinstance(part, ReasoningPart):
            if part.origin != "deepseek":
                raise unsupported(
                    SHAPE, index, j, f"{with_article(repr(part.origin))} reasoning artifact"
                )
            if j != 0:
                # The wire has one reasoning_content field per message: only the first part fits.
                raise unsupported(SHAPE, index, j, "reasoning_content that is not the first part")
            out["reasoning_content"] = _deepseek_reasoning(part, index, j)
        elif isinstance(part, TextPart):
            if calls:
                raise unsupported(
                    SHAPE, index, j, "text after a tool call (content precedes tool_calls)"
                )
            texts.append(part)
        elif isinstance(part, ToolCallPart):
            if part.item_id is not None:
                raise unsupported(SHAPE, index, j, f"a tool call item id ({part.item_id!r})")
            calls.append(
                {
                    "id": part.id,
                    "type": "function",
                    "function": {"name": part.name, "arguments": part.arguments},
                }
            )
        else:
            raise unsupported(
                SHAPE, index, j, f"{with_article(repr(part.kind))} part in an assistant message"
            )
    # C5: null content is how the wire says "no text" (tool-call turns); one text is a string.
    out["content"] = (
        None
        if not texts
        else texts[0].text
        if len(texts) == 1
        else [{"type": "text", "text": t.text} for t in texts]
    )
    if calls or message.empty_tool_calls:
        out["tool_calls"] = calls
    return out


def _deepseek_reasoning(part: ReasoningPart, index: int, j: int) -> str:
    value = part.value()
    text = value.get("reasoning_content")
    if set(value) != {"reasoning_content"} or not isinstance(text, str):
        raise unsupported(SHAPE, index, j, "DeepSeek reasoning data other than {reasoning_content}")
    return text


def _render_tool_message(message: Message, index: int) -> list[dict[str, Any]]:
    if message.name is not None:
        raise unsupported(
            SHAPE, index, None, "a name on a merged tool message (names go on results)"
        )
    out: list[dict[str, Any]] = []
    for j, part in tool_results(SHAPE, message, index):
        if part.item_id is not None:
            raise unsupported(SHAPE, index, j, f"a tool result item id ({part.item_id!r})")
        if any(isinstance(a, FilePart) for a in part.content):
            raise unsupported(
                SHAPE, index, j, "a file inside a tool result (C6: text or image_url)"
            )
        wire: dict[str, Any] = {
            "role": "tool",
            "tool_call_id": part.call_id,
            "content": _render_content(part.content, index),
        }
        if part.name is not None:
            wire["name"] = part.name
        out.append(wire)
    return out


# ----------------------------------------------------------------------------------- response


def parse_response(body: Mapping[str, Any]) -> Message:
    """A ``chat.completion`` body -> the assistant message of its single choice."""
    root = Wire.root(body)
    choices = root.get("choices").items()
    if len(choices) != 1:
        raise root.get("choices").fail(
            f"expected exactly one choice, got {len(choices)} (n > 1 is not one reply)"
        )
    wire = choices[0].get("message")
    wire.obj()
    wire.get("role").choice(("assistant",), "response role")
    return _map_assistant(wire)


_FINISH: Final[Mapping[str, str]] = {
    "stop": "stop",
    "end_turn": "stop",
    "stop_sequence": "stop",
    "length": "length",
    "max_tokens": "length",
    "max_output_tokens": "length",
    "tool_calls": "tool_calls",
    "tool_use": "tool_calls",
    "content_filter": "content_filter",
}


def render_response(message: Message, meta: ResponseMeta) -> dict[str, Any]:
    """One assistant message -> a ``chat.completion`` object the ``openai`` SDK accepts."""
    require_assistant(message, "a response carries an assistant message", where="message.role")
    wire = _render_message(message, 0)[0]
    if meta.stop_reason is None:
        finish = "tool_calls" if message.tool_calls else "stop"
    elif meta.stop_reason in _FINISH:
        finish = _FINISH[meta.stop_reason]
    else:
        raise ShapeError(
            f"unknown stop reason {meta.stop_reason!r}; expected one of {', '.join(_FINISH)}",
            where="meta.stop_reason",
        )
    return {
        "id": meta.response_id,
        "object": "chat.completion",
        "created": 0,
        "model": meta.model,
        "choices": [{"index": 0, "message": wire, "finish_reason": finish, "logprobs": None}],
        "usage": meta.usage("prompt_tokens", "completion_tokens", "total_tokens"),
    }


def forced_tools(settings: Mapping[str, Any]) -> ForcedTools | None:
    """What ``tool_choice`` obliges the model to call (:func:`openai_forced_tools`): Chat keeps
    ``allowed_tools``' mode and list in a member of that name."""
    return openai_forced_tools(
        settings, allowed=lambda choice: choice.get("allowed_tools"), name_of=_chosen_tool
    )


def _chosen_tool(entry: object) -> str:
    """The name in a Chat tool-choice entry (``{"type": "function", "function": {"name": ...}}``,
    the same with ``custom``)."""
    if isinstance(entry, Mapping):
        inner = entry.get(entry.get("type")) if isinstance(entry.get("type"), str) else None
        if isinstance(inner, Mapping) and isinstance(inner.get("name"), str):
            return str(inner["name"])
    return choice_name(entry)


ADAPTER: Final = ShapeAdapter(
    name=SHAPE,
    label="chat",
    messages_key="messages",
    model_in_url=False,
    default_model="gpt-4o-mini",
    capabilities=CAPABILITIES,
    options=GenerationOptions(
        "max_tokens",
        "temperature",
        "top_p",
        "stop",
        None,
        ("max_completion_tokens",),
        output_schemas=(("response_format",),),
        transport=("stream", "stream_options"),
        bookkeeping=BOOKKEEPING,
        defaults={
            **OPENAI_DEFAULTS,
            "n": 1,
            "logprobs": False,
            "response_format": {"type": "text"},
        },
        tool_settings=("tool_choice", "parallel_tool_calls"),
        forced_tools=forced_tools,
    ),
    parse_request=parse_request,
    render_request=render_request,
    parse_response=parse_response,
    render_response=render_response,
)
