"""``should`` checks: the policy of the seed (pins, recency, whole rings, ledger, budget, order)."""

from __future__ import annotations

import itertools

from conformance.checks._helpers import (
    assembled_turns,
    call_ids_in,
    complete_rings,
    describe,
    final_assembled,
    first_user_index,
    has_summary,
    is_plain,
    knob,
    last_user_index,
    ledger_key,
    side_effect_entries,
    summary_text,
    turn_label,
)
from conformance.checks.outcome import CaseOutcome
from conformance.checks.registry import Failure, check
from conformance.scenarios import Scenario
from reference_impl.rings import Ring, segment
from reference_impl.transcript import ReasoningPart, Transcript


@check(id="assembles_when_feasible", level="should")
def assembles_when_feasible(scenario: Scenario, outcome: CaseOutcome) -> None:
    """A valid session that can fit the budget is assembled, not refused."""
    if scenario.expect.outcome != "assembled":
        return
    for turn in outcome.turns:
        if turn.status == "refused":
            raise Failure(
                "refused a session that fits",
                f"{turn_label(outcome, turn)}refusal {turn.refusal_code}: {turn.reason}",
            )


@check(id="system_kept", level="should")
def system_kept(_scenario: Scenario, outcome: CaseOutcome) -> None:
    """Every system/developer text of the session is in the view, unchanged."""
    for turn in assembled_turns(outcome):
        view_text = [m.text for m in turn.view.messages if m.role in {"system", "developer"}]
        for i, message in enumerate(turn.session.messages):
            if message.role in {"system", "developer"} and not any(
                message.text in text for text in view_text
            ):
                raise turn.failure(
                    "system text lost",
                    f"{describe(turn.session, i)} {message.text[:60]!r} is not in the view",
                )


@check(id="latest_user_kept", level="should")
def latest_user_kept(_scenario: Scenario, outcome: CaseOutcome) -> None:
    """The latest user turn is in the view, unchanged (alone, or merged whole into a same-side
    neighbour as strict-alternation shapes require, B3/G1)."""
    for turn in assembled_turns(outcome):
        i = last_user_index(turn.session)
        if i is not None and not turn.identity.kept_whole(i):
            raise turn.failure(
                "latest user turn not kept",
                f"{describe(turn.session, i)} is {turn.identity.sources[i]} in the view",
            )


@check(id="first_user_goal_pinned", level="should")
def first_user_goal_pinned(scenario: Scenario, outcome: CaseOutcome) -> None:
    """The first user message (the goal) is pinned when the config pins it."""
    if "first_user_message" not in knob(scenario, "pin"):
        return
    for turn in assembled_turns(outcome):
        i = first_user_index(turn.session)
        if i is not None and turn.identity.sources[i] == "dropped":
            raise turn.failure(
                "first user goal dropped",
                f"{describe(turn.session, i)} {turn.session.messages[i].text[:60]!r} is pinned "
                f"but missing from the view",
            )


def _ring_text(ring: Ring) -> str:
    """``ring r2 (messages[3:5], calls c1,c2)``: how failures name a ring."""
    return f"ring {ring.id} (messages[{ring.start}:{ring.stop}], calls {','.join(ring.call_ids)})"


@check(id="whole_rings", level="should")
def whole_rings(_scenario: Scenario, outcome: CaseOutcome) -> None:
    """Each ring (a call message and all its results) is kept whole or dropped whole."""
    for turn in assembled_turns(outcome):
        for seg in segment(turn.session):
            if not isinstance(seg, Ring):
                continue
            present = [i for i in seg.indices if turn.identity.present(i)]
            if present and len(present) != len(seg.indices):
                dropped = [i for i in seg.indices if i not in present]
                raise turn.failure(
                    "ring split",
                    f"{_ring_text(seg)}: kept messages{present}, dropped messages{dropped}",
                )


@check(id="recent_rings_kept", level="should")
def recent_rings_kept(scenario: Scenario, outcome: CaseOutcome) -> None:
    """The last `recent_tool_rings` complete rings are kept (they are the suffix)."""
    count = int(knob(scenario, "recent_tool_rings"))
    for turn in assembled_turns(outcome):
        recent = complete_rings(turn.session)[-count:] if count else []
        for ring in recent:
            lost = [i for i in ring.indices if not turn.identity.present(i)]
            if lost:
                raise turn.failure(
                    f"one of the last {count} rings dropped",
                    f"{_ring_text(ring)}: messages{lost} missing",
                )


@check(id="ledger_pinned", level="should")
def ledger_pinned(scenario: Scenario, outcome: CaseOutcome) -> None:
    """Every side-effect ledger entry stays visible: its ring kept, or its key in the view's text."""
    for turn in assembled_turns(outcome):
        calls = call_ids_in(turn.view)
        text = "\n".join(m.text for m in turn.view.messages)
        for entry in side_effect_entries(scenario):
            if entry["call_id"] not in calls and ledger_key(entry) not in text:
                raise turn.failure(
                    "side effect forgotten",
                    f"ledger entry {entry['tool']} call {entry['call_id']} (key "
                    f"{ledger_key(entry)}) was dropped and is neither in a summary nor a pinned "
                    f"ledger note",
                )


@check(id="ledger_in_summary", level="should")
def ledger_in_summary(scenario: Scenario, outcome: CaseOutcome) -> None:
    """A summary that replaced side-effecting rings lists their ledger entries."""
    for turn in assembled_turns(outcome):
        if not has_summary(turn.view):
            continue
        calls = call_ids_in(turn.view)
        summary = summary_text(turn.view)
        forgotten = [e for e in side_effect_entries(scenario) if e["call_id"] not in calls]
        for entry in forgotten:
            for needle in (str(entry["tool"]), ledger_key(entry)):
                if needle not in summary:
                    raise turn.failure(
                        "ledger missing from the summary",
                        f"call {entry['call_id']} was summarized away but the summary does not "
                        f"name {needle!r}",
                    )


@check(id="within_budget", level="should")
def within_budget(_scenario: Scenario, outcome: CaseOutcome) -> None:
    """The request fits the budget, counted with the reference counter (tools and overhead included)."""
    for turn in outcome.assembled_turns:
        if turn.tokens is not None and turn.tokens > outcome.budget:
            raise Failure(
                "over budget",
                f"{turn_label(outcome, turn)}{turn.tokens} tokens by {outcome.counter} > budget "
                f"{outcome.budget} (over by {turn.tokens - outcome.budget})",
            )


@check(id="order_preserved", level="should")
def order_preserved(_scenario: Scenario, outcome: CaseOutcome) -> None:
    """Kept messages keep their session order, and results keep their calls' order."""
    for turn in assembled_turns(outcome):
        last = -1
        for link in turn.identity.links:
            if link.source is None:
                continue
            for source in link.sources:  # a merged message holds its sources in session order
                if source < last:
                    raise turn.failure(
                        "messages reordered",
                        f"view messages[{link.index}] holds {describe(turn.session, source)} but "
                        f"comes after session messages[{last}]",
                    )
                last = source
            given = [r.call_id for r in turn.view.messages[link.index].tool_results]
            wanted = [r.call_id for r in turn.session.messages[link.source].tool_results]
            if given and sorted(given) == sorted(wanted) and given != wanted:
                raise turn.failure(
                    "results reordered",
                    f"view messages[{link.index}] answers {','.join(given)}; the session order "
                    f"is {','.join(wanted)}",
                )


@check(id="reasoning_kept_with_ring", level="should")
def reasoning_kept_with_ring(_scenario: Scenario, outcome: CaseOutcome) -> None:
    """A kept ring keeps its reasoning artifacts byte-exact (R3/R4, A13-A16, G6)."""
    for turn in assembled_turns(outcome):
        for link in turn.identity.links:
            if link.source is None or link.status != "modified":
                continue
            held = [turn.session.messages[i] for i in link.sources]
            if not any(m.tool_calls for m in held):
                continue
            want = [p for m in held for p in m.parts if isinstance(p, ReasoningPart)]
            got = [p for p in turn.view.messages[link.index].parts if isinstance(p, ReasoningPart)]
            if want != got:
                raise turn.failure(
                    "reasoning detached from its ring",
                    f"{describe(turn.session, link.source)} had {len(want)} reasoning "
                    f"artifact(s); view messages[{link.index}] carries {len(got)} (changed or "
                    f"missing)",
                )


# -- opt-in: scenarios name these in expect.checks --------------------------------------------


@check(id="summary_used", level="should", default=False)
def summary_used(_scenario: Scenario, outcome: CaseOutcome) -> None:
    """The middle was replaced by a summary block."""
    final = final_assembled(outcome)
    if final is not None and not has_summary(final.view):
        raise Failure(
            "no summary",
            f"the scenario requires summary replacement at budget {outcome.budget}; the view "
            f"has {len(final.view.messages)} messages and no summary part",
        )


@check(id="tools_dropped", level="should", default=False)
def tools_dropped(_scenario: Scenario, outcome: CaseOutcome) -> None:
    """Escalation dropped the tool schemas (drop_tools_schema_then_fail) instead of refusing."""
    final = final_assembled(outcome)
    if final is not None and final.view.tools:
        names = ", ".join(t.name for t in final.view.tools)
        raise Failure(
            "tool schemas still sent",
            f"the scenario only fits without its tool schemas; the view still offers {names}",
        )


def _middle_rings(scenario: Scenario, session: Transcript) -> list[Ring]:
    """The complete rings older than the last ``recent_tool_rings`` (the deletable middle)."""
    count = int(knob(scenario, "recent_tool_rings"))
    found = complete_rings(session)
    return found[: len(found) - count] if count else found


def _is_error_ring(session: Transcript, ring: Ring) -> bool:
    """Whether any result of the ring is an error."""
    return any(r.is_error for i in ring.indices for r in session.messages[i].tool_results)


@check(id="middle_error_results_kept", level="should", default=False)
def middle_error_results_kept(scenario: Scenario, outcome: CaseOutcome) -> None:
    """Short error results in the middle outlive successful ones (up to keep_middle_error_results)."""
    final = final_assembled(outcome)
    if final is None:
        return
    cap = int(knob(scenario, "keep_middle_error_results"))
    middle = _middle_rings(scenario, final.session)
    errors = [r for r in middle if _is_error_ring(final.session, r)]
    kept = [r for r in errors if final.identity.present(r.start)]
    if len(kept) < min(cap, len(errors)):
        lost = [r.id for r in errors if r not in kept]
        raise Failure(
            "middle error results dropped",
            f"{len(kept)} of {len(errors)} middle error rings kept (cap {cap}); dropped: "
            f"{', '.join(lost)}",
        )


@check(id="oldest_rings_first", level="should", default=False)
def oldest_rings_first(scenario: Scenario, outcome: CaseOutcome) -> None:
    """Successful middle rings are dropped oldest first, and some were dropped."""
    final = final_assembled(outcome)
    if final is None:
        return
    middle = [
        r for r in _middle_rings(scenario, final.session) if not _is_error_ring(final.session, r)
    ]
    state = [final.identity.present(r.start) for r in middle]
    if middle and all(state):
        raise Failure("no middle ring dropped", f"all {len(middle)} middle rings were kept")
    for older, newer in itertools.pairwise(middle):
        if final.identity.present(older.start) and not final.identity.present(newer.start):
            raise Failure(
                "a newer ring dropped before an older one",
                f"{_ring_text(newer)} dropped while the older {_ring_text(older)} was kept",
            )


@check(id="plain_turns_fifo", level="should", default=False)
def plain_turns_fifo(scenario: Scenario, outcome: CaseOutcome) -> None:
    """Older plain turns in the middle are dropped first in, first out."""
    final = final_assembled(outcome)
    if final is None:
        return
    session = final.session
    users = [i for i, m in enumerate(session.messages) if m.role == "user" and not m.has_tool_parts]
    protected = int(knob(scenario, "recent_user_turns"))
    suffix_start = users[-protected] if protected and len(users) >= protected else len(session)
    pinned = first_user_index(session) if "first_user_message" in knob(scenario, "pin") else None
    candidates = [i for i in range(suffix_start) if i != pinned and is_plain(session.messages[i])]
    present = [final.identity.present(i) for i in candidates]
    if candidates and all(present):
        raise Failure("no plain turn dropped", f"all {len(candidates)} middle plain turns kept")
    for a, b in itertools.pairwise(candidates):
        if final.identity.present(a) and not final.identity.present(b):
            raise Failure(
                "plain turns not dropped oldest first",
                f"{describe(session, b)} dropped while the older {describe(session, a)} was kept",
            )
