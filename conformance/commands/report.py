"""``ctxconf report FILE.jsonl --format md|html|junit [--out FILE]``: re-render a saved run."""

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
def command(run_file: Path, output_format: str, out: Path | None) -> None:
    """Re-render a saved JSON-lines run (reports/run.jsonl) as md, html or junit."""
    try:
        record = read_jsonl(run_file)
    except ReportFileError as exc:
        fail_input(exc.where or run_file, exc.message)
    text = _RENDERERS[output_format](record)
    if out is None:
        click.echo(text, nl=False)
    else:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text, "utf-8")
