"""One self-contained HTML page: totals, the matrix, filters, and each failing case side by side.

No external assets: the CSS and the few lines of JavaScript (filters by level, shape and status)
are inline, so the page can be attached to a CI run and opened offline.
"""

from __future__ import annotations

import json
from html import escape
from typing import Any, Final

from conformance.events import CaseResult
from conformance.reporting.matrix import (
    failing_cases,
    matrix_rows,
    problem_lines,
    provenance_summary,
    stale_cases,
    stale_warning,
    verdict_line,
)
from conformance.reporting.record import RunRecord
from conformance.scenarios import LEVELS

__all__ = ["render_html"]

_CSS: Final = """
body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#222}
table{border-collapse:collapse;margin:.5em 0 1.5em}
td,th{border:1px solid #ccc;padding:2px 8px;text-align:center}
td.l{text-align:left}.pass{background:#e6f4ea}.fail{background:#fde2e1}.error{background:#f3e5f5}
.na{color:#999}pre{white-space:pre-wrap;word-break:break-all;background:#f7f7f7;padding:6px;
max-height:32em;overflow:auto;margin:0}.side{display:grid;grid-template-columns:1fr 1fr;gap:8px}
details{margin:.4em 0;border:1px solid #ddd;padding:4px 8px}summary{cursor:pointer}
.filters label{margin-right:1em}.stale{border:2px solid #c00;background:#fde2e1;padding:6px 10px}
"""

# Problem cases match on level, shape and status. A matrix row carries ``shape:status`` per case
# (data-cells), so "shape X and status Y" keeps the rows with a Y case *in X*; the other shapes'
# columns (data-col) are hidden. Run once at load: browsers restore the selects on reload.
_JS: Final = """
function applyFilters(){
  const lv=document.getElementById('f-level').value, sh=document.getElementById('f-shape').value,
        st=document.getElementById('f-status').value;
  document.querySelectorAll('[data-case]').forEach(function(el){
    const ok=(!lv||el.dataset.level===lv)&&(!sh||el.dataset.shape===sh)&&(!st||el.dataset.status===st);
    el.style.display=ok?'':'none';
  });
  document.querySelectorAll('tr[data-row]').forEach(function(el){
    const hit=el.dataset.cells.split(' ').some(function(c){
      const i=c.lastIndexOf(':');
      return (!sh||c.slice(0,i)===sh)&&(!st||c.slice(i+1)===st);
    });
    el.style.display=(!lv||el.dataset.level===lv)&&hit?'':'none';
  });
  document.querySelectorAll('[data-col]').forEach(function(el){
    el.style.display=(!sh||el.dataset.col===sh)?'':'none';
  });
}
document.querySelectorAll('.filters select').forEach(function(s){s.addEventListener('change',applyFilters)});
applyFilters();
"""


def _select(name: str, label: str, options: list[str]) -> str:
    items = "".join(f'<option value="{escape(o)}">{escape(o)}</option>' for o in options)
    return f'<label>{label} <select id="f-{name}"><option value="">all</option>{items}</select></label>'


def _json(value: Any) -> str:
    return escape(json.dumps(value, indent=2, ensure_ascii=False)) if value is not None else "—"


def _stale_block(record: RunRecord) -> str:
    warning = stale_warning(record.cases)
    if not warning:
        return ""
    items = "".join(
        f"<li><b>{escape(c.key)}</b>: "
        f"{escape(str((c.verdict or {})['stale_cassette'].get('message', '')))}</li>"
        for c in stale_cases(record.cases)
    )
    return f'<div class="stale"><b>{escape(warning)}</b><ul>{items}</ul></div>'


def _case_block(case: CaseResult) -> str:
    problems = "".join(f"<li>{escape(line)}</li>" for line in problem_lines(case))
    return (
        f'<details data-case data-level="{case.level}" data-shape="{escape(case.shape)}" '
        f'data-status="{case.status}" class="{case.status}"><summary>'
        f"<b>{escape(case.key)}</b> — {case.status} ({case.outcome}; "
        f"{case.tokens if case.tokens is not None else '?'} tokens by {escape(case.counter)})"
        f"</summary><ul>{problems}<li>{escape(verdict_line(case.verdict))}</li></ul>"
        f'<div class="side"><div><b>input (session as the plug-in received it)</b>'
        f"<pre>{_json(case.input)}</pre></div><div><b>output (what it returned)</b>"
        f"<pre>{_json(case.output)}</pre></div></div></details>"
    )


def render_html(record: RunRecord) -> str:
    """The run as one self-contained HTML page (inline CSS and JS, no external assets)."""
    shapes = list(record.shapes)
    plugin = escape(str(record.header.get("plugin", "?")))
    totals = record.totals
    total_rows = "".join(
        f'<tr><td class="l">{level}</td><td>{totals[level].passed}</td><td>{totals[level].failed}'
        f'</td><td>{totals[level].errors}</td><td class="{"pass" if totals[level].ok else "fail"}">'
        f"{'ok' if totals[level].ok else 'FAILED'}</td></tr>"
        for level in LEVELS
    )
    rows = []
    for row in matrix_rows(record.cases, shapes):
        tokens = sorted({f"{c.shape}:{c.status}" for cell in row.cells for c in cell.cases})
        cells = "".join(
            f'<td data-col="{escape(shape)}" class="{cell.status or "na"}">{escape(cell.text)}</td>'
            for shape, cell in zip(shapes, row.cells, strict=True)
        )
        rows.append(
            f'<tr data-row data-level="{row.level}" data-cells="{escape(" ".join(tokens))}">'
            f'<td class="l">{row.level}</td><td class="l" title="{escape(row.title)}">'
            f"{escape(row.scenario)}</td>{cells}</tr>"
        )
    problems = failing_cases(record.cases)
    blocks = "".join(_case_block(c) for c in problems) or "<p>Every case passed.</p>"
    head = "".join(f'<th data-col="{escape(s)}">{escape(s)}</th>' for s in shapes)
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>ctxconf conformance: {plugin}</title>
<style>{_CSS}</style></head><body>
<h1>ctxconf conformance: <code>{plugin}</code></h1>
<p>{len(record.cases)} cases over {len(shapes)} shapes; exit status {record.exit_status}.
Started {escape(str(record.header.get("started", "?")))}, ctxconf {escape(str(record.header.get("ctxconf_version", "?")))}, plug-in protocol {escape(str(record.header.get("protocol_version", "?")))}.</p>
<table><tr><th>level</th><th>pass</th><th>fail</th><th>error</th><th>result</th></tr>{total_rows}</table>
<p>{escape(provenance_summary(record.cases).capitalize())}.</p>
{_stale_block(record)}
<div class="filters">{_select("level", "level", list(LEVELS))}{_select("shape", "shape", shapes)}{_select("status", "status", ["pass", "fail", "error"])}</div>
<h2>Matrix</h2>
<table><tr><th>level</th><th>scenario</th>{head}</tr>{"".join(rows)}</table>
<h2>Problem cases ({len(problems)})</h2>
{blocks}
<script>{_JS}</script>
</body></html>
"""
