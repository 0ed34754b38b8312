"""The body of one problem case in the HTML report: the session as a marked-up message list,
token bars per bucket against the budget, a budget-sweep chart, and the raw request bodies.

Everything comes from the case record: its ``input``/``output`` bodies (parsed back with the
shape's adapter to show each message) and its ``markup`` (:mod:`conformance.case_markup`: each
message's status and bucket, tokens per bucket). A record without markup (written before it
existed) or with a body that does not parse shows the raw bodies only, and says so.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from html import escape
from typing import Any, Final

from typing_extensions import assert_never

from conformance.case_markup import BUCKETS
from conformance.events import CaseResult
from reference_impl.errors import CtxconfError
from reference_impl.shapes import get_shape
from reference_impl.transcript import Message, Part, Transcript

__all__ = ["SweepPoint", "case_body", "sweep_chart", "token_bars"]

_PREVIEW: Final = 360
SweepPoint = tuple[int, int | None, str, str]
"""(budget, tokens, status, outcome) of one case of a budget sweep."""


def _short(text: str, limit: int = _PREVIEW) -> str:
    return text if len(text) <= limit else f"{text[:limit]}… ({len(text)} chars)"


def _part(part: Part) -> str:
    match part.kind:
        case "text":
            return escape(_short(part.text))
        case "summary":
            return f"<i>summary:</i> {escape(_short(part.text))}"
        case "tool_call":
            return (
                f'<span class="call">→ {escape(part.name)}({escape(_short(part.arguments, 120))})'
                f" <code>{escape(part.id)}</code></span>"
            )
        case "tool_result":
            body = " ".join(p.text if p.kind == "text" else f"[{p.kind}]" for p in part.content)
            flag = " <b>error</b>" if part.is_error else ""
            return (
                f'<span class="res">← <code>{escape(part.call_id)}</code>{flag}: '
                f"{escape(_short(body, 200))}</span>"
            )
        case "reasoning":
            return f"<i>[reasoning artifact, {escape(part.origin)}]</i>"
        case "image" | "file":
            return f"<i>[{part.kind}, {escape(part.media_type or part.source)}]</i>"
        case _:
            assert_never(part)


def _message(message: Message) -> str:
    return "<br>".join(filter(None, (_part(p) for p in message.parts))) or "<i>(empty)</i>"


def _parsed(shape: str, body: Mapping[str, Any] | None) -> Transcript | None:
    if not isinstance(body, Mapping):
        return None
    try:
        return get_shape(shape).parse_request(dict(body))
    except (CtxconfError, TypeError, ValueError, KeyError):
        return None


def _badge(status: str | None) -> str:
    if not status:
        return ""
    return f'<span class="st st-{escape(status)}">{escape(status)}</span>'


def _row(
    index: str, message: Message, status: str | None, bucket: str | None, tokens: object
) -> str:
    where = f'<span class="bk">{escape(bucket)}</span>' if bucket else ""
    return (
        f'<tr class="m m-{escape(status or "none")}"><td>{index}</td><td>'
        f"{escape(message.role)}</td><td>{_badge(status)}{where}</td>"
        f'<td class="n">{escape(str(tokens))}</td><td class="l">{_message(message)}</td></tr>'
    )


def message_list(session: Transcript, view: Transcript | None, markup: Mapping[str, Any]) -> str:
    """The session in order, each message marked; what the view adds (summary, injected,
    invented…) is listed where it appears in the view, and a changed or cleared message shows
    what it became."""
    entries: Sequence[Mapping[str, Any]] = markup.get("session") or []
    links: Sequence[Mapping[str, Any]] = markup.get("view") or []
    if len(entries) != len(session.messages) or (view and len(links) != len(view.messages)):
        return "<p>The markup does not match the bodies; see the raw bodies below.</p>"
    added: dict[int, list[int]] = {}
    placed_after = -1
    for number, link in enumerate(links):
        sources = list(link.get("sources") or [])
        if sources:
            placed_after = max(sources)
        else:
            added.setdefault(placed_after, []).append(number)
    rows: list[str] = []

    def new_rows(after: int) -> None:
        assert view is not None
        for number in added.get(after, []):
            link = links[number]
            rows.append(
                _row(
                    f"view {number}",
                    view.messages[number],
                    str(link["status"]),
                    str(link.get("bucket") or ""),
                    link.get("tokens", "?"),
                )
            )

    if view is not None:
        new_rows(-1)
    for i, (message, entry) in enumerate(zip(session.messages, entries, strict=True)):
        status = entry.get("status")
        rows.append(_row(str(i), message, status, entry.get("bucket"), entry.get("tokens", "?")))
        held = entry.get("view")
        if view is not None and status in ("changed", "cleared") and isinstance(held, int):
            rows.append(
                f'<tr class="m m-after"><td></td><td></td><td>became view {held}</td>'
                f'<td class="n">{escape(str(links[held].get("tokens", "?")))}</td>'
                f'<td class="l">{_message(view.messages[held])}</td></tr>'
            )
        if view is not None:
            new_rows(i)
    head = "<tr><th>#</th><th>role</th><th>fate</th><th>tokens</th><th>content</th></tr>"
    return f'<table class="msgs">{head}{"".join(rows)}</table>'


def token_bars(markup: Mapping[str, Any]) -> str:
    """Two stacked bars, the session as received and the view returned, one segment per
    bucket, on one scale with the budget marked."""
    tokens: Mapping[str, Mapping[str, int]] = markup.get("tokens") or {}
    budget = int(markup.get("budget") or 0)
    bars = [(name, tokens[name]) for name in ("session", "view") if name in tokens]
    if not bars:
        return ""
    scale = max([budget, *(max(t.get("total", 0), 1) for _, t in bars)])
    mark = 100 * budget / scale
    out = []
    for name, totals in bars:
        segments = "".join(
            f'<span class="b b-{b}" style="width:{100 * max(totals.get(b, 0), 0) / scale:.2f}%" '
            f'title="{b}: {totals.get(b, 0)}"></span>'
            for b in BUCKETS
            if totals.get(b, 0) > 0
        )
        over = " over" if totals.get("total", 0) > budget else ""
        out.append(
            f'<div class="bar"><span class="bl">{name}</span><span class="bt">{segments}'
            f'<span class="budget" style="left:{mark:.2f}%"></span></span>'
            f'<span class="bn{over}">{totals.get("total", 0)} / {budget}</span></div>'
        )
    legend = "".join(f'<span class="lg"><span class="b b-{b}"></span>{b}</span>' for b in BUCKETS)
    return f'<div class="bars">{"".join(out)}<div>{legend} <span class="lg">| budget</span></div></div>'


_TICKS: Final = 8
_COLOURS: Final = {"pass": "#2e7d32", "fail": "#c62828", "error": "#6a1b9a"}


def sweep_chart(points: Sequence[SweepPoint], current: int) -> str:
    """Tokens of the returned request per budget (inline SVG): the diagonal is the budget, a
    point above it is over; colour is the case status, a hollow point a refusal."""
    usable = sorted(points)
    if len(usable) < 2:
        return ""
    width, height, pad = 480, 190, 36
    step = max(1, -(-len(usable) // _TICKS))
    ticks = list(range(0, len(usable), step))
    if ticks[-1] != len(usable) - 1:  # the last budget is labelled, its close neighbour not
        ticks[-1 if len(usable) - 1 - ticks[-1] < step / 2 else len(ticks) :] = [len(usable) - 1]
    labelled = {usable[i][0] for i in ticks}
    top = max([b for b, *_ in usable] + [t or 0 for _, t, *_ in usable]) or 1
    left, right = usable[0][0], usable[-1][0]
    span = max(right - left, 1)

    def x(budget: float) -> float:
        return pad + (budget - left) / span * (width - 2 * pad)

    def y(tokens: float) -> float:
        return height - pad - tokens / top * (height - 2 * pad)

    diagonal = (
        f'<line x1="{x(left):.1f}" y1="{y(left):.1f}" x2="{x(right):.1f}" y2="{y(right):.1f}" '
        f'stroke="#999" stroke-dasharray="4 3"/>'
    )
    label = (
        f'<text x="{x(right):.1f}" y="{y(right) - 4:.1f}" text-anchor="end" font-size="10">'
        f"tokens = budget</text>"
    )
    parts = [diagonal, label]
    for budget, tokens, status, outcome in usable:
        colour = _COLOURS.get(status, "#555")
        value = tokens if tokens is not None else 0
        fill = "none" if outcome != "assembled" else colour
        ring = ' stroke-width="3"' if budget == current else ""
        parts.append(
            f'<circle cx="{x(budget):.1f}" cy="{y(value):.1f}" r="4" fill="{fill}" '
            f'stroke="{colour}"{ring}><title>budget {budget}: {status}, {outcome}, '
            f"{tokens if tokens is not None else 'no'} tokens</title></circle>"
        )
        if budget in labelled:
            parts.append(
                f'<text x="{x(budget):.1f}" y="{height - pad + 14}" text-anchor="middle" '
                f'font-size="10">{budget}</text>'
            )
    parts.append(
        f'<text x="4" y="12" font-size="10">tokens (max {top})</text>'
        f'<text x="{width / 2:.0f}" y="{height - 4}" text-anchor="middle" font-size="10">'
        f"budget</text>"
    )
    failing = [b for b, _, s, _ in usable if s != "pass"]
    passing = [b for b, _, s, _ in usable if s == "pass"]
    caption = (
        f"fails at {', '.join(map(str, failing)) or 'no budget'}; "
        f"passes at {', '.join(map(str, passing)) or 'no budget'}"
    )
    svg = (
        f'<svg class="sweep" viewBox="0 0 {width} {height}" width="{width}" height="{height}" '
        f'role="img" aria-label="budget sweep: {escape(caption)}">{"".join(parts)}</svg>'
    )
    return f"<figure>{svg}<figcaption>Budget sweep: {escape(caption)}.</figcaption></figure>"


def _raw(value: Any) -> str:
    return escape(json.dumps(value, indent=1, ensure_ascii=False)) if value is not None else "—"


def case_body(case: CaseResult, sweep: Sequence[SweepPoint] = ()) -> str:
    """The lazily shown part of a problem case (see the module docstring)."""
    blocks: list[str] = []
    markup = case.markup
    session = _parsed(case.shape, case.input)
    view = _parsed(case.shape, case.output)
    if markup and isinstance(markup.get("tokens"), Mapping):
        blocks.append(token_bars(markup))
    if sweep:
        blocks.append(sweep_chart(sweep, case.budget))
    if markup and session is not None:
        note = (
            "Buckets are the reference policy's reading of the session (prefix, middle, suffix)."
            if markup.get("buckets_known")
            else "Buckets unknown: the reference policy cannot read this session."
        )
        shown = view if markup.get("view") is not None else None
        blocks.append(f'<p class="note">{note}</p>{message_list(session, shown, markup)}')
    else:
        blocks.append("<p>No message markup for this case; the raw bodies follow.</p>")
    blocks.append(
        '<details class="raw"><summary>raw request bodies</summary><div class="side">'
        f"<div><b>input (session as the plug-in received it)</b><pre>{_raw(case.input)}</pre>"
        f"</div><div><b>output (what it returned)</b><pre>{_raw(case.output)}</pre></div>"
        "</div></details>"
    )
    return "".join(blocks)
