"""Metrics with the issue's names, isolated registries, and no message content in logs or metrics."""

from __future__ import annotations

import json
import logging

import pytest
from assembler_support import (
    WordCounter,
    assistant,
    ring,
    session,
    system,
    user,
    words,
)
from prometheus_client import CollectorRegistry, generate_latest

from reference_impl import (
    AssemblyConfig,
    AssemblyMetrics,
    ContextAssemblyError,
    Ledger,
    LedgerEntry,
    assemble,
)
from reference_impl.metrics import default_metrics
from reference_impl.transcript import Transcript

NAMES = {
    "context_assemble_tokens",
    "context_assemble_dropped_rings_total",
    "context_assemble_summary_total",
    "context_assemble_summary_fail_total",
    "context_assemble_pairing_error_total",
    "context_assemble_reject_total",
    "context_assemble_seconds",
}
LABELS = {"shape": "openai-chat", "strategy": "tool_ring"}


def exposed(metrics: AssemblyMetrics) -> str:
    return generate_latest(metrics.registry).decode("utf-8")


def assemble_compacting(
    s: Transcript, metrics: AssemblyMetrics, *, trigger: float, budget: int
) -> None:
    """Assemble ``s`` keeping no old ring whole and only the latest user turn, counted in words."""
    config = AssemblyConfig(
        recent_tool_rings=0, recent_user_turns=1, summarize_trigger_ratio=trigger
    )
    assemble(s, config, counter=WordCounter(), metrics=metrics, budget=budget)


def test_every_metric_name_is_registered_in_its_own_registry():
    a, b = AssemblyMetrics(CollectorRegistry()), AssemblyMetrics(CollectorRegistry())
    names = {m.name for m in a.registry.collect()}
    # prometheus_client strips _total from counter family names and adds it back on samples.
    assert {n if n.endswith(("tokens", "seconds")) else n + "_total" for n in names} == NAMES
    s = session(system(), user("goal"), ring("c1", words(80)), user("latest"))
    assemble_compacting(s, a, trigger=1.0, budget=40)
    assert a.sample("context_assemble_dropped_rings_total", **LABELS) == 1
    assert a.sample("context_assemble_tokens_count", **LABELS) == 1
    assert a.sample("context_assemble_seconds_count", **LABELS) == 1
    assert b.sample("context_assemble_dropped_rings_total", **LABELS) == 0


def test_rejections_and_summaries_are_counted():
    m = AssemblyMetrics(CollectorRegistry())
    call, _ = ring("c9", "x")
    with pytest.raises(ContextAssemblyError):
        assemble(
            session(system(), user("goal"), call, user("latest")), counter=WordCounter(), metrics=m
        )
    assert m.sample("context_assemble_pairing_error_total", **LABELS, outcome="rejected") == 1
    assert (
        m.sample("context_assemble_reject_total", **LABELS, code="context_assembly_pairing_error")
        == 1
    )
    s = session(system(), user("goal"), ring("c1", words(40)), assistant("ok"), user("latest"))
    assemble_compacting(s, m, trigger=0.05, budget=1000)
    assert m.sample("context_assemble_summary_total", **LABELS) == 1


def test_default_metrics_is_one_lazy_instance():
    assert default_metrics() is default_metrics()


def test_logs_and_metrics_never_carry_message_content(caplog):
    secret = "SECRET-unicorn-4471"
    s = session(
        system(f"system {secret}"),
        user(f"goal {secret}"),
        ring("c1", words(60, secret)),
        assistant(f"thinking about {secret}"),
        ring("c2", words(60, secret)),
        user(f"latest {secret}"),
    )
    ledger = Ledger((LedgerEntry("notify", "c1", "succeeded"),))
    m = AssemblyMetrics(CollectorRegistry())
    caplog.set_level(logging.DEBUG, logger="reference_impl")
    config = AssemblyConfig(recent_tool_rings=0, recent_user_turns=1, summarize_trigger_ratio=0.5)
    a = assemble(s, config, counter=WordCounter(), metrics=m, ledger=ledger, budget=150)
    assert a.report.summary_used
    with pytest.raises(ContextAssemblyError) as info:
        assemble(s, config, counter=WordCounter(), metrics=m, budget=10)
    assert caplog.records, "the assembler logs each assembly"
    for record in caplog.records:
        assert secret not in record.getMessage()
    assert secret not in exposed(m)
    assert secret not in json.dumps(a.report.to_dict())
    assert secret not in json.dumps(info.value.details)
    assert secret not in str(info.value)


def test_the_pipeline_counts_a_summary_once_and_nothing_else_as_one():
    # assemble_pipeline observes its own report (the steps one by one): the same metrics.
    from reference_impl.assembler import assemble_pipeline

    s = session(system(), user("goal"), ring("c1", words(40)), assistant("ok"), user("latest"))
    config = AssemblyConfig(recent_tool_rings=0, recent_user_turns=1, summarize_trigger_ratio=0.05)
    m = AssemblyMetrics(CollectorRegistry())
    a = assemble_pipeline(s, config, counter=WordCounter(), metrics=m, budget=1000)
    assert a.report.summary_used
    assert m.sample("context_assemble_summary_total", **LABELS) == 1
    plain = AssemblyMetrics(CollectorRegistry())
    b = assemble_pipeline(s, counter=WordCounter(), metrics=plain, budget=10_000)
    assert not b.report.summary_used
    assert plain.sample("context_assemble_summary_total", **LABELS) == 0
