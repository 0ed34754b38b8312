"""``must`` checks: the provider accepts the request, broken input is refused, nothing invented."""

from __future__ import annotations

from conformance.checks._helpers import assembled_turns, describe, turn_label
from conformance.checks.outcome import CaseOutcome
from conformance.checks.registry import Failure, check
from conformance.scenarios import Scenario
from reference_impl.rings import validate as pairing_violations


@check(id="provider_valid", level="must")
def provider_valid(_scenario: Scenario, outcome: CaseOutcome) -> None:
    """The provider (or its faithful emulation) accepts the assembled request, and a recorded
    verdict is not contradicted by the validators (a stale cassette fails loudly, whichever
    side accepts)."""
    for turn in outcome.assembled_turns:
        verdict = turn.verdict
        if verdict is None:
            raise RuntimeError("no verdict was computed for an assembled request")
        judgement = turn.judgement
        if judgement is not None and judgement.stale:
            raise Failure(
                "stale cassette: the recorded verdict and the validators disagree",
                f"{turn_label(outcome, turn)}{judgement.stale_message()}",
            )
        if verdict.accepted:
            continue
        error = verdict.error or {}
        inner = error.get("error", error)
        text = inner.get("message") if isinstance(inner, dict) else None
        dialect = f" ({verdict.dialect})" if verdict.dialect else ""
        raise Failure(
            f"{outcome.shape}{dialect} rejects the request (rule {verdict.rule})",
            f"{turn_label(outcome, turn)}HTTP {verdict.status}: {text or error}; "
            f"evidence {verdict.evidence}, provenance {verdict.provenance}"
            + (f" ({judgement.cassette})" if judgement and judgement.cassette else ""),
        )


@check(id="refuses_broken_input", level="must")
def refuses_broken_input(scenario: Scenario, outcome: CaseOutcome) -> None:
    """A session that cannot be sent safely (broken pairing, no room) is refused, not 'fixed'."""
    if scenario.expect.outcome != "refused":
        return
    for turn in outcome.assembled_turns:
        found = pairing_violations(turn.session)
        why = "; ".join(str(v) for v in found[:3]) if found else "prefix + suffix exceed the budget"
        raise Failure(
            "assembled a request where refusal was required",
            f"{turn_label(outcome, turn)}the session must be refused ({why}); the plug-in "
            f"returned a request of {len(turn.view.messages) if turn.view else '?'} messages",
        )


@check(id="nothing_invented", level="must")
def nothing_invented(_scenario: Scenario, outcome: CaseOutcome) -> None:
    """Every message of the view comes from the session, a summary, or a labelled injection."""
    for turn in assembled_turns(outcome):
        invented = turn.identity.of_status("invented")
        if invented:
            named = (
                f"{describe(turn.view, link.index, where='view')}: "
                f"{turn.view.messages[link.index].text[:60]!r}"
                for link in invented[:3]
            )
            raise turn.failure(
                f"{len(invented)} message(s) match nothing in the session", "; ".join(named)
            )
