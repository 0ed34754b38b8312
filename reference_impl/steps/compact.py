"""Bucket checks, summary replacement and the last resort (drop tool schemas, or fail closed)."""

from __future__ import annotations

import hashlib
import logging
import queue
import threading
from typing import Any

from reference_impl.errors import ContextAssemblyError
from reference_impl.steps.normalize import normalize_for_shape
from reference_impl.steps.state import AssemblyState, Unit
from reference_impl.summary import (
    Summarizer,
    SummaryBlock,
    SummaryRequest,
    redact_messages,
    redact_secrets,
    summary_depth,
)
from reference_impl.transcript import Transcript

__all__ = [
    "check_buckets",
    "drop_tool_schemas",
    "escalate",
    "final_recount",
    "summarize_middle",
]

log = logging.getLogger("reference_impl")


def _bucket_details(state: AssemblyState) -> dict[str, Any]:
    return {
        "budget": state.budget,
        "budget_source": state.plan.source,
        "tokens": {
            "prefix": state.bucket_cost("prefix"),
            "suffix": state.bucket_cost("suffix"),
            "tools": state.tools_cost,
            "overhead": state.overhead,
        },
    }


def drop_tool_schemas(state: AssemblyState) -> bool:
    """``drop_tools_schema_then_fail``: stop offering the tool schemas no protected ring uses.

    Bedrock requires ``toolConfig`` whenever the history holds toolUse/toolResult blocks (B5), and
    a ring without its tool's schema is a call to an unknown tool. So the schemas of tools called
    by rings in the prefix or suffix are kept; every other schema is dropped, and so is every
    middle ring that calls a dropped tool (rings go whole, never flattened). All schemas go only
    when no ring remains. Returns False when nothing could be dropped.
    """
    if state.config.on_still_over_budget != "drop_tools_schema_then_fail" or not state.tools:
        return False
    needed = {
        call.name
        for u in state.units
        if u.kept and u.kind == "ring" and u.bucket != "middle"
        for call in u.messages[0].tool_calls
    }
    keep = tuple(t for t in state.tools if t.name in needed)
    if len(keep) == len(state.tools):
        return False
    gone = {t.name for t in state.tools} - needed
    state.dropped_tool_names.extend(t.name for t in state.tools if t.name in gone)
    state.tools = keep
    state.tools_cost = state.counter.count_tools(keep)
    state.refresh_overhead()
    for unit in state.units:
        if (
            unit.kept
            and unit.kind == "ring"
            and unit.bucket == "middle"
            and any(c.name in gone for c in unit.messages[0].tool_calls)
        ):
            unit.kept = False
            state.dropped_ring_ids.append(unit.id)
    if keep:
        state.notes.append("tool_schemas_kept_for_rings")
    state.record("drop_tools_schema")
    return True


def _fixed_fits(state: AssemblyState) -> bool:
    return state.fixed_cost <= state.budget


def _overhead_without_tools(state: AssemblyState) -> int:
    """The request overhead the tools do not cause. What they add (Claude's hidden tool-use
    prompt) is the tools' cost: it goes with them, so it never makes the prefix overflow."""
    empty = Transcript((), model=state.session.model, params=state.session.params)
    return min(state.counter.count(empty).overhead, state.overhead)


def check_buckets(state: AssemblyState) -> None:
    """Prefix and suffix are never cut for the middle: if they (with tools) cannot fit, refuse and
    say which bucket overflowed (or drop tool schemas first when configured)."""
    if _fixed_fits(state):
        return
    overhead = _overhead_without_tools(state)
    prefix = state.bucket_cost("prefix") + overhead
    suffix = state.bucket_cost("suffix")
    if prefix > state.budget:
        bucket = "prefix"
    elif prefix + suffix > state.budget:
        bucket = "suffix"
    else:
        if drop_tool_schemas(state) and _fixed_fits(state):
            return
        bucket = "tools"
    tools = state.tools_cost + state.overhead - overhead  # the schemas left, and their prompt
    raise ContextAssemblyError(
        f"the {bucket} bucket does not fit the input budget of {state.budget} tokens "
        f"(prefix {prefix}, suffix {suffix}, tools {tools}); the prefix and suffix "
        "are never cut to make room",
        code=f"context_assembly_{bucket}_over_budget",
        details={**_bucket_details(state), "bucket": bucket},
    )


def _summarize_within(summarizer: Summarizer, request: SummaryRequest) -> object:
    """``summarizer.summarize(request)``, but a ``TimeoutError`` after ``request.timeout_s``.

    The SDK-backed summarizers honour the timeout themselves; this deadline holds for any
    summarizer, including a third party's that hangs. A thread cannot be killed: a summarizer
    still running at the deadline is abandoned (a daemon thread, its result discarded) and the
    pipeline escalates as for any failed summary.
    """
    answers: queue.SimpleQueue[tuple[bool, object]] = queue.SimpleQueue()

    def run() -> None:
        try:
            answers.put((True, summarizer.summarize(request)))
        except BaseException as exc:  # noqa: BLE001 - handed to the caller, which re-raises it
            answers.put((False, exc))

    threading.Thread(target=run, name="ctxconf-summarizer", daemon=True).start()
    try:
        ok, value = answers.get(timeout=request.timeout_s)
    except queue.Empty:
        raise TimeoutError(f"summarizer took longer than {request.timeout_s:g} s") from None
    if not ok:
        assert isinstance(value, BaseException)
        raise value
    return value


def _summary_id(text: str) -> str:
    # Content-addressed: the same summary keeps the same id, so a reused summary is byte-stable.
    return f"summary-{hashlib.sha256(text.encode('utf-8')).hexdigest()[:12]}"


def summarize_middle(state: AssemblyState) -> None:
    """Replace what is left of the middle with one structured summary block.

    Runs when the view is over budget or above ``summarize_trigger_ratio`` of it. A failed
    summary is counted and the pipeline goes on to escalate; a summary that is not smaller than
    what it replaces is not used.
    """
    config = state.config
    if state.fits(state.budget * config.summarize_trigger_ratio):
        return
    middle = [u for u in state.units if u.kept and u.bucket == "middle"]
    if not middle or all(u.kind == "summary" for u in middle):
        return
    summarizer = state.summarizer
    old_depths = [summary_depth(u.messages[0].text) for u in middle if u.kind == "summary"]
    depth = max(old_depths, default=0) + 1
    source = middle
    if depth > config.summary_max_depth:
        # Bounded: older summary text is not folded in again. Side effects are not lost, since
        # the summary's ledger section is written from the ledger itself every time.
        depth = config.summary_max_depth
        source = [u for u in middle if u.kind != "summary"]
        state.notes.append("summary_depth_capped")
    redact = getattr(summarizer, "redact", redact_secrets)
    goal = next(
        (
            u.messages[0].text
            for u in state.units
            if u.kind == "turn" and u.messages[0].role == "user"
        ),
        "",
    )
    request = SummaryRequest(
        messages=redact_messages([m for u in source for m in u.messages], redact),
        ledger=state.ledger,
        user_goal=redact(goal),
        max_tokens=config.summary_max_tokens,
        timeout_s=config.summary_timeout_ms / 1000,
        depth=depth,
    )
    try:
        block = _summarize_within(summarizer, request)  # third-party code: check the type
        if not isinstance(block, SummaryBlock) or not block.text.strip():
            raise TypeError("summarizer returned no SummaryBlock")
    except Exception as exc:  # noqa: BLE001 - a third-party summarizer may raise anything; escalate
        state.summary_failed = True
        state.steps.append("summary_failed")
        log.warning(
            "summary failed: summarizer=%s error=%s", type(summarizer).__name__, type(exc).__name__
        )
        return
    message = block.message(_summary_id(block.text))
    unit = Unit("summary", (message,), bucket="middle", tier="summary", created=True)
    replaced = sum(state.cost(u) for u in middle)
    if state.cost(unit) >= replaced:
        state.notes.append("summary_not_smaller")
        return
    position = next(i for i, u in enumerate(state.units) if u.bucket == "middle")
    for u in middle:
        u.kept = False
        (state.dropped_ring_ids if u.kind == "ring" else state.dropped_turn_ids).append(u.id)
    state.units.insert(position, unit)
    state.summary_id = message.id
    state.summarizer_name = block.summarizer
    state.record("summarize_middle")


def escalate(state: AssemblyState) -> None:
    """Still over budget: drop tool schemas when configured, else refuse (fail closed)."""
    if state.fits():
        return
    if drop_tool_schemas(state) and state.fits():
        return
    # A failed summary that left the view over budget is the reason for the refusal.
    code = (
        "context_assembly_summary_failed"
        if state.summary_failed
        else "context_assembly_over_budget"
    )
    raise ContextAssemblyError(
        f"still over the input budget of {state.budget} tokens after every step "
        f"({', '.join(state.steps)})",
        code=code,
        details=_bucket_details(state),
    )


def final_recount(state: AssemblyState) -> None:
    """One memoized pass over the final view; if the whole-request count disagrees with the
    running totals and is over, drop tool schemas once more (when configured), then fail closed."""
    assert state.final_view is not None
    total = state.counter.count(state.final_view).total
    if total <= state.budget:
        return
    state.notes.append("final_recount_over_budget")
    if drop_tool_schemas(state):
        normalize_for_shape(state)
        assert state.final_view is not None
        total = state.counter.count(state.final_view).total
        if total <= state.budget:
            return
    raise ContextAssemblyError(
        f"the assembled request counts {total} tokens, over the input budget of {state.budget}",
        code="context_assembly_over_budget",
        details={"budget": state.budget, "total": total},
    )
