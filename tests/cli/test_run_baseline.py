"""``ctxconf run --write-baseline`` / ``--baseline`` end to end."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from conformance.cli import cli

SCENARIOS = "parallel-tools-2,mid-ring-deletion"


def _run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(
        cli,
        ["run", "--shapes", "openai-chat", "--scenarios", SCENARIOS, "--no-reports", *args],
    )
    return result.exit_code, result.stderr


@pytest.fixture
def reference_baseline(tmp_path: Path) -> Path:
    path = tmp_path / "baseline.json"
    status, _ = _run("--write-baseline", str(path))
    assert status == 0
    return path


def test_baseline_file_records_every_case(reference_baseline: Path) -> None:
    data = json.loads(reference_baseline.read_text())
    assert data["version"] == 1
    assert data["cases"]
    assert all(case["status"] == "pass" for case in data["cases"].values())


def test_a_regression_against_the_baseline_exits_1(reference_baseline: Path) -> None:
    status, stderr = _run("--impl", "fakes:OrphanResult", "--baseline", str(reference_baseline))
    assert status == 1
    assert "regression" in stderr.lower()


def test_new_passes_are_reported_and_do_not_fail(tmp_path: Path) -> None:
    broken = tmp_path / "broken.json"
    status, _ = _run("--impl", "fakes:OrphanResult", "--write-baseline", str(broken))
    assert status == 1  # the fake fails must cases
    status, stderr = _run("--baseline", str(broken))
    assert status == 0
    assert "new pass" in stderr.lower()


def test_an_unreadable_baseline_is_a_one_line_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    status, stderr = _run("--baseline", str(bad))
    assert status == 2
    assert str(bad) in stderr or "bad.json" in stderr


def test_the_reports_name_the_regressions_the_gate_decided_on(
    reference_baseline: Path, tmp_path: Path
) -> None:
    """report.md is the pull-request comment: with a baseline it says which cases regressed,
    and the terminal summary, the Markdown and the HTML name the gate with the exit status."""
    reports = tmp_path / "reports"
    result = CliRunner().invoke(
        cli,
        [
            "run",
            "--shapes",
            "openai-chat",
            "--scenarios",
            SCENARIOS,
            "--impl",
            "fakes:OrphanResult",
            "--baseline",
            str(reference_baseline),
            "--report-dir",
            str(reports),
        ],
    )
    assert result.exit_code == 1
    assert "exit status 1 (gate: baseline)" in result.stdout
    footer = json.loads((reports / "run.jsonl").read_text().splitlines()[-1])
    regressed = footer["baseline"]["regressions"]
    assert regressed
    assert footer["gate"] == "baseline"
    markdown = (reports / "report.md").read_text()
    assert "exit status 1 (gate: baseline)" in markdown
    assert "Regressions (passed the gate in the baseline, fail now):" in markdown
    assert all(f"- `{key}`" in markdown for key in regressed)
    html = (reports / "report.html").read_text()
    assert "exit status 1 (gate: baseline)" in html
    assert "<h2>Baseline</h2>" in html


def test_a_run_stopped_early_writes_no_baseline(tmp_path: Path) -> None:
    """A baseline of the cases a stopped run got to would leave the others ungated: later runs
    would list them as new cases, never as regressions. It is not written, and says why."""
    path = tmp_path / "baseline.json"
    path.write_text("kept as it was\n")
    result = CliRunner().invoke(
        cli,
        [
            "run",
            "--shapes",
            "openai-chat",
            "--max-seconds",
            "0.01",
            "--no-reports",
            "--write-baseline",
            str(path),
        ],
    )
    assert result.exit_code == 1
    assert "case(s) not" in result.stdout
    assert f"baseline: NOT written to {path}" in result.stderr
    assert path.read_text() == "kept as it was\n"


def test_a_run_with_no_case_exits_2_and_writes_no_baseline(tmp_path: Path) -> None:
    """A plain function is not judged on dialect cases: a selection of only those runs nothing,
    and a gate that passed on nothing would let CI go green untested."""
    path = tmp_path / "baseline.json"
    result = CliRunner().invoke(
        cli,
        [
            "run",
            "--impl",
            "fakes:plain_trimmer",
            "--scenarios",
            "ollama-no-null-content",
            "--report-dir",
            str(tmp_path / "reports"),
            "--write-baseline",
            str(path),
        ],
    )
    assert result.exit_code == 2
    assert "exit status 2 (gate: no cases)" in result.stdout
    assert "no case to run" in result.stderr
    assert "1 left out" in result.stderr
    assert f"baseline: NOT written to {path}: no case ran" in result.stderr
    assert not path.exists()
    footer = json.loads((tmp_path / "reports" / "run.jsonl").read_text().splitlines()[-1])
    assert (footer["exit_status"], footer["gate"]) == (2, "no cases")


def test_re_writing_an_unchanged_baseline_leaves_the_file_as_it_was(tmp_path: Path) -> None:
    # Its `created` kept: a committed baseline shows in a pull request only when something moved.
    path = tmp_path / "baseline.json"
    assert _run("--write-baseline", str(path))[0] == 0
    data = json.loads(path.read_text())
    data["created"] = "2026-01-01T00:00:00+00:00"
    path.write_text(json.dumps(data, indent=2) + "\n")
    before = path.read_text()
    assert _run("--write-baseline", str(path))[0] == 0
    assert json.loads(path.read_text())["created"] == "2026-01-01T00:00:00+00:00"
    assert json.loads(path.read_text()) == json.loads(before)
    # a case that moved makes a new baseline, with a new date
    assert _run("--impl", "fakes:OrphanResult", "--write-baseline", str(path))[0] == 1
    assert json.loads(path.read_text())["created"] != "2026-01-01T00:00:00+00:00"


def test_a_run_with_no_case_exits_2_with_a_baseline_too(reference_baseline: Path) -> None:
    """Against a baseline every case of it would be 'removed', no regression: the gate must
    still be 'no cases' (exit 2), not a passing baseline comparison of nothing."""
    result = CliRunner().invoke(
        cli,
        [
            "run",
            "--impl",
            "fakes:plain_trimmer",
            "--scenarios",
            "ollama-no-null-content",
            "--no-reports",
            "--baseline",
            str(reference_baseline),
        ],
    )
    assert result.exit_code == 2
    assert "exit status 2 (gate: no cases)" in result.stdout
    assert "no case to run" in result.stderr


def test_the_baseline_summary_is_one_line_in_a_ci_log(reference_baseline: Path) -> None:
    # Off a terminal rich wrapped stderr at 80 columns, mid-phrase ("2 unchanged / pass(es)").
    status, stderr = _run("--baseline", str(reference_baseline))
    assert status == 0
    (summary,) = [line for line in stderr.splitlines() if line.startswith("baseline:")]
    assert summary.endswith("0 new, 0 removed case(s)")


def test_a_baseline_that_is_not_json_is_worded_through_json_problem(tmp_path: Path) -> None:
    # it was "not JSON (Expecting value at line 2)", the column left out
    bad = tmp_path / "baseline.json"
    bad.write_text('{"format":\n  }', encoding="utf-8")
    status, err = _run("--baseline", str(bad))
    assert status == 2
    assert "line 2: not valid JSON (Expecting value at column 3)" in err


def test_a_run_report_given_as_baseline_is_named_with_how_to_write_one(tmp_path: Path) -> None:
    """Read as one JSON document, a run.jsonl was `not JSON (Extra data at line 2)`."""
    reports = tmp_path / "reports"
    CliRunner().invoke(cli, ["run", "--shapes", "openai-chat", "--scenarios", SCENARIOS,
                             "--report-dir", str(reports)])  # fmt: skip
    status, err = _run("--baseline", str(reports / "run.jsonl"))
    assert status == 2
    assert "this is a run's report (ctxconf.run, one JSON object a line), not a baseline" in err
    assert "--write-baseline" in err
