"""Runs that can be trusted: what a plug-in does to its
process (exit, crash, hang, print) is a case result, never a false green, a lost report or a
corrupted stream; a signal still leaves the finished cases' reports; the footer states the exit
status the process really returns; YAML bombs and huge inputs are refused by name."""

from __future__ import annotations

import contextlib
import json
import multiprocessing
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_support import importable_modules
from click.testing import CliRunner
from paths import EXAMPLES, ROOT

from conformance.cli import cli
from conformance.engine import run_events
from conformance.events import CaseFinished, RunFinished
from conformance.loading import load_plugin
from conformance.scenarios import load_corpus
from conformance.workers import _group_is_ours
from reference_impl.config import AssemblyConfig
from reference_impl.errors import ConfigError

EXAMPLE = EXAMPLES / "session.json"
TWO = "single-tool,broken-orphan-result"

PLUGINS = """
import ctypes, json, os, signal, sys, time

def _long(messages):
    return len(messages) > 3

def exits(messages, budget):
    if _long(messages):
        os._exit(0)
    return messages

def segfaults(messages, budget):
    if _long(messages):
        ctypes.string_at(0)
    return messages

def oom_killed(messages, budget):
    if _long(messages):
        os.kill(os.getpid(), signal.SIGKILL)
    return messages

def out_of_memory(messages, budget):
    if _long(messages):
        raise MemoryError("simulated")
    return messages

def prints(messages, budget):
    print(json.dumps({"type": "case", "scenario": "forged", "status": "pass"}))
    print("noise on stderr", file=sys.stderr)
    return messages

def hangs(messages, budget):
    time.sleep(120)

def floods(messages, budget):
    flood = [{"role": ("user", "assistant")[i % 2], "content": "x"} for i in range(40_000)]
    return messages[:1] + flood + messages[1:]

def kills_its_group(messages, budget):
    if _long(messages):
        os.killpg(0, signal.SIGTERM)  # a cleanup routine's way to stop "its" subprocesses
    return messages

def spawns_and_hangs(messages, budget):
    import subprocess
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
    with open(os.environ["CTXCONF_TEST_MARKER"], "a") as handle:
        handle.write(f"{os.getpid()} {child.pid}\\n")
    time.sleep(300)

def slow(messages, budget):
    time.sleep(0.05)
    marker = os.environ.get("CTXCONF_TEST_MARKER")
    if marker:
        with open(marker, "a") as handle:
            handle.write("x")
    return messages
"""


@pytest.fixture
def plugins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    yield from importable_modules(tmp_path / "plugins", {"trust_plugins": PLUGINS}, monkeypatch)


def _run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, ["run", *args], catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def _jsonl(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text("utf-8").splitlines()]


# ------------------------------------------------------------------------ crash isolation


@pytest.mark.timeout(120)
@pytest.mark.parametrize(
    ("plugin", "words"),
    [
        ("exits", "exit status 0"),
        ("segfaults", "SIGSEGV"),
        ("oom_killed", "SIGKILL"),
        ("out_of_memory", "MemoryError"),
    ],
)
@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_plugin_that_kills_its_process_is_an_error_case_in_a_complete_report(
    plugins: Path, tmp_path: Path, plugin: str, words: str, jobs: str
) -> None:
    reports = tmp_path / "reports"
    code, out, err = _run(
        "--impl", f"trust_plugins:{plugin}", "--scenarios", TWO, "--report-dir", str(reports),
        "--jobs", jobs,
    )  # fmt: skip
    assert code == 1, err  # never a false green, never BrokenProcessPool (exit 70)
    assert "internal error" not in err
    lines = _jsonl(reports / "run.jsonl")
    assert lines[0]["type"] == "header"
    assert lines[-1]["type"] == "footer"
    cases = [line for line in lines if line["type"] == "case"]
    assert len(cases) == lines[0]["case_count"]
    errors = [c for c in cases if c["status"] == "error"]
    assert errors
    assert all(words in str(c["reason"]) for c in errors), errors
    for name in ("report.md", "report.html", "junit.xml"):
        assert (reports / name).stat().st_size > 0
    assert f"exit status {code}" in out


@pytest.mark.timeout(120)
def test_fuzz_survives_a_plugin_that_ends_its_process(plugins: Path) -> None:
    result = CliRunner().invoke(
        cli,
        ["fuzz", "--impl", "trust_plugins:exits", "--examples", "40", "--seed", "3"],
        catch_exceptions=False,
    )
    assert result.exit_code == 1, result.stderr  # a finding, not exit 0 with nothing said
    assert "must failures found" in result.stderr
    # The plug-in's end is a finding of its own, shown first (nothing could be judged).
    first = result.stderr.splitlines()[1]
    assert first.startswith("[1/"), result.stderr
    assert "plugin-error" in first, result.stderr


# ------------------------------------------------------------------------- captured output


@pytest.mark.timeout(120)
def test_what_a_plugin_prints_stays_in_its_case_record_not_in_the_stream(
    plugins: Path, tmp_path: Path
) -> None:
    reports = tmp_path / "reports"
    code, out, _ = _run(
        "--impl", "trust_plugins:prints", "--scenarios", TWO, "--format", "jsonl",
        "--report-dir", str(reports),
    )  # fmt: skip
    lines = [json.loads(line) for line in out.splitlines()]
    assert lines[0]["type"] == "header"
    assert all(line.get("scenario") != "forged" for line in lines)
    cases = [line for line in lines if line["type"] == "case"]
    assert len(cases) == lines[0]["case_count"]
    for case in cases:
        captured = case["plugin_output"]
        assert '"forged"' in captured["stdout"]
        assert captured["stderr"] == "noise on stderr\n"
    assert lines[-1]["exit_status"] == code


# ------------------------------------------------------------------------------ exit status


@pytest.mark.timeout(120)
def test_with_a_baseline_every_report_states_the_exit_status_really_returned(
    tmp_path: Path,
) -> None:
    baseline = tmp_path / "baseline.json"
    common = ["--shapes", "openai-chat", "--scenarios", "parallel-tools-2,mid-ring-deletion"]
    code, _, _ = _run(
        *common, "--impl", "fakes:OrphanResult", "--write-baseline", str(baseline), "--no-reports"
    )
    assert code == 1
    reports = tmp_path / "reports"
    code, out, _ = _run(
        *common, "--impl", "fakes:OrphanResult", "--baseline", str(baseline),
        "--report-dir", str(reports),
    )  # fmt: skip
    assert code == 0  # known failures only: no regression
    footer = _jsonl(reports / "run.jsonl")[-1]
    assert footer["exit_status"] == 0
    assert footer["gate"] == "baseline"
    assert "exit status 0" in out
    assert "exit status 0 (gate: baseline)" in (reports / "report.md").read_text("utf-8")
    code, out, _ = _run(
        *common, "--impl", "fakes:OrphanResult", "--baseline", str(baseline), "--format", "jsonl",
        "--no-reports",
    )  # fmt: skip
    assert code == 0
    assert json.loads(out.splitlines()[-1])["exit_status"] == 0


# --------------------------------------------------------------------------------- signals


def _ctxconf(*args: str, env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", "from conformance.cli import main; main()", *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.mark.timeout(180)
@pytest.mark.parametrize(("signum", "status"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_writes_the_finished_cases_and_marks_the_footer_interrupted(
    plugins: Path, tmp_path: Path, signum: int, status: int
) -> None:
    marker = tmp_path / "calls"
    reports = tmp_path / "reports"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(plugins), str(ROOT)]),
        "CTXCONF_TEST_MARKER": str(marker),
    }
    process = _ctxconf(
        "run", "--impl", "trust_plugins:slow", "--level", "should", "--report-dir", str(reports),
        env=env,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while (not marker.exists() or len(marker.read_text()) < 5) and time.monotonic() < deadline:
            assert process.poll() is None, process.communicate()
            time.sleep(0.1)
        process.send_signal(signum)
        out, err = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == status, err
    lines = _jsonl(reports / "run.jsonl")
    footer = lines[-1]
    assert footer["type"] == "footer"
    assert footer["interrupted"] is True
    assert footer["exit_status"] == status
    assert footer["stopped"] == f"interrupted by {signal.Signals(signum).name}"
    finished = [line for line in lines if line["type"] == "case"]
    assert finished
    assert footer["not_run"] == lines[0]["case_count"] - len(finished)
    assert footer["not_run"] > 0
    assert "interrupted" in (reports / "report.md").read_text("utf-8")
    assert f"exit status {status}" in out


@pytest.mark.timeout(180)
def test_a_run_killed_mid_way_leaves_its_cases_so_far_and_no_earlier_report(
    plugins: Path, tmp_path: Path
) -> None:
    """run.jsonl is written as the run goes (header, each case line flushed as it finishes), so
    ``kill -9`` leaves the finished cases, without footer, for ``report --partial``; and the
    reports of an earlier run in the same folder do not survive to look current."""
    reports = tmp_path / "reports"
    reports.mkdir()
    for name in ("run.jsonl", "report.md", "report.html", "junit.xml"):
        (reports / name).write_text(f"an earlier, complete run's {name}\n", "utf-8")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(plugins), str(ROOT)])}
    process = _ctxconf(
        "run", "--impl", "trust_plugins:slow", "--level", "should", "--report-dir", str(reports),
        env=env,
    )  # fmt: skip
    run_jsonl = reports / "run.jsonl"
    try:
        deadline = time.monotonic() + 120
        while run_jsonl.read_text("utf-8").count('"type": "case"') < 3:
            assert process.poll() is None, process.communicate()
            assert time.monotonic() < deadline, "no case line written while the run went"
            time.sleep(0.05)
        process.kill()  # SIGKILL: no handler runs, nothing is written after this
        process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == -signal.SIGKILL
    assert sorted(p.name for p in reports.iterdir()) == ["run.jsonl"]
    lines = [json.loads(line) for line in run_jsonl.read_text("utf-8").split("\n")[:-1]]
    assert lines[0]["type"] == "header"
    assert {line["type"] for line in lines[1:]} == {"case"}
    rendered = CliRunner().invoke(cli, ["report", str(run_jsonl), "--partial", "--format", "md"])
    assert rendered.exit_code == 0, rendered.output
    assert "Run cut short: no footer line" in rendered.stdout
    refused = CliRunner().invoke(cli, ["report", str(run_jsonl), "--format", "junit"])
    assert refused.exit_code == 2


@pytest.mark.timeout(120)
def test_ctrl_c_while_the_plugin_loads_exits_130(tmp_path: Path) -> None:
    """Before the run's own handler is in place (the plug-in's import), Ctrl-C is still an
    interrupted run's 130, not click's 1, which reads as a failing run."""
    started = tmp_path / "started"
    (tmp_path / "slow_import.py").write_text(
        "import pathlib, time\n"
        f"pathlib.Path({str(started)!r}).write_text('x')\n"
        "time.sleep(60)\n"
        "def assemble(messages, budget):\n"
        "    return messages\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)])}
    process = _ctxconf("run", "--impl", "slow_import:assemble", "--no-reports", env=env)
    try:
        deadline = time.monotonic() + 60
        while not started.exists() and time.monotonic() < deadline:
            assert process.poll() is None, process.communicate()
            time.sleep(0.05)
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 130, err
    assert "Aborted!" in err


def _gone(pid: int) -> bool:
    """The process ended (a zombie no one reaps yet counts as ended)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return True
    return state in ("Z", "X")


def _noted_pids(marker: Path) -> list[int]:
    if not marker.exists():
        return []
    return [int(pid) for pid in marker.read_text().split()]


def _wait_gone(pids: list[int], seconds: float = 10) -> list[int]:
    deadline = time.monotonic() + seconds
    while (alive := [p for p in pids if not _gone(p)]) and time.monotonic() < deadline:
        time.sleep(0.05)
    return alive


def _kill_all(pids: list[int]) -> None:
    for pid in pids:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)


@pytest.mark.timeout(120)
def test_a_plugin_that_signals_its_process_group_takes_only_its_worker_along(
    plugins: Path, tmp_path: Path
) -> None:
    # In a session of its own: before workers had their own group, the plug-in's killpg(0) took
    # down the harness (exit 143, no case reported) and whatever shared its group (pytest).
    reports = tmp_path / "reports"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(plugins), str(ROOT)])}
    harness = subprocess.Popen(
        [sys.executable, "-c", "from conformance.cli import main; main()", "run",
         "--impl", "trust_plugins:kills_its_group", "--scenarios", TWO, "--shapes", "openai-chat",
         "--report-dir", str(reports)],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True,
    )  # fmt: skip
    out, err = harness.communicate(timeout=100)
    assert harness.returncode == 1, err
    lines = _jsonl(reports / "run.jsonl")
    footer = lines[-1]
    assert footer["interrupted"] is False
    assert footer["not_run"] == 0
    cases = [line for line in lines if line["type"] == "case"]
    assert len(cases) == lines[0]["case_count"]
    errors = [c for c in cases if c["status"] == "error"]
    assert errors
    assert all("killed by signal 15 (SIGTERM" in str(c["reason"]) for c in errors), errors
    assert footer["crashed_workers"] == len(errors)
    assert "exit status 1" in out


@pytest.mark.timeout(120)
def test_a_timed_out_worker_is_killed_with_what_the_plugin_spawned(
    plugins: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    marker = tmp_path / "pids"
    monkeypatch.setenv("CTXCONF_TEST_MARKER", str(marker))
    try:
        code, _, _ = _run(
            "--impl", "trust_plugins:spawns_and_hangs", "--scenarios", "single-tool",
            "--shapes", "openai-chat", "--timeout", "1", "--max-consecutive-timeouts", "1",
            "--no-reports",
        )  # fmt: skip
        assert code == 1
        pids = _noted_pids(marker)
        assert len(pids) == 2  # the worker and the process it started
        assert _wait_gone(pids) == []
    finally:
        _kill_all(_noted_pids(marker))


def _start_hanging_run(plugins: Path, tmp_path: Path) -> tuple[subprocess.Popen[str], Path]:
    marker = tmp_path / "pids"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(plugins), str(ROOT)]),
        "CTXCONF_TEST_MARKER": str(marker),
    }
    harness = subprocess.Popen(
        [sys.executable, "-c", "from conformance.cli import main; main()", "run",
         "--impl", "trust_plugins:spawns_and_hangs", "--scenarios", "single-tool",
         "--shapes", "openai-chat", "--timeout", "100", "--report-dir", str(tmp_path / "reports")],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True,
    )  # fmt: skip
    deadline = time.monotonic() + 60
    while len(_noted_pids(marker)) < 2 and time.monotonic() < deadline:
        assert harness.poll() is None, harness.communicate()
        time.sleep(0.05)
    return harness, marker


@pytest.mark.timeout(120)
def test_ctrl_c_at_the_terminal_stops_workers_in_their_own_group(
    plugins: Path, tmp_path: Path
) -> None:
    # The terminal sends SIGINT to its foreground group: the harness's, no longer the workers'.
    harness, marker = _start_hanging_run(plugins, tmp_path)
    try:
        os.killpg(harness.pid, signal.SIGINT)
        out, err = harness.communicate(timeout=60)
        assert harness.returncode == 130, err
        assert _wait_gone(_noted_pids(marker)) == []
        footer = _jsonl(tmp_path / "reports" / "run.jsonl")[-1]
        assert footer["stopped"] == "interrupted by SIGINT"
        assert "exit status 130" in out
    finally:
        if harness.poll() is None:
            harness.kill()
        _kill_all(_noted_pids(marker))


@pytest.mark.skipif(sys.platform != "linux", reason="PR_SET_PDEATHSIG is Linux's")
@pytest.mark.timeout(120)
def test_a_worker_does_not_outlive_a_killed_harness(plugins: Path, tmp_path: Path) -> None:
    # The terminal's hang-up no longer reaches a worker: it ends with the harness instead.
    harness, marker = _start_hanging_run(plugins, tmp_path)
    try:
        harness.kill()
        harness.communicate(timeout=60)
        worker = _noted_pids(marker)[0]
        assert _wait_gone([worker]) == []
    finally:
        _kill_all(_noted_pids(marker))


# ------------------------------------------------------------------------ run-level budgets


@pytest.mark.timeout(120)
def test_hanging_plugin_stops_after_k_consecutive_timeouts_without_thread_pile_up(
    plugins: Path, tmp_path: Path
) -> None:
    before = threading.active_count()
    reports = tmp_path / "reports"
    code, out, _ = _run(
        "--impl", "trust_plugins:hangs", "--level", "must", "--timeout", "0.2",
        "--max-consecutive-timeouts", "3", "--report-dir", str(reports),
    )  # fmt: skip
    assert code == 1
    lines = _jsonl(reports / "run.jsonl")
    cases = [line for line in lines if line["type"] == "case"]
    footer = lines[-1]
    assert len(cases) == 3
    assert footer["stopped"].startswith("stopped after 3 consecutive timed-out cases")
    assert footer["not_run"] == lines[0]["case_count"] - 3
    assert footer["hung_calls"] == 3
    assert footer["gate"] == "stopped"
    # The option as typed, not "--MAX-CONSECUTIVE-TIMEOUTS 3".
    assert "STOPPED after 3 consecutive timed-out cases (--max-consecutive-timeouts 3)" in out
    assert "case(s) not run" in out
    assert threading.active_count() == before  # the hung calls died with their workers


@pytest.mark.timeout(120)
def test_a_wall_time_limit_stops_the_run_with_a_clear_footer(plugins: Path) -> None:
    plugin = load_plugin("trust_plugins:slow")
    scenarios = [s for s in load_corpus() if s.level == "must"]
    events = list(run_events(plugin, scenarios, max_seconds=1.0))
    footer = events[-1]
    assert isinstance(footer, RunFinished)
    finished = sum(1 for e in events if isinstance(e, CaseFinished))
    assert footer.stopped == "stopped at the run's wall-time limit (--max-seconds 1)"
    assert footer.not_run > 0
    assert footer.not_run + finished == events[0].case_count  # type: ignore[union-attr]
    assert footer.exit_status == 1


@pytest.mark.timeout(120)
def test_judging_a_huge_return_is_bounded_and_counts_as_a_timeout(plugins: Path) -> None:
    # 40,000 invented messages take seconds to judge (linear in the returned request); with a
    # judge limit of 0.2 s each case is a named timed-out error, the worker is replaced, and the
    # consecutive-timeout budget stops the run with every finished case reported.
    plugin = load_plugin("trust_plugins:floods")
    scenarios = [s for s in load_corpus() if s.level == "must"]
    events = list(
        run_events(
            plugin, scenarios, judge_timeout=0.2, max_consecutive_timeouts=2, shapes=["openai-chat"]
        )
    )
    cases = [e.result for e in events if isinstance(e, CaseFinished)]
    footer = events[-1]
    assert isinstance(footer, RunFinished)
    assert [c.status for c in cases] == ["error", "error"]
    for case in cases:
        assert case.reason is not None
        assert case.reason.startswith("timed out judging what the plug-in returned: over 0.2s")
        assert case.reason.endswith("the worker process was killed and replaced")
    assert (
        footer.stopped
        == "stopped after 2 consecutive timed-out cases (--max-consecutive-timeouts 2)"
    )
    assert footer.exit_status == 1
    assert footer.hung_calls == 0  # no call hung: the harness's judging was stopped


@pytest.mark.timeout(120)
def test_a_fork_warned_about_under_warnings_as_errors_still_starts_its_worker(
    plugins: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Python 3.12+ warns (DeprecationWarning) when a process with threads forks, as an xdist
    # worker does; `-W error` must not turn that into an error of every case. The warning is
    # raised here as 3.12's os.fork raises it, before the real fork.
    real_fork = os.fork

    def warning_fork() -> int:
        warnings.warn(
            f"This process (pid={os.getpid()}) is multi-threaded, use of fork() may lead to "
            "deadlocks in the child.",
            DeprecationWarning,
            stacklevel=2,
        )
        return real_fork()

    monkeypatch.setattr(os, "fork", warning_fork)
    plugin = load_plugin("trust_plugins:prints")
    scenarios = [s for s in load_corpus() if s.id == "single-tool"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        events = list(run_events(plugin, scenarios, shapes=["openai-chat"]))
    cases = [e.result for e in events if isinstance(e, CaseFinished)]
    assert cases
    assert all(c.status != "error" for c in cases), [c.reason for c in cases]


@pytest.mark.timeout(120)
def test_the_judge_limit_leaves_an_ordinary_return_alone(plugins: Path) -> None:
    # The same plug-in without the flood is judged within the default limit as usual.
    plugin = load_plugin("trust_plugins:prints")
    scenarios = [s for s in load_corpus() if s.id == "single-tool"]
    events = list(run_events(plugin, scenarios, shapes=["openai-chat"]))
    cases = [e.result for e in events if isinstance(e, CaseFinished)]
    assert cases
    assert all(not (c.reason or "").startswith("timed out") for c in cases)


# ------------------------------------------------------------------------------ YAML bombs


def _bomb() -> str:
    lines = ['a: &a ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for previous, name in zip("abcdefgh", "bcdefghi", strict=True):
        lines.append(f"{name}: &{name} [" + ", ".join([f"*{previous}"] * 9) + "]")
    return "\n".join(lines) + "\n"


@pytest.fixture
def bomb(tmp_path: Path) -> Path:
    path = tmp_path / "bomb" / "must" / "lol.yaml"
    path.parent.mkdir(parents=True)
    path.write_text(_bomb(), "utf-8")
    return path


@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    "args",
    [
        ["validate", "{f}", "--shape", "openai-chat"],
        ["scenarios", "validate", "{d}"],
        ["run", "--scenarios", "{d}", "--no-reports"],
        ["audit", "{f}"],
        ["count", "{f}", "--shape", "openai-chat"],
        ["assemble", str(EXAMPLE), "--config", "{f}", "--shape", "openai-chat"],
    ],
    ids=lambda a: "-".join(a[:2]),
)
def test_a_billion_laughs_document_is_refused_by_name_everywhere(
    bomb: Path, args: list[str]
) -> None:
    filled = [a.replace("{f}", str(bomb)).replace("{d}", str(bomb.parent.parent)) for a in args]
    result = CliRunner().invoke(cli, filled, catch_exceptions=False)
    # audit names an unreadable file as a row and goes on (exit 4: a file could not be read)
    assert result.exit_code == (4 if args[0] == "audit" else 2), result.output
    assert "billion laughs" in result.stderr
    assert str(bomb) in result.stderr


def test_assembly_config_from_yaml_refuses_a_bomb_and_a_duplicate_key(bomb: Path) -> None:
    with pytest.raises(ConfigError, match="billion laughs"):
        AssemblyConfig.from_yaml(bomb)
    with pytest.raises(ConfigError, match=r"duplicate key 'recent_tool_rings'"):
        AssemblyConfig.from_yaml(
            "context_assembly:\n  recent_tool_rings: 3\n  recent_tool_rings: 0\n"
        )


# ------------------------------------------------------------------------------ size limits


@pytest.mark.parametrize(
    "command",
    [
        ["inspect", "{f}", "--shape", "openai-chat"],
        ["validate", "{f}", "--shape", "openai-chat"],
        ["count", "{f}", "--shape", "openai-chat"],
        ["audit", "{f}"],
    ],
    ids=lambda a: a[0],
)
def test_an_input_over_the_size_limit_is_refused_before_it_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: list[str]
) -> None:
    body = {"model": "gpt-4o", "messages": [{"role": "user", "content": "x" * 5000}]}
    path = tmp_path / "big.json"
    path.write_text(json.dumps(body), "utf-8")
    monkeypatch.setenv("CTXCONF_MAX_INPUT_BYTES", "4kB")
    args = [str(path) if a == "{f}" else a for a in command]
    result = CliRunner().invoke(cli, args, catch_exceptions=False)
    # audit names an unreadable file as a row and goes on (exit 4: a file could not be read)
    assert result.exit_code == (4 if command[0] == "audit" else 2), result.output
    assert "input too large" in result.stderr
    assert "CTXCONF_MAX_INPUT_BYTES" in result.stderr
    monkeypatch.setenv("CTXCONF_MAX_INPUT_BYTES", "1MiB")  # configurable: raised, it reads
    assert "input too large" not in CliRunner().invoke(cli, args).stderr


def test_the_default_limit_refuses_a_huge_body_by_name(tmp_path: Path) -> None:
    path = tmp_path / "huge.json"
    with path.open("w", encoding="utf-8") as handle:
        handle.write('{"model": "gpt-4o", "messages": [{"role": "user", "content": "')
        handle.write("x" * (33 * 1024 * 1024))
        handle.write('"}]}')
    started = time.perf_counter()
    result = CliRunner().invoke(cli, ["inspect", str(path), "--shape", "openai-chat"])
    assert result.exit_code == 2
    assert "over the 32.0 MiB input limit" in result.stderr
    assert time.perf_counter() - started < 20  # refused up front (29 s and 3 GB before)


def test_a_gzip_bomb_in_recordings_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import gzip

    path = tmp_path / "log.jsonl.gz"
    path.write_bytes(gzip.compress(b" " * 200_000))
    monkeypatch.setenv("CTXCONF_MAX_INPUT_BYTES", "100kB")
    result = CliRunner().invoke(cli, ["audit", str(path)])
    # A log is streamed, so its size is no limit; one record over the limit is: that line is an
    # unreadable row, read in bounded chunks (never inflated whole), and the exit status says so.
    assert result.exit_code == 4, result.output
    assert "line 1 is over the input limit" in result.stdout + result.stderr


def test_a_bad_limit_value_is_named() -> None:
    result = CliRunner().invoke(
        cli,
        ["count", str(EXAMPLE), "--shape", "openai-chat"],
        env={"CTXCONF_MAX_INPUT_BYTES": "lots"},
    )
    assert result.exit_code == 2
    assert "CTXCONF_MAX_INPUT_BYTES='lots' is not a size" in result.stderr


@pytest.mark.parametrize(
    "args",
    [
        ["run", "--shapes", "openai-chat", "--level", "must"],  # the corpus reader blamed a file
        ["count", str(EXAMPLE), "--shape", "openai-chat"],
        ["audit", str(ROOT / "cassettes")],
        ["scenarios", "list"],
    ],
    ids=lambda args: args[0],
)
def test_every_command_names_a_limit_that_is_not_a_size_before_reading_anything(
    args: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # checked once by the command group, before a loader can blame the file it was reading
    # ("<file>: not a scenario file: ...") and before a run writes any report
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(cli, args, env={"CTXCONF_MAX_INPUT_BYTES": "lots"})
    assert result.exit_code == 2, result.output
    assert result.stderr == (
        "ctxconf: error: $CTXCONF_MAX_INPUT_BYTES='lots' is not a size "
        "(examples: 1000000, 500kB, 64MiB, none)\n"
    )
    assert not (tmp_path / "reports").exists()


@pytest.mark.parametrize("args", [["run", "--help"], ["--help"], ["--version"], ["audit", "-h"]])
def test_help_and_version_need_no_valid_limit(args: list[str]) -> None:
    result = CliRunner().invoke(cli, args, env={"CTXCONF_MAX_INPUT_BYTES": "lots"})
    assert result.exit_code == 0, result.output
    assert "not a size" not in result.output


def test_a_mistyped_command_is_named_before_the_limit() -> None:
    # the user's first mistake is the command name: click's error, not the variable's
    result = CliRunner().invoke(cli, ["rnu"], env={"CTXCONF_MAX_INPUT_BYTES": "lots"})
    assert result.exit_code == 2, result.output
    assert "No such command 'rnu'" in result.output
    assert "not a size" not in result.output


def test_the_jsonl_stream_is_one_process_writer() -> None:
    # The plug-in's fd 1 is not the harness's: a child that writes to fd 1 directly, bypassing
    # sys.stdout, is captured too (a C extension printing).
    code = textwrap.dedent(
        """
        import os
        from conformance.workers import OutputCapture
        import tempfile
        d = tempfile.mkdtemp()
        c = OutputCapture(os.path.join(d, "o"), os.path.join(d, "e"))
        os.write(1, b"raw fd write\\n")
        print("via print")
        got = c.collect()
        os.write(3, repr(got).encode())
        """
    )
    read, write = os.pipe()
    process = subprocess.run(
        [sys.executable, "-c", code.replace("os.write(3", f"os.write({write}")],
        pass_fds=(write,),
        capture_output=True,
        check=True,
        timeout=60,
    )
    os.close(write)
    with os.fdopen(read) as handle:
        captured = handle.read()
    assert process.stdout == b""
    assert "raw fd write" in captured
    assert "via print" in captured


# -------------------------------------------------------------------- YAML writers round-trip

from hypothesis import given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from conformance.fuzzing import scenario_document, scenario_yaml  # noqa: E402
from conformance.scenarios import load_file  # noqa: E402
from reference_impl.documents import dump_yaml, load_yaml_strict  # noqa: E402
from reference_impl.transcript import Message, TextPart, Transcript  # noqa: E402

FOLDED = st.sampled_from(["\x85", "\u2028", "\u2029", "\n", "\r", " ", "'", '"', "#", ": "])
TEXTS = st.text() | st.lists(st.text(max_size=5) | FOLDED, max_size=12).map("".join)


@given(TEXTS)
def test_the_yaml_writer_round_trips_every_unicode_string(text: str) -> None:
    document = {"text": text, "list": [text, {text: text}], "nested": {"key": [text]}}
    for width in (100, 12):
        assert load_yaml_strict(dump_yaml(document, sort_keys=False, width=width)) == document


def test_a_fuzz_scenario_keeps_a_next_line_character(tmp_path: Path) -> None:
    # U+0085 (NEXT LINE) must be escaped in a quoted scalar, or it is read back as a space.
    text = "line one\x85line two\u2028end"
    session = Transcript(
        messages=(
            Message(role="system", parts=(TextPart(text="be brief"),)),
            Message(role="user", parts=(TextPart(text=text),)),
        )
    )
    document = scenario_document(
        session,
        scenario_id="fuzz-nel",
        title="next line",
        shape="openai-chat",
        budget=100,
        outcome="either",
        notes="",
    )
    path = tmp_path / "must" / "nel.yaml"
    path.parent.mkdir()
    path.write_text(scenario_yaml(document), "utf-8")
    (loaded,) = load_file(path)
    assert loaded.session.messages[1].parts[0] == TextPart(text=text)


# ------------------------------------------------ the example session and convert --lossy

SHAPES = ["openai-chat", "openai-responses", "anthropic-messages", "gemini", "bedrock-converse"]


@pytest.mark.parametrize("shape", SHAPES)
def test_the_example_session_converts_and_assembles_in_every_shape(shape: str) -> None:
    # Including openai-chat, the shape most start with, which carries no is_error flag.
    converted = CliRunner().invoke(
        cli, ["convert", str(EXAMPLE), "--from", "openai-chat", "--to", shape]
    )
    assert converted.exit_code == 0, converted.stderr
    assembled = CliRunner().invoke(
        cli, ["assemble", str(EXAMPLE), "--shape", shape, "--budget", "4000", "--format", "json"]
    )
    assert assembled.exit_code == 0, assembled.stderr
    assert json.loads(assembled.stdout)


def test_convert_names_what_it_would_drop_and_drops_it_only_with_lossy(tmp_path: Path) -> None:
    document = json.loads(EXAMPLE.read_text("utf-8"))
    result = document["messages"][7]["parts"][1]
    result["is_error"] = True
    path = tmp_path / "with-error.json"
    path.write_text(json.dumps(document), "utf-8")
    args = ["convert", str(path), "--from", "anthropic-messages", "--to", "openai-chat"]
    refused = CliRunner().invoke(cli, args)
    assert refused.exit_code == 2
    assert (
        "messages[7].parts[1]: the is_error flag of the result of call_notify_1" in refused.stderr
    )
    assert "--lossy" in refused.stderr
    lossy = CliRunner().invoke(cli, [*args, "--lossy"])
    assert lossy.exit_code == 0, lossy.stderr
    assert "not carried to openai-chat: messages[7].parts[1]: the is_error flag" in lossy.stderr
    body = json.loads(lossy.stdout)
    texts = [m.get("content") for m in body["messages"] if m["role"] == "tool"]
    assert result["content"][0]["text"] in texts  # the text itself is kept byte-exact
    kept = CliRunner().invoke(
        cli, ["convert", str(path), "--from", "openai-chat", "--to", "anthropic-messages"]
    )
    assert kept.exit_code == 0  # Anthropic carries the flag: nothing to drop
    assert '"is_error": true' in kept.stdout


def test_a_cassette_the_library_cannot_read_is_named_before_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # was "internal error" (exit 70) from inside the engine, for any cassette it cannot read
    bad = tmp_path / "openai-chat" / "x.yaml"
    bad.parent.mkdir()
    bad.write_text(
        "interactions:\n- request: {method: POST, uri: '', body: '{}'}\n"
        "  response: {status: {code: 200, message: OK}, body: {string: '{}'}}\n",
        "utf-8",
    )
    monkeypatch.setenv("CTXCONF_CASSETTES", str(tmp_path))
    args = ["run", "--impl", "reference", "--no-reports", "--level", "must"]
    result = CliRunner().invoke(cli, [*args, "--shapes", "openai-chat"])
    assert result.exit_code == 2, result.output
    assert f"{bad}: no 'ctxconf:' mapping" in result.output
    assert "internal error" not in result.output


def _child_that_exits() -> None:
    os._exit(0)


def test_a_workers_group_is_signalled_only_while_its_id_can_be_no_strangers() -> None:
    # Killing a worker kills its process group (what the plug-in spawned). Once the worker is
    # reaped its pid may be handed out again: a process holding it now is a stranger, whose
    # group must not be signalled (pid 1 stands for one: not our child, and alive).
    child = multiprocessing.get_context("fork").Process(target=_child_that_exits)
    child.start()
    assert child.pid is not None
    assert _group_is_ours(child.pid)  # alive or a zombie: its pid is ours
    child.join()
    assert _group_is_ours(child.pid) or _pid_in_use(child.pid)  # reaped, the id unused
    assert not _group_is_ours(1)


def _pid_in_use(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True
