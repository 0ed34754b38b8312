"""Pairing repair (``on_pairing_error: synthesize_error_results``): every call the ledger marks
timed out or cancelled gets an ``is_error`` result where its ring's results are, and nothing else
changes (``steps/pairing.py``)."""

from __future__ import annotations

from assembler_support import WordCounter, ring, session, system, user
from prometheus_client import CollectorRegistry

from reference_impl import AssemblyConfig, AssemblyMetrics, Ledger, LedgerEntry, assemble
from reference_impl.steps import SYNTHESIZED_RESULT_TEXT, check_pairing
from reference_impl.transcript import Message, TextPart, ToolCallPart, ToolResultPart

REPAIR = AssemblyConfig(on_pairing_error="synthesize_error_results")


def read(call_id: str, status) -> LedgerEntry:
    """A ledger entry of a read-only call (no side effect, so no pinned ledger note)."""
    return LedgerEntry("get_status", call_id, status, side_effect=False)


def run(s, ledger):
    return assemble(
        s,
        REPAIR,
        counter=WordCounter(),
        ledger=ledger,
        metrics=AssemblyMetrics(CollectorRegistry()),
        budget=10_000,
    )


def synthesized(call_id: str, status: str, name: str = "get_status") -> ToolResultPart:
    text = SYNTHESIZED_RESULT_TEXT.format(status=status)
    return ToolResultPart(call_id, (TextPart(text),), is_error=True, name=name)


def test_a_missing_result_goes_after_the_rings_results_and_before_its_trailing_text():
    # Three parallel calls; the execution layer answered two and timed out the third. The tool
    # message also carries text after its results (the form of an Anthropic user turn, A3).
    calls = tuple(ToolCallPart(f"c{i}", "get_status", "{}") for i in (1, 2, 3))
    r1 = ToolResultPart("c1", (TextPart("one"),))
    r2 = ToolResultPart("c2", (TextPart("two"),))
    note = TextPart("both done, the third timed out")
    s = session(
        system(),
        user("goal"),
        Message("assistant", calls),
        Message("tool", (r1, r2, note)),
        user("latest"),
    )
    ledger = Ledger((read("c3", "timed_out"),))
    a = run(s, ledger)
    assert a.report.repairs == ("c3",)
    tool = [m for m in a.view if m.role == "tool"]
    assert len(tool) == 1  # the ring keeps one tool message: no split results
    assert tool[0].parts == (r1, r2, synthesized("c3", "timed out"), note)
    assert tool[0].id == s.messages[3].id
    assert [m.id for m in a.view] == [m.id for m in s.messages]


def test_every_ring_is_visited_whatever_follows_it():
    # The unanswered call is in the oldest ring; a complete ring and user turns come after it.
    call, _ = ring("c1", "never came")
    s = session(system(), user("goal"), call, ring("c2", "ok"), user("and?"), user("latest"))
    ledger = Ledger((read("c1", "cancelled"), read("c2", "pending")))
    a = run(s, ledger)
    assert a.report.repairs == ("c1",)
    answer = a.view.messages[3]
    assert answer.role == "tool"
    assert answer.parts == (synthesized("c1", "cancelled"),)
    assert [m.id for m in a.view][:3] == [m.id for m in s.messages][:3]
    assert [m.id for m in a.view][4:] == [m.id for m in s.messages][3:]


def test_repaired_call_ids_are_listed_sorted():
    # Two rings, each with a timed-out call: the report lists the ids sorted, whichever ring the
    # repair reached first.
    first, _ = ring("call_1", "-")
    second, _ = ring("call_2", "-")
    s = session(system(), user("goal"), first, user("next"), second, user("latest"))
    ledger = Ledger(
        (
            read("call_1", "timed_out"),
            read("call_2", "timed_out"),
        )
    )
    repaired, ids = check_pairing(s, on_error="synthesize_error_results", ledger=ledger)
    assert ids == ["call_1", "call_2"]
    assert run(s, ledger).report.repairs == ("call_1", "call_2")
    assert [m.role for m in repaired.messages] == [
        "system",
        "user",
        "assistant",
        "tool",
        "user",
        "assistant",
        "tool",
        "user",
    ]
