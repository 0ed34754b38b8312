"""``langchain_core.messages.trim_messages`` as a ctxconf plug-in.

Needs the ``langchain`` extra. Every option of ``trim_messages`` that matters for pairing is an
adapter parameter (``strategy``, ``include_system``, ``start_on``, ``end_on``, ``allow_partial``,
``token_counter``); ready-made variants cover what users commonly run:

* ``trim_last``: ``strategy="last", include_system=True`` (the most common call);
* ``trim_last_start_on_human``: the docstring's advice, ``start_on="human"``, ``end_on=("human", "tool")``;
* ``trim_first``: ``strategy="first"``;
* ``trim_last_approximate``: ``trim_last`` with LangChain's own ``"approximate"`` counter.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Final, Literal

from conformance.adapters._budget import count_chat_messages
from conformance.adapters._chat import ChatMessages, ChatPlugin, adapter_hint, bridge, require

__all__ = [
    "make_trimmer",
    "trim_first",
    "trim_last",
    "trim_last_approximate",
    "trim_last_start_on_human",
]

_MISSING = adapter_hint("langchain")


CORE_MODULE: Final = "langchain_core.messages"
"""The module of ``langchain-core`` every LangChain adapter imports."""
_NEEDS: Final = (CORE_MODULE,)


def langchain_messages(missing: str = _MISSING) -> Any:
    """``langchain_core.messages``; ``missing`` says what to install when it is absent."""
    return require(_NEEDS[0], missing)


def reference_count(lc: Any) -> Callable[[Sequence[Any]], int]:
    """A LangChain ``token_counter`` that counts with the reference counter (``lc`` is
    ``langchain_core.messages``)."""

    def count(batch: Sequence[Any]) -> int:
        return count_chat_messages(lc.convert_to_openai_messages(list(batch)))

    return count


def langchain_bridge(
    call: Callable[[list[Any], int], Sequence[Any]],
    *,
    name: str,
    missing: str = _MISSING,
    modules: Sequence[str] = (),
) -> ChatPlugin:
    """The plug-in that converts the messages to LangChain's (``convert_to_messages``), runs
    ``call`` and converts its messages back (``convert_to_openai_messages``); loading it checks
    that ``langchain_core`` and ``modules`` import (``missing`` says what to install)."""

    def to_langchain(messages: ChatMessages) -> list[Any]:
        converted: list[Any] = langchain_messages(missing).convert_to_messages(messages)
        return converted

    def from_langchain(messages: Sequence[Any]) -> ChatMessages:
        back: ChatMessages = langchain_messages(missing).convert_to_openai_messages(list(messages))
        return back

    needs = (missing, (*_NEEDS, *modules))
    return bridge(to_langchain, call, from_langchain, name=name, needs=needs)


def make_trimmer(
    *,
    strategy: Literal["first", "last"] = "last",
    include_system: bool = True,
    start_on: str | Sequence[str] | None = None,
    end_on: str | Sequence[str] | None = None,
    allow_partial: bool = False,
    token_counter: Literal["reference", "approximate"] = "reference",
) -> ChatPlugin:
    """A plug-in function that runs ``trim_messages`` with these options."""

    def trim(converted: list[Any], budget: int) -> Sequence[Any]:
        lc = langchain_messages()
        options: dict[str, Any] = {
            "max_tokens": budget,
            "token_counter": "approximate"
            if token_counter == "approximate"
            else reference_count(lc),
            "strategy": strategy,
            "allow_partial": allow_partial,
        }
        if strategy == "last":
            options["include_system"] = include_system
        if start_on is not None:
            options["start_on"] = start_on
        if end_on is not None:
            options["end_on"] = end_on
        trimmed: Sequence[Any] = lc.trim_messages(converted, **options)
        return trimmed

    return langchain_bridge(trim, name=f"trim_{strategy}")


trim_last = make_trimmer(strategy="last", include_system=True)
trim_last_start_on_human = make_trimmer(
    strategy="last", include_system=True, start_on="human", end_on=("human", "tool")
)
trim_first = make_trimmer(strategy="first")
trim_last_approximate = make_trimmer(
    strategy="last", include_system=True, token_counter="approximate"
)
