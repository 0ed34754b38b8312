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
from typing import Any

from conformance.adapters._budget import count_chat_messages

__all__ = [
    "buffered",
    "head_and_tail",
    "make_buffered",
    "make_head_and_tail",
    "make_token_limited",
    "token_limited",
]

ChatMessages = list[dict[str, Any]]


def _autogen() -> Any:
    try:
        import autogen_core  # noqa: PLC0415 - optional extra
        from autogen_core import model_context, models  # noqa: PLC0415
    except ImportError as exc:  # pragma: no cover - exercised only without the extra
        raise ImportError(
            "the autogen adapter needs autogen-core: pip install 'ctxconf[autogen]'"
        ) from exc
    return autogen_core, model_context, models


def _text(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, Sequence):
        return "".join(
            str(p.get("text", ""))
            for p in content
            if isinstance(p, Mapping) and p.get("type") == "text"
        )
    return "" if content is None else str(content)


def to_autogen(messages: Sequence[Mapping[str, Any]]) -> list[Any]:
    """OpenAI Chat messages as AutoGen ``LLMMessage`` objects (tool runs grouped per turn)."""
    core, _, models = _autogen()
    names: dict[str, str] = {}
    out: list[Any] = []
    for message in messages:
        role = message.get("role")
        if role in {"system", "developer"}:
            out.append(models.SystemMessage(content=_text(message.get("content"))))
        elif role == "user":
            out.append(models.UserMessage(content=_text(message.get("content")), source="user"))
        elif role == "assistant":
            calls = message.get("tool_calls") or []
            text = _text(message.get("content"))
            if calls:
                function_calls = []
                for call in calls:
                    fn = call.get("function", {})
                    names[call["id"]] = fn.get("name", "")
                    function_calls.append(
                        core.FunctionCall(
                            id=call["id"],
                            name=fn.get("name", ""),
                            arguments=fn.get("arguments", ""),
                        )
                    )
                out.append(
                    models.AssistantMessage(
                        content=function_calls, thought=text or None, source="assistant"
                    )
                )
            else:
                out.append(models.AssistantMessage(content=text, source="assistant"))
        elif role == "tool":
            call_id = str(message.get("tool_call_id", ""))
            result = models.FunctionExecutionResult(
                content=_text(message.get("content")), name=names.get(call_id, ""), call_id=call_id
            )
            if out and isinstance(out[-1], models.FunctionExecutionResultMessage):
                out[-1].content.append(result)
            else:
                out.append(models.FunctionExecutionResultMessage(content=[result]))
        else:
            raise ValueError(f"the autogen adapter cannot carry a {role!r} message")
    return out


def from_autogen(messages: Sequence[Any]) -> ChatMessages:
    """AutoGen ``LLMMessage`` objects back as OpenAI Chat messages."""
    _, _, models = _autogen()
    out: ChatMessages = []
    for message in messages:
        if isinstance(message, models.SystemMessage):
            out.append({"role": "system", "content": message.content})
        elif isinstance(message, models.UserMessage):
            out.append({"role": "user", "content": _text(message.content)})
        elif isinstance(message, models.AssistantMessage):
            if isinstance(message.content, str):
                out.append({"role": "assistant", "content": message.content})
            else:
                calls = [
                    {
                        "id": c.id,
                        "type": "function",
                        "function": {"name": c.name, "arguments": c.arguments},
                    }
                    for c in message.content
                ]
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


def _run_context(build: Callable[[list[Any]], Any], messages: ChatMessages) -> ChatMessages:
    context = build(to_autogen(messages))
    return from_autogen(asyncio.run(context.get_messages()))


def make_buffered(*, buffer_size: int) -> Callable[[ChatMessages, int], ChatMessages]:
    """``BufferedChatCompletionContext(buffer_size=buffer_size)`` (the budget is not its option)."""

    def buffered(messages: ChatMessages, budget: int) -> ChatMessages:
        del budget  # a message-count window: the budget is not one of its options
        _, model_context, _ = _autogen()
        return _run_context(
            lambda ms: model_context.BufferedChatCompletionContext(
                buffer_size=buffer_size, initial_messages=ms
            ),
            messages,
        )

    return buffered


def make_head_and_tail(
    *, head_size: int, tail_size: int
) -> Callable[[ChatMessages, int], ChatMessages]:
    """``HeadAndTailChatCompletionContext(head_size=..., tail_size=...)``."""

    def head_and_tail(messages: ChatMessages, budget: int) -> ChatMessages:
        del budget  # message counts only
        _, model_context, _ = _autogen()
        return _run_context(
            lambda ms: model_context.HeadAndTailChatCompletionContext(
                head_size=head_size, tail_size=tail_size, initial_messages=ms
            ),
            messages,
        )

    return head_and_tail


def make_token_limited() -> Callable[[ChatMessages, int], ChatMessages]:
    """``TokenLimitedChatCompletionContext(client, token_limit=budget)``."""

    def token_limited(messages: ChatMessages, budget: int) -> ChatMessages:
        _, model_context, _ = _autogen()
        return _run_context(
            lambda ms: model_context.TokenLimitedChatCompletionContext(
                _CountingClient(),
                token_limit=budget,
                initial_messages=ms,
            ),
            messages,
        )

    return token_limited


buffered = make_buffered(buffer_size=6)
head_and_tail = make_head_and_tail(head_size=2, tail_size=4)
token_limited = make_token_limited()
