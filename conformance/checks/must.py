"""``must`` checks: what breaks safety for any assembler. The provider accepts the request, it fits
the budget, broken input is refused and valid input is not, nothing is invented, tool calls and
results are the session's, pinned messages are not altered."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from conformance.checks._helpers import (
    Assembled,
    assembled_turns,
    describe,
    first_user_index,
    knob,
    minimum_with_slack,
    protected_minimum,
    session_tokens,
    settings_of,
    turn_label,
)
from conformance.checks._wire_content import added_wire_content, offered_tools
from conformance.checks.outcome import CaseOutcome, TurnOutcome
from conformance.checks.registry import Failure, check
from conformance.identity import Edit, contradicted_entry, short
from conformance.scenarios import Scenario
from reference_impl.rings import validate as pairing_violations
from reference_impl.shapes import ForcedTools, get_shape
from reference_impl.transcript import (
    Message,
    ReasoningPart,
    SummaryPart,
    TextPart,
    Transcript,
    canonical_json,
)
from reference_impl.wording import plural


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
        if found:
            why = "; ".join(str(v) for v in found[:3])
        elif (
            turn.view is not None
            and len(turn.view.tools) < len(turn.session.tools)
            and knob(scenario, "on_still_over_budget") == "fail_closed"
        ):
            left_out = len(turn.session.tools) - len(turn.view.tools)
            why = (
                "the protected messages and the tool schemas exceed the budget, and the config's "
                "on_still_over_budget: fail_closed lets no schema go; the view left out "
                f"{left_out} of {len(turn.session.tools)}"
            )
        else:
            why = "its protected minimum (pinned messages, latest turn, tool schemas) exceeds the budget"
        raise Failure(
            "assembled a request where refusal was required",
            f"{turn_label(outcome, turn)}the session must be refused ({why}); the plug-in "
            "returned a request of "
            + (
                plural(len(turn.view.messages), "message")
                if turn.view is not None
                else "? messages"
            ),
        )


_GAINED: Final = {"text_added": "text", "attachment_added": "attachments", "name_added": "a name"}
"""What a kept message gained, by edit kind (``nothing_invented``'s title names them)."""


@check(id="nothing_invented", level="must")
def nothing_invented(scenario: Scenario, outcome: CaseOutcome) -> None:
    """Every message of the view comes from the session, a summary, a ledger note or a labelled
    memory injection (an invented user turn is the worst kind), no session text speaks under a
    role it never had (a user turn resent as system text carries the system's authority; system
    and developer are one role), and no kept message carries text or attachments its session
    copy does not (an order appended to a user turn, or put in the placeholder of a degraded
    image; an image added to a turn; a speaker's name, Chat's ``name``, the session does not
    give it; a labelled memory item or a ledger note added to a kept
    message is no invention), and no structured-output schema is added or changed and no wire
    content without a neutral part (a document or search-result block, a server tool) is added
    (text the model reads that the budget's count leaves out), and the tool choice obliges no
    tool call the session's request does not (an order to call ``delete_records``; other
    request settings are not judged here)."""
    for turn in assembled_turns(outcome):
        schemas = _output_schema_edits(outcome.shape, turn.session, turn.view)
        schemas += added_wire_content(outcome.shape, turn.session, turn.view)
        if schemas:
            raise turn.failure(
                f"{len(schemas)} request field(s) of model-read text the session does not have",
                "; ".join(schemas),
            )
        forced = forced_call_added(outcome.shape, turn.session, turn.view)
        if forced is not None:
            raise turn.failure("the tool choice obliges a call the session does not", forced)
        recast = [e for e in turn.identity.edits if e.kind == "role_changed"]
        if recast:
            named = (
                f"{describe(turn.session, e.source)} -> view messages[{e.view_index}]: {e.detail}"
                for e in recast[:3]
            )
            raise turn.failure(
                f"{len(recast)} session message(s) sent under another role", "; ".join(named)
            )
        invented = turn.identity.of_status("invented")
        if invented:
            named = (
                f"{describe(turn.view, link.index, where='view')}"
                f"{' (an invented user turn)' if turn.view.messages[link.index].role == 'user' else ''}"
                f": {turn.view.messages[link.index].text[:60]!r}"
                f"{_contradiction(turn.view.messages[link.index], scenario.ledger)}"
                for link in invented[:3]
            )
            raise turn.failure(
                f"{len(invented)} message(s) match nothing in the session", "; ".join(named)
            )
        inverted = [e for e in turn.identity.edits if e.kind == "negation_removed"]
        if inverted:
            edit = inverted[0]
            raise turn.failure(
                f"{len({e.view_index for e in inverted})} kept message(s) say the opposite",
                f"{describe(turn.session, edit.source)} -> view messages[{edit.view_index}]: "
                f"{edit.detail}",
            )
        added = [e for e in turn.identity.edits if e.kind in _GAINED]
        if added:
            edit = added[0]
            kinds = {e.kind for e in added}
            what = " or ".join(w for k, w in _GAINED.items() if k in kinds)
            messages = len({e.view_index for e in added})
            raise turn.failure(
                f"{messages} kept message(s) carry {what} the session does not hold",
                f"{describe(turn.session, edit.source)} -> view messages[{edit.view_index}]: "
                f"{edit.detail}",
            )


def forced_call_added(shape: str, session: Transcript, view: Transcript) -> str | None:
    """How the view's tool choice obliges a tool call its session's request does not (None
    when it does not): an obligation where the session has none, one to call a tool the
    session's choice does not name, or one narrowed to some of the tools the session left the
    model to choose from. A choice may follow the tools dropped with it: "any tool" and the
    names of every tool the view still offers oblige the same call, and a choice of named tools
    may lose the names the view no longer offers. Leaving an obligation out or loosening it is
    ``settings_kept``'s (should)."""
    read = get_shape(shape).options.forced_tools
    now = None if read is None else read(settings_of(view))
    if read is None or now is None:
        return None
    was = read(settings_of(session))
    if now == was:
        return None
    offered = offered_tools(shape, view)
    if was is None:
        return f"it obliges a call of {_obliged(now)}; the session's request obliges none"
    if isinstance(was, frozenset) and isinstance(now, frozenset):
        if now <= was and (was & offered) <= now:
            return None
    else:  # "any" on one side: the same call where the other names every tool still offered
        named = was if isinstance(was, frozenset) else now
        if isinstance(named, frozenset) and offered <= named:
            return None
    return f"it obliges a call of {_obliged(now)}; the session's request, of {_obliged(was)}"


def _obliged(forced: ForcedTools) -> str:
    if forced == "any":
        return "any tool offered"
    return " or ".join(sorted(forced)) or "no tool it names"


def _output_schema_edits(shape: str, session: Transcript, view: Transcript) -> list[str]:
    """The structured-output schema (``GenerationOptions.output_schemas``: Chat
    ``response_format``, Responses ``text.format``, Gemini ``generationConfig.responseSchema``,
    Anthropic ``output_config.format``...) and the server-side context (``server_context``:
    Responses ``previous_response_id``, ``conversation``, ``prompt``) that the view adds or
    changes. Both are text the model reads beside the messages and tools, which the reference
    count of ``within_budget`` leaves out: a plug-in could otherwise put thousands of tokens
    there. A schema is compared under whichever of its spellings each side uses
    (``generation_config`` or ``generationConfig``); a bare format (``{"type": "text"}``) holds
    no schema. The request's other settings (output cap, sampling, streaming, tool choice,
    caching keys) are not judged here, nor what is left out."""
    given, sent = settings_of(session), settings_of(view)
    options = get_shape(shape).options
    found: list[str] = []
    was, _ = _first_at(given, options.output_schemas)
    now, where = _first_at(sent, options.output_schemas)
    if now is not _ABSENT and _holds_schema(now) and now != was:
        found.append(_named("output schema", where, was, now))
    for path in options.server_context:
        before, after = _at(given, path), _at(sent, path)
        if after is not _ABSENT and after != before:
            found.append(_named("server-side context", ".".join(path), before, after))
    return found


_ABSENT: Final = object()


def _named(what: str, where: str, was: object, now: object) -> str:
    text = short(canonical_json(now))
    if was is _ABSENT:
        return f"{what} {where} added: {text}"
    return f"{what} {where} changed: {short(canonical_json(was))} -> {text}"


def _holds_schema(value: object) -> bool:
    """Whether a structured-output value is more than a bare format (``{"type": "text"}`` or
    ``{"type": "json_object"}`` name one and carry no schema)."""
    return not (
        isinstance(value, Mapping)
        and set(value) == {"type"}
        and value["type"] in ("text", "json_object")
    )


def _first_at(settings: Mapping[str, Any], paths: Sequence[tuple[str, ...]]) -> tuple[object, str]:
    """The value at the first of ``paths`` present in ``settings``, with that path; ``_ABSENT``."""
    for path in paths:
        value = _at(settings, path)
        if value is not _ABSENT:
            return value, ".".join(path)
    return _ABSENT, ""


def _at(settings: Mapping[str, Any], path: tuple[str, ...]) -> object:
    """The value at ``path`` of a transcript's settings (``settings_of``), or ``_ABSENT``."""
    value: object = settings
    for key in path:
        if not isinstance(value, Mapping) or key not in value:
            return _ABSENT
        value = value[key]
    return value


def _contradiction(message: Message, ledger: Sequence[Mapping[str, Any]]) -> str:
    """What an invented message claims against the ledger (a side effect's status), or
    nothing."""
    texts = (p.text for p in message.parts if isinstance(p, TextPart | SummaryPart))
    found = next((c for c in (contradicted_entry(t, ledger) for t in texts) if c), None)
    if found is None:
        return ""
    entry, stated = found
    field = next(
        (f for f in ("idempotency_key", "resource_id") if stated.startswith(f.replace("_", " "))),
        None,
    )
    says = entry.get(field) if field else entry.get("status")
    return (
        f" (states {entry.get('tool')} {entry.get('call_id')} {stated}; the execution ledger "
        f"says {says})"
    )


@check(id="within_budget", level="must")
def within_budget(_scenario: Scenario, outcome: CaseOutcome) -> None:
    """The request fits the budget, counted with the reference counter (tools and overhead
    included)."""
    for turn in outcome.assembled_turns:
        if turn.tokens is not None and turn.tokens > outcome.budget:
            raise Failure(
                "over budget",
                f"{turn_label(outcome, turn)}{turn.tokens} tokens by {outcome.counter} > budget "
                f"{outcome.budget} (over by {turn.tokens - outcome.budget}){_fixed_part(turn)}",
            )


def _fixed_part(turn: TurnOutcome) -> str:
    """What of the count the messages do not hold (the tool schemas, the request's overhead:
    reply priming, Claude's hidden tool-use prompt), which a count of the messages alone
    misses."""
    if turn.counter is None or turn.view is None:
        return ""
    count = turn.counter.count(turn.view)
    parts = [f"{count.tools} for the tool schemas"] if count.tools else []
    if count.overhead > 0:
        parts.append(f"{count.overhead} of request overhead")
    return f"; of which {' and '.join(parts)}" if parts else ""


# Edits of a tool call or result that falsify what the model did or saw.
_UNSAFE_EDITS: Final = frozenset(
    {
        "ids_renamed",
        "call_changed",
        "arguments_changed",
        "call_added",
        "result_changed",
        "result_added",
    }
)


_VERIFIED_REASONING: Final = frozenset({"anthropic-messages", "bedrock-converse"})
"""Whose signed reasoning artifacts the provider checks byte for byte: an Anthropic thinking
block's signature fails on "any change, reordering, merge" (A15), the latest assistant
message's thinking "cannot be modified" (A16), and Claude on Bedrock relays those errors (B10).
Only a block that carries a signature or redacted content: Bedrock's reasoning of another model
(DeepSeek-R1) has none. Others (Responses, Gemini, DeepSeek) have no such evidence here: an
edit of theirs is judged at should (``reasoning_kept_with_ring``)."""
_SIGNED: Final = ('"signature":', '"redactedContent":', '"redacted_thinking"')
"""What a signed block's canonical JSON holds."""


def _reasoning_altered(turn: Assembled, edit: Edit) -> bool:
    """Whether ``edit`` sends a verified reasoning artifact (:data:`_VERIFIED_REASONING`) that is
    none of the session's (an artifact moved to another message is judged at should)."""
    if edit.kind != "reasoning_altered":
        return False
    session = {p for m in turn.session.messages for p in m.parts if isinstance(p, ReasoningPart)}
    return any(
        isinstance(p, ReasoningPart)
        and p.origin in _VERIFIED_REASONING
        and any(mark in p.data for mark in _SIGNED)
        and p not in session
        for p in turn.view.messages[edit.view_index].parts
    )


def _schema_edits(session: Transcript, view: Transcript) -> list[str]:
    """What the view's tool schemas invent or change of the session's (each by its name; one
    left out is no edit: dropping schemas is judged where a scenario forbids or asks for it)."""
    offered = {tool.name: tool for tool in session.tools}
    found: list[str] = []
    for tool in view.tools:
        was = offered.get(tool.name)
        if was is None:
            names = ", ".join(sorted(offered)) or "none"
            found.append(f"tool schema {tool.name} added (the session offers {names})")
        elif was.description != tool.description:
            found.append(
                f"tool schema {tool.name} description changed: {short(was.description)} -> "
                f"{short(tool.description)}"
            )
        elif was.parameters != tool.parameters:  # canonical JSON text on both sides
            found.append(
                f"tool schema {tool.name} parameters changed: {short(was.parameters)} -> "
                f"{short(tool.parameters)}"
            )
    return found


@check(id="tool_payloads_intact", level="must")
def tool_payloads_intact(_scenario: Scenario, outcome: CaseOutcome) -> None:
    """Tool calls (names, ids, arguments), tool results and the tool schemas offered are the
    session's, unchanged; a result may only be cleared by a placeholder with its id and error
    status kept, or synthesized for a call the session left unanswered; a schema may be left
    out, never added or rewritten; a thinking block the provider verifies (Anthropic, Claude on
    Bedrock: A15, A16, B10) is sent as received or not at all."""
    for turn in assembled_turns(outcome):
        unsafe = [
            f"{describe(turn.session, e.source)} -> view messages[{e.view_index}]: {e.detail}"
            for e in turn.identity.edits
            if e.kind in _UNSAFE_EDITS or _reasoning_altered(turn, e)
        ]
        schemas = _schema_edits(turn.session, turn.view)
        found = unsafe + schemas
        if found:
            more = f" (and {len(found) - 3} more)" if len(found) > 3 else ""
            counts = ((unsafe, "tool call/result"), (schemas, "tool schema"))
            title = " and ".join(f"{len(edits)} {what}" for edits, what in counts if edits)
            raise turn.failure(f"{title} edit(s)", "; ".join(found[:3]) + more)


@check(id="pins_unaltered", level="must")
def pins_unaltered(scenario: Scenario, outcome: CaseOutcome) -> None:
    """Pinned messages (system/developer text, the first user goal when pinned) that the view
    keeps are not altered, their role and attachments included: degrading an attachment (left
    out, or a placeholder in its place) is a tier of the middle, never of a pin (a labelled
    ledger note or memory item, or a declared summary, sent in the same text after or before the
    whole pinned text alters nothing of it)."""
    goal_pinned = "first_user_message" in knob(scenario, "pin")
    for turn in assembled_turns(outcome):
        goal = first_user_index(turn.session)
        for edit in turn.identity.edits:
            message = turn.session.messages[edit.source]
            if edit.kind in {
                "text_changed",
                "text_added",
                "negation_removed",
                "attachment_changed",
                "attachment_added",
                "attachment_degraded",
                "role_changed",
                "fields_changed",
                "name_added",
            } and (
                message.role in {"system", "developer"} or (goal_pinned and edit.source == goal)
            ):
                what = "the pinned goal" if edit.source == goal else "pinned system text"
                raise turn.failure(
                    "pinned message altered",
                    f"session messages[{edit.source}] ({message.role}, {what}) was changed in "
                    f"view messages[{edit.view_index}]: {edit.detail}",
                )


@check(id="assembles_when_feasible", level="must")
def assembles_when_feasible(scenario: Scenario, outcome: CaseOutcome) -> None:
    """A (valid) session that already fits the budget is assembled, not refused; so is a case
    that expects an assembly wherever its budget holds the protected minimum. Below that minimum
    only the scenario's knobs make an assembly possible (dropping the newest ring, the tool
    schemas), and a plug-in may ignore knobs it does not know: refusing there is judged at
    should (refuses_only_below_minimum)."""
    if scenario.expect.outcome == "refused":
        return
    for turn in outcome.turns:
        if turn.status != "refused":
            continue
        why = ""
        tokens = session_tokens(turn)
        if tokens is not None and tokens <= outcome.budget and not pairing_violations(turn.session):
            why = (
                f"the whole session already fits: {tokens} tokens by {outcome.counter} <= "
                f"budget {outcome.budget}"
            )
        elif scenario.expect.outcome == "assembled":
            minimum = protected_minimum(scenario, turn)
            allowed = minimum_with_slack(minimum)
            if allowed is None or outcome.budget >= allowed:
                why = "the scenario expects an assembly" + (
                    ""
                    if minimum is None
                    else f" and the protected minimum fits: {minimum} tokens by "
                    f"{outcome.counter} <= budget {outcome.budget}"
                )
        if why:
            raise Failure(
                "refused a session that can be assembled",
                f"{turn_label(outcome, turn)}{why}; refusal {turn.refusal_code}: {turn.reason}",
            )
