"""Semantic Kernel's chat history reducers as ctxconf plug-ins.

Needs the ``semantic-kernel`` extra. The session's OpenAI Chat messages become a reducer (a
``ChatHistory`` subclass) of ``ChatMessageContent`` objects, tool calls and results as
``FunctionCallContent`` / ``FunctionResultContent`` items the way SK's OpenAI connector records
them; ``await reducer.reduce()`` runs, and the reduced messages are mapped back. Parameters are the
reducers' own (both count *messages*; the budget is not among their options):

* ``truncation``: ``ChatHistoryTruncationReducer(target_count=N, threshold_count=T)``;
* ``summarization``: ``ChatHistorySummarizationReducer(service=..., target_count=N,
  threshold_count=T)`` with a fake chat completion service that answers one fixed summary text,
  so it runs offline and deterministically.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping, Sequence
from typing import Any, Final

from conformance.adapters._chat import (
    CallNames,
    ChatMessages,
    ChatPlugin,
    adapter_module,
    adapter_needs,
    bridge,
    chat_tool_call,
    text_of,
)

__all__ = [
    "SUMMARY_TEXT",
    "make_summarization",
    "make_truncation",
    "summarization",
    "truncation",
]

SUMMARY_TEXT = "Summary: the user and the assistant worked on the task; tools were called."


_NEEDS: Final = ("semantic_kernel.contents",)


def _sk() -> Any:
    return adapter_module("semantic-kernel", _NEEDS[0])


def to_semantic_kernel(messages: Sequence[Mapping[str, Any]]) -> list[Any]:
    """OpenAI Chat messages as SK ``ChatMessageContent`` objects."""
    sk = _sk()
    roles = {
        "system": sk.AuthorRole.SYSTEM,
        "developer": sk.AuthorRole.DEVELOPER,
        "user": sk.AuthorRole.USER,
        "assistant": sk.AuthorRole.ASSISTANT,
        "tool": sk.AuthorRole.TOOL,
    }
    names = CallNames()
    out = []
    for message in messages:
        role = message.get("role")
        if role not in roles:
            raise ValueError(f"the semantic-kernel adapter cannot carry a {role!r} message")
        items: list[Any] = []
        text = text_of(message.get("content"))
        if role == "tool":
            call_id, name = names.answered(message, default="tool")
            items.append(sk.FunctionResultContent(id=call_id, function_name=name, result=text))
        else:
            if text:
                items.append(sk.TextContent(text=text))
            items += [
                sk.FunctionCallContent(id=c.id, function_name=c.name, arguments=c.arguments)
                for c in names.calls(message)
            ]
        out.append(sk.ChatMessageContent(role=roles[role], items=items))
    return out


def from_semantic_kernel(messages: Sequence[Any]) -> ChatMessages:
    """SK ``ChatMessageContent`` objects back as OpenAI Chat messages."""
    sk = _sk()
    out: ChatMessages = []
    for message in messages:
        role = str(message.role.value)
        texts = [i.text for i in message.items if isinstance(i, sk.TextContent)]
        calls = [i for i in message.items if isinstance(i, sk.FunctionCallContent)]
        results = [i for i in message.items if isinstance(i, sk.FunctionResultContent)]
        if results:
            out.extend(
                {"role": "tool", "tool_call_id": r.id, "content": str(r.result)} for r in results
            )
            continue
        entry: dict[str, Any] = {"role": role, "content": "".join(t or "" for t in texts)}
        if calls:
            entry["content"] = entry["content"] or None
            entry["tool_calls"] = [
                chat_tool_call(
                    c.id,
                    c.function_name,
                    c.arguments if isinstance(c.arguments, str) else json.dumps(c.arguments or {}),
                )
                for c in calls
            ]
        out.append(entry)
    return out


def _fake_service() -> Any:
    sk = _sk()
    from semantic_kernel.connectors.ai.chat_completion_client_base import (  # noqa: PLC0415
        ChatCompletionClientBase,
    )

    class FixedSummaryService(ChatCompletionClientBase):  # type: ignore[misc]
        """A chat completion service that answers one fixed text, offline."""

        async def _inner_get_chat_message_contents(
            self, chat_history: Any, settings: Any
        ) -> list[Any]:
            del chat_history, settings
            return [sk.ChatMessageContent(role=sk.AuthorRole.ASSISTANT, content=SUMMARY_TEXT)]

    return FixedSummaryService(ai_model_id="ctxconf-fixed-summary")


def _reducer(build: Any) -> ChatPlugin:
    """The plug-in that puts the messages into the reducer ``build()`` makes and reduces them."""

    def reduce(history: list[Any], budget: int) -> Sequence[Any]:
        del budget  # a message-count reducer
        reducer = build()
        reducer.messages = history

        async def run() -> None:
            await reducer.reduce()

        asyncio.run(run())
        reduced: Sequence[Any] = reducer.messages
        return reduced

    needs = adapter_needs("semantic-kernel", _NEEDS)
    return bridge(
        to_semantic_kernel, reduce, from_semantic_kernel, name=build.__name__, needs=needs
    )


def _threshold(threshold_count: int | None) -> dict[str, int]:
    return {} if threshold_count is None else {"threshold_count": threshold_count}


def make_truncation(*, target_count: int, threshold_count: int | None = None) -> ChatPlugin:
    """``ChatHistoryTruncationReducer(target_count=..., threshold_count=...).reduce()``."""

    def truncation() -> Any:
        return _sk().ChatHistoryTruncationReducer(
            target_count=target_count, **_threshold(threshold_count)
        )

    return _reducer(truncation)


def make_summarization(*, target_count: int, threshold_count: int | None = None) -> ChatPlugin:
    """``ChatHistorySummarizationReducer(service=fake, target_count=..., ...).reduce()``."""

    def summarization() -> Any:
        return _sk().ChatHistorySummarizationReducer(
            service=_fake_service(), target_count=target_count, **_threshold(threshold_count)
        )

    return _reducer(summarization)


truncation = make_truncation(target_count=6)
summarization = make_summarization(target_count=6)
