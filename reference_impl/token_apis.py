"""The published path of the provider count-endpoint counters (:mod:`reference_impl.tokens.apis`)."""

from __future__ import annotations

from reference_impl.tokens.apis import AnthropicCountTokensCounter, OpenAIInputTokensCounter, Render

__all__ = ["AnthropicCountTokensCounter", "OpenAIInputTokensCounter", "Render"]
