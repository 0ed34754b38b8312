"""Summary replacement: the ``Summarizer`` protocol, a deterministic default and SDK-backed ones.

A summary replaces the middle of a session with one structured block. Its side-effect section is
always written from the execution ledger (tool, idempotency key, resource id, status), never from a
model's text, and it ends with a fixed instruction not to repeat completed side effects.

Everything a summarizer receives has first passed a redaction hook (API keys, bearer tokens, AWS
keys, private keys, ``password=`` ...). Model-backed summarizers take an explicit client object: this
module never reads credentials from the environment.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar, Final, Protocol, runtime_checkable

from reference_impl.errors import SummaryError
from reference_impl.ledger import Ledger
from reference_impl.memory import ledger_lines
from reference_impl.transcript import (
    FilePart,
    ImagePart,
    Message,
    ReasoningPart,
    SummaryPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
)
from reference_impl.transcript.model import INSTRUCTION_ROLES

__all__ = [
    "NO_REPEAT_LINE",
    "AnthropicSummarizer",
    "DeterministicSummarizer",
    "OpenAISummarizer",
    "Redactor",
    "Summarizer",
    "SummaryBlock",
    "SummaryError",
    "SummaryRequest",
    "redact_secrets",
    "summary_depth",
]

NO_REPEAT_LINE: Final = "Do not repeat completed side-effecting tools without new user intent."
REDACTED: Final = "[REDACTED]"

Redactor = Callable[[str], str]

# Each pattern keeps what identifies the kind of secret and replaces the secret itself. The
# triggers are lower-case substrings that any match must contain: a text is searched with a
# pattern only when its lower-cased form holds one of them, a C-speed test that spares most
# texts the regular expressions (summaries see large middles; redaction was most of their cost).
_SECRET_PATTERNS: Final[tuple[tuple[re.Pattern[str], str, tuple[str, ...]], ...]] = (
    (
        re.compile(
            r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----.*?-----END [A-Z0-9 ]*PRIVATE KEY-----",
            re.DOTALL,
        ),
        "-----BEGIN PRIVATE KEY-----" + REDACTED + "-----END PRIVATE KEY-----",
        ("private key-----",),
    ),
    (re.compile(r"(?i)\b(bearer)\s+[A-Za-z0-9._~+/=-]{8,}"), r"\1 " + REDACTED, ("bearer",)),
    (re.compile(r"\bsk-(?:ant-|proj-)?[A-Za-z0-9_-]{16,}"), "sk-" + REDACTED, ("sk-",)),
    (re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"), "AKIA" + REDACTED, ("akia", "asia")),
    (
        re.compile(r"\bgh[pousr]_[A-Za-z0-9]{30,}\b"),
        "gh_" + REDACTED,
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_"),
    ),
    (re.compile(r"\bAIza[0-9A-Za-z_-]{35}\b"), "AIza" + REDACTED, ("aiza",)),
    (re.compile(r"\bxox[abprs]-[A-Za-z0-9-]{10,}"), "xox-" + REDACTED, ("xox",)),
    (
        re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"),
        REDACTED,
        ("eyj",),
    ),
    (
        re.compile(
            r"(?i)\b(password|passwd|pwd|secret|api[_-]?key|access[_-]?token|auth[_-]?token"
            r"|client[_-]?secret|aws_secret_access_key)(\"?\s*[=:]\s*\"?)[^\s\"',;&]+"
        ),
        r"\1\2" + REDACTED,
        ("password", "passwd", "pwd", "secret", "api", "access", "auth", "client"),
    ),
)


def redact_secrets(text: str) -> str:
    """The default redaction hook: replaces credentials with ``[REDACTED]``."""
    lowered = text.lower()
    for pattern, replacement, triggers in _SECRET_PATTERNS:
        if any(trigger in lowered for trigger in triggers):
            text = pattern.sub(replacement, text)
            lowered = text.lower()
    return text


@dataclass(frozen=True, slots=True)
class SummaryRequest:
    """What a summarizer gets: the (redacted) middle, the ledger, the user's goal and limits."""

    messages: tuple[Message, ...]
    ledger: Ledger
    user_goal: str
    max_tokens: int
    timeout_s: float
    depth: int = 1
    """The depth the new summary will have (1 + the deepest summary it replaces, capped)."""


@dataclass(frozen=True, slots=True)
class SummaryBlock:
    """The structured summary text and who wrote it."""

    text: str
    summarizer: str
    depth: int = 1

    def message(self, message_id: str) -> Message:
        """The summary as a user message with id ``message_id``."""
        return Message("user", (SummaryPart(self.text),), id=message_id)


@runtime_checkable
class Summarizer(Protocol):
    """Turns the middle of a session into a structured summary (or raises SummaryError)."""

    def summarize(self, request: SummaryRequest) -> SummaryBlock:
        """The summary of ``request.messages``."""
        ...


_DEPTH = re.compile(r"^Summary of earlier conversation \(depth (\d+)\b", re.MULTILINE)


def summary_depth(text: str) -> int:
    """The depth written in a summary's header (1 when the header is absent: a foreign summary)."""
    found = _DEPTH.search(text)
    return int(found.group(1)) if found else 1


def redact_messages(messages: Sequence[Message], redact: Redactor) -> tuple[Message, ...]:
    """Messages with every text the summarizer could see passed through ``redact``.

    Attachments are replaced by a placeholder (a summarizer never needs the bytes); reasoning
    artifacts are dropped from the copy, since they are opaque provider data.
    """
    out: list[Message] = []
    for m in messages:
        parts: list[Any] = []
        for p in m.parts:
            if isinstance(p, TextPart):
                parts.append(TextPart(redact(p.text)))
            elif isinstance(p, SummaryPart):
                parts.append(SummaryPart(redact(p.text)))
            elif isinstance(p, ToolCallPart):
                parts.append(replace(p, arguments=redact(p.arguments)))
            elif isinstance(p, ToolResultPart):
                content = tuple(
                    TextPart(redact(c.text))
                    if isinstance(c, TextPart)
                    else TextPart("[attachment]")
                    for c in p.content
                )
                parts.append(replace(p, content=content))
            elif isinstance(p, ImagePart | FilePart):
                parts.append(TextPart("[attachment]"))
            elif isinstance(p, ReasoningPart):
                continue
        if m.role == "tool" and not parts:
            continue
        if not parts:
            parts.append(TextPart(""))
        if m.role in INSTRUCTION_ROLES:
            parts = [q if isinstance(q, TextPart | SummaryPart) else TextPart("") for q in parts]
        out.append(replace(m, parts=tuple(parts)))
    return tuple(out)


def _first_sentence(text: str, limit: int = 200) -> str:
    line = " ".join(text.split())
    cut = re.split(r"(?<=[.!?。！？])\s", line, maxsplit=1)[0]
    return cut if len(cut) <= limit else cut[: limit - 1] + "…"


# A question starts at the beginning or right after a sentence end. Anchoring the start keeps the
# scan linear: the unanchored pattern retried from every character of a long question-free text.
_QUESTION = re.compile(r"(?:^|(?<=[.!?。！？]))[^.!?。！？]*[?？]")


def _questions(text: str) -> list[str]:
    if "?" not in text and "？" not in text:
        return []
    line = " ".join(text.split())
    return [q.strip() for q in _QUESTION.findall(line) if q.strip()]


@dataclass(frozen=True, slots=True)
class DeterministicSummarizer:
    """The offline default: a structured block built from the messages and the ledger only.

    Decisions are the first sentence of each assistant text in the middle, open questions are
    question sentences from the middle; both keep the newest items when the block must shrink.
    The ledger section is never shortened.
    """

    max_decisions: int = 8
    max_questions: int = 4
    chars_per_token: float = 2.0
    """Size guard without a tokenizer: at most ``max_tokens * chars_per_token`` characters."""

    @property
    def name(self) -> str:
        """How reports name this summarizer."""
        return "deterministic"

    def summarize(self, request: SummaryRequest) -> SummaryBlock:
        """The newest decisions and open questions, read from the messages without a model."""
        # Only the newest items are kept: walk from the newest message and stop once both
        # sections are full, so a long middle is not scanned to its old end.
        decisions: list[str] = []
        questions: list[str] = []
        for m in reversed(request.messages):
            if len(decisions) >= self.max_decisions and len(questions) >= self.max_questions:
                break
            text = "".join(p.text for p in m.parts if isinstance(p, TextPart))
            if text.strip():
                if m.role in ("user", "assistant"):
                    questions.extend(reversed([_first_sentence(q) for q in _questions(text)]))
                if m.role == "assistant":
                    decisions.append(_first_sentence(text))
            for p in reversed(m.parts):
                if isinstance(p, SummaryPart):
                    decisions.extend(reversed(_carried_decisions(p.text)))
        decisions.reverse()
        questions.reverse()
        ledger = ledger_lines(request.ledger)
        budget_chars = int(request.max_tokens * self.chars_per_token)
        keep_d, keep_q = decisions[-self.max_decisions :], questions[-self.max_questions :]
        text = self._render(request, keep_d, keep_q, ledger)
        while len(text) > budget_chars and (keep_d or keep_q):
            # Shrink the free-text sections first, oldest items first; the ledger stays whole.
            if len(keep_d) >= len(keep_q) and keep_d:
                keep_d = keep_d[1:]
            else:
                keep_q = keep_q[1:]
            text = self._render(request, keep_d, keep_q, ledger)
        return SummaryBlock(text=text, summarizer=self.name, depth=request.depth)

    @staticmethod
    def _render(
        request: SummaryRequest, decisions: list[str], questions: list[str], ledger: list[str]
    ) -> str:
        counts = f"{len(request.messages)} messages replaced"
        lines = [f"Summary of earlier conversation (depth {request.depth}; {counts})."]
        lines.append(f"User goal: {_first_sentence(request.user_goal, 400) or '-'}")
        lines.append("Decisions:")
        lines.extend(f"- {d}" for d in decisions or ["-"])
        lines.append("Tools already executed with side effects (from the execution ledger):")
        lines.extend(ledger or ["- none recorded"])
        lines.append("Open questions:")
        lines.extend(f"- {q}" for q in questions or ["-"])
        lines.append(NO_REPEAT_LINE)
        return "\n".join(lines)


def _carried_decisions(summary_text: str) -> list[str]:
    """Decisions of an earlier summary, so a summary of a summary keeps them (bounded above)."""
    out: list[str] = []
    inside = False
    for line in summary_text.splitlines():
        if line == "Decisions:":
            inside = True
            continue
        if inside and line.startswith("- "):
            if line != "- -":
                out.append(line[2:])
            continue
        inside = False
    return out


# ------------------------------------------------------------------ model-backed summarizers

_INSTRUCTIONS: Final = (
    "You compress the middle of an agent conversation. Write plain text with exactly these "
    "sections: 'User goal:', 'Decisions:', 'Open questions:'. Do not list tool executions: "
    "the caller appends them from its own execution ledger. Be brief."
)


def _transcript_text(request: SummaryRequest) -> str:
    lines = [f"User goal: {request.user_goal}", "Conversation:"]
    for m in request.messages:
        for p in m.parts:
            if isinstance(p, TextPart | SummaryPart):
                lines.append(f"{m.role}: {p.text}")
            elif isinstance(p, ToolCallPart):
                lines.append(f"{m.role}: [call {p.name} {p.arguments}]")
            elif isinstance(p, ToolResultPart):
                flag = " error" if p.is_error else ""
                lines.append(f"{m.role}: [result{flag} {p.text}]")
    return "\n".join(lines)


def _finish(model_text: str, request: SummaryRequest, name: str) -> SummaryBlock:
    # The side-effect section always comes from the ledger, whatever the model wrote.
    header = f"Summary of earlier conversation (depth {request.depth}; by {name})."
    ledger = ledger_lines(request.ledger) or ["- none recorded"]
    text = "\n".join(
        [
            header,
            model_text.strip(),
            "Tools already executed with side effects (from the execution ledger):",
            *ledger,
            NO_REPEAT_LINE,
        ]
    )
    return SummaryBlock(text=text, summarizer=name, depth=request.depth)


@dataclass(frozen=True)
class _ClientSummarizer:
    """A summarizer backed by an explicit SDK client: ``_ask`` sends the redacted transcript and
    returns the model's text; naming, failures and the ledger section are shared."""

    client: Any
    model: str
    redact: Redactor = field(default=redact_secrets)
    vendor: ClassVar[str] = ""

    @property
    def name(self) -> str:
        """How reports name this summarizer."""
        return f"{self.vendor}:{self.model}"

    def summarize(self, request: SummaryRequest) -> SummaryBlock:
        """A summary written by the client's model; SummaryError when the call fails."""
        try:
            text = self._ask(self.redact(_transcript_text(request)), request)
        except Exception as exc:  # noqa: BLE001 - any SDK failure (timeout, 5xx, auth) is a summary failure
            raise SummaryError(f"summarizer {self.name} failed: {type(exc).__name__}") from None
        if not isinstance(text, str) or not text.strip():
            raise SummaryError(f"summarizer {self.name} returned no text")
        return _finish(text, request, self.name)

    def _ask(self, prompt: str, request: SummaryRequest) -> object:
        raise NotImplementedError


@dataclass(frozen=True)
class OpenAISummarizer(_ClientSummarizer):
    """Summarize with an explicit ``openai.OpenAI`` client (Chat Completions)."""

    vendor: ClassVar[str] = "openai"

    def _ask(self, prompt: str, request: SummaryRequest) -> object:
        response = self.client.chat.completions.create(
            model=self.model,
            messages=[
                {"role": "system", "content": _INSTRUCTIONS},
                {"role": "user", "content": prompt},
            ],
            max_tokens=request.max_tokens,
            timeout=request.timeout_s,
        )
        text: object = response.choices[0].message.content
        return text


@dataclass(frozen=True)
class AnthropicSummarizer(_ClientSummarizer):
    """Summarize with an explicit ``anthropic.Anthropic`` client (Messages)."""

    vendor: ClassVar[str] = "anthropic"

    def _ask(self, prompt: str, request: SummaryRequest) -> object:
        response = self.client.messages.create(
            model=self.model,
            max_tokens=request.max_tokens,
            system=_INSTRUCTIONS,
            messages=[{"role": "user", "content": prompt}],
            timeout=request.timeout_s,
        )
        return "".join(
            getattr(block, "text", "")
            for block in response.content
            if getattr(block, "type", "") == "text"
        )
