"""``assemble_pipeline`` and the pieces of ``assembler.py`` around it: the report (tokens before,
after, steps, timing), the log lines, ``IdSlice`` and the views an ``Assembly`` renders.

Word counter (``assembler_support.WordCounter``): a message costs 4 tokens plus one per word, the
request overhead is 3.
"""

from __future__ import annotations

import dataclasses
import logging
import pickle
import re

import pytest
from assembler_support import WordCounter, assistant, ring, session, system, user, words
from prometheus_client import CollectorRegistry

from reference_impl import AssemblyConfig, AssemblyMetrics, ContextAssemblyError
from reference_impl.assembler import IdSlice, assemble_pipeline, session_digest_of
from reference_impl.errors import ShapeError
from reference_impl.transcript import Message, ToolCallPart

CONFIG = AssemblyConfig(summarize_trigger_ratio=1.0, recent_tool_rings=0, recent_user_turns=1)


def run(s, budget, config=CONFIG, **kw):
    kw.setdefault("counter", WordCounter())
    kw.setdefault("metrics", AssemblyMetrics(CollectorRegistry()))
    return assemble_pipeline(s, config, budget=budget, **kw)


def sample():
    # system 11, goal 5 | middle: 10, ring 7 + 5 = 12 | suffix (after the last ring): 10, latest
    # 5; overhead 3: 56 in all
    return session(
        system(),
        user("goal"),
        assistant(words(6)),
        ring("c1", "ok"),
        assistant(words(6)),
        user("latest"),
    )


# ---------------------------------------------------------------------------------- the report


def test_tokens_before_and_after_per_bucket():
    a = run(sample(), 46)  # 10 must go: the ring (verbose rings go before plain turns)
    before = a.report.tokens_before
    assert (before.prefix, before.tools, before.middle, before.suffix, before.overhead) == (
        16,
        0,
        22,
        15,
        3,
    )
    assert not a.report.tokens_before_is_lower_bound
    after = a.report.tokens_after
    assert after is not None
    assert (after.prefix, after.middle, after.suffix) == (16, 10, 15)
    assert a.report.total_after == 44
    assert a.report.decision == "ok"
    assert a.report.code is None
    assert 0.0 <= a.report.seconds < 60.0


class _FreeNotes(WordCounter):
    """Charges nothing for a message that reads "(free)"."""

    def _words(self, message):
        return 0 if message.text == "(free)" else super()._words(message)


def test_tokens_before_count_a_protected_message_that_costs_nothing_as_nothing():
    # The pinned goal and the latest user message cost nothing with this counter: the prefix is
    # the system text alone (11) and the suffix 0, not one token a unit.
    s = session(system(), user("(free)"), assistant(words(6)), user("(free)"))
    a = run(s, 1000, counter=_FreeNotes())
    before = a.report.tokens_before
    assert (before.prefix, before.middle, before.suffix, before.overhead) == (11, 10, 0, 3)
    assert not a.report.tokens_before_is_lower_bound


def test_tokens_before_are_a_lower_bound_when_the_old_end_was_never_counted():
    # Three rings of 12, room for one: the fit counts the newest two (the second overflows), the
    # fill keeps the newest and drops the other two; the oldest is never counted.
    s = session(system(), user("goal"), ring("c1", "ok"), ring("c2", "ok"), ring("c3", "ok"))
    s = s.with_messages((*s.messages, user("latest")))
    a = run(s, 24 + 12)
    assert a.report.tokens_before_is_lower_bound
    assert a.report.tokens_before.middle == 12 + 12
    assert a.report.dropped_ring_ids == (s.messages[2].id, s.messages[4].id)


def test_a_session_rejected_before_it_is_loaded_has_no_tokens_and_a_lower_bound():
    broken = session(system(), user("goal"), Message("assistant", (ToolCallPart("c9", "f", "{}"),)))
    with pytest.raises(ContextAssemblyError) as info:
        run(broken, 1000)
    report = info.value.details["report"]
    assert info.value.code == "context_assembly_pairing_error"
    assert report["decision"] == "rejected"
    assert report["steps"] == ["load"]
    assert report["tokens_before_is_lower_bound"] is True
    assert report["tokens_after"] is None
    assert report["total_after"] is None


def test_a_session_rejected_after_loading_reports_the_steps_it_ran_and_no_tokens_after():
    with pytest.raises(ContextAssemblyError) as info:
        run(sample(), 20)  # the prefix and the suffix alone are 24
    report = info.value.details["report"]
    assert report["decision"] == "rejected"
    assert report["steps"][0] == "load"
    assert "protect_suffix" in report["steps"]
    assert report["tokens_after"] is None
    assert report["total_after"] is None
    assert report["tokens_before"]["prefix"] == 16


def test_the_digest_is_of_the_message_ids_in_order():
    assert session_digest_of([]) == (
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"  # sha256 of nothing
    )
    assert session_digest_of(["a"]) != session_digest_of(["a", "b"])
    s = sample()
    assert run(s, 1000).report.session_digest == session_digest_of(m.id for m in s)


def test_log_lines_name_the_session_by_the_first_16_digits_of_its_digest(caplog):
    s = sample()
    digest = session_digest_of(m.id for m in s)
    with caplog.at_level(logging.INFO, logger="reference_impl"):
        run(s, 46)
        with pytest.raises(ContextAssemblyError):
            run(s, 20)
    lines = [r.getMessage() for r in caplog.records if r.name == "reference_impl"]
    assembled = [x for x in lines if x.startswith("assembled:")]
    rejected = [x for x in lines if x.startswith("assembly rejected:")]
    assert len(assembled) == 1
    assert len(rejected) == 1
    for line in (assembled[0], rejected[0]):
        assert re.search(r"session=([0-9a-f]+) ", line).group(1) == digest[:16]
    assert "messages=7->5 tokens=44/46" in assembled[0]
    assert "code=context_assembly_" in rejected[0]


# ------------------------------------------------------------------------------------ IdSlice


def test_an_id_slice_equals_the_tuple_of_its_ids_only():
    ids = ("a", "b", "c", "d")
    piece = IdSlice(ids, 1, 3)
    assert piece == ("b", "c")
    assert piece == ("b", "c")
    assert piece == IdSlice(("x", "b", "c"), 1)
    assert piece != ("b", "x")
    assert piece != ("b", "c", "d")
    assert (piece == ["b", "c"]) is False  # a list is not a tuple of ids
    assert piece.__eq__(["b", "c"]) is NotImplemented
    assert piece[0] == "b"
    assert piece[1] == "c"
    assert piece[-1] == "c"
    assert piece[1:] == ("c",)
    with pytest.raises(IndexError):
        piece[2]
    assert list(piece) == ["b", "c"]
    assert len(IdSlice(ids, 3, 1)) == 0


def test_an_id_slice_hashes_prints_and_pickles_as_the_tuple():
    piece = IdSlice(("a", "b", "c"), 1)
    assert hash(piece) == hash(("b", "c"))
    assert {piece: 1}[("b", "c")] == 1
    assert repr(piece) == "('b', 'c')"
    copy = pickle.loads(pickle.dumps(piece))
    assert type(copy) is tuple
    assert copy == ("b", "c")


# ---------------------------------------------------------------------------------- the views


def test_view_for_another_shape_without_a_base_view_is_the_view():
    a = run(sample(), 1000)
    bare = dataclasses.replace(a, base_view=None)
    assert bare.view_for("anthropic-messages") is bare.view
    assert a.view_for("openai-chat") is a.view
    assert a.shape == "openai-chat"


def test_dialects_are_for_openai_chat_only():
    a = run(session(system(), user("goal"), assistant("ok"), user("latest")), 1000)
    body = a.render(dialect="mistral")
    assert isinstance(body, dict)
    with pytest.raises(ShapeError):
        a.render("anthropic-messages", dialect="mistral")


@pytest.mark.parametrize(
    ("messages", "expected"),
    [
        # the only user message opens the view: nothing comes before it
        ((user("goal"), assistant("ok")), []),
        # system text is its shape's own boundary; the message before the newest user turn is one
        ((system(), user("goal"), assistant("ok"), user("latest")), [2]),
    ],
)
def test_stable_boundaries(messages, expected):
    s = session(*messages)
    a = run(s, 1000, config=CONFIG.with_changes(pin=()))
    assert a._stable_boundaries(a.view) == expected


def test_the_end_of_the_pinned_prefix_is_a_stable_boundary():
    # The first user message is pinned (the default): the prefix ends there, at 1; the message
    # before the newest user turn is 2. System text is never one (its shape marks it itself).
    s = session(system(), user("goal"), assistant("ok"), user("latest"))
    a = run(s, 1000, config=CONFIG.with_changes(pin=("first_user_message",)))
    assert a._stable_boundaries(a.view) == [1, 2]


def test_a_newest_user_turn_second_in_the_view_makes_the_first_message_a_boundary():
    s = session(user("goal"), user("latest"))
    a = run(s, 1000, config=CONFIG.with_changes(pin=()))
    assert a._stable_boundaries(a.view) == [0]


def test_an_anthropic_body_asks_for_the_reserved_output_when_the_session_sets_no_cap():
    a = run(session(system(), user("goal")), 1000, shape="anthropic-messages")
    assert a.render()["max_tokens"] == CONFIG.output_reserve_tokens
