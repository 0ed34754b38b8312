"""``ctxconf soak`` runs the plug-in in a supervised process: a plug-in that ends, kills or hangs
its process, or whose ``session_after()``/``new_session()`` fails, stops the run at that turn with
the cause named, and the report (every finished turn) and the finding are still written."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_support import importable_modules
from click.testing import CliRunner

from conformance.cli import cli
from conformance.loading import load_plugin
from conformance.soak import builtin_workloads
from conformance.soak.isolated import run_soak_isolated

PLUGINS = """
import os, signal, sys, time

_calls = [0]


def _second_call():
    _calls[0] += 1
    return _calls[0] >= 2


def exits(messages, budget):
    if _second_call():
        os._exit(0)
    return messages


def killed(messages, budget):
    if _second_call():
        os.kill(os.getpid(), signal.SIGKILL)
    return messages


def kills_its_group(messages, budget):
    if _second_call():
        os.killpg(0, signal.SIGTERM)
    return messages


def hangs(messages, budget):
    if _second_call():
        while True:
            time.sleep(1)
    return messages


def raises(messages, budget):
    if _second_call():
        raise LookupError("no such tool")
    return messages


def floods(messages, budget):
    if _second_call():
        flood = [{"role": ("user", "assistant")[i % 2], "content": "x"} for i in range(40_000)]
        return messages[:1] + flood + messages[1:]
    return messages


class _Stored:
    shape = "openai-chat"

    def assemble(self, request):
        self.body = dict(request.body)
        return self.body


class StoreRaises(_Stored):
    def session_after(self):
        raise RuntimeError("cannot store")


class StoreNotABody(_Stored):
    def session_after(self):
        return "not a body"


class StoreHangs(_Stored):
    def session_after(self):
        time.sleep(3600)


class NoSession(_Stored):
    def new_session(self):
        raise RuntimeError("no session for you")


def prints(messages, budget):
    print("plug-in says hello on stdout")
    print("plug-in says hello on stderr", file=sys.stderr)
    os.write(1, b"plug-in writes to fd 1\\n")
    return messages


class DiesLoudly(_Stored):
    def new_session(self):
        sys.stderr.write("Traceback: the model file is missing\\n")
        sys.stderr.flush()
        os._exit(3)
"""


@pytest.fixture
def plugins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    yield from importable_modules(tmp_path / "plugins", {"soak_crashers": PLUGINS}, monkeypatch)


def _soak(tmp_path: Path, impl: str) -> tuple[int, str, Path]:
    out = tmp_path / "reports" / "soak.jsonl"
    result = CliRunner().invoke(
        cli,
        ["soak", "--impl", impl, "--turns", "4", "--timeout", "1", "--out", str(out),
         "--finding", str(tmp_path / "reports" / "must" / "finding.yaml")],
        catch_exceptions=False,
    )  # fmt: skip
    return result.exit_code, result.stderr, out


@pytest.mark.timeout(120)
@pytest.mark.parametrize(
    ("plugin", "turn", "words"),
    [
        ("exits", 1, "the plug-in ended the soak process with exit status 0"),
        ("killed", 1, "the soak process was killed by signal 9"),
        ("hangs", 1, "timed out after 1s; the soak process was killed"),
        # placed in the plug-in's code, not in the soak's wrapper around it (loop.py)
        ("raises", 1, "the plug-in raised LookupError: no such tool (at soak_crashers.py:"),
        (
            "StoreRaises",
            0,
            "session_after() raised RuntimeError: cannot store (at soak_crashers.py:",
        ),
        ("StoreNotABody", 0, "session_after(): str, expected a request body (a mapping)"),
        ("StoreHangs", 0, "timed out after 1s; the soak process was killed"),
    ],
)
def test_a_plugin_that_breaks_its_process_stops_the_soak_with_a_complete_report(
    plugins: Path, tmp_path: Path, plugin: str, turn: int, words: str
) -> None:
    code, err, out = _soak(tmp_path, f"soak_crashers:{plugin}")
    assert code == 1, err  # a finding: never exit 0, the plug-in's status, or 70
    assert "internal error" not in err
    assert f"stopped at turn {turn} (" in err
    assert words in err, err
    lines = [json.loads(line) for line in out.read_text("utf-8").splitlines()]
    assert lines[0]["type"] == "header"
    assert [line["turn"] for line in lines if line["type"] == "turn"] == list(range(turn))
    summary = next(line for line in lines if line["type"] == "summary")
    assert summary["turns_survived"] == turn
    assert out.with_suffix(".html").stat().st_size > 0
    finding = (tmp_path / "reports" / "must" / "finding.yaml").read_text("utf-8")
    assert f"turn {turn}" in finding


@pytest.mark.timeout(120)
def test_a_plugin_that_signals_its_process_group_stops_only_the_soak_process(
    plugins: Path, tmp_path: Path
) -> None:
    # In a session of its own: before, the plug-in's killpg(0) took the command (and pytest) down.
    out = tmp_path / "reports" / "soak.jsonl"
    command = subprocess.run(
        [sys.executable, "-c", "from conformance.cli import main; main()", "soak",
         "--impl", "soak_crashers:kills_its_group", "--turns", "4", "--timeout", "5",
         "--out", str(out), "--finding", str(tmp_path / "reports" / "must" / "finding.yaml")],
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(plugins), *sys.path])},
        capture_output=True, text=True, timeout=100, start_new_session=True, check=False,
    )  # fmt: skip
    assert command.returncode == 1, command.stderr
    assert "stopped at turn 1 (" in command.stderr
    assert "the soak process was killed by signal 15 (SIGTERM" in command.stderr
    assert out.with_suffix(".html").stat().st_size > 0


@pytest.mark.timeout(120)
def test_judging_a_huge_return_is_bounded_and_stops_the_soak_at_that_turn(plugins: Path) -> None:
    # 40,000 invented messages take seconds to judge; with a judge limit of 0.2 s the soak stops
    # at the turn that returned them, named, with the turns before it in the report.
    outcome = run_soak_isolated(
        load_plugin("soak_crashers:floods"),
        next(w for w in builtin_workloads() if w.id == "ops"),
        turns=4,
        shape="openai-chat",
        judge_timeout=0.2,
    )
    failure = outcome.report.failure
    assert failure is not None
    assert failure.turn == 1
    assert failure.message.startswith("timed out judging what the plug-in returned: over 0.2s")
    assert failure.message.endswith("the soak process was killed")
    assert len(outcome.report.turns) == 1


@pytest.mark.timeout(60)
def test_a_new_session_that_raises_is_named(plugins: Path, tmp_path: Path) -> None:
    code, err, _ = _soak(tmp_path, "soak_crashers:NoSession")
    assert code == 2
    assert "new_session() raised RuntimeError: no session for you (at soak_crashers.py:" in err
    assert "internal error" not in err


@pytest.mark.timeout(60)
def test_a_finding_path_that_cannot_be_created_is_refused_before_the_run(
    plugins: Path, tmp_path: Path
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder", "utf-8")
    out = tmp_path / "reports" / "soak.jsonl"
    result = CliRunner().invoke(
        cli,
        ["soak", "--impl", "soak_crashers:StoreRaises", "--turns", "2", "--out", str(out),
         "--finding", str(blocker / "finding.yaml")],
        catch_exceptions=False,
    )  # fmt: skip
    assert result.exit_code == 2, result.stderr  # was exit 70 after the run, no report written
    assert f"--finding {blocker / 'finding.yaml'}: cannot create" in result.stderr
    assert f"({blocker} is not a folder)" in result.stderr
    assert "internal error" not in result.stderr


@pytest.mark.timeout(120)
def test_what_the_plugin_prints_is_kept_in_the_report_not_mixed_into_the_output(
    plugins: Path, tmp_path: Path
) -> None:
    # A real process: the child's file descriptors 1 and 2 are the command's unless captured.
    out = tmp_path / "reports" / "soak.jsonl"
    command = "from conformance.cli import main; main()"
    env = {**os.environ, "PYTHONPATH": str(plugins)}
    result = subprocess.run(
        [sys.executable, "-c", command, "soak", "--impl", "soak_crashers:prints",
         "--turns", "3", "--out", str(out)],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=100, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "plug-in" not in result.stdout
    assert "turns survived" in result.stdout
    assert (
        result.stderr
        == f"the plug-in printed to stdout and stderr: kept in {out} (plugin_output)\n"
    )
    summary = json.loads(out.read_text("utf-8").splitlines()[-1])
    assert summary["plugin_output"] == {
        "stdout": "plug-in says hello on stdout\nplug-in writes to fd 1\n" * 3,
        "stderr": "plug-in says hello on stderr\n" * 3,
    }


@pytest.mark.timeout(60)
def test_a_plugin_that_ends_its_process_before_the_first_turn_is_named_with_its_stderr(
    plugins: Path, tmp_path: Path
) -> None:
    code, err, _ = _soak(tmp_path, "soak_crashers:DiesLoudly")
    assert code == 2
    assert "the plug-in's process ended before the first turn" in err
    assert "exit status 3" in err
    assert "its stderr ended with: Traceback: the model file is missing" in err
