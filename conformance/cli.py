"""``ctxconf``: the command line.

Each command lives in its own module under ``conformance.commands`` and is imported only when it
runs, so ``ctxconf --help`` stays fast and a broken optional dependency affects one command only.
Exit statuses: 0 success, 1 a verdict/drift/failure the command exists to report, 2 bad input
(file, option), 3 assembly refused, 70 an internal error (a bug: please report it).
"""

from __future__ import annotations

import importlib
import os
import sys
from pathlib import Path
from typing import Final

import click
from typing_extensions import override

__all__ = ["main"]

# command name -> (module, one-line help). Order is the order of ``ctxconf --help``.
COMMANDS: Final[dict[str, tuple[str, str]]] = {
    "run": (
        "conformance.commands.run",
        "Run an assembler over the scenario corpus; print the matrix.",
    ),
    "soak": (
        "conformance.commands.soak",
        "Drive an assembler through a long simulated agent run; measure it.",
    ),
    "report": (
        "conformance.commands.report",
        "Re-render a saved JSON-lines run as md, html or junit.",
    ),
    "scenarios": ("conformance.commands.scenarios", "List or validate the scenario corpus."),
    "fuzz": (
        "conformance.commands.fuzz",
        "Run the must checks over generated sessions and budgets.",
    ),
    "assemble": (
        "conformance.commands.assemble",
        "Assemble a session into a request within a budget.",
    ),
    "inspect": (
        "conformance.commands.inspect",
        "Show rings, plain turns, violations and tokens of a session.",
    ),
    "count": ("conformance.commands.count", "Count the input tokens of a request body."),
    "convert": ("conformance.commands.convert", "Re-render a request body in another shape."),
    "validate": (
        "conformance.commands.validate",
        "Judge a request body by the provider rule catalog.",
    ),
    "serve": ("conformance.commands.serve", "Run the provider emulator on loopback."),
    "proxy": (
        "conformance.commands.proxy",
        "Forward provider traffic, refusing or recording what our rules reject.",
    ),
    "record": (
        "conformance.commands.record",
        "Record SDK round trips into cassettes (emulator or live).",
    ),
    "diff": ("conformance.commands.diff", "Compare two cassette sets or emulator profiles."),
    "audit": (
        "conformance.commands.audit",
        "Validate every request found in cassettes or JSONL logs.",
    ),
}


class LazyGroup(click.Group):
    @override
    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(COMMANDS)

    @override
    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        entry = COMMANDS.get(cmd_name)
        if entry is None:
            return None
        module = importlib.import_module(entry[0])
        command: click.Command = module.command
        return command

    @override
    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        # Every command reads its input within $CTXCONF_MAX_INPUT_BYTES: a value that is not a
        # size is named once, here, before any command reads a file (a loader would blame the
        # file it was reading) or starts a server; asking for help still works, and a command
        # name that is no command is named first (click's "No such command").
        resolved = super().resolve_command(ctx, args)
        if not ctx.resilient_parsing and not {"-h", "--help"} & set(args):
            from conformance.commands._io import checked_input_limit  # noqa: PLC0415 - lazy CLI

            checked_input_limit()
        return resolved

    @override
    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, help_text) for name, (_, help_text) in COMMANDS.items()]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="ctxconf", prog_name="ctxconf")
def cli() -> None:
    """Prove that an LLM agent's context assembly is safe: budgets kept, tool pairing never broken."""


EXIT_INTERNAL: Final = 70  # EX_SOFTWARE: a bug in ctxconf, not in the user's input
EXIT_SIGINT: Final = 130  # 128 + SIGINT, as the shell reports a process Ctrl-C ended


def main(argv: list[str] | None = None) -> None:
    """The ``ctxconf`` console-script entry point.

    Known bad input is reported by the loader or command that owns it (exit 2, one line naming
    the file). This is only the last resort for a bug: one line and exit 70 instead of a
    traceback (``CTXCONF_TRACEBACK=1`` shows it).
    """
    try:
        status = cli.main(
            args=argv if argv is not None else sys.argv[1:],
            prog_name="ctxconf",
            standalone_mode=False,
        )
    except click.exceptions.Abort as exc:
        # Ctrl-C before a command's own handler is in place (loading the plug-in, reading the
        # cassettes): exit 130 as an interrupted run does, not click's 1 (a failing run).
        click.echo("Aborted!", err=True)
        raise SystemExit(
            EXIT_SIGINT if isinstance(exc.__cause__, KeyboardInterrupt) else 1
        ) from None
    except click.ClickException as exc:  # a bad option or argument: click's message, exit 2
        exc.show()
        raise SystemExit(exc.exit_code) from None
    except Exception as exc:  # last resort: known errors never get here
        if os.environ.get("CTXCONF_TRACEBACK"):
            raise
        tb = exc.__traceback__
        while tb is not None and tb.tb_next is not None:
            tb = tb.tb_next
        where = f" at {Path(tb.tb_frame.f_code.co_filename).name}:{tb.tb_lineno}" if tb else ""
        click.echo(
            f"ctxconf: internal error: {type(exc).__name__}: {exc}{where}; please report it "
            "(CTXCONF_TRACEBACK=1 shows the traceback)",
            err=True,
        )
        raise SystemExit(EXIT_INTERNAL) from None
    raise SystemExit(status if isinstance(status, int) else 0)
