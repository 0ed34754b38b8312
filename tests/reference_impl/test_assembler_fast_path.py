"""``assemble()`` takes the indexed path (``reference_impl.incremental``) when it can; its result
is the pipeline's (``assemble_pipeline``), report included, field for field: ``tokens_before``
too, which says what was counted, so the indexed path counts exactly what the steps count."""

from __future__ import annotations

import json

from assembler_strategies import CONFIGS, never_cut, sessions
from assembler_support import (
    WordCounter,
    assembly_facts,
    assistant,
    outcome_of,
    ring,
    session,
    system,
    user,
    words,
)
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis_support import examples
from prometheus_client import CollectorRegistry

from reference_impl import AssemblyConfig, AssemblyMetrics
from reference_impl.assembler import assemble, assemble_pipeline
from reference_impl.incremental import SessionAssembler
from reference_impl.ledger import Ledger, LedgerEntry
from reference_impl.memory import MemoryItem
from reference_impl.tokens import counter_for
from reference_impl.tokens.counters import EstimateCounter
from reference_impl.transcript import (
    SHAPE_NAMES,
    ImagePart,
    Message,
    TextPart,
    ToolCallPart,
    ToolResultPart,
)


def everything(run):
    """All an assembly says but its timing, or the refusal's code and details."""
    return assembly_facts(outcome_of(run))


@st.composite
def cases(draw):
    """A session, a config, memory, a ledger and a budget; the budget mostly between what is
    never cut and the whole session, where trimming decides."""
    shape = draw(st.sampled_from(SHAPE_NAMES))
    session = sessions(draw, shape, min_messages=1, max_messages=30)
    config = draw(CONFIGS)
    memory = draw(st.sampled_from([(), (MemoryItem("notes", "prefers canary deploys"),)]))
    calls = [c.id for m in session.messages for c in m.tool_calls]
    entries = draw(
        st.lists(
            st.builds(
                LedgerEntry,
                st.just("notify"),
                st.sampled_from(calls or ["c-none"]),
                st.sampled_from(["succeeded", "timed_out"]),
                st.none() | st.just("key-1"),
            ),
            max_size=2,
            unique_by=lambda e: e.call_id,
        )
    )
    ledger = Ledger(tuple(entries))
    total = WordCounter().count(session).total
    floor = never_cut(session, config, shape, memory=memory, ledger=ledger)
    budget = draw(st.integers(max(0, floor - 5), total + 120) | st.integers(0, total + 120))
    return shape, session, config, budget, memory, ledger


def both_ways(case, counter_of):
    """What ``assemble`` and ``assemble_pipeline`` each say of ``case``, each with a counter
    ``counter_of(shape, session)``."""
    shape, session, config, budget, memory, ledger = case
    metrics = AssemblyMetrics(CollectorRegistry())

    def run(how):
        return lambda: how(
            session,
            config,
            shape=shape,
            counter=counter_of(shape, session),
            budget=budget,
            metrics=metrics,
            memory=memory,
            ledger=ledger,
        )

    return everything(run(assemble)), everything(run(assemble_pipeline))


@settings(max_examples=examples(600))  # deadline, health checks: hypothesis_support's profiles
@given(cases())
def test_assemble_is_the_pipeline(case):
    fast, pipeline = both_ways(case, lambda _shape, _session: WordCounter())
    assert fast == pipeline


@st.composite
def counted_cases(draw):
    """``cases`` with the budget drawn against the shape's own counter (``counter_for``: the
    memoized counters whose running totals let the indexed path skip the final recount)."""
    shape, session, config, _, memory, ledger = draw(cases())
    total = counter_for(shape, session.model).count(session).total
    budget = draw(st.integers(max(0, total - 400), total + 60) | st.integers(0, total + 60))
    return shape, session, config, budget, memory, ledger


@settings(max_examples=examples(300))
@given(counted_cases())
def test_assemble_is_the_pipeline_with_our_counters(case):
    # the indexed path skips the final recount when the running total, the merged messages'
    # own counts in place of what they hold, is within the budget: never where the pipeline's
    # recount would refuse or drop the schemas
    fast, pipeline = both_ways(case, lambda shape, session: counter_for(shape, session.model))
    assert fast == pipeline


def _both(s, config, budget):
    """What the indexed path and the pipeline each say, and the messages each counted."""
    metrics = AssemblyMetrics(CollectorRegistry())
    fast_counter, slow_counter = WordCounter(), WordCounter()
    assembler = SessionAssembler(config, counter=fast_counter, metrics=metrics)
    fast = everything(lambda: assembler.assemble(s, budget=budget))
    slow = everything(
        lambda: assemble_pipeline(s, config, counter=slow_counter, budget=budget, metrics=metrics)
    )
    assert assembler.last_path == "incremental"
    return fast, slow, set(fast_counter.encoded), set(slow_counter.encoded)


def test_only_the_newest_short_error_rings_are_decided():
    # Four short error rings in the middle, one kept as the error tier: classify_middle decides
    # (and counts) error rings newest first only until it has found one short ring.
    s = session(
        system(),
        user("GOAL: audit"),
        *(part for i in range(4) for part in (ring(f"e{i}", "boom", error=True), assistant("ok"))),
        ring("last", words(3)),
        user("next?"),
    )
    config = AssemblyConfig(
        keep_middle_error_results=1, recent_tool_rings=1, summarize_trigger_ratio=1.0
    )
    fast, slow, _, _ = _both(s, config, budget=60)
    assert fast == slow  # tokens_before: the oldest error rings were never reached
    assert json.loads(fast[-1])["tokens_before_is_lower_bound"]


def test_the_middle_is_summed_in_keep_order_so_a_ring_the_fill_drops_is_never_counted():
    # The newest middle unit is a long ring; the older plain turns fill the room first (a tier
    # kept longer than verbose rings) and the ring is dropped. AssemblyState.fits() sums the
    # middle in the fill's order, so neither path ever encodes the ring.
    s = session(
        system(),
        user("GOAL: audit"),
        *(assistant(words(6)) for _ in range(3)),
        ring("long", words(40)),
        ring("kept", words(2)),
        user("next?"),
    )
    config = AssemblyConfig(recent_tool_rings=1, summarize_trigger_ratio=1.0)
    # prefix 17 + suffix 18 + overhead 3: a room of 25 for three turns of 10 and a ring of 51
    fast, slow, counted_fast, counted_slow = _both(s, config, budget=63)
    assert fast == slow
    assert s.messages[6].id not in counted_fast | counted_slow  # the long ring's result
    report = json.loads(fast[-1])
    assert report["dropped_ring_ids"] == [s.messages[5].id]  # the long ring (its call's id)
    assert report["dropped_turn_ids"] == [s.messages[2].id]  # 10 + 10 fit, the third overflows
    # the three turns were counted (the third is where the fill stopped), the ring never
    assert report["tokens_before"]["middle"] == 30
    assert report["tokens_before_is_lower_bound"]


def test_attachments_degraded_across_tiers_count_alike_on_both_paths():
    # An image turn (105, degraded 13), then a ring whose result holds an image (7 + 105,
    # degraded 7 + 13): with room for 20 tokens both are degraded, and the ring, which the walk
    # reaches once the image turn is degraded (the plain-turn tier is kept first), is counted
    # as it was on both paths.
    image = ImagePart("url", "https://x/a.png")
    s = session(
        system(),
        user("GOAL: audit"),
        Message("user", (TextPart("u"), image)),
        Message("assistant", (ToolCallPart("c1", "get_status", '{"q": 1}'),)),
        Message("tool", (ToolResultPart("c1", (TextPart("r"), image)),)),
        ring("kept", words(2)),
        user("next?"),
    )
    config = AssemblyConfig(recent_tool_rings=1, recent_user_turns=1, summarize_trigger_ratio=1.0)
    # prefix 17 + suffix 18 + overhead 3: a room of 20
    fast, slow, _, _ = _both(s, config, budget=58)
    assert fast == slow
    report = json.loads(fast[-1])
    assert report["degraded_attachment_ids"] == [s.messages[2].id, s.messages[3].id]
    assert report["tokens_before"]["middle"] == 105 + 112


class _MergedTurnsCostMore(EstimateCounter):
    """Bedrock's estimate, a message of several parts (a merged turn) charged 40 tokens more:
    the merged view can count more than the running totals, which only the final recount sees."""

    def _message(self, message: Message) -> int:
        return super()._message(message) + (40 if len(message.parts) > 1 else 0)


def test_a_merged_view_over_the_budget_is_recounted_as_the_pipeline_recounts_it():
    # every ring's results are followed by a user turn: merged for Bedrock (B3), each merged
    # turn 40 tokens dearer than its two messages; at every budget both paths say the same
    items = [system(), user("GOAL: audit the fleet")]
    for i in range(8):
        items.extend(ring(f"c{i}", words(12)))
        items.append(user(f"ok {i}, go on"))
    s = session(*items)
    config = AssemblyConfig(summarize_trigger_ratio=1.0, recent_tool_rings=1, recent_user_turns=1)
    total = _MergedTurnsCostMore("bedrock-converse", safety_factor=1.0).count(s).total
    seen = set()
    for budget in range(total // 3, total + 400, 7):

        def run(how, budget=budget):
            return lambda: how(
                s,
                config,
                shape="bedrock-converse",
                counter=_MergedTurnsCostMore("bedrock-converse", safety_factor=1.0),
                budget=budget,
                metrics=AssemblyMetrics(CollectorRegistry()),
            )

        fast = everything(run(assemble))
        assert fast == everything(run(assemble_pipeline)), budget
        seen.add(fast[0] if fast[0] == "rejected" else "final_recount_over_budget" in fast[-1])
    assert seen >= {"rejected", False}  # refused near the fit, assembled above it
