"""The suite's own proof that it is fair: independently written assemblers over the
built-in corpus. Each correct strategy passes every ``must`` case in every shape; each broken
variant fails the check meant for its defect, at that check's level, with a message naming it."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import replace
from functools import cache
from typing import Any

import pytest
from deploy_session import SINGLE_TOOL
from miniatures.bad import BAD, OffByOne, ResultPlaceholderClaim
from miniatures.good import FUNCTIONS, GOOD
from run_support import run_in_process

from conformance.events import CaseResult
from conformance.loading import Plugin, load_plugin
from conformance.protocol import Assembler, MessageListAssembler
from conformance.scenarios import Budget, Expectation, Scenario, load_corpus
from reference_impl.transcript import SHAPE_NAMES, ImagePart


@cache
def _run(kind: str, name: str, shapes: tuple[str, ...]) -> tuple[CaseResult, ...]:
    assemblers: dict[str, Assembler]
    if kind == "function":
        assemblers = {shape: MessageListAssembler(FUNCTIONS[name], shape) for shape in shapes}
    else:
        cls = GOOD[name] if kind == "good" else BAD[name][0]
        assemblers = {shape: cls(shape) for shape in shapes}
    return run_in_process(Plugin(name, name, assemblers), load_corpus())


def _run_each(kind: str, name: str) -> tuple[CaseResult, ...]:
    """``name`` in every shape, one shape at a time (the runs the per-shape tests share)."""
    return tuple(result for shape in SHAPE_NAMES for result in _run(kind, name, (shape,)))


def _failures(results: tuple[CaseResult, ...], level: str) -> dict[str, list[str]]:
    found: dict[str, list[str]] = defaultdict(list)
    for result in results:
        if result.outcome == "error":
            found["<error>"].append(f"{result.key}: {result.reason}")
        for check in result.checks:
            if check.level == level and check.status != "pass":
                found[check.id].append(f"{result.key}: {check.message}")
    return dict(found)


def _not_failing(results: Iterable[CaseResult], check_id: str) -> list[str]:
    """The cases of ``results`` that were sent (assembled) and do not fail ``check_id``; asserts
    that some were sent."""
    sent = [r for r in results if r.outcome == "assembled"]
    assert sent
    return [
        r.key for r in sent if not any(c.id == check_id and c.status == "fail" for c in r.checks)
    ]


STRATEGIES = [n for n in GOOD if n != "PassThrough"]


@pytest.mark.parametrize("shape", SHAPE_NAMES)
@pytest.mark.parametrize("name", STRATEGIES)
def test_a_correct_strategy_passes_every_must_case(name: str, shape: str) -> None:
    results = _run("good", name, (shape,))
    assert results, f"no case ran for {shape}"
    failed = _failures(results, "must")
    assert not failed, {k: v[:3] for k, v in failed.items()}


@pytest.mark.parametrize("shape", SHAPE_NAMES)
def test_a_pass_through_fails_must_only_where_an_assembly_was_needed(shape: str) -> None:
    results = _run("good", "PassThrough", (shape,))
    failed = _failures(results, "must")
    assert set(failed) == {"assembles_when_feasible"}, {k: v[:3] for k, v in failed.items()}
    assert all("the scenario expects an assembly" in m for m in failed["assembles_when_feasible"])
    # Wherever the whole session fits, it is sent and passes every must check.
    sent = [r for r in results if r.outcome == "assembled"]
    assert sent
    assert all(c.status == "pass" for r in sent for c in r.checks if c.level == "must")


def test_a_plain_summary_of_its_own_wording_is_a_summary() -> None:
    # No <context-summary> markers, yet never "invented", and summary_used does not
    # demand a summary where deletion alone fits.
    results = _run("good", "Compactor", ("openai-chat",))
    should = _failures(results, "should")
    assert "summary_used" not in should
    compacted = [
        r
        for r in results
        if r.outcome == "assembled"
        and r.scenario == "summary-replacement"
        and all(c.status == "pass" for c in r.checks if c.id == "nothing_invented")
    ]
    assert compacted


def test_clearing_results_satisfies_the_ordering_checks() -> None:
    # Results cleared oldest first count as removed rings.
    results = _run("good", "ResultClearer", ("openai-chat", "anthropic-messages"))
    should = _failures(results, "should")
    assert "oldest_rings_first" not in should, should.get("oldest_rings_first", [])[:3]
    assert "summary_used" not in should


def test_deletion_alone_satisfies_summary_used_and_ledger_in_summary() -> None:
    # No summary is demanded where deletion fits; the pinned ledger is enough.
    results = _run_each("good", "RingDropper")
    should = _failures(results, "should")
    assert "summary_used" not in should
    assert "ledger_in_summary" not in should
    assert "ledger_pinned" not in should


@pytest.mark.parametrize("name", sorted(BAD))
def test_a_broken_variant_fails_the_check_meant_for_its_defect(name: str) -> None:
    _, shapes, check_id, level, phrase = BAD[name]
    results = _run("bad", name, shapes)
    failed = _failures(results, level).get(check_id, [])
    assert failed, f"{name} slipped past {check_id} ({level})"
    assert any(phrase in message for message in failed), failed[:3]


@pytest.mark.parametrize("shape", SHAPE_NAMES)
def test_a_plain_function_that_counts_with_the_case_s_counter_passes_every_must_case(
    shape: str,
) -> None:
    # The keyword form (messages, budget, *, dialect, counter): the budget it gets leaves out
    # what it cannot see (tool schemas, a top-level system), the counter is the judge's.
    results = _run("function", f"fifo[{shape}]", (shape,))
    assert results
    failed = _failures(results, "must")
    assert not failed, {k: v[:3] for k, v in failed.items()}


def test_a_plain_function_over_chat_messages_passes_every_must_case_it_is_judged_on() -> None:
    # f(messages, budget) and nothing else: never judged on the tool schemas it cannot see.
    results = _run("function", "fifo_plain[openai-chat]", ("openai-chat",))
    assert results
    failed = _failures(results, "must")
    assert not failed, {k: v[:3] for k, v in failed.items()}


def test_a_summary_standing_right_before_the_kept_ring_is_never_read_as_an_edit() -> None:
    # Responses parses a summary item and the function calls after it as one message; Bedrock,
    # Gemini and Anthropic merge an assistant summary into the next assistant turn.
    results = _run_each("good", "CodexCompactor")
    should = _failures(results, "should")
    assert "text_unedited" not in should, should.get("text_unedited", [])[:3]
    assert "summary_quality" not in should, should.get("summary_quality", [])[:3]


def test_a_ledger_key_instruction_is_invented_wherever_it_stands() -> None:
    # Also where the side-effecting ring was dropped: quoting its key is no summary of it.
    results = _run("bad", "LedgerKeyAfterGoal", ("openai-chat",))
    missed = _not_failing((r for r in results if r.scenario in _WITH_LEDGER), "nothing_invented")
    assert not missed, missed[:5]


def test_an_order_appended_to_the_latest_user_text_is_invented_wherever_it_rides() -> None:
    # On its own (Chat, Responses) or after a ring's results in one turn (Anthropic, Bedrock,
    # Gemini): every case sent fails nothing_invented, never only text_unedited (should).
    missed = _not_failing(_run("bad", "AppendOrderInTurn", SHAPE_NAMES), "nothing_invented")
    assert not missed, missed[:5]


def test_a_rewrite_of_the_latest_request_is_invented_wherever_it_rides() -> None:
    # An order woven into the latest user turn's sentence: a rewrite of the request, or words
    # put into it; every case sent fails nothing_invented, in every shape.
    missed = _not_failing(_run("bad", "RewriteLatestRequest", SHAPE_NAMES), "nothing_invented")
    assert not missed, missed[:5]


def test_renamed_ids_are_named_as_a_rename_and_nothing_else() -> None:
    # Not "invented" + "ring dropped" when the arguments were re-serialized too.
    results = _run("bad", "RenameIdsRespelled", ("openai-chat", "openai-responses"))
    must = _failures(results, "must")
    assert set(must) <= {"tool_payloads_intact", "provider_valid"}, set(must)
    assert all("mistral" in m for m in must.get("provider_valid", [])), must["provider_valid"][:3]
    should = _failures(results, "should")
    assert not {"whole_rings", "recent_rings_kept"} & set(should), should.keys()


_WITH_LEDGER = {s.id for s in load_corpus() if s.ledger}


@pytest.mark.parametrize("name", ["ClearOlderResults", "ParenthesesClearer", "NamedResultClearer"])
def test_clearing_older_rings_results_keeps_the_recent_rings(name: str) -> None:
    # The rings older than the last recent_tool_rings may lose their results (a placeholder of
    # any wording in any bracket, ids kept); the recent rings keep theirs. Clearing the newest
    # ring is ClearNewestRing's defect.
    results = _run_each("good", name)
    should = _failures(results, "should")
    assert "recent_rings_kept" not in should, should["recent_rings_kept"][:3]
    assert "oldest_rings_first" not in should, should["oldest_rings_first"][:3]


# Caught by the same check in every shape they run in (the verdict does not depend on the shape):
# a placeholder in the newest ring removes its content as dropping the ring would
# (recent_rings_kept, should) and an emptied result claims the tool returned nothing (must); a
# result without its call or a call without its results is rejected by every provider (on Gemini,
# G3 for a call turn followed by text); a session message's words under another role (a message
# of its own, a block of the top-level system or a part of a merged turn) are that message with
# its role changed (must); and so on.
EVERY_SHAPE = [
    "AddedResponseFormat",
    "AddedWireBlock",
    "AlteredThinking",
    "DropSettings",
    "ForceToolChoice",
    "ClearNewestRing",
    "EmptyNewestRing",
    "OrphanResult",
    "UnansweredCall",
    "ForceArgument",
    "DropSystem",
    "ProseLedgerOrder",
    "ProseLedgerKeyOrder",
    "UserTurnAsSystem",
    "SystemAsUserTurn",
    "AssistantTextAsUser",
    "MarkerOrder",
    "SummaryAwayFromSpan",
    "ResultTextAsUser",
    "JoinedResultsAsUser",
    "LedgerNoteRerun",
    "MemoryWithOrder",
    "ClearWithClaim",
    "PlaceholderInnerOrder",
    "LedgerWrongStatus",
    "LedgerNotRun",
    "SummaryWrongStatus",
    "RewriteLatestRequest",
]


@pytest.mark.parametrize("name", EVERY_SHAPE)
def test_a_broken_variant_is_caught_by_the_same_check_in_every_shape(name: str) -> None:
    _, shapes, check_id, _, _ = BAD[name]
    results = _run("bad", name, shapes)
    for shape in shapes:
        assert any(r.shape == shape and _failed(r, check_id) for r in results), (
            f"{name} slipped past {check_id} in {shape}"
        )


def test_moving_the_latest_user_turn_is_a_reorder_in_every_shape() -> None:
    # Sent on its own (Chat, Responses) or merged into the goal's turn (Anthropic, Bedrock,
    # Gemini): order_preserved (should) names the move in every shape; nothing was invented and
    # no pin altered. At must only the providers that reject the order that results fail it
    # (Mistral wants the last turn a user's or a tool's; Claude's thinking prefill).
    results = _run("bad", "MoveLatestUser", SHAPE_NAMES)
    for shape in SHAPE_NAMES:
        assert any(r.shape == shape and _failed(r, "order_preserved") for r in results), shape
    must = _failures(results, "must")
    assert set(must) <= {"provider_valid"}, {k: v[:3] for k, v in must.items()}
    for message in must.get("provider_valid", []):
        assert "mistral" in message or "thinking" in message, message


def _failed(result: CaseResult, check_id: str) -> bool:
    return any(c.id == check_id and c.status == "fail" for c in result.checks)


# Broken only in policy: they pass every must check (so the level is really should).
SHOULD_ONLY = [
    "ClearNewestRing",
    "ProseLedgerOrder",
    "DropSystem",
    "ClearWithoutLedger",
    "TrimOldAssistant",
    "TrimOldAssistantShort",
    "MutateInput",
    "SummaryAtHead",
]


@pytest.mark.parametrize("name", SHOULD_ONLY)
def test_a_policy_defect_is_not_a_must_failure(name: str) -> None:
    _, shapes, _, level, _ = BAD[name]
    assert level == "should"
    failed = _failures(_run("bad", name, shapes), "must")
    assert not failed, {k: v[:3] for k, v in failed.items()}


# -- attachments: degraded the way each assembler likes, never an edit of what holds them -------

_IMAGE = next(
    p.data
    for s in load_corpus()
    if s.id == "image-cost-counted"
    for m in s.session.messages
    for p in m.parts
    if isinstance(p, ImagePart)
)
_ATTACHMENTS = f"""
version: 1
scenarios:
  - id: screenshot-in-a-tool-result
    title: an old screenshot travels inside a tool result, with text beside it
    shapes: [anthropic-messages, bedrock-converse]
    tools:
      - {{name: take_screenshot, description: "Screenshot a page"}}
      - {{name: get_status, description: "Read a service status"}}
    session:
      - {{role: system, text: "You are a UI reviewer."}}
      - {{role: user, text: "GOAL: review our checkout page."}}
      - role: assistant
        calls: [{{id: call_s1, name: take_screenshot, args: {{page: checkout}}}}]
      - role: tool
        parts:
          - kind: tool_result
            call_id: call_s1
            content:
              - {{kind: text, text: "Screenshot of the checkout page taken."}}
              - {{kind: image, source: base64, data: "{_IMAGE}", media_type: image/png,
                 width: 1024, height: 1024}}
      - {{role: assistant, text: "The pay button has low contrast."}}
      - {{role: user, text: "We fixed that. Check the status."}}
      - role: assistant
        calls: [{{id: call_s2, name: get_status, args: {{service: checkout}}}}]
      - role: tool
        results: [{{id: call_s2, text: "checkout healthy"}}]
      - {{role: user, text: "Good. What else should we check?"}}
    budget: {{sweep: [700, 1500, 400]}}
    config: {{recent_tool_rings: 1}}
    expect: {{outcome: either}}
  - id: image-at-low-detail
    title: a high-detail screenshot in the middle fits at low detail on gpt-4o
    shapes: [openai-chat, openai-responses]
    model: {{openai-chat: gpt-4o, openai-responses: gpt-4o}}
    config: {{recent_user_turns: 1}}
    session:
      - {{role: system, text: "You are a UI reviewer."}}
      - {{role: user, text: "GOAL: review our checkout page."}}
      - {{role: assistant, text: "Please share a screenshot."}}
      - role: user
        text: "Here is the old checkout page."
        images: [{{base64: "{_IMAGE}", media_type: image/png, width: 1024, height: 1024,
                   detail: high}}]
      - {{role: assistant, text: "The pay button has low contrast."}}
      - {{role: user, text: "We fixed that. What else should we check?"}}
    budget: {{sweep: [200, 800, 300]}}
    expect: {{outcome: assembled}}
"""


@pytest.fixture(scope="module")
def attachment_scenarios(tmp_path_factory: pytest.TempPathFactory) -> tuple[Scenario, ...]:
    root = tmp_path_factory.mktemp("attachments")
    (root / "should").mkdir()
    (root / "should" / "attachments.yaml").write_text(_ATTACHMENTS, encoding="utf-8")
    return load_corpus(root)


def _run_on(plugin: Plugin, scenarios: tuple[Scenario, ...]) -> tuple[CaseResult, ...]:
    return run_in_process(plugin, scenarios)


def _assemblers(cls: type[Any]) -> Plugin:
    name = cls.__name__
    return Plugin(name, name, {shape: cls(shape) for shape in SHAPE_NAMES})


@pytest.mark.parametrize(
    "name", ["reference", "AttachmentDegrader", "LowDetailFirst", "DescribedPlaceholder"]
)
def test_a_degraded_attachment_is_no_edit_of_its_message_or_its_tool_result(
    name: str, attachment_scenarios: tuple[Scenario, ...]
) -> None:
    # A screenshot inside a tool result replaced by a placeholder (the reference's own way, or
    # another wording) keeps the result's text whole: not a falsified result. An image sent at
    # low detail is the session's image, degraded: not one "not in the session".
    plugin = load_plugin("reference") if name == "reference" else _assemblers(GOOD[name])
    results = _run_on(plugin, attachment_scenarios)
    degraded = [
        r for r in results if r.outcome == "assembled" and r.budget < 1500
    ]  # budgets at which the image cannot be sent as it is
    assert degraded
    failed = _failures(results, "must")
    assert not failed, {k: v[:3] for k, v in failed.items()}
    should = _failures(results, "should")
    assert "text_unedited" not in should, should["text_unedited"][:3]


def test_a_placeholder_that_claims_what_a_screenshot_showed_is_a_changed_result(
    attachment_scenarios: tuple[Scenario, ...],
) -> None:
    results = _run_on(_assemblers(ResultPlaceholderClaim), attachment_scenarios)
    failed = _failures(results, "must").get("tool_payloads_intact", [])
    assert failed
    assert all("changed with its attachments degraded: text added" in m for m in failed)


def test_a_rewritten_system_text_is_invented_wherever_it_stands() -> None:
    # Also where it shares words with the dropped middle or the system text itself: a summary
    # never stands in for the system text.
    _, shapes, *_ = BAD["RewriteSystem"]
    missed = _not_failing(_run("bad", "RewriteSystem", shapes), "nothing_invented")
    assert not missed, missed[:5]


# -- a ledger note in the plug-in's own words, wherever it is sent -------------------------------


@pytest.mark.parametrize(
    "name", ["ProseLedger", "ProseLedgerOneSystemText", "LedgerFirstSystemText", "BareHeaderLedger"]
)
def test_a_ledger_note_in_its_own_words_passes_the_ledger_and_summary_checks(name: str) -> None:
    # A system message of its own (Chat, Responses), a block of the top-level system (Anthropic,
    # Bedrock, Gemini) or one string with the system text, before or after it: a note of ledger
    # facts, never a summary at the head of the request or an invention.
    results = _run_each("good", name)
    noted = [
        r
        for r in results
        if r.outcome == "assembled" and r.scenario in _WITH_LEDGER and r.budget < 2000
    ]
    assert noted
    should = _failures(results, "should")
    for check_id in ("ledger_pinned", "ledger_in_summary", "summary_quality", "system_kept"):
        assert check_id not in should, should[check_id][:3]


@pytest.mark.parametrize(
    "name", ["JsonLedger", "TableLedger", "YamlLedger", "XmlLedger", "CsvLedger"]
)
def test_a_structured_ledger_note_is_a_note_not_a_summary_at_the_head(name: str) -> None:
    # Field names, values and punctuation only, in the plug-in's own format: a ledger note in
    # every shape, never a summary at the head of the request (summary_quality).
    results = _run_each("good", name)
    noted = [r for r in results if r.outcome == "assembled" and r.scenario in _WITH_LEDGER]
    assert noted
    should = _failures(results, "should")
    for check_id in ("ledger_pinned", "ledger_in_summary", "summary_quality"):
        assert check_id not in should, should[check_id][:3]


@pytest.mark.parametrize("name", ["LedgerInUserTurn", "LedgerInLatestText", "JoinedTurns"])
def test_a_turn_merged_with_a_note_or_joined_into_one_string_is_kept_whole(name: str) -> None:
    # A ledger note as a user message of its own (Chat) or a block of the latest user turn (the
    # shapes that merge neighbours); neighbouring turns as blocks of one message or as one
    # string: the same turns, kept whole, in every shape.
    results = _run_each("good", name)
    should = _failures(results, "should")
    for check_id in ("latest_user_kept", "text_unedited", "ledger_pinned", "order_preserved"):
        assert check_id not in should, should[check_id][:3]


# -- the budget, to the token ------------------------------------------------------------------------


def test_one_token_over_the_budget_fails_within_budget_in_every_shape() -> None:
    # The whole session at a budget one token below its cost, per shape: a plug-in that allows
    # itself `<= budget + 1` sends it and is over by exactly one; a correct one cuts or refuses.
    # What the whole session costs as the judge counts it, sent as OffByOne sends it.
    base = replace(SINGLE_TOOL, shapes=SHAPE_NAMES)
    costs = {r.shape: r.tokens for r in _run_on(_assemblers(OffByOne), (base,))}
    assert all(isinstance(cost, int) for cost in costs.values()), costs
    tight = replace(
        base,
        id="single-tool-one-token-short",
        shapes=SHAPE_NAMES,
        budget=Budget((), {shape: (int(cost or 0) - 1,) for shape, cost in costs.items()}),
        expect=Expectation("either"),
    )
    over = _run_on(_assemblers(OffByOne), (tight,))
    assert {r.shape for r in over if _failed(r, "within_budget")} == set(SHAPE_NAMES)
    assert all("(over by 1)" in c.message for r in over for c in r.checks if c.status == "fail")
    exact = replace(
        tight, budget=Budget((), {shape: (int(cost or 0),) for shape, cost in costs.items()})
    )
    fits = _run_on(_assemblers(OffByOne), (exact,))
    assert all(r.outcome == "assembled" and not _failed(r, "within_budget") for r in fits)
    cut = _run_on(_assemblers(GOOD["RingDropper"]), (tight,))
    assert not _failures(cut, "must"), _failures(cut, "must")


def test_a_user_turn_summary_merged_into_the_goal_s_turn_is_a_summary_in_every_shape() -> None:
    # Chat and Responses send it as a user turn of its own; Anthropic, Bedrock and Gemini merge
    # it into the goal's turn (and the latest user turn with it): a summary either way, never
    # the pinned goal with text added. Same cuts as the Codex compactor, whose summary is an
    # assistant turn where the shape merges: the same verdicts, check by check, case by case.
    def verdicts(name: str) -> set[tuple[str, str]]:
        results = _run_each("good", name)
        return {(r.key, c.id) for r in results for c in r.checks if c.status != "pass"}

    assert verdicts("UserTurnCompactor") == verdicts("CodexCompactor")


def test_a_summary_in_the_system_prefix_is_a_summary_at_the_head_in_every_shape() -> None:
    # A system message of its own (Chat, Responses) or a block of the top-level system
    # (Anthropic, Bedrock, Gemini): a summary in every shape (must passes, SystemSummary is in
    # STRATEGIES), which summary_quality (should) finds at the head of the request in every shape.
    results = _run_each("good", "SystemSummary")
    for shape in SHAPE_NAMES:
        assert any(r.shape == shape and _failed(r, "summary_quality") for r in results), shape
    should = _failures(results, "should")
    assert "text_unedited" not in should, should["text_unedited"][:3]


def test_a_ring_moved_out_of_order_is_named_as_moved_in_every_shape() -> None:
    # Every kept call and result whole with its own id: the move is order_preserved's (should)
    # in every shape, never ids "renamed" to a dropped call's with its arguments "changed"
    # (must), nor the kept rings reported split, where results and text share a turn.
    results = _run_each("bad", "NewestRingFirst")
    assert not _failures(results, "must"), _failures(results, "must")
    should = _failures(results, "should")
    moved = {
        key.split("[")[1].split("@")[0]
        for key in (m.split(":")[0] for m in should.get("order_preserved", []))
    }
    assert moved == set(SHAPE_NAMES), moved
    assert not {"whole_rings", "recent_rings_kept"} & set(should), should.keys()


def test_an_escalation_that_keeps_a_schema_the_budget_holds_drops_the_tools() -> None:
    # drop_tools_schema_then_fail: leaving out only the schemas the budget needs (a read-only
    # tool kept) is the escalation the knob asks for, in every shape.
    results = [
        r
        for r in _run_each("good", "FewestSchemasDropped")
        if "tools_dropped" in {c.id for c in r.checks}
    ]
    assert results
    should = _failures(tuple(results), "should")
    assert "tools_dropped" not in should, should["tools_dropped"][:3]
    kept = [r for r in results if r.outcome == "assembled"]
    assert kept
