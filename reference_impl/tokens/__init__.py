"""Token counting: the ``TokenCounter`` protocol, the local counters and ``counter_for``.

The package holds every counting module; this namespace is the public surface: the names of
:mod:`reference_impl.tokens.counters` (its ``__all__``, imported whole):

* ``counters``: the protocol, the memo, the tiktoken and estimate counters, ``counter_for``;
* ``apis``: counters backed by the providers' count endpoints (``reference_impl.token_apis``
  re-exports them under their published path);
* ``encodings``: the verified offline tiktoken encodings and the model -> encoding table;
* ``_openai_costs``, ``_message_costs``, ``_tool_namespace``, ``_image_tokens``, ``_image_size``:
  the prompt-format models behind the counters (private to this package).
"""

from __future__ import annotations

from reference_impl.tokens import counters
from reference_impl.tokens.counters import *  # noqa: F403 - the package's names are counters'

__all__ = counters.__all__
