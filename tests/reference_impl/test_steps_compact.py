"""The last steps of the policy (``steps/compact.py``): the bucket check, dropping tool schemas,
the summary of the middle, escalation and the final recount.

Budgets are worked out by hand with the transparent ``WordCounter`` (a message costs 4 tokens plus
one per word, a tool schema 10, the reply overhead 3). A budget is inclusive: a request of exactly
``budget`` tokens fits.
"""

from __future__ import annotations

import functools
import logging
import threading

import pytest
from assembler_support import (
    WordCounter,
    assemble_words,
    assistant,
    protected_state,
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
    ContextAssemblyError,
    SessionAssembler,
    SummaryBlock,
    SummaryRequest,
    assemble,
)
from reference_impl.assembler import assemble_pipeline
from reference_impl.steps import (
    drop_tool_schemas,
    escalate,
)
from reference_impl.tokens import TokenCount, counter_for
from reference_impl.transcript import Message, SummaryPart, ToolSpec, Transcript

NO_SUMMARY = AssemblyConfig(summarize_trigger_ratio=1.0, recent_tool_rings=1, recent_user_turns=1)
DROP_TOOLS = NO_SUMMARY.with_changes(on_still_over_budget="drop_tools_schema_then_fail")


def run(s, config=NO_SUMMARY, **kw):
    return assemble_words(s, config, **kw)


def refused(s, config=NO_SUMMARY, **kw) -> ContextAssemblyError:
    with pytest.raises(ContextAssemblyError) as info:
        run(s, config, **kw)
    return info.value


def state_for(s, config, budget, *, counter=None):
    """The state as the pipeline has it after protecting the prefix and the suffix."""
    return protected_state(s, config, budget, counter=counter)


class ToolPromptCounter(WordCounter):
    """A counter like Claude's: a hidden tool-use prompt (50 tokens here) is part of every
    request that offers tools, so the request overhead depends on the tools."""

    def count(self, transcript: Transcript) -> TokenCount:
        base = super().count(transcript)
        prompt = 50 if transcript.tools else 0
        return TokenCount(
            base.total + prompt, base.messages, base.tools, base.overhead + prompt, self.name
        )


class FramingCounter(WordCounter):
    """A counter whose whole-request count holds a frame (``frame`` tokens) that neither the
    per-message counts nor the overhead of an empty request show: the running totals of the
    steps cannot see it, only the final recount of the whole view can."""

    def __init__(self, frame: int) -> None:
        super().__init__()
        self.frame = frame

    def count(self, transcript: Transcript) -> TokenCount:
        base = super().count(transcript)
        frame = self.frame if transcript.messages else 0
        return TokenCount(
            base.total + frame, base.messages, base.tools, base.overhead + frame, self.name
        )


# ------------------------------------------------------------------------------ check_buckets


def bucket_session():
    # prefix: system 10 + goal 5 (+ overhead 3 = 18); middle: 5; suffix: 5; tools: 10.
    return session(
        system(words(6)), user("goal"), assistant("ok"), user("latest"), tools=(ToolSpec("t0"),)
    )


@pytest.mark.parametrize(
    ("budget", "bucket"),
    [
        (17, "prefix"),  # 15 + 3 of overhead is one over
        (18, "suffix"),  # the prefix fits exactly; the suffix's 5 do not
        (23, "tools"),  # prefix and suffix fit exactly; the one schema does not
    ],
)
def test_the_bucket_check_names_the_first_bucket_that_does_not_fit(budget, bucket):
    error = refused(bucket_session(), budget=budget)
    assert error.code == f"context_assembly_{bucket}_over_budget"
    assert error.details["bucket"] == bucket
    assert error.details["budget"] == budget
    assert error.details["tokens"] == {"prefix": 15, "suffix": 5, "tools": 10, "overhead": 3}


def test_prefix_suffix_and_tools_that_fit_exactly_pass_and_the_middle_is_cut():
    s = bucket_session()
    a = run(s, budget=33)
    assert [m.id for m in a.view] == [s.messages[i].id for i in (0, 1, 3)]
    assert a.view.tools == s.tools
    assert a.report.total_after == 33


def test_dropping_schemas_that_do_not_make_the_tools_fit_still_refuses_naming_the_tools():
    # Both schemas are used by the protected ring, so neither can go: the tools bucket overflows.
    s = session(
        system(),
        user("goal"),
        ring("c1", "ok", name="t0"),
        ring("c2", "ok", name="t1"),
        user("latest"),
        tools=(ToolSpec("t0"), ToolSpec("t1"), ToolSpec("t2")),
    )
    config = DROP_TOOLS.with_changes(recent_tool_rings=2)
    # prefix 11 + 5 + 3 = 19, suffix 12 + 12 + 5 = 29: 48; with the two needed schemas, 68.
    error = refused(s, config, budget=60)
    assert error.code == "context_assembly_tools_over_budget"
    assert error.details["report"]["dropped_tool_names"] == ["t2"]


def two_schema_session():
    # prefix 11 + 6 (+ 3 of overhead, + 50 more with tools under ToolPromptCounter); suffix 5:
    # 22 of messages; two schemas no ring uses, 20. 45 in all.
    return session(
        system(),
        user("GOAL: deploy"),
        user("latest?"),
        tools=(ToolSpec("t0"), ToolSpec("t1")),
    )


def test_a_hidden_tool_prompt_counts_as_the_tools_not_the_prefix():
    # 17 + 53 = 70 > 60, but 50 of those come with the tools: without them the prefix is 20.
    error = refused(two_schema_session(), counter=ToolPromptCounter(), budget=60)
    assert error.code == "context_assembly_tools_over_budget"
    assert "(prefix 20, suffix 5, tools 70)" in str(error)


def test_dropping_schemas_also_drops_their_hidden_prompt_before_the_prefix_is_blamed():
    s = two_schema_session()
    a = run(s, DROP_TOOLS, counter=ToolPromptCounter(), budget=60)
    assert a.view.tools == ()
    assert [m.id for m in a.view] == [m.id for m in s.messages]
    assert a.report.total_after == 25


@pytest.mark.parametrize("headroom", [0.0, 0.2])
def test_the_stored_session_keeps_the_schemas_one_request_left_out(headroom):
    # session_after() is what an agent stores as its session: a schema the budget left out of
    # one request must be offered again on a turn where it fits, not lost with the view's tools.
    s = two_schema_session()
    config = DROP_TOOLS.with_changes(compaction_headroom=headroom)
    stateless = functools.partial(
        assemble_pipeline,
        config=config,
        counter=ToolPromptCounter(),
        metrics=AssemblyMetrics(CollectorRegistry()),
    )
    stateful = SessionAssembler(
        config, counter=ToolPromptCounter(), metrics=AssemblyMetrics(CollectorRegistry())
    )
    for assembler in (stateless, stateful.assemble):
        tight = assembler(s, budget=60)
        assert tight.view.tools == ()
        assert tight.report.dropped_tool_names == ("t0", "t1")
        stored = tight.session_after()
        assert stored.tools == s.tools
        assert stored.messages == tight.base_view.messages
        nxt = stored.with_messages((*stored.messages, assistant("checking")))
        roomy = assembler(nxt, budget=1_000)
        assert roomy.view.tools == s.tools


def test_with_claudes_counter_schemas_are_dropped_rather_than_the_request_refused():
    # The estimate counter for Claude adds the hidden tool-use prompt (hundreds of tokens) to the
    # overhead whenever tools are offered; a budget that holds the messages without the tools
    # must be met by dropping them when the configuration says so.
    s = two_schema_session()
    counter = counter_for("anthropic-messages")
    without = counter.count(Transcript(s.messages)).total
    assert counter.count(s).total > without + 100
    a = assemble(
        s,
        DROP_TOOLS,
        shape="anthropic-messages",
        budget=without,
        metrics=AssemblyMetrics(CollectorRegistry()),
    )
    assert a.view.tools == ()
    assert a.report.total_after == without


# -------------------------------------------------------------------------- drop_tool_schemas


SCHEMAS = (ToolSpec("get_status"), ToolSpec("deploy"), ToolSpec("notify"))


def schema_session(tools=SCHEMAS):
    # prefix: system 11 + goal 6; middle: a get_status ring, then a deploy ring (12 each);
    # suffix: the newest ring (get_status, 12) and the latest user message (5); three schemas.
    return session(
        system(),
        user("GOAL: deploy"),
        ring("c1", "healthy", name="get_status"),
        ring("c2", "deployed", name="deploy"),
        ring("c3", "healthy", name="get_status"),
        user("latest?"),
        tools=tools,
    )


def test_dropping_schemas_keeps_those_protected_rings_use_and_drops_middle_rings_without_one():
    s = schema_session()
    m = s.messages
    # With every schema: 17 + 3 + 17 + 30 = 67 > 59. Without deploy and notify the fixed part is
    # 47, and of the middle only the get_status ring (12) can stay: the deploy ring calls a tool
    # no longer offered, so it goes whole, although it is the newer of the two.
    a = run(s, DROP_TOOLS, budget=59)
    assert a.view.tools == (ToolSpec("get_status"),)
    assert a.report.dropped_tool_names == ("deploy", "notify")
    assert a.report.dropped_ring_ids == (m[4].id,)
    assert [x.id for x in a.view] == [x.id for x in (m[0], m[1], m[2], m[3], m[6], m[7], m[8])]
    assert "drop_tools_schema" in a.report.steps
    assert "drop_middle_rings" not in a.report.steps
    assert "tool_schemas_kept_for_rings" in a.report.notes
    assert a.report.total_after == 59


def test_after_dropping_schemas_a_fixed_part_that_fits_exactly_is_kept_whole():
    # Without deploy and notify the prefix, suffix, one schema and the overhead are 47: exactly
    # the budget, so both middle rings go and the rest is sent.
    s = schema_session()
    m = s.messages
    a = run(s, DROP_TOOLS, budget=47)
    assert a.view.tools == (ToolSpec("get_status"),)
    assert [x.id for x in a.view] == [x.id for x in (m[0], m[1], m[6], m[7], m[8])]
    assert set(a.report.dropped_ring_ids) == {m[2].id, m[4].id}
    assert a.report.total_after == 47


def test_without_the_option_or_without_tools_nothing_is_dropped():
    s = schema_session()
    state = state_for(s, NO_SUMMARY, 10)
    assert drop_tool_schemas(state) is False
    assert state.tools == s.tools
    bare = session(system(), user("goal"), user("latest"))
    state = state_for(bare, DROP_TOOLS, 10)
    assert drop_tool_schemas(state) is False
    assert state.steps == ["load", "validate_pairing", "protect_prefix", "protect_suffix"]


def test_schemas_all_used_by_protected_rings_cannot_be_dropped():
    s = schema_session(tools=(ToolSpec("get_status"),))
    state = state_for(s, DROP_TOOLS, 10)
    assert drop_tool_schemas(state) is False
    assert state.tools == (ToolSpec("get_status"),)
    assert state.dropped_tool_names == []
    assert all(u.kept for u in state.units)


def test_dropping_schemas_recounts_the_overhead_that_came_with_them():
    # With tools the request carries a 50-token hidden prompt; without them it does not.
    # prefix 17 + (3 + 50) = 70 <= 75, but with the middle (5), suffix (5) and two schemas it is
    # over; dropping the schemas (no ring needs them) takes the hidden prompt away too, so the
    # middle fits again: 17 + 5 + 5 + 3 = 30.
    s = session(
        system(),
        user("GOAL: deploy"),
        assistant("ok"),
        user("latest?"),
        tools=(ToolSpec("t0"), ToolSpec("t1")),
    )
    a = run(s, DROP_TOOLS, counter=ToolPromptCounter(), budget=75)
    assert a.view.tools == ()
    assert [m.id for m in a.view] == [m.id for m in s.messages]
    assert a.report.tokens_after.overhead == 3
    assert a.report.total_after == 30


# ---------------------------------------------------------------------------- summarize_middle


class Spy:
    """A summarizer that records its requests and answers with a fixed text."""

    def __init__(self, text: str = "Summary of earlier conversation (depth 1; spy).") -> None:
        self.text = text
        self.requests: list[SummaryRequest] = []

    def summarize(self, request: SummaryRequest) -> SummaryBlock:
        self.requests.append(request)
        return SummaryBlock(self.text, "spy", depth=request.depth)


SUMMARIZE = AssemblyConfig(recent_tool_rings=0, recent_user_turns=1, summarize_trigger_ratio=0.5)


def summary_session():
    # prefix: system 11 + goal 7; middle: ring c1 (41), "done with c1" (7), ring c2 (41) = 89;
    # suffix: the latest user message (5). 115 in all with the overhead: over half of 200.
    return rings_between_turns(
        "GOAL: ship v2", [words(30)] * 2, [assistant("done with c1")], "latest?"
    )


def test_the_summary_request_carries_the_middle_the_goal_and_the_limits():
    s = summary_session()
    spy = Spy()
    config = SUMMARIZE.with_changes(summary_timeout_ms=2500, summary_max_tokens=300)
    run(s, config, summarizer=spy, budget=200)
    (request,) = spy.requests
    assert request.messages == s.messages[2:7]
    assert request.user_goal == "GOAL: ship v2"
    assert request.timeout_s == 2.5
    assert request.max_tokens == 300
    assert request.depth == 1


@pytest.mark.parametrize("how", [assemble, assemble_pipeline])
def test_a_middle_that_is_only_an_earlier_summary_is_not_summarized_again(how):
    # Over the trigger (111 tokens, half of 200 is 100) but within the budget: the fill keeps
    # the earlier summary, which is all the middle holds, so the summarizer is not asked to
    # summarize it again (on the indexed path and in the step itself).
    earlier = Message("user", (SummaryPart("[summary] " + words(80)),))
    s = session(system(), user("GOAL: ship v2"), earlier, user("latest?"))
    spy = Spy()
    metrics = AssemblyMetrics(CollectorRegistry())
    a = how(s, SUMMARIZE, counter=WordCounter(), summarizer=spy, budget=200, metrics=metrics)
    assert a.report.tokens_before.total == 111
    assert spy.requests == []
    assert not a.report.summary_used
    assert not a.report.summary_failed
    assert "summary_not_smaller" not in a.report.notes
    assert [x.id for x in a.view] == [x.id for x in s.messages]


def test_a_summary_replaces_the_middle_and_the_report_says_what_it_replaced():
    s = summary_session()
    m = s.messages
    a = run(s, SUMMARIZE, summarizer=Spy(), budget=200)
    assert a.report.summary_used
    assert "summarize_middle" in a.report.steps
    assert a.report.dropped_ring_ids == (m[2].id, m[5].id)
    assert a.report.dropped_turn_ids == (m[4].id,)
    assert [x.id for x in a.view] == [m[0].id, m[1].id, a.report.summary_id, m[7].id]
    # "Tokens before" describe the session as loaded, not the summary the assembler wrote.
    assert a.report.tokens_before.middle == 89
    assert a.report.tokens_before.total == WordCounter().count(s).total == 115
    assert a.report.tokens_after.middle == 4 + 7  # the spy's summary: 7 words


@pytest.mark.parametrize(("extra", "used"), [(0, False), (-1, True)])
def test_a_summary_is_used_only_when_smaller_than_what_it_replaces(extra, used):
    s = summary_session()
    # The middle costs 89; a summary of 85 words costs 89 (not smaller), of 84 words 88.
    a = run(s, SUMMARIZE, summarizer=Spy(words(85 + extra)), budget=200)
    assert a.report.summary_used is used
    assert ("summary_not_smaller" in a.report.notes) is not used
    if not used:
        assert [x.id for x in a.view] == [x.id for x in s.messages]
        assert a.report.dropped_ring_ids == ()


class Answer:
    """A summarizer that answers with whatever it was given, or raises it."""

    def __init__(self, answer: object) -> None:
        self.answer = answer

    def summarize(self, request: SummaryRequest) -> SummaryBlock:
        if isinstance(self.answer, BaseException):
            raise self.answer
        return self.answer  # type: ignore[return-value]


@pytest.mark.parametrize(
    ("answer", "error"),
    [
        (ValueError("model overloaded"), "ValueError"),
        (SummaryBlock(" \n ", "blank"), "TypeError"),
        ("a plain string", "TypeError"),
    ],
)
def test_a_failed_or_empty_summary_is_not_used_and_is_logged_by_type(answer, error, caplog):
    s = summary_session()
    with caplog.at_level(logging.WARNING, logger="reference_impl"):
        a = run(s, SUMMARIZE, summarizer=Answer(answer), budget=200)
    assert a.report.summary_failed
    assert not a.report.summary_used
    assert "summary_failed" in a.report.steps
    assert [x.id for x in a.view] == [x.id for x in s.messages]
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warnings == [f"summary failed: summarizer=Answer error={error}"]


def test_a_summarizer_past_its_deadline_is_abandoned_on_a_daemon_thread():
    # A thread cannot be killed: the abandoned summarizer must not keep the process alive.
    release = threading.Event()
    started = threading.Event()
    seen: list[threading.Thread] = []

    class Hung:
        def summarize(self, request: SummaryRequest) -> SummaryBlock:
            seen.append(threading.current_thread())
            started.set()
            release.wait(10)
            raise RuntimeError("released")

    try:
        a = run(
            summary_session(),
            SUMMARIZE.with_changes(summary_timeout_ms=50),
            summarizer=Hung(),
            budget=200,
        )
        assert started.is_set()
        assert a.report.summary_failed
        assert seen[0] is not threading.current_thread()
        assert seen[0].daemon
    finally:
        release.set()


def old_summary(depth: int) -> Message:
    text = f"Summary of earlier conversation (depth {depth}; 4 messages replaced). {words(20)}"
    return Message("user", (SummaryPart(text),), id=f"summary-old-{depth}")


def depth_session(depth: int) -> Transcript:
    return session(
        system(),
        user("GOAL: ship v2"),
        old_summary(depth),
        ring("c1", words(30)),
        assistant("done with c1"),
        user("latest?"),
    )


@pytest.mark.parametrize(
    ("depth", "summarized", "capped"),
    [
        # The older summary and the ring.
        pytest.param(1, slice(2, 5), False, id="below-the-cap-the-older-summary-is-folded-in"),
        # The ring only.
        pytest.param(
            2, slice(3, 5), True, id="at-the-cap-the-older-summary-is-not-folded-in-again"
        ),
    ],
)
def test_the_depth_cap_decides_whether_the_older_summary_is_folded_in(depth, summarized, capped):
    s = depth_session(depth)
    spy = Spy()
    a = run(s, SUMMARIZE.with_changes(summary_max_depth=2), summarizer=spy, budget=150)
    (request,) = spy.requests
    assert request.depth == 2
    assert request.messages == s.messages[summarized]
    assert ("summary_depth_capped" in a.report.notes) is capped
    assert a.report.summary_used
    # Replaced all the same, whether folded in or not.
    assert f"summary-old-{depth}" in a.report.dropped_turn_ids
    assert f"summary-old-{depth}" not in [m.id for m in a.view]


def test_a_middle_of_summaries_only_is_not_summarized_again():
    s = session(system(), user("GOAL: ship v2"), old_summary(1), old_summary(2), user("latest?"))
    spy = Spy()
    # 92 tokens: within 150, over the trigger (75), but nothing in the middle is not a summary.
    a = run(s, SUMMARIZE, summarizer=spy, budget=150)
    assert spy.requests == []
    assert not a.report.summary_used
    assert [m.id for m in a.view] == [m.id for m in s.messages]


# ----------------------------------------------------------------------------------- escalate


def test_escalate_drops_schemas_when_that_is_enough():
    s = schema_session()
    # Nothing was cut yet: 67 + 24 of middle = 91. Without deploy and notify (and the deploy
    # ring) it is 47 + 12 = 59.
    state = state_for(s, DROP_TOOLS, 59)
    escalate(state)
    assert state.tools == (ToolSpec("get_status"),)
    assert state.fits()


@pytest.mark.parametrize("failed", [False, True])
def test_escalate_refuses_when_dropping_schemas_is_not_enough(failed):
    s = schema_session()
    state = state_for(s, DROP_TOOLS, 58)
    state.summary_failed = failed
    with pytest.raises(ContextAssemblyError) as info:
        escalate(state)
    error = info.value
    assert error.code == (
        "context_assembly_summary_failed" if failed else "context_assembly_over_budget"
    )
    assert error.details["budget"] == 58
    assert error.details["tokens"] == {"prefix": 17, "suffix": 17, "tools": 10, "overhead": 3}
    assert state.dropped_tool_names == ["deploy", "notify"]


def test_escalate_without_the_option_refuses_at_once():
    state = state_for(schema_session(), NO_SUMMARY, 90)
    with pytest.raises(ContextAssemblyError) as info:
        escalate(state)
    assert info.value.code == "context_assembly_over_budget"
    assert state.tools == schema_session().tools


# ------------------------------------------------------------------------------ final_recount


def test_a_final_count_over_the_budget_is_refused():
    # The running totals say 45 <= 45; the whole request, with its 20-token frame, is 65.
    error = refused(two_schema_session(), counter=FramingCounter(20), budget=45)
    assert error.code == "context_assembly_over_budget"
    assert error.details["total"] == 65
    assert error.details["budget"] == 45
    assert "final_recount_over_budget" in error.details["report"]["notes"]


def test_a_final_count_over_the_budget_drops_schemas_once_more_when_configured():
    # Without the two schemas the whole request is 22 + 3 + 20 = 45: exactly the budget.
    s = two_schema_session()
    a = run(s, DROP_TOOLS, counter=FramingCounter(20), budget=45)
    assert a.view.tools == ()
    assert "final_recount_over_budget" in a.report.notes
    assert a.report.dropped_tool_names == ("t0", "t1")
    assert [m.id for m in a.view] == [m.id for m in s.messages]
    assert FramingCounter(20).count(a.view).total == 45


def test_a_final_count_still_over_without_the_schemas_is_refused():
    # A 21-token frame: 46 without the schemas, one over.
    error = refused(two_schema_session(), DROP_TOOLS, counter=FramingCounter(21), budget=45)
    assert error.code == "context_assembly_over_budget"
    assert error.details["total"] == 46
    assert error.details["report"]["dropped_tool_names"] == ["t0", "t1"]
