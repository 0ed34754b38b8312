"""Retry on a provider's context-length error: tighten one notch, at most twice, never loop.

Our token counts are estimates for some providers (token-counting.md section 5), so a request we
believed to fit can still come back as "prompt is too long". ``call_with_context_retry`` recognises
each shape's context-length error (rules C10/C10a, R10, A18, G8, B9 in provider-rules.md), lowers
the budget by the reported overflow (scaled to our counter) or, when the error carries no numbers,
by enough to drop one more unit of the middle, re-assembles, and calls again.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, TypeVar

from reference_impl.assembler import assemble
from reference_impl.budget import BudgetSnapshot
from reference_impl.config import MAX_RETRIES_CAP, AssemblyConfig
from reference_impl.errors import ConfigError, ContextAssemblyError
from reference_impl.ledger import Ledger
from reference_impl.memory import MemoryItem
from reference_impl.metrics import AssemblyMetrics
from reference_impl.summary import Summarizer
from reference_impl.tokens import TokenCounter
from reference_impl.transcript import ShapeName, Transcript

__all__ = ["ContextOverflow", "call_with_context_retry", "context_overflow"]

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class ContextOverflow:
    """A recognised context-length error; ``prompt_tokens``/``limit`` when the message says so."""

    rule: str
    prompt_tokens: int | None = None
    limit: int | None = None


# (rule id, pattern); a pattern's named groups ``prompt``/``limit`` give numbers when present.
_OPENAI: Final = (
    (
        "C10",
        re.compile(
            r"maximum context length is (?P<limit>\d+) tokens.*?(?:resulted in|requested(?: about)?|contains at least) (?P<prompt>\d+)",
            re.DOTALL,
        ),
    ),
    ("C10", re.compile(r"maximum context length")),
    ("R10", re.compile(r"exceeds the context window")),
    ("PP2", re.compile(r"total length of all messages is too long")),  # Perplexity (recorded)
)
_ANTHROPIC: Final = (
    ("A18", re.compile(r"prompt is too long: (?P<prompt>\d+) tokens > (?P<limit>\d+) maximum")),
    ("A18", re.compile(r"prompt is too long")),
)
_GEMINI: Final = (
    (
        "G8",
        re.compile(
            r"input token count \((?P<prompt>\d+)\) exceeds the maximum number of tokens allowed \((?P<limit>\d+)\)"
        ),
    ),
    ("G8", re.compile(r"exceeds the maximum number of tokens")),
)
_BEDROCK: Final = (("B9", re.compile(r"Input is too long")), *_ANTHROPIC, *_OPENAI)
PATTERNS: Final[Mapping[str, tuple[tuple[str, re.Pattern[str]], ...]]] = {
    "openai-chat": _OPENAI,
    "openai-responses": _OPENAI,
    "anthropic-messages": _ANTHROPIC,
    "gemini": _GEMINI,
    "bedrock-converse": _BEDROCK,
}
_CODES: Final = frozenset({"context_length_exceeded"})


def _texts(error: object) -> tuple[list[str], list[str]]:
    """Messages and codes found in an SDK exception or an error body (any nesting)."""
    messages: list[str] = []
    codes: list[str] = []

    def walk(value: object, depth: int) -> None:
        if depth > 4:
            return
        if isinstance(value, str):
            messages.append(value)
        elif isinstance(value, Mapping):
            codes.extend(
                value[key] for key in ("code", "type", "status") if isinstance(value.get(key), str)
            )
            for key in ("message", "error", "Message", "detail"):
                if key in value:
                    walk(value[key], depth + 1)
        elif isinstance(value, BaseException):
            messages.append(str(value))
            codes.extend(
                getattr(value, attr)
                for attr in ("code", "type")
                if isinstance(getattr(value, attr, None), str)
            )
            for attr in ("body", "message", "response_body"):
                found = getattr(value, attr, None)
                if found is not None and found is not value:
                    walk(found, depth + 1)

    walk(error, 0)
    return messages, codes


def context_overflow(error: object, shape: str | None = None) -> ContextOverflow | None:
    """The context-length error of ``shape`` (any shape when None) in ``error``, or None."""
    messages, codes = _texts(error)
    table = PATTERNS.get(shape, ()) if shape else tuple(p for ps in PATTERNS.values() for p in ps)
    for text in messages:
        for rule, pattern in table:
            found = pattern.search(text)
            if found:
                groups = found.groupdict()
                prompt = int(groups["prompt"]) if groups.get("prompt") else None
                limit = int(groups["limit"]) if groups.get("limit") else None
                return ContextOverflow(rule, prompt, limit)
    if shape in (None, "openai-chat", "openai-responses") and _CODES & set(codes):
        return ContextOverflow("C10")
    return None


def _tighter(total: int, overflow: ContextOverflow) -> int:
    """One notch tighter than ``total`` tokens of our own counter."""
    if overflow.prompt_tokens and overflow.limit and overflow.prompt_tokens > overflow.limit:
        # Scale the provider's limit into our counter's units, so the error's overflow is removed.
        scaled = math.floor(total * overflow.limit / overflow.prompt_tokens)
        return max(0, min(scaled, total - 1))
    return max(0, total - 1)  # drops at least one more unit of the middle


def call_with_context_retry(
    call: Callable[[dict[str, Any]], T],
    session: Transcript,
    config: AssemblyConfig | None = None,
    *,
    shape: ShapeName,
    max_retries: int | None = None,
    counter: TokenCounter | None = None,
    summarizer: Summarizer | None = None,
    ledger: Ledger | None = None,
    memory: Sequence[MemoryItem] = (),
    budget: BudgetSnapshot | int | None = None,
    metrics: AssemblyMetrics | None = None,
) -> T:
    """Assemble, render and ``call(body)``; on that shape's context-length error tighten one notch
    and try again, at most ``max_retries`` (<= 2, default ``config.max_retries``) more times.

    Other errors propagate unchanged. When the retries are used up, ``ContextAssemblyError`` with
    code ``context_assembly_over_budget`` is raised from the provider's last error.
    """
    config = config if config is not None else AssemblyConfig()
    retries: object = config.max_retries if max_retries is None else max_retries
    if (
        isinstance(retries, bool)
        or not isinstance(retries, int)
        or not 0 <= retries <= MAX_RETRIES_CAP
    ):
        raise ConfigError(
            f"must be an integer from 0 to {MAX_RETRIES_CAP} (got {retries!r}); retries never loop",
            where="max_retries",
        )
    current: BudgetSnapshot | int | None = budget
    last: ContextOverflow | None = None
    for attempt in range(retries + 1):
        assembly = assemble(
            session,
            config,
            shape=shape,
            counter=counter,
            summarizer=summarizer,
            ledger=ledger,
            memory=memory,
            budget=current,
            metrics=metrics,
        )
        try:
            return call(assembly.render(shape))
        except Exception as exc:
            overflow = context_overflow(exc, shape)
            if overflow is None:
                raise
            last = overflow
            if attempt == retries:
                raise ContextAssemblyError(
                    f"the provider still reported a context-length error ({overflow.rule}) "
                    f"after {retries} retr{'y' if retries == 1 else 'ies'}",
                    code="context_assembly_over_budget",
                    details={"attempts": attempt + 1, "rule": overflow.rule},
                ) from exc
            total = assembly.report.total_after or 0
            current = _tighter(total, overflow)
    raise AssertionError(
        f"unreachable: retry loop ended without a result ({last})"
    )  # pragma: no cover
