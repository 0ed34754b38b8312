"""The markup a problem case carries for the HTML report: each message's fate (from the identity
mapping, ``modified`` told apart as cleared or changed), its bucket, and tokens per bucket that add
up to the reference counter's own totals."""

from __future__ import annotations

from dataclasses import replace

from fakes import InventMessage

from conformance.case_markup import BUCKETS, case_markup, session_buckets
from conformance.checks import checks_for
from conformance.engine import plan_cases, reference_counter, run_case
from conformance.identity import map_view
from conformance.reference_plugin import ReferenceAssembler
from conformance.scenarios import default_corpus_path, load_corpus
from reference_impl.transcript import (
    Message,
    SummaryPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    Transcript,
)

COUNTER = reference_counter("openai-chat", "gpt-4o-mini")
CORPUS = {s.id: s for s in load_corpus(default_corpus_path())}


def _text(role: str, text: str) -> Message:
    return Message(role=role, parts=(TextPart(text),))  # type: ignore[arg-type]


def _call(call_id: str) -> Message:
    return Message(role="assistant", parts=(ToolCallPart(id=call_id, name="f", arguments="{}"),))


def _result(call_id: str, text: str) -> Message:
    return Message(role="tool", parts=(ToolResultPart(call_id=call_id, content=(TextPart(text),)),))


SESSION = Transcript(
    messages=(
        _text("system", "You are terse."),
        _text("user", "Goal: ship it."),
        _call("c1"),
        _result("c1", "a very long log line " * 30),
        _text("assistant", "Read the log."),
        _call("c2"),
        _result("c2", "ok"),
        _text("user", "Next?"),
    )
)
VIEW = Transcript(
    messages=(
        SESSION.messages[0],
        Message(role="user", parts=(SummaryPart("Earlier: the log was read."),)),
        SESSION.messages[2],
        _result("c1", "[cleared]"),
        _text("assistant", "An answer nobody gave."),
        SESSION.messages[5],
        SESSION.messages[6],
        SESSION.messages[7],
    )
)


def _markup() -> dict[str, object]:
    scenario = CORPUS["mid-ring-deletion"]
    return case_markup(
        replace(scenario, config={}),
        2000,
        session=SESSION,
        view=VIEW,
        identity=map_view(SESSION, VIEW),
        counter=COUNTER,
    )


def test_each_session_message_gets_its_fate() -> None:
    markup = _markup()
    fates = [e["status"] for e in markup["session"]]  # type: ignore[attr-defined]
    assert fates == ["kept", "dropped", "kept", "cleared", "dropped", "kept", "kept", "kept"]
    held = [e["view"] for e in markup["session"]]  # type: ignore[attr-defined]
    assert held == [0, None, 2, 3, None, 5, 6, 7]


def test_each_view_message_says_where_it_came_from() -> None:
    view = _markup()["view"]
    assert [v["status"] for v in view] == [  # type: ignore[attr-defined]
        "kept",
        "summary",
        "kept",
        "cleared",
        "invented",
        "kept",
        "kept",
        "kept",
    ]
    assert [v["sources"] for v in view][:5] == [[0], [], [2], [3], []]  # type: ignore[attr-defined]
    assert view[1]["bucket"] == "middle"  # type: ignore[index]  # a summary stands for the middle
    assert view[4]["bucket"] == "added"  # type: ignore[index]


def test_a_changed_message_that_is_not_a_cleared_result_is_changed() -> None:
    session = Transcript(messages=(_text("user", "hi"), _call("c1"), _result("c1", "x")))
    reordered = Message(
        role="assistant",
        parts=(ToolCallPart(id="c1", name="f", arguments='{"a": 1}'),),
    )
    view = Transcript(messages=(session.messages[0], reordered, session.messages[2]))
    markup = case_markup(
        replace(CORPUS["mid-ring-deletion"], config={}),
        2000,
        session=session,
        view=view,
        identity=map_view(session, view),
        counter=COUNTER,
    )
    assert [e["status"] for e in markup["session"]] == ["kept", "changed", "kept"]


def test_buckets_follow_the_reference_policy_definition() -> None:
    buckets = session_buckets(SESSION, {"recent_tool_rings": 1}, 2000, COUNTER)
    assert buckets is not None
    # System text and the pinned first user message open the prefix; the newest complete ring
    # (recent_tool_rings: 1) and everything after it are the suffix; the rest is the middle.
    assert buckets[:2] == ["prefix", "prefix"]
    assert buckets[2:5] == ["middle", "middle", "middle"]
    assert buckets[5:] == ["suffix", "suffix", "suffix"]
    # With the default (3 rings) both rings and what follows the older one are the suffix.
    assert session_buckets(SESSION, {}, 2000, COUNTER) == ["prefix"] * 2 + ["suffix"] * 6
    # A config the reference refuses gives no buckets rather than wrong ones.
    assert session_buckets(SESSION, {"recent_tool_rings": "many"}, 2000, COUNTER) is None


def test_bucket_totals_add_up_to_the_counters_totals() -> None:
    markup = _markup()
    tokens = markup["tokens"]
    assert tokens["session"]["total"] == COUNTER.count(SESSION).total  # type: ignore[index]
    assert tokens["view"]["total"] == COUNTER.count(VIEW).total  # type: ignore[index]
    for side in ("session", "view"):
        assert sum(tokens[side][b] for b in BUCKETS) == tokens[side]["total"]  # type: ignore[index]
    assert tokens["view"]["added"] == COUNTER.count_message(VIEW.messages[4])  # type: ignore[index]


def test_the_engine_records_markup_only_for_problem_cases() -> None:
    scenario = CORPUS["single-tool"]
    case = plan_cases([scenario], ["openai-chat"])[0]
    failing = run_case(case, InventMessage(), checks_for(scenario), 10.0)
    assert failing.status != "pass"
    assert failing.markup is not None
    assert "invented" in [v["status"] for v in failing.markup["view"]]
    passing = run_case(case, ReferenceAssembler("openai-chat"), checks_for(scenario), 10.0)
    assert passing.status == "pass"
    assert passing.markup is None
    again = type(failing).from_dict(failing.to_dict())
    assert again.markup == failing.markup
