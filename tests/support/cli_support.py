"""Running ``ctxconf`` in process for the command-line tests."""

from __future__ import annotations

from click.testing import CliRunner

from conformance.cli import cli

__all__ = ["invoke"]


def invoke(args: list[str]) -> tuple[int, str, str]:
    """``ctxconf args``: exit status, standard output, standard error. ``catch_exceptions=False``:
    an unexpected exception fails the test instead of becoming exit status 1."""
    result = CliRunner().invoke(cli, args, catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr
