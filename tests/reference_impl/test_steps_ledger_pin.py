"""``narrow_ledger_pin``: with ``ledger_pin_mode: when_not_visible`` the pinned ledger note lists
only the side effects nothing else in the view shows (docs/reference-assembler.md, the step's
docstring): an idempotency key or resource id in kept text (a result, call arguments, a summary's
ledger section), or, for an entry with neither, its ring still in the view. A kept call id alone
does not make an entry with facts visible: a cleared result has lost its resource id.
"""

from __future__ import annotations

import json
import re

from assembler_support import Call, WordCounter, parallel_ring, session, system, user, words
from hypothesis import event, given, settings
from hypothesis import strategies as st
from hypothesis_support import examples
from prometheus_client import CollectorRegistry

from reference_impl import (
    AssemblyConfig,
    AssemblyMetrics,
    ContextAssemblyError,
    Ledger,
    LedgerEntry,
    assemble,
)
from reference_impl.memory import ledger_message
from reference_impl.transcript import Transcript

NARROW = AssemblyConfig(
    summarize_trigger_ratio=1.0,
    recent_tool_rings=1,
    recent_user_turns=1,
    ledger_pin_mode="when_not_visible",
)
ALWAYS = NARROW.with_changes(ledger_pin_mode="always")

# c1's resource id is in its result, c2's idempotency key in its arguments, c3 has no facts (its
# call id stands for it), c4 ran outside this session (nothing in the view shows it).
INVOICE = LedgerEntry("create_invoice", "c1", "succeeded", resource_id="INV-1001")
EMAIL = LedgerEntry("send_email", "c2", "succeeded", idempotency_key="idem-7f3a")
NOTIFY = LedgerEntry("notify_ops", "c3", "succeeded")
ELSEWHERE = LedgerEntry("refund", "c9", "succeeded", resource_id="RF-77")
READ = LedgerEntry("get_status", "c5", "succeeded", side_effect=False)


def agent_session() -> Transcript:
    return session(
        system(),
        user("GOAL: bill the customer and tell ops"),
        parallel_ring(Call("c1", "create_invoice", '{"amount": 10}', "created invoice INV-1001")),
        parallel_ring(
            Call("c2", "send_email", '{"to": "a@b.c", "idempotency_key": "idem-7f3a"}', "sent")
        ),
        parallel_ring(Call("c3", "notify_ops", '{"text": "billed"}', "ok")),
        parallel_ring(Call("c5", "get_status", "{}", words(40))),
        user("Anything left?"),
    )


def run(s: Transcript, config: AssemblyConfig, ledger: Ledger, **kw):
    kw.setdefault("budget", 10_000)
    return assemble(
        s,
        config,
        counter=WordCounter(),
        ledger=ledger,
        metrics=AssemblyMetrics(CollectorRegistry()),
        **kw,
    )


def ledger_note(assembly):
    notes = [m for m in assembly.view if m.id.startswith("inject-ledger-")]
    assert len(notes) <= 1
    return notes[0] if notes else None


def test_the_note_lists_only_what_the_view_does_not_show():
    ledger = Ledger((INVOICE, EMAIL, NOTIFY, ELSEWHERE, READ))
    s = agent_session()
    a = run(s, NARROW, ledger)
    assert a.report.dropped_ring_ids == ()  # everything fits: every ring is in the view
    note = ledger_note(a)
    assert note == ledger_message(Ledger((ELSEWHERE,)))
    assert "call_id=c9" in note.text
    assert "RF-77" in note.text
    for hidden in ("c1", "c2", "c3", "c5"):
        assert f"call_id={hidden}" not in note.text
    assert "narrow_ledger_pin" in a.report.steps
    # The note still sits where the ledger is pinned: right after the system text, which is kept.
    assert [m.id for m in a.view] == [s.messages[0].id, note.id, *(m.id for m in s.messages[1:])]


def test_always_pins_every_side_effect_unchanged():
    ledger = Ledger((INVOICE, EMAIL, NOTIFY, ELSEWHERE, READ))
    a = run(agent_session(), ALWAYS, ledger)
    assert ledger_note(a) == ledger_message(ledger)
    assert "narrow_ledger_pin" not in a.report.steps


def test_a_note_with_nothing_hidden_is_dropped_and_the_rest_is_kept():
    s = agent_session()
    a = run(s, NARROW, Ledger((INVOICE, EMAIL, NOTIFY, READ)))
    assert ledger_note(a) is None
    assert [m.id for m in a.view] == [m.id for m in s.messages]
    assert "narrow_ledger_pin" in a.report.steps
    assert a.report.total_after == WordCounter().count(s).total


def test_a_note_with_everything_hidden_is_left_as_it_is():
    ledger = Ledger((ELSEWHERE, LedgerEntry("refund", "c8", "failed", idempotency_key="k-8")))
    a = run(agent_session(), NARROW, ledger)
    assert ledger_note(a) == ledger_message(ledger)
    assert "narrow_ledger_pin" not in a.report.steps


def test_without_side_effects_there_is_no_note_to_narrow():
    a = run(agent_session(), NARROW, Ledger((READ,)))
    assert ledger_note(a) is None
    assert "narrow_ledger_pin" not in a.report.steps


def test_a_dropped_ring_no_longer_shows_its_side_effect():
    # Word counts: the middle rings c1, c2 and c3 cost 14, 14 and 12 tokens, oldest first to go.
    # 20 tokens over budget drops c1 and c2: the invoice number and the email's key go with them,
    # so the note must keep listing both; c3 is kept, so its call id still shows it.
    ledger = Ledger((INVOICE, EMAIL, NOTIFY))
    s = agent_session()
    full = WordCounter().count(s).total + WordCounter().count_message(ledger_message(ledger))
    a = run(s, NARROW, ledger, budget=full - 20)
    assert a.report.dropped_ring_ids == (s.messages[2].id, s.messages[4].id)
    assert ledger_note(a) == ledger_message(Ledger((INVOICE, EMAIL)))
    assert a.report.total_after <= full - 20


def test_a_cleared_result_loses_its_resource_id_even_though_the_call_is_kept():
    # clear_tool_result keeps the call and its id but replaces the result text: the invoice
    # number is gone from the view, so the note must still list it; c2's key is in the kept
    # arguments, and c3 has no facts, so its kept call id is enough.
    ledger = Ledger((INVOICE, EMAIL, NOTIFY))
    s = session(
        system(),
        user("GOAL: bill the customer and tell ops"),
        parallel_ring(
            Call("c1", "create_invoice", '{"amount": 10}', "created invoice INV-1001 " + words(60))
        ),
        parallel_ring(
            Call("c2", "send_email", '{"to": "a@b.c", "idempotency_key": "idem-7f3a"}', "sent")
        ),
        parallel_ring(Call("c3", "notify_ops", '{"text": "billed"}', "ok")),
        parallel_ring(Call("c5", "get_status", "{}", "fine")),
        user("Anything left?"),
    )
    config = NARROW.with_changes(middle_delete_unit="clear_tool_result")
    full = WordCounter().count(s).total + WordCounter().count_message(ledger_message(ledger))
    a = run(s, config, ledger, budget=full - 30)
    assert a.report.cleared_result_ids == ("c1",)
    assert a.report.dropped_ring_ids == ()
    calls = {c.id for m in a.view for c in m.tool_calls}
    assert {"c1", "c2", "c3"} <= calls
    assert ledger_note(a) == ledger_message(Ledger((INVOICE,)))


def test_a_fact_quoted_in_a_kept_message_makes_its_entry_visible():
    # The user quotes the refund's resource id and the invoice ring is kept: the view shows both.
    s = session(
        system(),
        user("GOAL: check refund RF-77 went through"),
        parallel_ring(Call("c1", "create_invoice", "{}", "created invoice INV-1001")),
        user("and?"),
    )
    a = run(s, NARROW, Ledger((ELSEWHERE, INVOICE)))
    assert ledger_note(a) is None
    assert [m.id for m in a.view] == [m.id for m in s.messages]


def test_a_summary_ledger_section_makes_every_fact_visible():
    # The summary's ledger section is written from the ledger: every idempotency key and
    # resource id is in it, so the note keeps only the entry without facts whose ring the
    # summary replaced (c3), and nothing of what the suffix or the summary shows.
    ledger = Ledger((INVOICE, EMAIL, NOTIFY, ELSEWHERE))
    s = session(
        system(),
        user("GOAL: bill the customer and tell ops"),
        parallel_ring(Call("c1", "create_invoice", "{}", "created invoice INV-1001 " + words(200))),
        parallel_ring(Call("c2", "send_email", '{"idempotency_key": "idem-7f3a"}', words(200))),
        parallel_ring(Call("c3", "notify_ops", '{"text": "billed"}', words(200))),
        parallel_ring(Call("c5", "get_status", "{}", "fine")),
        user("Anything left?"),
    )
    config = NARROW.with_changes(summarize_trigger_ratio=0.5)
    full = WordCounter().count(s).total + WordCounter().count_message(ledger_message(ledger))
    a = run(s, config, ledger, budget=full)
    assert a.report.summary_used
    assert s.messages[6].id in a.report.dropped_ring_ids  # c3's ring is in the summary
    summary = next(m for m in a.view if m.id == a.report.summary_id)
    assert "RF-77" in summary.text
    assert "INV-1001" in summary.text
    assert ledger_note(a) == ledger_message(Ledger((NOTIFY,)))


# ------------------------------------------------------------------------------ the invariant

RING_SPECS = st.lists(
    st.tuples(
        st.sampled_from([True, False]),  # a side effect (else a read)
        st.sampled_from(["resource", "key", "both", "none"]),  # which facts it has
        st.integers(1, 60),  # words of its result
    ),
    min_size=1,
    max_size=6,
)


def _view_text(assembly) -> str:
    return "\n".join(
        [m.text for m in assembly.view]
        + [c.arguments for m in assembly.view for c in m.tool_calls]
        + [r.text for m in assembly.view for r in m.tool_results]
    )


@settings(max_examples=examples(250), deadline=None)
@given(
    specs=RING_SPECS,
    share=st.floats(0.55, 1.0),
    delete=st.sampled_from(["tool_ring", "clear_tool_result"]),
    trigger=st.sampled_from([0.5, 1.0]),
    recent=st.integers(0, 2),
)
def test_every_side_effect_stays_visible_and_the_note_lists_only_what_is_not(
    specs, share, delete, trigger, recent
):
    items: list = [system(), user("GOAL: run the batch")]
    entries: list[LedgerEntry] = []
    for i, (effect, facts, size) in enumerate(specs):
        key = f"idem-{i}x" if facts in ("key", "both") else None
        resource = f"RES-{i}x" if facts in ("resource", "both") else None
        arguments = json.dumps({"key": key}) if key else "{}"
        result = f"{resource or 'done'} {words(size)}"
        items.append(parallel_ring(Call(f"c{i}", f"tool{i}", arguments, result)))
        items.append(user(f"next {i}"))
        entries.append(
            LedgerEntry(f"tool{i}", f"c{i}", "succeeded", key, resource, side_effect=effect)
        )
    items.append(user("latest?"))
    s = session(*items)
    ledger = Ledger(tuple(entries))
    counter = WordCounter()
    note = ledger_message(ledger)
    full = counter.count(s).total + (counter.count_message(note) if note else 0)
    config = NARROW.with_changes(
        middle_delete_unit=delete, summarize_trigger_ratio=trigger, recent_tool_rings=recent
    )
    try:
        a = run(s, config, ledger, budget=int(full * share))
    except ContextAssemblyError:
        event("refused")
        return  # refusing is always safe; the property is about what is sent
    event("assembled" + (" with a summary" if a.report.summary_used else ""))
    assert a.report.total_after <= int(full * share)
    kept = ledger_note(a)
    listed = set(re.findall(r"call_id=(\S+)", kept.text)) if kept else set()
    others = [m for m in a.view if kept is None or m.id != kept.id]
    other_text = "\n".join(
        [m.text for m in others]
        + [c.arguments for m in others for c in m.tool_calls]
        + [r.text for m in others for r in m.tool_results]
    )
    ring_calls = {c.id for m in others for c in m.tool_calls}
    text = _view_text(a)
    for entry in ledger.side_effects:
        facts = [f for f in (entry.idempotency_key, entry.resource_id) if f]
        shown_elsewhere = (
            any(f in other_text for f in facts) if facts else entry.call_id in ring_calls
        )
        # Never lost: each side effect's facts (or, without any, its call) are in the view.
        assert any(f in text for f in facts) if facts else entry.call_id in ring_calls | listed
        # The note lists exactly what nothing else in the view shows.
        assert (entry.call_id in listed) is not shown_elsewhere
