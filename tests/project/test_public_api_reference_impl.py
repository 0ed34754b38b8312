"""The public surface of ``reference_impl``: a small, sorted ``__all__`` that others depend on."""

from __future__ import annotations

import ast
import inspect
import subprocess
import sys
from pathlib import Path

import pytest

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


def test_each_public_name_has_one_home_for_type_checkers_and_at_run_time():
    """The package imports its names on first use: the table it imports them from at run time
    names the same module for each name as the imports type checkers read."""
    tree = ast.parse(Path(reference_impl.__file__).read_text("utf-8"))
    guarded = next(
        node
        for node in tree.body
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING"
    )
    static = {
        alias.name: node.module
        for node in guarded.body
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    }
    assert static == reference_impl._HOMES
    assert sorted(static) == EXPECTED


def test_names_import_on_first_use_and_unknown_names_are_attribute_errors():
    probe = (
        "import sys, reference_impl\n"
        "assert 'reference_impl.assembler' not in sys.modules\n"
        "from reference_impl import *\n"
        "assert assemble is sys.modules['reference_impl.assembler'].assemble\n"
        "print(sorted(set(reference_impl.__all__) - set(dir(reference_impl))))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
    with pytest.raises(AttributeError, match="has no attribute 'assembler_of_tomorrow'"):
        _ = reference_impl.assembler_of_tomorrow


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
    assert list(render.parameters) == ["self", "shape", "dialect", "remap_ids"]
    assert {"from_yaml", "from_mapping", "input_budget"} <= set(dir(reference_impl.AssemblyConfig))
