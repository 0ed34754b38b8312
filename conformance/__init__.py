"""ctxconf's conformance harness: run any context assembler over scenarios in every provider shape."""

from __future__ import annotations

__all__: list[str] = []
