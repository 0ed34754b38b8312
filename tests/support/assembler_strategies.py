"""Hypothesis strategies for the tests that compare two ways of assembling the same session
(``assemble`` with ``assemble_pipeline``, a ``SessionAssembler`` turn after turn with
``assemble``): the configs, sessions and budgets where the policy has decisions to make."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from assembler_support import WordCounter
from hypothesis import strategies as st
from prometheus_client import CollectorRegistry

from conformance.strategies import transcripts
from reference_impl import AssemblyConfig, AssemblyMetrics, ContextAssemblyError
from reference_impl.assembler import assemble_pipeline
from reference_impl.shapes import get_shape
from reference_impl.transcript import ShapeName, Transcript

CONFIGS = st.builds(
    AssemblyConfig,
    recent_tool_rings=st.integers(0, 2),
    recent_user_turns=st.integers(0, 2),
    middle_delete_unit=st.sampled_from(
        ["tool_ring", "tool_ring", "tool_ring", "clear_tool_result"]
    ),
    keep_middle_error_results=st.integers(0, 2),
    short_error_max_tokens=st.sampled_from([5, 40, 200]),
    summarize_trigger_ratio=st.sampled_from([0.5, 1.0, 1.0, 1.0]),
    compaction_headroom=st.sampled_from([0.0, 0.0, 0.0, 0.3]),
    pin=st.sampled_from(
        [
            ("first_user_message", "side_effect_ledger", "security_system_prompt"),
            ("first_user_message",),
            (),
        ]
    ),
)
"""Configs that move what is protected, how the middle is cut (and how far: the headroom a cut
leaves) and when a summary is written."""


def sessions(
    draw: st.DrawFn, shape: ShapeName, *, min_messages: int, max_messages: int
) -> Transcript:
    """A valid session for ``shape``; text-only half the time (attachments send trimming the
    long way, through degrading)."""
    caps = get_shape(shape).capabilities
    if draw(st.booleans()):
        caps = replace(
            caps,
            tool_result_attachments=frozenset({"text"}),
            user_attachments=frozenset({"text"}),
        )
    return draw(transcripts(caps, min_messages=min_messages, max_messages=max_messages))


def never_cut(session: Transcript, config: AssemblyConfig, shape: ShapeName, **knobs: Any) -> int:
    """The tokens ``config`` never cuts from ``session`` (all but the middle, with ``knobs``:
    memory, ledger), counted by ``WordCounter``: budgets from about there up to the whole
    session are where trimming decides. 0 when that assembly is refused."""
    total = WordCounter().count(session).total
    try:
        probe = assemble_pipeline(
            session,
            config.with_changes(summarize_trigger_ratio=1.0, middle_delete_unit="tool_ring"),
            shape=shape,
            counter=WordCounter(),
            budget=total + 200,
            metrics=AssemblyMetrics(CollectorRegistry()),
            **knobs,
        ).report
    except ContextAssemblyError:
        return 0
    return probe.tokens_before.total - probe.tokens_before.middle
