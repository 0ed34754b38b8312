"""ctxconf's reference context assembler.

Build a request that fits the model's budget and never breaks tool-call/tool-result pairing.

>>> from reference_impl import AssemblyConfig, assemble
>>> AssemblyConfig().input_budget
118784
"""

from __future__ import annotations

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
