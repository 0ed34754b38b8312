"""The OpenAI Agents SDK's history controls as ctxconf plug-ins, on Responses input items.

Needs the ``openai-agents`` extra. Both speak the ``openai-responses`` shape (the SDK's own item
format), so they are :class:`~conformance.protocol.MessageListAssembler` objects for that shape:

* ``session_limit``: the items are stored in an in-memory ``SQLiteSession`` created with
  ``session_settings=SessionSettings(limit=N)``, and ``get_items()`` returns what a run would prepend
  to the next turn: the last N items, whatever they are;
* ``tool_output_trimmer``: ``agents.extensions.ToolOutputTrimmer(recent_turns=..., max_output_chars=...,
  preview_chars=...)`` as the run's ``call_model_input_filter``, called on the items just as the
  runner calls it before each model request.

Neither takes a token budget: the budget is not among the SDK's options, and the report shows what
that costs.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

from conformance.adapters._chat import adapter_hint, adapter_module
from conformance.loading import requires
from conformance.protocol import MessageListAssembler

__all__ = [
    "make_session_limit",
    "make_tool_output_trimmer",
    "session_limit",
    "tool_output_trimmer",
]

Items = list[dict[str, Any]]
SHAPE = "openai-responses"


_NEEDS: Final = ("agents",)


def _marked(plugin: MessageListAssembler) -> MessageListAssembler:
    """``plugin``, marked so that loading it checks the SDK imports (a missing extra is a load
    error, :func:`conformance.loading.requires`)."""
    return requires(adapter_hint("openai-agents"), *_NEEDS)(plugin)


def _agents() -> Any:
    return adapter_module("openai-agents", _NEEDS[0])


def make_session_limit(*, limit: int) -> MessageListAssembler:
    """The items a ``SQLiteSession`` with ``SessionSettings(limit=limit)`` hands the next run."""

    def session_limit(items: Sequence[Mapping[str, Any]], budget: int) -> Items:
        del budget  # SessionSettings counts items; a token budget is not one of its options
        sdk = _agents()

        async def window() -> Items:
            session = sdk.SQLiteSession(
                "ctxconf", session_settings=sdk.SessionSettings(limit=limit)
            )
            try:
                await session.add_items([dict(item) for item in items])
                return [dict(item) for item in await session.get_items()]
            finally:
                session.close()

        return asyncio.run(window())

    session_limit.__name__ = f"session_limit_{limit}"
    return _marked(MessageListAssembler(session_limit, SHAPE))


def make_tool_output_trimmer(
    *,
    recent_turns: int = 2,
    max_output_chars: int = 500,
    preview_chars: int = 200,
    trimmable_tools: Iterable[str] | None = None,
) -> MessageListAssembler:
    """``ToolOutputTrimmer(...)`` called as the runner's ``call_model_input_filter``."""

    def tool_output_trimmer(items: Sequence[Mapping[str, Any]], budget: int) -> Items:
        del budget  # the trimmer works in characters per output; no budget option
        sdk = _agents()
        from agents.extensions.tool_output_trimmer import ToolOutputTrimmer  # noqa: PLC0415
        from agents.run_config import CallModelData, ModelInputData  # noqa: PLC0415

        trimmer = ToolOutputTrimmer(
            recent_turns=recent_turns,
            max_output_chars=max_output_chars,
            preview_chars=preview_chars,
            trimmable_tools=None if trimmable_tools is None else frozenset(trimmable_tools),
        )
        agent = sdk.Agent(name="ctxconf")
        data = CallModelData(
            model_data=ModelInputData(input=[dict(i) for i in items], instructions=None),
            agent=agent,
            context=None,
        )
        return [dict(item) for item in trimmer(data).input]

    return _marked(MessageListAssembler(tool_output_trimmer, SHAPE))


session_limit = make_session_limit(limit=5)
tool_output_trimmer = make_tool_output_trimmer()
