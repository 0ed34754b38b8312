"""Baselines: a regression is detected, a new pass is reported, files are versioned and checked."""

from __future__ import annotations

import io
import json
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rich.console import Console

from conformance.baseline import (
    BASELINE_VERSION,
    compare_to_baseline,
    gate,
    read_baseline,
    to_baseline,
    write_baseline,
)
from conformance.checks import CheckResult
from conformance.errors import BaselineError
from conformance.events import CaseFinished, CaseResult, Event, RunFinished, RunStarted
from conformance.reporting.record import JsonLinesWriter, read_jsonl, record_from_events


def _case(index: int, scenario: str, status: str, *, budget: int = 4000) -> CaseResult:
    checks = (
        (CheckResult("provider_valid", "must", "fail", "rejected (rule C2)", "messages[1]"),)
        if status == "fail"
        else (CheckResult("provider_valid", "must", "pass"),)
    )
    return CaseResult(
        index=index,
        scenario=scenario,
        title=scenario,
        level="must",
        shape="openai-chat",
        dialect=None,
        budget=budget,
        status=status,  # type: ignore[arg-type]
        outcome="assembled",
        checks=checks if status != "error" else (),
        reason="the plug-in raised RuntimeError: boom" if status == "error" else None,
    )


BEFORE = [
    _case(0, "single-tool", "pass"),
    _case(1, "sweep", "pass", budget=300),
    _case(2, "sweep", "fail", budget=400),
    _case(3, "crashy", "error"),
    _case(4, "gone", "pass"),
]


def test_regression_detected_and_new_pass_reported(tmp_path: Path) -> None:
    path = tmp_path / "conformance.json"
    write_baseline(BEFORE, path)
    now = [
        _case(0, "single-tool", "pass"),
        _case(1, "sweep", "fail", budget=300),  # passed before: a regression
        _case(2, "sweep", "pass", budget=400),  # failed before: a new pass
        _case(3, "crashy", "error"),  # still failing: known, not a regression
        _case(5, "brand-new", "fail"),
    ]
    diff = compare_to_baseline(now, path)
    assert [c.key for c in diff.regressions] == ["sweep[openai-chat@300]"]
    assert diff.regressions[0].before == "pass"
    assert diff.regressions[0].after == "fail"
    assert diff.regressions[0].failed == ("provider_valid",)
    assert [c.key for c in diff.new_passes] == ["sweep[openai-chat@400]"]
    assert [c.key for c in diff.still_failing] == ["crashy[openai-chat@4000]"]
    assert [c.key for c in diff.new_cases] == ["brand-new[openai-chat@4000]"]
    assert [c.key for c in diff.removed_cases] == ["gone[openai-chat@4000]"]
    assert diff.unchanged_passes == 1
    assert diff.exit_status == 1

    out = io.StringIO()
    assert gate(now, path, console=Console(file=out, width=200)) == 1
    printed = out.getvalue()
    assert "regressions" in printed
    assert "sweep[openai-chat@300]" in printed
    assert "new passes" in printed
    assert "1 regression(s), 1 new pass(es)" in printed


def test_an_error_after_a_pass_is_a_regression_and_known_failures_pass_the_gate(
    tmp_path: Path,
) -> None:
    path = tmp_path / "b.json"
    write_baseline(BEFORE, path)
    now = [*BEFORE[:3], _case(3, "crashy", "error"), _case(4, "gone", "error")]
    diff = compare_to_baseline(now, path)
    assert [c.key for c in diff.regressions] == ["gone[openai-chat@4000]"]
    # The same failures as in the baseline: the gate is green although cases fail.
    assert compare_to_baseline(BEFORE, path).exit_status == 0
    assert gate(BEFORE, path, console=Console(file=io.StringIO())) == 0


def test_file_is_versioned_keyed_by_case_id_and_sorted(tmp_path: Path) -> None:
    path = tmp_path / "b.json"
    write_baseline(BEFORE, path)
    data = json.loads(path.read_text())
    assert data["format"] == "ctxconf.baseline"
    assert data["version"] == BASELINE_VERSION
    assert list(data["cases"]) == sorted(data["cases"])
    assert data["cases"]["sweep[openai-chat@400]"] == {
        "status": "fail",
        "level": "must",
        "failed": ["provider_valid"],
    }
    assert read_baseline(path).cases == to_baseline(BEFORE).cases


def test_from_a_saved_jsonl_run(tmp_path: Path) -> None:
    run = tmp_path / "run.jsonl"
    events: list[Event] = [
        RunStarted("mypkg:trim", ("openai-chat",), "may", 2, 2, "scenarios", "t", "0", 1, 10.0, 1),
        CaseFinished(BEFORE[0]),
        CaseFinished(BEFORE[2]),
        RunFinished(totals={}, statuses={}, seconds=0.1),  # a saved run is complete
    ]
    with run.open("w") as stream:
        writer = JsonLinesWriter(stream)
        for event in events:
            writer(event)
    baseline = write_baseline(run, tmp_path / "b.json")
    assert baseline.plugin == "mypkg:trim"
    assert set(baseline.cases) == {"single-tool[openai-chat@4000]", "sweep[openai-chat@400]"}
    # The record and the file give the same baseline.
    assert to_baseline(record_from_events(events)).cases == to_baseline(read_jsonl(run)).cases


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        (
            "{",
            "line 1: not valid JSON (Expecting property name enclosed in double quotes at column 2)",
        ),
        ('{"format": "other"}', "$.format"),
        ('{"format": "ctxconf.baseline", "version": 99, "cases": {}}', "$.version is 99"),
        ('{"format": "ctxconf.baseline", "version": 1, "cases": []}', "$.cases"),
        (
            '{"format": "ctxconf.baseline", "version": 1, "cases": {"a[x@1]": {"status": "meh"}}}',
            "pass, fail or error",
        ),
    ],
)
def test_bad_files_are_named_errors(tmp_path: Path, content: str, fragment: str) -> None:
    path = tmp_path / "b.json"
    path.write_text(content)
    with pytest.raises(BaselineError) as caught:
        read_baseline(path)
    assert fragment in caught.value.message
    assert str(path) in str(caught.value.where)


def test_missing_file_says_how_to_create_one(tmp_path: Path) -> None:
    with pytest.raises(BaselineError, match="--write-baseline"):
        read_baseline(tmp_path / "absent.json")


_statuses = st.sampled_from(["pass", "fail", "error"])


@settings(max_examples=60)
@given(st.dictionaries(st.sampled_from("abcdefgh"), st.tuples(_statuses, _statuses), max_size=8))
def test_every_case_lands_in_exactly_one_bucket(pairs: dict[str, tuple[str, str]]) -> None:
    before = [_case(i, k, old) for i, (k, (old, _)) in enumerate(sorted(pairs.items()))]
    now = [_case(i, k, new) for i, (k, (_, new)) in enumerate(sorted(pairs.items()))]
    diff = compare_to_baseline(now, to_baseline(before))
    regressions = {k for k, (old, new) in pairs.items() if old == "pass" and new != "pass"}
    assert {c.key.split("[")[0] for c in diff.regressions} == regressions
    fixed = {k for k, (old, new) in pairs.items() if old != "pass" and new == "pass"}
    assert {c.key.split("[")[0] for c in diff.new_passes} == fixed
    total = (
        len(diff.regressions)
        + len(diff.new_passes)
        + len(diff.still_failing)
        + diff.unchanged_passes
    )
    assert total == len(pairs)
    assert diff.ok == (not regressions)


def _should_failure(index: int, scenario: str) -> CaseResult:
    """Every must check passes; a should check (system_kept) fails."""
    checks = (
        CheckResult("provider_valid", "must", "pass"),
        CheckResult("system_kept", "should", "fail", "system text lost", "messages[0]"),
    )
    return replace(_case(index, scenario, "pass"), status="fail", checks=checks)


def test_a_new_should_failure_regresses_only_at_the_strict_gate() -> None:
    """The baseline gates on the run's levels: must by default, should strict."""
    before = [_case(0, "single-tool", "pass")]
    now = [_should_failure(0, "single-tool")]
    lenient = compare_to_baseline(now, to_baseline(before))
    assert lenient.regressions == ()
    assert lenient.exit_status == 0
    strict = compare_to_baseline(now, to_baseline(before), strict=True)
    assert [c.key for c in strict.regressions] == ["single-tool[openai-chat@4000]"]
    assert strict.regressions[0].failed == ("system_kept",)
    # A must failure is a regression at both gates.
    must = compare_to_baseline([_case(0, "single-tool", "fail")], to_baseline(before))
    assert [c.key for c in must.regressions] == ["single-tool[openai-chat@4000]"]
    # Fixing a should-only failure is a new pass only where it was gated.
    assert compare_to_baseline(before, to_baseline(now)).new_passes == ()
    assert len(compare_to_baseline(before, to_baseline(now), strict=True).new_passes) == 1


def test_the_tables_show_each_case_at_the_gate_not_its_status_over_every_level() -> None:
    """A case that failed a should check passes the must gate: the regression it became is
    shown as pass -> fail (not fail -> fail), and its failing checks name their levels."""
    before = [_should_failure(0, "single-tool")]
    now = [
        replace(
            _should_failure(0, "single-tool"),
            checks=(
                CheckResult("provider_valid", "must", "fail", "rejected", "messages[1]"),
                CheckResult("system_kept", "should", "fail", "system text lost", "messages[0]"),
            ),
        )
    ]
    diff = compare_to_baseline(now, to_baseline(before))
    (change,) = diff.regressions
    assert (change.before, change.after) == ("fail", "fail")  # over every level
    assert (change.before_gate, change.after_gate) == ("pass", "fail")  # at the must gate
    stream = io.StringIO()
    status = gate(now, to_baseline(before), console=Console(file=stream, width=200))
    assert status == 1
    row = next(line for line in stream.getvalue().splitlines() if "single-tool" in line)
    assert row.split("│")[2:4] == [" pass          ", " fail       "]
    assert "provider_valid (must), system_kept (should)" in row
    assert "before (must)" in stream.getvalue()


def test_a_baseline_of_another_ctxconf_version_is_noted() -> None:
    """New scenarios and re-recorded verdicts come with a release: the comparison says when
    the baseline was written by another version, as it does for another plug-in or level."""
    before = replace(to_baseline([_case(0, "single-tool", "pass")]), ctxconf_version="0.0.9")
    now = replace(to_baseline([_case(0, "single-tool", "pass")]), ctxconf_version="0.2.0")
    (note,) = compare_to_baseline(now, before).notes
    assert note == (
        "the baseline was written by ctxconf 0.0.9, this run is ctxconf 0.2.0: its scenarios "
        "and recorded verdicts may differ"
    )
    assert compare_to_baseline(now, replace(before, ctxconf_version="0.2.0")).notes == ()


def _should_error(index: int, scenario: str) -> CaseResult:
    """Every must check passes; a should check (system_kept) raised: the case's status is
    ``error``, its must level passes."""
    checks = (
        CheckResult("provider_valid", "must", "pass"),
        CheckResult("system_kept", "should", "error", "check raised", "KeyError: 'x'"),
    )
    return replace(_case(index, scenario, "pass"), status="error", checks=checks)


def test_a_should_check_that_raised_is_read_at_the_gate_as_the_exit_status_reads_it(
    tmp_path: Path,
) -> None:
    """A should check that raised does not fail a run gated at must (level_status), so it is
    no regression in the baseline comparison either; strict, it is one, shown as an error."""
    before = [_case(0, "single-tool", "pass")]
    now = [_should_error(0, "single-tool")]
    assert now[0].level_status("must") == "pass"  # the plain gate passes it
    lenient = compare_to_baseline(now, to_baseline(before))
    assert lenient.regressions == ()
    assert lenient.exit_status == 0
    strict = compare_to_baseline(now, to_baseline(before), strict=True)
    (change,) = strict.regressions
    assert (change.before_gate, change.after_gate) == ("pass", "error")
    # Through the file too: which checks raised is kept, and read back.
    path = tmp_path / "b.json"
    write_baseline(now, path)
    assert json.loads(path.read_text())["cases"]["single-tool[openai-chat@4000]"] == {
        "status": "error",
        "level": "must",
        "failed": ["system_kept"],
        "errored": ["system_kept"],
    }
    assert read_baseline(path).cases == to_baseline(now).cases
    back = compare_to_baseline(before, path)
    assert (back.new_passes, back.unchanged_passes) == ((), 1)  # it passed the gate before too
    # A plug-in error is a must error at every gate, written with no check named.
    crashed = compare_to_baseline([_case(0, "single-tool", "error")], to_baseline(before))
    assert [(c.before_gate, c.after_gate) for c in crashed.regressions] == [("pass", "error")]
