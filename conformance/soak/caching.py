"""Prompt-cache reuse between consecutive requests, and what the input costs.

A provider's prefix cache can only serve the part of a request that repeats the beginning of an
earlier one, byte for byte. :func:`wire_blocks` flattens a request body into the provider's
processing order (tools, system, then messages; content blocks where the provider caches by
block) and notes where the body asks for a cache breakpoint. :class:`CacheModel` compares each
request with the previous one and applies the rules of the model's price-table entry:

* ``openai-automatic``: automatic prefix caching for prompts of ``min_cacheable`` tokens or more,
  hits in 128-token increments (OpenAI, "Prompt Caching 201").
* ``gemini-implicit``: implicit caching of a common prefix of at least ``min_cacheable`` tokens.
* ``anthropic-breakpoints`` / ``bedrock-cachepoints``: only prefixes that end at a
  ``cache_control`` breakpoint (a ``cachePoint`` block on Bedrock) are written; a later request
  reads the longest written prefix found within 20 blocks before one of its own breakpoints, when
  it has at least ``min_cacheable`` tokens. A top-level ``cache_control`` (automatic caching)
  counts as a breakpoint on the last block.

Tokens are the reference counter's count of the whole request, spread over the blocks by their
share of the body's characters (an estimate, stated in the report): the prefix share in tokens is
then the prefix share in bytes.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any, Final

from reference_impl.documents import load_yaml_strict
from reference_impl.transcript import canonical_json

__all__ = [
    "CacheModel",
    "PriceEntry",
    "RequestCost",
    "price_for",
    "price_table",
    "wire_blocks",
]

_PRICES_PATH: Final = Path(__file__).parent / "prices.yaml"
_LOOKBACK: Final = 20  # Anthropic checks for a hit up to 20 blocks before each breakpoint
_OPENAI_INCREMENT: Final = 128


@dataclass(frozen=True, slots=True)
class PriceEntry:
    """One model's input prices (USD per million tokens) and caching rules."""

    model: str
    rules: str
    input: float
    cached: float
    cache_write: float | None
    min_cacheable: int
    source: str


@dataclass(frozen=True, slots=True)
class PriceTable:
    """The price table: when it was read and its entries."""

    read: str
    entries: tuple[PriceEntry, ...]


@cache
def price_table() -> PriceTable:
    """The built-in price table (``conformance/soak/prices.yaml``)."""
    document = load_yaml_strict(_PRICES_PATH.read_text("utf-8"))
    entries = tuple(
        PriceEntry(
            model=str(e["model"]),
            rules=str(e["rules"]),
            input=float(e["input"]),
            cached=float(e["cached"]),
            cache_write=float(e["cache_write"]) if "cache_write" in e else None,
            min_cacheable=int(e["min_cacheable"]),
            source=" ".join(str(e["source"]).split()),
        )
        for e in document["models"]
    )
    return PriceTable(str(document["read"]), entries)


def price_for(model: str) -> PriceEntry | None:
    """The entry whose model name is the longest prefix of ``model``, or None."""
    found = [e for e in price_table().entries if model.startswith(e.model)]
    return max(found, key=lambda e: len(e.model)) if found else None


# ------------------------------------------------------------------------------ the blocks


def _strip(block: Any, marker: str = "cache_control") -> tuple[str, bool]:
    if isinstance(block, Mapping) and marker in block:
        return canonical_json({k: v for k, v in block.items() if k != marker}), True
    return canonical_json(block), False


def _anthropic(body: Mapping[str, Any]) -> tuple[list[str], set[int]]:
    keys: list[str] = []
    marks: set[int] = set()

    def add(block: Any, prefix: str) -> None:
        key, marked = _strip(block)
        keys.append(prefix + key)
        if marked:
            marks.add(len(keys) - 1)

    for tool in body.get("tools") or ():
        add(tool, "tool:")
    system = body.get("system")
    if isinstance(system, list):
        for block in system:
            add(block, "system:")
    elif system:
        add(system, "system:")
    for message in body.get("messages") or ():
        role = message.get("role", "") if isinstance(message, Mapping) else ""
        content = message.get("content") if isinstance(message, Mapping) else message
        if isinstance(content, list):
            for block in content:
                add(block, f"{role}:")
        else:
            add(content, f"{role}:")
    if isinstance(body.get("cache_control"), Mapping) and keys:
        marks.add(len(keys) - 1)
    return keys, marks


def _bedrock(body: Mapping[str, Any]) -> tuple[list[str], set[int]]:
    keys: list[str] = []
    marks: set[int] = set()

    def add_all(blocks: Sequence[Any], prefix: str) -> None:
        for block in blocks:
            if isinstance(block, Mapping) and "cachePoint" in block:
                if keys:
                    marks.add(len(keys) - 1)
                continue
            keys.append(prefix + canonical_json(block))

    tool_config = body.get("toolConfig")
    if isinstance(tool_config, Mapping):
        add_all(tool_config.get("tools") or (), "tool:")
    add_all(body.get("system") or (), "system:")
    for message in body.get("messages") or ():
        if isinstance(message, Mapping):
            add_all(message.get("content") or (), f"{message.get('role', '')}:")
    return keys, marks


def wire_blocks(body: Mapping[str, Any], shape: str) -> tuple[list[str], set[int]]:
    """The body's cacheable blocks in processing order, and the indexes that end a breakpoint."""
    if shape == "anthropic-messages":
        return _anthropic(body)
    if shape == "bedrock-converse":
        return _bedrock(body)
    keys: list[str] = []
    tools = body.get("tools")
    if tools:
        keys.append("tools:" + canonical_json(tools))
    if shape == "openai-responses":
        if body.get("instructions"):
            keys.append("instructions:" + canonical_json(body["instructions"]))
        items = body.get("input") or ()
    elif shape == "gemini":
        if body.get("systemInstruction"):
            keys.append("system:" + canonical_json(body["systemInstruction"]))
        items = body.get("contents") or ()
    else:
        items = body.get("messages") or ()
    keys.extend(canonical_json(item) for item in items)
    return keys, set()


# ------------------------------------------------------------------------------- the model


@dataclass(frozen=True, slots=True)
class RequestCost:
    """One request against the previous one: tokens, the common prefix, the cache, the cost."""

    tokens: int
    prefix_tokens: int
    """Tokens of the longest common block prefix with the previous request."""
    cached_tokens: int
    """Of those, what the provider's rules let the cache serve."""
    cache_write_tokens: int
    cost_usd: float
    uncached_cost_usd: float
    """The same request with no cache at all."""


def _prefix_hashes(keys: Sequence[str]) -> list[bytes]:
    out: list[bytes] = []
    running = b""
    for key in keys:
        running = hashlib.blake2b(running + key.encode("utf-8"), digest_size=16).digest()
        out.append(running)
    return out


@dataclass(slots=True)
class CacheModel:
    """The prompt cache of one run (see the module docstring)."""

    shape: str
    price: PriceEntry | None
    _previous: list[bytes] = field(default_factory=list)
    _entries: dict[bytes, int] = field(default_factory=dict)

    @property
    def rules(self) -> str:
        """The caching rules applied (``none`` without a price-table entry)."""
        return self.price.rules if self.price else "none"

    def observe(self, body: Mapping[str, Any], tokens: int) -> RequestCost:
        """Judge one request (``tokens`` by the reference counter) against the previous one."""
        keys, marks = wire_blocks(body, self.shape)
        hashes = _prefix_hashes(keys)
        chars = [len(k) for k in keys]
        total_chars = sum(chars) or 1
        cumulative: list[int] = []
        running = 0
        for c in chars:
            running += c
            cumulative.append(math.floor(tokens * running / total_chars))
        common = 0
        for mine, theirs in zip(hashes, self._previous, strict=False):
            if mine != theirs:
                break
            common += 1
        prefix_tokens = cumulative[common - 1] if common else 0
        cached, written = self._apply(hashes, cumulative, marks, prefix_tokens, tokens)
        self._previous = hashes
        price = self.price
        if price is None:
            return RequestCost(tokens, prefix_tokens, cached, written, 0.0, 0.0)
        fresh = max(0, tokens - cached - written)
        write_price = price.cache_write if price.cache_write is not None else price.input
        cost = (fresh * price.input + cached * price.cached + written * write_price) / 1e6
        return RequestCost(tokens, prefix_tokens, cached, written, cost, tokens * price.input / 1e6)

    def _apply(
        self,
        hashes: list[bytes],
        cumulative: list[int],
        marks: set[int],
        prefix_tokens: int,
        tokens: int,
    ) -> tuple[int, int]:
        price = self.price
        if price is None:
            return 0, 0
        minimum = price.min_cacheable
        if price.rules == "openai-automatic":
            if tokens < minimum or prefix_tokens < minimum:
                return 0, 0
            return prefix_tokens // _OPENAI_INCREMENT * _OPENAI_INCREMENT, 0
        if price.rules == "gemini-implicit":
            return (prefix_tokens if prefix_tokens >= minimum else 0), 0
        # Breakpoint rules: read the longest written prefix near one of this request's breakpoints.
        cached = 0
        hit: bytes | None = None
        for mark in marks:
            for j in range(mark, max(-1, mark - _LOOKBACK), -1):
                size = self._entries.get(hashes[j])
                if size is not None and size > cached:
                    cached, hit = size, hashes[j]
                    break
        entries = {hashes[m]: cumulative[m] for m in marks if cumulative[m] >= minimum}
        written = max((cumulative[m] for m in marks if cumulative[m] >= minimum), default=0)
        if hit is not None:
            entries[hit] = cached
        self._entries = entries
        return cached, max(0, written - cached)
