"""LlamaIndex's chat memories as ctxconf plug-ins: ``ChatMemoryBuffer`` and ``Memory``.

Needs the ``llama-index`` extra (``llama-index-core``). The session's OpenAI Chat messages become
``ChatMessage`` objects the way LlamaIndex's OpenAI integration stores them (tool calls in the
assistant's ``additional_kwargs["tool_calls"]``, the call id in a tool message's
``additional_kwargs["tool_call_id"]``), go into the memory, and ``get()`` returns what the next
LLM call would see; that is mapped back to OpenAI Chat messages. Parameters are the memories' own:

* ``chat_memory_buffer``: ``ChatMemoryBuffer.from_defaults(chat_history=..., token_limit=budget,
  tokenizer_fn=...)``;
* ``memory``: ``Memory.from_defaults(token_limit=budget, chat_history_token_ratio=...,
  token_flush_size=..., tokenizer_fn=...)`` with no memory blocks (flushed messages are gone), an
  in-memory SQLite chat store, messages added with ``put_messages``.

``tokenizer_fn`` is the reference o200k_base encoder; both memories apply it to each message's
*content string* only (their own counting rule), so tool-call arguments are not counted.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

from conformance.adapters._chat import (
    ChatMessages,
    ChatPlugin,
    adapter_module,
    adapter_needs,
    bridge,
    text_of,
)

__all__ = [
    "chat_memory_buffer",
    "make_chat_memory_buffer",
    "make_memory",
    "memory",
]


_NEEDS: Final = ("llama_index.core.base.llms.types", "llama_index.core.memory")


def _llama() -> Any:
    return adapter_module("llama-index", _NEEDS[0])


def _tokenizer() -> Callable[[str], list[int]]:
    from reference_impl.tokens.encodings import get_encoding  # noqa: PLC0415 - offline rank files

    encoding = get_encoding("o200k_base")
    encode: Callable[[str], list[int]] = encoding.encode
    return encode


def to_llama_index(messages: Sequence[Mapping[str, Any]]) -> list[Any]:
    """OpenAI Chat messages as LlamaIndex ``ChatMessage`` objects."""
    types = _llama()
    out = []
    for message in messages:
        role = message.get("role")
        extra: dict[str, Any] = {}
        if role == "assistant" and message.get("tool_calls"):
            extra["tool_calls"] = [dict(c) for c in message["tool_calls"]]
        if role == "tool":
            extra["tool_call_id"] = message.get("tool_call_id")
        if role not in {"system", "developer", "user", "assistant", "tool"}:
            raise ValueError(f"the llama-index adapter cannot carry a {role!r} message")
        out.append(
            types.ChatMessage(
                role=types.MessageRole(role),
                content=text_of(message.get("content")),
                additional_kwargs=extra,
            )
        )
    return out


def from_llama_index(messages: Sequence[Any]) -> ChatMessages:
    """LlamaIndex ``ChatMessage`` objects back as OpenAI Chat messages."""
    out: ChatMessages = []
    for message in messages:
        role = str(getattr(message.role, "value", message.role))
        entry: dict[str, Any] = {"role": role, "content": message.content or ""}
        calls = message.additional_kwargs.get("tool_calls")
        if role == "assistant" and calls:
            entry["tool_calls"] = list(calls)
            entry["content"] = message.content or None
        if role == "tool":
            entry["tool_call_id"] = message.additional_kwargs.get("tool_call_id")
        out.append(entry)
    return out


def make_chat_memory_buffer() -> ChatPlugin:
    """``ChatMemoryBuffer.from_defaults(chat_history=..., token_limit=budget)``'s ``get()``."""

    def get(history: list[Any], budget: int) -> list[Any]:
        memories = adapter_module("llama-index", _NEEDS[1])
        buffer = memories.ChatMemoryBuffer.from_defaults(
            chat_history=history, token_limit=budget, tokenizer_fn=_tokenizer()
        )
        seen: list[Any] = buffer.get()
        return seen

    needs = adapter_needs("llama-index", _NEEDS)
    return bridge(to_llama_index, get, from_llama_index, name="chat_memory_buffer", needs=needs)


def make_memory(
    *, chat_history_token_ratio: float = 0.7, token_flush_size: int | None = None
) -> ChatPlugin:
    """``Memory.from_defaults(token_limit=budget, ...)``: ``put_messages`` then ``get()``."""

    def get(history: list[Any], budget: int) -> list[Any]:
        memories = adapter_module("llama-index", _NEEDS[1])
        options: dict[str, Any] = {"chat_history_token_ratio": chat_history_token_ratio}
        if token_flush_size is not None:
            options["token_flush_size"] = token_flush_size
        from sqlalchemy.ext.asyncio import create_async_engine  # noqa: PLC0415 - llama-index dep

        async def window() -> list[Any]:
            # The library's default store (in-memory SQLite through aiosqlite), with an engine of
            # our own so it is disposed of after the call instead of leaking its connection.
            engine = create_async_engine("sqlite+aiosqlite:///:memory:")
            try:
                store = memories.Memory.from_defaults(
                    session_id="ctxconf",
                    token_limit=budget,
                    tokenizer_fn=_tokenizer(),
                    async_engine=engine,
                    **options,
                )
                await store.aput_messages(history)
                return list(await store.aget())
            finally:
                await engine.dispose()

        return asyncio.run(window())

    needs = adapter_needs("llama-index", _NEEDS)
    return bridge(to_llama_index, get, from_llama_index, name="memory", needs=needs)


chat_memory_buffer = make_chat_memory_buffer()
memory = make_memory()
