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
from collections.abc import Callable, Mapping, Sequence
from typing import Any

__all__ = ["keep_last", "keep_last_no_repair", "make_process_history"]

ChatMessages = list[dict[str, Any]]


def _messages_module() -> Any:
    try:
        from pydantic_ai import messages  # noqa: PLC0415 - optional extra
    except ImportError as exc:  # pragma: no cover - exercised only without the extra
        raise ImportError(
            "the pydantic-ai adapter needs pydantic-ai-slim: pip install 'ctxconf[pydantic-ai]'"
        ) from exc
    return messages


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


def to_pydantic_ai(messages: Sequence[Mapping[str, Any]]) -> list[Any]:
    """OpenAI Chat messages as pydantic-ai model messages."""
    pm = _messages_module()
    names: dict[str, str] = {}
    out: list[Any] = []
    for message in messages:
        role = message.get("role")
        if role in {"system", "developer"}:
            out.append(pm.ModelRequest(parts=[pm.SystemPromptPart(_text(message.get("content")))]))
        elif role == "user":
            out.append(pm.ModelRequest(parts=[pm.UserPromptPart(_text(message.get("content")))]))
        elif role == "assistant":
            parts: list[Any] = []
            text = _text(message.get("content"))
            if text:
                parts.append(pm.TextPart(text))
            for call in message.get("tool_calls") or []:
                fn = call.get("function", {})
                names[call["id"]] = fn.get("name", "")
                parts.append(
                    pm.ToolCallPart(
                        fn.get("name", ""), fn.get("arguments", ""), tool_call_id=call["id"]
                    )
                )
            out.append(pm.ModelResponse(parts=parts))
        elif role == "tool":
            call_id = str(message.get("tool_call_id", ""))
            part = pm.ToolReturnPart(names.get(call_id, ""), _text(message.get("content")), call_id)
            previous = out[-1] if out else None
            if isinstance(previous, pm.ModelRequest) and all(
                isinstance(p, pm.ToolReturnPart) for p in previous.parts
            ):
                previous.parts.append(part)
            else:
                out.append(pm.ModelRequest(parts=[part]))
        else:
            raise ValueError(f"the pydantic-ai adapter cannot carry a {role!r} message")
    return out


def from_pydantic_ai(messages: Sequence[Any]) -> ChatMessages:
    """pydantic-ai model messages back as OpenAI Chat messages (one per part of a request)."""
    pm = _messages_module()
    out: ChatMessages = []
    for message in messages:
        if isinstance(message, pm.ModelResponse):
            text = "".join(p.content for p in message.parts if isinstance(p, pm.TextPart))
            calls = [
                {
                    "id": p.tool_call_id,
                    "type": "function",
                    "function": {"name": p.tool_name, "arguments": p.args_as_json_str()},
                }
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
                out.append({"role": "user", "content": _text(part.content)})
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


def make_process_history(
    *, keep_last: int = 5, repair: bool = True
) -> Callable[[ChatMessages, int], ChatMessages]:
    """The documented ``ProcessHistory`` processor (last ``keep_last`` messages), then the repair."""

    def processor(messages: list[Any]) -> list[Any]:
        return messages[-keep_last:] if len(messages) > keep_last else messages

    def process_history(messages: ChatMessages, budget: int) -> ChatMessages:
        del budget  # the documented processor counts messages, not tokens
        pm = _messages_module()
        history = processor(to_pydantic_ai(messages))
        if repair:
            history = pm.repair_messages(history)
        return from_pydantic_ai(history)

    process_history.__name__ = f"keep_last_{keep_last}" + ("" if repair else "_no_repair")
    return process_history


keep_last = make_process_history(keep_last=5)
keep_last_no_repair = make_process_history(keep_last=5, repair=False)
