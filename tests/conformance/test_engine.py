"""Engine, plug-in loading and ``ctxconf run``: errors become results, output order is fixed."""

from __future__ import annotations

import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from conformance import engine
from conformance.cli import cli
from conformance.engine import DEFAULT_MODELS, call_with_timeout, plan_cases, run_events
from conformance.errors import PluginLoadError
from conformance.events import CaseFinished, CaseStarted, RunFinished, RunStarted
from conformance.loading import Plugin, load_plugin
from conformance.protocol import PROTOCOL_VERSION, Assembler, MessageListAssembler
from conformance.scenarios import load_corpus


def _pick(*ids: str):  # type: ignore[no-untyped-def]
    return [s for s in load_corpus() if s.id in ids]


def test_default_models_match_the_recorded_round_trips() -> None:
    # Cassettes are matched by skeleton, which includes the model family: one table serves both.
    from conformance.traffic.roundtrip import DEFAULT_MODELS as RECORDED

    assert dict(DEFAULT_MODELS) == dict(RECORDED)
    assert DEFAULT_MODELS is RECORDED


def test_reference_plugin_has_one_assembler_per_shape() -> None:
    plugin = load_plugin("reference")
    assert len(plugin.shapes) == 5
    assert all(isinstance(a, Assembler) and a.shape == s for s, a in plugin.assemblers.items())


def test_plain_function_is_wrapped_for_the_named_shape() -> None:
    plugin = load_plugin("fakes:plain_trimmer", impl_shape="anthropic-messages")
    (assembler,) = plugin.assemblers.values()
    assert isinstance(assembler, MessageListAssembler)
    assert assembler.shape == "anthropic-messages"
    results = [
        e.result
        for e in run_events(plugin, _pick("single-tool", "broken-orphan-result"))
        if isinstance(e, CaseFinished)
    ]
    by_id = {r.scenario: r for r in results}
    assert by_id["single-tool"].status == "pass"
    # A pass-through function sends the broken session: caught, not crashed.
    failed = {c.id for c in by_id["broken-orphan-result"].checks if c.status == "fail"}
    assert {"refuses_broken_input", "provider_valid"} <= failed


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("no_such_module_xyz:f", "PYTHONPATH"),
        ("fakes:DropSystm", "did you mean fakes:DropSystem"),
        ("fakes:WrongShape", "declares shape 'klingon'"),
        ("fakes:ERROR_TEXT", "not an assembler"),
        ("os:O_RDONLY", "is an int, not an assembler"),  # was "is a int"
        ("nosuchname", "ctxconf.assemblers"),
        ("fakes:", "module:attr"),
        ("mypkg/ctx.py:trim", "is a file path.*--impl mypkg.ctx:trim"),
        ("mypkg/ctx.py", "is a file path.*--impl mypkg.ctx:assemble"),  # no :attr either
        ("mypkg/ctx", "is a file path.*--impl mypkg.ctx:assemble"),
    ],
)
def test_loading_errors_say_what_to_type(spec: str, message: str) -> None:
    with pytest.raises(PluginLoadError, match=message):
        load_plugin(spec)


def test_a_missing_attribute_lists_what_the_module_defines_not_what_it_imports(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "team_ctx.py").write_text(
        "from __future__ import annotations\n"
        "import json\n"
        "from typing import Any, ClassVar\n"
        "from conformance.protocol import Refusal\n"
        "LIMIT = 3\n"
        "def drop_oldest(messages: Any, budget: int) -> Any:\n"
        "    return messages\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(PluginLoadError) as info:
        load_plugin("team_ctx:zzz")
    assert str(info.value).endswith("it defines: LIMIT, drop_oldest")
    sys.modules.pop("team_ctx", None)


def test_wrong_signature_is_refused_at_load(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "bad_plugin.py").write_text("def trim(messages):\n    return messages\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(PluginLoadError, match=r"\(messages: list\[dict\], budget: int\)"):
        load_plugin("bad_plugin:trim")
    sys.modules.pop("bad_plugin", None)


def test_call_with_timeout_abandons_a_hung_call() -> None:
    import threading

    gate = threading.Event()
    try:
        assert call_with_timeout(lambda: gate.wait(30), 0.05) == ("timeout", None)
    finally:
        gate.set()
    kind, value = call_with_timeout(lambda: 1 / 0, 1.0)
    assert kind == "raised"
    assert isinstance(value, ZeroDivisionError)
    assert call_with_timeout(lambda: 7, 1.0) == ("returned", 7)


def test_garbage_return_is_an_error_result() -> None:
    plugin = load_plugin("fakes:Garbage")
    (result,) = [
        e.result for e in run_events(plugin, _pick("single-tool")) if isinstance(e, CaseFinished)
    ]
    assert result.status == "error"
    assert (
        result.reason == "malformed return: list, expected an openai-chat request body (a mapping)"
    )


def test_jobs_do_not_change_the_output() -> None:
    scenarios = _pick("sweep-parallel-ring-mid-deletion", "single-tool", "broken-duplicate-id")
    plugin = load_plugin("reference")

    def run(jobs: int) -> list[tuple[str, str, int, str]]:
        return [
            (e.result.scenario, e.result.shape, e.result.budget, e.result.status)
            for e in run_events(plugin, scenarios, shapes=["openai-chat", "gemini"], jobs=jobs)
            if isinstance(e, CaseFinished)
        ]

    assert run(1) == run(2)


@pytest.mark.parametrize("kind", ["good", "bad"])
def test_the_tests_in_process_runner_judges_as_the_workers_do(kind: str) -> None:
    # tests/support/run_support.py serves the fairness tests: it must give the very results of
    # run_events (the time a case took aside), a good and a bad miniature over the whole corpus
    from dataclasses import replace

    from miniatures.bad import BAD
    from miniatures.good import GOOD
    from run_support import run_in_process

    from reference_impl.transcript import SHAPE_NAMES

    cls = GOOD["Compactor"] if kind == "good" else BAD["UnansweredCall"][0]
    plugin = Plugin(cls.__name__, cls.__name__, {shape: cls(shape) for shape in SHAPE_NAMES})
    corpus = load_corpus()
    forked = [
        e.result for e in run_events(plugin, corpus, timeout=30.0) if isinstance(e, CaseFinished)
    ]
    here = run_in_process(plugin, corpus)
    assert len(here) == len(forked) > 400
    assert [replace(r, seconds=0.0) for r in here] == [replace(r, seconds=0.0) for r in forked]
    assert any(r.status == "fail" for r in here) or kind == "good"


def test_plan_orders_scenarios_then_shapes_then_budgets() -> None:
    (sweep,) = _pick("sweep-parallel-ring-mid-deletion")
    cases = plan_cases([sweep], ["gemini", "openai-chat"])
    shapes = [c.shape for c in cases]
    assert shapes == sorted(shapes, key=["openai-chat", "gemini"].index)
    chat = [c.budget for c in cases if c.shape == "openai-chat"]
    assert chat == sorted(chat)
    assert chat[0] == 300
    assert chat[-1] == 800


def test_case_started_comes_before_the_plug_in_is_called(tmp_path: Path) -> None:
    # The plug-in waits for a file the consumer writes on the first CaseStarted: were CaseStarted
    # yielded after the case ran, the plug-in would give up and the case would be an error.
    gate = tmp_path / "started"

    def waits_for_case_started(messages: list[dict[str, Any]], budget: int) -> list[Any]:
        del budget
        for _ in range(2000):
            if gate.exists():
                return messages
            time.sleep(0.01)
        raise RuntimeError("no CaseStarted before the call")

    plugin = Plugin("gated", "gated", {"openai-chat": MessageListAssembler(waits_for_case_started)})
    order: list[tuple[str, int]] = []
    for event in run_events(plugin, _pick("single-tool"), shapes=["openai-chat"], timeout=60):
        if isinstance(event, CaseStarted):
            gate.touch()
            order.append(("started", event.index))
        elif isinstance(event, CaseFinished):
            assert "no CaseStarted" not in (event.result.reason or "")
            order.append(("finished", event.result.index))
    indexes = sorted({index for _, index in order})
    assert indexes
    for index in indexes:
        assert order.index(("started", index)) < order.index(("finished", index))


def test_events_frame_the_run() -> None:
    events = list(
        run_events(load_plugin("reference"), _pick("single-tool"), shapes=["openai-chat"])
    )
    assert isinstance(events[0], RunStarted)
    assert events[0].protocol_version == PROTOCOL_VERSION
    assert isinstance(events[-1], RunFinished)
    assert events[-1].exit_status == 0


def test_run_command_exit_status_and_reports(tmp_path: Path) -> None:
    runner = CliRunner()
    ok = runner.invoke(
        cli,
        [
            "run",
            "--scenarios",
            "single-tool,parallel-tools-2",
            "--shapes",
            "openai-chat",
            "--report-dir",
            str(tmp_path),
        ],
    )
    assert ok.exit_code == 0, ok.output
    assert {p.name for p in tmp_path.iterdir()} == {
        "run.jsonl",
        "report.md",
        "report.html",
        "junit.xml",
    }
    bad = runner.invoke(
        cli, ["run", "--impl", "fakes:OrphanResult", "--scenarios", "single-tool", "--no-reports"]
    )
    assert bad.exit_code == 1
    assert "provider_valid" in bad.output
    should_only = [
        "run",
        "--impl",
        "fakes:DropSystem",
        "--scenarios",
        "single-tool",
        "--no-reports",
    ]
    assert runner.invoke(cli, should_only).exit_code == 0
    assert runner.invoke(cli, [*should_only, "--strict"]).exit_code == 1


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--scenarios", "no-such-tag-or-path"], "neither a file or folder"),
        (["--shapes", "openai-chatt"], "unknown shape"),
        (["--impl", "nope_mod:f"], "PYTHONPATH"),
    ],
)
def test_run_command_bad_options_exit_2(args: list[str], message: str) -> None:
    out = CliRunner().invoke(cli, ["run", "--no-reports", *args])
    assert out.exit_code == 2
    assert message in out.output


def test_run_accepts_a_scenario_file(tmp_path: Path) -> None:
    folder = tmp_path / "must"
    folder.mkdir()
    (folder / "one.yaml").write_text(
        textwrap.dedent("""\
        version: 1
        scenarios:
          - id: tiny
            title: tiny
            shapes: [openai-chat]
            session: [{role: user, text: hi}]
            budget: 100
            expect: {outcome: assembled}
        """)
    )
    out = CliRunner().invoke(
        cli, ["run", "--scenarios", str(tmp_path), "--no-reports", "--format", "jsonl"]
    )
    assert out.exit_code == 0, out.output
    assert '"scenario": "tiny"' in out.output


_ODD_SCHEMA_SCENARIO = """\
version: 1
scenarios:
  - id: odd-schema
    title: a tool schema a provider would refuse
    shapes: [openai-chat, openai-responses]
    tools:
      - {name: f, parameters: {type: object, properties: {a: {type: string}}, required: [[a]]}}
    session: [{role: system, text: sys}, {role: user, text: "GOAL: x"}]
    budget: 4000
    expect: {outcome: either}
"""


def test_a_scenario_with_an_odd_tool_schema_is_run_and_reported(tmp_path: Path) -> None:
    # "required": [["a"]] made the reference counter raise while the run warmed up, before any
    # worker started: the run died with an internal error and wrote no report.
    folder = tmp_path / "must"
    folder.mkdir()
    (folder / "odd.yaml").write_text(_ODD_SCHEMA_SCENARIO)
    reports = tmp_path / "reports"
    out = CliRunner().invoke(
        cli, ["run", "--scenarios", str(tmp_path), "--report-dir", str(reports)]
    )
    assert out.exit_code == 0, out.output
    assert (reports / "run.jsonl").read_text().count('"scenario": "odd-schema"') == 2


def test_a_failure_while_warming_up_is_left_to_the_cases(monkeypatch: pytest.MonkeyPatch) -> None:
    # Warming up (the counters, validators and memo built before forking) is an optimization:
    # a harness bug met there is reported by the cases it touches, not by losing the run.
    def broken(*_: object) -> object:
        raise TypeError("a harness bug")

    monkeypatch.setattr(engine, "reference_counter", broken)
    cases = plan_cases(_pick("single-tool"), ("openai-chat",), None)
    engine.warm_up(cases, engine.load_library())  # does not raise
