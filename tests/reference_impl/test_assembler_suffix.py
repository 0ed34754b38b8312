"""The suffix: the last ``recent_tool_rings`` complete rings and everything after the oldest of
them, plus the latest ``recent_user_turns`` user messages each on its own (ARCHITECTURE section 2).
The rings between the task and the newest rings are the deletable middle."""

from __future__ import annotations

import pytest
from assembler_support import (
    WordCounter,
    assemble_words,
    assistant,
    ring,
    session,
    system,
    user,
    words,
)

from reference_impl import AssemblyConfig, ContextAssemblyError

CONFIG = AssemblyConfig(summarize_trigger_ratio=1.0, recent_tool_rings=2, recent_user_turns=2)


def run(s, config=CONFIG, budget=10_000):
    return assemble_words(s, config, budget=budget)


def agent_loop():
    """A task given once, then six verbose rings: the long agent loop."""
    rings = [ring(f"c{i}", words(40)) for i in range(6)]
    return session(system(), user("GOAL: audit the fleet"), user("start with eu-west"), *rings)


def test_latest_user_message_does_not_protect_every_ring_after_it():
    s = agent_loop()
    m = s.messages
    # 2 user turns: the old definition started the suffix at the older of them and protected all.
    # Room for prefix + the two protected users + the last two rings, not for more.
    fixed = sum(WordCounter().count_message(x) for x in (*m[:3], *m[-4:])) + 3
    a = run(s, budget=fixed + 10)
    kept = {x.id for x in a.view}
    assert m[2].id in kept  # the latest user message (the task), on its own
    assert {x.id for x in m[-4:]} <= kept  # the last two complete rings
    assert not any(x.id in kept for x in m[3:-4])  # the four rings between them were deletable
    assert a.report.dropped_ring_ids == tuple(m[i].id for i in (3, 5, 7, 9))


def test_latest_user_turns_are_protected_one_by_one_not_as_a_range():
    s = session(
        system(),
        user("goal"),
        assistant(words(30, "a")),
        user("older question"),  # the second-latest user message: kept on its own
        assistant(words(30, "b")),  # between the two: middle
        user("latest question"),
    )
    m = s.messages
    full = WordCounter().count(s).total
    a = run(s, budget=full - 30)
    kept = [x.id for x in a.view]
    assert m[3].id in kept
    assert m[5].id in kept
    assert m[2].id not in kept  # oldest plain turn first (FIFO)
    assert m[4].id in kept
    b = run(s, budget=full - 60)
    assert [x.id for x in b.view] == [m[0].id, m[1].id, m[3].id, m[5].id]


def test_without_recent_rings_the_range_is_what_follows_the_last_ring():
    s = session(system(), user("goal"), ring("c1", words(40)), assistant("done"), user("next?"))
    m = s.messages
    a = run(s, CONFIG.with_changes(recent_tool_rings=0), budget=30)
    assert [x.id for x in a.view] == [m[0].id, m[1].id, m[4].id, m[5].id]


def test_the_suffix_that_cannot_fit_still_names_the_suffix_bucket():
    s = agent_loop()
    with pytest.raises(ContextAssemblyError) as info:
        run(s, budget=60)
    assert info.value.code == "context_assembly_suffix_over_budget"
