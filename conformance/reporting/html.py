"""One self-contained HTML page: totals, the matrix, filters, and each problem case.

No external assets: the CSS and the JavaScript (filters by level, shape and status; opening a
case) are inline, so the page can be attached to a CI run and opened offline. A matrix cell that
failed links to its first problem case (``#case-N``). Each problem case shows its problems and
verdict at once; its body (the marked-up message list, token bars, the budget-sweep chart and
the raw bodies, :mod:`.html_case`) is built when the case is opened, from one gzip-compressed
JSON map embedded in the page (base64, decompressed by the browser's ``DecompressionStream``),
so a run with hundreds of failing cases stays a light page.
"""

from __future__ import annotations

import base64
import gzip
import json
from collections.abc import Sequence
from html import escape
from typing import Final

from conformance.events import CaseResult
from conformance.reporting.html_case import SweepPoint, case_body
from conformance.reporting.matrix import (
    Cell,
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

__all__ = ["render_html"]

_CSS: Final = """
body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#222}
table{border-collapse:collapse;margin:.5em 0 1.5em}
td,th{border:1px solid #ccc;padding:2px 8px;text-align:center}
td.l{text-align:left}.pass{background:#e6f4ea}.fail{background:#fde2e1}.error{background:#f3e5f5}
.below{background:#fff4d6}
.na{color:#999}pre{white-space:pre-wrap;word-break:break-all;background:#f7f7f7;padding:6px;
max-height:32em;overflow:auto;margin:0}.side{display:grid;grid-template-columns:1fr 1fr;gap:8px}
details{margin:.4em 0;border:1px solid #ddd;padding:4px 8px}summary{cursor:pointer}
.filters label{margin-right:1em}.stale{border:2px solid #c00;background:#fde2e1;padding:6px 10px}
td a{color:inherit;display:block}details:target,details.hit{outline:2px solid #1565c0}
table.msgs td{text-align:left;vertical-align:top}table.msgs td.n{text-align:right}
tr.m-dropped{color:#888;text-decoration:line-through}tr.m-dropped .st{text-decoration:none}
tr.m-after{background:#fffde7}.st{display:inline-block;border-radius:3px;padding:0 4px;
margin-right:4px;font-size:12px;color:#fff;background:#607d8b}.st-kept,.st-merged{background:#2e7d32}
.st-dropped{background:#9e9e9e}.st-cleared{background:#ef6c00}.st-changed{background:#f9a825;color:#000}
.st-summary{background:#1565c0}.st-injected{background:#00838f}.st-synthesized{background:#6a1b9a}
.st-invented{background:#c62828}.bk{font-size:12px;color:#555}.call{color:#1565c0}.res{color:#4e342e}
.bar{display:flex;align-items:center;gap:6px;margin:2px 0}.bl{width:4em}.bt{position:relative;
flex:0 0 60%;height:14px;background:#eee;display:flex}.b{display:inline-block;height:14px}
.lg .b{width:10px;margin:0 3px 0 8px}.budget{position:absolute;top:-3px;bottom:-3px;width:2px;
background:#000}.bn.over{color:#c62828;font-weight:bold}.b-prefix{background:#5c6bc0}
.b-middle{background:#26a69a}.b-suffix{background:#ffa726}.b-added{background:#ef5350}
.b-tools{background:#8d6e63}.b-overhead{background:#bdbdbd}.note{font-size:12px;color:#555}
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

# Case bodies: one gzip'd JSON map {case index: html}, decoded once, on the first open. A matrix
# link (#case-N) opens its case and scrolls to it, even when a filter had hidden it.
_CASES_JS: Final = """
let bodies=null;
function caseBodies(){
  if(!bodies){
    const text=document.getElementById('case-bodies').textContent.trim();
    const bytes=Uint8Array.from(atob(text),function(c){return c.charCodeAt(0)});
    const stream=new Blob([bytes]).stream().pipeThrough(new DecompressionStream('gzip'));
    bodies=new Response(stream).text().then(JSON.parse);
  }
  return bodies;
}
function fill(el){
  const box=el.querySelector('.body');
  if(!box||box.dataset.filled)return Promise.resolve();
  box.dataset.filled='1';
  return caseBodies().then(function(all){box.innerHTML=all[el.dataset.index]||'<p>No body.</p>';});
}
document.querySelectorAll('details[data-case]').forEach(function(el){
  el.addEventListener('toggle',function(){if(el.open)fill(el);});
});
function openTarget(){
  const id=decodeURIComponent(location.hash.slice(1));
  const el=id&&document.getElementById(id);
  if(!el||!el.matches('details[data-case]'))return;
  document.querySelectorAll('details.hit').forEach(function(d){d.classList.remove('hit')});
  el.style.display='';el.open=true;el.classList.add('hit');
  fill(el).then(function(){el.scrollIntoView();});
}
window.addEventListener('hashchange',openTarget);
openTarget();
"""


def _select(name: str, label: str, options: list[str]) -> str:
    items = "".join(f'<option value="{escape(o)}">{escape(o)}</option>' for o in options)
    return f'<label>{label} <select id="f-{name}"><option value="">all</option>{items}</select></label>'


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
        f'<details id="case-{case.index}" data-case data-index="{case.index}" '
        f'data-level="{case.level}" data-shape="{escape(case.shape)}" '
        f'data-status="{case.status}" class="{case.status}"><summary>'
        f"<b>{escape(case.key)}</b> — {case.status} ({case.outcome}; "
        f"{case.tokens if case.tokens is not None else '?'} tokens by {escape(case.counter)})"
        f"</summary><ul>{problems}<li>{escape(verdict_line(case.verdict))}</li></ul>"
        f'<div class="body">loading…</div></details>'
    )


def _sweeps(cases: Sequence[CaseResult]) -> dict[tuple[str, str, str | None], list[SweepPoint]]:
    """Every budget-sweep case's (budget, tokens, status, outcome), per scenario/shape/dialect."""
    out: dict[tuple[str, str, str | None], list[SweepPoint]] = {}
    for case in cases:
        if case.sweep:
            key = (case.scenario, case.shape, case.dialect)
            out.setdefault(key, []).append((case.budget, case.tokens, case.status, case.outcome))
    return out


def _bodies(problems: Sequence[CaseResult], cases: Sequence[CaseResult]) -> str:
    """The problem cases' bodies as base64 of gzip'd JSON (``mtime=0``: the page is stable)."""
    sweeps = _sweeps(cases)
    bodies = {
        str(c.index): case_body(c, sweeps.get((c.scenario, c.shape, c.dialect), ()))
        for c in problems
    }
    raw = json.dumps(bodies, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    return base64.b64encode(gzip.compress(raw, compresslevel=9, mtime=0)).decode("ascii")


def _not_judged(record: RunRecord) -> str:
    """The cases a plain function was not run on, as the terminal and report.md say them."""
    left_out = not_judged_text(record.footer)
    return f'\n<p class="note">{escape(left_out)}</p>' if left_out else ""


def _stopped(record: RunRecord) -> str:
    """A run that ended before its last case (stopped, interrupted, or its report cut short:
    ``ctxconf report --partial``), as report.md says it."""
    note = record.stopped_note
    return f'\n<p class="fail"><b>{escape(note)}.</b></p>' if note else ""


def _cell(shape: str, cell: Cell) -> str:
    """A matrix cell; one with a problem links to its first case of the cell's (worst) status."""
    text = escape(cell.text)
    bad = [c for c in cell.cases if c.status != "pass"]
    if bad:
        first = next(c for c in bad if c.status == cell.status)
        keys = ", ".join(c.key for c in bad[:5]) + (
            f" and {len(bad) - 5} more" if len(bad) > 5 else ""
        )
        text = f'<a href="#case-{first.index}" title="{escape(keys)}">{text}</a>'
    kind = "below" if cell.below_gate else cell.status or "na"
    return f'<td data-col="{escape(shape)}" class="{kind}">{text}</td>'


def _baseline_block(record: RunRecord, shown: int = 50) -> str:
    """The baseline comparison (``ctxconf run --baseline``): the cases that regressed and those
    that newly pass, each linked to its place in the page when it is a problem case."""
    section = baseline_section(record.footer)
    if section is None:
        return ""
    parts = [f"<h2>Baseline</h2>\n<p>{escape(section.headline)}.</p>"]
    parts += [f"<p>note: {escape(note)}</p>" for note in section.notes]
    for title, keys in (
        ("Regressions (passed the gate in the baseline, fail now)", section.regressions),
        ("New passes (re-write the baseline to lock them in)", section.new_passes),
    ):
        if not keys:
            continue
        items = "".join(f"<li><code>{escape(key)}</code></li>" for key in keys[:shown])
        more = f"<li>... and {len(keys) - shown} more</li>" if len(keys) > shown else ""
        parts.append(f"<p>{escape(title)}:</p><ul>{items}{more}</ul>")
    return "\n".join(parts)


_RESULT_CLASS: Final = {"ok": "pass", "FAILED": "fail", "not reached": "below"}
"""The class of a level's result in the totals table (``RunRecord.level_result``)."""


def render_html(record: RunRecord) -> str:
    """The run as one self-contained HTML page (inline CSS and JS, no external assets)."""
    shapes = list(record.shapes)
    plugin = escape(str(record.header.get("plugin", "?")))
    totals = record.totals
    results = {level: record.level_result(level) for level in LEVELS}
    total_rows = "".join(
        f'<tr><td class="l">{level}</td><td>{totals[level].passed}</td><td>{totals[level].failed}'
        f'</td><td>{totals[level].errors}</td><td class="{_RESULT_CLASS[results[level]]}">'
        f"{results[level]}</td></tr>"
        for level in LEVELS
    )
    rows = []
    for row in matrix_rows(record.cases, shapes, gate_of(record.header)):
        tokens = sorted({f"{c.shape}:{c.status}" for cell in row.cells for c in cell.cases})
        cells = "".join(_cell(shape, cell) for shape, cell in zip(shapes, row.cells, strict=True))
        rows.append(
            f'<tr data-row data-level="{row.level}" data-cells="{escape(" ".join(tokens))}">'
            f'<td class="l">{row.level}</td><td class="l" title="{escape(row.title)}">'
            f"{escape(row.scenario)}</td>{cells}</tr>"
        )
    problems = failing_cases(record.cases)
    # of a run that ended early (cut short, stopped), only the cases it recorded are known
    passed = (
        ("Every case recorded passed." if record.cases else "No case was recorded.")
        if record.stopped_note
        else "Every case passed."
    )
    blocks = "".join(_case_block(c) for c in problems) or f"<p>{passed}</p>"
    head = "".join(f'<th data-col="{escape(s)}">{escape(s)}</th>' for s in shapes)
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>ctxconf conformance: {plugin}</title>
<style>{_CSS}</style></head><body>
<h1>ctxconf conformance: <code>{plugin}</code></h1>
<p>{plural(len(record.cases), "case")} over {plural(len(shapes), "shape")}; {record.exit_status_text}{escape(gate_text(record.footer))}.
Started {escape(str(record.header.get("started", "?")))}, ctxconf {escape(str(record.header.get("ctxconf_version", "?")))}, plug-in protocol {escape(str(record.header.get("protocol_version", "?")))}.</p>
<table><tr><th>level</th><th>pass</th><th>fail</th><th>error</th><th>result</th></tr>{total_rows}</table>
<p>{escape(provenance_summary(record.cases).capitalize())}.</p>{_stopped(record)}{_not_judged(record)}
{_stale_block(record)}
{_baseline_block(record)}
<div class="filters">{_select("level", "level", list(LEVELS))}{_select("shape", "shape", shapes)}{_select("status", "status", ["pass", "fail", "error"])}</div>
<h2>Matrix</h2>
<table><tr><th>level</th><th>scenario</th>{head}</tr>{"".join(rows)}</table>
<p class="note">{escape(matrix_legend(bool(record.stopped_note)))}</p>
<h2>Problem cases ({len(problems)})</h2>
<p class="note">A failing matrix cell links to its first problem case; open a case to see its
session marked message by message (kept, merged, changed, cleared, dropped, summary, injected,
synthesized, invented), its tokens per bucket against the budget and, for a budget sweep, where
it breaks.</p>
{blocks}
<script type="application/octet-stream" id="case-bodies">{_bodies(problems, record.cases)}</script>
<script>{_JS}</script>
<script>{_CASES_JS}</script>
</body></html>
"""
