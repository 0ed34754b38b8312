"""Loading units and protecting the prefix and the suffix (``steps/protect.py``): where memory
and ledger injections go, which user turns are protected, and which rings count as complete."""

from __future__ import annotations

import pytest
from assembler_support import WordCounter, assistant, ring, session, system, user, words
from prometheus_client import CollectorRegistry

from reference_impl import AssemblyConfig, AssemblyMetrics, MemoryItem, assemble
from reference_impl.budget import plan_budget
from reference_impl.ledger import Ledger, LedgerEntry
from reference_impl.steps import AssemblyState, load_units, protect_prefix, protect_suffix
from reference_impl.steps.protect import latest_user_positions
from reference_impl.transcript import Message, SummaryPart, TextPart, Transcript

CONFIG = AssemblyConfig(summarize_trigger_ratio=1.0, recent_tool_rings=1, recent_user_turns=1)
MEMORY = (MemoryItem("profile", "prefers dry runs"),)


def run(s, config=CONFIG, **kw):
    kw.setdefault("budget", 10_000)
    return assemble(
        s, config, counter=WordCounter(), metrics=AssemblyMetrics(CollectorRegistry()), **kw
    )


def roles_and_injections(a) -> list[str]:
    return ["inject" if m.id.startswith("inject-") else m.role for m in a.view]


# --------------------------------------------------------------------------------- injections


@pytest.mark.parametrize(
    ("messages", "expected"),
    [
        ((system(), user("goal")), ["system", "inject", "user"]),
        (
            (system(), system("Also: no deploys on Friday."), user("goal")),
            ["system", "system", "inject", "user"],
        ),
        ((user("goal"), assistant("ok"), user("latest")), ["inject", "user", "assistant", "user"]),
        ((system(),), ["system", "inject"]),
    ],
    ids=["after-the-system", "after-all-leading-system", "first-without-system", "system-only"],
)
def test_injections_go_right_after_the_leading_system_text(messages, expected):
    a = run(session(*messages), memory=MEMORY)
    assert roles_and_injections(a) == expected
    injected = next(m for m in a.view if m.id.startswith("inject-"))
    assert injected.text == "[memory source: profile]\nprefers dry runs"


# ------------------------------------------------------------------------------- user turns


def test_latest_user_positions_are_the_newest_plain_user_turns_oldest_first():
    s = session(
        system(),
        user("goal"),
        ring("c1", "ok"),
        user("second"),
        assistant("answer"),
        user("third"),
        ring("c2", "ok"),
    )
    units = load_units(s, ())
    heads = [u.messages[0].text for u in units]
    assert [heads[i] for i in latest_user_positions(units, 2)] == ["second", "third"]
    assert [heads[i] for i in latest_user_positions(units, 5)] == ["goal", "second", "third"]
    # At least the latest one, whatever the setting.
    assert [heads[i] for i in latest_user_positions(units, 0)] == ["third"]
    assert [heads[i] for i in latest_user_positions(units, 1)] == ["third"]


@pytest.mark.parametrize("turns", [0, 1, 2])
def test_only_the_latest_recent_user_turns_are_protected(turns):
    # Budget for the prefix and the suffix only: every middle unit that is not protected goes.
    s = session(
        system(),
        user("goal"),
        assistant(words(20)),
        user("an older question " + words(20)),
        assistant(words(20)),
        user("latest"),
    )
    m = s.messages
    config = CONFIG.with_changes(recent_user_turns=turns, recent_tool_rings=0)
    fixed = [m[0], m[1], m[5]] + ([m[3]] if turns >= 2 else [])
    budget = sum(WordCounter().count_message(x) for x in fixed) + 3
    a = run(s, config, budget=budget)
    assert [x.id for x in a.view] == [x.id for x in m if x in fixed]


# ------------------------------------------------------------------------------ complete rings


def buckets(s: Transcript, config: AssemblyConfig) -> list[str]:
    """The bucket of each message as the case markup reads a session (not validated first)."""
    state = AssemblyState(
        config=config,
        counter=WordCounter(),
        ledger=Ledger(),
        plan=plan_budget(config, 10_000),
        units=load_units(s, ()),
        tools=s.tools,
        session=s,
    )
    protect_prefix(state)
    protect_suffix(state)
    return [u.bucket for u in state.units for _ in u.messages]


@pytest.mark.parametrize(
    ("s", "config"),
    [
        pytest.param(
            # The newest ring is still waiting for its result: the last complete ring is the one
            # before, and the suffix starts there.
            session(
                system(), user("goal"), ring("c1", "ok"), ring("c2", "ok"), ring("c3", "not yet")[0]
            ),
            CONFIG,
            id="a-ring-without-all-its-results-is-not-one-of-the-recent-complete-rings",
        ),
        pytest.param(
            session(
                system(),
                user("goal"),
                ring("c1", "ok"),
                assistant("done"),
                user("thanks"),
                user("latest"),
            ),
            CONFIG.with_changes(recent_tool_rings=0),
            id="without-recent-rings-the-suffix-is-everything-after-the-last-ring",
        ),
    ],
)
def test_the_suffix_starts_at_the_recent_complete_rings(s, config):
    assert buckets(s, config) == [
        "prefix",
        "prefix",
        "middle",
        "middle",
        "suffix",
        "suffix",
        "suffix",
    ]


def test_the_latest_user_positions_include_a_user_message_that_ends_the_session():
    units = load_units(session(system(), user("a"), assistant("b"), user("c")), ())
    assert latest_user_positions(units, 1) == [3]
    assert latest_user_positions(units, 5) == [1, 3]


# ------------------------------------------------------------------------------- loading, steps


def test_a_stored_summary_is_loaded_as_a_summary_and_kept_longest_in_the_middle():
    old = Message("user", (SummaryPart("Summary of earlier conversation (depth 1). " + words(20)),))
    s = session(system(), user("goal"), old, assistant(words(25)), user("latest"))
    m = s.messages
    # Room for the summary or the newer plain turn (29 tokens each), not both: the summary's
    # tier is kept longest, although the plain turn is newer.
    budget = sum(WordCounter().count_message(x) for x in (m[0], m[1], m[2], m[4])) + 3
    a = run(s, budget=budget)
    assert [x.id for x in a.view] == [x.id for x in (m[0], m[1], m[2], m[4])]
    assert a.report.dropped_turn_ids == (m[3].id,)


def test_the_report_lists_loading_and_protection_first():
    a = run(session(system(), user("goal"), user("latest")))
    assert a.report.steps[:4] == ("load", "validate_pairing", "protect_prefix", "protect_suffix")
    call, _ = ring("c1", "-")
    config = CONFIG.with_changes(on_pairing_error="synthesize_error_results")
    ledger = Ledger((LedgerEntry("get_status", "c1", "timed_out", side_effect=False),))
    repaired = run(session(system(), user("goal"), call, user("latest")), config, ledger=ledger)
    assert repaired.report.steps[:2] == ("load", "synthesize_error_results")


@pytest.mark.parametrize(
    "messages",
    [
        (system(),),  # system text only: the injections come after it, at the end
        (system(), user("goal")),  # the usual case: after the system text, before the goal
        (user("goal"), assistant("ok")),  # no system text: first
    ],
)
def test_injections_are_loaded_once_right_after_the_leading_system_text(messages):
    note = Message("system", (TextPart("[memory] prefers blue-green rollouts"),))
    units = load_units(session(*messages), (note,))
    kinds = [u.kind for u in units]
    assert kinds.count("injection") == 1
    leading = sum(1 for m in messages if m.role == "system")
    assert kinds.index("injection") == leading
    injection = units[leading]
    assert injection.messages == (note,)
    assert injection.bucket == "prefix"
    assert len(units) == len(messages) + 1
