"""Unit tests for each policy step of the reference assembler, with a transparent word counter."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from assembler_support import (
    WordCounter,
    assemble_words,
    assistant,
    ring,
    rings_between_turns,
    session,
    system,
    user,
    words,
)
from prometheus_client import CollectorRegistry

from reference_impl import (
    AssemblyConfig,
    AssemblyMetrics,
    BudgetSnapshot,
    ContextAssemblyError,
    Ledger,
    LedgerEntry,
    MemoryItem,
)
from reference_impl.config import MemoryConfig
from reference_impl.steps import CLEARED_RESULT_TEXT, SYNTHESIZED_RESULT_TEXT
from reference_impl.transcript import ImagePart, Message, TextPart, ToolSpec

NO_SUMMARY = AssemblyConfig(summarize_trigger_ratio=1.0, recent_tool_rings=1, recent_user_turns=1)


def run(s, config=NO_SUMMARY, **kw):
    return assemble_words(s, config, **kw)


def ids(assembly):
    return [m.id for m in assembly.view]


def long_session():
    """system, goal, 4 verbose rings with plain turns between, then the latest user turn."""
    return rings_between_turns(
        "GOAL: roll out v2",
        [words(50)] * 4,
        [assistant("checked one"), user("and the next?"), assistant("checked three")],
        "What is the rollback plan?",
    )


# --------------------------------------------------------------------------- fits untouched


def test_a_session_within_budget_is_returned_unchanged():
    s = long_session()
    a = run(s, budget=10_000)
    assert a.view.messages == s.messages
    assert a.report.decision == "ok"
    assert a.report.dropped_ring_ids == ()
    assert a.report.total_after == WordCounter().count(s).total


# ---------------------------------------------------------------------- prefix and suffix


def test_prefix_and_suffix_survive_and_oldest_rings_go_first():
    s = long_session()
    full = WordCounter().count(s).total
    a = run(s, budget=full - 60)  # one 55-token ring must go
    kept = ids(a)
    m = s.messages
    assert kept[0] == m[0].id
    assert kept[1] == m[1].id
    assert kept[-1] == m[-1].id  # latest user message
    assert m[2].id not in kept
    assert m[3].id not in kept
    assert a.report.dropped_ring_ids == (m[2].id,)
    assert "drop_middle_rings" in a.report.steps
    assert a.report.total_after <= full - 60


def test_recent_tool_rings_are_kept_even_when_old_plain_turns_must_go():
    s = long_session()
    config = NO_SUMMARY.with_changes(recent_tool_rings=2)
    a = run(s, config, budget=170)
    kept = set(ids(a))
    last_two_ring_heads = [s.messages[7].id, s.messages[10].id]
    assert set(last_two_ring_heads) <= kept


def test_prefix_over_budget_names_the_bucket():
    s = session(system(words(300)), user("goal"), assistant("ok"), user("latest"))
    with pytest.raises(ContextAssemblyError) as info:
        run(s, budget=100)
    assert info.value.code == "context_assembly_prefix_over_budget"
    assert info.value.details["bucket"] == "prefix"


def test_suffix_over_budget_names_the_bucket():
    s = session(system(), user("goal"), assistant("ok"), user(words(300)))
    with pytest.raises(ContextAssemblyError) as info:
        run(s, budget=100)
    assert info.value.code == "context_assembly_suffix_over_budget"


def test_tools_over_budget_is_refused_or_tools_dropped_when_configured():
    tools = tuple(ToolSpec(f"t{i}") for i in range(20))  # 200 tokens of schemas
    s = session(system(), user("goal"), assistant("ok"), user("latest"), tools=tools)
    with pytest.raises(ContextAssemblyError) as info:
        run(s, budget=100)
    assert info.value.code == "context_assembly_tools_over_budget"
    a = run(
        s, NO_SUMMARY.with_changes(on_still_over_budget="drop_tools_schema_then_fail"), budget=100
    )
    assert a.view.tools == ()
    assert "drop_tools_schema" in a.report.steps


def test_error_details_never_carry_message_content():
    secret = "zebra-unique-content-7781"
    s = session(system(words(300, secret)), user("goal"), user("latest"))
    with pytest.raises(ContextAssemblyError) as info:
        run(s, budget=50)
    assert secret not in json.dumps(info.value.details)
    assert secret not in str(info.value)


# --------------------------------------------------------------------------------- pairing


def broken():
    call, _ = ring("c9", "late")
    return session(system(), user("goal"), call, user("latest"))


def test_fail_closed_rejects_broken_pairing_naming_the_violation():
    with pytest.raises(ContextAssemblyError) as info:
        run(broken(), budget=10_000)
    assert info.value.code == "context_assembly_pairing_error"
    kinds = {v["kind"] for v in info.value.details["violations"]}
    assert "unanswered_call" in kinds


def test_synthesize_fills_only_calls_the_ledger_marks_timed_out_or_cancelled():
    config = NO_SUMMARY.with_changes(on_pairing_error="synthesize_error_results")
    running = Ledger((LedgerEntry("get_status", "c9", "pending"),))
    with pytest.raises(ContextAssemblyError):
        run(broken(), config, budget=10_000, ledger=running)
    with pytest.raises(ContextAssemblyError):
        run(broken(), config, budget=10_000)  # not in the ledger at all
    timed_out = Ledger((LedgerEntry("get_status", "c9", "timed_out"),))
    registry = AssemblyMetrics(CollectorRegistry())
    a = run(broken(), config, budget=10_000, ledger=timed_out, metrics=registry)
    assert a.report.repairs == ("c9",)
    results = [r for m in a.view for r in m.tool_results]
    assert [r.call_id for r in results] == ["c9"]
    assert results[0].is_error
    assert results[0].text == SYNTHESIZED_RESULT_TEXT.format(status="timed out")
    labels = {"shape": "openai-chat", "strategy": "tool_ring", "outcome": "repaired"}
    assert registry.sample("context_assemble_pairing_error_total", **labels) == 1


# ------------------------------------------------------------------------------------ tiers


def test_tier_order_verbose_rings_then_plain_turns_then_short_errors():
    s = session(
        system(),
        user("goal"),
        ring("e1", "denied", error=True),  # short error result: kept longest in the middle
        assistant(words(20, "plain")),
        ring("v1", words(40)),  # successful verbose result: dropped first
        user(words(20, "plain2")),
        ring("v2", words(40)),  # newer verbose ring, still before the protected suffix
        user("latest"),
        ring("last", "ok"),
    )
    counter = WordCounter()
    full = counter.count(s).total
    m = s.messages
    # Enough pressure to drop both verbose rings but no plain turn.
    a = run(s, budget=full - 2 * 46)
    kept = set(ids(a))
    assert m[5].id not in kept
    assert m[8].id not in kept
    assert {m[4].id, m[7].id, m[2].id} <= kept
    # More pressure: plain turns go (oldest first) before the short error ring.
    a = run(s, budget=full - 2 * 46 - 24)
    kept = set(ids(a))
    assert m[4].id not in kept
    assert m[7].id in kept
    assert m[2].id in kept
    assert a.report.steps.index("drop_middle_rings") < a.report.steps.index("drop_plain_turns")


def test_error_rings_beyond_the_cap_are_treated_like_verbose_rings():
    s = session(
        system(),
        user("goal"),
        ring("e1", "denied", error=True),
        ring("e2", "denied", error=True),
        assistant(words(10, "plain")),
        user("latest"),
    )
    config = NO_SUMMARY.with_changes(keep_middle_error_results=1)
    full = WordCounter().count(s).total
    a = run(s, config, budget=full - 5)
    kept = set(ids(a))
    assert s.messages[2].id not in kept  # the older error ring is beyond the cap
    assert s.messages[4].id in kept
    assert s.messages[6].id in kept


def test_parallel_ring_is_dropped_whole():
    s = session(
        system(), user("goal"), ring("p1", words(30), extra_calls=("p2", "p3")), user("latest")
    )
    a = run(s, NO_SUMMARY.with_changes(recent_tool_rings=0), budget=30)
    assert all(not m.has_tool_parts for m in a.view)
    assert a.report.dropped_ring_ids == (s.messages[2].id,)


# ------------------------------------------------------------------ attachments and clearing


def test_attachments_in_the_middle_are_degraded_before_text_is_cut():
    img = ImagePart("base64", "aGVsbG8=", media_type="image/png")
    s = session(
        system(),
        user("goal"),
        Message("user", (TextPart("see"), img)),
        assistant("nice picture"),
        user("latest"),
    )
    full = WordCounter().count(s).total
    a = run(s, budget=full - 50)
    assert "degrade_attachments" in a.report.steps
    assert "drop_plain_turns" not in a.report.steps
    degraded = a.view.messages[2]
    assert not any(isinstance(p, ImagePart) for p in degraded.parts)
    assert "image omitted" in degraded.text
    assert "image/png sha256:" in degraded.text
    assert a.report.degraded_attachment_ids == (s.messages[2].id,)


def test_clear_tool_result_keeps_calls_and_ids_and_respects_min_tokens_won():
    s = session(system(), user("goal"), ring("c1", words(60)), ring("c2", words(5)), user("latest"))
    config = NO_SUMMARY.with_changes(
        middle_delete_unit="clear_tool_result", recent_tool_rings=0, clear_min_tokens_won=20
    )
    full = WordCounter().count(s).total
    a = run(s, config, budget=full - 30)
    assert a.report.cleared_result_ids == ("c1",)  # c2 would win fewer than 20 tokens
    results = {r.call_id: r for m in a.view for r in m.tool_results}
    assert results["c1"].text == CLEARED_RESULT_TEXT
    assert results["c2"].text == words(5)
    assert [c.id for m in a.view for c in m.tool_calls] == ["c1", "c2"]
    assert a.report.dropped_ring_ids == ()


# ------------------------------------------------------------------- memory, ledger, budget


def test_memory_and_ledger_injections_are_labelled_capped_and_in_the_prefix():
    ledger = Ledger(
        (
            LedgerEntry(
                "notify_ops", "c1", "succeeded", idempotency_key="k-1", resource_id="msg_991"
            ),
        )
    )
    memory = [MemoryItem(f"profile-{i}", f"fact {i}") for i in range(4)]
    config = NO_SUMMARY.with_changes(memory=MemoryConfig(max_items=2))
    a = run(long_session(), config, budget=10_000, ledger=ledger, memory=memory)
    texts = [m.text for m in a.view if m.id.startswith("inject-")]
    assert texts[0].startswith("[memory source: profile-0]")
    assert texts[1].startswith("[memory source: profile-1]")
    assert texts[2].startswith("[memory source: side_effect_ledger]")
    assert "idempotency_key=k-1" in texts[2]
    assert "resource_id=msg_991" in texts[2]
    assert len(texts) == 3
    assert a.view.messages[1].id.startswith("inject-")  # right after the system text
    counter = WordCounter()
    injected = sum(counter.count_message(m) for m in a.view if m.id.startswith("inject-"))
    base = run(long_session(), budget=10_000)
    assert a.report.tokens_before.prefix == base.report.tokens_before.prefix + injected
    assert a.session_after().messages == base.view.messages


def test_budget_snapshot_lowers_the_budget_and_says_so():
    a = run(long_session(), budget=BudgetSnapshot(tokens_remaining=150))
    assert a.report.budget.input_budget == 150
    assert a.report.budget.source == "run_tokens"
    b = run(long_session(), budget=BudgetSnapshot(cost_remaining=0.3, price_per_input_token=0.002))
    assert b.report.budget.input_budget == 150
    assert b.report.budget.source == "run_cost"
    c = run(
        long_session(),
        AssemblyConfig(model_input_limit=1000, output_reserve_tokens=100, safety_margin_tokens=0),
        budget=BudgetSnapshot(tokens_remaining=5000),
    )
    assert c.report.budget.input_budget == 900
    assert c.report.budget.source == "model"


def test_old_end_of_a_long_session_is_not_counted():
    items: list = [system(), user("goal"), *(ring(f"c{i}", words(20)) for i in range(200))]
    items.append(user("latest"))
    s = session(*items)
    counter = WordCounter()
    a = run(s, counter=counter, budget=400)
    assert a.report.total_after <= 400
    assert len(counter.encoded) < 40  # about budget / ring size, not 400 messages
    assert len(counter.encoded) == len(set(counter.encoded))  # never the same message twice
    assert a.report.tokens_before_is_lower_bound


def test_still_over_budget_fails_closed_with_over_budget():
    # prefix + suffix fit, but nothing in the middle can be cut and the reply overhead tips it.
    s = session(system(), user("goal"), user("latest"))
    full = WordCounter().count(s).total
    with pytest.raises(ContextAssemblyError) as info:
        run(s, budget=full - 1)
    assert info.value.code in {
        "context_assembly_suffix_over_budget",
        "context_assembly_prefix_over_budget",
        "context_assembly_over_budget",
    }
    assert info.value.details["report"]["decision"] == "rejected"


def test_same_input_gives_byte_identical_output():
    s = long_session()
    a = run(s, AssemblyConfig(recent_tool_rings=1), budget=200)
    b = run(s, AssemblyConfig(recent_tool_rings=1), budget=200)
    assert json.dumps(a.render("openai-chat")) == json.dumps(b.render("openai-chat"))
    assert [m.id for m in a.view] == [m.id for m in b.view]


# ------------------------------------------------------------------------------- rendering


def _cache_marks(body):
    blocks = list(body["system"]) if isinstance(body.get("system"), list) else []
    for m in body["messages"]:
        if isinstance(m["content"], list):
            blocks.extend(m["content"])
    return [b for b in blocks if "cache_control" in b]


def test_anthropic_render_places_at_most_four_breakpoints_on_stable_boundaries():
    s = long_session()
    config = AssemblyConfig(recent_tool_rings=1, recent_user_turns=1, summarize_trigger_ratio=0.3)
    a = run(s, config, shape="anthropic-messages", budget=400)
    assert a.report.summary_used
    body = a.render()
    marks = _cache_marks(body)
    assert 1 <= len(marks) <= 4
    assert "cache_control" in body["system"][-1]  # end of the system text
    summary_blocks = [b for b in marks if "<context-summary>" in b.get("text", "")]
    assert summary_blocks, "the summary block ends a cached prefix"
    none = run(
        s,
        config.with_changes(anthropic_cache_breakpoints=0),
        shape="anthropic-messages",
        budget=400,
    )
    assert _cache_marks(none.render()) == []
    one = run(
        s,
        config.with_changes(anthropic_cache_breakpoints=1),
        shape="anthropic-messages",
        budget=400,
    )
    assert len(_cache_marks(one.render())) == 1  # at most the configured number, here one
    assert "cache_control" not in json.dumps(a.render("openai-chat"))


def test_render_in_every_shape_and_dialects_only_for_openai_chat():
    a = run(long_session(), budget=10_000)
    for shape in (
        "openai-chat",
        "openai-responses",
        "anthropic-messages",
        "gemini",
        "bedrock-converse",
    ):
        assert isinstance(a.render(shape), dict)
    from reference_impl.errors import ShapeError

    with pytest.raises(ShapeError):
        a.render("gemini", dialect="mistral")


def test_session_after_is_the_view_before_the_shape_s_merges():
    # Bedrock Converse alternates (B3): two user turns in a row are one message in the view,
    # two in what is stored (the merge is redone at every render).
    s = session(system(), user("GOAL: audit"), user("and the logs too"), assistant("on it"))
    a = run(s, budget=10_000, shape="bedrock-converse")
    assert len(a.view) < len(a.base_view)
    assert a.session_after().messages == a.base_view.messages


def test_render_for_mistral_remaps_ids_the_dialect_would_refuse():
    # The refusal says to pass remap_ids=True; render takes it (it raised a TypeError).
    from reference_impl.errors import ShapeError, UnsupportedPartError
    from reference_impl.transcript import transcript_from_json

    example = Path(__file__).resolve().parents[2] / "examples" / "session.json"
    a = run(transcript_from_json(example.read_text()), budget=10_000)
    with pytest.raises(UnsupportedPartError, match="remap_ids=True"):
        a.render("openai-chat", dialect="mistral")
    body = a.render("openai-chat", dialect="mistral", remap_ids=True)
    calls = [c["id"] for m in body["messages"] for c in m.get("tool_calls") or ()]
    results = [m["tool_call_id"] for m in body["messages"] if m["role"] == "tool"]
    assert calls
    assert all(re.fullmatch(r"[a-zA-Z0-9]{9}", i) for i in calls)
    assert set(results) <= set(calls)
    with pytest.raises(ShapeError, match="dialect"):
        a.render("openai-chat", remap_ids=True)
