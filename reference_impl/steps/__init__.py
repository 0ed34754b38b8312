"""The assembly pipeline, one small named function per step, always in this order::

    load -> validate_pairing -> protect_prefix -> protect_suffix -> check_buckets
    -> degrade_attachments -> clear_tool_results -> drop_middle_by_tier -> summarize_middle
    -> escalate

Each step reads and changes an ``AssemblyState``; a step that changes the view records its name and
the view is re-validated for pairing right away.
"""

from __future__ import annotations

from reference_impl.steps.compact import check_buckets, escalate, summarize_middle
from reference_impl.steps.pairing import (
    SYNTHESIZED_RESULT_TEXT,
    check_pairing,
    synthesize_error_results,
    violations_details,
)
from reference_impl.steps.protect import load_units, protect_prefix, protect_suffix
from reference_impl.steps.state import AssemblyState, Bucket, Tier, Unit
from reference_impl.steps.trim import (
    CLEARED_RESULT_TEXT,
    classify_middle,
    clear_tool_results,
    degrade_attachments,
    drop_middle_by_tier,
)

__all__ = [
    "CLEARED_RESULT_TEXT",
    "SYNTHESIZED_RESULT_TEXT",
    "AssemblyState",
    "Bucket",
    "Tier",
    "Unit",
    "check_buckets",
    "check_pairing",
    "classify_middle",
    "clear_tool_results",
    "degrade_attachments",
    "drop_middle_by_tier",
    "escalate",
    "load_units",
    "protect_prefix",
    "protect_suffix",
    "summarize_middle",
    "synthesize_error_results",
    "violations_details",
]
