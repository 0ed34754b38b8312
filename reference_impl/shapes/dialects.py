"""Gateway dialects of openai-chat, as data: what each OpenAI-compatible server does differently.

Each :class:`Dialect` lists its differences from first-party OpenAI Chat Completions with the
evidence for them (rows of provider-rules.md section 6; sections 1-2 for OpenAI itself). Validators
read the data; :func:`render_for_dialect` applies only what a renderer can legitimately do:

* ``content: null`` becomes ``""`` where a server refuses null (Ollama, LM Studio, llama.cpp);
  the two mean the same thing.
* It never renames tool-call ids on its own. Ids a dialect refuses (Mistral: exactly nine
  characters ``a-zA-Z0-9``) raise ``UnsupportedPartError`` unless the caller passes
  ``remap_ids=True``; then every id is rewritten consistently on the calls and their results.
* Everything else a dialect refuses (a user message right after a tool message on Mistral,
  DeepSeek ``reasoning_content`` elsewhere, ``name`` outside user messages on xAI, an empty
  ``tool_calls`` list) raises ``UnsupportedPartError`` naming the message and part.

>>> get_dialect("mistral").tool_id_pattern
'[a-zA-Z0-9]{9}'
"""

from __future__ import annotations

import hashlib
import re
import string
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, Final, Literal, TypeAlias

from reference_impl.errors import ShapeError, UnsupportedPartError
from reference_impl.shapes import openai_chat
from reference_impl.transcript import (
    Message,
    Part,
    ReasoningPart,
    ToolCallPart,
    ToolResultPart,
    Transcript,
)

__all__ = [
    "DIALECTS",
    "Dialect",
    "Evidence",
    "dialect_names",
    "get_dialect",
    "remap_tool_ids",
    "render_for_dialect",
]

EvidenceClass: TypeAlias = Literal["documented", "recorded", "observed", "inferred"]
PairingCheck: TypeAlias = Literal["server", "template", "lenient"]
ErrorEnvelope: TypeAlias = Literal["openai", "openrouter", "ollama", "dashscope", "litellm"]

ALPHANUMERIC: Final = string.ascii_letters + string.digits


@dataclass(frozen=True, slots=True)
class Evidence:
    """One row of provider-rules.md backing a difference."""

    rule: str
    evidence: EvidenceClass
    source: str


@dataclass(frozen=True, slots=True)
class Dialect:
    """One gateway's variation of openai-chat. Defaults are first-party OpenAI behaviour."""

    name: str
    description: str
    base_shape: Literal["openai-chat"] = "openai-chat"
    aliases: tuple[str, ...] = ()
    tool_id_length: int | None = None
    """Exact length tool-call ids must have (Mistral: 9); None when any id is accepted."""
    tool_id_alphabet: str | None = None
    """Characters tool-call ids may use (Mistral: ``a-zA-Z0-9``); None when any."""
    forbid_user_after_tool: bool = False
    """A ``user`` message may not directly follow a ``tool`` message (Mistral)."""
    null_content_allowed: bool = True
    """``content: null`` on an assistant tool-call message is accepted (C5)."""
    name_only_on_user: bool = False
    """``name`` is accepted on user messages only (xAI)."""
    reasoning_content: bool = False
    """DeepSeek ``reasoning_content`` is taken back (and required in thinking mode)."""
    empty_tool_calls_allowed: bool = False
    """``tool_calls: []`` is accepted (C4 says no for OpenAI)."""
    pairing: PairingCheck = "server"
    """Who enforces call/result pairing: the server, the model's chat template, or nobody."""
    strict_alternation: bool = False
    """User and assistant must alternate after the system messages (Perplexity). Data for the
    validators: a renderer cannot fix an order, and ``render_for_dialect`` does not check it."""
    error_envelope: ErrorEnvelope = "openai"
    error_texts: tuple[tuple[str, str], ...] = ()
    """(rule, message text as seen): the dialect's wording of a rule, for validators."""
    evidence: tuple[Evidence, ...] = ()

    @property
    def tool_id_pattern(self) -> str | None:
        """The full-match regex for tool-call ids, or None when the dialect takes any id."""
        if self.tool_id_length is None and self.tool_id_alphabet is None:
            return None
        if self.tool_id_alphabet is None:
            chars = "."
        elif self.tool_id_alphabet == ALPHANUMERIC:
            chars = "[a-zA-Z0-9]"
        else:
            chars = f"[{re.escape(self.tool_id_alphabet)}]"
        count = "+" if self.tool_id_length is None else f"{{{self.tool_id_length}}}"
        return chars + count

    def accepts_tool_id(self, call_id: str) -> bool:
        """Whether the gateway accepts ``call_id`` as a tool call id."""
        pattern = self.tool_id_pattern
        return pattern is None or re.fullmatch(pattern, call_id) is not None

    def error_text(self, rule: str) -> str | None:
        """The dialect's own wording of ``rule`` (``"C1"``, ``"tool_id"``...), if recorded."""
        return dict(self.error_texts).get(rule)


_S6: Final = "provider-rules.md §6"

DIALECTS: Final[Mapping[str, Dialect]] = {
    d.name: d
    for d in (
        Dialect(
            name="openai",
            description="First-party OpenAI Chat Completions: the base every dialect varies.",
            error_texts=(
                (
                    "C1",
                    (
                        "An assistant message with 'tool_calls' must be followed by tool messages "
                        "responding to each 'tool_call_id'. The following tool_call_ids did not have "
                        "response messages: {ids}"
                    ),
                ),
                (
                    "C2",
                    (
                        "Invalid parameter: messages with role 'tool' must be a response to a "
                        "preceeding message with 'tool_calls'."
                    ),
                ),
                (
                    "C4",
                    (
                        "Invalid 'messages[{index}].tool_calls': empty array. Expected an array with "
                        "minimum length 1, but got an empty array instead."
                    ),
                ),
                ("C5", "Invalid value for 'content': expected a string, got null."),
            ),
            evidence=(
                Evidence(
                    "provider-rules.md §1 C1",
                    "observed",
                    "github.com/router-for-me/CLIProxyAPI/issues/2798",
                ),
                Evidence(
                    "provider-rules.md §1 C2",
                    "observed",
                    "github.com/smarter-sh/smarter/issues/264",
                ),
                Evidence(
                    "provider-rules.md §1 C4",
                    "observed",
                    "github.com/home-assistant/core/pull/118577",
                ),
            ),
        ),
        Dialect(
            name="azure",
            aliases=("azure-openai",),
            description="Azure OpenAI: OpenAI's rules (C1/C2); the C2 text is spelled 'preceding'.",
            error_texts=(
                (
                    "C2",
                    (
                        "Invalid parameter: messages with role 'tool' must be a response to a "
                        "preceding message with 'tool_calls'."
                    ),
                ),
            ),
            evidence=(
                Evidence(
                    f"{_S6} Azure OpenAI; §1 C2a",
                    "observed",
                    "github.com/langchain-ai/task_mAIstro/issues/1",
                ),
            ),
        ),
        Dialect(
            name="deepseek",
            description=(
                "DeepSeek chat: takes reasoning_content back on assistant messages (thinking "
                "mode requires it on tool-call turns); C1/C2 with its own wording."
            ),
            reasoning_content=True,
            error_texts=(
                (
                    "C1",
                    (
                        "An assistant message with 'tool_calls' must be followed by tool messages "
                        "responding to each 'tool_call_id'. (insufficient tool messages following "
                        "tool_calls message)"
                    ),
                ),
                (
                    "C2",
                    (
                        "Messages with role 'tool' must be a response to a preceding message with "
                        "'tool_calls'"
                    ),
                ),
                (
                    "reasoning_content",
                    (
                        "Missing `reasoning_content` field in the assistant message at message index "
                        "{index}. For more information, please refer to "
                        "https://api-docs.deepseek.com/guides/thinking_mode#tool-calls"
                    ),
                ),
            ),
            evidence=(
                Evidence(
                    f"{_S6} DeepSeek (chat) C1 equivalent",
                    "observed",
                    "github.com/agno-agi/agno/issues/3105",
                ),
                Evidence(
                    f"{_S6} DeepSeek (chat) C2 equivalent",
                    "observed",
                    "github.com/FoundationAgents/OpenManus/issues/23",
                ),
                Evidence(
                    f"{_S6} DeepSeek (chat, thinking) reasoning_content passed back",
                    "recorded",
                    "recordings/gateways/deepseek_chat_thinking_tools.yaml; github.com/deepseek-ai/DeepSeek-V3/issues/1053",
                ),
            ),
        ),
        Dialect(
            name="mistral",
            description=(
                "Mistral La Plateforme: tool-call ids of exactly 9 characters a-zA-Z0-9; no user "
                "message directly after a tool message; calls and results counted as a multiset."
            ),
            tool_id_length=9,
            tool_id_alphabet=ALPHANUMERIC,
            forbid_user_after_tool=True,
            error_texts=(
                ("user_after_tool", "Unexpected role 'user' after role 'tool'"),
                ("tool_after_user", "Unexpected role 'tool' after role 'user'"),
                (
                    "tool_id",
                    "Tool call id was {id} but must be a-z, A-Z, 0-9, with a length of 9.",
                ),
                ("C1", "Not the same number of function calls and responses"),
                (
                    "last_role",
                    (
                        "Expected last role User or Tool (or Assistant with prefix True) for serving "
                        "but got assistant"
                    ),
                ),
            ),
            evidence=(
                Evidence(
                    f"{_S6} Mistral: no user directly after tool",
                    "observed",
                    "github.com/BerriAI/litellm/issues/17761",
                ),
                Evidence(
                    f"{_S6} Mistral: tool_call_id 9 alphanumerics",
                    "observed",
                    "github.com/nearai/ironclaw/issues/1241",
                ),
                Evidence(
                    f"{_S6} Mistral: calls and responses as a multiset",
                    "observed",
                    "github.com/567-labs/instructor/issues/724",
                ),
                Evidence(
                    f"{_S6} Mistral: last role user or tool",
                    "observed",
                    "github.com/0xPlaygrounds/rig/pull/1130",
                ),
            ),
        ),
        Dialect(
            name="vllm",
            description=(
                "vLLM's OpenAI-compatible server: pairing (if any) is enforced by the model's "
                "chat template; Mistral-family templates demand strict user/assistant alternation."
            ),
            pairing="template",
            error_texts=(
                (
                    "alternation",
                    (
                        "After the optional system message, conversation roles must alternate "
                        "user/assistant/user/assistant/..."
                    ),
                ),
            ),
            evidence=(
                Evidence(
                    f"{_S6} vLLM template-enforced alternation",
                    "observed",
                    "github.com/vllm-project/vllm/issues/6862",
                ),
                Evidence(
                    f"{_S6} vLLM / local servers: pairing by template",
                    "inferred",
                    "provider-rules.md §6",
                ),
            ),
        ),
        Dialect(
            name="ollama",
            description=(
                'Ollama\'s OpenAI-compatible endpoint: refuses content null (send ""); the local '
                "server does not validate pairing, ollama.com rejects unknown result ids."
            ),
            null_content_allowed=False,
            pairing="lenient",
            error_envelope="ollama",
            error_texts=(
                ("C5", "invalid message content type: <nil>"),
                ("C2", "Unexpected tool call id {id} in tool results"),
            ),
            evidence=(
                Evidence(
                    f"{_S6} Ollama (OpenAI-compat) content null",
                    "observed",
                    "github.com/SAIL-Research-Lab/cheetahclaws/pull/72",
                ),
                Evidence(
                    f"{_S6} Ollama (ollama.com) unknown tool call id",
                    "observed",
                    "github.com/onyx-dot-app/onyx/pull/8522",
                ),
                Evidence(
                    f"{_S6} Ollama (local) lenient pairing",
                    "observed",
                    "github.com/vierisid/jarvis/pull/344",
                ),
            ),
        ),
        Dialect(
            name="lmstudio",
            aliases=("lm-studio",),
            description="LM Studio's local server: refuses content null on assistant tool-call messages.",
            null_content_allowed=False,
            pairing="template",
            error_texts=(
                (
                    "C5",
                    "Invalid 'content': 'content' field must be a string or an array of objects.",
                ),
            ),
            evidence=(
                Evidence(
                    f"{_S6} LM Studio content null",
                    "observed",
                    "github.com/lmstudio-ai/lmstudio-bug-tracker/issues/261",
                ),
            ),
        ),
        Dialect(
            name="llamacpp",
            aliases=("llama-cpp", "llama.cpp"),
            description="llama.cpp server: refuses content null; a tool call without type is a 500.",
            null_content_allowed=False,
            pairing="template",
            error_texts=(
                ("C5", "Expected 'content' to be a string or an array"),
                ("tool_call_type", "Missing tool call type"),
            ),
            evidence=(
                Evidence(
                    f"{_S6} llama.cpp content null / tool call type",
                    "observed",
                    "github.com/ggml-org/llama.cpp/issues/13471",
                ),
            ),
        ),
        Dialect(
            name="openrouter",
            description=(
                "OpenRouter: passes the upstream provider's status and wraps its error text in "
                "error.metadata.raw; the rules are the routed provider's."
            ),
            error_envelope="openrouter",
            error_texts=(
                ("upstream", "Provider returned error"),
                (
                    "context_window",
                    (
                        "This endpoint's maximum context length is {limit} tokens. However, you "
                        "requested about {tokens} tokens ({tokens} of text input). Please reduce the "
                        "length of either one, or use the context-compression plugin to compress "
                        "your prompt automatically."
                    ),
                ),
            ),
            evidence=(
                Evidence(
                    f"{_S6} OpenRouter wraps provider errors",
                    "recorded",
                    "recordings/gateways/openrouter_429_provider_error.yaml",
                ),
                Evidence(
                    f"{_S6} OpenRouter context window",
                    "recorded",
                    "recordings-more/gateways/openrouter_400_context_length__ruby_llm.yml",
                ),
            ),
        ),
        Dialect(
            name="qwen",
            aliases=("dashscope",),
            description=(
                "Qwen on Alibaba DashScope: C1/C2 behind a '<400> InternalError.Algo."
                "InvalidParameter:' prefix with double quotes; rejects an empty tool_calls list."
            ),
            error_envelope="dashscope",
            error_texts=(
                (
                    "C1",
                    (
                        '<400> InternalError.Algo.InvalidParameter: An assistant message with "tool_calls" '
                        'must be followed by tool messages responding to each "tool_call_id". The '
                        "following tool_call_ids did not have response messages: message[{index}].role"
                    ),
                ),
                (
                    "C2",
                    (
                        '<400> InternalError.Algo.InvalidParameter: messages with role "tool" must be a '
                        'response to a preceeding message with "tool_calls".'
                    ),
                ),
                ("C4", "Empty tool_calls is not supported in message"),
            ),
            evidence=(
                Evidence(
                    f"{_S6} Qwen / DashScope C1/C2 prefix",
                    "observed",
                    "github.com/QwenLM/qwen-code/issues/606",
                ),
                Evidence(
                    f"{_S6} Qwen empty tool_calls",
                    "observed",
                    "github.com/smallmain/vscode-unify-chat-provider/pull/65",
                ),
            ),
        ),
        Dialect(
            name="groq",
            description=(
                "Groq: OpenAI-shaped; tool validation failures come back as tool_use_failed with "
                "the failed generation in the body."
            ),
            error_texts=(
                ("tool_use_failed", "Tool choice is required, but model did not call a tool"),
            ),
            evidence=(
                Evidence(
                    f"{_S6} Groq tool_use_failed",
                    "recorded",
                    "a public recording kept aside for independent verification",
                ),
            ),
        ),
        Dialect(
            name="xai",
            aliases=("grok",),
            description="xAI Grok: `name` is accepted on user messages only.",
            name_only_on_user=True,
            error_texts=(("name", "Only messages of role 'user' can have a name."),),
            evidence=(
                Evidence(
                    f"{_S6} xAI / Grok name only on user",
                    "observed",
                    "github.com/BerriAI/litellm/issues/9720",
                ),
            ),
        ),
        Dialect(
            name="moonshot",
            aliases=("kimi",),
            description="Moonshot / Kimi: OpenAI's C1 with a lower-case first letter.",
            error_texts=(
                (
                    "C1",
                    (
                        "an assistant message with 'tool_calls' must be followed by tool messages "
                        "responding to each 'tool_call_id'. The following tool_call_ids did not have "
                        "response messages: {ids}"
                    ),
                ),
            ),
            evidence=(
                Evidence(
                    f"{_S6} Moonshot / Kimi C1",
                    "observed",
                    "github.com/MoonshotAI/kimi-cli/issues/2405",
                ),
            ),
        ),
        Dialect(
            name="perplexity",
            description="Perplexity: user and assistant roles must alternate after the system messages.",
            strict_alternation=True,
            error_texts=(
                (
                    "alternation",
                    (
                        "After the (optional) system message(s), user and assistant roles should be "
                        "alternating."
                    ),
                ),
            ),
            evidence=(
                Evidence(
                    f"{_S6} Perplexity strict alternation",
                    "observed",
                    "github.com/FoundationAgents/OpenManus/issues/580",
                ),
            ),
        ),
        Dialect(
            name="litellm",
            description=(
                "LiteLLM proxy/SDK: forwards the upstream provider's rules and wraps its errors "
                '("code": "400" as a string); translates the developer role per backend.'
            ),
            error_envelope="litellm",
            error_texts=(
                (
                    "C1",
                    (
                        "litellm.BadRequestError: OpenAIException - An assistant message with "
                        "'tool_calls' must be followed by tool messages responding to each "
                        "'tool_call_id'."
                    ),
                ),
            ),
            evidence=(
                Evidence(
                    f"{_S6} LiteLLM wraps upstream errors",
                    "observed",
                    "github.com/BerriAI/litellm/issues/10083",
                ),
                Evidence(
                    f"{_S6} LiteLLM developer role",
                    "documented",
                    "docs.litellm.ai/docs/completion/developer_role",
                ),
            ),
        ),
        Dialect(
            name="gemini-openai",
            description=(
                "Gemini's OpenAI-compatible endpoint: a tool message's function name is derived "
                "from its tool_call_id, so an orphan result fails even with a name (G9)."
            ),
            error_texts=(
                (
                    "C2",
                    (
                        "GenerateContentRequest.contents[{index}].parts[0].function_response.name: "
                        "Name cannot be empty."
                    ),
                ),
            ),
            evidence=(
                Evidence(
                    "provider-rules.md §4 G9; §6 closing notes",
                    "observed",
                    "github.com/xinnan-tech/xiaozhi-esp32-server/pull/3287",
                ),
            ),
        ),
    )
}

_ALIASES: Final[Mapping[str, str]] = {a: d.name for d in DIALECTS.values() for a in d.aliases}


def dialect_names() -> tuple[str, ...]:
    """The names of every dialect, in registry order."""
    return tuple(DIALECTS)


def get_dialect(name: str) -> Dialect:
    """A dialect by name or alias (``azure-openai`` -> ``azure``); a named error otherwise."""
    key = name.strip().lower()
    found = DIALECTS.get(_ALIASES.get(key, key))
    if found is None:
        raise ShapeError(
            f"unknown dialect {name!r}; known dialects: {', '.join(DIALECTS)}", where="dialect"
        )
    return found


# ------------------------------------------------------------------------------------ render


def render_for_dialect(
    transcript: Transcript, dialect: Dialect | str, *, remap_ids: bool = False
) -> dict[str, Any]:
    """An openai-chat body for ``dialect``; ``UnsupportedPartError`` for what it refuses."""
    spec = get_dialect(dialect) if isinstance(dialect, str) else dialect
    if remap_ids:
        transcript, _ = remap_tool_ids(transcript, spec)
    _check(transcript, spec)
    body = openai_chat.render_request(transcript)
    if not spec.null_content_allowed:
        # Ollama / LM Studio / llama.cpp (§6): "" says the same as null and is accepted.
        for message in body["messages"]:
            if message.get("content", "") is None:
                message["content"] = ""
    return body


def _fail(spec: Dialect, index: int, part: int | None, what: str) -> UnsupportedPartError:
    where = f"messages[{index}]" + (f".parts[{part}]" if part is not None else "")
    at = f"message {index}" + (f", part {part}" if part is not None else "")
    return UnsupportedPartError(f"dialect {spec.name!r} refuses {what} ({at})", where=where)


def _check(transcript: Transcript, spec: Dialect) -> None:
    previous: Message | None = None
    for index, message in enumerate(transcript.messages):
        after_tool = previous is not None and previous.role == "tool"
        if spec.forbid_user_after_tool and message.role == "user" and after_tool:
            raise _fail(
                spec,
                index,
                None,
                f"a user message directly after a tool message ({spec.error_text('user_after_tool')!r});"
                " an assistant turn must come between",
            )
        if spec.name_only_on_user and message.name is not None and message.role != "user":
            raise _fail(
                spec,
                index,
                None,
                f"a name on a {message.role} message ({spec.error_text('name')!r})",
            )
        if message.empty_tool_calls and not spec.empty_tool_calls_allowed:
            raise _fail(spec, index, None, "an empty tool_calls list (C4: omit the field instead)")
        for j, part in enumerate(message.parts):
            _check_part(spec, index, j, part)
        previous = message


def _check_part(spec: Dialect, index: int, j: int, part: Part) -> None:
    if isinstance(part, ReasoningPart) and part.origin == "deepseek" and not spec.reasoning_content:
        raise _fail(spec, index, j, "DeepSeek reasoning_content")
    if isinstance(part, ToolResultPart) and spec.name_only_on_user and part.name is not None:
        raise _fail(spec, index, j, f"a name on a tool result ({spec.error_text('name')!r})")
    call_id = (
        part.id
        if isinstance(part, ToolCallPart)
        else (part.call_id if isinstance(part, ToolResultPart) else None)
    )
    if call_id is not None and not spec.accepts_tool_id(call_id):
        raise _fail(
            spec,
            index,
            j,
            f"tool call id {call_id!r}: ids must match {spec.tool_id_pattern} "
            "(pass remap_ids=True to rewrite them consistently)",
        )


def remap_tool_ids(transcript: Transcript, dialect: Dialect) -> tuple[Transcript, dict[str, str]]:
    """Rewrite every id ``dialect`` refuses, the same way on calls and results.

    New ids are derived from the old ones (sha256, then the dialect's alphabet), so the same
    session always maps the same way; they never collide with ids already in the transcript.
    Returns the new transcript and the mapping old -> new (for reading the reply's results back).
    """
    if dialect.tool_id_pattern is None:
        return transcript, {}
    ids: list[str] = []
    for message in transcript.messages:
        for part in message.parts:
            if isinstance(part, ToolCallPart):
                ids.append(part.id)
            elif isinstance(part, ToolResultPart):
                ids.append(part.call_id)
    taken = set(ids)
    mapping: dict[str, str] = {}
    for old in ids:
        if old in mapping or dialect.accepts_tool_id(old):
            continue
        new = _derive_id(old, dialect, taken)
        mapping[old] = new
        taken.add(new)
    if not mapping:
        return transcript, {}
    messages = tuple(
        replace(m, parts=tuple(_renamed(p, mapping) for p in m.parts)) for m in transcript.messages
    )
    return transcript.with_messages(messages), mapping


def _renamed(part: Part, mapping: Mapping[str, str]) -> Part:
    if isinstance(part, ToolCallPart) and part.id in mapping:
        return replace(part, id=mapping[part.id])
    if isinstance(part, ToolResultPart) and part.call_id in mapping:
        return replace(part, call_id=mapping[part.call_id])
    return part


def _derive_id(old: str, dialect: Dialect, taken: set[str]) -> str:
    alphabet = dialect.tool_id_alphabet or ALPHANUMERIC
    length = dialect.tool_id_length or 24
    salt = 0
    while True:
        digest = int.from_bytes(hashlib.sha256(f"{old}\x00{salt}".encode()).digest(), "big")
        chars = []
        for _ in range(length):
            digest, k = divmod(digest, len(alphabet))
            chars.append(alphabet[k])
        candidate = "".join(chars)
        if candidate not in taken and dialect.accepts_tool_id(candidate):
            return candidate
        salt += 1
