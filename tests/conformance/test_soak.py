"""``ctxconf soak``: the simulated agent loop, its measurements, findings and workloads."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from soak_fakes import ClearOlderResults, DropLastResult, DropLedger, HeadSummary

from conformance.cli import cli
from conformance.errors import CtxconfError, WorkloadError
from conformance.loading import Plugin, load_plugin
from conformance.reference_plugin import reference_assemblers
from conformance.scenarios import load_corpus
from conformance.soak import builtin_workloads, load_workload, run_soak
from conformance.soak.caching import CacheModel, price_for, wire_blocks
from conformance.soak.finding import make_finding, replays
from conformance.soak.loop import _stored_problem, check_attachments_fit
from conformance.soak.report import read_jsonl, render_html, report_lines, write_jsonl
from conformance.soak.world import World
from reference_impl.shapes import get_shape
from reference_impl.transcript import Message, SummaryPart, TextPart, Transcript

SMALL_OPS = """
version: 1
id: small-ops
title: small ops window
system: You are ops-bot. Check the ledger before any restart.
goal: "GOAL: keep the cluster healthy."
window: {context_tokens: 9000, output_reserve_tokens: 1000, safety_margin_tokens: 500}
config: {recent_tool_rings: 1, recent_user_turns: 1, ledger_pin_mode: when_not_visible}
tools:
  - {name: fetch_logs, style: log, weight: 3, argument: service, targets: [api, db],
     result_tokens: {min: 200, max: 700}}
  - {name: restart_service, side_effect: true, weight: 2, argument: service, targets: [api, db],
     resource_prefix: rst, result_tokens: {min: 20, max: 40}}
behaviour:
  fan_out: {min: 1, max: 3}
  rounds_per_task: {min: 2, max: 4}
  error_rate: 0.1
  interjection_rate: 0.2
tasks: ["Alert: api is slow.", "Alert: db is down."]
interjections: ["Any news?"]
"""

TIMING = {
    "assembler_ms",
    "seconds",
    "assembler_ms_p50",
    "assembler_ms_p99",
    "assembler_ms_p50_first_100",
    "assembler_ms_p50_last_100",
}


@pytest.fixture(scope="module")
def small_ops(tmp_path_factory: pytest.TempPathFactory) -> Any:
    path = tmp_path_factory.mktemp("workloads") / "small-ops.yaml"
    path.write_text(SMALL_OPS, "utf-8")
    return load_workload(path)


def _plugin(assembler: object, name: str) -> Plugin:
    return Plugin(name, name, {"openai-chat": assembler})  # type: ignore[dict-item]


def _without_timing(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in line.items() if k not in TIMING} for line in lines]


def test_same_seed_same_report_and_another_seed_another(small_ops: Any) -> None:
    reference = load_plugin("reference")
    first = report_lines(run_soak(reference, small_ops, turns=30, seed=7))
    again = report_lines(run_soak(reference, small_ops, turns=30, seed=7))
    other = report_lines(run_soak(reference, small_ops, turns=30, seed=8))
    assert _without_timing(first) == _without_timing(again)
    assert _without_timing(first) != _without_timing(other)


def test_reference_fills_the_window_summarizes_and_repeats_nothing(small_ops: Any) -> None:
    report = run_soak(load_plugin("reference"), small_ops, turns=40, seed=3)
    numbers = report.measurements()
    assert report.failure is None, report.failure
    assert report.stateful
    assert numbers["window_full_turn"] is not None
    assert numbers["turns_over_budget"] == 0
    assert numbers["tokens_max"] <= small_ops.budget
    assert numbers["turns_with_summary"] > 0
    assert numbers["side_effect_calls"] > 0
    assert numbers["repeated_side_effects"] == 0
    assert numbers["reuse_over"] == "after_full"
    assert numbers["tokens_growth_per_turn_after_full"] is not None


def test_a_run_whose_window_never_fills_reports_no_after_full_figures(small_ops: Any) -> None:
    # The "after full" figures are measured from the turn after the window filled; a run that
    # never fills it has no such turn: no growth after full, and the reuse shares over the whole
    # run, said so (the printed summary labels them "(whole run)").
    report = run_soak(load_plugin("reference"), small_ops, turns=3, seed=3)
    numbers = report.measurements()
    assert numbers["window_full_turn"] is None
    assert numbers["tokens_growth_per_turn_after_full"] is None
    assert numbers["reuse_over"] == "whole_run"
    assert numbers["prefix_reuse"] > 0


def test_a_plugin_that_drops_the_ledger_repeats_side_effects(small_ops: Any) -> None:
    report = run_soak(_plugin(DropLedger(), "drop-ledger"), small_ops, turns=40, seed=3)
    assert report.failure is None, report.failure
    assert report.measurements()["repeated_side_effects"] > 0
    # The repeat is the simulated model's doing: every repeated call is a new ledger entry.
    assert sum(t.repeated for t in report.turns) == report.repeats


def test_the_plugin_s_declarations_are_read_in_a_soak_as_in_a_run(small_ops: Any) -> None:
    # A result placeholder it declares is a cleared result, turn after turn; undeclared, the
    # same words are a changed result (tool_payloads_intact, must) and stop the run.
    declared = run_soak(_plugin(ClearOlderResults(), "clear"), small_ops, turns=30, seed=3)
    assert declared.failure is None, declared.failure
    assert declared.survived == 30
    bare = ClearOlderResults(declared=False)
    undeclared = run_soak(_plugin(bare, "clear-bare"), small_ops, turns=30, seed=3)
    assert undeclared.failure is not None
    assert any(c["id"] == "tool_payloads_intact" for c in undeclared.failure.checks)


def test_a_summary_at_the_head_every_turn_kills_cache_reuse(small_ops: Any) -> None:
    hostile = run_soak(_plugin(HeadSummary(), "head-summary"), small_ops, turns=30, seed=3)
    steady = run_soak(_plugin(DropLedger(), "drop-ledger"), small_ops, turns=30, seed=3)
    assert hostile.failure is None, hostile.failure
    assert hostile.measurements()["prefix_reuse"] < 0.1
    assert hostile.measurements()["cache_reuse"] == 0
    assert hostile.measurements()["cost_usd"] == hostile.measurements()["uncached_cost_usd"]
    # Not an artefact of the workload: without the head summary the same trimmer is cached.
    assert steady.measurements()["cache_reuse_whole_run"] > 0.3


def test_a_must_failure_stops_the_run_and_becomes_a_replayable_scenario(
    small_ops: Any, tmp_path: Path
) -> None:
    plugin = _plugin(DropLastResult(), "drop-last-result")
    report = run_soak(plugin, small_ops, turns=30, seed=3)
    failure = report.failure
    assert failure is not None
    assert failure.kind == "must"
    assert report.survived == failure.turn
    assert any(c["id"] == "provider_valid" for c in failure.checks)
    found = make_finding(plugin, report)
    assert found is not None
    assert found.reproduces
    assert failure.session is not None
    assert len(found.session) <= len(failure.session)
    assert replays(plugin, found, report)
    path = tmp_path / "must" / "finding.yaml"
    path.parent.mkdir()
    path.write_text(found.text, "utf-8")
    (scenario,) = load_corpus(path)
    assert scenario.level == "must"
    assert scenario.ledger
    assert scenario.config["ledger_pin_mode"] == "when_not_visible"


def test_jsonl_and_html_report(small_ops: Any, tmp_path: Path) -> None:
    report = run_soak(load_plugin("reference"), small_ops, turns=12, seed=1)
    lines = report_lines(report)
    path = tmp_path / "soak.jsonl"
    write_jsonl(lines, path)
    back = read_jsonl(path)
    assert back[0]["type"] == "header"
    assert back[0]["report"] == "ctxconf-soak"
    assert back[0]["prices"]["read"]
    assert back[0]["prices"]["source"]
    assert [line["type"] for line in back[1:-1]] == ["turn"] * 12
    summary = back[-1]
    for key in (
        "tokens_max",
        "tokens_p95",
        "tokens_growth_per_turn_after_full",
        "cache_reuse",
        "cost_usd",
        "repeated_side_effects",
        "summary_depth_max",
        "summary_failures",
        "assembler_ms_p50",
        "assembler_ms_p99",
    ):
        assert key in summary
    page = render_html(back)
    assert page.count("<svg") == 4
    assert "request tokens per turn against the budget" in page


def test_a_report_line_holding_a_unicode_line_separator_is_one_line(tmp_path: Path) -> None:
    # a copy rewritten without ensure_ascii (jq -c, another program's JSON writer) keeps
    # U+2028, U+0085 or U+001C raw in a string: str.splitlines() ends a line at each
    printed = {"stdout": "one\u2028two\x85three\x1cfour"}
    lines = [
        {"type": "header", "report": "ctxconf-soak"},
        {"type": "summary", "plugin_output": printed},
    ]
    path = tmp_path / "soak.jsonl"
    path.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines), "utf-8")
    assert read_jsonl(path) == lines


def test_cli_soak_writes_reports(tmp_path: Path) -> None:
    out = tmp_path / "soak.jsonl"
    result = CliRunner().invoke(
        cli, ["soak", "--turns", "4", "--workload", "support", "--out", str(out)]
    )
    assert result.exit_code == 0, result.output
    assert "turns survived" in result.output
    assert out.with_suffix(".html").is_file()
    assert json.loads(out.read_text().splitlines()[-1])["turns_survived"] == 4
    # four turns of the support workload never fill its window: nothing "after full" is shown
    assert "window full at turn              never" in result.output
    assert "growth after full (tokens/turn)  n/a (the window never filled)" in result.output
    assert "common-prefix share (whole run)" in result.output
    assert "None" not in result.output


def test_cli_soak_bad_workload_is_a_named_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(SMALL_OPS.replace("version: 1", "version: 2"), "utf-8")
    result = CliRunner().invoke(cli, ["soak", "--workload", str(bad)])
    assert result.exit_code == 2
    assert str(bad) in result.output
    assert "version" in result.output
    missing = CliRunner().invoke(cli, ["soak", "--workload", "no-such"])
    assert missing.exit_code == 2
    assert "known: coding, ops, support" in missing.output


def test_workload_semantic_errors_name_the_place(tmp_path: Path) -> None:
    path = tmp_path / "w.yaml"
    path.write_text(SMALL_OPS.replace("{min: 1, max: 3}", "{min: 3, max: 1}"), "utf-8")
    with pytest.raises(WorkloadError, match=r"behaviour\.fan_out.*min 3 is above max 1"):
        load_workload(path)
    path.write_text(SMALL_OPS.replace("recent_tool_rings: 1", "recent_tool_ringz: 1"), "utf-8")
    with pytest.raises(WorkloadError, match=r"config.*recent_tool_ringz"):
        load_workload(path)
    # sizes that would build a session of gigabytes, or a turn of a hundred million calls
    path.write_text(SMALL_OPS.replace("{min: 1, max: 3}", "{min: 1, max: 100000000}"), "utf-8")
    with pytest.raises(WorkloadError, match=r"behaviour\.fan_out.*over the limit of 128"):
        load_workload(path)
    path.write_text(
        SMALL_OPS.replace("{min: 200, max: 700}", "{min: 1, max: 1000000000000}"), "utf-8"
    )
    with pytest.raises(WorkloadError, match=r"tools\[0\]\.result_tokens.*over the limit"):
        load_workload(path)


def test_workload_files_are_read_within_the_input_limits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The scenario files' reader: an alias bomb and a file over the size limit are named errors.
    bomb = tmp_path / "bomb.yaml"
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 9)]
    bomb.write_text("\n".join(lines) + "\n", "utf-8")
    with pytest.raises(WorkloadError, match="not a workload file") as caught:
        load_workload(bomb)
    assert caught.value.where == str(bomb)
    path = tmp_path / "w.yaml"
    path.write_text(SMALL_OPS, "utf-8")
    monkeypatch.setenv("CTXCONF_MAX_INPUT_BYTES", "100")
    with pytest.raises(WorkloadError, match=r"not a workload file.*CTXCONF_MAX_INPUT_BYTES"):
        load_workload(path)


def test_builtin_workloads_load_and_are_not_scenarios() -> None:
    ids = [w.id for w in builtin_workloads()]
    assert ids == ["coding", "ops", "support"]
    assert all(s.source.split("/")[-2] in {"must", "should", "may"} for s in load_corpus())


def test_openai_prefix_cache_counts_128_token_steps_from_1024() -> None:
    price = price_for("gpt-4o-mini")
    assert price is not None
    assert price.rules == "openai-automatic"
    cache = CacheModel("openai-chat", price)
    first = {
        "messages": [{"role": "system", "content": "x" * 4000}, {"role": "user", "content": "a"}]
    }
    second = {"messages": [*first["messages"], {"role": "user", "content": "y" * 1000}]}
    cache.observe(first, 1000)
    cost = cache.observe(second, 2000)
    # 4000 + ~30 of 5000+ characters are shared: about 1600 of 2000 tokens, in 128-token steps.
    assert 1500 < cost.prefix_tokens < 1700
    assert cost.cached_tokens == cost.prefix_tokens // 128 * 128
    small = CacheModel("openai-chat", price)
    small.observe(first, 500)
    assert small.observe(second, 1000).cached_tokens == 0  # under the 1024-token minimum


def test_anthropic_caches_only_at_breakpoints() -> None:
    price = price_for("claude-haiku-4-5")
    assert price is not None
    assert price.rules == "anthropic-breakpoints"
    big = "z" * 40_000
    plain = {"system": big, "messages": [{"role": "user", "content": "hi"}]}
    marked = {
        "system": [{"type": "text", "text": big, "cache_control": {"type": "ephemeral"}}],
        "messages": [{"role": "user", "content": "hi"}],
    }
    assert wire_blocks(marked, "anthropic-messages")[1] == {0}
    unmarked = CacheModel("anthropic-messages", price)
    unmarked.observe(plain, 10_000)
    assert unmarked.observe(plain, 10_000).cached_tokens == 0
    cache = CacheModel("anthropic-messages", price)
    written = cache.observe(marked, 10_000)
    assert written.cached_tokens == 0
    assert written.cache_write_tokens > 9_000
    read = cache.observe(marked, 10_000)
    assert read.cached_tokens > 9_000
    assert read.cache_write_tokens == 0
    assert read.cost_usd < read.uncached_cost_usd < written.cost_usd


def test_scenarios_validate_checks_the_workloads_folder(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    (corpus / "must").mkdir(parents=True)
    (corpus / "workloads").mkdir()
    source = Path(load_corpus()[0].source).read_text("utf-8")
    (corpus / "must" / "one.yaml").write_text(source, "utf-8")
    (corpus / "workloads" / "bad.yaml").write_text(SMALL_OPS.replace("tasks:", "taskz:"), "utf-8")
    out = CliRunner().invoke(cli, ["scenarios", "validate", str(corpus)])
    assert "workload:" in out.output, out.output
    assert "bad.yaml" in out.output
    assert "and 1 workload(s)" in out.output
    assert out.exit_code == 1


SHAPES = ("openai-chat", "openai-responses", "anthropic-messages", "gemini", "bedrock-converse")


@pytest.mark.parametrize("shape", SHAPES)
def test_every_builtin_workload_can_hold_its_attachments(shape: str) -> None:
    # A paste of every attachment kind the workload uses must fit its budget on its own model in
    # every shape, or the run is infeasible from the first screenshot on (the coding workload on
    # gpt-4o-mini: one image of unknown size is 48,169 tokens there).
    for workload in builtin_workloads():
        world = World(workload, 0, shape)
        model = workload.model_for(shape)
        check_attachments_fit(
            world, Transcript(world.opening(), world.tool_specs(), model), shape, model
        )


@pytest.mark.parametrize("shape", SHAPES)
def test_every_builtin_workload_s_attachments_can_be_sent_in_every_shape(shape: str) -> None:
    # A PDF by provider file id cannot go to Gemini, an image by URL not to Bedrock: the run
    # pastes what the shape can send (the coding workload stopped at turn 19-22 there, "cannot be
    # rendered", counted against every plug-in, the reference included).
    adapter = get_shape(shape)
    for workload in builtin_workloads():
        world = World(workload, 0, shape)
        for kind in world.attachment_kinds():
            part = world.attachment(kind, 3)
            adapter.render_request(Transcript((Message("user", (TextPart("see"), part)),)))
    # where the shape takes them, the sizes stay unknown to any counter (a URL, a file id)
    assert World(builtin_workloads()[0], 0, "openai-chat").attachment("image", 3).source == "url"


def test_a_coding_soak_in_gemini_pastes_what_gemini_takes() -> None:
    coding = next(w for w in builtin_workloads() if w.id == "coding")
    plugin = load_plugin("reference")
    report = run_soak(plugin, coding, turns=30, seed=0, shape="gemini")
    assert report.failure is None, report.failure
    assert report.survived == 30


def test_a_workload_whose_attachments_never_fit_is_a_named_error(tmp_path: Path) -> None:
    path = tmp_path / "w.yaml"
    # gpt-4o-mini's tile constants (2,833 + 5,667 a tile): an image of unknown size is 48,169
    # tokens, over this 7,500-token budget.
    path.write_text(
        SMALL_OPS.replace("  error_rate: 0.1\n", "  error_rate: 0.1\n  image_rate: 0.5\n"), "utf-8"
    )
    result = CliRunner().invoke(cli, ["soak", "--workload", str(path), "--turns", "3"])
    assert result.exit_code == 2, result.output
    assert "workload small-ops" in result.output
    assert "on gpt-4o-mini (openai-chat) a user turn with one image" in result.output
    assert "over the input budget of 7500" in result.output
    # The same workload on a model whose images a 7,500-token window holds runs.
    path.write_text(
        SMALL_OPS.replace("  error_rate: 0.1\n", "  error_rate: 0.1\n  image_rate: 0.5\n").replace(
            "title: small ops window\n", "title: small ops window\nmodels: {openai-chat: gpt-4.1}\n"
        ),
        "utf-8",
    )
    ok = CliRunner().invoke(
        cli, ["soak", "--workload", str(path), "--turns", "3", "--out", str(tmp_path / "s.jsonl")]
    )
    assert ok.exit_code == 0, ok.output


def test_without_shape_a_plugin_runs_in_its_own_shape_when_it_lacks_the_workloads(
    small_ops: Any,
) -> None:
    # The workload is openai-chat; a plug-in that speaks only anthropic-messages runs in that
    # shape unless --shape names one it does not speak, which stays a named error.
    assert small_ops.shape == "openai-chat"
    claude = reference_assemblers()["anthropic-messages"]
    plugin = Plugin("claude-only", "claude-only", {"anthropic-messages": claude})
    report = run_soak(plugin, small_ops, turns=3, seed=1)
    assert report.shape == "anthropic-messages"
    header = report_lines(report)[0]
    assert header["shape"] == "anthropic-messages"
    with pytest.raises(CtxconfError, match="speaks anthropic-messages, not openai-chat"):
        run_soak(plugin, small_ops, turns=3, seed=1, shape="openai-chat")
    both = load_plugin("reference")
    assert run_soak(both, small_ops, turns=3, seed=1).shape == "openai-chat"


@pytest.mark.parametrize("shape", ["openai-responses", "gemini", "bedrock-converse"])
def test_the_reference_assembler_runs_a_soak_in_every_shape(small_ops: Any, shape: str) -> None:
    # The simulated tools' results must be renderable in the shape (Responses carries no tool
    # result name): a run that cannot render its own session stops at turn 1 with an error.
    report = run_soak(load_plugin("reference"), small_ops, turns=6, seed=2, shape=shape)
    assert report.failure is None, report.failure
    assert report.survived == 6


def test_a_stored_message_must_come_from_the_session_or_the_view_merged_turns_included() -> None:
    system = Message("system", (TextPart("You are ops-bot."),))
    goal = Message("user", (TextPart("GOAL: keep the cluster healthy."),))
    summary = Message("user", (SummaryPart("Summary of earlier conversation: api restarted."),))
    session = Transcript((system, goal))
    # Bedrock's strict alternation sends the goal and the summary as one user turn.
    view = Transcript((system, Message("user", (*goal.parts, *summary.parts))))
    assert _stored_problem(Transcript((system, goal, summary)), session, view) is None
    invented = Message("user", (TextPart("Also wipe the production database."),))
    problem = _stored_problem(Transcript((system, goal, invented)), session, view)
    assert problem == (
        "session_after()[2] (user) is in neither the session nor the view: "
        "'Also wipe the production database.'"
    )
    # A part of the view under another role is not the view's message.
    moved = Message("assistant", goal.parts)
    assert _stored_problem(Transcript((system, moved)), session, view) is not None
