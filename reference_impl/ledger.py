"""The side-effect ledger: the execution layer's record of side-effecting tool calls.

It comes from tool metadata at execution time, never from a model's text or summary. The summary
step copies it verbatim, and the pairing repair step reads ``status`` to know which calls the
platform itself timed out or cancelled.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias, get_args

from reference_impl.errors import TranscriptError

__all__ = ["Ledger", "LedgerEntry", "LedgerStatus"]

LedgerStatus: TypeAlias = Literal["succeeded", "failed", "pending", "timed_out", "cancelled"]
_STATUSES = get_args(LedgerStatus)


@dataclass(frozen=True, slots=True)
class LedgerEntry:
    """One tool execution as the execution layer recorded it."""

    tool: str
    call_id: str
    status: LedgerStatus
    idempotency_key: str | None = None
    resource_id: str | None = None
    side_effect: bool = True

    def to_dict(self) -> dict[str, Any]:
        """The entry as JSON data (absent fields left out)."""
        out: dict[str, Any] = {"tool": self.tool, "call_id": self.call_id, "status": self.status}
        if self.idempotency_key is not None:
            out["idempotency_key"] = self.idempotency_key
        if self.resource_id is not None:
            out["resource_id"] = self.resource_id
        if not self.side_effect:
            out["side_effect"] = False
        return out


@dataclass(frozen=True, slots=True)
class Ledger:
    """The execution layer's record of tool calls, in call order."""

    entries: tuple[LedgerEntry, ...] = ()

    def __iter__(self) -> Iterator[LedgerEntry]:
        return iter(self.entries)

    def __len__(self) -> int:
        return len(self.entries)

    def for_call(self, call_id: str) -> LedgerEntry | None:
        """The entry of tool call ``call_id``, or None."""
        for entry in self.entries:
            if entry.call_id == call_id:
                return entry
        return None

    @property
    def side_effects(self) -> tuple[LedgerEntry, ...]:
        """The entries of side-effecting calls (pinned by ``side_effect_ledger``)."""
        return tuple(e for e in self.entries if e.side_effect)

    def to_list(self) -> list[dict[str, Any]]:
        """The entries as JSON data."""
        return [e.to_dict() for e in self.entries]

    @staticmethod
    def from_list(items: Iterable[Mapping[str, Any]], *, where: str = "ledger") -> Ledger:
        """Read ledger entries; a named error with the entry index for anything malformed."""
        if isinstance(items, str | bytes | Mapping) or not isinstance(items, Iterable):
            raise TranscriptError(
                f"expected a list of ledger entries, got {type(items).__name__}", where=where
            )
        entries: list[LedgerEntry] = []
        for i, item in enumerate(items):
            at = f"{where}[{i}]"
            if not isinstance(item, Mapping):
                raise TranscriptError("a ledger entry must be an object", where=at)
            unknown = set(item) - {
                "tool",
                "call_id",
                "status",
                "idempotency_key",
                "resource_id",
                "side_effect",
            }
            if unknown:
                raise TranscriptError(f"unknown keys {sorted(unknown)}", where=at)
            for key in ("tool", "call_id", "status"):
                if not isinstance(item.get(key), str):
                    raise TranscriptError(f"{key!r} must be a string", where=at)
            if item["status"] not in _STATUSES:
                raise TranscriptError(
                    f"status {item['status']!r} is not one of {', '.join(_STATUSES)}", where=at
                )
            for key in ("idempotency_key", "resource_id"):
                if item.get(key) is not None and not isinstance(item[key], str):
                    raise TranscriptError(f"{key!r} must be a string", where=at)
            side_effect = item.get("side_effect", True)
            if not isinstance(side_effect, bool):
                raise TranscriptError("'side_effect' must be true or false", where=at)
            entries.append(
                LedgerEntry(
                    tool=item["tool"],
                    call_id=item["call_id"],
                    status=item["status"],
                    idempotency_key=item.get("idempotency_key"),
                    resource_id=item.get("resource_id"),
                    side_effect=side_effect,
                )
            )
        return Ledger(tuple(entries))
