"""``litellm.utils.trim_messages`` as a ctxconf plug-in.

Needs the ``litellm`` extra. litellm counts with its own bundled tokenizer and the model name
(``gpt-4o`` by default). Two side effects of importing litellm are contained here: it would fetch a
model price map over the network (``LITELLM_LOCAL_MODEL_COST_MAP=True`` keeps it local), and it
sets ``TIKTOKEN_CACHE_DIR`` for the whole process to its bundled files.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from conformance.adapters._chat import ChatMessages, adapter_module

__all__ = ["make_trimmer", "trim_messages"]


def _import_litellm_trim() -> Callable[..., Any]:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    utils = adapter_module("litellm", "litellm.utils")
    trim: Callable[..., Any] = utils.trim_messages
    return trim


def make_trimmer(
    *, model: str = "gpt-4o", trim_ratio: float = 1.0
) -> Callable[[ChatMessages, int], ChatMessages]:
    """A plug-in function running litellm's trimmer with ``max_tokens = budget * trim_ratio``.

    litellm is imported here, when the plug-in is loaded, not inside the first timed call: its import
    takes many seconds and would otherwise eat the first case's timeout.
    """
    litellm_trim = _import_litellm_trim()

    def trim(messages: ChatMessages, budget: int) -> ChatMessages:
        result = litellm_trim(messages, model=model, max_tokens=int(budget * trim_ratio))
        if isinstance(result, tuple):  # return_response_tokens=True form
            result = result[0]
        return list(result)

    trim.__name__ = "trim_messages"
    return trim


trim_messages = make_trimmer()
