"""``SessionAssembler`` gives the same result as ``assemble()`` turn after turn, and answers a
turn that only appends messages without looking at the old ones again."""

from __future__ import annotations

import itertools
from dataclasses import replace

import pytest
from assembler_strategies import CONFIGS, never_cut, sessions
from assembler_support import (
    WordCounter,
    assembly_facts,
    assistant,
    decided,
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

import reference_impl.incremental as incremental
from reference_impl import (
    AssemblyConfig,
    AssemblyMetrics,
    ContextAssemblyError,
    Ledger,
    MemoryItem,
    assemble,
)
from reference_impl.assembler import assemble_pipeline
from reference_impl.errors import TranscriptError
from reference_impl.incremental import SessionAssembler
from reference_impl.steps import PIPELINE
from reference_impl.transcript import (
    SHAPE_NAMES,
    Message,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    ToolSpec,
)


@st.composite
def growing_sessions(draw):
    shape = draw(st.sampled_from(SHAPE_NAMES))
    full = sessions(draw, shape, min_messages=3, max_messages=24)
    cuts = sorted(set(draw(st.lists(st.integers(1, len(full)), min_size=1, max_size=6))))
    if cuts[-1] != len(full):
        cuts.append(len(full))
    config = draw(CONFIGS)
    total = WordCounter().count(full).total
    floor = never_cut(full, config, shape)  # where trimming decides
    budget = draw(st.integers(max(0, floor - 5), total + 20))
    return shape, full, cuts, config, budget


@settings(max_examples=examples(500))  # deadline, health checks: hypothesis_support's profiles
@given(growing_sessions())
def test_each_turn_equals_the_stateless_assembly(case):
    shape, full, cuts, config, budget = case
    metrics = AssemblyMetrics(CollectorRegistry())
    assembler = SessionAssembler(config, shape=shape, counter=WordCounter(), metrics=metrics)
    kept, last = None, 0  # with a headroom: the last turn's session_after(), its length
    for cut in cuts:
        turn = full.with_messages(full.messages[:cut])  # the very same message objects
        basis = turn if kept is None else turn.with_messages((*kept, *turn.messages[last:]))
        got = decided(lambda t=turn: assembler.assemble(t, budget=budget))
        stateless = outcome_of(  # the policy's definition, not assemble(): a first turn
            lambda t=basis: assemble_pipeline(
                t, config, shape=shape, counter=WordCounter(), budget=budget, metrics=metrics
            )
        )
        assert got == decided(lambda s=stateless: _raised(s)), cut
        if config.compaction_headroom and not isinstance(stateless, ContextAssemblyError):
            kept, last = stateless.session_after().messages, cut
        else:
            kept = None


def _raised(outcome):
    if isinstance(outcome, ContextAssemblyError):
        raise outcome
    return outcome


def _turn_after_turn(full, cuts, config, budget, shape, *, blocks):
    """Every turn's whole assembly (``tokens_before`` too: what the walks reached, on any
    turn) through one ``SessionAssembler``, its fills resuming from the last one's blocks or
    (``blocks=False``) walking each tier whole."""
    saved = incremental._BLOCK_TIERS
    incremental._BLOCK_TIERS = saved if blocks else frozenset()
    try:
        assembler = SessionAssembler(
            config, shape=shape, counter=WordCounter(), metrics=AssemblyMetrics(CollectorRegistry())
        )
        found = []
        for cut in cuts:
            turn = full.with_messages(full.messages[:cut])
            found.append(
                assembly_facts(outcome_of(lambda t=turn: assembler.assemble(t, budget=budget)))
            )
        return found
    finally:
        incremental._BLOCK_TIERS = saved


@settings(max_examples=examples(500))
@given(growing_sessions())
def test_resuming_from_the_last_fill_s_block_equals_walking_the_whole_tier(case):
    # the whole report, tokens_before included: the units the block's walk reached are those
    # a walk over the whole tier reaches, turn after turn
    shape, full, cuts, config, budget = case
    with_blocks = _turn_after_turn(full, cuts, config, budget, shape, blocks=True)
    assert with_blocks == _turn_after_turn(full, cuts, config, budget, shape, blocks=False)


def agent_session(rings: int):
    items = [system(), user("GOAL: audit"), user("start")]
    for i in range(rings):
        items.extend(ring(f"c{i}", words(30)))
    return session(*items)


def test_the_next_turn_counts_only_new_messages_and_uses_the_fast_path():
    config = AssemblyConfig(summarize_trigger_ratio=1.0, recent_tool_rings=2)
    counter = WordCounter()
    assembler = SessionAssembler(
        config, counter=counter, metrics=AssemblyMetrics(CollectorRegistry())
    )
    s = agent_session(200)
    first = assembler.assemble(s, budget=600)
    assert first.report.dropped_ring_ids
    counted = len(counter.encoded)
    assert counted < 60  # what is kept plus one unit, not the 400 messages of the session
    s2 = s.with_messages((*s.messages, *ring("new", words(30))))
    second = assembler.assemble(s2, budget=600)
    assert assembler.fast_turns == 2
    assert len(counter.encoded) - counted <= 3  # the new ring (2 messages), and one older unit
    cold = assemble(s2, config, counter=WordCounter(), budget=600)
    assert [m.id for m in second.view] == [m.id for m in cold.view]
    assert second.report.dropped_ring_ids == cold.report.dropped_ring_ids


def test_the_next_turn_resumes_the_fill_from_the_block_the_last_one_kept():
    # plain turns between the rings, the latest user messages pinned among them: the block the
    # fill notes is the run of turns it took, its sum the costs of all of them (pinned ones too)
    items = [system(), user("GOAL: audit")]
    for i in range(120):
        items += [assistant(f"note {i} " + words(6)), user(f"ok {i}")]
    for i in range(6):
        items.extend(ring(f"c{i}", words(20)))
    s = session(*items)
    config = AssemblyConfig(summarize_trigger_ratio=1.0, recent_tool_rings=2, recent_user_turns=2)
    assembler = SessionAssembler(config, counter=WordCounter())
    first = assembler.assemble(s, budget=700)
    assert first.report.dropped_turn_ids
    index = assembler._index
    lo, hi, tokens = index.blocks["plain_turn"]
    assert hi - lo > 50
    assert tokens == sum(index.costs[p] for p in index.turns[lo:hi])
    s2 = s.with_messages((*s.messages, *ring("new", words(40))))
    second = assembler.assemble(s2, budget=700)
    assert assembler.last_path == "incremental"
    assert decided(lambda: second) == decided(
        lambda: assemble(s2, config, counter=WordCounter(), budget=700)
    )


def test_a_session_that_is_not_an_extension_starts_afresh():
    config = AssemblyConfig(summarize_trigger_ratio=1.0)
    assembler = SessionAssembler(config, counter=WordCounter())
    a = assembler.assemble(agent_session(5), budget=10_000)
    other = session(system(), user("another task"), assistant("ok"), user("go"))
    b = assembler.assemble(other, budget=10_000)
    assert [m.id for m in b.view] == [m.id for m in other]
    assert a.report.session_digest != b.report.session_digest


def test_a_broken_new_message_is_refused_like_assemble_does():
    config = AssemblyConfig(summarize_trigger_ratio=1.0)
    assembler = SessionAssembler(config, counter=WordCounter())
    s = agent_session(3)
    assembler.assemble(s, budget=10_000)
    call, _ = ring("c1", "again")  # reuses an old call id (C3, A5)
    with pytest.raises(ContextAssemblyError) as info:
        assembler.assemble(s.with_messages((*s.messages, call)), budget=10_000)
    assert info.value.code == "context_assembly_pairing_error"


def test_a_session_with_images_keeps_the_incremental_path():
    """Attachments in the middle are degraded on the incremental path too (no ``full:`` turn),
    with the same result as the stateless pipeline, turn after turn."""
    from reference_impl.transcript import ImagePart, Message, TextPart

    image = ImagePart("url", "https://example.com/chart.png")
    items = [system(), user("GOAL: audit")]
    for i in range(40):
        items.append(Message("user", (TextPart(f"look at chart {i}"), image)))
        items.extend(ring(f"c{i}", words(30)))
    items.append(user("what now?"))
    full = session(*items)
    config = AssemblyConfig(summarize_trigger_ratio=1.0, recent_tool_rings=2)
    metrics = AssemblyMetrics(CollectorRegistry())
    assembler = SessionAssembler(config, counter=WordCounter(), metrics=metrics)
    paths = []
    for cut in (60, 80, 100, len(full)):
        turn = full.with_messages(full.messages[:cut])
        for budget in (700, 2500, 6000):
            got = decided(lambda t=turn, b=budget: assembler.assemble(t, budget=b))
            paths.append(assembler.last_path)
            want = decided(
                lambda t=turn, b=budget: assemble(
                    t, config, counter=WordCounter(), budget=b, metrics=metrics
                )
            )
            assert got == want, (cut, budget)
    assert "full:attachments" not in paths
    fresh = SessionAssembler(config, counter=WordCounter(), metrics=metrics)
    fresh.assemble(full.with_messages(full.messages[:-3]), budget=2500)
    degraded = fresh.assemble(full, budget=2500)
    assert fresh.last_path == "incremental"
    assert degraded.report.degraded_attachment_ids
    assert "degrade_attachments" in degraded.report.steps


def test_clearing_old_results_under_pressure_equals_the_stateless_assembly():
    # clear_tool_result clears middle results before any unit is dropped; the incremental path
    # leaves that to the full pipeline instead of dropping the rings.
    config = AssemblyConfig(middle_delete_unit="clear_tool_result", summarize_trigger_ratio=1.0)
    s = agent_session(12)
    assembler = SessionAssembler(config, counter=WordCounter())
    got = assembler.assemble(s, budget=400)
    cold = assemble(s, config, counter=WordCounter(), budget=400)
    assert "clear_tool_results" in cold.report.steps
    assert assembler.last_path == "full:clear_tool_results"
    assert decided(lambda: got) == decided(lambda: cold)


def test_the_incremental_path_takes_every_step_of_the_pipeline():
    assert list(SessionAssembler._FAST_STEPS) == list(PIPELINE)


def test_a_long_session_equals_the_stateless_assembly_turn_after_turn():
    """Hundreds of units, so the incremental walks cross their chunks: plain turns dropped by
    the thousand, the latest user messages pinned among the dropped ones (the ids are then
    slices joined, not one slice), an old summary in its own tier, images degraded."""
    from reference_impl.transcript import ImagePart, Message, SummaryPart, TextPart

    image = ImagePart("url", "https://example.com/chart.png")
    items = [system(), user("GOAL: audit"), Message("user", (SummaryPart(words(120)),))]
    for i in range(150):
        items.append(assistant(f"note {i} " + words(3)))
        items.append(Message("user", (TextPart(f"look {i}"), image)) if i % 7 == 0 else user("ok"))
    items.append(user("now the rings"))  # the latest user messages: older than every ring below
    items.append(user("go"))
    for i in range(60):
        items.extend(ring(f"c{i}", words(8 if i % 3 else 30), error=i % 11 == 0))
    full = session(*items)
    metrics = AssemblyMetrics(CollectorRegistry())
    for config in (
        AssemblyConfig(summarize_trigger_ratio=1.0, recent_tool_rings=2, recent_user_turns=2),
        AssemblyConfig(summarize_trigger_ratio=1.0, recent_tool_rings=0, pin=()),
    ):
        for budget in (150, 400, 900, 2500):
            assembler = SessionAssembler(config, counter=WordCounter(), metrics=metrics)
            paths = []
            for cut in range(len(full) - 40, len(full) + 1, 4):
                turn = full.with_messages(full.messages[:cut])
                got = decided(lambda t=turn, b=budget, a=assembler: a.assemble(t, budget=b))
                paths.append(assembler.last_path)
                want = decided(
                    lambda t=turn, b=budget, c=config: assemble(
                        t, c, counter=WordCounter(), budget=b, metrics=metrics
                    )
                )
                assert got == want, (config.recent_tool_rings, budget, cut)
            assert "incremental" in paths, paths


ROOMY = AssemblyConfig(summarize_trigger_ratio=1.0, recent_tool_rings=1, compaction_headroom=0.3)
"""The headroom tests' config: cuts, not summaries; 0.3 of the budget left free at a cut."""


def _assembler(config: AssemblyConfig) -> SessionAssembler:
    return SessionAssembler(
        config, counter=WordCounter(), metrics=AssemblyMetrics(CollectorRegistry())
    )


def _cut(report) -> bool:
    return bool(
        report.dropped_ring_ids
        or report.dropped_turn_ids
        or report.degraded_attachment_ids
        or report.cleared_result_ids
    )


def _stored_run(headroom: float, turns: int = 40):
    """An agent that stores ``session_after()`` and appends a ring a turn: each turn's assembly,
    checked against the stateless one on the same stored session."""
    config = AssemblyConfig(
        summarize_trigger_ratio=1.0, recent_tool_rings=1, compaction_headroom=headroom
    )
    metrics = AssemblyMetrics(CollectorRegistry())
    assembler = SessionAssembler(config, counter=WordCounter(), metrics=metrics)
    stored = agent_session(0)
    found = []
    for turn in range(turns):
        stored = stored.with_messages((*stored.messages, *ring(f"t{turn}", words(30))))
        got = assembler.assemble(stored, budget=600)
        want = assemble_pipeline(stored, config, counter=WordCounter(), budget=600, metrics=metrics)
        assert decided(lambda g=got: g) == decided(lambda w=want: w)
        found.append(got)
        stored = got.session_after()
    return found


def test_with_headroom_the_turns_between_two_compactions_only_append():
    # The stored view plus a ring of 41 tokens a turn, budget 600: without headroom, once the
    # window is full, every turn drops a ring (the request changes in its middle every turn);
    # with 0.3 of it left free at a cut, about one turn in four cuts, and each turn in between
    # sends the previous request again with the new ring after it.
    every_turn = _stored_run(0.0)
    full = next(i for i, a in enumerate(every_turn) if _cut(a.report))
    assert all(_cut(a.report) for a in every_turn[full + 1 :])
    roomy = _stored_run(0.3)
    cuts = [i for i, a in enumerate(roomy) if _cut(a.report)]
    assert 4 <= len(cuts) <= 10
    for before, after in itertools.pairwise(roomy):
        if _cut(after.report):
            assert after.report.total_after <= 600 - 180
            continue
        assert after.view.messages[: len(before.view)] == before.view.messages
        assert len(after.view) == len(before.view) + 2


class _TinyTurns(WordCounter):
    """A word counter that charges a message whose text is ``tiny`` one token."""

    def _words(self, message):
        return 1 if message.text == "tiny" else super()._words(message)


def test_a_headroom_over_what_can_be_cut_leaves_no_room_on_either_path():
    # 0.9 of the budget is more than the middle holds: the room left is none, on the
    # incremental path as in the pipeline; a unit of one token does not fit in it.
    config = AssemblyConfig(
        summarize_trigger_ratio=1.0, recent_tool_rings=1, compaction_headroom=0.9
    )
    s = session(
        system(),
        user("GOAL: audit"),
        assistant("tiny"),
        *ring("c0", words(30)),
        user("go on"),
        *ring("c1", words(30)),
    )
    assembler = SessionAssembler(
        config, counter=_TinyTurns(), metrics=AssemblyMetrics(CollectorRegistry())
    )
    got = assembler.assemble(s, budget=100)
    want = assemble_pipeline(s, config, counter=_TinyTurns(), budget=100)
    assert "tiny" not in [m.text for m in want.view]
    cut_just_enough = assemble_pipeline(
        s, config.with_changes(compaction_headroom=0.0), counter=_TinyTurns(), budget=100
    )
    assert "tiny" in [m.text for m in cut_just_enough.view]
    assert got.view == want.view
    assert assembler.last_path == "incremental"


def test_with_headroom_an_agent_that_keeps_its_whole_history_is_sent_what_a_stored_view_is():
    # The same turns handed over as the whole history and as the stored view: the same views,
    # each turn; what a cut dropped does not come back when the next cut frees room.
    stored = _stored_run(0.3)
    config = ROOMY
    assembler = _assembler(config)
    history = agent_session(0)
    fast = 0
    for turn, want in enumerate(stored):
        history = history.with_messages((*history.messages, *ring(f"t{turn}", words(30))))
        got = assembler.assemble(history, budget=600)
        assert got.view == want.view, turn
        fast += assembler.last_path == "incremental"
    assert fast == len(stored)
    # without the headroom, the whole history is assembled as it is: dropped rings come back
    plain = SessionAssembler(
        config.with_changes(compaction_headroom=0.0),
        counter=WordCounter(),
        metrics=AssemblyMetrics(CollectorRegistry()),
    )
    assert plain.assemble(history, budget=600).view != stored[-1].view


def test_with_headroom_a_session_that_does_not_append_is_assembled_as_it_is():
    config = AssemblyConfig(
        summarize_trigger_ratio=1.0, recent_tool_rings=1, compaction_headroom=0.3
    )
    metrics = AssemblyMetrics(CollectorRegistry())
    assembler = SessionAssembler(config, counter=WordCounter(), metrics=metrics)
    history = agent_session(20)
    assembler.assemble(history, budget=600)
    # an edited history (its last ring replaced): no view kept from the turn before applies
    edited = history.with_messages((*history.messages[:-2], *ring("other", words(30))))
    got = assembler.assemble(edited, budget=600)
    assert got.view == assemble(edited, config, counter=WordCounter(), budget=600).view
    # after a refusal, the next turn starts from the session as it is too
    with pytest.raises(ContextAssemblyError):
        assembler.assemble(edited, budget=10)
    longer = edited.with_messages((*edited.messages, *ring("next", words(30))))
    got = assembler.assemble(longer, budget=600)
    assert got.view == assemble(longer, config, counter=WordCounter(), budget=600).view


def test_with_headroom_a_history_made_anew_every_turn_is_an_append_too():
    # A plug-in parses its wire body anew every turn: equal messages, not the same objects.
    stored = _stored_run(0.3)
    config = ROOMY
    assembler = _assembler(config)
    history = agent_session(0)
    for turn, want in enumerate(stored):
        history = history.with_messages((*history.messages, *ring(f"t{turn}", words(30))))
        anew = history.with_messages(tuple(replace(m) for m in history.messages))
        assert anew.messages[0] is not history.messages[0]
        assert assembler.assemble(anew, budget=600).view == want.view, turn


def test_with_headroom_an_appended_message_with_a_kept_id_is_not_joined_to_the_kept_view():
    # The caller renamed its messages (equal content, other ids) and gave a new one the id a
    # kept message has: the kept view and it are not valid together, so the session is
    # assembled as it is handed over.
    config = ROOMY
    assembler = _assembler(config)
    history = agent_session(20)
    first = assembler.assemble(history, budget=600)
    taken = first.view.messages[-1].id
    renamed = tuple(m.with_id(f"r{i}") for i, m in enumerate(history.messages))
    clash = replace(user("and now?"), id=taken)
    passed = history.with_messages((*renamed, clash))
    got = assembler.assemble(passed, budget=600)
    want = assemble_pipeline(passed, config, counter=WordCounter(), budget=600)
    assert decided(lambda: got) == decided(lambda: want)


def test_with_headroom_a_renamed_history_with_nothing_cut_keeps_the_callers_ids():
    # Nothing was cut last turn, so the kept view is the last session itself: the session
    # handed over (equal messages under other ids, one more ring) is assembled as it is, and
    # the view carries the caller's ids, not the last turn's.
    config = ROOMY
    assembler = _assembler(config)
    history = agent_session(2)
    first = assembler.assemble(history, budget=600)
    assert not first.report.dropped_ring_ids
    renamed = tuple(m.with_id(f"r{i}") for i, m in enumerate(history.messages))
    passed = history.with_messages((*renamed, *ring("next", words(30))))
    got = assembler.assemble(passed, budget=600)
    assert [m.id for m in got.view] == [m.id for m in passed.messages]


def test_with_headroom_a_stored_view_that_repeats_the_last_session_s_words_is_not_an_append():
    # Turns of the same words: after a cut, the stored view and three new turns are equal, word
    # for word, to the last session handed over, but under other ids; read as an append, the new
    # turns would never be sent.
    config = AssemblyConfig(
        summarize_trigger_ratio=1.0, recent_user_turns=1, compaction_headroom=0.05
    )

    def turns(n, tag):
        return [
            m
            for i in range(n)
            for m in (assistant("ok").with_id(f"{tag}a{i}"), user("continue").with_id(f"{tag}u{i}"))
        ]

    s = session(system(), user("GOAL: audit"), user("continue").with_id("u0"), *turns(6, "old"))
    assembler = _assembler(config)
    stored = assembler.assemble(s, budget=60).session_after()
    assert len(stored) < len(s)
    passed = stored.with_messages((*stored.messages, *turns(3, "new")))
    got = assembler.assemble(passed, budget=60)
    want = assemble_pipeline(passed, config, counter=WordCounter(), budget=60)
    assert [m.id for m in got.view] == [m.id for m in want.view]
    assert got.view.messages[-1].id == "newu2"


def test_with_headroom_a_kept_synthesized_result_is_not_sent_beside_the_real_one():
    # A call the execution layer timed out is answered with a synthesized error result, which
    # the kept view holds; its real result arrives with the next turn: that turn is not joined
    # to the kept view (two results for one call), it is assembled as handed over.
    config = ROOMY.with_changes(on_pairing_error="synthesize_error_results")
    call = Message("assistant", (ToolCallPart("cX", "get_status", '{"q": 1}'),))
    s = agent_session(3).with_messages((*agent_session(3).messages, call))
    ledger = Ledger.from_list(
        [{"tool": "get_status", "call_id": "cX", "status": "timed_out", "side_effect": False}]
    )
    assembler = _assembler(config)
    assert assembler.assemble(s, ledger=ledger, budget=400).report.repairs == ("cX",)
    result = Message("tool", (ToolResultPart("cX", (TextPart("timed out"),), is_error=True),))
    passed = s.with_messages((*s.messages, result, user("what now?")))
    got = assembler.assemble(passed, ledger=ledger, budget=400)
    want = assemble_pipeline(passed, config, counter=WordCounter(), ledger=ledger, budget=400)
    assert decided(lambda: got) == decided(lambda: want)


def test_with_headroom_tool_schemas_a_turn_left_out_are_offered_again_when_they_fit():
    # A memory note makes the protected part overflow on one turn, so its bucket check leaves
    # the schemas out; the next turn appends to it without the note: the kept view is joined
    # to the session's own tools, which fit again.
    tools = (ToolSpec("get_weather", "the weather"), ToolSpec("get_time", "the time"))
    config = ROOMY.with_changes(
        on_still_over_budget="drop_tools_schema_then_fail", recent_user_turns=1
    )
    s = session(
        system(),
        user("GOAL: plan the trip"),
        assistant(words(20)),
        user(words(20)),
        assistant(words(20)),
        user("and now?"),
        tools=tools,
    )
    note = (MemoryItem("notes", words(40)),)
    assembler = _assembler(config)
    first = assembler.assemble(s, memory=note, budget=80)
    assert set(first.report.dropped_tool_names) == {"get_time", "get_weather"}
    assert first.report.dropped_turn_ids  # the kept view is not all of the session
    passed = s.with_messages((*s.messages, assistant("ok"), user("and in Oslo?")))
    got = assembler.assemble(passed, budget=80)
    want = assemble_pipeline(passed, config, counter=WordCounter(), budget=80)
    assert got.view.tools == want.view.tools == tools


def test_a_session_holding_an_injected_note_is_refused_on_both_paths():
    # A stored view with its memory note (the view, not session_after()): the note would be
    # sent twice; the pipeline names the id, and so does the incremental path now.
    memory = (MemoryItem("notes", "fact a"),)
    config = AssemblyConfig(summarize_trigger_ratio=1.0)
    first = assemble_pipeline(
        session(system(), user("GOAL"), user("start")),
        config,
        counter=WordCounter(),
        memory=memory,
        budget=10_000,
    )
    passed = first.view.with_messages((*first.view.messages, user("next")))
    with pytest.raises(TranscriptError, match="duplicate message id 'inject-memory-"):
        assemble_pipeline(passed, config, counter=WordCounter(), memory=memory, budget=10_000)
    with pytest.raises(TranscriptError, match="duplicate message id 'inject-memory-"):
        _assembler(config).assemble(passed, memory=memory, budget=10_000)


def test_with_headroom_other_tools_model_or_settings_are_not_an_append():
    # The kept view is joined only to a session that appends to the last one under the same
    # tools, model and settings; with any of them changed the session is assembled as it is.
    history = agent_session(20)
    changes = (
        {"tools": (ToolSpec("get_status", "the status"),)},
        {"model": "gpt-4o-mini"},
        {"params": (("temperature", "0.2"),)},
    )
    for change in changes:
        assembler = _assembler(ROOMY)
        first = assembler.assemble(history, budget=600)
        assert first.report.dropped_ring_ids
        passed = replace(history, **change).with_messages(
            (*history.messages, *ring("next", words(30)))
        )
        got = assembler.assemble(passed, budget=600)
        want = assemble_pipeline(passed, ROOMY, counter=WordCounter(), budget=600)
        assert decided(lambda g=got: g) == decided(lambda w=want: w), change


def test_with_headroom_a_call_answered_by_a_synthesized_result_every_turn_keeps_the_view():
    # A call the execution layer cancelled stays unanswered in the history: every fresh
    # assembly answers it with a synthesized result. The kept view holds that result, so the
    # turns between two cuts still only append; the call's real result would not be joined.
    config = ROOMY.with_changes(on_pairing_error="synthesize_error_results")
    ledger = Ledger.from_list(
        [{"tool": "get_status", "call_id": "cX", "status": "cancelled", "side_effect": False}]
    )
    call = Message("assistant", (ToolCallPart("cX", "get_status", '{"q": 1}'),))
    history = session(system(), user("GOAL: audit"), user("start"), call, user("skip that one"))
    for i in range(12):
        history = history.with_messages((*history.messages, *ring(f"c{i}", words(30))))
    assembler = _assembler(config)
    previous, cuts = None, 0
    for turn in range(12):
        history = history.with_messages((*history.messages, *ring(f"t{turn}", words(30))))
        got = assembler.assemble(history, ledger=ledger, budget=600)
        assert any(m.id.endswith("-synth") for m in got.view)  # the call is answered
        if previous is not None and _cut(got.report):
            cuts += 1
        elif previous is not None:
            assert got.view.messages[: len(previous.view)] == previous.view.messages
        previous = got
    assert cuts <= 4


# ------------------------------------------------------------------ the session digest


def test_each_report_names_its_own_session_read_in_any_order():
    # The digest is hashed when read: a report read after later turns (or never) still names
    # the session it was made from, as assemble_pipeline's does.
    from reference_impl.assembler import session_digest_of

    config = AssemblyConfig(summarize_trigger_ratio=1.0)
    assembler = SessionAssembler(config, counter=WordCounter())
    sessions_ = [agent_session(3)]
    for i in range(3):  # each turn the one before plus a ring: one index, a running hash
        sessions_.append(sessions_[-1].with_messages((*sessions_[-1], *ring(f"n{i}", words(9)))))
    reports = []
    for s in sessions_:
        reports.append(assembler.assemble(s, budget=10_000).report)
        assert assembler.last_path == "incremental"
    for k in (2, 0, 3, 1):  # out of order: the running hash is ahead of some of them
        assert reports[k].session_digest == session_digest_of(m.id for m in sessions_[k])
        piped = assemble_pipeline(sessions_[k], config, counter=WordCounter(), budget=10_000)
        assert reports[k].session_digest == piped.report.session_digest


def test_an_unread_digest_is_not_hashed(caplog: pytest.LogCaptureFixture):
    config = AssemblyConfig(summarize_trigger_ratio=1.0)
    assembler = SessionAssembler(config, counter=WordCounter())
    caplog.set_level("WARNING", logger="reference_impl")
    s = agent_session(4)
    a = assembler.assemble(s, budget=10_000)
    assert not isinstance(a.report.session_digest_of, str)  # not read yet
    caplog.set_level("INFO", logger="reference_impl")
    b = assembler.assemble(agent_session(5), budget=10_000)
    (line,) = [r.getMessage() for r in caplog.records if "assembled" in r.getMessage()]
    assert f"session={b.report.session_digest[:16]} " in line  # the log line read it
    assert isinstance(b.report.session_digest_of, str)  # and the report kept it


def test_a_report_with_its_digest_unread_compares_pickles_and_prints_as_one_read():
    import pickle

    config = AssemblyConfig(summarize_trigger_ratio=1.0)
    s = agent_session(4)
    lazy = SessionAssembler(config, counter=WordCounter()).assemble(s, budget=10_000).report
    read = SessionAssembler(config, counter=WordCounter()).assemble(s, budget=10_000).report
    read = replace(read, seconds=lazy.seconds)
    digest = read.session_digest
    assert not isinstance(lazy.session_digest_of, str)
    assert lazy == read
    assert hash(lazy) == hash(read)
    assert lazy != replace(read, session_digest_of="0" * 64)
    restored = pickle.loads(pickle.dumps(lazy))
    assert restored == read
    assert restored.session_digest == digest
    assert f"session_digest={digest!r}" in repr(lazy)
    assert lazy.to_dict()["session_digest"] == digest


def test_asdict_of_a_report_with_its_digest_unread_holds_the_digest():
    # dataclasses.asdict and astuple deep-copy each field: the digest still to be hashed (the
    # index's) is copied as the digest it gives, as when read (the pipeline's is read at once)
    from dataclasses import asdict, astuple

    config = AssemblyConfig(summarize_trigger_ratio=1.0)
    s = agent_session(4)
    made = {
        "incremental": lambda: (
            SessionAssembler(config, counter=WordCounter()).assemble(s, budget=10_000).report
        ),
        "pipeline": lambda: (
            assemble_pipeline(s, config, counter=WordCounter(), budget=10_000).report
        ),
    }
    for path, make in made.items():
        lazy, read = make(), make()
        read = replace(read, seconds=lazy.seconds)
        digest = read.session_digest
        assert isinstance(lazy.session_digest_of, str) == (path == "pipeline"), path
        assert asdict(lazy)["session_digest_of"] == digest, path
        assert asdict(lazy) == asdict(read), path
        assert astuple(lazy) == astuple(read), path


def test_a_report_keeps_no_message_alive():
    # The digest still to be hashed holds the session's ids, not its messages (nor the index
    # that holds them): a report kept (a list of them for a dashboard) keeps no content.
    import gc

    from reference_impl.transcript import Message, Transcript

    config = AssemblyConfig(summarize_trigger_ratio=1.0)
    assembler = SessionAssembler(config, counter=WordCounter())
    s = agent_session(6)
    first = assembler.assemble(s, budget=10_000).report
    later = assembler.assemble(s.with_messages((*s, *ring("n", words(9)))), budget=10_000).report
    for report in (first, later):
        assert not isinstance(report.session_digest_of, str)
        seen, todo = set(), [report]
        while todo:
            found = todo.pop()
            if id(found) in seen or isinstance(found, type):
                continue
            seen.add(id(found))
            assert not isinstance(found, Message | Transcript | incremental._Index), type(found)
            todo.extend(gc.get_referents(found))
