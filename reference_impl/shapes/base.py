"""The contract every wire shape implements, and the registry of shapes.

A shape module exposes ``ADAPTER: ShapeAdapter``. ``parse_request`` turns a request body into a
transcript (raising ``ParseError`` with a JSON path), ``render_request`` does the reverse (raising
``UnsupportedPartError`` for what the shape cannot carry), and the response pair does the same for
one assistant reply (used by the emulator and by the SDK round trips).

The adapter is the one home of every per-shape fact: what the shape can carry and how its turns
must be ordered (``ShapeCapabilities``), where its body keeps the messages, whether the model
travels in the URL, the model a case names by default, its short label, the wire names of the
generation options (``GenerationOptions``, for ``convert``), and the provider-specific rendering
hook (cache breakpoints). Other modules read these; none repeats them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal, TypeAlias

from reference_impl.transcript import (
    Message,
    ReasoningOrigin,
    Role,
    ShapeName,
    Transcript,
    canonical_json,
)

__all__ = [
    "CacheBreakpoints",
    "ForcedTools",
    "GenerationOptions",
    "MergePolicy",
    "ResponseMeta",
    "ShapeAdapter",
    "ShapeCapabilities",
    "choice_name",
]

MergePolicy: TypeAlias = Literal["strict", "function_call_turns"]
"""How a shape's default profile wants same-side turns in a row (``steps.normalize``)."""

CacheBreakpoints: TypeAlias = Callable[
    [dict[str, Any], Transcript, Sequence[int], int], dict[str, Any]
]
"""``(body, view, boundaries, limit) -> body``: a copy of the rendered ``body`` of ``view`` with
provider cache markers placed after the view messages at ``boundaries`` (sorted indices of stable
boundaries chosen by the policy), at most ``limit`` markers in all (those already present count)."""


ForcedTools: TypeAlias = frozenset[str] | Literal["any"]
"""What a request's tool choice obliges the model to do: call one of the named tools, or ``"any"``
tool the request offers (``GenerationOptions.forced_tools``)."""

_EVERY_ATTACHMENT: Final = frozenset({"text", "image", "file"})


def choice_name(value: object) -> str:
    """The tool a tool choice's entry names (``value`` when it is a string, else its canonical
    JSON: an entry the reader does not know names itself, so that two choices compare by it)."""
    return value if isinstance(value, str) else canonical_json(value)


@dataclass(frozen=True, slots=True)
class ShapeCapabilities:
    """What a shape can carry, as data (used by strategies, converters and checks).

    The defaults are what the provider-native shapes (Anthropic Messages, Gemini, Bedrock
    Converse) have in common; a shape states where it differs (the two OpenAI shapes start from
    ``_openai_common.OPENAI_CAPABILITIES``)."""

    system_roles: frozenset[Role] = frozenset({"system"})
    """Roles that system text may take (``system``/``developer``); top-level for Anthropic etc."""
    system_in_messages: bool = False
    """False when system text is a top-level field (Anthropic ``system``, Gemini, Bedrock)."""
    reasoning_origins: frozenset[ReasoningOrigin] = frozenset()
    """Whose reasoning artifacts the shape carries back (its own provider's, DeepSeek's ...)."""
    raw_arguments: bool = False
    """True when tool-call arguments travel as text (kept byte-exact); False for objects."""
    tool_result_attachments: frozenset[str] = _EVERY_ATTACHMENT
    user_attachments: frozenset[str] = _EVERY_ATTACHMENT
    message_names: bool = False
    tool_result_errors: bool = True
    """True when a result can be flagged ``is_error`` on the wire."""
    tool_result_names: bool = True
    """True when a result can carry its tool's name (Chat ``name``, Gemini
    ``functionResponse.name``, dropped by the others); False where the renderer refuses one
    (Responses ``function_call_output``)."""
    reasoning_opens_message: bool = False
    """True when the shape's reasoning artifacts must open the assistant message that carries tool
    calls (Anthropic A13; Claude on Bedrock relays the rule, B10)."""
    merge_policy: MergePolicy | None = None
    """Same-side turns in a row the default profile rejects: ``strict`` alternation (Bedrock B3),
    ``function_call_turns`` (a functionCall turn after a user or functionResponse turn, Gemini
    G1); None when nothing needs merging."""


def camel_case(name: str) -> str:
    """``name`` in camelCase (``max_output_tokens`` -> ``maxOutputTokens``; a camelCase name is
    itself): how protobuf JSON reads a snake_case key."""
    head, *rest = name.split("_")
    return head + "".join(word[:1].upper() + word[1:] for word in rest)


@dataclass(frozen=True, slots=True)
class GenerationOptions:
    """Where a shape's request keeps the generation options every shape has, by their wire names
    (``ctxconf convert`` maps them from one shape to another): an output cap, temperature, top-p
    and stop sequences (None: the shape has no such option)."""

    max_output: str
    temperature: str
    top_p: str
    stop: str | None
    container: str | None = None
    """The object that holds them (Gemini ``generationConfig``, Bedrock ``inferenceConfig``); None
    when they are top-level keys of the body."""
    max_output_aliases: tuple[str, ...] = ()
    """Other top-level names of the output cap (Chat Completions ``max_completion_tokens``)."""
    max_output_required: bool = False
    """True when the provider refuses a generation request without the output cap (Anthropic
    ``max_tokens``, rule A26): ``Assembly.render`` then fills it from the output reserve."""
    output_cap_floor: Callable[[Mapping[str, Any]], tuple[str, int] | None] | None = None
    """The setting a body's output cap must exceed, as its name and value (Anthropic's enabled
    thinking budget, rule A27; None when the body has none): ``Assembly.render`` fills no cap at
    or under it."""
    output_schemas: tuple[tuple[str, ...], ...] = ()
    """Where a request carries a structured-output schema, as key paths from the body's top, one
    per spelling the API takes (Chat ``response_format``, Responses ``text.format``, Gemini
    ``generationConfig.responseSchema``): text the model reads beside the messages and tools,
    which OpenAI documents as costing prompt tokens and no message count includes."""
    server_context: tuple[tuple[str, ...], ...] = ()
    """Keys that pull context stored on the provider's side into the request (Responses
    ``previous_response_id``, ``conversation``, a stored ``prompt``): text the model reads that
    the body does not hold."""
    transport: tuple[str, ...] = ()
    """Top-level keys about how the reply is delivered, not what the model does (``stream``):
    ``settings_kept`` lets an assembler set them as its caller needs."""
    bookkeeping: tuple[str, ...] = ()
    """Top-level keys about caching, storage, billing and tracing, not what the model reads or
    does (``prompt_cache_key``, ``store``, ``metadata``, ``service_tier``): ``settings_kept``
    lets an assembler add them."""
    defaults: Mapping[str, Any] = field(default_factory=dict)
    """Settings at the value the provider documents as its default (``n: 1``, Responses
    ``truncation: "disabled"``, Anthropic ``thinking: {"type": "disabled"}``), by key, a member
    of a setting as ``key.member`` (the option container's ``generationConfig.candidateCount``,
    Anthropic's ``tool_choice.disable_parallel_tool_use``): ``settings_kept`` lets an assembler
    add them (a framework that writes every default)."""
    either_case: bool = False
    """True when the API takes its keys in snake_case as well as camelCase (Gemini, protobuf
    JSON): ``generation_config`` is ``generationConfig`` (``camel_case``)."""
    tool_settings: tuple[str, ...] = ()
    """Top-level keys whose value depends on the tools offered (``tool_choice``, Bedrock's and
    Gemini's ``toolConfig``): ``settings_kept`` lets one be left out with all the tools or with
    the tools it names (an assembler that drops tool schemas must drop a choice naming one)."""
    forced_tools: Callable[[Mapping[str, Any]], ForcedTools | None] | None = None
    """What the tool choice among a body's settings obliges the model to call (Chat
    ``"required"``, Anthropic ``{"type": "any"}``, Gemini mode ``ANY``, Bedrock ``{"tool": ...}``
    ...), or None when it obliges no call (``auto``, ``none``, no choice): ``nothing_invented``
    fails a request that obliges a call its session's request did not."""

    def output_cap(self, body: Mapping[str, Any]) -> object:
        """The output cap ``body`` carries under any of its names (None when it has none)."""
        holder = body.get(self.container) if self.container else body
        if not isinstance(holder, Mapping):
            return None
        for key in (self.max_output, *self.max_output_aliases):
            if holder.get(key) is not None:
                return holder[key]
        return None

    def with_output_cap(self, body: dict[str, Any], tokens: int) -> dict[str, Any]:
        """``body`` with the output cap set to ``tokens`` (a new dict; ``body`` is not changed)."""
        if self.container is None:
            return {**body, self.max_output: tokens}
        holder = body.get(self.container)
        inner = dict(holder) if isinstance(holder, Mapping) else {}
        return {**body, self.container: {**inner, self.max_output: tokens}}


@dataclass(frozen=True, slots=True)
class ResponseMeta:
    """What a provider response carries besides the message (for the emulator and round trips)."""

    model: str
    response_id: str = "resp_emulated"
    input_tokens: int = 0
    output_tokens: int = 0
    stop_reason: str | None = None

    @property
    def total_tokens(self) -> int:
        """Input plus output: the usage total that Chat, Responses, Gemini and Bedrock report."""
        return self.input_tokens + self.output_tokens

    def usage(
        self, input_key: str, output_key: str, total_key: str | None = None
    ) -> dict[str, int]:
        """The token counts under a provider's own usage keys, in that order; the total only for
        a provider that reports one (Anthropic does not)."""
        total = {} if total_key is None else {total_key: self.total_tokens}
        return {input_key: self.input_tokens, output_key: self.output_tokens, **total}


@dataclass(frozen=True, slots=True)
class ShapeAdapter:
    """One wire shape: its facts, its capabilities and its mapping functions (module docstring)."""

    name: ShapeName
    label: str
    """The short name a report's matrix column uses (``chat``, ``anthropic``...)."""
    messages_key: str
    """The body key that holds the message list (``messages``, ``input``, ``contents``)."""
    model_in_url: bool
    """True when the model travels in the request URL rather than the body (Gemini, Bedrock)."""
    default_model: str
    """The model a conformance case names when its scenario does not: it picks the reference
    counter's encoding and is part of a recorded request's skeleton."""
    capabilities: ShapeCapabilities
    options: GenerationOptions
    parse_request: Callable[[Mapping[str, Any]], Transcript]
    render_request: Callable[[Transcript], dict[str, Any]]
    parse_response: Callable[[Mapping[str, Any]], Message]
    render_response: Callable[[Message, ResponseMeta], dict[str, Any]]
    place_cache_breakpoints: CacheBreakpoints | None = None
    """The shape's prompt-cache markers (Anthropic ``cache_control``); None when it has none."""
    content_key: str = "content"
    """The member of a wire message that holds its blocks (Gemini: ``parts``)."""
