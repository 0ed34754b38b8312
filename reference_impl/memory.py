"""Memory and ledger injections: pinned, labelled with their source, capped, counted in the prefix.

Injected text goes into ``system`` messages placed right after the session's own leading
system/developer text, so every shape can carry it where system text goes and the stable start of
the request is not interleaved with conversation turns. The label names the source so a model (and
a reviewer) can tell injected memory from the operator's instructions.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from reference_impl.errors import ConfigError
from reference_impl.ledger import Ledger
from reference_impl.transcript import Message, TextPart

__all__ = [
    "INJECTION_ID_PREFIX",
    "LEDGER_SOURCE",
    "MemoryItem",
    "ledger_message",
    "memory_messages",
]

LEDGER_SOURCE = "side_effect_ledger"


@dataclass(frozen=True, slots=True)
class MemoryItem:
    """One piece of long-term memory to inject, with where it came from (``source``)."""

    source: str
    text: str

    def __post_init__(self) -> None:
        if not self.source or not self.source.strip():
            raise ConfigError("a memory item needs a non-empty source", where="memory.source")


INJECTION_ID_PREFIX: Final = "inject-"
"""How the id of every injected message (memory item, ledger note) begins."""


def _injection_id(kind: str, text: str) -> str:
    # Content-addressed ids: the same injection keeps the same id across turns (cache-stable).
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]
    return f"{INJECTION_ID_PREFIX}{kind}-{digest}"


def memory_messages(items: Sequence[MemoryItem], max_items: int) -> tuple[Message, ...]:
    """The first ``max_items`` memory items as labelled system messages (the cap keeps order)."""
    out: list[Message] = []
    for item in items[:max_items]:
        text = f"[memory source: {item.source}]\n{item.text}"
        out.append(Message("system", (TextPart(text),), id=_injection_id("memory", text)))
    return tuple(out)


def ledger_lines(ledger: Ledger) -> list[str]:
    """One line per side-effecting execution, from the ledger only (never from model text)."""
    return [
        f"- tool={e.tool} idempotency_key={e.idempotency_key or '-'} "
        f"resource_id={e.resource_id or '-'} status={e.status} call_id={e.call_id}"
        for e in ledger.side_effects
    ]


def ledger_message(ledger: Ledger) -> Message | None:
    """The pinned ledger as a labelled system message, or None when nothing had side effects."""
    lines = ledger_lines(ledger)
    if not lines:
        return None
    text = (
        f"[memory source: {LEDGER_SOURCE}]\n"
        "Side-effecting tools already executed (recorded by the execution layer):\n"
        + "\n".join(lines)
    )
    return Message("system", (TextPart(text),), id=_injection_id("ledger", text))
