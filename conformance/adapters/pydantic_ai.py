"""pydantic-ai's history processing as ctxconf plug-ins: a ``ProcessHistory`` processor, then the
repair pydantic-ai applies before every model request.

Needs the ``pydantic-ai`` extra (``pydantic-ai-slim``). The session's OpenAI Chat messages become
pydantic-ai ``ModelRequest``/``ModelResponse`` objects (tool results of one turn in one request, as
a run records them), the processor runs (the one pydantic-ai's documentation shows for
``ProcessHistory`` / ``history_processors``: keep the last N messages), and then
``pydantic_ai.messages.repair_messages`` runs, as it does before every model request of a run: it
drops orphaned tool results, *synthesizes* a tool return for each dangling call and merges adjacent
requests. The result is mapped back to OpenAI Chat messages. ``keep_last_no_repair`` skips the
repair, so the report shows what the silent repair changes.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Final

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

__all__ = ["keep_last", "keep_last_no_repair", "make_process_history"]


_NEEDS: Final = ("pydantic_ai.messages",)


def _messages_module() -> Any:
    return adapter_module("pydantic-ai", _NEEDS[0])


def to_pydantic_ai(messages: Sequence[Mapping[str, Any]]) -> list[Any]:
    """OpenAI Chat messages as pydantic-ai model messages."""
    pm = _messages_module()

    def assistant(text: str, calls: list[ToolCall]) -> Any:
        parts: list[Any] = [pm.TextPart(text)] if text else []
        parts += [pm.ToolCallPart(c.name, c.arguments, tool_call_id=c.id) for c in calls]
        return pm.ModelResponse(parts=parts)

    return convert_chat(
        messages,
        adapter="pydantic-ai",
        system=lambda text: pm.ModelRequest(parts=[pm.SystemPromptPart(text)]),
        user=lambda text: pm.ModelRequest(parts=[pm.UserPromptPart(text)]),
        assistant=assistant,
        tool_result=lambda call_id, name, text: pm.ToolReturnPart(name, text, call_id),
        tool_results=lambda parts: pm.ModelRequest(parts=parts),
    )


def from_pydantic_ai(messages: Sequence[Any]) -> ChatMessages:
    """pydantic-ai model messages back as OpenAI Chat messages (one per part of a request)."""
    pm = _messages_module()
    out: ChatMessages = []
    for message in messages:
        if isinstance(message, pm.ModelResponse):
            text = "".join(p.content for p in message.parts if isinstance(p, pm.TextPart))
            calls = [
                chat_tool_call(p.tool_call_id, p.tool_name, p.args_as_json_str())
                for p in message.parts
                if isinstance(p, pm.ToolCallPart)
            ]
            entry: dict[str, Any] = {"role": "assistant", "content": text or None}
            if calls:
                entry["tool_calls"] = calls
            out.append(entry)
            continue
        for part in message.parts:
            if isinstance(part, pm.SystemPromptPart):
                out.append({"role": "system", "content": part.content})
            elif isinstance(part, pm.UserPromptPart):
                out.append({"role": "user", "content": text_of(part.content)})
            elif isinstance(part, pm.ToolReturnPart):
                content = (
                    part.content if isinstance(part.content, str) else json.dumps(part.content)
                )
                out.append({"role": "tool", "tool_call_id": part.tool_call_id, "content": content})
            elif isinstance(part, pm.RetryPromptPart) and part.tool_name is not None:
                out.append(
                    {
                        "role": "tool",
                        "tool_call_id": part.tool_call_id,
                        "content": part.model_response(),
                    }
                )
            elif isinstance(part, pm.RetryPromptPart):
                out.append({"role": "user", "content": part.model_response()})
            else:  # pragma: no cover - a part kind the adapter does not know yet
                raise TypeError(f"the pydantic-ai adapter cannot map {type(part).__name__}")
    return out


def make_process_history(*, keep_last: int = 5, repair: bool = True) -> ChatPlugin:
    """The documented ``ProcessHistory`` processor (last ``keep_last`` messages), then the repair."""

    def process_history(history: list[Any], budget: int) -> list[Any]:
        del budget  # the documented processor counts messages, not tokens
        history = history[-keep_last:] if len(history) > keep_last else history
        if repair:
            repaired: list[Any] = _messages_module().repair_messages(history)
            return repaired
        return history

    name = f"keep_last_{keep_last}" + ("" if repair else "_no_repair")
    needs = adapter_needs("pydantic-ai", _NEEDS)
    return bridge(to_pydantic_ai, process_history, from_pydantic_ai, name=name, needs=needs)


keep_last = make_process_history(keep_last=5)
keep_last_no_repair = make_process_history(keep_last=5, repair=False)
