"""Plug-ins that return hostile or absurd values, or misbehave while they load: each is named in
its case (or as a load error, exit 2), the run never ends in an internal error (exit 70) or a
false exit status, and every report is written."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_support import importable_modules
from click.testing import CliRunner

from conformance.cli import cli
from conformance.errors import PluginLoadError
from conformance.loading import load_plugin
from reference_impl.documents import loads_json

TWO = "single-tool,broken-orphan-result"

HOSTILE = '''
from collections.abc import Mapping


class Touchy(str):
    """A role string whose comparison raises: the harness must never compare the plug-in's own
    objects."""

    def __eq__(self, other):
        raise RuntimeError("do not compare me")

    __hash__ = str.__hash__


def touchy_str(messages, budget):
    return [{**m, "role": Touchy(m["role"])} for m in messages]


class _Unreadable(Mapping):
    def __getitem__(self, key):
        raise RuntimeError("do not read me")

    def __iter__(self):
        raise RuntimeError("do not iterate me")

    def __len__(self):
        return 1


class UnreadableBody:
    shape = "openai-chat"

    def assemble(self, request):
        return _Unreadable()


class NanTemperature:
    shape = "openai-chat"

    def assemble(self, request):
        return {**request.body, "temperature": float("nan")}


class MinusInfinity:
    shape = "openai-chat"

    def assemble(self, request):
        return {**request.body, "metadata": {"scores": [1.0, float("-inf")]}}


def deep(messages, budget):
    nested = "x"
    for _ in range(100_000):
        nested = [nested]
    return [*messages[:-1], {**messages[-1], "name": nested}]


def a_set(messages, budget):
    return {1, 2}


def bloated(messages, budget):
    return [*messages, {"role": "user", "content": "word " * 100_000}]


def huge(messages, budget):
    return [*messages, {"role": "user", "content": "word " * 300_000}]


def _tool_call_id(message):
    return message["tool_call_id"]


def raises(messages, budget):
    return _tool_call_id(messages[0])
'''


@pytest.fixture
def hostile(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    yield from importable_modules(tmp_path / "plugins", {"hostile_plugins": HOSTILE}, monkeypatch)


def _cases(reports: Path) -> list[dict[str, object]]:
    text = (reports / "run.jsonl").read_text("utf-8")
    lines = [loads_json(line) for line in text.splitlines()]  # strict JSON: no NaN
    assert lines[0]["type"] == "header"
    assert lines[-1]["type"] == "footer"
    cases = [line for line in lines if line["type"] == "case"]
    assert len(cases) == lines[0]["case_count"]
    return cases


@pytest.mark.timeout(120)
@pytest.mark.parametrize(
    ("plugin", "words"),
    [
        ("touchy_str", None),  # made plain data: judged like any body
        ("UnreadableBody", "malformed return: not JSON data"),
        ("deep", "malformed return: not JSON data (nested deeper than the interpreter can walk)"),
        ("bloated", "over the input limit of 100,000 bytes (set CTXCONF_MAX_INPUT_BYTES"),
        # JSON has no NaN or Infinity: not JSON data, and the report stays strict JSON (_cases)
        (
            "NanTemperature",
            "malformed return: not JSON data (NaN at temperature is not a JSON number)",
        ),
        ("MinusInfinity", "not JSON data (-Infinity at metadata.scores.1 is not a JSON number)"),
        # the wrapper's finding on what it returned: it raised nothing
        (
            "a_set",
            (
                "malformed return: a_set returned set; a message function must return a list "
                "of openai-chat message dicts"
            ),
        ),
    ],
)
def test_a_hostile_return_value_is_named_in_its_case_and_every_report_is_written(
    hostile: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    plugin: str,
    words: str | None,
) -> None:
    monkeypatch.setenv("CTXCONF_MAX_INPUT_BYTES", "100kB")
    reports = tmp_path / "reports"
    result = CliRunner().invoke(
        cli,
        ["run", "--impl", f"hostile_plugins:{plugin}", "--scenarios", TWO, "--shapes",
         "openai-chat", "--report-dir", str(reports)],
        catch_exceptions=False,
    )  # fmt: skip
    assert "internal error" not in result.stderr
    assert result.exit_code == 1, result.stderr
    cases = _cases(reports)
    for name in ("report.md", "report.html", "junit.xml"):
        assert (reports / name).stat().st_size > 0
    if words is None:
        assert all(c["status"] in {"pass", "fail"} for c in cases), cases
    else:
        assert all(c["status"] == "error" for c in cases), cases
        assert all(words in str(c["reason"]) for c in cases), [c["reason"] for c in cases]


@pytest.mark.timeout(120)
def test_an_exception_is_named_with_the_plugins_line_in_every_report(
    hostile: Path, tmp_path: Path
) -> None:
    reports = tmp_path / "reports"
    result = CliRunner().invoke(
        cli,
        ["run", "--impl", "hostile_plugins:raises", "--scenarios", "single-tool", "--shapes",
         "openai-chat", "--report-dir", str(reports)],
        catch_exceptions=False,
    )  # fmt: skip
    assert result.exit_code == 1, result.stderr
    line = HOSTILE[: HOSTILE.index('return message["tool_call_id"]')].count("\n") + 1
    where = f"(at hostile_plugins.py:{line}, in _tool_call_id)"
    reason = f"the plug-in raised KeyError: 'tool_call_id' {where}"
    assert reason in " ".join(result.stdout.split())  # the terminal
    cases = _cases(reports)
    assert cases
    assert all(c["reason"] == reason for c in cases), [c["reason"] for c in cases]
    for name in ("report.md", "report.html", "junit.xml"):
        assert where in (reports / name).read_text("utf-8"), name


@pytest.mark.timeout(120)
def test_a_huge_returned_body_is_kept_in_the_report_as_its_size_and_digest(
    hostile: Path, tmp_path: Path
) -> None:
    """Under the input limit but over what a report keeps of one body (1 MiB of JSON): the
    failing case's output is its size, digest and opening, so a plug-in returning such bodies
    on every case cannot fill the disk with ``run.jsonl``."""
    reports = tmp_path / "reports"
    result = CliRunner().invoke(
        cli,
        ["run", "--impl", "hostile_plugins:huge", "--scenarios", "single-tool", "--shapes",
         "openai-chat", "--report-dir", str(reports)],
        catch_exceptions=False,
    )  # fmt: skip
    assert result.exit_code == 1, result.stderr
    cases = _cases(reports)
    assert cases
    assert all(case["status"] == "fail" for case in cases), cases
    for case in cases:
        output = case["output"]
        assert isinstance(output, dict)
        assert "over the 1,048,576 a report keeps of one body" in output["omitted"]
        assert len(output["sha256"]) == 64
        assert output["opening"].startswith("{")
    assert (reports / "run.jsonl").stat().st_size < 200_000
    assert (reports / "report.html").stat().st_size < 1_000_000


# ------------------------------------------------------------------------------ loading

LOADING = {
    "exits_zero": "import sys\nsys.exit(0)\n",
    "exits_three": "import sys\nsys.exit(3)\n",
    "interrupts": "raise KeyboardInterrupt\n",
    "ends_process": "import os\nos._exit(0)\n",
    "waits": "import time\ntry:\n    time.sleep(3600)\nexcept Exception:\n    pass\n",
    "forks": (
        "import os\npid = os.fork()\nif pid == 0:\n    os._exit(0)\nos.waitpid(pid, 0)\n\n"
        "def assemble(messages, budget):\n    return messages\n"
    ),
    "chatty": (
        "import os, sys\nprint('banner printed at import')\n"
        "os.write(1, b'written to fd 1 at import\\n')\n\n"
        "def assemble(messages, budget):\n    return messages\n"
    ),
    "constructs": (
        "class Broken:\n    shape = 'openai-chat'\n\n    def __init__(self):\n"
        "        raise RuntimeError('no database')\n\n    def assemble(self, request):\n"
        "        return dict(request.body)\n\n\n"
        "class Sly:\n    @property\n    def shape(self):\n        raise LookupError('which?')\n\n"
        "    def assemble(self, request):\n        return dict(request.body)\n"
    ),
}


@pytest.fixture
def loading(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    yield from importable_modules(tmp_path / "loading", LOADING, monkeypatch)


@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    ("spec", "words"),
    [
        ("exits_zero:f", "loading 'exits_zero:f' called sys.exit(0) (at exits_zero.py:2)"),
        ("exits_three:f", "loading 'exits_three:f' called sys.exit(3) (at exits_three.py:2)"),
        ("ends_process:f", "loading 'ends_process:f' called os._exit(0) (at ends_process.py:2)"),
        ("constructs:Broken", "raised RuntimeError: no database (at constructs.py:5)"),
        # no Ctrl-C was pressed: the plug-in's own exception, not "Aborted!" and exit 1
        ("interrupts:f", "raised KeyboardInterrupt (at interrupts.py:1) without a Ctrl-C"),
        ("constructs:Sly", "raised LookupError: which? (at constructs.py:14)"),
    ],
)
def test_a_plugin_that_fails_or_ends_the_process_while_loading_is_a_load_error(
    loading: Path, tmp_path: Path, spec: str, words: str
) -> None:
    reports = tmp_path / "reports"
    result = CliRunner().invoke(
        cli, ["run", "--impl", spec, "--report-dir", str(reports)], catch_exceptions=False
    )
    # exit 2 (bad input) with the reason: not the plug-in's own status (0 read as a pass)
    assert result.exit_code == 2, (result.exit_code, result.stderr)
    assert words in result.stderr
    assert "internal error" not in result.stderr
    assert not reports.exists()


@pytest.mark.timeout(60)
def test_a_plugin_whose_import_waits_forever_is_interrupted(loading: Path) -> None:
    with pytest.raises(PluginLoadError, match=r"loading 'waits:f' took longer than 0\.5s"):
        load_plugin("waits:f", timeout=0.5)


@pytest.mark.timeout(60)
def test_a_process_the_plugin_forks_while_loading_may_end_itself(loading: Path) -> None:
    plugin = load_plugin("forks:assemble")
    assert plugin.shapes == ("openai-chat",)


@pytest.mark.timeout(120)
def test_what_a_plugin_prints_while_it_loads_stays_out_of_the_jsonl_output(
    loading: Path, tmp_path: Path
) -> None:
    # A real process: the import writes to file descriptor 1 itself, which CliRunner cannot see.
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(loading), *sys.path])}
    args = [sys.executable, "-c", "from conformance.cli import main; main()", "run"]
    args += ["--impl", "chatty:assemble", "--scenarios", "single-tool", "--shapes", "openai-chat"]
    args += ["--format", "jsonl", "--no-reports"]
    done = subprocess.run(args, check=False, capture_output=True, text=True, env=env, timeout=110)
    assert done.returncode == 0, done.stderr
    lines = [loads_json(line) for line in done.stdout.splitlines()]  # every line JSON
    assert [line["type"] for line in (lines[0], lines[-1])] == ["header", "footer"]
    assert "banner printed at import" in done.stderr
    assert "written to fd 1 at import" in done.stderr
