"""The view is valid for the default profile of every shape after trimming (provider-rules.md
section 7): alternation (B3, G1/G4), a user message first (B4, G1, A8), and tool schemas kept for
the rings that remain (B5). Judged by the emulator's validators, like the conformance runner."""

from __future__ import annotations

import pytest
from assembler_support import (
    WordCounter,
    assemble_words,
    assistant,
    goal_meets_a_question,
    long_goal_then_turns,
    ring,
    session,
    system,
    user,
    words,
)

from conformance.providers.validation import validate_request
from reference_impl import AssemblyConfig, Ledger, LedgerEntry
from reference_impl.errors import ContextAssemblyError, ShapeError
from reference_impl.rings import validate
from reference_impl.transcript import (
    SHAPE_NAMES,
    SummaryPart,
    ToolSpec,
    Transcript,
    params_from_mapping,
)

CONFIG = AssemblyConfig(summarize_trigger_ratio=1.0, recent_tool_rings=1, recent_user_turns=1)
TOOLS = (ToolSpec("get_status"), ToolSpec("search_logs"), ToolSpec("read_file"))


def run(s, config=CONFIG, *, shape="bedrock-converse", budget=10_000, **kw):
    return assemble_words(s, config, shape=shape, budget=budget, **kw)


def _verdict(assembly, shape):
    try:
        body = dict(assembly.render(shape))
    except ShapeError:  # e.g. is_error, which openai-chat cannot carry
        return None
    return validate_request(body, shape)


def verdicts(assembly):
    found = {shape: _verdict(assembly, shape) for shape in SHAPE_NAMES}
    return {shape: verdict for shape, verdict in found.items() if verdict is not None}


def test_b3_g4_a_deleted_assistant_turn_leaves_two_user_messages_in_a_row():
    s, config, budget = goal_meets_a_question(CONFIG)
    a = run(s, config, budget=budget)
    assert a.report.dropped_turn_ids == (s.messages[2].id,)
    for shape, verdict in verdicts(a).items():
        assert verdict.accepted, (shape, verdict.rule)
    # Merged for the alternating shapes only, into the earlier message, parts in order.
    assert a.report.merged_ids == (s.messages[3].id,)
    assert [p.text for p in a.view.messages[1].parts] == ["GOAL: audit", "older question"]
    openai = run(s, config, shape="openai-chat", budget=budget)
    assert openai.report.merged_ids == ()
    assert [m.id for m in openai.view] == [m.id for m in a.base_view]
    assert validate(a.view) == ()


def test_g1_b3_assistant_text_before_a_ring_goes_before_its_calls():
    s = session(
        system(),
        user("GOAL: audit"),
        assistant("looking"),  # text and calls sent as two messages (OpenAI-style sessions)
        ring("c1", "ok"),
        assistant("done"),
        user("latest"),
        tools=TOOLS[:1],
    )
    a = run(s)
    for shape, verdict in verdicts(a).items():
        assert verdict.accepted, (shape, verdict.rule)
    assert a.report.merged_ids == (s.messages[2].id,)
    head = next(m for m in a.view if m.tool_calls)
    assert head.id == s.messages[3].id  # the ring keeps its identity
    assert head.parts[0].text == "looking"
    assert validate(a.view) == ()


def test_b3_a_ring_followed_by_a_user_message_after_a_deletion():
    s = session(
        system(),
        user("GOAL: audit"),
        ring("c1", "denied", error=True),  # a short error ring: kept longer than plain turns
        assistant(words(60, "long")),  # deleted: the ring's results then meet the user message
        user("and now?"),
        ring("c2", "ok"),
        assistant("done"),
        user("latest"),
        tools=TOOLS[:1],
    )
    full = WordCounter().count(s).total
    a = run(s, budget=full - 40)
    assert a.report.dropped_turn_ids == (s.messages[4].id,)
    for shape, verdict in verdicts(a).items():
        assert verdict.accepted, (shape, verdict.rule)
    results = next(m for m in a.view if m.role == "tool")
    assert results.parts[0].kind == "tool_result"  # results first (A3), then the user's text
    assert results.parts[-1].text == "and now?"
    assert s.messages[5].id in a.report.merged_ids


def test_b3_the_summary_after_the_pinned_goal_is_one_user_turn():
    rings = [ring(f"c{i}", words(80)) for i in range(4)]
    s = session(system(), user("GOAL: audit"), *rings, user("latest"), tools=TOOLS[:1])
    config = CONFIG.with_changes(summarize_trigger_ratio=0.3)
    ledger = Ledger((LedgerEntry("get_status", "c0", "succeeded", idempotency_key="k0"),))
    a = run(s, config, budget=300, ledger=ledger)
    assert a.report.summary_used
    for shape, verdict in verdicts(a).items():
        assert verdict.accepted, (shape, verdict.rule)
    first = a.view.messages[2]  # after the system text and the ledger injection
    assert first.role == "user"
    assert first.parts[0].text == "GOAL: audit"
    assert isinstance(first.parts[-1], SummaryPart)
    # The stored session keeps the goal and the summary apart, so the next turn pins the goal.
    stored = a.session_after()
    assert stored.messages[1] == s.messages[1]
    assert any(isinstance(p, SummaryPart) for p in stored.messages[2].parts)


def test_b4_g1_a_user_message_comes_first_when_the_goal_is_not_pinned():
    s = session(
        system(),
        user(words(80, "goal")),
        assistant("first reply"),
        user("look at c1"),  # anchors the recent ring: the nearest user message before it
        ring("c1", "ok"),
        user("latest"),
        tools=TOOLS[:1],
    )
    config = CONFIG.with_changes(pin=(), recent_tool_rings=1)
    a = run(s, config, budget=60)
    assert [m.role for m in a.base_view] == ["system", "user", "assistant", "tool", "user"]
    assert a.base_view.messages[1].id == s.messages[3].id
    assert "first_user_anchor_protected" in a.report.notes
    for shape, verdict in verdicts(a).items():
        assert verdict.accepted, (shape, verdict.rule)


def test_b4_leading_middle_turns_are_dropped_after_the_goal_went():
    s, config, budget = long_goal_then_turns(CONFIG)
    a = run(s, config, budget=budget)
    assert [m.role for m in a.view] == ["system", "user", "assistant", "user"]
    assert s.messages[2].id in a.report.dropped_turn_ids
    assert "drop_leading_non_user" in a.report.steps


def test_b5_dropping_tool_schemas_keeps_the_schemas_kept_rings_use():
    tools = (ToolSpec("get_status", words(40)), ToolSpec("search_logs", words(40)))
    s = session(system(), user("goal"), ring("c1", "ok"), user("latest"), tools=tools)
    config = CONFIG.with_changes(on_still_over_budget="drop_tools_schema_then_fail")
    budget = sum(WordCounter().count_message(m) for m in s.messages) + 3 + 10
    a = run(s, config, budget=budget)
    assert [t.name for t in a.view.tools] == ["get_status"]  # the recent ring calls it
    assert a.report.dropped_tool_names == ("search_logs",)
    assert "tool_schemas_kept_for_rings" in a.report.notes
    verdict = validate_request(a.render("bedrock-converse"), "bedrock-converse")
    assert verdict.accepted, verdict.rule


def test_b5_all_schemas_go_when_no_ring_remains():
    tools = (ToolSpec("get_status", words(40)),)
    s = session(system(), user("goal"), assistant("ok"), user("latest"), tools=tools)
    config = CONFIG.with_changes(on_still_over_budget="drop_tools_schema_then_fail")
    a = run(s, config, budget=WordCounter().count(s.with_messages(s.messages)).total - 10)
    assert a.view.tools == ()
    assert a.report.dropped_tool_names == ("get_status",)


def test_a26_the_anthropic_body_asks_for_the_output_reserve_when_the_session_sets_no_cap():
    """Anthropic refuses a request without max_tokens (A26): the rendered body asks for the
    output room the budget kept; a cap the session sets is left as it is; other shapes, whose
    cap is optional, get none added."""
    s = session(system(), user("GOAL: audit"), assistant("ok"), user("latest"))
    config = CONFIG.with_changes(output_reserve_tokens=3000)
    body = run(s, config, shape="anthropic-messages").render()
    assert body["max_tokens"] == 3000
    assert validate_request(body, "anthropic-messages").accepted
    capped = Transcript(messages=s.messages, params=params_from_mapping({"max_tokens": 77}))
    assert run(capped, config, shape="anthropic-messages").render()["max_tokens"] == 77
    for shape in ("openai-chat", "openai-responses", "bedrock-converse"):
        rendered = run(s, config, shape=shape).render()
        assert "max_tokens" not in rendered
        assert "max_output_tokens" not in rendered
        assert "maxTokens" not in rendered.get("inferenceConfig", {})
    gemini = run(s, config, shape="gemini").render()
    assert "maxOutputTokens" not in gemini.get("generationConfig", {})


def test_a27_no_cap_is_filled_at_or_under_the_sessions_thinking_budget():
    """The cap filled for A26 must exceed an enabled thinking budget (A27): over the budget, the
    reserve is the cap; at or under it, the render names the setting and the reserve instead of
    sending a request the provider refuses."""
    s = session(system(), user("GOAL: audit"), assistant("ok"), user("latest"))

    def with_budget(budget: object) -> Transcript:
        thinking = {"type": "enabled", "budget_tokens": budget}
        return Transcript(messages=s.messages, params=params_from_mapping({"thinking": thinking}))

    body = run(
        with_budget(2048),
        CONFIG.with_changes(output_reserve_tokens=3000),
        shape="anthropic-messages",
    ).render()
    assert body["max_tokens"] == 3000
    assert validate_request(body, "anthropic-messages").accepted
    for reserve in (2048, 1500):
        assembly = run(
            with_budget(2048),
            CONFIG.with_changes(output_reserve_tokens=reserve),
            shape="anthropic-messages",
        )
        with pytest.raises(ContextAssemblyError, match=r"thinking\.budget_tokens is 2048") as info:
            assembly.render()
        assert info.value.code == "context_assembly_output_cap_under_setting"
        assert info.value.details == {
            "reserve": reserve,
            "setting": "thinking.budget_tokens",
            "value": 2048,
        }
    # a cap the session sets is its own (the validators judge it); a budget that is no integer
    # is another rule's (A12a)
    capped = Transcript(
        messages=s.messages,
        params=params_from_mapping(
            {"max_tokens": 1500, "thinking": {"type": "enabled", "budget_tokens": 2048}}
        ),
    )
    assert run(capped, CONFIG, shape="anthropic-messages").render()["max_tokens"] == 1500
    assert (
        run(with_budget("2048"), CONFIG, shape="anthropic-messages").render()["max_tokens"]
        == CONFIG.output_reserve_tokens
    )
    # only an enabled budget binds the cap
    small = CONFIG.with_changes(output_reserve_tokens=1500)
    for settings in (
        {"thinking": {"type": "disabled", "budget_tokens": 2048}},
        {"thinking": {"type": "adaptive"}},
    ):
        free = Transcript(messages=s.messages, params=params_from_mapping(settings))
        body = run(free, small, shape="anthropic-messages").render()
        assert body["max_tokens"] == 1500
        assert validate_request(body, "anthropic-messages").rule != "A27"
    # a body's anthropic_beta turns interleaved thinking on only through Bedrock, and the render
    # does not know where the body goes: it refuses rather than fill a cap the first-party API
    # refuses
    beta = {
        "thinking": {"type": "enabled", "budget_tokens": 2048},
        "anthropic_beta": ["interleaved-thinking-2025-05-14"],
    }
    named = Transcript(messages=s.messages, params=params_from_mapping(beta))
    with pytest.raises(ContextAssemblyError, match="output reserve of 1500"):
        run(named, small, shape="anthropic-messages").render()


def test_the_output_cap_is_read_and_written_where_each_shape_keeps_it():
    from reference_impl.shapes import get_shape

    chat = get_shape("openai-chat").options
    assert chat.output_cap({"max_completion_tokens": 5}) == 5  # an alias counts
    assert chat.output_cap({"max_tokens": None}) is None
    gemini = get_shape("gemini").options
    assert gemini.output_cap({"generationConfig": {"maxOutputTokens": 9}}) == 9
    assert gemini.output_cap({"generationConfig": "not an object"}) is None
    body = {"contents": [], "generationConfig": {"temperature": 0.5}}
    written = gemini.with_output_cap(body, 40)
    assert written["generationConfig"] == {"temperature": 0.5, "maxOutputTokens": 40}
    assert body["generationConfig"] == {"temperature": 0.5}  # the given body is not changed
    assert get_shape("anthropic-messages").options.with_output_cap({}, 8) == {"max_tokens": 8}
    assert gemini.with_output_cap({}, 3) == {"generationConfig": {"maxOutputTokens": 3}}
