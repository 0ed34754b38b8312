"""The assembly pipeline as data: ``PIPELINE``, one small named function per step, in order.

``load_state`` makes the state (pairing validated, or repaired, before anything else; the
session loaded into units), then every step of ``PIPELINE`` runs on it in turn
(``assembler.assemble``). ``SessionAssembler`` walks the same tuple on its incremental path.
Each step reads and changes an ``AssemblyState``; a step that changes the view records its name
and the view is re-validated for pairing right away.
"""

from __future__ import annotations

from typing import Final

from reference_impl.steps.compact import (
    check_buckets,
    drop_tool_schemas,
    escalate,
    final_recount,
    summarize_middle,
)
from reference_impl.steps.ledger_pin import narrow_ledger_pin
from reference_impl.steps.normalize import (
    anchor_first_user,
    drop_leading_non_user,
    needs_alternation,
    normalize_for_shape,
    normalize_transcript,
    normalize_view,
)
from reference_impl.steps.pairing import (
    SYNTHESIZED_RESULT_TEXT,
    check_pairing,
    synthesize_error_results,
    violations_details,
)
from reference_impl.steps.protect import load_state, load_units, protect_prefix, protect_suffix
from reference_impl.steps.state import AssemblyState, Bucket, Step, Tier, Unit
from reference_impl.steps.trim import (
    CLEARED_RESULT_TEXT,
    classify_middle,
    clear_tool_results,
    degrade_attachments,
    drop_middle_by_tier,
)

__all__ = [
    "CLEARED_RESULT_TEXT",
    "PIPELINE",
    "SYNTHESIZED_RESULT_TEXT",
    "AssemblyState",
    "Bucket",
    "Step",
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
    "final_recount",
    "load_state",
    "load_units",
    "narrow_ledger_pin",
    "needs_alternation",
    "normalize_for_shape",
    "normalize_transcript",
    "normalize_view",
    "protect_prefix",
    "protect_suffix",
    "summarize_middle",
    "synthesize_error_results",
    "violations_details",
]

PIPELINE: Final[tuple[Step, ...]] = (
    protect_prefix,
    protect_suffix,
    anchor_first_user,
    check_buckets,
    classify_middle,
    degrade_attachments,
    clear_tool_results,
    drop_middle_by_tier,
    drop_leading_non_user,
    summarize_middle,
    escalate,
    narrow_ledger_pin,
    normalize_for_shape,
    final_recount,
)
"""The policy, in order: protect the prefix and the suffix, anchor a user message first, check
the buckets, then cut the middle (tiers, attachments, old results, whole units by tier, leading
non-user units), summarize, escalate or fail closed, narrow the ledger note, normalize for the
shape, recount the final view."""
