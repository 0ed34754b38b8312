"""Running ``ctxconf`` in process for the command-line tests."""

from __future__ import annotations

import sys
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest
from click.testing import CliRunner

from conformance.cli import cli

__all__ = ["importable_modules", "invoke"]


def invoke(args: list[str]) -> tuple[int, str, str]:
    """``ctxconf args``: exit status, standard output, standard error. ``catch_exceptions=False``:
    an unexpected exception fails the test instead of becoming exit status 1."""
    result = CliRunner().invoke(cli, args, catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def importable_modules(
    folder: Path, modules: Mapping[str, str], monkeypatch: pytest.MonkeyPatch
) -> Iterator[Path]:
    """Plug-in modules (name: source) written into ``folder`` and importable by name for one
    test (a fixture's body: ``yield from``); forgotten afterwards, so the next test imports its
    own copy."""
    folder.mkdir()
    for name, text in modules.items():
        (folder / f"{name}.py").write_text(text, "utf-8")
    monkeypatch.syspath_prepend(str(folder))
    yield folder
    for name in modules:
        sys.modules.pop(name, None)
