"""Plain message functions: what they see and what they are judged on.

``f(messages, budget)`` sees only the message list: its budget is what is left for the messages
(the tool schemas and a top-level system it cannot see are taken out), and it is not judged on
dialect cases nor on cases that expect the tool schemas dropped. The
keyword form ``f(messages, budget, *, tools=..., dialect=...)`` sees the tools and/or the dialect
and is judged on those cases too.
"""

from __future__ import annotations

from typing import Any

import pytest

from conformance.engine import assembly_request, plan_cases, run_events
from conformance.events import CaseFinished, RunFinished
from conformance.loading import Plugin, load_plugin
from conformance.protocol import MESSAGE_KEYS, MessageListAssembler, body_tools
from conformance.scenarios import load_corpus
from reference_impl.shapes import get_shape
from reference_impl.transcript import SHAPE_NAMES

CORPUS = load_corpus()


def _scenario(sid: str):  # type: ignore[no-untyped-def]
    return next(s for s in CORPUS if s.id == sid)


def plain(messages: list[dict[str, Any]], budget: int) -> list[dict[str, Any]]:
    return messages


def with_dialect(
    messages: list[dict[str, Any]], budget: int, *, dialect: str | None = None
) -> list[dict[str, Any]]:
    return messages


def with_everything(messages: list[dict[str, Any]], budget: int, **_: Any) -> list[dict[str, Any]]:
    return messages


def test_the_keyword_form_is_detected_by_signature() -> None:
    assert MessageListAssembler(plain).keywords == frozenset()
    assert MessageListAssembler(with_dialect).keywords == {"dialect"}
    assert MessageListAssembler(with_everything).keywords == {
        "dialect",
        "tools",
        "counter",
        "ledger",
    }
    assert MessageListAssembler(len).keywords == frozenset()  # no signature: the plain form


def test_a_plain_function_is_not_planned_on_what_it_cannot_see() -> None:
    dialect_scenario = _scenario("ollama-no-null-content")
    tools_scenario = _scenario("tool-schema-drop-escalation")
    chosen = [dialect_scenario, tools_scenario, _scenario("single-tool")]
    every = plan_cases(chosen, ["openai-chat"])
    for function, kept in (
        (plain, {"single-tool"}),
        (with_dialect, {"single-tool", "ollama-no-null-content"}),
        (with_everything, {"single-tool", "ollama-no-null-content", "tool-schema-drop-escalation"}),
    ):
        assemblers = {"openai-chat": MessageListAssembler(function)}
        planned = plan_cases(chosen, ["openai-chat"], assemblers=assemblers)
        assert {c.scenario.id for c in planned} == kept, function.__name__
        assert [c.index for c in planned] == list(range(len(planned)))
    assert {c.scenario.id for c in every} == {s.id for s in chosen}


def test_the_run_footer_counts_the_cases_a_plain_function_is_not_judged_on() -> None:
    plugin = Plugin("plain", "tests:plain", {"openai-chat": MessageListAssembler(plain)})
    events = list(
        run_events(plugin, [_scenario("ollama-no-null-content"), _scenario("single-tool")])
    )
    finished = next(e for e in events if isinstance(e, RunFinished))
    assert finished.extra["not_judged"]["cases"] == 1
    assert [e.result.scenario for e in events if isinstance(e, CaseFinished)] == ["single-tool"]


def test_a_selection_of_only_cases_a_plain_function_is_not_judged_on_exits_2() -> None:
    # A gate that passes on no case would let CI go green with nothing tested.
    plugin = Plugin("plain", "tests:plain", {"openai-chat": MessageListAssembler(plain)})
    events = list(run_events(plugin, [_scenario("ollama-no-null-content")]))
    finished = events[-1]
    assert isinstance(finished, RunFinished)
    assert not [e for e in events if isinstance(e, CaseFinished)]
    assert (finished.exit_status, finished.gate) == (2, "no cases")
    assert finished.extra["not_judged"]["cases"] == 1


def test_the_keyword_form_receives_the_tools_and_the_dialect() -> None:
    seen: dict[str, Any] = {}

    def spy(
        messages: list[dict[str, Any]], budget: int, *, tools: list[Any], dialect: str | None
    ) -> list[dict[str, Any]]:
        seen.update(tools=tools, dialect=dialect, budget=budget)
        return messages

    scenario = _scenario("mistral-ids-kept")
    case = plan_cases([scenario], ["openai-chat"])[0]
    request = assembly_request(case, 0, scenario.session)
    body = MessageListAssembler(spy).assemble(request)
    assert seen["dialect"] == "mistral"
    assert [t["function"]["name"] for t in seen["tools"]] == ["get_weather"]
    assert seen["budget"] == case.budget
    assert body == request.body


@pytest.mark.parametrize("shape", SHAPE_NAMES)
def test_a_function_that_sees_tools_may_drop_them(shape: str) -> None:
    def drop_tools(
        messages: list[dict[str, Any]], budget: int, *, tools: list[Any]
    ) -> dict[str, Any]:
        assert tools, "the scenario offers tools"
        return {"messages": messages, "tools": []}

    scenario = _scenario("single-tool")
    case = next(c for c in plan_cases([scenario], SHAPE_NAMES) if c.shape == shape)
    request = assembly_request(case, 0, scenario.session)
    assert body_tools(request.body, shape)
    body = MessageListAssembler(drop_tools, shape).assemble(request)
    assert body_tools(body, shape) == []
    assert get_shape(shape).parse_request(body).tools == ()


def test_a_plain_function_gets_the_budget_left_for_its_messages() -> None:
    got: list[int] = []

    def spy(messages: list[dict[str, Any]], budget: int) -> list[dict[str, Any]]:
        got.append(budget)
        return messages

    def spy_tools(
        messages: list[dict[str, Any]], budget: int, *, tools: list[Any]
    ) -> list[dict[str, Any]]:
        got.append(budget)
        return messages

    scenario = _scenario("single-tool")
    for shape in ("openai-chat", "anthropic-messages"):
        case = next(c for c in plan_cases([scenario], SHAPE_NAMES) if c.shape == shape)
        request = assembly_request(case, 0, scenario.session)
        got.clear()
        MessageListAssembler(spy, shape).assemble(request)
        MessageListAssembler(spy_tools, shape).assemble(request)
        plain_budget, tools_budget = got
        # The tool schemas (and Anthropic's top-level system) are taken out of what it gets;
        # a function that takes the tools counts them itself.
        assert plain_budget < tools_budget <= case.budget, (shape, got)
        assert (tools_budget == case.budget) is (shape == "openai-chat"), (shape, got)
    # Tool schemas that alone fill the budget leave 1 (libraries refuse a limit of 0).
    tight = _scenario("budget-below-tools-no-escalation")
    case = plan_cases([tight], ["openai-chat"])[0]
    got.clear()
    MessageListAssembler(spy).assemble(assembly_request(case, 0, tight.session))
    assert got == [1]


@pytest.mark.parametrize("shape", SHAPE_NAMES)
def test_messages_within_their_budget_make_a_request_within_the_budget(shape: str) -> None:
    # Whatever tail of its messages a function keeps, counting them alone against the budget it
    # was given is enough: the request put back together fits the case's budget.
    key = MESSAGE_KEYS[shape]
    adapter = get_shape(shape)
    chosen = [_scenario("sweep-parallel-ring-mid-deletion"), _scenario("system-text-kept")]
    checked = 0
    for case in plan_cases(chosen, [shape]):
        request = assembly_request(case, 0, case.scenario.session)
        budget = MessageListAssembler(plain, shape).message_budget(request)
        messages = request.messages
        for start in range(len(messages)):
            kept = messages[start:]
            alone = request.counter.count(adapter.parse_request({key: kept})).total
            if alone > budget:
                continue
            whole = request.counter.count(adapter.parse_request({**request.body, key: kept}))
            assert whole.total <= case.budget, (case.key, start, alone, budget, whole.total)
            checked += 1
    assert checked


def test_the_counter_keyword_is_the_case_s_reference_counter() -> None:
    # The message list does not say which model the case names; the judge counts for it.
    seen: list[Any] = []

    def spy(messages: list[dict[str, Any]], budget: int, *, counter: Any) -> list[dict[str, Any]]:
        seen.append(counter)
        return messages

    scenario = _scenario("reasoning-gemini-signature-current-turn")  # names gemini-3-flash-preview
    case = plan_cases([scenario], ["gemini"])[0]
    request = assembly_request(case, 0, scenario.session)
    MessageListAssembler(spy, "gemini").assemble(request)
    assert seen == [request.counter]


def _newest(messages: list[dict[str, Any]], keep: int) -> list[dict[str, Any]]:
    """The system text and the newest ``keep`` messages from a user turn on (no ledger note)."""
    tail = messages[-keep:]
    while tail and tail[0]["role"] != "user":
        tail = tail[1:]
    return [messages[0], *tail]


def test_a_function_is_judged_on_the_ledger_only_when_it_takes_it() -> None:
    # The ledger is not in the messages: a function that is not handed it cannot pin it, so the
    # ledger's checks do not judge it; one that takes ledger= gets the entries and is judged.
    seen: list[Any] = []

    def blind(messages: list[dict[str, Any]], budget: int) -> list[dict[str, Any]]:
        return _newest(messages, 2)

    def sighted(
        messages: list[dict[str, Any]], budget: int, *, ledger: list[dict[str, Any]]
    ) -> list[dict[str, Any]]:
        seen.append(ledger)
        return _newest(messages, 2)

    scenario = _scenario("sweep-parallel-ring-mid-deletion")
    assert scenario.ledger
    assert MessageListAssembler(blind).unseen_checks == {
        "ledger_pinned",
        "ledger_in_summary",
        "memory_labelled",
    }
    assert MessageListAssembler(sighted).unseen_checks == {"memory_labelled"}
    results = {}
    for function in (blind, sighted):
        plugin = Plugin("f", "tests:f", {"openai-chat": MessageListAssembler(function)})
        events = list(run_events(plugin, [scenario], level="should"))
        cases = [e.result for e in events if isinstance(e, CaseFinished)]
        results[function.__name__] = {c.id: c.status for r in cases for c in r.checks}
    assert "ledger_pinned" not in results["blind"]
    assert results["sighted"]["ledger_pinned"] == "fail"
    case = plan_cases([scenario], ["openai-chat"])[0]
    MessageListAssembler(sighted).assemble(assembly_request(case, 0, scenario.session))
    assert seen == [[dict(e) for e in scenario.ledger]]


def test_the_keyword_form_may_require_its_keywords() -> None:
    # The documented form `f(messages, budget, *, tools: list[dict], dialect: str | None)` has
    # no defaults: it loads, and the wrapper passes both.
    plugin = load_plugin("test_message_functions:required_keywords")
    assembler = plugin.assemblers["openai-chat"]
    assert isinstance(assembler, MessageListAssembler)
    assert assembler.keywords == {"tools", "dialect"}
    scenario = _scenario("single-tool")
    case = plan_cases([scenario], ["openai-chat"])[0]
    assert assembler.assemble(assembly_request(case, 0, scenario.session))


def required_keywords(
    messages: list[dict[str, Any]], budget: int, *, tools: list[Any], dialect: str | None
) -> list[dict[str, Any]]:
    return messages


def test_tools_of_the_wrong_type_are_a_named_error() -> None:
    def bad(messages: list[dict[str, Any]], budget: int, *, tools: list[Any]) -> dict[str, Any]:
        return {"messages": messages, "tools": "none"}

    scenario = _scenario("single-tool")
    case = plan_cases([scenario], ["openai-chat"])[0]
    request = assembly_request(case, 0, scenario.session)
    with pytest.raises(TypeError, match="returned tools of type str"):
        MessageListAssembler(bad).assemble(request)


def test_a_plain_function_is_not_judged_on_memory_it_is_never_handed() -> None:
    # memory-labelled failed every plain function ("0 memory item(s) in the view; expected 3"):
    # no keyword hands a plain function the scenario's memory items.
    plugin = Plugin("plain", "tests:plain", {"openai-chat": MessageListAssembler(plain)})
    events = list(run_events(plugin, [_scenario("memory-labelled")], level="may"))
    (case,) = [e.result for e in events if isinstance(e, CaseFinished)]
    assert "memory_labelled" not in {c.id for c in case.checks}
    assert case.status == "pass"
