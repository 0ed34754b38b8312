"""The soak report: JSON lines (the source of truth) and an HTML page with per-turn charts.

JSON lines, report version :data:`~conformance.soak.loop.SOAK_REPORT_VERSION`: one ``header``
line (plug-in, workload, shape, model, seed, budget, counter, caching rules, the price entry
with its date and source), one ``turn`` line per judged turn, one ``summary`` line (the run-level
measurements, where and why the run stopped, and ``plugin_output``: what the plug-in printed,
when it printed anything). :func:`read_jsonl` reads it back;
:func:`render_html` draws the page from those lines only (inline SVG, no script, no network).
"""

from __future__ import annotations

import html
import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Final

from conformance.soak.loop import SoakReport, header

__all__ = ["read_jsonl", "render_html", "report_lines", "write_jsonl"]

_WIDTH: Final = 720
_HEIGHT: Final = 180
_PAD: Final = 36


def report_lines(report: SoakReport, *, finding_path: str | None = None) -> list[dict[str, Any]]:
    """Every line of the JSON-lines report, as data."""
    summary: dict[str, Any] = {"type": "summary", **report.measurements()}
    failure = report.failure
    summary["stopped"] = (
        None
        if failure is None
        else {
            "turn": failure.turn,
            "kind": failure.kind,
            "message": failure.message,
            "checks": [dict(c) for c in failure.checks],
        }
    )
    summary["finding"] = finding_path
    summary["seconds"] = round(report.seconds, 3)
    if report.plugin_output:
        summary["plugin_output"] = dict(report.plugin_output)
    return [header(report), *(t.to_dict() for t in report.turns), summary]


def write_jsonl(lines: Iterable[Mapping[str, Any]], path: Path) -> None:
    """Write the lines, one JSON object each (sorted keys: the same run gives the same bytes)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as out:
        for line in lines:
            out.write(json.dumps(line, sort_keys=True) + "\n")


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """The lines of a soak report, each ended by ``\n`` (and nothing else: a copy rewritten
    without ``ensure_ascii``, by ``jq -c`` say, holds U+2028 or U+0085 raw in a string, where
    :meth:`str.splitlines` ends a line too)."""
    lines = [json.loads(text) for text in path.read_text("utf-8").split("\n") if text.strip()]
    if not lines or lines[0].get("report") != "ctxconf-soak":
        raise ValueError(f"{path}: not a ctxconf soak report (no ctxconf-soak header line)")
    return lines


# ----------------------------------------------------------------------------------- charts


def _polyline(points: Sequence[tuple[float, float]], colour: str) -> str:
    coords = " ".join(f"{x:.1f},{y:.1f}" for x, y in points)
    return f'<polyline fill="none" stroke="{colour}" stroke-width="1.5" points="{coords}"/>'


def _chart(
    title: str,
    turns: Sequence[int],
    series: Sequence[tuple[str, str, Sequence[float]]],
    *,
    top: float | None = None,
    unit: str = "",
) -> str:
    """One line chart: x = turn, one polyline per (label, colour, values)."""
    values = [v for _, _, vs in series for v in vs]
    high = max([*values, top or 0.0, 1e-9])
    last = max(turns[-1] if turns else 1, 1)
    inner_w, inner_h = _WIDTH - 2 * _PAD, _HEIGHT - 2 * _PAD

    def point(turn: int, value: float) -> tuple[float, float]:
        return _PAD + inner_w * turn / last, _HEIGHT - _PAD - inner_h * value / high

    parts = [
        (
            f'<svg xmlns="http://www.w3.org/2000/svg" width="{_WIDTH}" height="{_HEIGHT}" '
            f'role="img" aria-label="{html.escape(title)}">'
        ),
        f'<text x="{_PAD}" y="18" font-size="13">{html.escape(title)}</text>',
        (
            f'<line x1="{_PAD}" y1="{_HEIGHT - _PAD}" x2="{_WIDTH - _PAD}" '
            f'y2="{_HEIGHT - _PAD}" stroke="#999"/>'
        ),
        f'<text x="{_PAD}" y="{_HEIGHT - 8}" font-size="11">turn 0</text>',
        f'<text x="{_WIDTH - _PAD - 60}" y="{_HEIGHT - 8}" font-size="11">turn {last}</text>',
        f'<text x="4" y="{_PAD}" font-size="11">{_number(high)}{html.escape(unit)}</text>',
    ]
    legend_x = _PAD + 200
    for label, colour, vs in series:
        parts.append(_polyline([point(t, v) for t, v in zip(turns, vs, strict=False)], colour))
        parts.append(
            f'<text x="{legend_x}" y="18" font-size="11" fill="{colour}">{html.escape(label)}</text>'
        )
        legend_x += 150
    parts.append("</svg>")
    return "".join(parts)


def render_html(lines: Sequence[Mapping[str, Any]]) -> str:
    """The soak page: settings, measurements, and charts per turn."""
    head = lines[0]
    summary = lines[-1] if lines[-1].get("type") == "summary" else {}
    turns = [line for line in lines if line.get("type") == "turn"]
    xs = [int(t["turn"]) for t in turns]
    budget = float(head["budget"])
    charts = [
        _chart(
            "request tokens per turn against the budget",
            xs,
            [
                ("request", "#1f77b4", [float(t["tokens"]) for t in turns]),
                ("session handed over", "#bbbbbb", [float(t["input_tokens"]) for t in turns]),
                ("budget", "#d62728", [budget] * len(turns)),
            ],
            top=budget,
        ),
        _chart(
            "prompt-cache reuse per turn (share of the request)",
            xs,
            [
                (
                    "common prefix",
                    "#2ca02c",
                    [t["prefix_tokens"] / t["tokens"] if t["tokens"] else 0.0 for t in turns],
                ),
                (
                    f"cached ({head['cache_rules']})",
                    "#9467bd",
                    [t["cached_tokens"] / t["tokens"] if t["tokens"] else 0.0 for t in turns],
                ),
            ],
            top=1.0,
        ),
        _chart(
            "assembler time per turn",
            xs,
            [("ms", "#ff7f0e", [float(t["assembler_ms"]) for t in turns])],
            unit=" ms",
        ),
        _chart(
            "repeated side effects (cumulative) and summary depth",
            xs,
            [
                ("repeats", "#d62728", _cumulative([int(t["repeated"]) for t in turns])),
                ("summary depth", "#8c564b", [float(t["summary_depth"]) for t in turns]),
            ],
        ),
    ]
    rows = "".join(
        f"<tr><th>{html.escape(str(k))}</th><td>{html.escape(json.dumps(v))}</td></tr>"
        for k, v in summary.items()
        if k != "type"
    )
    settings = "".join(
        f"<tr><th>{html.escape(str(k))}</th><td>{html.escape(json.dumps(v))}</td></tr>"
        for k, v in head.items()
        if k != "type"
    )
    title = f"ctxconf soak: {head['plugin']} on {head['workload']} ({head['shape']})"
    return (
        "<!doctype html>\n<html lang=en><head><meta charset=utf-8>"
        f"<title>{html.escape(title)}</title>"
        "<style>body{font-family:sans-serif;margin:2em;max-width:60em}"
        "table{border-collapse:collapse}th,td{border:1px solid #ccc;padding:2px 6px;"
        "text-align:left;font-size:13px}</style></head><body>"
        f"<h1>{html.escape(title)}</h1>"
        "<p>Verdicts are the harness's own (emulated validators or recorded cassettes, as in "
        "<code>ctxconf run</code>); costs are estimates from the price table named below.</p>"
        f"<h2>Measurements</h2><table>{rows}</table>"
        f"<h2>Per turn</h2>{''.join(charts)}"
        f"<h2>Settings</h2><table>{settings}</table>"
        "</body></html>\n"
    )


def _number(value: float) -> str:
    return f"{value:,.0f}" if value >= 10 else f"{value:.2f}"


def _cumulative(values: Sequence[int]) -> list[float]:
    out: list[float] = []
    total = 0
    for v in values:
        total += v
        out.append(float(total))
    return out
