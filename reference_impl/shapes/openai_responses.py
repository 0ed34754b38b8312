"""OpenAI Responses API (``POST /v1/responses``): typed input items instead of chat messages.

Mapping decisions (provider-rules.md section 2):

* **Grouping.** Consecutive assistant-side items (assistant ``message``, ``reasoning``,
  ``function_call``) form one neutral assistant message, parts in item order, so a ring keeps its
  reasoning (R3/R4). Consecutive ``function_call_output`` items that answer that message's calls
  form one neutral ``tool`` message (an output answering none of them starts its own, as in
  openai-chat). On render each run of text parts becomes one ``message`` item.
* **Item boundaries.** Two message items in a row cannot be told apart from one message with two
  text parts, so a message item that directly follows another message item starts a new neutral
  assistant message. An assistant item ``id`` (``msg_…``) is ``Message.wire_id`` and belongs to the
  first message item of the group; a later message item with its own ``id`` starts a new group.
* **Ids.** ``function_call.call_id`` is ``ToolCallPart.id`` and its ``fc_…`` id is ``item_id``;
  a ``function_call_output`` ``id`` is ``ToolResultPart.item_id``. Arguments stay byte-exact.
* **Reasoning.** A ``reasoning`` item is kept whole (id, summary, ``encrypted_content``) as
  ``ReasoningPart(origin="openai-responses", data=canonical_json(item))``. A parsed *response*
  also carries the reasoning tokens it reported on those parts (``tokens``, not on the wire):
  the input cost of the items when they are sent back.
* **instructions.** The top-level ``instructions`` string is the model's system message, so it
  parses to a leading ``system`` message. On render a leading ``system`` message made of one text
  (or summary) part, without a name or id, becomes ``instructions`` again. A body whose ``input``
  starts with a system item therefore renders with ``instructions`` instead: the same request.
* ``input`` given as a string is one user message. Everything else at the top level
  (``reasoning``, ``include``, ``store``, ``previous_response_id``...) stays in ``params``.
* The wire has no message names, no ``is_error`` flag, no tool-result names and no ``role: tool``
  (R8): such parts raise ``UnsupportedPartError``/``ParseError`` naming where they are.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any, Final

from reference_impl.shapes._mapping import require_assistant, share_reasoning_tokens, text_part
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
)
from reference_impl.transcript.model import text_message_at
from reference_impl.wording import with_article

__all__ = ["ADAPTER", "CAPABILITIES", "parse_request", "parse_response", "render_request"]

SHAPE: Final = "openai-responses"

CAPABILITIES: Final = replace(
    OPENAI_CAPABILITIES,
    reasoning_origins=frozenset({"openai-responses"}),
    tool_result_names=False,
)

_STRUCTURAL: Final = frozenset({"input", "instructions", "tools", "model"})
_ITEM_TYPES: Final = ("message", "function_call", "function_call_output", "reasoning")
# R8: Chat-style ``role: tool`` is not an input role.
_MESSAGE_ROLES: Final = ("user", "assistant", "system", "developer")
_PART_TYPES: Final = ("input_text", "output_text", "input_image", "input_file")

AttachmentPart = TextPart | SummaryPart | ImagePart | FilePart

# ------------------------------------------------------------------------------ parse request


def parse_request(body: Mapping[str, Any]) -> Transcript:
    """A Responses request body -> transcript (``ParseError`` with a JSON path)."""
    root, model, extras, tools = parse_head(body, _function_of)
    messages: list[Message] = []
    instructions = root.get("instructions")
    if not instructions.is_null:
        text = text_part(instructions.str_(), "system")
        messages.append(build_message(instructions, role="system", parts=(text,)))
    given = root.get("input")
    if isinstance(given.value, str):
        messages.append(build_message(given, role="user", parts=(text_part(given.value, "user"),)))
    else:
        messages.extend(_map_items(given, len(messages)))
    params = parse_params(root, _STRUCTURAL, extras)
    return build_transcript(root, messages, tools, model, params)


def _function_of(tool: Wire) -> Wire:
    tool.get("type").choice(("function",), "tool type")
    return Wire({k: v for k, v in tool.obj().items() if k != "type"}, tool.path)


class _Items:
    """Folds a list of input items into neutral messages (see the module docstring); the first
    of them lands at ``offset`` in the transcript (after the instructions). With an offset, a
    message of one string is made with the id the transcript gives it there; without one (the
    output of a response, no transcript) messages are made without ids."""

    def __init__(self, offset: int | None) -> None:
        self.offset = offset
        self.out: list[Message] = []
        self.ring_ids: frozenset[str] = frozenset()
        self.group: list[Part] | None = None
        self.group_at: Wire | None = None
        self.group_wire_id: str | None = None
        self.group_has_message = False
        self.last_was_message = False
        self.results: list[ToolResultPart] = []
        self.results_at: Wire | None = None
        self.results_in_ring = False

    def close_group(self) -> None:
        group = self.group
        if group is not None and self.group_at is not None:
            offset = self.offset
            if (
                offset is not None
                and len(group) == 1
                and type(group[0]) is TextPart
                and self.group_wire_id is None
            ):  # a plain assistant text: made with the id the transcript would give it
                message = text_message_at(offset + len(self.out), "assistant", group[0])
                self.ring_ids = frozenset()  # a text calls nothing
            else:
                message = build_message(
                    self.group_at,
                    role="assistant",
                    parts=tuple(group),
                    wire_id=self.group_wire_id,
                )
                self.ring_ids = frozenset(c.id for c in message.tool_calls)
            self.out.append(message)
        self.group, self.group_at, self.group_wire_id = None, None, None
        self.group_has_message = self.last_was_message = False

    def close_results(self) -> None:
        if self.results and self.results_at is not None:
            parts = tuple(self.results)
            self.out.append(build_message(self.results_at, role="tool", parts=parts))
        self.results = []
        self.results_at = None

    def open_group(self, at: Wire) -> list[Part]:
        self.close_results()
        if self.group is None:
            self.group, self.group_at = [], at
        return self.group

    def add_result(self, at: Wire, result: ToolResultPart) -> None:
        self.close_group()
        in_ring = result.call_id in self.ring_ids
        if self.results and in_ring != self.results_in_ring:
            self.close_results()
        if not self.results:
            self.results_at, self.results_in_ring = at, in_ring
        self.results.append(result)

    def add_assistant_message(self, at: Wire, parts: list[Part], wire_id: str | None) -> None:
        # Two message items in a row, or an id that would not land on the group's first message
        # item, cannot be rendered back inside one neutral message: start a new one.
        if self.group is not None and (
            self.last_was_message or (wire_id is not None and self.group_has_message)
        ):
            self.close_group()
        group = self.open_group(at)
        if wire_id is not None:
            self.group_wire_id = wire_id
        group.extend(parts)
        self.group_has_message = self.last_was_message = True

    def add_other(self, at: Wire, part: Part) -> None:
        self.open_group(at).append(part)
        self.last_was_message = False

    def add_message(self, message: Message) -> None:
        self.close_group()
        self.close_results()
        self.out.append(message)

    def add_text(self, offset: int, role: Role, text: str) -> None:
        """A message of one string, made with the id the transcript gives it (the items start
        at ``offset``); an assistant's only when nothing is open and the next item closes it,
        as ``close_group`` would make it (a text calls nothing: no ring after it)."""
        if self.group is not None:  # closing nothing changes nothing: most items skip both
            self.close_group()
        if self.results:
            self.close_results()
        if role == "assistant":
            self.ring_ids = frozenset()
        out = self.out
        out.append(text_message_at(offset + len(out), role, text_part(text, role)))

    def finish(self) -> list[Message]:
        self.close_group()
        self.close_results()
        return self.out


def _map_items(given: Wire, offset: int | None) -> list[Message]:
    """The neutral messages of an array of items (the ``input`` of a request, the first at
    ``offset``; the ``output`` of a response, None). In a request, a message item of a role and a
    string (most of a long conversation) is made directly; every other item goes through the
    checked walk (``Wire``), which names what it cannot take."""
    values = given.value
    if not isinstance(values, list):
        given.items()  # the named error
    fold = _Items(offset)
    easies = list(map(_plain_message, values))
    easies.append(None)  # past the last item: nothing to join
    for i in range(len(values)):
        easy = easies[i]
        if easy is not None and offset is not None:
            easy_role, text = easy
            # an assistant text on its own (no group open to join, and the next item is a
            # message, which would close it) is made at once too
            if easy_role != "assistant" or (
                fold.group is None and not fold.results and easies[i + 1] is not None
            ):
                fold.add_text(offset, easy_role, text)
            else:
                fold.add_assistant_message(given.at(i), [text_part(text, easy_role)], None)
            continue
        item = given.at(i)
        kind = _item_type(item)
        if kind == "function_call_output":
            fold.add_result(item, _map_function_call_output(item))
        elif kind == "function_call":
            fold.add_other(item, _map_function_call(item))
        elif kind == "reasoning":
            # Kept whole and byte-exact (R3, R4, R12): id, summary, encrypted_content.
            fold.add_other(item, ReasoningPart(origin="openai-responses", data=item.canonical()))
        else:
            item.only_keys({"type", "role", "content", "id", "status"}, "a message item")
            role: Role = item.get("role").choice(_MESSAGE_ROLES, "role")  # type: ignore[assignment]
            wire_id = item.get("id").opt_str()
            parts = _map_content(item.get("content"), role)
            if role == "assistant":
                fold.add_assistant_message(item, list(parts), wire_id)
            else:
                fold.add_message(build_message(item, role=role, parts=parts, wire_id=wire_id))
    return fold.finish()


def _plain_message(value: object) -> tuple[Role, str] | None:
    """``(role, text)`` of a message item that is a role and a string content, with no other
    key than ``"type": "message"``; None for every other item (the checked walk takes it)."""
    if type(value) is not dict:
        return None
    role, content = value.get("role"), value.get("content")
    if type(content) is not str or type(role) is not str or role not in _MESSAGE_ROLES:
        return None
    if len(value) == 2 or (len(value) == 3 and value.get("type") == "message"):
        return role, content  # type: ignore[return-value]  # one of _MESSAGE_ROLES
    return None


def _item_type(item: Wire) -> str:
    item.obj()
    kind = item.get("type")
    if kind.is_null:
        if item.has("role"):
            return "message"  # an "easy" input message: {"role", "content"}
        raise kind.fail("an input item needs a type (or a role for a message)")
    return kind.choice(_ITEM_TYPES, "input item type")


def _map_content(w: Wire, role: Role) -> tuple[AttachmentPart, ...]:
    if isinstance(w.value, str):
        return (text_part(w.value, role),)
    return tuple(_map_content_part(p, role) for p in w.items())


def _map_content_part(w: Wire, role: Role) -> AttachmentPart:
    kind = w.get("type").choice(_PART_TYPES, "content part type")
    if kind in ("input_text", "output_text"):
        w.only_keys({"type", "text", "annotations", "logprobs"}, f"an {kind} part")
        for key in ("annotations", "logprobs"):
            if w.get(key).value not in (None, []):
                raise w.get(key).fail(f"{key} cannot be represented in the neutral transcript")
        return text_part(w.get("text").str_(), role)
    if role == "assistant":
        raise w.get("type").fail(f"an assistant message cannot hold an {kind} part")
    if kind == "input_image":
        w.only_keys({"type", "image_url", "file_id", "detail"}, "an input_image part")
        detail = image_detail(w.get("detail"))
        if w.has("file_id"):
            return ImagePart(source="file_id", data=w.get("file_id").str_(), detail=detail)
        url = w.get("image_url").str_()
        return image_from_url(url, detail)
    w.only_keys({"type", "file_id", "file_data", "file_url", "filename"}, "an input_file part")
    filename = w.get("filename").opt_str()
    if w.has("file_id"):
        return FilePart(source="file_id", data=w.get("file_id").str_(), filename=filename)
    if w.has("file_url"):
        return FilePart(source="url", data=w.get("file_url").str_(), filename=filename)
    raw = w.get("file_data").str_()
    return file_from_data(raw, filename)


def _map_function_call(item: Wire) -> ToolCallPart:
    item.only_keys({"type", "call_id", "name", "arguments", "id", "status"}, "a function_call")
    return ToolCallPart(
        id=item.get("call_id").str_(),
        name=item.get("name").str_(),
        arguments=item.get("arguments").str_(),
        item_id=item.get("id").opt_str(),
    )


def _map_function_call_output(item: Wire) -> ToolResultPart:
    item.only_keys({"type", "call_id", "output", "id", "status"}, "a function_call_output")
    call_id = item.get("call_id").str_()
    content: list[TextPart | ImagePart | FilePart] = []
    for part in _map_content(item.get("output"), "tool"):
        assert not isinstance(part, SummaryPart)  # text_part() keeps summaries out of results
        content.append(part)
    return ToolResultPart(call_id=call_id, content=tuple(content), item_id=item.get("id").opt_str())


# ----------------------------------------------------------------------------- render request


def render_request(transcript: Transcript) -> dict[str, Any]:
    """Transcript -> Responses body (``UnsupportedPartError`` for what it cannot carry)."""
    params, extras = render_params(transcript, SHAPE, _STRUCTURAL)
    body: dict[str, Any] = {}
    if transcript.model is not None:
        body["model"] = transcript.model
    messages = transcript.messages
    start = 0
    if messages and _is_instructions(messages[0]):
        only = messages[0].parts[0]
        assert isinstance(only, TextPart | SummaryPart)
        body["instructions"] = text_of(only)
        start = 1
    items: list[dict[str, Any]] = []
    for index in range(start, len(messages)):
        items.extend(_render_message(messages[index], index))
    body["input"] = items
    if transcript.tools:
        body["tools"] = [{"type": "function", **render_tool(t, extras)} for t in transcript.tools]
    body.update(params)
    return body


def _is_instructions(message: Message) -> bool:
    return (
        message.role == "system"
        and len(message.parts) == 1
        and isinstance(message.parts[0], TextPart | SummaryPart)
        and message.name is None
        and message.wire_id is None
    )


def _render_message(message: Message, index: int) -> list[dict[str, Any]]:
    if message.name is not None:
        raise unsupported(SHAPE, index, None, f"a message name ({message.name!r})")
    if message.empty_tool_calls:
        raise unsupported(SHAPE, index, None, "an empty tool_calls list (a Chat wire artifact, C4)")
    if message.role == "tool":
        return _render_results(message, index)
    if message.role == "assistant":
        return _render_assistant(message, index, None)
    out: dict[str, Any] = {"role": message.role}
    parts = message.parts
    if message.wire_id is None and len(parts) == 1 and isinstance(parts[0], TextPart | SummaryPart):
        out["content"] = text_of(parts[0])
    else:
        out["content"] = [_render_input_part(p, index, j) for j, p in enumerate(parts)]
    if message.wire_id is not None:
        out = {"type": "message", "id": message.wire_id, **out}
    return [out]


def _input_source(
    kind: str, part: ImagePart | FilePart, url_key: str, data_key: str
) -> dict[str, Any]:
    """An ``input_image``/``input_file`` item with the part's source: a file id, a URL under
    ``url_key``, or inline data as a data URL under ``data_key``."""
    out: dict[str, Any] = {"type": kind}
    if part.source == "file_id":
        out["file_id"] = part.data
    elif part.source == "url":
        out[url_key] = part.data
    else:
        out[data_key] = data_url(part.media_type, part.data)
    return out


def _render_input_part(part: Part, index: int, j: int) -> dict[str, Any]:
    if isinstance(part, TextPart | SummaryPart):
        return {"type": "input_text", "text": text_of(part)}
    if isinstance(part, ImagePart):
        image = _input_source("input_image", part, "image_url", "image_url")
        if part.detail is not None:
            image["detail"] = part.detail
        return image
    if isinstance(part, FilePart):
        file = _input_source("input_file", part, "file_url", "file_data")
        if part.filename is not None:
            file["filename"] = part.filename
        return file
    raise unsupported(SHAPE, index, j, f"{with_article(repr(part.kind))} part in message content")


def _render_assistant(
    message: Message, index: int, response_id: Callable[[int], str] | None
) -> list[dict[str, Any]]:
    """Assistant parts -> items. ``response_id`` (response bodies) forces full output items."""
    items: list[dict[str, Any]] = []
    run: list[TextPart] = []
    emitted = 0

    def flush() -> None:
        nonlocal emitted
        if not run:
            return
        wire_id = message.wire_id if emitted == 0 else None
        items.append(_message_item(run, wire_id, emitted, response_id))
        emitted += 1
        run.clear()

    for j, part in enumerate(message.parts):
        if isinstance(part, TextPart):
            run.append(part)
            continue
        flush()
        if isinstance(part, ReasoningPart):
            value = part.value()
            if part.origin != "openai-responses" or value.get("type") != "reasoning":
                raise unsupported(
                    SHAPE, index, j, f"{with_article(repr(part.origin))} reasoning artifact"
                )
            items.append(value)
        elif isinstance(part, ToolCallPart):
            call: dict[str, Any] = {
                "type": "function_call",
                "call_id": part.id,
                "name": part.name,
                "arguments": part.arguments,
            }
            if part.item_id is not None:
                call["id"] = part.item_id
            if response_id is not None:
                call["status"] = "completed"
            items.append(call)
        else:
            raise unsupported(
                SHAPE, index, j, f"{with_article(repr(part.kind))} part in an assistant message"
            )
    flush()
    if emitted == 0 and (message.wire_id is not None or not message.parts):
        # An id without text (or an empty message) travels as an empty message item, first.
        items.insert(0, _message_item([], message.wire_id, 0, response_id))
    return items


def _message_item(
    texts: list[TextPart],
    wire_id: str | None,
    n: int,
    response_id: Callable[[int], str] | None,
) -> dict[str, Any]:
    if response_id is None and wire_id is None and len(texts) == 1:
        return {"role": "assistant", "content": texts[0].text}
    item: dict[str, Any] = {"type": "message"}
    if wire_id is None and response_id is not None:
        wire_id = response_id(n)
    if wire_id is not None:
        item["id"] = wire_id
    item["role"] = "assistant"
    item["content"] = [{"type": "output_text", "text": t.text, "annotations": []} for t in texts]
    if response_id is not None:
        item["status"] = "completed"
    return item


def _render_results(message: Message, index: int) -> list[dict[str, Any]]:
    if message.wire_id is not None:
        raise unsupported(SHAPE, index, None, f"an id on a tool message ({message.wire_id!r})")
    out: list[dict[str, Any]] = []
    for j, part in tool_results(SHAPE, message, index):
        if part.name is not None:
            raise unsupported(SHAPE, index, j, f"a tool result name ({part.name!r})")
        content = part.content
        output: str | list[dict[str, Any]]
        if len(content) == 1 and isinstance(content[0], TextPart):
            output = content[0].text
        else:
            output = [_render_input_part(p, index, j) for p in content]
        item: dict[str, Any] = {"type": "function_call_output", "call_id": part.call_id}
        if part.item_id is not None:
            item["id"] = part.item_id
        item["output"] = output
        out.append(item)
    return out


# ----------------------------------------------------------------------------------- response


def parse_response(body: Mapping[str, Any]) -> Message:
    """A ``response`` object -> its output items as one assistant message.

    The reasoning tokens the response reports (``usage.output_tokens_details.reasoning_tokens``)
    are carried on its ``reasoning`` parts (``ReasoningPart.tokens``, shared evenly when there are
    several): the provider bills them as input when the items are sent back, and nothing in the
    item says how many there were. A count of 0 next to a reasoning item is left unknown: the
    recordings show gpt-5-mini reporting 0 for items it billed about 60 tokens for when replayed.
    """
    message = _parse_output(body)
    reasoning = _reported_reasoning_tokens(body)
    if not reasoning:
        return message
    indexes = [i for i, p in enumerate(message.parts) if isinstance(p, ReasoningPart)]
    return share_reasoning_tokens(message, indexes, reasoning)


def _reported_reasoning_tokens(body: Mapping[str, Any]) -> int:
    """``usage.output_tokens_details.reasoning_tokens`` of a response (0 when absent)."""
    usage = body.get("usage")
    details = usage.get("output_tokens_details") if isinstance(usage, Mapping) else None
    value = details.get("reasoning_tokens") if isinstance(details, Mapping) else None
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def _parse_output(body: Mapping[str, Any]) -> Message:
    root = Wire.root(body)
    output = root.get("output")
    for item in output.items():
        if _item_type(item) == "function_call_output" or (
            item.get("role").value not in (None, "assistant")
        ):
            raise item.fail("a response output item must be assistant-side")
    messages = _map_items(output, None)
    if not messages:
        return Message(role="assistant", parts=())
    if len(messages) > 1:
        raise output.fail(
            "the output items do not form one assistant message (two message items in a row?)"
        )
    return messages[0]


def render_response(message: Message, meta: ResponseMeta) -> dict[str, Any]:
    """One assistant message -> a ``response`` object the ``openai`` SDK accepts."""
    require_assistant(message, "a response carries an assistant message", where="message.role")
    if message.name is not None or message.empty_tool_calls:
        raise unsupported(SHAPE, 0, None, "a message name or an empty tool_calls list")

    def response_id(n: int) -> str:
        digest = hashlib.sha256(f"{meta.response_id}:{n}".encode()).hexdigest()
        return f"msg_{digest[:40]}"

    truncated = meta.stop_reason in ("length", "max_tokens", "max_output_tokens")
    return {
        "id": meta.response_id,
        "object": "response",
        "created_at": 0,
        "model": meta.model,
        "status": "incomplete" if truncated else "completed",
        "error": None,
        "incomplete_details": {"reason": "max_output_tokens"} if truncated else None,
        "instructions": None,
        "metadata": {},
        "output": _render_assistant(message, 0, response_id),
        "parallel_tool_calls": True,
        "temperature": None,
        "tool_choice": "auto",
        "tools": [],
        "top_p": None,
        "usage": {
            "input_tokens": meta.input_tokens,
            "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
            "output_tokens": meta.output_tokens,
            "output_tokens_details": {
                "reasoning_tokens": sum(
                    p.tokens or 0 for p in message.parts if isinstance(p, ReasoningPart)
                )
            },
            "total_tokens": meta.total_tokens,
        },
    }


def forced_tools(settings: Mapping[str, Any]) -> ForcedTools | None:
    """What ``tool_choice`` obliges the model to call (:func:`openai_forced_tools`): Responses
    keeps ``allowed_tools``' mode and list on the choice itself, and names a function or custom
    tool by its name, an MCP server's tool by its name or the server's label, a built-in tool by
    its type (``file_search``, ``image_generation``...)."""
    return openai_forced_tools(settings, allowed=lambda choice: choice, name_of=_chosen_tool)


def _chosen_tool(entry: object) -> str:
    """The tool a Responses tool-choice entry names (:func:`forced_tools`)."""
    if isinstance(entry, Mapping):
        for key in ("name", "server_label", "type"):
            if isinstance(entry.get(key), str):
                return str(entry[key])
    return choice_name(entry)


ADAPTER: Final = ShapeAdapter(
    name=SHAPE,
    label="responses",
    messages_key="input",
    model_in_url=False,
    default_model="gpt-4o-mini",
    capabilities=CAPABILITIES,
    options=GenerationOptions(
        "max_output_tokens",
        "temperature",
        "top_p",
        None,
        output_schemas=(("text", "format"),),
        server_context=(("previous_response_id",), ("conversation",), ("prompt",)),
        transport=("stream", "stream_options", "background"),
        bookkeeping=(*BOOKKEEPING, "include"),  # e.g. reasoning.encrypted_content
        defaults={
            **OPENAI_DEFAULTS,
            "truncation": "disabled",
            "text": {"format": {"type": "text"}},
        },
        tool_settings=("tool_choice", "parallel_tool_calls", "max_tool_calls"),
        forced_tools=forced_tools,
    ),
    parse_request=parse_request,
    render_request=render_request,
    parse_response=parse_response,
    render_response=render_response,
)
