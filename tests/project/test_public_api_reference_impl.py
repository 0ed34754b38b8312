"""The public surface of ``reference_impl``: a small, sorted ``__all__`` that others depend on."""

from __future__ import annotations

import inspect

import reference_impl

EXPECTED = [
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


def test_all_is_pinned_and_sorted():
    assert reference_impl.__all__ == EXPECTED
    assert sorted(reference_impl.__all__) == reference_impl.__all__
    for name in EXPECTED:
        assert hasattr(reference_impl, name), name


def test_assemble_signature_is_the_documented_one():
    sig = inspect.signature(reference_impl.assemble)
    params = list(sig.parameters.values())
    assert [p.name for p in params] == [
        "session",
        "config",
        "shape",
        "counter",
        "summarizer",
        "ledger",
        "memory",
        "budget",
        "metrics",
    ]
    assert [p.kind for p in params[:2]] == [inspect.Parameter.POSITIONAL_OR_KEYWORD] * 2
    assert all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in params[2:])
    assert sig.parameters["shape"].default == "openai-chat"
    assert sig.parameters["memory"].default == ()


def test_retry_and_render_signatures():
    retry = inspect.signature(reference_impl.call_with_context_retry)
    assert list(retry.parameters)[:3] == ["call", "session", "config"]
    assert retry.parameters["shape"].kind is inspect.Parameter.KEYWORD_ONLY
    render = inspect.signature(reference_impl.Assembly.render)
    assert list(render.parameters) == ["self", "shape", "dialect"]
    assert {"from_yaml", "from_mapping", "input_budget"} <= set(dir(reference_impl.AssemblyConfig))
