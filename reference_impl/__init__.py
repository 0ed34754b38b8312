"""ctxconf's reference context assembler.

Build a request that fits the model's budget and never breaks tool-call/tool-result pairing.
"""

from __future__ import annotations

__all__: list[str] = []
