"""The console script's last resort. An unexpected exception (a bug, not bad input) prints
one ``internal error, please report`` line and exits 70, never a bare traceback."""

from __future__ import annotations

from pathlib import Path

import pytest
from paths import EXAMPLES

import conformance.commands.count as count_command
from conformance.cli import EXIT_INTERNAL, main

EXAMPLE = EXAMPLES / "session.json"


def _boom(*_: object, **__: object) -> object:
    raise RuntimeError("simulated bug")


def test_unexpected_exception_is_one_line_exit_70(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("CTXCONF_TRACEBACK", raising=False)
    monkeypatch.setattr(count_command, "counter_for", _boom)
    with pytest.raises(SystemExit) as exit_info:
        main(["count", str(EXAMPLE), "--shape", "openai-chat"])
    assert exit_info.value.code == EXIT_INTERNAL == 70
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert len(err.strip().splitlines()) == 1
    assert "internal error: RuntimeError: simulated bug" in err
    assert "please report" in err


def test_traceback_on_request(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CTXCONF_TRACEBACK", "1")
    monkeypatch.setattr(count_command, "counter_for", _boom)
    with pytest.raises(RuntimeError, match="simulated bug"):
        main(["count", str(EXAMPLE), "--shape", "openai-chat"])


def test_bad_input_keeps_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "missing.json"
    with pytest.raises(SystemExit) as exit_info:
        main(["count", str(missing), "--shape", "openai-chat"])
    assert exit_info.value.code == 2
    assert str(missing) in capsys.readouterr().err
