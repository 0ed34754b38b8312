"""``gemini``: ``generateContent`` bodies (AI Studio and Vertex JSON, camelCase on render).

Index paths in errors use protobuf field paths: ``contents[3].parts[0].functionCall``. On input,
the snake_case spellings that protobuf JSON parsing also accepts (``function_call``,
``system_instruction``, ``parameters_json_schema``...) are read too; render writes camelCase.

Mapping to the neutral transcript:

* ``systemInstruction`` is one leading ``system`` message (its text parts). On render, leading
  ``system``/``developer`` messages become ``systemInstruction``; a system message later in the
  transcript raises ``UnsupportedPartError`` (``contents`` only take ``user``/``model``, G7).
* Roles ``user``/``model`` are user/assistant; a turn holding ``functionResponse`` parts is a
  neutral ``tool`` message (results and any text in wire order, so A3-style misplacement stays
  visible). The legacy ``function`` role is read as such a turn; a missing role is ``user``.
* ``thoughtSignature`` on a part becomes ``ReasoningPart(origin="gemini",
  data='{"thoughtSignature":...}')`` placed immediately **before** the part it was attached to;
  render re-attaches it to the next part (G6: a functionCall must carry its signature back; G6a:
  with parallel calls only the first has one). A ``thought: true`` part is one ``ReasoningPart``
  holding the canonical JSON of the whole part (its signature included). A parsed *response*
  carries ``usageMetadata.thoughtsTokenCount`` on its signature parts (``ReasoningPart.tokens``,
  shared evenly): Gemini 3 bills a replayed signature's thoughts as input.
* **Call ids.** ``functionCall.id`` is optional. A call without one gets
  ``gemini-call-<message index>-<n>`` (n-th call of that message; in a response,
  ``gemini-call-<responseId>-<n>``). A ``functionResponse`` without an id is linked to the first
  not yet answered call **of the same name** in the previous model turn (Gemini matches by order
  and name), else it gets ``gemini-result-<message index>-<n>`` and ``rings.validate`` reports it
  as an orphan. Ids with these two prefixes are never rendered, so round trips hold.
* **Function responses.** ``response`` is an object. ``{"output": "<text>"}`` and
  ``{"error": "<text>"}`` (the documented convention) become that text, the latter with
  ``is_error``; ``{"error": <object>}`` becomes its canonical JSON with ``is_error``; any other
  object becomes its canonical JSON text. Render inverts this: error text goes under ``"error"``;
  other text that is the canonical JSON of a non-empty object is sent as that object, anything else
  as ``{"output": text}``. Images/files in a result travel as ``functionResponse.parts``
  (multimodal function responses) after the text; several text parts are joined, and a text part
  after an attachment is moved before it (Gemini has one response object per result).
  ``name`` is required on the wire (G9). ``ToolResultPart.name`` is kept only when it differs
  from the name of the call it answers (else it is None, as in every other shape); render takes
  it from the call. An empty ``output``/``error`` string is no text part.
* Parts and fields without a neutral part (``executableCode``, ``codeExecutionResult``,
  ``videoMetadata``, unknown members of a ``functionCall``...) and non-function tools
  (``googleSearch``, ``codeExecution``...) are kept in ``params["gemini.extras"]``. Other top-level
  keys (``generationConfig``, ``safetySettings``, ``toolConfig``, ``cachedContent``) are params.
* The model is part of the URL, not the body: ``Transcript.model`` is neither read nor written.
* Not carried, by design: ``ImagePart.detail``, provider item ids (``item_id``, ``wire_id``), the
  ``empty_tool_calls`` flag. A message ``name`` or another provider's reasoning artifact raises.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
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
    leading_system_count,
    require_assistant,
    share_reasoning_tokens,
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

__all__ = [
    "ADAPTER",
    "CALL_ID_PREFIX",
    "CAPABILITIES",
    "RESULT_ID_PREFIX",
    "parse_request",
    "parse_response",
    "render_request",
]

SHAPE: Final = "gemini"
CALL_ID_PREFIX: Final = "gemini-call-"
RESULT_ID_PREFIX: Final = "gemini-result-"
_BODY_KEYS: Final = frozenset(
    {"contents", "systemInstruction", "system_instruction", "tools", "model"}
)
# The data member of a part, camelCase first; exactly one per part.
_DATA_KEYS: Final[dict[str, str]] = {
    "text": "text",
    "inlineData": "inlineData",
    "inline_data": "inlineData",
    "fileData": "fileData",
    "file_data": "fileData",
    "functionCall": "functionCall",
    "function_call": "functionCall",
    "functionResponse": "functionResponse",
    "function_response": "functionResponse",
    "executableCode": "executableCode",
    "executable_code": "executableCode",
    "codeExecutionResult": "codeExecutionResult",
    "code_execution_result": "codeExecutionResult",
    "toolCall": "toolCall",
    "tool_call": "toolCall",
    "toolResponse": "toolResponse",
    "tool_response": "toolResponse",
}
_RAW_DATA: Final = frozenset({"executableCode", "codeExecutionResult", "toolCall", "toolResponse"})
_SIGNATURE_KEYS: Final = ("thoughtSignature", "thought_signature")
_DECLARATION_KEYS: Final = frozenset(
    {"name", "description", "parameters", "parametersJsonSchema", "parameters_json_schema"}
)

CAPABILITIES: Final = ShapeCapabilities(
    reasoning_origins=frozenset({"gemini"}),
    merge_policy="function_call_turns",  # G1 (G4 contested, not enforced by the default profile)
)


def _first(wire: Wire, *keys: str) -> Wire:
    """The member under the first present spelling (``inlineData`` or ``inline_data``)."""
    for key in keys:
        if wire.has(key):
            return wire.get(key)
    return wire.get(keys[0])


# ----------------------------------------------------------------------------------- parsing


class _Linker:
    """Synthesizes call ids and links id-less responses to the previous model turn's calls."""

    def __init__(self, tag: str) -> None:
        self.tag = tag
        self.previous_calls: list[ToolCallPart] = []
        self.answered: set[str] = set()
        self.call_n = 0
        self.result_n = 0

    def call_id(self, given: str | None) -> str:
        n, self.call_n = self.call_n, self.call_n + 1
        return given if given is not None else f"{CALL_ID_PREFIX}{self.tag}-{n}"

    def result_id(self, given: str | None, name: str | None) -> tuple[str, str | None]:
        """``(call id, name to keep)``: the name is kept only when it differs from the call's."""
        n, self.result_n = self.result_n, self.result_n + 1
        if given is not None:
            self.answered.add(given)
            same = any(c.id == given and c.name == name for c in self.previous_calls)
            return given, None if same else name
        for call in self.previous_calls:
            if call.id not in self.answered and call.name == name:
                self.answered.add(call.id)
                return call.id, None
        return f"{RESULT_ID_PREFIX}{self.tag}-{n}", name


def _map_blob(data: Wire, key: str, extras: MessageExtras, at: int) -> ImagePart | FilePart:
    """``inlineData``/``fileData`` (also inside ``functionResponse.parts``)."""
    inline = key == "inlineData"
    mime = _first(data, "mimeType", "mime_type")
    media_type = mime.str_() if inline else mime.opt_str()
    payload = data.get("data").str_() if inline else _first(data, "fileUri", "file_uri").str_()
    source: Literal["base64", "url"] = "base64" if inline else "url"
    name = _first(data, "displayName", "display_name").opt_str()
    known = frozenset(
        {"mimeType", "mime_type", "data", "fileUri", "file_uri", "displayName", "display_name"}
    )
    unknown = extra_members(data, known)
    if unknown:
        extras.add_fields((at,), {key: unknown})
    if media_type is not None and media_type.startswith("image/"):
        if name is not None:
            extras.add_fields((at,), {key: {"displayName": name}})
        return ImagePart(source=source, data=payload, media_type=media_type)
    return FilePart(source=source, data=payload, media_type=media_type, filename=name)


def _map_response_content(
    response: Wire, parts: Wire
) -> tuple[tuple[TextPart | ImagePart | FilePart, ...], bool]:
    """``(content, is_error)`` of a functionResponse (see the module docstring)."""
    value = response.obj() if not response.is_null else {}
    content: list[TextPart | ImagePart | FilePart] = []
    is_error = False
    if set(value) in ({"output"}, {"error"}):
        key = next(iter(value))
        is_error = key == "error"
        inner = value[key]
        if isinstance(inner, str):
            if inner:  # an empty output/error is no text at all
                content.append(TextPart(inner))
        elif key == "error":
            content.append(TextPart(canonical_of(response.get(key))))
        else:
            content.append(TextPart(canonical_of(response)))
    elif value:
        content.append(TextPart(canonical_of(response)))
    for k, item in enumerate(parts.items() if not parts.is_null else []):
        item.obj()
        blob_key = (
            "inlineData" if (item.has("inlineData") or item.has("inline_data")) else "fileData"
        )
        blob = _first(item, blob_key, "inline_data" if blob_key == "inlineData" else "file_data")
        if not blob.present:
            raise item.fail("a functionResponse part holds inlineData or fileData")
        scratch = MessageExtras()
        content.append(_map_blob(blob, blob_key, scratch, k))
        if scratch:
            raise item.fail("functionResponse.parts carry fields this parser cannot keep")
    return tuple(content), is_error


def _map_part(
    part: Wire, role: Role, linker: _Linker, extras: MessageExtras, at: int
) -> list[Part]:
    """The neutral parts of one wire part (a signature comes first); [] when kept raw."""
    part.obj()
    present = [k for k in part.key_names() if k in _DATA_KEYS]
    if len(present) != 1:
        found = ", ".join(present) or "none"
        raise part.fail(
            "a part holds exactly one of text, inlineData, fileData, functionCall, "
            f"functionResponse, executableCode, codeExecutionResult (found: {found})"
        )
    key = present[0]
    kind = _DATA_KEYS[key]
    data = part.get(key)
    signature = _first(part, *_SIGNATURE_KEYS)
    if kind in _RAW_DATA:
        canonical_of(part)
        extras.add_raw((at,), dict(part.obj()))
        return []
    if role != "assistant" and (signature.present or part.get("thought").bool_()):
        culprit = signature if signature.present else part.get("thought")
        raise culprit.fail("only model turns carry thoughts and thought signatures")
    if part.get("thought").bool_():
        if kind != "text":
            raise part.get("thought").fail("a thought part holds text")
        data.str_()
        return [ReasoningPart(origin=SHAPE, data=canonical_of(part))]
    known = frozenset({key, *_SIGNATURE_KEYS, "thought"})
    extras.add_fields((at,), extra_members(part, known))
    out: list[Part] = []
    if signature.present:
        out.append(ReasoningPart(SHAPE, canonical_json({"thoughtSignature": signature.str_()})))
    if kind == "text":
        out.append(TextPart(data.str_()))
    elif kind in {"inlineData", "fileData"}:
        out.append(_map_blob(data, kind, extras, at))
    elif kind == "functionCall":
        if role != "assistant":
            raise data.fail("a functionCall belongs in a model turn")
        args = data.get("args")
        if not args.is_null:
            args.obj()
        unknown = extra_members(data, frozenset({"id", "name", "args"}))
        if unknown:
            extras.add_fields((at,), {"functionCall": unknown})
        out.append(
            ToolCallPart(
                id=linker.call_id(data.get("id").opt_str()),
                name=data.get("name").str_(),
                arguments=canonical_of(args) if not args.is_null else "{}",
            )
        )
    else:  # functionResponse
        if role != "user":
            raise data.fail("a functionResponse belongs in a user turn")
        name = data.get("name").opt_str()
        content, is_error = _map_response_content(data.get("response"), data.get("parts"))
        unknown = extra_members(data, frozenset({"id", "name", "response", "parts"}))
        if unknown:
            extras.add_fields((at,), {"functionResponse": unknown})
        call_id, kept_name = linker.result_id(data.get("id").opt_str(), name)
        out.append(
            ToolResultPart(call_id=call_id, content=content, is_error=is_error, name=kept_name)
        )
    return out


def _map_content(content: Wire, role: Role, linker: _Linker) -> tuple[Message, MessageExtras]:
    extras = MessageExtras()
    parts: list[Part] = []
    for j, part in enumerate(content.get("parts").items()):
        parts.extend(_map_part(part, role, linker, extras, j))
    return turn_message(role, parts), extras


_ROLES: Final[dict[str, Role]] = {"user": "user", "model": "assistant", "function": "user"}
_PLAIN_ROLES: Final[dict[str, Role]] = {"user": "user", "model": "assistant"}


def _plain_content(value: Any) -> tuple[Role, str] | None:
    """``(role, text)`` of a content that is a user or model role and one part of text alone
    (``map_messages``); None for every other content."""
    if type(value) is not dict or len(value) != 2:
        return None
    wire_role, parts = value.get("role"), value.get("parts")
    role = _PLAIN_ROLES.get(wire_role) if type(wire_role) is str else None
    if role is None or type(parts) is not list or len(parts) != 1:
        return None
    part = parts[0]
    if type(part) is not dict or len(part) != 1 or type(text := part.get("text")) is not str:
        return None
    return role, text


def _map_tools(tools: Wire, extras: Extras) -> tuple[ToolSpec, ...]:
    out: list[ToolSpec] = []
    schema_keys: dict[str, str] = {}
    seen: set[str] = set()
    for k, tool in enumerate(tools.items()):
        tool.obj()
        declarations = _first(tool, "functionDeclarations", "function_declarations")
        rest = extra_members(tool, frozenset({"functionDeclarations", "function_declarations"}))
        if rest:
            extras.raw_tools.append((k, rest))
        for declaration in declarations.items() if declarations.present else []:
            name = unique_tool_name(declaration.get("name"), seen)
            json_schema = _first(declaration, "parametersJsonSchema", "parameters_json_schema")
            openapi = declaration.get("parameters")
            schema = json_schema if json_schema.present else openapi
            if schema.present:
                schema.obj()
                parameters = canonical_of(schema)
                if not json_schema.present:
                    schema_keys[name] = "parameters"  # OpenAPI subset: rendered back as such
            else:
                parameters = canonical_json({"type": "object"})
                schema_keys[name] = "none"
            out.append(
                ToolSpec(
                    name=name,
                    description=declaration.get("description").opt_str() or "",
                    parameters=parameters,
                )
            )
            extras.keep_tool_fields(name, declaration, _DECLARATION_KEYS)
    if schema_keys:
        extras.values["schema_keys"] = schema_keys
    return tuple(out)


def parse_request(body: Mapping[str, Any]) -> Transcript:
    """A generateContent body as a transcript; ParseError with ``contents[3].parts[0]`` paths."""
    root = Wire.root(body)
    root.obj()
    extras = Extras(SHAPE)
    messages: list[Message] = []
    per_message: list[MessageExtras] = []
    system = _first(root, "systemInstruction", "system_instruction")
    if system.present:
        system.obj()
        system_role = system.get("role").opt_str()
        if system_role is not None:
            extras.values["system_role"] = system_role
        parts: list[Part] = []
        system_extras = MessageExtras()
        for j, part in enumerate(system.get("parts").items()):
            text = part.get("text")
            if not text.present:
                raise part.fail("systemInstruction parts hold text")
            system_extras.add_fields((j,), extra_members(part, frozenset({"text"})))
            parts.append(TextPart(text.str_()))
        messages.append(Message(role="system", parts=with_summaries(parts, "system")))
        per_message.append(system_extras)

    def walk(content: Wire) -> tuple[Message, MessageExtras]:
        content.obj()
        wire_role = content.get("role")
        role: Role = "user"
        if wire_role.present:
            role = _ROLES[wire_role.choice(tuple(_ROLES), "role (G7: user, model)")]
        linker = _Linker(str(len(messages)))
        # the calls of the content before (the system instruction holds none)
        linker.previous_calls = list(messages[-1].tool_calls) if messages else []
        return _map_content(content, role, linker)

    map_messages(root.get("contents"), messages, per_message, _plain_content, walk)
    tools = _map_tools(root.get("tools"), extras) if not root.get("tools").is_null else ()
    return extras.transcript(messages, per_message, tools, params_without(root, _BODY_KEYS))


def parse_response(body: Mapping[str, Any]) -> Message:
    """The first candidate's content of a generateContent response."""
    root = Wire.root(body)
    root.obj()
    candidates = root.get("candidates")
    if candidates.is_null or candidates.value == []:
        reason = root.get("promptFeedback").value
        raise candidates.fail(f"the response has no candidates (promptFeedback: {reason!r})")
    candidate = candidates.items()[0]
    content = candidate.get("content")
    if not content.present:
        reason = candidate.get("finishReason").value
        raise content.fail(f"the candidate has no content (finishReason: {reason!r})")
    content.obj()
    if content.get("role").present:
        content.get("role").choice(("model",), "role")
    tag = root.get("responseId").opt_str()
    if tag is None:
        tag = hashlib.sha256(canonical_of(content).encode()).hexdigest()[:12]
    message, extras = _map_content(content, "assistant", _Linker(tag))
    extras.refuse_in_response(
        "part",
        "code execution, video metadata...",
        lambda position: f"{content.where}.parts[{position[0]}]",
    )
    return _with_thought_tokens(message, body.get("usageMetadata"))


def _with_thought_tokens(message: Message, usage: object) -> Message:
    """``message`` with the response's thought tokens on its signature parts (shared evenly)."""
    count = usage.get("thoughtsTokenCount") if isinstance(usage, Mapping) else None
    if not isinstance(count, int) or isinstance(count, bool) or count <= 0:
        return message
    indexes = [
        i
        for i, p in enumerate(message.parts)
        if isinstance(p, ReasoningPart) and "thoughtSignature" in p.value()
    ]
    return share_reasoning_tokens(message, indexes, count)


# --------------------------------------------------------------------------------- rendering


_unsupported: Final = partial(unsupported_part, SHAPE)


def _is_synthetic(call_id: str) -> bool:
    return call_id.startswith((CALL_ID_PREFIX, RESULT_ID_PREFIX))


def _render_blob(part: ImagePart | FilePart, i: int, j: int) -> dict[str, Any]:
    if part.source == "file_id":
        raise _unsupported(
            f"a provider file id cannot be sent to Gemini; upload it and use its URI ({part.kind})",
            i,
            j,
        )
    if part.media_type is None:
        raise _unsupported(f"Gemini needs a mimeType for every {part.kind}", i, j)
    blob: dict[str, Any] = {"mimeType": part.media_type}
    if part.source == "base64":
        blob["data"] = part.data
        key = "inlineData"
    else:
        blob["fileUri"] = part.data
        key = "fileData"
    if isinstance(part, FilePart) and part.filename is not None:
        blob["displayName"] = part.filename
    return {key: blob}


def _response_object(part: ToolResultPart) -> dict[str, Any]:
    text = "".join(c.text for c in part.content if isinstance(c, TextPart))
    has_text = any(isinstance(c, TextPart) for c in part.content)
    if part.is_error:
        try:
            value = loads_json(text)
        except json.JSONDecodeError:
            value = None
        if value is not None and not isinstance(value, str) and canonical_json(value) == text:
            return {"error": value}
        return {"error": text}
    if not has_text:
        return {}
    try:
        value = loads_json(text)
    except json.JSONDecodeError:
        value = None
    wrapped = isinstance(value, dict) and (
        not value
        or set(value) == {"error"}
        or (set(value) == {"output"} and isinstance(value["output"], str))
    )
    if isinstance(value, dict) and not wrapped and canonical_json(value) == text:
        return value
    return {"output": text}


def _render_result(
    part: ToolResultPart, names: Mapping[str, str], i: int, j: int
) -> dict[str, Any]:
    name = part.name if part.name is not None else names.get(part.call_id)
    if not name:
        raise _unsupported(
            f"tool result {part.call_id!r} has no function name and no call in the transcript "
            "to take it from (G9: function_response.name cannot be empty)",
            i,
            j,
        )
    response: dict[str, Any] = {"name": name, "response": _response_object(part)}
    if not _is_synthetic(part.call_id):
        response["id"] = part.call_id
    blobs = [_render_blob(c, i, j) for c in part.content if not isinstance(c, TextPart)]
    if blobs:
        response["parts"] = blobs
    return {"functionResponse": response}


def _render_part(part: Part, names: Mapping[str, str], i: int, j: int) -> dict[str, Any]:
    match part:
        case TextPart() | SummaryPart():
            return {"text": text_of(part)}
        case ImagePart() | FilePart():
            return _render_blob(part, i, j)
        case ToolCallPart():
            args = call_arguments(part, SHAPE, i, j, field="functionCall.args", object_only=True)
            call: dict[str, Any] = {"name": part.name, "args": args}
            if not _is_synthetic(part.id):
                call["id"] = part.id
            return {"functionCall": call}
        case ToolResultPart():
            return _render_result(part, names, i, j)
        case ReasoningPart():
            if part.origin != SHAPE:
                raise _unsupported(
                    f"{with_article(part.origin)} reasoning artifact cannot be sent to Gemini", i, j
                )
            return dict(part.value())
        case _:
            assert_never(part)


def _render_parts(message: Message, names: Mapping[str, str], i: int) -> list[Any]:
    """Wire parts of one message; a signature artifact is folded into the part after it."""
    if message.name is not None:
        raise _unsupported(f"Gemini contents carry no participant name ({message.name!r})", i)
    out: list[Any] = []
    pending: tuple[int, str] | None = None
    for j, part in enumerate(message.parts):
        wire = _render_part(part, names, i, j)
        if isinstance(part, ReasoningPart) and "thought" not in wire:
            if pending is not None or set(wire) != {"thoughtSignature"}:
                raise _unsupported(
                    "a thought signature must be followed by the part it signs", i, j
                )
            pending = (j, wire["thoughtSignature"])
            continue
        if pending is not None:
            if isinstance(part, ReasoningPart):
                raise _unsupported("a thought signature cannot sign a thought part", i, j)
            wire["thoughtSignature"] = pending[1]
            pending = None
        out.append(wire)
    if pending is not None:
        raise _unsupported(
            "a thought signature is the last part: the part it signed is missing (G6)",
            i,
            pending[0],
        )
    return out


def _nested_parts(part: dict[str, Any]) -> list[Any] | None:
    del part
    return None


def _render_tools(transcript: Transcript, extras: Extras) -> list[Any]:
    schema_keys = extras.values.get("schema_keys") or {}
    declarations: list[Any] = []
    for tool in transcript.tools:
        declaration: dict[str, Any] = {"name": tool.name}
        if tool.description:
            declaration["description"] = tool.description
        key = schema_keys.get(tool.name, "parametersJsonSchema")
        if key != "none":
            declaration[key] = tool.parameters_value()
        declaration.update(extras.tool_fields.get(tool.name, {}))
        declarations.append(declaration)
    tools: list[Any] = [{"functionDeclarations": declarations}] if declarations else []
    return extras.insert_raw_tools(tools)


def _call_names(messages: Sequence[Message]) -> dict[str, str]:
    return {c.id: c.name for m in messages for c in m.tool_calls}


def render_request(transcript: Transcript) -> dict[str, Any]:
    """A generateContent body; leading system/developer messages become ``systemInstruction``."""
    extras = Extras.from_transcript(SHAPE, transcript)
    per_message = list(extras.for_messages(transcript.messages))
    names = _call_names(transcript.messages)
    body: dict[str, Any] = {}
    system, turns = split_system(
        transcript.messages,
        lambda m, i: Extras.apply(_render_parts(m, names, i), per_message[i], _nested_parts),
        SHAPE,
        "Gemini has no system role inside contents (G7: user, model); move the text to "
        "the leading system messages or into a user turn",
    )
    if leading_system_count(transcript.messages):
        instruction: dict[str, Any] = {"parts": system}
        if "system_role" in extras.values:
            instruction["role"] = extras.values["system_role"]
        body["systemInstruction"] = instruction
    body["contents"] = [
        {"role": "model" if m.role == "assistant" else "user", "parts": parts} for m, parts in turns
    ]
    tools = _render_tools(transcript, extras)
    if tools:
        body["tools"] = tools
    body.update(body_params(transcript, _BODY_KEYS))
    return body


def render_response(message: Message, meta: ResponseMeta) -> dict[str, Any]:
    """A generateContent response with one candidate and ``usageMetadata``."""
    require_assistant(message, "a response holds a model message")
    parts = _render_parts(message, _call_names([message]), 0)
    return {
        "candidates": [
            {
                "content": {"role": "model", "parts": parts},
                "finishReason": meta.stop_reason or "STOP",
                "index": 0,
            }
        ],
        "usageMetadata": meta.usage("promptTokenCount", "candidatesTokenCount", "totalTokenCount"),
        "modelVersion": meta.model,
        "responseId": meta.response_id,
    }


def forced_tools(settings: Mapping[str, Any]) -> ForcedTools | None:
    """What ``toolConfig.functionCallingConfig`` obliges the model to call (either case): mode
    ``ANY`` one of ``allowedFunctionNames``, or any function without that list; None for
    ``AUTO``, ``NONE``, ``VALIDATED`` (a call or text, the model's choice) or no choice."""
    config = _either(settings, "toolConfig", "tool_config")
    calling = (
        _either(config, "functionCallingConfig", "function_calling_config")
        if isinstance(config, Mapping)
        else None
    )
    if not isinstance(calling, Mapping):
        return None
    mode = calling.get("mode")
    if not isinstance(mode, str) or mode.upper() != "ANY":
        return None
    names = _either(calling, "allowedFunctionNames", "allowed_function_names")
    if names is None or names == []:
        return "any"
    return frozenset(map(choice_name, names if isinstance(names, list) else [names]))


def _either(holder: Mapping[str, Any], camel: str, snake: str) -> Any:
    """``holder``'s member under its camelCase name or its snake_case one (protobuf JSON takes
    both)."""
    return holder[camel] if camel in holder else holder.get(snake)


ADAPTER: Final = ShapeAdapter(
    name=SHAPE,
    label="gemini",
    messages_key="contents",
    content_key="parts",
    model_in_url=True,
    default_model="gemini-2.5-flash",
    capabilities=CAPABILITIES,
    options=GenerationOptions(
        "maxOutputTokens",
        "temperature",
        "topP",
        "stopSequences",
        "generationConfig",
        output_schemas=tuple(
            (config, schema)
            for config in ("generationConfig", "generation_config")  # the API takes both
            for schema in (
                "responseSchema",
                "response_schema",
                "responseJsonSchema",
                "response_json_schema",
            )
        ),
        server_context=(("cachedContent",), ("cached_content",)),  # stored content it reads
        either_case=True,
        bookkeeping=("labels",),
        defaults={
            "generationConfig.candidateCount": 1,
            "generationConfig.responseMimeType": "text/plain",
            "toolConfig": {"functionCallingConfig": {"mode": "AUTO"}},
        },
        tool_settings=("toolConfig",),
        forced_tools=forced_tools,
    ),
    parse_request=parse_request,
    render_request=render_request,
    parse_response=parse_response,
    render_response=render_response,
)
