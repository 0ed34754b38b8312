"""``ctxconf scenarios list|validate`` and ``ctxconf run --scenarios PATH`` over scenario files.

Broken scenario files and corpora give named exit-2 errors, never a traceback and never a
silent pass; ``validate`` names a missing cassette and a duplicate scenario id
(unique ids, referenced checks exist, cassettes present).
"""

from __future__ import annotations

import shutil
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner
from paths import CASSETTES

from conformance.cli import cli

GOOD = """version: 1
topic: qa
scenarios:
  - id: qa-case
    title: one user turn
    session:
      - {role: user, text: "hi"}
    budget: 8000
    expect: {outcome: assembled}
"""

COMMANDS = [
    ["scenarios", "validate", "{p}"],
    ["scenarios", "list", "{p}"],
    ["run", "--scenarios", "{p}", "--no-reports", "--shapes", "openai-chat"],
]


def _invoke(template: list[str], path: Path) -> tuple[int, str]:
    args = [str(path) if a == "{p}" else a for a in template]
    result = CliRunner().invoke(cli, args, catch_exceptions=False)
    return result.exit_code, result.stderr


def _assert_named(template: list[str], root: Path, named: Path, *words: str) -> None:
    code, err = _invoke(template, root)
    assert code == 2, err
    assert "Traceback" not in err
    assert str(named) in err
    for word in words:
        assert word in err, err


def _corpus(tmp_path: Path, content: bytes | str, level: str = "must") -> tuple[Path, Path]:
    root = tmp_path / "corpus"
    (root / level).mkdir(parents=True)
    path = root / level / "a.yaml"
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, "utf-8")
    return root, path


@pytest.mark.parametrize("template", COMMANDS, ids=lambda t: " ".join(t[:2]))
def test_binary_scenario_file(tmp_path: Path, template: list[str]) -> None:
    root, path = _corpus(tmp_path, bytes(range(128, 256)) * 3)
    _assert_named(template, root, path, "not UTF-8")


@pytest.mark.parametrize("template", COMMANDS, ids=lambda t: " ".join(t[:2]))
def test_deeply_nested_scenario_file(tmp_path: Path, template: list[str]) -> None:
    root, path = _corpus(tmp_path, "version: 1\nscenarios: " + "[" * 10_000 + "]" * 10_000)
    _assert_named(template, root, path, "nest")


@pytest.mark.parametrize("template", COMMANDS, ids=lambda t: " ".join(t[:2]))
def test_duplicate_key_in_scenario_is_refused(tmp_path: Path, template: list[str]) -> None:
    # budget: 8000 then budget: 10 must not silently mean 10.
    root, path = _corpus(tmp_path, GOOD.replace("budget: 8000", "budget: 8000\n    budget: 10"))
    _assert_named(template, root, path, "duplicate key 'budget'", ":9:")


@pytest.mark.parametrize("template", COMMANDS, ids=lambda t: " ".join(t[:2]))
def test_folder_without_scenarios_is_not_a_pass(tmp_path: Path, template: list[str]) -> None:
    (tmp_path / "notes.txt").write_text("nothing here", "utf-8")
    _assert_named(template, tmp_path, tmp_path, "no scenario files")


def test_run_refuses_unknown_check_instead_of_skipping_it(tmp_path: Path) -> None:
    text = GOOD.replace("{outcome: assembled}", "{outcome: assembled, checks: [no_such_check]}")
    root, path = _corpus(tmp_path, text)
    _assert_named(COMMANDS[2], root, path, "unknown check 'no_such_check'", "qa-case")


def test_run_with_nothing_at_the_level_is_not_a_pass(tmp_path: Path) -> None:
    root, _ = _corpus(tmp_path, GOOD, level="should")
    _assert_named([*COMMANDS[2], "--level", "must"], root, root, "--level must")


def test_good_corpus_still_runs(tmp_path: Path) -> None:
    root, _ = _corpus(tmp_path, GOOD)
    code, err = _invoke(COMMANDS[2], root)
    assert code == 0, err


def test_scenarios_validate_names_a_missing_cassette(tmp_path: Path) -> None:
    cassettes = tmp_path / "cassettes"
    shutil.copytree(CASSETTES, cassettes)
    (cassettes / "gemini" / "single-tool.yaml").unlink()
    out = CliRunner().invoke(cli, ["scenarios", "validate", "--cassettes", str(cassettes)])
    assert out.exit_code == 1, out.output
    missing = [line for line in out.output.splitlines() if "no cassette" in line]
    assert missing == [
        (
            f"gemini/single-tool: no cassette {cassettes / 'gemini' / 'single-tool.yaml'}; "
            "record it with `ctxconf record --shape all --prune`"
        )
    ]


def test_scenarios_validate_names_a_duplicate_id(tmp_path: Path) -> None:
    folder = tmp_path / "must"
    folder.mkdir()
    body = """\
        version: 1
        scenarios:
          - {id: twin, title: t, session: [{role: user, text: hi}], budget: 100,
             expect: {outcome: assembled}}
        """
    (folder / "a.yaml").write_text(textwrap.dedent(body))
    (folder / "b.yaml").write_text(textwrap.dedent(body))
    out = CliRunner().invoke(cli, ["scenarios", "validate", str(tmp_path)])
    assert out.exit_code != 0
    assert "duplicate scenario id 'twin'" in out.output
