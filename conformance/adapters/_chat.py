"""What every framework adapter shares: OpenAI Chat messages in, the framework's objects, and back.

An adapter is a plain function ``f(messages, budget) -> messages`` over OpenAI Chat messages. The
frameworks keep their own message objects, so each adapter converts the messages to them, calls
the framework, and converts what it returns back (:func:`bridge`). This module holds what that
takes and is not the framework's own: importing the optional extra with a message that says what
to install (:func:`require`; a framework adapter's library by its extra, from the table
:data:`ADAPTER_LIBRARIES`, with :func:`adapter_module`), the text of a message's ``content``
(:func:`text_of`), the tool calls of an assistant message and the function name a tool result
answers (:class:`CallNames`), the walk over the messages by role (:func:`convert_chat`), and an
OpenAI Chat tool call (:func:`chat_tool_call`). The counter the adapters hand to the trimmers is in
:mod:`conformance.adapters._budget`.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, TypeVar

from conformance.loading import requires

__all__ = [
    "ADAPTER_LIBRARIES",
    "CallNames",
    "ChatMessages",
    "ChatPlugin",
    "ToolCall",
    "adapter_hint",
    "adapter_module",
    "adapter_needs",
    "bridge",
    "chat_tool_call",
    "convert_chat",
    "install_hint",
    "require",
    "text_of",
]

ChatMessages = list[dict[str, Any]]
ChatPlugin = Callable[[ChatMessages, int], ChatMessages]
"""The plain-function form of the plug-in contract, over OpenAI Chat messages."""

_In = TypeVar("_In")
_Out = TypeVar("_Out")


def install_hint(missing: str, extra: str) -> str:
    """What to install when an extra is missing: ``"{missing}: pip install 'ctxconf[{extra}]'"``
    (``missing`` says who needs which library; the extras are in pyproject.toml)."""
    return f"{missing}: pip install 'ctxconf[{extra}]'"


def require(module: str, message: str) -> Any:
    """``module`` of an optional extra; an :class:`ImportError` saying ``message`` (what to
    install) when the extra is missing."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:  # pragma: no cover - exercised only without the extra
        raise ImportError(message) from exc


ADAPTER_LIBRARIES: Final[Mapping[str, str]] = {
    "autogen": "autogen-core",
    "langchain": "langchain-core",
    "litellm": "litellm",
    "llama-index": "llama-index-core",
    "openai-agents": "openai-agents",
    "pydantic-ai": "pydantic-ai-slim",
    "semantic-kernel": "semantic-kernel",
}
"""The library each framework adapter needs, by the name of its extra (and of the adapter)."""


def adapter_hint(extra: str) -> str:
    """What to install for the adapter of ``extra``: ``"the {extra} adapter needs {library}:
    pip install 'ctxconf[{extra}]'"``."""
    return install_hint(f"the {extra} adapter needs {ADAPTER_LIBRARIES[extra]}", extra)


def adapter_needs(extra: str, modules: Sequence[str]) -> tuple[str, tuple[str, ...]]:
    """What :func:`bridge` marks the plug-in of the adapter of ``extra`` with: loading it
    checks that ``modules`` import (:func:`conformance.loading.requires`)."""
    return adapter_hint(extra), tuple(modules)


def adapter_module(extra: str, module: str) -> Any:
    """``module`` of the library the adapter of ``extra`` needs; an :class:`ImportError` saying
    what to install (:func:`adapter_hint`) when the extra is missing."""
    return require(module, adapter_hint(extra))


def text_of(content: object) -> str:
    """The text of an OpenAI Chat ``content``: a string, or the text parts of a part list."""
    if isinstance(content, str):
        return content
    if isinstance(content, Sequence):
        return "".join(
            str(p.get("text", ""))
            for p in content
            if isinstance(p, Mapping) and p.get("type") == "text"
        )
    return "" if content is None else str(content)


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One tool call of an OpenAI Chat assistant message."""

    id: str
    name: str
    arguments: Any


@dataclass(slots=True)
class CallNames:
    """The function name of each tool call seen so far: a framework's tool result carries the
    name of the function it answers, an OpenAI Chat tool message only the call id."""

    names: dict[str, str] = field(default_factory=dict)

    def calls(self, message: Mapping[str, Any]) -> list[ToolCall]:
        """The tool calls of an assistant message (none for other messages), names remembered."""
        out: list[ToolCall] = []
        for call in message.get("tool_calls") or []:
            fn = call.get("function", {})
            self.names[call["id"]] = fn.get("name", "")
            out.append(ToolCall(call["id"], fn.get("name", ""), fn.get("arguments", "")))
        return out

    def answered(self, message: Mapping[str, Any], default: str = "") -> tuple[str, str]:
        """``(call id, function name)`` of a tool message (``default`` for an unknown call)."""
        call_id = str(message.get("tool_call_id", ""))
        return call_id, self.names.get(call_id, default)


def convert_chat(
    messages: Sequence[Mapping[str, Any]],
    *,
    adapter: str,
    system: Callable[[str], Any],
    user: Callable[[str], Any],
    assistant: Callable[[str, list[ToolCall]], Any],
    tool_result: Callable[[str, str, str], Any],
    tool_results: Callable[[list[Any]], Any],
) -> list[Any]:
    """OpenAI Chat messages as a framework's objects, one per message (``system`` for system and
    developer messages, ``assistant(text, calls)``), except that the results of consecutive tool
    messages (``tool_result(call id, function name, text)``) form one (``tool_results``), as
    agent runs record them. A role the framework cannot carry is a :class:`ValueError`."""
    names = CallNames()
    out: list[Any] = []
    results: list[Any] = []
    for message in messages:
        role = message.get("role")
        text = text_of(message.get("content"))
        if role == "tool":
            results.append(tool_result(*names.answered(message), text))
            continue
        if results:
            out.append(tool_results(results))
            results = []
        if role in {"system", "developer"}:
            out.append(system(text))
        elif role == "user":
            out.append(user(text))
        elif role == "assistant":
            out.append(assistant(text, names.calls(message)))
        else:
            raise ValueError(f"the {adapter} adapter cannot carry a {role!r} message")
    if results:
        out.append(tool_results(results))
    return out


def chat_tool_call(call_id: str, name: str, arguments: str) -> dict[str, Any]:
    """An OpenAI Chat tool call."""
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def bridge(
    to_framework: Callable[[ChatMessages], _In],
    call: Callable[[_In, int], _Out],
    from_framework: Callable[[_Out], ChatMessages],
    *,
    name: str,
    needs: tuple[str, tuple[str, ...]] | None = None,
) -> ChatPlugin:
    """The plug-in ``from_framework(call(to_framework(messages), budget))``, named ``name``;
    ``needs`` (what to install, the modules it imports when called) marks it so that loading it
    checks them (:func:`conformance.loading.requires`): a missing extra is a load error."""

    def plugin(messages: ChatMessages, budget: int) -> ChatMessages:
        return from_framework(call(to_framework(messages), budget))

    plugin.__name__ = plugin.__qualname__ = name
    return plugin if needs is None else requires(needs[0], *needs[1])(plugin)
