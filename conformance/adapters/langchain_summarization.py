"""LangChain v1's ``SummarizationMiddleware`` and langmem's ``summarize_messages`` as plug-ins.

Need the ``langchain-summarization`` extra (``langchain>=1`` and ``langmem``). The summarizer is a
deterministic fake chat model (``langchain_core``'s ``FakeListChatModel`` answering one fixed
summary text), so everything runs offline and the same session always gives the same request; what
is judged is *which* messages each library replaces by its summary and which it keeps.

* ``summarization_middleware``: ``SummarizationMiddleware(model, trigger=("tokens", budget),
  keep=...)``, its ``before_model`` hook run on the session as an agent would before the model call
  (``keep`` defaults to the library's ``("messages", 20)``; ``keep_tokens_ratio`` keeps
  ``("tokens", budget * ratio)`` instead);
* ``langmem_summarize``: ``langmem.short_term.summarize_messages(messages, running_summary=None,
  model=..., max_tokens=budget, max_summary_tokens=budget // 2)`` (messages get the ids LangGraph's
  state would give them; langmem requires ids).

Both count with the reference counter (as every adapter does) unless ``token_counter="approximate"``
picks LangChain's ``count_tokens_approximately``, each library's default.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from typing import Any, Final, Literal

from conformance.adapters._chat import ChatMessages, ChatPlugin, install_hint, require
from conformance.adapters.langchain import (
    CORE_MODULE,
    langchain_bridge,
    langchain_messages,
    reference_count,
)
from conformance.loading import requires

__all__ = [
    "SUMMARY_TEXT",
    "langmem_summarize",
    "make_langmem_summarize",
    "make_summarization_middleware",
    "summarization_middleware",
    "summarization_middleware_keep_tokens",
]

SUMMARY_TEXT = "Summary: the user and the assistant worked on the task; tools were called."
"""What the fake summarizer model answers, every time."""

_MISSING = install_hint(
    "the summarization adapters need langchain and langmem", "langchain-summarization"
)


_MIDDLEWARE: Final = "langchain.agents.middleware"
_LANGMEM: Final = "langmem.short_term"


def _langchain_core() -> Any:
    return langchain_messages(_MISSING)


def _fake_model() -> Any:
    from langchain_core.language_models.fake_chat_models import (  # noqa: PLC0415
        FakeListChatModel,
    )

    return FakeListChatModel(responses=[SUMMARY_TEXT])


def _counter(token_counter: Literal["reference", "approximate"]) -> Callable[[Sequence[Any]], int]:
    lc = _langchain_core()
    if token_counter == "approximate":
        counter: Callable[[Sequence[Any]], int] = lc.count_tokens_approximately
        return counter
    return reference_count(lc)


def make_summarization_middleware(
    *,
    keep_messages: int | None = None,
    keep_tokens_ratio: float | None = None,
    token_counter: Literal["reference", "approximate"] = "reference",
) -> ChatPlugin:
    """``SummarizationMiddleware(fake, trigger=("tokens", budget), keep=...)``'s ``before_model``.

    Not a :func:`~conformance.adapters.langchain.langchain_bridge`: when the hook changes nothing
    the session is returned as it came, not converted there and back."""

    def summarize(messages: ChatMessages, budget: int) -> ChatMessages:
        lc = _langchain_core()
        middleware_module = require(
            _MIDDLEWARE,
            install_hint("SummarizationMiddleware needs langchain>=1", "langchain-summarization"),
        )
        options: dict[str, Any] = {"trigger": ("tokens", budget)}
        if keep_tokens_ratio is not None:
            options["keep"] = ("tokens", max(1, int(budget * keep_tokens_ratio)))
        elif keep_messages is not None:
            options["keep"] = ("messages", keep_messages)
        middleware = middleware_module.SummarizationMiddleware(
            _fake_model(), token_counter=_counter(token_counter), **options
        )
        state = {"messages": lc.convert_to_messages(messages)}
        update = middleware.before_model(state, None)  # the hook does not read the runtime
        if update is None:
            return messages
        kept = [m for m in update["messages"] if not isinstance(m, lc.RemoveMessage)]
        result: ChatMessages = lc.convert_to_openai_messages(kept)
        return result

    return requires(_MISSING, CORE_MODULE, _MIDDLEWARE)(summarize)


def make_langmem_summarize(
    *,
    max_summary_tokens: int | None = None,
    max_summary_ratio: float = 0.5,
    token_counter: Literal["reference", "approximate"] = "reference",
) -> ChatPlugin:
    """``langmem.short_term.summarize_messages(..., max_tokens=budget, max_summary_tokens=...)``.

    ``max_summary_tokens`` must stay below ``max_tokens`` (langmem raises otherwise), so by default
    it is ``budget * max_summary_ratio``, the proportion of langmem's own docstring example (128 of 256);
    a fixed ``max_summary_tokens`` is passed as given.
    """

    def summarize(session: list[Any], budget: int) -> Sequence[Any]:
        with warnings.catch_warnings():
            # langmem 0.0.x imports Send from langgraph.constants, deprecated since LangGraph 1.0.
            warnings.simplefilter("ignore", DeprecationWarning)
            short_term = require(
                _LANGMEM,
                install_hint("the langmem adapter needs langmem", "langchain-summarization"),
            )
        for index, message in enumerate(session):
            # LangGraph's state gives every message an id; summarize_messages requires one.
            message.id = message.id or f"m{index}"
        with warnings.catch_warnings(record=True):
            # langmem warns (RuntimeWarning) when it cannot trim what it summarizes and goes on
            # with the whole list; in production that is a log line, not an error, so here too.
            warnings.simplefilter("always")
            outcome = short_term.summarize_messages(
                session,
                running_summary=None,
                model=_fake_model(),
                max_tokens=budget,
                max_summary_tokens=(
                    max_summary_tokens
                    if max_summary_tokens is not None
                    else max(1, int(budget * max_summary_ratio))
                ),
                token_counter=_counter(token_counter),
            )
        kept: Sequence[Any] = outcome.messages
        return kept

    return langchain_bridge(summarize, name="summarize", missing=_MISSING, modules=(_LANGMEM,))


summarization_middleware = make_summarization_middleware()
summarization_middleware_keep_tokens = make_summarization_middleware(keep_tokens_ratio=0.5)
langmem_summarize = make_langmem_summarize()
