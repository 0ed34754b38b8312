"""AutoGen's model contexts (``autogen_core.model_context``) as ctxconf plug-ins.

Needs the ``autogen`` extra (``autogen-core``). The session's OpenAI Chat messages become AutoGen
``LLMMessage`` objects (consecutive tool messages form one ``FunctionExecutionResultMessage``, as
AutoGen's agents record them), are added to the context, and ``get_messages()`` decides what the
next model call sees; its answer is turned back into OpenAI Chat messages. Each context's
parameters are its own constructor's:

* ``buffered``: ``BufferedChatCompletionContext(buffer_size=N)``, the last N messages;
* ``head_and_tail``: ``HeadAndTailChatCompletionContext(head_size=H, tail_size=T)``, with its
  ``"Skipped N messages."`` placeholder;
* ``token_limited``: ``TokenLimitedChatCompletionContext(model_client, token_limit=budget)``, which
  pops the *middle* message until the count fits. The model client only counts (the reference
  counter, as for every adapter); nothing is ever sent.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

from conformance.adapters._budget import count_chat_messages
from conformance.adapters._chat import (
    ChatMessages,
    ChatPlugin,
    ToolCall,
    adapter_module,
    adapter_needs,
    bridge,
    chat_tool_call,
    convert_chat,
    text_of,
)

__all__ = [
    "buffered",
    "head_and_tail",
    "make_buffered",
    "make_head_and_tail",
    "make_token_limited",
    "token_limited",
]


_NEEDS: Final = ("autogen_core", "autogen_core.model_context", "autogen_core.models")


def _autogen() -> Any:
    return tuple(adapter_module("autogen", module) for module in _NEEDS)


def to_autogen(messages: Sequence[Mapping[str, Any]]) -> list[Any]:
    """OpenAI Chat messages as AutoGen ``LLMMessage`` objects (tool runs grouped per turn)."""
    core, _, models = _autogen()

    def assistant(text: str, calls: list[ToolCall]) -> Any:
        if not calls:
            return models.AssistantMessage(content=text, source="assistant")
        function_calls = [
            core.FunctionCall(id=c.id, name=c.name, arguments=c.arguments) for c in calls
        ]
        return models.AssistantMessage(
            content=function_calls, thought=text or None, source="assistant"
        )

    return convert_chat(
        messages,
        adapter="autogen",
        system=lambda text: models.SystemMessage(content=text),
        user=lambda text: models.UserMessage(content=text, source="user"),
        assistant=assistant,
        tool_result=lambda call_id, name, text: models.FunctionExecutionResult(
            content=text, name=name, call_id=call_id
        ),
        tool_results=lambda results: models.FunctionExecutionResultMessage(content=results),
    )


def from_autogen(messages: Sequence[Any]) -> ChatMessages:
    """AutoGen ``LLMMessage`` objects back as OpenAI Chat messages."""
    _, _, models = _autogen()
    out: ChatMessages = []
    for message in messages:
        if isinstance(message, models.SystemMessage):
            out.append({"role": "system", "content": message.content})
        elif isinstance(message, models.UserMessage):
            out.append({"role": "user", "content": text_of(message.content)})
        elif isinstance(message, models.AssistantMessage):
            if isinstance(message.content, str):
                out.append({"role": "assistant", "content": message.content})
            else:
                calls = [chat_tool_call(c.id, c.name, c.arguments) for c in message.content]
                out.append({"role": "assistant", "content": message.thought, "tool_calls": calls})
        elif isinstance(message, models.FunctionExecutionResultMessage):
            out.extend(
                {"role": "tool", "tool_call_id": r.call_id, "content": r.content}
                for r in message.content
            )
        else:  # pragma: no cover - AutoGen added a message type
            raise TypeError(f"the autogen adapter cannot map {type(message).__name__}")
    return out


class _CountingClient:
    """The counting half of a ``ChatCompletionClient``: the reference counter on the messages."""

    def count_tokens(self, messages: Sequence[Any], *, tools: Sequence[Any] = ()) -> int:
        del tools  # the plain-function form of the plug-in contract hands no tools over
        return count_chat_messages(from_autogen(messages))

    def remaining_tokens(self, messages: Sequence[Any], *, tools: Sequence[Any] = ()) -> int:
        raise NotImplementedError("the adapter always passes token_limit")


def _context(build: Callable[[list[Any], int], Any], *, name: str) -> ChatPlugin:
    """The plug-in that starts the context ``build(messages, budget)`` with the session and
    returns what its ``get_messages()`` hands the next model call."""

    def next_call(history: list[Any], budget: int) -> Sequence[Any]:
        seen: Sequence[Any] = asyncio.run(build(history, budget).get_messages())
        return seen

    needs = adapter_needs("autogen", _NEEDS)
    return bridge(to_autogen, next_call, from_autogen, name=name, needs=needs)


def make_buffered(*, buffer_size: int) -> ChatPlugin:
    """``BufferedChatCompletionContext(buffer_size=buffer_size)`` (the budget is not its option)."""

    def build(history: list[Any], budget: int) -> Any:
        del budget  # a message-count window: the budget is not one of its options
        _, model_context, _ = _autogen()
        return model_context.BufferedChatCompletionContext(
            buffer_size=buffer_size, initial_messages=history
        )

    return _context(build, name="buffered")


def make_head_and_tail(*, head_size: int, tail_size: int) -> ChatPlugin:
    """``HeadAndTailChatCompletionContext(head_size=..., tail_size=...)``."""

    def build(history: list[Any], budget: int) -> Any:
        del budget  # message counts only
        _, model_context, _ = _autogen()
        return model_context.HeadAndTailChatCompletionContext(
            head_size=head_size, tail_size=tail_size, initial_messages=history
        )

    return _context(build, name="head_and_tail")


def make_token_limited() -> ChatPlugin:
    """``TokenLimitedChatCompletionContext(client, token_limit=budget)``."""

    def build(history: list[Any], budget: int) -> Any:
        _, model_context, _ = _autogen()
        return model_context.TokenLimitedChatCompletionContext(
            _CountingClient(), token_limit=budget, initial_messages=history
        )

    return _context(build, name="token_limited")


buffered = make_buffered(buffer_size=6)
head_and_tail = make_head_and_tail(head_size=2, tail_size=4)
token_limited = make_token_limited()
