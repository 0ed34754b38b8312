"""``should`` checks: the policy of the seed (pins, recency, whole rings, ledger, order, summary
quality, refusal only below the protected minimum, the handed session left alone)."""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from typing import Any, Final

from conformance.checks._helpers import (
    MINIMUM_SLACK,
    Assembled,
    assembled_turns,
    complete_rings,
    describe,
    final_assembled,
    first_user_index,
    has_summary,
    is_plain,
    knob,
    last_user_index,
    ledger_facts,
    minimum_with_slack,
    notes_text,
    protected_minimum,
    settings_of,
    side_effect_entries,
    stated_knob,
    summary_text,
    turn_label,
)
from conformance.checks._wire_content import offered_tools
from conformance.checks.outcome import CaseOutcome
from conformance.checks.registry import Failure, check
from conformance.scenarios import Scenario
from reference_impl.rings import Ring, segment
from reference_impl.rings import validate as pairing_violations
from reference_impl.shapes import GenerationOptions, camel_case, get_shape
from reference_impl.transcript import ReasoningPart, SummaryPart, Transcript, canonical_json


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
    neighbour as strict-alternation shapes require, B3/G1; a ledger note, labelled memory item
    or summary sent in its text, beside the whole of it, changes nothing of it, as the same
    note sent as a message of its own would not)."""
    for turn in assembled_turns(outcome):
        i = last_user_index(turn.session)
        if i is not None and not _whole_with_notes(turn, i):
            raise turn.failure(
                "latest user turn not kept",
                f"{describe(turn.session, i)} is {turn.identity.sources[i]} in the view",
            )


_NOTES = frozenset({"note_added", "summary_added"})
"""Edits that only add a note or a summary beside a message's whole text (see identity)."""


def _whole_with_notes(turn: Assembled, index: int) -> bool:
    """Session message ``index`` is in the view whole: kept, merged, or modified only by a note or
    a summary added beside its whole text."""
    identity = turn.identity
    edits = identity.edits_of(index)
    return identity.kept_whole(index) or (
        identity.present(index) and bool(edits) and all(e.kind in _NOTES for e in edits)
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
    """The last `recent_tool_rings` complete rings are kept (they are the suffix): none dropped,
    and none of their results cleared (clearing a result removes its content as dropping the
    ring would; older rings' results may be cleared)."""
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
            cleared = [
                edit
                for i in ring.indices
                for edit in turn.identity.edits_of(i)
                if edit.kind == "result_cleared"
            ]
            if cleared:
                raise turn.failure(
                    f"one of the last {count} rings cleared",
                    f"{_ring_text(ring)}: "
                    + "; ".join(edit.detail for edit in cleared[:3])
                    + (f" (and {len(cleared) - 3} more)" if len(cleared) > 3 else ""),
                )


def _result_kept(turn: Assembled, call_id: str) -> bool:
    """Whether the view keeps the session's result of ``call_id`` unchanged (not cleared)."""
    for i, message in enumerate(turn.session.messages):
        if any(r.call_id == call_id for r in message.tool_results):
            return turn.identity.present(i) and not any(
                e.call_id == call_id for e in turn.identity.edits_of(i)
            )
    return False


def _lost_facts(turn: Assembled, entry: Mapping[str, Any], text: str) -> list[str]:
    """The facts of a ledger entry (idempotency key, resource id) that are in no kept result
    and not in ``text``."""
    if _result_kept(turn, str(entry["call_id"])):
        return []
    return [fact for fact in ledger_facts(entry) if fact not in text]


@check(id="ledger_pinned", level="should")
def ledger_pinned(scenario: Scenario, outcome: CaseOutcome) -> None:
    """Every side effect stays visible: its idempotency key and resource id survive in its kept
    result, a pinned ledger note or a summary (not only its call id)."""
    for turn in assembled_turns(outcome):
        text = "\n".join(
            [m.text for m in turn.view.messages]
            + [r.text for m in turn.view.messages for r in m.tool_results]
        )
        for entry in side_effect_entries(scenario):
            lost = _lost_facts(turn, entry, text)
            if lost:
                raise turn.failure(
                    "side effect forgotten",
                    f"ledger entry {entry['tool']} call {entry['call_id']}: {', '.join(lost)} "
                    f"is in no kept result, pinned ledger note or summary",
                )


@check(id="ledger_in_summary", level="should")
def ledger_in_summary(scenario: Scenario, outcome: CaseOutcome) -> None:
    """A summary that replaced side-effecting rings keeps their ledger facts (tool, idempotency
    key, resource id), in itself or next to a ledger pinned in the prefix (the source of truth)."""
    for turn in assembled_turns(outcome):
        if not has_summary(turn):
            continue
        text = summary_text(turn) + "\n" + notes_text(turn)
        for entry in side_effect_entries(scenario):
            lost = _lost_facts(turn, entry, text)
            if not _result_kept(turn, str(entry["call_id"])) and str(entry["tool"]) not in text:
                lost.insert(0, str(entry["tool"]))
            if lost:
                raise turn.failure(
                    "ledger missing from the summary",
                    f"call {entry['call_id']} ({entry['tool']}) was summarized away; neither the "
                    f"summary nor a pinned ledger names {', '.join(repr(f) for f in lost)}",
                )


@check(id="order_preserved", level="should")
def order_preserved(_scenario: Scenario, outcome: CaseOutcome) -> None:
    """Kept messages keep their session order, and results keep their session order or their
    calls' order (results a session holds out of their calls' order may be sent in it)."""
    for turn in assembled_turns(outcome):
        calls = _call_places(turn.session)
        last, prev, by_calls = -1, -1, False
        for link in turn.identity.links:
            if link.source is None:
                continue
            for source in link.sources:  # a merged message holds its sources in session order
                # a run of one ring's results goes in the session's order or, once it steps
                # back to follow them, in its calls' order to its end
                step = _call_step(turn.session, calls, prev, source) if prev >= 0 else None
                in_calls = step is True
                by_calls = by_calls and step is not None
                if (by_calls and not in_calls) or (
                    source < last and not (in_calls and (by_calls or prev == last))
                ):
                    raise turn.failure(
                        "messages reordered",
                        f"view messages[{link.index}] holds {describe(turn.session, source)} but "
                        f"comes after session messages[{prev if by_calls else last}]",
                    )
                by_calls = by_calls or source < last
                last, prev = max(last, source), source
            given = [r.call_id for r in turn.view.messages[link.index].tool_results]
            wanted = [r.call_id for r in turn.session.messages[link.source].tool_results]
            in_call_order = sorted(wanted, key=lambda c: calls.get(c, (-1, -1)))
            if given and sorted(given) == sorted(wanted) and given not in (wanted, in_call_order):
                raise turn.failure(
                    "results reordered",
                    f"view messages[{link.index}] answers {','.join(given)}; the session order "
                    f"is {','.join(wanted)}",
                )


def _call_places(session: Transcript) -> dict[str, tuple[int, int]]:
    """Each call id's place: the session message that makes the call, its place among the calls."""
    return {
        call.id: (i, j)
        for i, message in enumerate(session.messages)
        for j, call in enumerate(message.tool_calls)
    }


def _call_step(
    session: Transcript, calls: Mapping[str, tuple[int, int]], first: int, second: int
) -> bool | None:
    """For session messages ``first`` then ``second`` sent in that order: None unless both hold
    results only, of calls of one message (one ring's results), whose calls do not interleave;
    else whether the step follows
    the calls' order (``first``'s calls come before ``second``'s: a session that stored a
    parallel ring's results in another order than its calls' may have them sent in it)."""
    places: list[list[tuple[int, int]]] = []
    for message in (session.messages[first], session.messages[second]):
        results = message.tool_results
        if not results or len(message.parts) != len(results):
            return None
        found = [calls.get(r.call_id) for r in results]
        known = [p for p in found if p is not None]
        if len(known) != len(found):
            return None
        places.append(known)
    before, after = places
    if len({i for i, _ in (*before, *after)}) != 1:
        return None
    if max(before) < min(after):
        return True
    return False if max(after) < min(before) else None  # interleaved: neither order


_REASONING_KEPT_IN_EVERY_TURN: Final = frozenset(("deepseek",))
"""Reasoning origins whose tool-call turns pass their reasoning back in every later request,
earlier turns' included (DS3, documented by DeepSeek: a kept turn without it is refused)."""


@check(id="reasoning_kept_with_ring", level="should")
def reasoning_kept_with_ring(_scenario: Scenario, outcome: CaseOutcome) -> None:
    """A kept ring of the current turn (after the latest user text) keeps its reasoning
    artifacts byte-exact (R3/R4, A13-A16, G6, B10); a ring of an earlier turn may lose them
    (the providers ask for the current turn's, and Anthropic drops earlier turns' itself),
    but not send them altered, and DeepSeek's never (DS3: every later request passes a tool-call
    turn's ``reasoning_content`` back, :data:`_REASONING_KEPT_IN_EVERY_TURN`)."""
    for turn in assembled_turns(outcome):
        session = turn.session
        current = last_user_index(session)
        current = -1 if current is None else current
        altered = {e.source for e in turn.identity.edits if e.kind == "reasoning_altered"}
        for edit in turn.identity.edits:
            origins = {
                p.origin
                for p in session.messages[edit.source].parts
                if isinstance(p, ReasoningPart)
            }
            earlier = (
                edit.source < current
                and edit.source not in altered
                and origins.isdisjoint(_REASONING_KEPT_IN_EVERY_TURN)
            )
            if (
                edit.kind == "reasoning_changed"
                and session.messages[edit.source].tool_calls
                and not earlier
            ):
                raise turn.failure(
                    "reasoning detached from its ring",
                    f"{describe(turn.session, edit.source)}: {edit.detail} "
                    f"(view messages[{edit.view_index}])",
                )


@check(id="settings_kept", level="should")
def settings_kept(_scenario: Scenario, outcome: CaseOutcome) -> None:
    """The session's request settings are sent as they were: none left out, changed or added
    (tool choice, guardrails and safety settings, sampling, a structured-output schema, the
    model), but the output cap and a thinking budget, which may be lowered, the shape's
    transport settings (streaming) and bookkeeping keys (caching, storage, tracing), a tool
    choice at its default, and a tool setting left out with the tools it names or with all of
    them (``nothing_invented`` also judges, at must, a schema, server-side context and an
    obligation to call a tool added)."""
    for turn in assembled_turns(outcome):
        found = settings_edits(outcome.shape, turn.session, turn.view)
        if found:
            more = f" (and {len(found) - 3} more)" if len(found) > 3 else ""
            raise turn.failure(
                f"{len(found)} request setting(s) left out or changed", "; ".join(found[:3]) + more
            )


def settings_edits(shape: str, session: Transcript, view: Transcript) -> list[str]:
    """What ``settings_kept`` names: each session setting the view leaves out or changes (by
    JSON value), inside the shape's option container member by member, but those it allows."""
    adapter = get_shape(shape)
    options = adapter.options
    given, sent = settings_of(session), settings_of(view)
    if options.either_case:
        given, sent = _camel_keys(given), _camel_keys(sent)
    offered, still = offered_tools(shape, session), offered_tools(shape, view)
    caps = {options.max_output, *options.max_output_aliases}
    found: list[str] = []
    if session.model and view.model != session.model:
        if view.model is not None:
            found.append(f"model changed: {session.model} -> {view.model}")
        elif not adapter.model_in_url:
            found.append(f"model left out (was {session.model})")
    cap_was = options.output_cap(given)
    if cap_was is not None:
        holder = sent.get(options.container) if options.container else sent
        now = [holder[k] for k in caps if isinstance(holder, Mapping) and k in holder]
        if not now:
            found.append(f"output cap left out (was {cap_was})")
        found.extend(f"output cap raised: {cap_was} -> {n}" for n in now if _raised(cap_was, n))
    for key, was in given.items():
        if key in options.transport or (options.container is None and key in caps):
            continue
        now = sent.get(key, _LEFT_OUT)
        if (
            key in options.tool_settings
            and now is _LEFT_OUT
            and (not still or _names_any(was, offered - still))
        ):
            continue  # a choice may go with the tools: all of them, or the ones it names
        if key == options.container and isinstance(was, Mapping) and isinstance(now, Mapping):
            for inner, value in was.items():
                got = now.get(inner, _LEFT_OUT)
                if inner not in caps and not _same_setting(got, value):
                    found.append(_setting_edit(f"{key}.{inner}", value, got))
        elif not _same_setting(now, was) and not (
            key in options.tool_settings
            and _same_choice(shape, key, was, now, offered=offered, still=still)
        ):
            found.append(_setting_edit(key, was, now))
    found.extend(_settings_added(options, given, sent))
    return found


def _settings_added(
    options: GenerationOptions, given: Mapping[str, Any], sent: Mapping[str, Any]
) -> list[str]:
    """The settings the view adds that the session's request does not have (a stop sequence, a
    ``logit_bias``, a sampling setting, Gemini's ``safetySettings``, a reasoning effort, a
    server-side ``truncation``): each changes what the model does. Not: the output cap, the
    transport and bookkeeping keys (``stream``, ``prompt_cache_key``, ``metadata``...), a tool
    choice at its default (``auto``), members of the option container the session leaves unset
    that are the cap."""
    caps = {options.max_output, *options.max_output_aliases}
    free = {*options.transport, *options.bookkeeping, *(caps if options.container is None else ())}
    found: list[str] = []
    for key, now in sent.items():
        if key in free or _says_nothing(options, key, now):
            continue
        was = given.get(key, _LEFT_OUT)
        if key == options.container and isinstance(now, Mapping):
            inner = was if isinstance(was, Mapping) else {}
            found.extend(
                f"{key}.{k} added: {_short_json(v)}"
                for k, v in now.items()
                if k not in inner and k not in caps and not _says_nothing(options, f"{key}.{k}", v)
            )
        elif was is _LEFT_OUT:
            found.append(f"{key} added: {_short_json(now)}")
    return found


def _says_nothing(options: GenerationOptions, key: str, value: object) -> bool:
    """A setting added that changes nothing: null or empty (what a serializer writes for an unset
    field), or at the provider's documented default (``GenerationOptions.defaults``), its members
    at theirs left aside (Anthropic's ``tool_choice`` ``auto`` with ``disable_parallel_tool_use:
    false``)."""
    if value is None or value in ("", [], {}):
        return True
    defaults = options.defaults
    if isinstance(value, Mapping):
        value = {
            k: v
            for k, v in value.items()
            if not _same_setting(v, defaults.get(f"{key}.{k}", _LEFT_OUT))
        }
    default = defaults.get(key, _LEFT_OUT)
    return default is not _LEFT_OUT and _same_setting(value, default)


def _same_choice(
    shape: str, key: str, was: object, now: object, *, offered: set[str], still: set[str]
) -> bool:
    """Whether two spellings of a tool choice oblige the same call: "any tool" and the names of
    every tool offered (Chat's ``"required"`` and ``allowed_tools`` in mode ``required`` over
    all of them), a choice narrowed only by the tools the view no longer offers, the rest of the
    setting unchanged but a member at its default (Anthropic's ``disable_parallel_tool_use:
    false``)."""
    read = get_shape(shape).options.forced_tools
    if read is None:
        return False
    before, after = read({key: was}), read({key: now})
    if before is None or after is None:
        return False
    wanted = (offered if before == "any" else before) & still
    got = still if after == "any" else after
    return set(got) == set(wanted) and _choice_rest(was) == _choice_rest(now)


def _choice_rest(value: object) -> object:
    """What a tool setting says beside the tools it obliges: Anthropic's parallel switch when it
    is on, the other members of Gemini's or Bedrock's ``toolConfig``."""
    if not isinstance(value, Mapping):
        return False  # "required": no parallel switch
    if "type" in value:  # a tool_choice object: only a parallel switch turned on is more
        return bool(value.get("disable_parallel_tool_use"))
    obliging = {"functionCallingConfig", "function_calling_config", "toolChoice"}
    return {k: v for k, v in value.items() if k not in obliging}


_LEFT_OUT: Final = object()
_BUDGETS: Final = frozenset({"budget_tokens", "budgetTokens", "thinkingBudget"})
"""Members a setting may lower (a thinking budget, which must stay below a lowered cap)."""


def _same_setting(now: object, was: object, key: str = "") -> bool:
    """``now`` is the setting ``was``: equal as JSON, or with a budget lowered."""
    if isinstance(was, Mapping) and isinstance(now, Mapping):
        return set(was) == set(now) and all(_same_setting(now[k], was[k], k) for k in was)
    if key in _BUDGETS and _number(now) and _number(was):
        return bool(now <= was)  # type: ignore[operator]  # numbers, checked
    return now == was


def _number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _raised(was: object, now: object) -> bool:
    return _number(was) and _number(now) and bool(now > was)  # type: ignore[operator]  # numbers


def _camel_keys(value: Any) -> Any:
    """``value`` with every object key in camelCase (a shape that takes both spellings)."""
    if isinstance(value, Mapping):
        return {camel_case(str(k)): _camel_keys(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_camel_keys(v) for v in value]
    return value


def _names_any(value: object, names: set[str]) -> bool:
    """Whether a tool setting names one of ``names`` (a choice of a tool no longer offered)."""
    if isinstance(value, str):
        return value in names
    if isinstance(value, Mapping):
        return any(_names_any(v, names) for v in value.values())
    if isinstance(value, list):
        return any(_names_any(v, names) for v in value)
    return False


def _setting_edit(key: str, was: object, now: object) -> str:
    if now is _LEFT_OUT:
        return f"{key} left out (was {_short_json(was)})"
    return f"{key} changed: {_short_json(was)} -> {_short_json(now)}"


def _short_json(value: object, limit: int = 40) -> str:
    text = canonical_json(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


@check(id="session_not_mutated", level="should")
def session_not_mutated(_scenario: Scenario, outcome: CaseOutcome) -> None:
    """The body handed to the plug-in is unchanged after the call (an assembler that mutates
    the stored history corrupts the agent's session; the harness judges its own copy)."""
    for turn in outcome.turns:
        if turn.input_mutation:
            raise Failure(
                "the plug-in mutated the session it was handed",
                f"{turn_label(outcome, turn)}{turn.input_mutation} during the call",
            )


@check(id="text_unedited", level="should")
def text_unedited(scenario: Scenario, outcome: CaseOutcome) -> None:
    """Kept plain messages keep their text and attachments (an edit is reported as one, not as
    an invention; an attachment may be degraded to a placeholder or an image sent at low detail;
    a ledger note, labelled memory item or summary added beside the whole text is no edit, as
    the same note in a message or block of its own is none; pinned messages are judged at must
    by pins_unaltered)."""
    goal_pinned = "first_user_message" in knob(scenario, "pin")
    for turn in assembled_turns(outcome):
        goal = first_user_index(turn.session) if goal_pinned else None
        for edit in turn.identity.edits:
            role = turn.session.messages[edit.source].role
            if (
                edit.kind
                in {
                    "text_changed",
                    "text_added",
                    "negation_removed",
                    "attachment_changed",
                    "attachment_added",
                }
                and role not in {"system", "developer"}
                and (edit.source != goal)
            ):
                raise turn.failure(
                    "message edited",
                    f"{describe(turn.session, edit.source)} was changed in view "
                    f"messages[{edit.view_index}]: {edit.detail}",
                )


@check(id="refuses_only_below_minimum", level="should")
def refuses_only_below_minimum(scenario: Scenario, outcome: CaseOutcome) -> None:
    """In a budget sweep, a refusal comes only below the protected minimum (system, pinned goal,
    ledger, latest user turn, newest ring, tool schemas; computed with the reference counter);
    a case that expects an assembly is not refused even below it, where its knobs allow more
    (dropping the newest ring, the tool schemas)."""
    if scenario.expect.outcome == "refused":
        return
    expected = scenario.expect.outcome == "assembled"
    if not (scenario.budget.is_sweep or expected):
        return
    for turn in outcome.turns:
        if turn.status != "refused":
            continue
        minimum = protected_minimum(scenario, turn)
        allowed = minimum_with_slack(minimum)
        if minimum is None or allowed is None or pairing_violations(turn.session):
            continue
        if expected and outcome.budget < allowed:
            knobs = ", ".join(f"{k}: {v}" for k, v in sorted(scenario.config.items())) or "none"
            raise Failure(
                "refused where the scenario's knobs allow an assembly",
                f"{turn_label(outcome, turn)}the scenario expects an assembly at budget "
                f"{outcome.budget}, "
                + (
                    "below the protected minimum"
                    if outcome.budget < minimum
                    else f"within {MINIMUM_SLACK:.0%} of the protected minimum"
                )
                + f" ({minimum} tokens by {outcome.counter}), which its knobs allow ({knobs}); refusal "
                f"{turn.refusal_code}: {turn.reason}",
            )
        if outcome.budget >= allowed:
            raise Failure(
                "refused above the protected minimum",
                f"{turn_label(outcome, turn)}the protected minimum costs {minimum} tokens by "
                f"{outcome.counter} (a refusal is accepted below {allowed}: the minimum plus "
                f"{MINIMUM_SLACK:.0%} for the wording of a ledger note); budget "
                f"{outcome.budget}; refusal {turn.refusal_code}: {turn.reason}",
            )


def _summary_span_has_summary(turn: Assembled, link_index: int) -> int | None:
    """A session summary whose text the view summary ``link_index`` wraps (re-summarized)."""
    text = turn.view.messages[link_index].text
    for i, message in enumerate(turn.session.messages):
        inner = [p.text for p in message.parts if isinstance(p, SummaryPart)]
        if any(t and t in text for t in inner) and not turn.identity.kept_whole(i):
            return i
    return None


@check(id="summary_quality", level="should")
def summary_quality(_scenario: Scenario, outcome: CaseOutcome) -> None:
    """A summary comes after the pinned prefix (so the prefix stays stable) and does not wrap an
    earlier summary whole (no recursive re-summarising). The prefix is the system and developer
    text and the goal, wherever the view puts them, and the injected and ledger notes among
    them: a note sent later in the view (before the latest turn, say) is no part of it."""
    for turn in assembled_turns(outcome):
        pinned = {
            link.index
            for link in turn.identity.links
            if any(
                turn.session.messages[s].role in {"system", "developer"}
                or s == first_user_index(turn.session)
                for s in link.sources
            )
        }
        notes = {
            link.index for link in turn.identity.links if link.status in {"injected", "ledger"}
        }
        summaries = {link.index for link in turn.identity.summaries()}
        head = pinned | notes | summaries
        for link in turn.identity.summaries():
            later = [
                i
                for i in sorted(pinned | notes)
                if i > link.index
                and (i in pinned or all(k in head for k in range(link.index + 1, i)))
            ]
            if later:
                raise turn.failure(
                    "summary at the head of the request",
                    f"view messages[{link.index}] (a summary) comes before the pinned view "
                    f"messages[{later[0]}]: every compaction would change the cached prefix",
                )
            nested = _summary_span_has_summary(turn, link.index)
            if nested is not None:
                raise turn.failure(
                    "summary of a summary",
                    f"view messages[{link.index}] wraps the whole of the earlier summary "
                    f"{describe(turn.session, nested)}",
                )


# -- opt-in: scenarios name these in expect.checks --------------------------------------------


@check(id="summary_used", level="should", default=False)
def summary_used(scenario: Scenario, outcome: CaseOutcome) -> None:
    """Where deletion alone cannot meet the budget (the protected minimum does not fit), the
    middle was replaced by a summary."""
    final = final_assembled(outcome)
    if final is None or has_summary(final):
        return
    minimum = protected_minimum(scenario, final.turn)
    if minimum is not None and minimum > outcome.budget:
        raise Failure(
            "no summary",
            f"deletion alone cannot meet budget {outcome.budget}: the protected minimum costs "
            f"{minimum} tokens by {outcome.counter}; the view has {len(final.view.messages)} "
            f"messages and no summary",
        )


@check(id="tools_dropped", level="should", default=False)
def tools_dropped(_scenario: Scenario, outcome: CaseOutcome) -> None:
    """Escalation dropped the tool schemas (drop_tools_schema_then_fail) instead of refusing: all
    of them, or as many as the budget needed (a plug-in may keep a schema that still fits, a
    read-only tool say; whether the view fits is ``within_budget``'s call)."""
    final = final_assembled(outcome)
    if final is None or not final.view.tools:
        return
    if len(final.view.tools) < len(final.session.tools):
        return
    names = ", ".join(t.name for t in final.view.tools)
    raise Failure(
        "tool schemas still sent",
        f"the scenario only fits without (some of) its tool schemas; the view still offers all "
        f"{len(final.view.tools)}: {names}",
    )


def _middle_rings(scenario: Scenario, session: Transcript) -> list[Ring]:
    """The complete rings older than the last ``recent_tool_rings`` (the deletable middle)."""
    count = int(knob(scenario, "recent_tool_rings"))
    found = complete_rings(session)
    return found[: len(found) - count] if count else found


def _retained(turn: Assembled, ring: Ring) -> bool:
    """Whether the view still carries the ring's content: its call message present and not every
    result cleared (ring deletion, result clearing and summarising all count as removal)."""
    results = [i for i in ring.indices if i != ring.start]
    return turn.identity.present(ring.start) and not (
        results and all(turn.identity.cleared(i) for i in results)
    )


def _is_error_ring(session: Transcript, ring: Ring) -> bool:
    """Whether any result of the ring is an error."""
    return any(r.is_error for i in ring.indices for r in session.messages[i].tool_results)


@check(id="middle_error_results_kept", level="should", default=False)
def middle_error_results_kept(scenario: Scenario, outcome: CaseOutcome) -> None:
    """Short error results in the middle outlive successful ones (up to
    keep_middle_error_results, where the scenario's config states it: the plug-in is told it in
    ``request.config``; no provider or design rule asks for it, so the reference assembler's
    default is no yardstick)."""
    final = final_assembled(outcome)
    stated = stated_knob(scenario, "keep_middle_error_results")
    if final is None or stated is None:
        return
    cap = int(stated)
    middle = _middle_rings(scenario, final.session)
    errors = [r for r in middle if _is_error_ring(final.session, r)]
    kept = [r for r in errors if _retained(final, r)]
    if len(kept) < min(cap, len(errors)):
        lost = [r.id for r in errors if r not in kept]
        raise Failure(
            "middle error results dropped",
            f"{len(kept)} of {len(errors)} middle error rings kept (cap {cap}); dropped: "
            f"{', '.join(lost)}",
        )


@check(id="oldest_rings_first", level="should", default=False)
def oldest_rings_first(scenario: Scenario, outcome: CaseOutcome) -> None:
    """Successful middle rings are removed (dropped, cleared or summarized) oldest first, and some
    were removed."""
    final = final_assembled(outcome)
    if final is None:
        return
    middle = [
        r for r in _middle_rings(scenario, final.session) if not _is_error_ring(final.session, r)
    ]
    state = [_retained(final, r) for r in middle]
    if middle and all(state):
        raise Failure(
            "no middle ring removed",
            f"all {len(middle)} middle rings were kept (none dropped, cleared or summarized)",
        )
    for older, newer in itertools.pairwise(middle):
        if _retained(final, older) and not _retained(final, newer):
            raise Failure(
                "a newer ring removed before an older one",
                f"{_ring_text(newer)} dropped or cleared while the older {_ring_text(older)} was kept",
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
    recent = users[-protected:] if protected else []  # every user turn when there are fewer
    suffix_start = recent[0] if recent else len(session)
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
