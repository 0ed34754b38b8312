"""``ctxconf audit PATH... [--format table|jsonl]``: which recorded requests would be rejected?

Finds every provider request in vcrpy cassettes (every serialisation ``conformance.recordings``
reads) and JSONL request logs under PATH (folders are walked recursively), detects its shape from
the URL and body, picks the dialect from the host and the profile from the model, and judges it.
One line per request::

    {"file", "interaction", "shape", "dialect", "profile", "verdict", "rule", "evidence",
     "recorded_status"}

Exit status: 0 all accepted, 1 any request would be rejected, 2 a file that cannot be read.
"""

from __future__ import annotations

import json

import click
from rich.console import Console
from rich.table import Table

from conformance.commands._io import EXIT_BAD_INPUT, EXIT_FINDING
from conformance.providers.auditing import AuditRow, audit_paths
from conformance.recordings import RecordingError

__all__ = ["command"]


def _table(rows: list[AuditRow]) -> Table:
    table = Table(title="ctxconf audit (verdicts are emulated)")
    for column in ("file", "#", "shape", "profile", "verdict", "rule", "evidence", "recorded"):
        table.add_column(column, overflow="fold")
    for row in rows:
        verdict = row.verdict
        style = "green" if verdict.accepted else "red"
        table.add_row(
            row.file,
            str(row.interaction),
            row.shape,
            verdict.profile or "",
            f"[{style}]{verdict.verdict}[/{style}]",
            verdict.rule or "",
            verdict.evidence or "",
            "" if row.recorded_status is None else str(row.recorded_status),
        )
    return table


@click.command("audit")
@click.argument("paths", metavar="PATH...", nargs=-1, required=True)
@click.option(
    "--format", "fmt", type=click.Choice(["table", "jsonl"]), default="table", show_default=True
)
def command(paths: tuple[str, ...], fmt: str) -> None:
    """Judge every provider request recorded in cassettes or JSONL logs under PATH."""
    rows: list[AuditRow] = []
    try:
        for row in audit_paths(paths):
            rows.append(row)
            if fmt == "jsonl":
                click.echo(json.dumps(row.to_dict(), ensure_ascii=False))
    except RecordingError as exc:
        click.echo(f"ctxconf: error: {exc}", err=True)
        raise SystemExit(EXIT_BAD_INPUT) from None
    if fmt == "table":
        Console(soft_wrap=True).print(_table(rows))
    if any(not row.verdict.accepted for row in rows):
        raise SystemExit(EXIT_FINDING)
