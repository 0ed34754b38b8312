"""``ctxconf report FILE.jsonl --format md|html|junit [--out FILE] [--partial]``: re-render a
saved run.

A run without its footer line (killed while writing, its last line often cut short) is exit 2,
named; ``--partial`` renders the cases it recorded instead, marked as cut short in the report,
with a warning on stderr that says which line was left out."""

from __future__ import annotations

from pathlib import Path

import click

from conformance.commands._io import fail_input
from conformance.errors import ReportFileError
from conformance.reporting import read_jsonl, render_html, render_junit, render_markdown

__all__ = ["command"]

_RENDERERS = {"md": render_markdown, "html": render_html, "junit": render_junit}


@click.command(name="report")
@click.argument("run_file", type=click.Path(path_type=Path))
@click.option(
    "--format",
    "output_format",
    type=click.Choice(sorted(_RENDERERS)),
    default="md",
    show_default=True,
)
@click.option(
    "--out",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Write here instead of standard output.",
)
@click.option(
    "--partial",
    is_flag=True,
    help="Render a run cut short (no footer line, e.g. killed) from the cases it recorded, "
    "marked as cut short; without it such a run is refused (exit 2).",
)
def command(run_file: Path, output_format: str, out: Path | None, partial: bool) -> None:
    """Re-render a saved JSON-lines run (reports/run.jsonl) as md, html or junit."""
    try:
        record = read_jsonl(run_file, partial=partial)
    except ReportFileError as exc:
        fail_input(exc.where or run_file, exc.message)
    if record.cut_short:
        click.echo(
            f"ctxconf: warning: {run_file}: the run was cut short ({record.cut_short}); "
            "the report holds the cases recorded",
            err=True,
        )
    text = _RENDERERS[output_format](record)
    if out is None:
        click.echo(text, nl=False)
    else:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text, "utf-8")
