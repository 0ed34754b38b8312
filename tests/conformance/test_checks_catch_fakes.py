"""Each known-bad fake is caught by the check meant for it, and by nothing unexpected.

Every fake runs over the whole built-in corpus in openai-chat. ``INTENDED`` is the check that must
catch it; ``NECESSARY`` lists the other checks that a fake of that kind cannot avoid tripping,
with the reason. Any other failing check is a test failure (a check firing where it should not).
"""

from __future__ import annotations

import inspect
from collections import defaultdict
from functools import cache

import fakes
import pytest

from conformance.engine import run_events
from conformance.events import CaseFinished, CaseResult
from conformance.loading import Plugin
from conformance.scenarios import load_corpus

ERROR = "<plug-in error>"

# fake -> (intended check, {necessary secondary check: why})
EXPECTED: dict[str, tuple[str, dict[str, str]]] = {
    "DropSystem": ("system_kept", {}),
    "OrphanResult": (
        "provider_valid",
        {
            "whole_rings": "dropping the call message leaves part of its ring",
            "recent_rings_kept": "the oldest ring sent is often one of the recent rings",
        },
    ),
    "UnansweredCall": (
        "provider_valid",
        {
            "whole_rings": "dropping the results leaves part of the ring",
            "recent_rings_kept": "the oldest ring sent is often one of the recent rings",
        },
    ),
    "SplitParallelRing": ("provider_valid", {}),
    "ReorderResults": ("order_preserved", {}),
    "IgnoreBudget": (
        "within_budget",
        {
            "refuses_broken_input": "scenarios that cannot fit must be refused; it never refuses",
            "oldest_rings_first": "nothing is dropped, so no ring is dropped oldest first",
            "plain_turns_fifo": "nothing is dropped, so no plain turn is either",
            "summary_used": "nothing is over budget, so nothing is summarized",
            "tools_dropped": "nothing is over budget, so no escalation happens",
        },
    ),
    "TextOnlyCounting": (
        "within_budget",
        {
            "refuses_broken_input": "tool schemas look free, so an over-budget request is sent",
            "oldest_rings_first": "tool payloads look free, so the rings are not dropped",
            "summary_used": "tool payloads look free, so nothing is summarized",
            "tools_dropped": "tool schemas look free, so they are never dropped",
        },
    ),
    "AnonymousLedger": ("ledger_in_summary", {}),
    "DropLedgerNote": ("ledger_pinned", {}),
    "DropLatestUser": (
        "latest_user_kept",
        {
            "provider_valid": "Mistral rejects a request that ends with an assistant turn (MI5)",
            "first_user_goal_pinned": "where the goal is the only user turn, it is the latest",
        },
    ),
    "DropGoal": (
        "first_user_goal_pinned",
        {"latest_user_kept": "where the goal is the only user turn, it is the latest"},
    ),
    "DropNewestRing": ("recent_rings_kept", {}),
    "StripReasoningContent": (
        "reasoning_kept_with_ring",
        {
            "provider_valid": "DeepSeek's thinking mode refuses a kept tool-call turn without "
            "its reasoning_content (DS3)"
        },
    ),
    "NewestPlainFirst": ("plain_turns_fifo", {}),
    "InventMessage": (
        "nothing_invented",
        {
            "within_budget": "the invented message costs tokens the reference had planned to the limit"
        },
    ),
    "Crash": (ERROR, {}),
    "Garbage": (ERROR, {}),
}


# Fakes that look wrong but are not: the harness must pass them at every level.
FAIR = {
    # A summary without ledger lines next to the ledger pinned in the prefix.
    "LoseLedgerInSummary",
}


@pytest.mark.parametrize("name", sorted(FAIR))
def test_a_fair_variant_fails_nothing(name: str) -> None:
    assert not failures(name), {k: sorted(v)[:3] for k, v in failures(name).items()}


def test_every_check_has_a_fake_meant_for_it() -> None:
    from miniatures.bad import BAD
    from test_checks_known_bad import CASES

    from conformance.checks import REGISTRY

    meant = {intended for intended, _ in EXPECTED.values()}
    meant |= {check for _, _, check, _, _ in BAD.values()}  # test_corpus_fairness.py
    meant |= set(CASES)  # test_checks_known_bad.py: caught by that check alone
    missing = set(REGISTRY) - meant
    assert not missing, f"checks without a known-bad fake: {sorted(missing)}"


def test_every_check_has_a_known_bad_case_that_it_alone_catches() -> None:
    # Deleting the body of any check leaves a known-bad case that nothing else fails.
    from test_checks_known_bad import CASES

    from conformance.checks import REGISTRY

    alone = set(CASES) | {intended for intended, necessary in EXPECTED.values() if not necessary}
    missing = set(REGISTRY) - alone
    assert not missing, f"checks no known-bad case pins alone: {sorted(missing)}"


@cache  # both tests of a fake read the same corpus run (FAKE_NAMES keeps them on one worker)
def failures(name: str) -> dict[str, set[str]]:
    plugin = Plugin(name, name, {"openai-chat": getattr(fakes, name)()})
    found: dict[str, set[str]] = defaultdict(set)
    for event in run_events(plugin, load_corpus(), timeout=5.0):
        if isinstance(event, CaseFinished):
            result: CaseResult = event.result
            if result.outcome == "error":
                found[ERROR].add(result.key)
            for check in result.checks:
                if check.status != "pass":
                    found[check.id].add(result.key)
    return dict(found)


# Each fake's two tests share an xdist group, so its corpus run (cached above) happens once.
FAKE_NAMES = [pytest.param(n, marks=pytest.mark.xdist_group(f"fake-{n}")) for n in sorted(EXPECTED)]


@pytest.mark.parametrize("name", FAKE_NAMES)
def test_fake_is_caught_by_the_intended_check(name: str) -> None:
    intended, _ = EXPECTED[name]
    assert failures(name).get(intended), f"{name} slipped past {intended}"


@pytest.mark.parametrize("name", FAKE_NAMES)
def test_nothing_else_fails_the_fake(name: str) -> None:
    intended, necessary = EXPECTED[name]
    unexpected = {
        k: sorted(v)[:3] for k, v in failures(name).items() if k != intended and k not in necessary
    }
    assert not unexpected, f"{name} also failed {unexpected}"


def test_hang_becomes_an_error_result_and_the_run_goes_on() -> None:
    plugin = Plugin("Hang", "Hang", {"openai-chat": fakes.Hang()})
    scenarios = [s for s in load_corpus() if s.id in {"single-tool", "parallel-tools-2"}]
    try:
        results = [
            e.result
            for e in run_events(plugin, scenarios, timeout=0.2)
            if isinstance(e, CaseFinished)
        ]
    finally:
        fakes.release_hung()
    assert [r.status for r in results] == ["error", "error"]
    assert all("timed out after 0.2s" in (r.reason or "") for r in results)


def test_crash_reason_names_the_exception() -> None:
    plugin = Plugin("Crash", "Crash", {"openai-chat": fakes.Crash()})
    scenarios = [s for s in load_corpus() if s.id == "single-tool"]
    (result,) = [e.result for e in run_events(plugin, scenarios) if isinstance(e, CaseFinished)]
    line = inspect.getsourcelines(fakes.Crash.assemble)[1] + 1
    assert result.reason == (
        "the plug-in raised RuntimeError: fake assembler crashed on purpose "
        f"(at fakes.py:{line}, in assemble)"
    )
    assert result.input is not None  # the failing case keeps its input for the report
