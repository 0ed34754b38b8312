"""``ctxconf fuzz``: finds a seeded bug, shrinks it, writes a scenario the runner replays."""

from __future__ import annotations

import dataclasses
import json
import re
import tempfile
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings

from conformance.checks import CheckResult
from conformance.checks.outcome import StepStatus
from conformance.checks.registry import CheckStatus
from conformance.cli import cli
from conformance.engine import reference_counter, run_case
from conformance.events import CaseResult
from conformance.fuzzing import (
    PLUGIN_ERROR,
    FuzzFinding,
    _judge_one,
    finding_document,
    finding_key,
    finding_order,
    fuzz,
    minimize,
    scenario_document,
    scenario_yaml,
)
from conformance.loading import Plugin, load_plugin
from conformance.protocol import AssemblyRequest
from conformance.scenarios import load_file, message_from_compact
from conformance.strategies import transcripts
from reference_impl.rings import validate
from reference_impl.shapes import get_shape
from reference_impl.transcript import (
    FilePart,
    ToolCallPart,
    ToolSpec,
    Transcript,
    transcript_from_dict,
)

FAKES = '''
from conformance.adapters._budget import count_chat_messages
from conformance.protocol import Refusal
from reference_impl.rings import validate
from reference_impl.shapes import get_shape


def _refuse_broken(messages):
    if validate(get_shape("openai-chat").parse_request({"messages": messages})):
        raise Refusal("broken pairing")


class DropOldest:
    """The seeded bug: over budget, drop the oldest non-system message, blind to rings (the
    budget itself is counted right, tools included: it is must)."""

    shape = "openai-chat"

    def assemble(self, request):
        shape = get_shape("openai-chat")
        if validate(shape.parse_request(request.body)):
            raise Refusal("broken pairing")
        out = list(request.messages)

        def cost():
            return request.counter.count(shape.parse_request({**request.body, "messages": out})).total

        while len(out) > 1 and cost() > request.budget:
            del out[1 if out[0]["role"] == "system" and len(out) > 2 else 0]
        if cost() > request.budget:
            raise Refusal("does not fit")
        return {**request.body, "messages": out}


class KeepOrRefuse:
    """Correct at must level: refuses broken input and what does not fit (tools counted), else
    sends it all."""

    shape = "openai-chat"

    def assemble(self, request):
        session = get_shape("openai-chat").parse_request(request.body)
        if validate(session):
            raise Refusal("broken pairing")
        if request.counter.count(session).total > request.budget:
            raise Refusal("does not fit")
        return dict(request.body)


class NeverRefuseBroken:
    """Sends whatever it gets, broken pairing included; refuses only what does not fit."""

    shape = "openai-chat"

    def assemble(self, request):
        session = get_shape("openai-chat").parse_request(request.body)
        if request.counter.count(session).total > request.budget:
            raise Refusal("does not fit")
        return dict(request.body)


def refuse_all(messages, budget):
    """Useless: refuses every request, so it never sends anything invalid."""
    raise Refusal("no")


def drop_oldest_plain(messages, budget):
    """A user's first trimmer (docs/writing-a-plugin.md): the system text and the newest
    messages that fit, the oldest dropped one by one, blind to rings; refuses nothing."""
    system = [m for m in messages if m["role"] == "system"]
    rest = [m for m in messages if m["role"] != "system"]
    while rest and count_chat_messages(system + rest) > budget:
        rest.pop(0)
    return system + rest


def drop_first_call_result(messages, budget):
    """The seeded bug, whatever the budget: the first tool result is dropped (orphaned call)."""
    _refuse_broken(messages)
    for i, m in enumerate(messages):
        if m["role"] == "tool":
            return messages[:i] + messages[i + 1 :]
    return messages
'''


@pytest.fixture
def fakes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "fzfakes.py").write_text(FAKES)
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path


EXHAUSTIVE = pytest.mark.exhaustive


def _orphans(messages: list[dict[str, object]]) -> list[str]:
    view = get_shape("openai-chat").parse_request({"messages": messages})
    return [v.kind for v in validate(view)]


# One seed in `make test`; more in `make test-slow`. Each seed is one more search of the same code
# (generate, shrink, minimize, write, replay): only the session found differs. The search is
# reproducible (fixed_generation), so seed 1 finds the same session on every run. Seed 4, listed
# before, finds nothing in 200 cases once module constants are no longer drawn.
@pytest.mark.parametrize(
    "seed", [1, pytest.param(3, marks=EXHAUSTIVE), pytest.param(5, marks=EXHAUSTIVE)]
)
def test_fuzz_finds_ring_blind_trimming_and_the_runner_replays_it(fakes: Path, seed: int) -> None:
    runner = CliRunner()
    out = fakes / "found.yaml"
    found = runner.invoke(
        cli, ["fuzz", "--impl", "fzfakes:DropOldest", "--seed", str(seed), "--out", str(out)]
    )
    assert found.exit_code == 1, found.output
    assert "provider_valid" in found.output
    assert "rule C2" in found.output  # OpenAI: a tool message without its tool_calls
    written = fakes / "must" / "found.yaml"  # the runner takes the level from the folder
    assert written.is_file()
    assert f"--scenarios {written}" in found.output

    (scenario,) = load_file(written)
    assert scenario.level == "must"
    assert scenario.shapes == ("openai-chat",)
    # Independently of the harness: the fake's answer for this session orphans a tool result.
    import fzfakes

    body = get_shape("openai-chat").render_request(scenario.session)
    (budget,) = scenario.budget.default
    request = AssemblyRequest(
        scenario_id=scenario.id,
        shape="openai-chat",
        body=body,
        budget=budget,
        counter=reference_counter("openai-chat", scenario.model_for("openai-chat")),
    )
    assert "orphan_result" in _orphans(fzfakes.DropOldest().assemble(request)["messages"])

    replay = runner.invoke(
        cli,
        [
            "run",
            "--impl",
            "fzfakes:DropOldest",
            "--scenarios",
            str(written),
            "--level",
            "must",
            "--no-reports",
            "--format",
            "jsonl",
        ],
    )
    assert replay.exit_code == 1, replay.output
    lines = [json.loads(line) for line in replay.output.splitlines() if line.startswith("{")]
    (case,) = [line for line in lines if line["type"] == "case"]
    assert case["status"] == "fail"
    failed = {c["id"] for c in case["checks"] if c["status"] == "fail"}
    assert failed == {"provider_valid"}


def test_fuzz_shows_each_must_failure_with_its_own_shrunk_case(fakes: Path) -> None:
    """A trimmer that cannot refuse fails within_budget on a one-message session at a budget of
    1, the smallest failing case of all; its ring-blind trimming is a failure of its own, shown
    with its own case (a valid session whose pairing it broke), before the budget one."""
    out = fakes / "found.yaml"
    found = CliRunner().invoke(
        cli, ["fuzz", "--impl", "fzfakes:drop_oldest_plain", "--seed", "1", "--out", str(out)]
    )
    assert found.exit_code == 1, found.output
    # What the user reads: a heading per finding and the failed checks under it. Its cases are
    # what this Hypothesis version's search finds, so their sizes are matched, not fixed.
    lines = found.stderr.splitlines()
    assert re.fullmatch(
        r"ctxconf fuzz: fzfakes:drop_oldest_plain: (\d+) must failures found, each shrunk to "
        r"its own case \(seed 1, openai-chat\)",
        lines[0],
    ), lines[0]
    headings = [line for line in lines if line.startswith("[")]
    for n, heading in enumerate(headings, 1):
        assert re.fullmatch(
            rf"\[{n}/{len(headings)}\] (\w+): fuzz-1-[a-z-]+, \w+ session of \d+ messages?, "
            r"openai-chat at \d+",
            heading,
        ), heading
    assert "returned a request of ? messages" not in found.stderr
    keys = [line.split("] ", 1)[1].split(":", 1)[0] for line in headings]
    assert "provider_valid" in keys
    assert keys[-1] == "within_budget"
    assert keys == sorted(set(keys), key=finding_order)  # once each, pairing first
    assert "warning" not in found.stderr  # each written case, loaded back, fails the same way

    written = fakes / "must" / "found.yaml"
    scenarios = {s.id: s for s in load_file(written)}
    assert list(scenarios) == [f"fuzz-1-{key.replace('_', '-')}" for key in keys]
    # The trimmer broke the pairing of a session the target accepts (not a broken one sent on).
    assert scenarios["fuzz-1-provider-valid"].expect.outcome == "either"
    assert len(scenarios["fuzz-1-provider-valid"].session.messages) >= 2

    replay = CliRunner().invoke(
        cli,
        [
            "run", "--impl", "fzfakes:drop_oldest_plain", "--scenarios", str(written),
            "--level", "must", "--no-reports", "--format", "jsonl",
        ],
    )  # fmt: skip
    lines = [json.loads(line) for line in replay.output.splitlines() if line.startswith("{")]
    failed = {
        line["scenario"]: {c["id"] for c in line["checks"] if c["status"] != "pass"}
        for line in lines
        if line["type"] == "case"
    }
    assert "provider_valid" in failed["fuzz-1-provider-valid"]
    assert "refuses_broken_input" not in failed["fuzz-1-provider-valid"]
    assert failed["fuzz-1-within-budget"] == {"within_budget"}


def _judged(*ran: tuple[str, CheckStatus], outcome: StepStatus = "assembled") -> CaseResult:
    checks = tuple(CheckResult(check, "must", status) for check, status in ran)
    statuses = {c.status for c in checks}
    status: CheckStatus = "pass"
    if outcome == "error" or "error" in statuses:
        status = "error"
    elif "fail" in statuses:
        status = "fail"
    return CaseResult(
        index=0,
        scenario="fuzz-case",
        title="",
        level="must",
        shape="openai-chat",
        dialect=None,
        budget=10,
        status=status,
        outcome=outcome,
        checks=checks,
    )


def test_a_case_failing_several_checks_is_the_finding_of_the_first_in_order() -> None:
    """A broken session sent on fails refuses_broken_input and provider_valid: it is a refusal
    finding, so provider_valid's is a valid session broken by the plug-in; within_budget comes
    last; a plug-in error (nothing judged) before any check."""
    assert finding_key(_judged(("provider_valid", "pass"))) is None
    both = _judged(("provider_valid", "fail"), ("refuses_broken_input", "fail"))
    assert finding_key(both) == "refuses_broken_input"
    trimmed = _judged(("provider_valid", "fail"), ("within_budget", "fail"))
    assert finding_key(trimmed) == "provider_valid"
    assert finding_key(_judged(("within_budget", "fail"), ("nothing_invented", "error"))) == (
        "nothing_invented"
    )
    assert finding_key(_judged(outcome="error")) == PLUGIN_ERROR
    keys = ["within_budget", "provider_valid", PLUGIN_ERROR, "refuses_broken_input"]
    assert sorted(keys, key=finding_order) == [
        PLUGIN_ERROR,
        "refuses_broken_input",
        "provider_valid",
        "within_budget",
    ]


def test_fuzz_finds_nothing_in_a_correct_assembler(fakes: Path) -> None:
    result = CliRunner().invoke(
        cli, ["fuzz", "--impl", "fzfakes:KeepOrRefuse", "--seed", "7", "--examples", "40"]
    )
    assert result.exit_code == 0, result.output
    assert "no must failure in 40 generated cases" in result.output


def test_fuzz_catches_an_assembler_that_sends_broken_pairing(fakes: Path) -> None:
    report = fuzz(load_plugin("fzfakes:NeverRefuseBroken"), seed=3, examples=200)
    assert report.finding is not None
    # Sending a valid session that fits unchanged is fine at must level: only a broken one fails.
    assert report.finding.generated_as != "valid"
    assert report.finding.scenario.expect.outcome == "refused"
    assert report.replayed is True


def test_a_broken_session_fuzz_writes_loads_as_declared_invalid(tmp_path: Path) -> None:
    """The loader refuses a broken session that does not say so; what fuzz writes says so."""
    broken = transcript_from_dict(
        {
            "messages": [
                {"role": "user", "parts": [{"kind": "text", "text": "hi"}]},
                {
                    "role": "tool",
                    "parts": [
                        {
                            "kind": "tool_result",
                            "call_id": "call_9",
                            "content": [{"kind": "text", "text": "ok"}],
                        }
                    ],
                },
            ]
        }
    )
    document = scenario_document(
        broken, scenario_id="b", title="b", shape="openai-chat", budget=100, outcome="refused"
    )
    assert document["scenarios"][0]["expect"] == {"outcome": "refused", "input": "invalid"}
    path = tmp_path / "must" / "b.yaml"
    path.parent.mkdir()
    path.write_text(scenario_yaml(document))
    (loaded,) = load_file(path)
    assert loaded.expect.input == "invalid"


def test_fuzz_without_out_prints_the_scenario_only(fakes: Path) -> None:
    # Any finding will do here: drop_first_call_result fails within_budget in a few examples, so
    # the search and its shrinking take seconds (DropOldest's ring-blind finding is the test above).
    result = CliRunner().invoke(
        cli, ["fuzz", "--impl", "fzfakes:drop_first_call_result", "--seed", "1"]
    )
    assert result.exit_code == 1
    document = yaml.safe_load(result.stdout)
    assert document["version"] == 1
    assert document["scenarios"][0]["level"] == "must"
    assert not list(fakes.glob("**/*.yaml"))


def test_bad_options_exit_2(fakes: Path) -> None:
    runner = CliRunner()
    shapes = runner.invoke(cli, ["fuzz", "--impl", "fzfakes:DropOldest", "--shapes", "nope"])
    assert shapes.exit_code == 2
    assert "unknown shape 'nope'" in shapes.output
    impl = runner.invoke(cli, ["fuzz", "--impl", "fzfakes:missing"])
    assert impl.exit_code == 2
    assert "no attribute 'missing'" in impl.output


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(transcripts(get_shape("openai-chat").capabilities, max_messages=10))
def test_scenario_document_round_trips_the_session(session: Transcript) -> None:
    """What fuzz writes loads back as the same session (compact form only where it is exact)."""
    if any(m.wire_id is not None or m.empty_tool_calls for m in session.messages):
        return  # the scenario format has no field for these two wire details
    document = scenario_document(
        session, scenario_id="rt", title="rt", shape="openai-chat", budget=10, outcome="either"
    )
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "must" / "rt.yaml"
        path.parent.mkdir()
        path.write_text(scenario_yaml(document))
        (loaded,) = load_file(path)
    assert loaded.session.messages == session.messages
    assert [t.name for t in loaded.session.tools] == [t.name for t in session.tools]
    assert [t.side_effect for t in loaded.session.tools] == [t.side_effect for t in session.tools]


# ------------------------------------------------------------------ fuzz that tells the truth


def test_fuzz_finds_an_assembler_that_refuses_everything(fakes: Path) -> None:
    """Refusing never breaks a provider rule; refusing a valid session that fits is the finding."""
    report = fuzz(load_plugin("fzfakes:refuse_all"), seed=5, examples=60)
    assert report.finding is not None
    assert [c.id for c in report.finding.failures] == ["assembles_when_feasible"]
    assert report.finding.scenario.expect.outcome == "either"
    assert report.finding.result.outcome == "refused"
    assert report.replayed is True
    document = finding_document(report)
    assert document["scenarios"][0]["expect"] == {"outcome": "either"}


def _direct(plugin: Plugin) -> Any:
    """A runner for :func:`_judge_one` in this process (the fuzzer itself uses workers)."""
    return lambda case, specs: run_case(case, plugin.assemblers[case.shape], specs, 10.0)


def _session(items: list[dict[str, Any]], tool: str = "read") -> Transcript:
    return Transcript(
        messages=tuple(message_from_compact(m) for m in items), tools=(ToolSpec(name=tool),)
    )


def test_a_generated_session_the_target_rejects_is_no_valid_case() -> None:
    """--valid-only tells the truth: thinking in the final assistant turn while thinking is
    disabled is rejected by Anthropic (A14), so the session is discarded rather than judged as
    valid (the reference assembler would 'fail' on it); without the thinking block it is judged."""
    run = _direct(load_plugin("reference"))
    thinking = {"type": "thinking", "thinking": "x", "signature": "s"}
    final = [
        {"role": "user", "text": "GOAL: answer."},
        {
            "role": "assistant",
            "parts": [
                {"kind": "reasoning", "origin": "anthropic-messages", "data": json.dumps(thinking)},
                {"kind": "text", "text": "Here it is."},
            ],
        },
    ]
    assert _judge_one(run, "anthropic-messages", _session(final), 4000) is None
    plain = [final[0], {"role": "assistant", "text": "Here it is."}]
    judged = _judge_one(run, "anthropic-messages", _session(plain), 4000)
    assert judged is not None
    assert judged[0].expect.outcome == "either"
    assert judged[1].status == "pass"


def test_an_unsigned_gemini_call_is_valid_for_the_default_gemini_target() -> None:
    """The shape's default model is gemini-2.5-flash, whose profile does not require thought
    signatures (G6 is Gemini 3's): an unsigned current-turn call is a valid case there."""
    run = _direct(load_plugin("reference"))
    unsigned = [
        {"role": "user", "text": "GOAL: read it."},
        {"role": "assistant", "calls": [{"id": "c1", "name": "read"}]},
        {"role": "tool", "results": [{"id": "c1", "name": "read", "text": "ok"}]},
    ]
    judged = _judge_one(run, "gemini", _session(unsigned), 4000)
    assert judged is not None
    assert judged[0].expect.outcome == "either"
    assert judged[1].status == "pass"


def test_a_refusal_is_demanded_only_by_rules_of_the_target() -> None:
    """Detached reasoning breaks R4/A13/G6; on openai-chat none of them applies."""
    thinking = {"type": "thinking", "thinking": "x", "signature": "s"}
    detached = Transcript(
        messages=tuple(
            message_from_compact(m)
            for m in (
                {"role": "user", "text": "GOAL: go."},
                {
                    "role": "assistant",
                    "parts": [
                        {"kind": "tool_call", "id": "toolu_1", "name": "read", "arguments": "{}"},
                        {
                            "kind": "reasoning",
                            "origin": "anthropic-messages",
                            "data": json.dumps(thinking),
                        },
                    ],
                },
                {"role": "tool", "results": [{"id": "toolu_1", "text": "ok"}]},
                {"role": "user", "text": "next"},
            )
        ),
        tools=(ToolSpec(name="read"),),
    )
    assert any(v.kind == "reasoning_detached" for v in validate(detached))
    run = _direct(load_plugin("reference"))
    judged = {
        shape: _judge_one(run, shape, detached, 4000)
        for shape in ("openai-chat", "anthropic-messages")
    }
    chat = judged["openai-chat"]
    assert chat is None or chat[0].expect.outcome == "either"
    anthropic = judged["anthropic-messages"]
    assert anthropic is not None
    assert anthropic[0].expect.outcome == "refused"


def test_minimize_removes_what_the_failure_does_not_need(fakes: Path) -> None:
    """A PDF, message names and extra rings are irrelevant to a dropped tool result."""
    items = [
        {"role": "system", "text": "You are ops."},
        {
            "role": "user",
            "name": "alice",
            "text": "GOAL: check.",
            "files": [
                {"base64": "JVBERi0xLjQK", "media_type": "application/pdf", "filename": "r.pdf"}
            ],
        },
    ]
    for n in range(3):
        items += [
            {"role": "assistant", "calls": [{"id": f"c{n}", "name": "status"}]},
            {"role": "tool", "results": [{"id": f"c{n}", "text": f"reading {n}"}]},
        ]
    items.append({"role": "user", "name": "alice", "text": "next?"})
    session = Transcript(
        messages=tuple(message_from_compact(m) for m in items), tools=(ToolSpec(name="status"),)
    )
    plugin = load_plugin("fzfakes:drop_first_call_result")
    judged = _judge_one(_direct(plugin), "openai-chat", session, 4000)
    assert judged is not None
    scenario, result = judged
    assert result.status == "fail"
    finding = FuzzFinding(scenario, "openai-chat", 4000, "valid", result)
    small = minimize(plugin, finding, 10.0)
    assert {c.id for c in small.failures} == {c.id for c in finding.failures}
    kept = small.scenario.session.messages
    assert not any(isinstance(p, FilePart) for m in kept for p in m.parts)
    assert all(m.name is None for m in kept)
    calls = [p for m in kept for p in m.parts if isinstance(p, ToolCallPart)]
    assert len(calls) == 1
    assert len(kept) < len(session.messages)


@pytest.mark.parametrize(
    ("outcome", "said"), [("either", "valid session of 2 messages"), ("refused", "results_split")]
)
def test_a_finding_s_heading_says_what_its_shrunk_session_is(outcome: str, said: str) -> None:
    """A session drawn broken (results_split) that shrank to a valid one the plug-in broke is
    said valid; one still broken keeps the name of its break."""
    from conformance.commands.fuzz import _heading
    from conformance.fuzzing import _scenario

    session = _session(
        [
            {"role": "user", "text": "GOAL: go."},
            {"role": "assistant", "text": "reading"},
        ]
    )
    scenario = _scenario(session, "openai-chat", 35, outcome)
    result = dataclasses.replace(_judged(("provider_valid", "fail")), budget=35)
    finding = FuzzFinding(scenario, "openai-chat", 35, "results_split", result)
    heading = _heading(2, 3, 1, finding)
    assert heading.startswith("[2/3] ")
    assert said in heading
    assert heading.endswith("openai-chat at 35")
