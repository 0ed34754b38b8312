"""The terminal matrix: scenario x shape, per-level totals, then the first problems."""

from __future__ import annotations

from typing import Final

from rich.console import Console, Group, RenderableType
from rich.table import Table
from rich.text import Text

from conformance.reporting.matrix import (
    Cell,
    Row,
    failing_cases,
    gate_of,
    gate_text,
    matrix_legend,
    matrix_rows,
    not_judged_text,
    problem_lines,
    provenance_summary,
    stale_warning,
    verdict_line,
)
from conformance.reporting.record import RunRecord
from conformance.scenarios import LEVELS
from reference_impl.shapes import ShapeFact
from reference_impl.wording import plural

__all__ = ["render_terminal", "terminal_renderable"]

# Short column labels (each shape's ``label``) so the matrix fits an 80-column terminal; the
# legend line names them.
_SHORT: Final = ShapeFact(lambda adapter: adapter.label)
_STYLE = {"pass": "green", "fail": "red", "error": "magenta", None: "dim"}


_RESULT_STYLE: Final = {"ok": "green", "FAILED": "bold red", "not reached": "yellow"}
"""The style of a level's result in the totals table (``RunRecord.level_result``)."""


def terminal_renderable(
    record: RunRecord, *, max_problems: int = 20, reports: bool = True
) -> RenderableType:
    """The matrix, totals, provenance line and the first ``max_problems`` problems, for rich
    (``reports``: whether the run wrote its reports, where the rest of the problems are)."""
    shapes = record.shapes
    matrix = Table(
        title=f"ctxconf conformance: {record.header.get('plugin', '?')}",
        title_justify="left",
    )
    matrix.add_column("level")
    matrix.add_column("scenario", no_wrap=True)
    for shape in shapes:
        matrix.add_column(_SHORT.get(shape, shape), justify="center")
    for row in matrix_rows(record.cases, shapes, gate_of(record.header)):
        matrix.add_row(
            row.level,
            Text(row.scenario, style="" if row.status == "pass" else _style(row)),
            *(Text(cell.text, style=_style(cell)) for cell in row.cells),
        )
    totals = Table(title="totals by check level", title_justify="left")
    for column in ("level", "pass", "fail", "error", "result"):
        totals.add_column(column, justify="left" if column == "level" else "right")
    record_totals = record.totals
    for level in LEVELS:
        t, result = record_totals[level], record.level_result(level)
        verdict = Text(result, style=_RESULT_STYLE[result])
        totals.add_row(level, str(t.passed), str(t.failed), str(t.errors), verdict)
    legend = Text(matrix_legend(bool(record.stopped_note)))
    parts: list[RenderableType] = [matrix, legend, totals, Text(provenance_summary(record.cases))]
    warning = stale_warning(record.cases)
    if warning:
        parts.append(Text(warning, style="bold red"))
    problems = failing_cases(record.cases)
    if problems:
        lines = Text()
        for case in problems[:max_problems]:
            lines.append(f"{case.key}\n", style="bold")
            for line in (*problem_lines(case), verdict_line(case.verdict)):
                lines.append(f"  {line}\n")
        if len(problems) > max_problems:
            where = (
                "see the reports"
                if reports
                else "--no-reports wrote none: --format jsonl prints them all"
            )
            lines.append(f"... and {len(problems) - max_problems} more ({where})\n")
        parts.append(lines)
    footer = record.footer
    summary = (
        f"{plural(len(record.cases), 'case')}, {footer.get('statuses', {}).get('pass', 0):,} passed"
        f" in {footer.get('seconds', 0)}s; {record.exit_status_text}"
    )
    if not footer.get("stopped"):
        summary += gate_text(footer)
    else:  # a stopped run's reason is what decided it
        # Only the first word shouts: the reason quotes options (--max-seconds) as they are typed.
        first, _, rest = str(footer["stopped"]).partition(" ")
        stopped = f"{first.upper()} {rest}".rstrip()
        summary += f"; {stopped}: {footer.get('not_run', 0)} case(s) not run"
    if footer.get("hung_calls"):
        summary += f"; {footer['hung_calls']} hung plug-in call(s) killed"
    if footer.get("crashed_workers"):
        summary += f"; {footer['crashed_workers']} worker(s) ended by the plug-in, replaced"
    cassettes = footer.get("cassettes")
    if isinstance(cassettes, dict):
        summary += (
            f"; cassettes: {cassettes.get('files', 0)} file(s), "
            f"{cassettes.get('interactions', 0)} interaction(s) loaded in "
            f"{cassettes.get('load_seconds', 0)}s"
        )
    parts.append(Text(summary))
    left_out = not_judged_text(footer)
    if left_out:
        parts.append(Text(left_out))
    return Group(*parts)


def _style(place: Cell | Row) -> str:
    """A cell's or a scenario's colour: its worst status's, yellow when it fails only below the
    gate."""
    return "yellow" if place.below_gate else _STYLE[place.status]


def render_terminal(
    record: RunRecord, console: Console | None = None, *, reports: bool = True
) -> None:
    """Print :func:`terminal_renderable` to ``console`` (stdout by default)."""
    (console or Console()).print(terminal_renderable(record, reports=reports))
