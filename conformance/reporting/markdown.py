"""Markdown for pull-request comments: totals, the matrix, and the problems folded away."""

from __future__ import annotations

from conformance.reporting.matrix import (
    baseline_section,
    failing_cases,
    gate_of,
    gate_text,
    matrix_legend,
    matrix_rows,
    not_judged_text,
    problem_lines,
    provenance_summary,
    stale_cases,
    stale_warning,
    verdict_line,
)
from conformance.reporting.record import RunRecord
from conformance.scenarios import LEVELS
from reference_impl.wording import plural

__all__ = ["render_markdown"]


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _baseline(record: RunRecord, shown: int) -> list[str]:
    """The baseline comparison (``ctxconf run --baseline``): which cases regressed, which
    newly pass, so that the comment says what the exit status was decided on."""
    section = baseline_section(record.footer)
    if section is None:
        return []
    out = [f"**{_cell(section.headline[0].upper() + section.headline[1:])}.**", ""]
    out += [f"> note: {_cell(note)}" for note in section.notes]
    if section.notes:
        out.append("")
    for title, keys in (
        ("Regressions (passed the gate in the baseline, fail now)", section.regressions),
        ("New passes (re-write the baseline to lock them in)", section.new_passes),
    ):
        if not keys:
            continue
        out.append(f"{title}:")
        out += [f"- `{key}`" for key in keys[:shown]]
        if len(keys) > shown:
            out.append(f"- ... and {len(keys) - shown} more (see `run.jsonl`)")
        out.append("")
    return out


def _stopped(record: RunRecord) -> list[str]:
    """A bold line when the run ended before its last case (a signal or a run-level budget),
    or its report was cut short (no footer: ``ctxconf report --partial``)."""
    note = record.stopped_note
    return [f"**{_cell(note)}.**", ""] if note else []


def _not_judged(record: RunRecord) -> list[str]:
    """How many cases a plain function was not judged on, and why (none: nothing)."""
    left_out = not_judged_text(record.footer)
    return [f"{_cell(left_out)}.", ""] if left_out else []


def render_markdown(record: RunRecord, *, max_problems: int = 50) -> str:
    """The run as Markdown for a pull-request comment; at most ``max_problems`` problem cases
    listed."""
    header = record.header
    out = [
        f"## ctxconf conformance: `{header.get('plugin', '?')}`",
        "",
        (
            f"{plural(len(record.cases), 'case')} over {plural(len(record.shapes), 'shape')}; "
            f"{record.exit_status_text}{gate_text(record.footer)}."
        ),
        "",
        *_stopped(record),
        *_not_judged(record),
        *_baseline(record, max_problems),
        "| level | pass | fail | error | result |",
        "|---|---:|---:|---:|---|",
    ]
    totals = record.totals
    for level in LEVELS:
        t, result = totals[level], record.level_result(level)
        shown = f"**{result}**" if result == "FAILED" else result
        out.append(f"| {level} | {t.passed} | {t.failed} | {t.errors} | {shown} |")
    out += ["", provenance_summary(record.cases).capitalize() + "."]
    warning = stale_warning(record.cases)
    if warning:
        out += ["", f"> **{_cell(warning)}**", ""]
        out += [
            f"> - `{c.key}`: {_cell(str(c.verdict['stale_cassette'].get('message', '')))}"
            for c in stale_cases(record.cases)[:max_problems]
            if c.verdict
        ]
    shapes = record.shapes
    out += ["", "| level | scenario | " + " | ".join(shapes) + " |"]
    out.append("|---|---|" + "|".join(":-:" for _ in shapes) + "|")
    for row in matrix_rows(record.cases, shapes, gate_of(record.header)):
        out.append(
            f"| {row.level} | `{row.scenario}` | "
            + " | ".join(_cell(c.text) for c in row.cells)
            + " |"
        )
    out += ["", matrix_legend(bool(record.stopped_note))]
    problems = failing_cases(record.cases)
    if problems:
        out += ["", f"<details><summary>{len(problems)} problem case(s)</summary>", ""]
        for case in problems[:max_problems]:
            out.append(f"- `{case.key}`")
            out += [
                f"  - {_cell(line)}" for line in (*problem_lines(case), verdict_line(case.verdict))
            ]
        if len(problems) > max_problems:
            out.append(f"- ... and {len(problems) - max_problems} more (see report.html)")
        out += ["", "</details>"]
    return "\n".join(out) + "\n"
