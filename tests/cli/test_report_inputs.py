"""Saved runs, baselines and report folders: named exit-2 errors, nothing lost.

A binary or over-deep ``run.jsonl`` or baseline is a named error; a run file cut short (no
footer) is not rendered as a clean run, and its last line cut mid-way (a run killed while writing)
is named with the parser's words and column; ``--partial`` renders the cases recorded, marked as
cut short; an uncreatable ``--report-dir`` or baseline folder is refused before the run starts.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_support import invoke

DEEP = "[" * 10_000 + "]" * 10_000


def _assert_named(args: list[str], named: str, *words: str) -> None:
    code, _, err = invoke(args)
    assert code == 2, err
    assert "Traceback" not in err
    assert named in err, err
    for word in words:
        assert word in err, err


@pytest.fixture(scope="module")
def saved_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("run")
    code, _, err = invoke(["run", "--scenarios", "single-tool", "--report-dir", str(out)])
    assert code == 0, err
    return out / "run.jsonl"


@pytest.mark.parametrize(
    ("content", "words"),
    [
        (bytes(range(128, 256)), ("not UTF-8",)),
        (DEEP.encode(), ("nested too deeply",)),
    ],
    ids=["binary", "deep"],
)
@pytest.mark.parametrize("reader", ["report", "baseline"])
def test_unreadable_run_and_baseline_files(
    tmp_path: Path, content: bytes, words: tuple[str, ...], reader: str
) -> None:
    path = tmp_path / "file.json"
    path.write_bytes(content)
    if reader == "report":
        args = ["report", str(path), "--format", "md"]
    else:
        args = ["run", "--baseline", str(path), "--scenarios", "single-tool", "--no-reports"]
    _assert_named(args, str(path), *words)


def test_truncated_run_file_is_not_rendered_as_a_clean_run(saved_run: Path, tmp_path: Path) -> None:
    lines = saved_run.read_text("utf-8").splitlines()
    assert '"type": "footer"' in lines[-1]
    cut = tmp_path / "cut.jsonl"
    cut.write_text("\n".join(lines[:3]) + "\n", "utf-8")
    _assert_named(["report", str(cut), "--format", "md"], str(cut), "no footer", "2 of")


def _killed(saved_run: Path, folder: Path) -> tuple[Path, int]:
    """The run as a process killed while writing its fourth line leaves it: three lines whole,
    the fourth cut inside a string, no newline after it; and that line's number."""
    lines = saved_run.read_text("utf-8").splitlines()
    fourth = lines[3]
    cut_at = fourth.index('"scenario": "') + len('"scenario": "') + 3
    killed = folder / "killed.jsonl"
    killed.write_text("\n".join(lines[:3]) + "\n" + fourth[:cut_at], "utf-8")
    return killed, 4


def test_a_last_line_cut_short_is_named_with_its_line_and_the_whole_parser_message(
    saved_run: Path, tmp_path: Path
) -> None:
    killed, number = _killed(saved_run, tmp_path)
    _assert_named(
        ["report", str(killed), "--format", "md"],
        f"{killed}:{number}: the last line is cut short",
        "Unterminated string starting at column ",
        "as a run killed while writing leaves it",
        "no footer line",
        "2 of 5 case(s) recorded",
        "--partial",
    )


@pytest.mark.parametrize("fmt", ["md", "html", "junit"])
def test_partial_renders_the_cases_recorded_and_says_the_cut_line_was_left_out(
    saved_run: Path, tmp_path: Path, fmt: str
) -> None:
    killed, number = _killed(saved_run, tmp_path)
    code, out, err = invoke(["report", str(killed), "--format", fmt, "--partial"])
    assert code == 0, err
    assert err.startswith(f"ctxconf: warning: {killed}: the run was cut short"), err
    assert f"line {number} is cut short (Unterminated string starting at column " in err
    assert "2 of 5 case(s) recorded" in err
    if fmt == "junit":  # a test-report step must not read it as a complete, passing run
        assert out.count("<testcase ") == 2 + 1
        assert '<error message="run cut short: no footer line, 2 of 5 case(s)' in out
    else:
        assert "exit status unknown" in out
        assert "Run cut short: no footer line, 2 of 5 case(s) recorded" in out
        assert "exit status 0" not in out
        # the cells of the cases not recorded are not "not applicable", nor do all cases pass
        assert "· not applicable, or not reached: the run ended early" in out
        assert "Every case passed." not in out


@pytest.mark.parametrize("partial", [[], ["--partial"]])
def test_a_last_line_cut_inside_a_character_is_cut_short_not_binary(
    saved_run: Path, tmp_path: Path, partial: list[str]
) -> None:
    # the writer keeps non-ASCII raw (ensure_ascii=False), and a kill cuts at any byte: in the
    # middle of a character of the last line, which is then cut short, the file no less UTF-8
    lines = saved_run.read_text("utf-8").splitlines()
    fourth = lines[3].replace('"scenario": "', '"scenario": "\u00e9t\u00e9 ', 1).encode()
    cut_at = fourth.index("\u00e9".encode()) + 1
    killed = tmp_path / "killed.jsonl"
    killed.write_bytes(("\n".join(lines[:3]) + "\n").encode() + fourth[:cut_at])
    code, out, err = invoke(["report", str(killed), "--format", "md", *partial])
    assert "not UTF-8" not in err
    if partial:
        assert code == 0, err
        assert "line 4 is cut short (Unterminated string starting at column " in err
        assert "Run cut short: no footer line, 2 of 5 case(s) recorded" in out
    else:
        assert code == 2, err
        assert f"{killed}:4: the last line is cut short (not valid JSON: Unterminated" in err


def test_bytes_that_are_not_utf_8_before_the_end_are_still_named(tmp_path: Path) -> None:
    for name, data in (("middle", b'{"a": "\xe9"}\n{}'), ("own-line", b'{"a": 1}\n\xe9')):
        path = tmp_path / f"{name}.jsonl"
        path.write_bytes(data)
        _assert_named(["report", str(path), "--partial"], str(path), "not UTF-8 text (byte ")


@pytest.mark.parametrize("partial", [[], ["--partial"]])
def test_a_malformed_line_before_the_last_is_named_with_its_column(
    saved_run: Path, tmp_path: Path, partial: list[str]
) -> None:
    lines = saved_run.read_text("utf-8").splitlines()
    lines[2] = lines[2][:40]  # ended by its newline: not what a killed run leaves
    broken = tmp_path / "broken.jsonl"
    broken.write_text("\n".join(lines) + "\n", "utf-8")
    _assert_named(
        ["report", str(broken), *partial],
        f"{broken}:3: not valid JSON (",
        " at column 41)",
    )


def test_a_line_holding_a_unicode_line_separator_is_one_line(
    saved_run: Path, tmp_path: Path
) -> None:
    # written with ensure_ascii=False, a title or body may hold U+2028, U+0085 or U+001C raw:
    # str.splitlines() ends a line at each, the writer ends lines at "\n" only
    lines = saved_run.read_text("utf-8").splitlines()
    case = json.loads(lines[1])
    case["title"] = "one\u2028two\x85three\x1cfour"
    lines[1] = json.dumps(case, ensure_ascii=False)
    separated = tmp_path / "separated.jsonl"
    separated.write_text("\n".join(lines) + "\n", "utf-8")
    code, out, err = invoke(["report", str(separated), "--format", "junit"])
    assert code == 0, err
    assert out.count("<testcase ") == 5


@pytest.mark.parametrize("fmt", ["md", "html", "junit"])
def test_complete_run_file_renders(saved_run: Path, fmt: str) -> None:
    code, out, err = invoke(["report", str(saved_run), "--format", fmt])
    assert code == 0, err
    assert out.strip()


def test_uncreatable_report_dir_is_refused_before_the_run(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("x", "utf-8")
    target = blocker / "reports"
    code, out, err = invoke(["run", "--scenarios", "single-tool", "--report-dir", str(target)])
    assert code == 2, err
    assert "Traceback" not in err
    assert "--report-dir" in err
    assert str(target) in err
    assert "cases" not in out  # refused up front: nothing ran, so nothing was lost


def test_uncreatable_baseline_folder_is_refused_before_the_run(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("x", "utf-8")
    args = ["run", "--scenarios", "single-tool", "--no-reports"]
    _assert_named([*args, "--write-baseline", str(blocker / "b.json")], str(blocker))


def test_a_baseline_given_as_a_run_report_is_named_as_one(tmp_path: Path) -> None:
    """A pretty-printed JSON file (the committed baseline) is JSON: its error says what it is
    rather than that it is not JSON."""
    baseline = tmp_path / "conformance.json"
    code, _, err = invoke(
        ["run", "--scenarios", "single-tool", "--no-reports", "--write-baseline", str(baseline)]
    )
    assert code == 0, err
    _assert_named(
        ["report", str(baseline)],
        f"{baseline}:1",
        "it is a ctxconf.baseline file, not a run report (reports/run.jsonl",
    )


def test_a_run_read_cut_short_has_no_exit_status(saved_run: Path, tmp_path: Path) -> None:
    # The footer holds the exit status: a run read without it does not say 0 (success) to the
    # library reader, nor to the terminal summary.
    from rich.console import Console

    from conformance.reporting import read_jsonl, render_terminal

    killed, _ = _killed(saved_run, tmp_path)
    record = read_jsonl(killed, partial=True)
    assert record.cut_short
    assert record.exit_status is None
    console = Console(record=True, width=200)
    render_terminal(record, console)
    text = console.export_text()
    assert "exit status unknown" in text
    assert "exit status 0" not in text
    assert read_jsonl(saved_run).exit_status == 0


@pytest.mark.parametrize(
    ("reason", "status"),
    [("interrupted by SIGINT", 130), ("stopped at the run's wall-time limit (--max-seconds 1)", 1)],
)
def test_the_junit_of_a_run_stopped_early_says_so_as_its_exit_status_does(
    saved_run: Path, tmp_path: Path, reason: str, status: int
) -> None:
    # A stopped or interrupted run exits non-zero with every case it ran passing: its junit.xml
    # must not read as a complete, passing run to a CI test-report step.
    lines = saved_run.read_text("utf-8").split("\n")
    footer = json.loads(lines[-2])
    footer.update(stopped=reason, not_run=3, exit_status=status)
    stopped = tmp_path / "stopped.jsonl"
    stopped.write_text("\n".join([*lines[:-2], json.dumps(footer), ""]), "utf-8")
    code, out, err = invoke(["report", str(stopped), "--format", "junit"])
    assert code == 0, err
    assert '<error message="run ' in out
    assert f"{reason}: 3 case(s) not run" in out
    assert 'type="ctxconf.stopped"' in out
    assert out.count("<testcase ") == len(lines) - 3 + 1  # the cases run, and the run's own
    code, out, _ = invoke(["report", str(saved_run), "--format", "junit"])
    assert "ctxconf.stopped" not in out
    assert 'name="ctxconf"' not in out


def test_a_broken_character_in_a_middle_line_is_named_by_file_and_line(
    saved_run: Path, tmp_path: Path
) -> None:
    """Every other refusal names file:line; a byte offset alone cannot be found in an editor."""
    lines = saved_run.read_bytes().split(b"\n")
    lines[1] = lines[1].replace(b'"scenario": "', b'"scenario": "\xc3', 1)
    broken = tmp_path / "run.jsonl"
    broken.write_bytes(b"\n".join(lines))
    at = lines[1].index(b"\xc3")
    _assert_named(
        ["report", str(broken), "--format", "md"],
        f"{broken}:2: not UTF-8 text (byte {at} of the line,",
    )


@pytest.mark.parametrize("fmt", ["md", "html"])
def test_a_run_cut_short_before_any_case_reads_as_no_pass(
    saved_run: Path, tmp_path: Path, fmt: str
) -> None:
    # Nothing was judged: no level is "ok", and the page does not say that every case passed.
    lines = saved_run.read_text("utf-8").split("\n")
    killed = tmp_path / "killed.jsonl"
    killed.write_text(lines[0] + "\n" + lines[1][:40], "utf-8")
    code, out, err = invoke(["report", str(killed), "--format", fmt, "--partial"])
    assert code == 0, err
    assert "0 of 5 case(s) recorded" in out
    assert "not reached" in out
    assert ">ok<" not in out
    assert "| ok |" not in out
    assert "Every case" not in out
    if fmt == "html":
        assert "No case was recorded." in out
    # a complete run still says ok for a level with cases
    _, whole, _ = invoke(["report", str(saved_run), "--format", fmt])
    assert "not reached" not in whole
