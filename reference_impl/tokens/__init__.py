"""Token counting: the ``TokenCounter`` protocol, the local counters and ``counter_for``.

The package holds every counting module; this namespace is the public surface (the names of
:mod:`reference_impl.tokens.counters`):

* ``counters``: the protocol, the memo, the tiktoken and estimate counters, ``counter_for``;
* ``apis``: counters backed by the providers' count endpoints (``reference_impl.token_apis``
  re-exports them under their published path);
* ``encodings``: the verified offline tiktoken encodings and the model -> encoding table;
* ``_openai_costs``, ``_message_costs``, ``_tool_namespace``, ``_image_tokens``, ``_image_size``:
  the prompt-format models behind the counters (private to this package).
"""

from __future__ import annotations

from reference_impl.tokens.counters import (
    DEFAULT_SAFETY_FACTORS,
    MEMO_SIZE,
    AnthropicEstimateCounter,
    EstimateCounter,
    TiktokenCounter,
    TokenCount,
    TokenCounter,
    counter_for,
    encoding_for_model,
)

__all__ = [
    "DEFAULT_SAFETY_FACTORS",
    "MEMO_SIZE",
    "AnthropicEstimateCounter",
    "EstimateCounter",
    "TiktokenCounter",
    "TokenCount",
    "TokenCounter",
    "counter_for",
    "encoding_for_model",
]
