"""The assembly pipeline, one small named function per step, always in this order::

    load -> validate_pairing -> protect_prefix -> protect_suffix -> anchor_first_user
    -> check_buckets -> degrade_attachments -> clear_tool_results -> drop_middle_by_tier
    -> drop_leading_non_user -> summarize_middle -> escalate -> narrow_ledger_pin
    -> normalize (per shape)

Each step reads and changes an ``AssemblyState``; a step that changes the view records its name and
the view is re-validated for pairing right away.
"""

from __future__ import annotations

from reference_impl.steps.compact import (
    check_buckets,
    drop_tool_schemas,
    escalate,
    summarize_middle,
)
from reference_impl.steps.ledger_pin import narrow_ledger_pin
from reference_impl.steps.normalize import (
    anchor_first_user,
    drop_leading_non_user,
    needs_alternation,
    normalize_view,
)
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
    "anchor_first_user",
    "check_buckets",
    "check_pairing",
    "classify_middle",
    "clear_tool_results",
    "degrade_attachments",
    "drop_leading_non_user",
    "drop_middle_by_tier",
    "drop_tool_schemas",
    "escalate",
    "load_units",
    "narrow_ledger_pin",
    "needs_alternation",
    "normalize_view",
    "protect_prefix",
    "protect_suffix",
    "summarize_middle",
    "synthesize_error_results",
    "violations_details",
]
