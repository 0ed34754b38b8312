"""ctxconf's reference context assembler.

Build a request that fits the model's budget and never breaks tool-call/tool-result pairing.

>>> from reference_impl import AssemblyConfig, assemble
>>> AssemblyConfig().input_budget
118784
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the names for type checkers; at run time each is imported on first use
    from reference_impl.assembler import Assembly, AssemblyReport, assemble
    from reference_impl.budget import BucketTokens, BudgetSnapshot
    from reference_impl.config import AssemblyConfig
    from reference_impl.errors import ConfigError, ContextAssemblyError
    from reference_impl.incremental import SessionAssembler
    from reference_impl.ledger import Ledger, LedgerEntry
    from reference_impl.memory import MemoryItem
    from reference_impl.metrics import AssemblyMetrics
    from reference_impl.retry import call_with_context_retry, context_overflow
    from reference_impl.summary import (
        AnthropicSummarizer,
        DeterministicSummarizer,
        OpenAISummarizer,
        Summarizer,
        SummaryBlock,
        SummaryRequest,
        redact_secrets,
    )

__all__ = [
    "AnthropicSummarizer",
    "Assembly",
    "AssemblyConfig",
    "AssemblyMetrics",
    "AssemblyReport",
    "BucketTokens",
    "BudgetSnapshot",
    "ConfigError",
    "ContextAssemblyError",
    "DeterministicSummarizer",
    "Ledger",
    "LedgerEntry",
    "MemoryItem",
    "OpenAISummarizer",
    "SessionAssembler",
    "Summarizer",
    "SummaryBlock",
    "SummaryRequest",
    "assemble",
    "call_with_context_retry",
    "context_overflow",
    "redact_secrets",
]

# Where each public name lives. Importing the package loads none of them, so a program that only
# needs one part (``ctxconf audit`` reads requests and validates them; it never assembles) does
# not pay for importing the assembler, the steps and the counters.
_HOMES = {
    "AnthropicSummarizer": "reference_impl.summary",
    "Assembly": "reference_impl.assembler",
    "AssemblyConfig": "reference_impl.config",
    "AssemblyMetrics": "reference_impl.metrics",
    "AssemblyReport": "reference_impl.assembler",
    "BucketTokens": "reference_impl.budget",
    "BudgetSnapshot": "reference_impl.budget",
    "ConfigError": "reference_impl.errors",
    "ContextAssemblyError": "reference_impl.errors",
    "DeterministicSummarizer": "reference_impl.summary",
    "Ledger": "reference_impl.ledger",
    "LedgerEntry": "reference_impl.ledger",
    "MemoryItem": "reference_impl.memory",
    "OpenAISummarizer": "reference_impl.summary",
    "SessionAssembler": "reference_impl.incremental",
    "Summarizer": "reference_impl.summary",
    "SummaryBlock": "reference_impl.summary",
    "SummaryRequest": "reference_impl.summary",
    "assemble": "reference_impl.assembler",
    "call_with_context_retry": "reference_impl.retry",
    "context_overflow": "reference_impl.retry",
    "redact_secrets": "reference_impl.summary",
}


def __getattr__(name: str) -> Any:
    """Import a public name from its module on first use (PEP 562)."""
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(home), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
