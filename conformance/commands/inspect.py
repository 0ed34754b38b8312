"""``ctxconf inspect SESSION [--shape S] [--model M] [--format text|json]``.

Shows the rings and plain turns of a session, its pairing violations (``rings.validate``), and the
tokens of every message and of the whole request, naming the counter that produced them. SESSION is
a transcript file, or a request body of shape S. Tokens are counted for S (``openai-chat`` for a
transcript file without ``--shape``).
"""

from __future__ import annotations

import io
import json
from typing import Any

import click
from rich.console import Console
from rich.table import Table

from conformance.commands._options import SHAPE_CHOICE, format_option
from conformance.commands._sessions import load_session
from reference_impl import rings
from reference_impl.errors import TokenCountError
from reference_impl.tokens import TokenCount, counter_for
from reference_impl.transcript import Message, ToolCallPart, ToolResultPart, Transcript

__all__ = ["command"]

_WIDTH = 110  # fixed so output is the same on every terminal (and in snapshots)


def _part_summary(message: Message) -> str:
    labels: list[str] = []
    for part in message.parts:
        if isinstance(part, ToolCallPart):
            labels.append(f"call {part.id} {part.name}")
        elif isinstance(part, ToolResultPart):
            labels.append(f"result {part.call_id}{' error' if part.is_error else ''}")
        else:
            labels.append(part.kind)
    return ", ".join(labels)


def _preview(message: Message, limit: int = 48) -> str:
    raw = message.text or " ".join(r.text for r in message.tool_results)
    text = " ".join(raw.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _segments(transcript: Transcript) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for seg in rings.segment(transcript):
        if isinstance(seg, rings.Ring):
            out.append(
                {
                    "kind": "ring",
                    "id": seg.id,
                    "messages": [seg.start, seg.stop - 1],
                    "calls": list(seg.call_ids),
                    "answered": list(seg.answered_ids),
                    "complete": seg.complete,
                }
            )
        else:
            out.append({"kind": "turn", "id": seg.id, "messages": [seg.index], "role": seg.role})
    return out


def _violations(transcript: Transcript) -> tuple[list[dict[str, Any]] | None, str | None]:
    try:
        found = rings.validate(transcript)
    except NotImplementedError:
        return None, "pairing validation is not available in this build (rings.validate)"
    return [
        {
            "kind": v.kind,
            "message_index": v.message_index,
            "ids": list(v.ids),
            "rules": list(v.rules),
            "detail": v.detail,
        }
        for v in found
    ], None


def _report(
    path: str, shape: str, model: str | None, transcript: Transcript, counted: TokenCount
) -> dict[str, Any]:
    violations, note = _violations(transcript)
    return {
        "session": path,
        "shape": shape,
        "model": model,
        "counter": counted.counter,
        "encoding": counted.encoding,
        "input_tokens": counted.total,
        "tools_tokens": counted.tools,
        "overhead_tokens": counted.overhead,
        "messages": [
            {
                "index": i,
                "id": m.id,
                "role": m.role,
                "parts": _part_summary(m),
                "tokens": counted.messages[i],
            }
            for i, m in enumerate(transcript.messages)
        ],
        "segments": _segments(transcript),
        "violations": violations,
        "notes": [note] if note else [],
    }


def _render_text(report: dict[str, Any], transcript: Transcript) -> str:
    console = Console(file=io.StringIO(), width=_WIDTH, color_system=None, record=True)
    console.print(
        f"session {report['session']}: {len(transcript.messages)} messages, "
        f"{len(transcript.tools)} tools, shape {report['shape']}, model {report['model'] or '-'}"
    )
    messages = Table(title="messages", title_justify="left")
    for header, justify in (("#", "right"), ("id", "left"), ("role", "left")):
        messages.add_column(header, justify=justify)  # type: ignore[arg-type]
    messages.add_column("parts", overflow="fold")
    messages.add_column("text", overflow="ellipsis", no_wrap=True, max_width=36)
    messages.add_column("tokens", justify="right")
    for row, message in zip(report["messages"], transcript.messages, strict=True):
        messages.add_row(
            str(row["index"]),
            row["id"],
            row["role"],
            row["parts"],
            _preview(message),
            str(row["tokens"]),
        )
    console.print(messages)

    segments = Table(title="rings and plain turns", title_justify="left")
    for header in ("segment", "messages", "id", "calls / role", "status"):
        segments.add_column(header)
    for seg in report["segments"]:
        span = "-".join(str(i) for i in dict.fromkeys(seg["messages"]))
        if seg["kind"] == "ring":
            status = "complete" if seg["complete"] else "INCOMPLETE"
            segments.add_row("ring", span, seg["id"], ", ".join(seg["calls"]), status)
        else:
            segments.add_row("turn", span, seg["id"], seg["role"], "")
    console.print(segments)

    if report["violations"] is None:
        console.print(f"violations: unknown ({report['notes'][0]})")
    elif not report["violations"]:
        console.print("violations: none")
    else:
        console.print(f"violations: {len(report['violations'])}")
        for v in report["violations"]:
            ids = f" ({', '.join(v['ids'])})" if v["ids"] else ""
            rules = ", ".join(v["rules"])
            console.print(
                f"  messages[{v['message_index']}] {v['kind']}{ids} [{rules}]: {v['detail']}",
                markup=False,
            )
    overhead = report["overhead_tokens"]  # negative when a formula's adjustment outweighs priming
    console.print(
        f"tokens: {report['input_tokens']} total = "
        f"{sum(m['tokens'] for m in report['messages'])} messages + {report['tools_tokens']} "
        f"tools {'-' if overhead < 0 else '+'} {abs(overhead)} overhead "
        f"(counter {report['counter']})",
        markup=False,
    )
    lines = console.export_text().splitlines()
    return "\n".join(line.rstrip() for line in lines).rstrip("\n")


@click.command("inspect")
@click.argument("session", metavar="SESSION")
@click.option(
    "--shape",
    type=SHAPE_CHOICE,
    default=None,
    help="SESSION is a request body of this shape (default: a transcript file); tokens are "
    "counted for it.",
)
@click.option("--model", default=None, help="Model for the counter (default: the session's).")
@format_option("text", "json")
def command(session: str, shape: str | None, model: str | None, fmt: str) -> None:
    """Show rings, plain turns, pairing violations and tokens of SESSION."""
    transcript = load_session(session, shape)
    count_shape = shape or "openai-chat"
    model = model or transcript.model
    try:
        counted = counter_for(count_shape, model).count(transcript)
    except TokenCountError as exc:
        raise click.UsageError(str(exc)) from None
    report = _report(session, count_shape, model, transcript, counted)
    if fmt == "json":
        click.echo(json.dumps(report, indent=2, ensure_ascii=False))
    else:
        click.echo(_render_text(report, transcript))
