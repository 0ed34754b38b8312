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
from typing import Any, Literal

from conformance.adapters._budget import count_chat_messages

__all__ = [
    "make_trimmer",
    "trim_first",
    "trim_last",
    "trim_last_approximate",
    "trim_last_start_on_human",
]

ChatMessages = list[dict[str, Any]]


def _import_langchain() -> Any:
    try:
        from langchain_core import messages as lc_messages  # noqa: PLC0415 - optional extra
    except ImportError as exc:  # pragma: no cover - exercised only without the extra
        raise ImportError(
            "the langchain adapter needs langchain-core: pip install 'ctxconf[langchain]'"
        ) from exc
    return lc_messages


def make_trimmer(
    *,
    strategy: Literal["first", "last"] = "last",
    include_system: bool = True,
    start_on: str | Sequence[str] | None = None,
    end_on: str | Sequence[str] | None = None,
    allow_partial: bool = False,
    token_counter: Literal["reference", "approximate"] = "reference",
) -> Callable[[ChatMessages, int], ChatMessages]:
    """A plug-in function that runs ``trim_messages`` with these options."""

    def trim(messages: ChatMessages, budget: int) -> ChatMessages:
        lc = _import_langchain()
        converted = lc.convert_to_messages(messages)
        counter: Any
        if token_counter == "approximate":
            counter = "approximate"
        else:

            def counter(batch: list[Any]) -> int:
                return count_chat_messages(lc.convert_to_openai_messages(batch))

        options: dict[str, Any] = {
            "max_tokens": budget,
            "token_counter": counter,
            "strategy": strategy,
            "allow_partial": allow_partial,
        }
        if strategy == "last":
            options["include_system"] = include_system
        if start_on is not None:
            options["start_on"] = start_on
        if end_on is not None:
            options["end_on"] = end_on
        trimmed = lc.trim_messages(converted, **options)
        result: ChatMessages = lc.convert_to_openai_messages(trimmed)
        return result

    trim.__name__ = f"trim_{strategy}"
    return trim


trim_last = make_trimmer(strategy="last", include_system=True)
trim_last_start_on_human = make_trimmer(
    strategy="last", include_system=True, start_on="human", end_on=("human", "tool")
)
trim_first = make_trimmer(strategy="first")
trim_last_approximate = make_trimmer(
    strategy="last", include_system=True, token_counter="approximate"
)
