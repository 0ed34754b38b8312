"""Reports derived from a small fixed run: snapshots for terminal, markdown and junit; the JSON
lines round trip; the HTML page is self-contained; ``ctxconf report`` re-renders a saved run."""

from __future__ import annotations

import base64
import dataclasses
import gzip
import html
import io
import json
import re
import shutil
import subprocess
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import Path

import pytest
from click.testing import CliRunner
from rich.console import Console

from conformance.checks.registry import CheckResult
from conformance.cli import cli
from conformance.errors import ReportFileError
from conformance.events import CaseResult
from conformance.reporting import (
    JsonLinesWriter,
    RunRecord,
    read_jsonl,
    render_html,
    render_junit,
    render_markdown,
    terminal_renderable,
)
from conformance.reporting.matrix import failing_cases
from conformance.reporting.record import REPORT_FORMAT, REPORT_VERSION

SHAPES = ("openai-chat", "anthropic-messages")


def _case(
    index: int,
    scenario: str,
    shape: str,
    budget: int,
    *,
    fail: str | None = None,
    error: str | None = None,
) -> CaseResult:
    checks = (
        CheckResult("provider_valid", "must", "pass"),
        CheckResult(
            "within_budget",
            "should",
            "fail" if fail else "pass",
            "over budget" if fail else "",
            fail or "",
        ),
    )
    return CaseResult(
        index=index,
        scenario=scenario,
        title=f"title of {scenario}",
        level="must",
        shape=shape,
        dialect=None,
        budget=budget,
        status="error" if error else "fail" if fail else "pass",
        outcome="error" if error else "assembled",
        checks=() if error else checks,
        sweep=scenario == "sweep",
        verdict=None if error else {"verdict": "accept", "status": 200, "provenance": "emulated"},
        tokens=None if error else budget - 10,
        counter="tiktoken:o200k_base/openai-chat",
        reason=error,
        seconds=0.001,
        input={"messages": [{"role": "user", "content": "<hi & bye>"}]}
        if (fail or error)
        else None,
        output={"messages": []} if fail else None,
    )


@pytest.fixture
def record() -> RunRecord:
    cases = (
        _case(0, "single-tool", "openai-chat", 4000),
        _case(
            1,
            "single-tool",
            "anthropic-messages",
            4000,
            error="the plug-in raised RuntimeError: boom",
        ),
        _case(
            2, "sweep", "openai-chat", 300, fail="410 tokens by tiktoken > budget 300 (over by 110)"
        ),
        _case(3, "sweep", "openai-chat", 400),
        _case(4, "sweep", "anthropic-messages", 300),
    )
    header = {
        "type": "header",
        "format": REPORT_FORMAT,
        "version": REPORT_VERSION,
        "plugin": "fixed",
        "shapes": list(SHAPES),
        "started": "2026-01-01T00:00:00+00:00",
        "ctxconf_version": "0.0",
        "protocol_version": 1,
    }
    footer = {
        "type": "footer",
        "statuses": {"pass": 3, "fail": 1, "error": 1},
        "seconds": 1.5,
        "hung_calls": 0,
        "exit_status": 1,
    }
    return RunRecord(header, cases, footer)


def test_terminal_matrix_snapshot(record: RunRecord, snapshot) -> None:  # type: ignore[no-untyped-def]
    console = Console(file=io.StringIO(), width=110, color_system=None, force_terminal=False)
    console.print(terminal_renderable(record))
    assert console.file.getvalue() == snapshot  # type: ignore[attr-defined]


def test_markdown_snapshot(record: RunRecord, snapshot) -> None:  # type: ignore[no-untyped-def]
    assert render_markdown(record) == snapshot


def test_junit_snapshot(record: RunRecord, snapshot) -> None:  # type: ignore[no-untyped-def]
    text = render_junit(record)
    assert text == snapshot
    root = ET.fromstring(text.split("\n", 1)[1])
    suites = {s.get("name"): s for s in root}
    # the sweep case failed a should check only: below the must gate, skipped (not a failure)
    assert suites["openai-chat"].get("failures") == "0"
    assert suites["openai-chat"].get("skipped") == "1"
    assert suites["anthropic-messages"].get("errors") == "1"


def test_level_totals_count_plugin_errors_as_must(record: RunRecord) -> None:
    totals = record.totals
    assert (totals["must"].passed, totals["must"].errors) == (4, 1)
    assert (totals["should"].passed, totals["should"].failed) == (3, 1)


def test_jsonl_round_trip_through_the_writer(tmp_path: Path) -> None:
    from conformance.engine import run_events
    from conformance.loading import load_plugin
    from conformance.scenarios import load_corpus

    scenarios = [s for s in load_corpus() if s.id in {"single-tool", "broken-orphan-result"}]
    events = list(run_events(load_plugin("reference"), scenarios, shapes=["openai-chat"]))
    stream = io.StringIO()
    writer = JsonLinesWriter(stream)
    for event in events:
        writer(event)
    lines = [json.loads(line) for line in stream.getvalue().splitlines()]
    assert [line["type"] for line in lines] == ["header", "case", "case", "footer"]
    assert lines[0]["protocol_version"] == 1
    assert lines[0]["version"] == REPORT_VERSION
    path = tmp_path / "run.jsonl"
    path.write_text(stream.getvalue())
    record = read_jsonl(path)
    assert [c.scenario for c in record.cases] == ["broken-orphan-result", "single-tool"]
    assert all(c.verdict is None or c.verdict["provenance"] for c in record.cases)


def test_the_writer_keeps_a_line_holding_a_number_json_has_not(tmp_path: Path) -> None:
    # run.jsonl is strict JSON; a NaN reaching a line (a harness bug, an extra of a plug-in's
    # event) is written as its name, and the line, the report, is still written.
    from conformance.engine import run_events
    from conformance.events import RunFinished
    from conformance.loading import load_plugin
    from conformance.scenarios import load_corpus

    scenarios = [s for s in load_corpus() if s.id == "single-tool"]
    events = list(run_events(load_plugin("reference"), scenarios, shapes=["openai-chat"]))
    finished = next(e for e in events if isinstance(e, RunFinished))
    odd = dataclasses.replace(
        finished, extra={**finished.extra, "ratio": float("nan"), "worst": [float("-inf")]}
    )
    stream = io.StringIO()
    writer = JsonLinesWriter(stream)
    for event in events:
        writer(odd if event is finished else event)
    footer = json.loads(stream.getvalue().splitlines()[-1], parse_constant=_refuse)
    assert (footer["ratio"], footer["worst"]) == ("NaN", ["-Infinity"])


def _refuse(name: str) -> object:
    raise AssertionError(f"{name} written as a number")


def test_jsonl_round_trip(record: RunRecord, tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    lines = [json.dumps(dict(record.header))] + [json.dumps(c.to_dict()) for c in record.cases]
    path.write_text("\n".join([*lines, json.dumps(dict(record.footer))]) + "\n")
    again = read_jsonl(path)
    assert again.cases == record.cases
    assert again.exit_status == 1


def _case_bodies(page: str) -> dict[str, str]:
    """The page's compressed case bodies, decoded as the browser does (base64, gzip, JSON)."""
    blob = page.split('id="case-bodies">', 1)[1].split("</script>", 1)[0]
    return json.loads(gzip.decompress(base64.b64decode(blob)))


def test_html_is_self_contained(record: RunRecord) -> None:
    page = render_html(record)
    assert "<script src" not in page
    assert "<link" not in page
    assert "@import" not in page
    bodies = _case_bodies(page)
    assert sorted(bodies) == ["1", "2"]  # the error and the failure, not the passing cases
    for body in bodies.values():  # bodies escaped, shown side by side
        assert "&lt;hi &amp; bye&gt;" in body
        assert "<hi & bye>" not in body
    assert "<hi" not in page
    assert 'id="f-level"' in page
    assert 'id="f-shape"' in page
    assert 'id="f-status"' in page


def test_verdict_line_states_provenance_and_the_evidence_of_a_named_rule() -> None:
    from conformance.reporting.matrix import verdict_line

    rejected = {
        "verdict": "reject",
        "status": 400,
        "rule": "A1",
        "evidence": "documented",
        "provenance": "recorded-emulated",
        "cassette": "anthropic-messages/x.yaml#1",
        "stale_cassette": {"message": "..."},
    }
    assert verdict_line(rejected) == (
        "verdict: reject 400 rule A1 (evidence documented; provenance recorded-emulated, "
        "anthropic-messages/x.yaml#1) [STALE CASSETTE]"
    )
    accepted = {"verdict": "accept", "status": 200, "rule": None, "provenance": "recorded-live"}
    assert verdict_line(accepted) == "verdict: accept 200 (provenance recorded-live)"
    assert verdict_line(None) == "verdict: none (nothing was assembled to judge)"


def test_html_loads_nothing_from_outside(record: RunRecord) -> None:
    page = render_html(record)
    bodies = "".join(_case_bodies(page).values())
    for text in (page, bodies):
        for external in ("src=", "url(", "@import", "<link", "<iframe", "<img"):
            assert external not in text, external
        # Links stay on the page: matrix cells point at their cases.
        assert re.findall(r'href="([^"]*)"', text) == re.findall(r'href="(#case-\d+)"', text)


def test_failing_matrix_cells_link_to_their_cases(record: RunRecord) -> None:
    page = render_html(record)
    links = re.findall(r'<td data-col="([^"]+)" class="(\w+)"><a href="#case-(\d+)"', page)
    # single-tool errs in anthropic-messages (case 1); the sweep fails in openai-chat (case 2),
    # a should check only: below the must gate, the cell's class says so (△, not a failure)
    assert links == [("anthropic-messages", "error", "1"), ("openai-chat", "below", "2")]
    assert "△ k/n failed below the gate" in page
    for _, _, index in links:
        assert f'<details id="case-{index}" data-case' in page
    assert page.count("<a href") == 2  # passing cells have no case to open


def test_a_sweep_case_body_charts_every_budget_of_its_sweep(record: RunRecord) -> None:
    body = _case_bodies(render_html(record))["2"]
    chart = body.split('<svg class="sweep"', 1)[1].split("</svg>", 1)[0]
    # The sweep in openai-chat has budgets 300 (fail) and 400 (pass); anthropic's is another chart.
    assert chart.count("<circle") == 2
    assert "budget 300: fail" in chart
    assert "budget 400: pass" in chart
    assert "fails at 300; passes at 400" in body


def test_a_large_failing_run_gives_a_light_page() -> None:
    """425 failing cases made a 3.4 MB page; bodies are compressed now."""
    messages = [
        {"role": "user" if i % 2 else "assistant", "content": f"turn {i}: " + "ops log " * 40}
        for i in range(24)
    ]
    cases = tuple(
        CaseResult(
            index=i,
            scenario=f"scenario-{i // 5}",
            title="t",
            level="must",
            shape="openai-chat",
            dialect=None,
            budget=300 + 20 * (i % 5),
            status="fail",
            outcome="assembled",
            sweep=True,
            tokens=280,
            input={"model": "gpt-4o-mini", "messages": messages},
            output={"model": "gpt-4o-mini", "messages": messages[-3:]},
        )
        for i in range(425)
    )
    header = {"type": "header", "format": REPORT_FORMAT, "version": REPORT_VERSION}
    page = render_html(RunRecord(header, cases, {"type": "footer", "exit_status": 1}))
    raw = sum(len(json.dumps(c.input)) + len(json.dumps(c.output)) for c in cases)
    assert raw > 3_000_000
    assert len(page.encode()) < 1_000_000
    assert len(_case_bodies(page)) == 425


class _Elements(HTMLParser):
    """The elements the page's filter script touches, with their data attributes."""

    def __init__(self) -> None:
        super().__init__()
        self.found: list[dict[str, object]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        data = {k.removeprefix("data-"): v or "" for k, v in attrs if k.startswith("data-")}
        if data or tag == "select":
            self.found.append({"tag": tag, "id": dict(attrs).get("id") or "", "data": data})


# A minimal DOM for the selectors the script uses; prints each element's display after a filter.
_DOM_STUB = """
const els = JSON.parse(process.argv[1]), values = JSON.parse(process.argv[2]);
els.forEach(e => { e.dataset = e.data; e.style = {display: ''}; e.value = values[e.id] || '';
                   e.addEventListener = () => {}; });
const match = (sel, e) => sel === '[data-case]' ? 'case' in e.data
  : sel === 'tr[data-row]' ? e.tag === 'tr' && 'row' in e.data
  : sel === '[data-col]' ? 'col' in e.data
  : sel === '.filters select' ? e.tag === 'select' : false;
global.document = {
  getElementById: id => els.find(e => e.id === id),
  querySelectorAll: sel => els.filter(e => match(sel, e)),
};
eval(process.argv[3]);
console.log(JSON.stringify(els.filter(e => e.tag !== 'select').map(
  e => [e.tag, e.data.scenario || e.data.col || e.data.shape || '', e.style.display])));
"""


def _displayed(page: str, **values: str) -> dict[tuple[str, str], list[str]]:
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed: the HTML filter script cannot be executed")
    parser = _Elements()
    parser.feed(page)
    script = page.split("<script>")[1].split("</script>", maxsplit=1)[0]
    ids = {f"f-{k}": v for k, v in values.items()}
    out = subprocess.run(
        [node, "-e", _DOM_STUB, json.dumps(parser.found), json.dumps(ids), script],
        capture_output=True,
        text=True,
        check=True,
    )
    shown: dict[tuple[str, str], list[str]] = {}
    for tag, name, display in json.loads(out.stdout):
        shown.setdefault((tag, name), []).append(display)
    return shown


def test_html_filters_hide_what_does_not_match(record: RunRecord) -> None:
    page = render_html(record)  # rows: single-tool, then sweep
    everything = _displayed(page)
    assert all(d == "" for displays in everything.values() for d in displays)
    # A fail in openai-chat: only the sweep row, the chat column, and the failing case stay.
    failing_chat = _displayed(page, status="fail", shape="openai-chat")
    rows = failing_chat[("tr", "")]
    assert rows == ["none", ""]  # single-tool has no failing chat case; sweep has one
    assert failing_chat[("th", "openai-chat")] == [""]
    assert failing_chat[("th", "anthropic-messages")] == ["none"]
    assert failing_chat[("details", "openai-chat")] == [""]
    assert failing_chat[("details", "anthropic-messages")] == ["none"]
    # Errors happened only in anthropic-messages: filtering them in openai-chat shows no row.
    assert set(_displayed(page, status="error", shape="openai-chat")[("tr", "")]) == {"none"}
    assert _displayed(page, status="error")[("tr", "")] == ["", "none"]
    assert set(_displayed(page, level="may")[("tr", "")]) == {"none"}


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("not json\n", r"not valid JSON \(Expecting value at column 1\)"),
        ('{"type": "case"}\n', "must be a 'ctxconf.run' header"),
        (
            json.dumps({"type": "header", "format": REPORT_FORMAT, "version": 99}) + "\n",
            "report version 99",
        ),
    ],
)
def test_read_jsonl_names_the_problem(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(content)
    with pytest.raises(ReportFileError, match=message) as info:
        read_jsonl(path)
    assert str(path) in (info.value.where or "")


@pytest.mark.parametrize(
    ("line", "key", "value", "message"),
    [
        ("case", "status", 5, "unknown case status 5"),
        ("case", "status", "skipped", "unknown case status 'skipped'"),
        ("case", "dialect", ["mistral"], "'dialect' is list"),
        ("case", "verdict", 5, "'verdict' is int 5, expected an object"),
        ("case", "markup", "x", "'markup' is str 'x', expected an object"),
        ("header", "shapes", 5, "'shapes' is int 5, expected an array"),
        ("header", "shapes", [["openai-chat"]], "'shapes' must be an array of shape names"),
        ("footer", "exit_status", "1", "'exit_status' is str '1', expected an integer"),
        ("footer", "exit_status", None, "'exit_status' is NoneType None"),
    ],
)
def test_report_names_a_field_of_the_wrong_type_in_every_format(
    record: RunRecord, tmp_path: Path, line: str, key: str, value: object, message: str
) -> None:
    # a saved run edited by hand or by another tool: exit 2 naming the line, never exit 70
    lines = [dict(record.header), *(c.to_dict() for c in record.cases), dict(record.footer)]
    target = {"header": lines[0], "case": lines[1], "footer": lines[-1]}[line]
    target[key] = value
    path = tmp_path / "run.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    for fmt in ("md", "html", "junit"):
        result = CliRunner().invoke(cli, ["report", str(path), "--format", fmt])
        assert result.exit_code == 2, (fmt, result.output)
        assert message in result.stderr, (fmt, result.stderr)
        assert "internal error" not in result.stderr


def test_report_command_rerenders_a_saved_run(record: RunRecord, tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    lines = [json.dumps(dict(record.header))] + [json.dumps(c.to_dict()) for c in record.cases]
    path.write_text("\n".join([*lines, json.dumps(dict(record.footer))]) + "\n")
    runner = CliRunner()
    out = runner.invoke(cli, ["report", str(path), "--format", "md"])
    assert out.exit_code == 0
    assert out.output == render_markdown(read_jsonl(path))
    html = tmp_path / "r.html"
    assert (
        runner.invoke(cli, ["report", str(path), "--format", "html", "--out", str(html)]).exit_code
        == 0
    )
    assert html.read_text().startswith("<!DOCTYPE html>")
    bad = runner.invoke(cli, ["report", str(tmp_path / "missing.jsonl")])
    assert bad.exit_code == 2
    assert "missing.jsonl" in bad.output


def test_one_case_over_one_shape_is_counted_in_the_singular(record: RunRecord) -> None:
    """No "1 shapes" / "1 cases" in any human-readable report."""
    one = RunRecord(
        {**record.header, "shapes": ["openai-chat"]},
        record.cases[:1],
        {**record.footer, "statuses": {"pass": 1}},
    )
    assert "1 case over 1 shape; exit status" in render_markdown(one)
    assert "1 case over 1 shape; exit status" in render_html(one)
    console = Console(file=io.StringIO(), width=110, color_system=None, force_terminal=False)
    console.print(terminal_renderable(one))
    text = console.file.getvalue()  # type: ignore[attr-defined]
    assert "1 case, 1 passed in" in text
    assert "1 cases" not in text


def _junit_of(case: CaseResult, *, strict: bool) -> tuple[ET.Element, ET.Element]:
    """junit.xml of a one-case run (exit status 0): its test suite and its test case."""
    header = {"type": "header", "plugin": "p", "shapes": ["openai-chat"], "strict": strict}
    record = RunRecord(header, (case,), {"type": "footer", "exit_status": 0})
    suite = ET.fromstring(render_junit(record)).find("testsuite")
    assert suite is not None
    element = suite.find("testcase")
    assert element is not None
    return suite, element


def _junit_case(level: str) -> CaseResult:
    failing = CheckResult(
        "within_budget" if level == "must" else "order_preserved", level, "fail", "t", "m"
    )
    return dataclasses.replace(
        _case(0, "single-tool", "openai-chat", 4000, fail="m"), checks=(failing,)
    )


@pytest.mark.parametrize(
    ("level", "strict", "tag"),
    [("must", False, "failure"), ("should", False, "skipped"), ("should", True, "failure")],
)
def test_junit_fails_a_case_only_at_the_run_s_gate(level: str, strict: bool, tag: str) -> None:
    # A case that failed only checks below the gate is skipped (as pytest writes an xfail), so a
    # test-report step agrees with the exit status; with --strict a should failure fails.
    suite, case = _junit_of(_junit_case(level), strict=strict)
    assert [child.tag for child in case if child.tag != "properties"] == [tag]
    assert suite.get("failures") == ("1" if tag == "failure" else "0")
    assert suite.get("skipped") == ("1" if tag == "skipped" else "0")
    if tag == "skipped":
        assert case.find("skipped").get("type") == "ctxconf.below-gate"  # type: ignore[union-attr]


def test_failing_cases_list_must_failures_first_so_a_cut_list_shows_them() -> None:
    # A terminal cut to its first problems showed only should failures where 17 must failures
    # decided the exit status.
    def failing(index: int, level: str) -> CaseResult:
        check = CheckResult("c", level, "fail", "t", "m")
        return dataclasses.replace(
            _case(index, f"s{index}", "openai-chat", 4000, fail="m"), checks=(check,)
        )

    cases = [failing(0, "may"), failing(1, "should"), failing(2, "must"), failing(3, "should")]
    errored = _case(4, "s4", "openai-chat", 4000, error="boom")
    assert [c.index for c in failing_cases([*cases, errored])] == [2, 4, 1, 3, 0]


def test_junit_a_should_check_that_raised_is_below_the_must_gate() -> None:
    # The exit status reads a case by level (a should check that raised leaves the must gate
    # passing): junit.xml says the same, not an <error> on a run that exited 0.
    passing = CheckResult("within_budget", "must", "pass", "t", "m")
    raised = CheckResult("order_preserved", "should", "error", "t", "boom")
    case = dataclasses.replace(
        _case(0, "single-tool", "openai-chat", 4000), status="error", checks=(passing, raised)
    )
    for strict, tag in ((False, "skipped"), (True, "error")):
        suite, element = _junit_of(case, strict=strict)
        assert [child.tag for child in element if child.tag != "properties"] == [tag]
        assert suite.get("errors") == ("1" if tag == "error" else "0")
        assert suite.get("skipped") == ("1" if tag == "skipped" else "0")


def test_the_cases_a_plain_function_is_not_judged_on_are_said_in_the_terminal_and_md(
    record: RunRecord,
) -> None:
    # They were counted in run.jsonl's footer only: a new user read 91 cases against 108.
    footer = {**record.footer, "not_judged": {"cases": 17, "why": "a plain message function"}}
    counted = RunRecord(record.header, record.cases, footer)
    console = Console(file=io.StringIO(), width=200, color_system=None, force_terminal=False)
    console.print(terminal_renderable(counted))
    assert "17 case(s) not judged: a plain message function" in console.file.getvalue()  # type: ignore[attr-defined]
    assert "17 case(s) not judged: a plain message function." in render_markdown(counted)
    assert "not judged" not in render_markdown(record)


@pytest.mark.parametrize(
    "reason",
    [
        "interrupted by SIGINT",
        "stopped at the run's wall-time limit (--max-seconds 5)",
        "stopped after 3 consecutive timed-out cases (--max-consecutive-timeouts 3)",
    ],
)
def test_a_stopped_or_interrupted_run_is_said_in_md_and_html(
    record: RunRecord, reason: str
) -> None:
    footer = {**record.footer, "stopped": reason, "interrupted": "SIG" in reason, "not_run": 7}
    stopped = RunRecord(record.header, record.cases, footer)
    note = f"Run {reason}: 7 case(s) not run."
    assert f"**{note}**" in render_markdown(stopped)
    assert f'<p class="fail"><b>{html.escape(note)}</b></p>' in render_html(stopped)
    for page in (render_markdown(record), render_html(record)):
        assert "case(s) not run" not in page


@pytest.mark.parametrize("reports", [True, False])
def test_the_problems_left_out_say_where_they_are(record: RunRecord, reports: bool) -> None:
    """The terminal lists the first problems; the rest are in the reports, or, when the run
    wrote none (``--no-reports``), printed by another format."""
    console = Console(file=io.StringIO(), width=110, color_system=None, force_terminal=False)
    console.print(terminal_renderable(record, max_problems=0, reports=reports))
    text = console.file.getvalue()  # type: ignore[attr-defined]
    if reports:
        assert "more (see the reports)" in text
    else:
        assert "see the reports" not in text
        assert "more (--no-reports wrote none: --format jsonl prints them all)" in text


def test_a_cell_fails_at_the_gate_or_below_it() -> None:
    """✗ when a case fails a check the exit status counts; △ when its failures are all below
    the gate (a should check in a run gated on must), ✗ again for a --strict run."""
    from conformance.reporting.matrix import Cell

    below = _case(0, "sweep", "openai-chat", 300, fail="over")  # within_budget at should
    must = dataclasses.replace(
        below,
        checks=(CheckResult("provider_valid", "must", "fail", "rejected", "C2"),),
    )
    fine = _case(1, "sweep", "openai-chat", 400)
    assert Cell((below, fine)).text == "△ 1/2"
    assert Cell((below,)).text == "△"
    assert Cell((below, must)).text == "✗ 2/2"
    assert Cell((below,), ("must", "should")).text == "✗"
    assert Cell((fine,)).text == "✓"
    assert not Cell((fine,)).below_gate
