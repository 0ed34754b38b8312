"""Option values that name nothing are refused by name (exit 2), never read as "everything" or as
the current folder."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from conformance.cli import cli


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--scenarios", ""], "--scenarios '' names nothing"),
        (["--scenarios", " , "], "--scenarios ' , ' names nothing"),
        (["--scenarios", "single-tool", "--shapes", ",,"], "--shapes ',,' names no shape"),
        (["--scenarios", "single-tool", "--shapes", ""], "--shapes '' names no shape"),
    ],
)
def test_a_run_option_that_names_nothing_is_refused(args: list[str], words: str) -> None:
    result = CliRunner().invoke(cli, ["run", "--no-reports", *args], catch_exceptions=False)
    assert result.exit_code == 2, result.stdout[-500:]
    assert words in result.stderr
