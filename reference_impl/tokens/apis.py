"""Counters backed by the providers' token-count endpoints, used only when configured.

* ``AnthropicCountTokensCounter``: ``client.messages.count_tokens(...)``, ``POST
  /v1/messages/count_tokens`` (token-counting.md section 5: free, rate limited separately from
  message creation, "should be considered an estimate").
* ``OpenAIInputTokensCounter``: ``client.responses.input_tokens.count(...)``, ``POST
  /v1/responses/input_tokens`` (section 6).

The endpoints count whole requests. ``count()`` sends the request rendered by the shape adapter and
reports the provider's total; the per-message and tool numbers in the ``TokenCount`` come from the
local counter given as ``fallback`` (they are what an assembler needs to decide what to drop, and
they cost no call), and ``overhead`` is the provider total minus those, so it can be negative when
the local count is high. ``count_message``/``count_tools`` answer locally for the same reason. Whole
request totals are memoized by the digest of the rendered body, so a repeated view costs no call.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar

from reference_impl.errors import TokenCountError
from reference_impl.tokens.counters import (
    AnthropicEstimateCounter,
    RawCosting,
    TokenCount,
    TokenCounter,
    _Memo,
    counter_for,
)
from reference_impl.transcript import Message, ShapeName, ToolSpec, Transcript, canonical_json

if TYPE_CHECKING:  # the SDKs name the clients in the counters' base class (a string to ruff)
    import anthropic  # noqa: F401
    import openai  # noqa: F401

__all__ = ["AnthropicCountTokensCounter", "OpenAIInputTokensCounter", "Render"]

Render = Callable[[Transcript], Mapping[str, Any]]
_Client = TypeVar("_Client")


def _render_with(shape: str) -> Render:
    def render(transcript: Transcript) -> Mapping[str, Any]:
        from reference_impl.shapes import get_shape  # noqa: PLC0415 - shapes import this module's peers

        return get_shape(shape).render_request(transcript)

    return render


class _ProviderCounter(Generic[_Client]):
    """Shared plumbing: a provider total per rendered body, local numbers per message (by
    ``fallback``, else the subclass's :meth:`_local` counter). A subclass names the shape it
    renders, its report name and the body fields its endpoint accepts besides the messages."""

    _SHAPE: ClassVar[ShapeName]
    _NAME: ClassVar[str]
    _FIELDS: ClassVar[tuple[str, ...]]

    def __init__(
        self,
        client: _Client,
        model: str,
        *,
        fallback: TokenCounter | None = None,
        render: Render | None = None,
    ) -> None:
        self.client = client
        self.model = model
        self.fallback = fallback or self._local(model)
        self._render = render or _render_with(self._SHAPE)
        self._totals: _Memo[str] = _Memo(4096)

    def _local(self, model: str) -> TokenCounter:
        """The local counter of the per-message numbers when no ``fallback`` is given."""
        return counter_for(self._SHAPE, model)

    @property
    def name(self) -> str:
        """How reports name this counter."""
        return f"{self._NAME}({self.model})"

    def _accepted(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """The fields of ``body`` besides the messages that the endpoint takes."""
        return {k: body[k] for k in self._FIELDS if k in body}

    def _call(self, body: Mapping[str, Any]) -> int:  # pragma: no cover - overridden
        raise NotImplementedError

    def count_message(self, message: Message) -> int:
        return self.fallback.count_message(message)

    def count_tools(self, tools: Sequence[ToolSpec]) -> int:
        return self.fallback.count_tools(tools)

    def raw_costs(self, transcript: Transcript, shape: str | None = None) -> list[int] | None:
        """The local counter's (``RawCosting``): the provider counts a rendered body's raw
        blocks in its total, the pipeline's units need them per message."""
        if not isinstance(self.fallback, RawCosting):
            return None
        return self.fallback.raw_costs(transcript, shape or self._SHAPE)

    def count(self, transcript: Transcript) -> TokenCount:
        body = self._render(transcript)
        key = hashlib.sha256(canonical_json(body).encode("utf-8")).hexdigest()
        total = self._totals.get_or_compute(key, lambda: self._call(body))
        local = self.fallback.count(transcript)
        return TokenCount(
            total=total,
            messages=local.messages,
            tools=local.tools,
            overhead=total - sum(local.messages) - local.tools,
            counter=self.name,
            encoding=None,
        )


def _provider_failure(endpoint: str, exc: Exception) -> TokenCountError:
    status = getattr(exc, "status_code", None)
    detail = f"HTTP {status}: " if status is not None else ""
    return TokenCountError(f"{endpoint} failed ({detail}{exc})", where=endpoint)


class AnthropicCountTokensCounter(_ProviderCounter["anthropic.Anthropic"]):
    """Anthropic's ``count_tokens`` endpoint through the ``anthropic`` SDK (section 5)."""

    _SHAPE = "anthropic-messages"
    _NAME = "anthropic:count_tokens"
    _FIELDS = ("system", "tools", "tool_choice", "thinking")

    def _local(self, model: str) -> TokenCounter:
        return AnthropicEstimateCounter(model=model)

    def _call(self, body: Mapping[str, Any]) -> int:
        import anthropic  # noqa: PLC0415 - the SDK is needed only when this counter is configured

        try:
            answer = self.client.messages.count_tokens(
                model=self.model, messages=body["messages"], **self._accepted(body)
            )
        except anthropic.APIError as exc:
            raise _provider_failure("POST /v1/messages/count_tokens", exc) from exc
        return int(answer.input_tokens)


class OpenAIInputTokensCounter(_ProviderCounter["openai.OpenAI"]):
    """OpenAI's ``responses.input_tokens.count`` endpoint through the ``openai`` SDK (section 6)."""

    _SHAPE = "openai-responses"
    _NAME = "openai:responses.input_tokens"
    _FIELDS = (
        "instructions",
        "tools",
        "tool_choice",
        "parallel_tool_calls",
        "reasoning",
        "text",
        "truncation",
    )

    def _call(self, body: Mapping[str, Any]) -> int:
        import openai  # noqa: PLC0415 - the SDK is needed only when this counter is configured

        try:
            answer = self.client.responses.input_tokens.count(
                model=self.model, input=body.get("input", []), **self._accepted(body)
            )
        except openai.APIError as exc:
            raise _provider_failure("POST /v1/responses/input_tokens", exc) from exc
        return int(answer.input_tokens)
