"""A deterministic, realistic long agent session for the benchmarks.

Mixes what real agent histories hold: JSON tool output, source code, prose, some Chinese, parallel
tool rings, error results and plain turns. Sized by message count; about 500 o200k tokens a message
on average, so 2,000 messages come to roughly 1M tokens.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterable

from reference_impl.transcript import (
    Message,
    ReasoningPart,
    Role,
    SummaryPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    ToolSpec,
    Transcript,
)

__all__ = ["counted_texts", "long_session", "new_ring", "next_turn", "realistic_session"]

_WORDS = [
    "deploy",
    "rollback",
    "service",
    "latency",
    "cluster",
    "region",
    "replica",
    "quota",
    "budget",
    "incident",
    "owner",
    "ticket",
    "metric",
    "alert",
    "threshold",
    "window",
    "shard",
    "index",
    "cache",
    "token",
    "request",
    "response",
    "retry",
    "backoff",
]
_CHINESE = (
    "部署回滚服务延迟集群区域副本配额预算事件负责人工单指标告警阈值窗口分片索引缓存请求响应重试"
)
_CODE = '''def handle(event, context):
    """Route one event to its handler."""
    kind = event.get("kind", "unknown")
    if kind not in HANDLERS:
        raise KeyError(f"no handler for {kind!r}")
    for attempt in range(3):
        try:
            return HANDLERS[kind](event, context)
        except TimeoutError:
            time.sleep(2 ** attempt)
'''

TOOLS = (
    ToolSpec(
        "search_logs",
        "Search service logs.",
        '{"properties":{"q":{"type":"string"}},"type":"object"}',
    ),
    ToolSpec(
        "read_file",
        "Read a file from the repository.",
        '{"properties":{"path":{"type":"string"}},"type":"object"}',
    ),
    ToolSpec(
        "get_metrics",
        "Fetch metrics for a service.",
        '{"properties":{"service":{"type":"string"}},"type":"object"}',
    ),
)


def _prose(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(words)).capitalize() + "."


def _chinese(rng: random.Random, chars: int) -> str:
    return "".join(rng.choice(_CHINESE) for _ in range(chars))


def _json_output(rng: random.Random, rows: int) -> str:
    return json.dumps(
        [
            {
                "ts": f"2026-11-{rng.randint(1, 28):02d}T{rng.randint(0, 23):02d}:00:00Z",
                "service": rng.choice(_WORDS),
                "latency_ms": rng.randint(1, 5000),
                "status": rng.choice(["ok", "error", "timeout"]),
                "message": _prose(rng, 8),
            }
            for _ in range(rows)
        ],
        indent=1,
    )


def _result_text(rng: random.Random) -> str:
    kind = rng.random()
    if kind < 0.5:
        return _json_output(rng, rng.randint(8, 30))
    if kind < 0.8:
        return _CODE * rng.randint(3, 10)
    return _prose(rng, rng.randint(150, 600)) + " " + _chinese(rng, rng.randint(50, 300))


def _opening(rng: random.Random) -> list[Message]:
    """The system text and the user's goal every generated session starts with."""
    return [
        Message("system", (TextPart("You are ops-bot. Follow the runbook. " + _prose(rng, 60)),)),
        Message("user", (TextPart("GOAL: find why checkout latency doubled. " + _prose(rng, 40)),)),
    ]


def _calls(rng: random.Random, width: int, before: int) -> list[ToolCallPart]:
    """``width`` tool calls of one ring, numbered on from the ``before`` calls made so far."""
    calls = []
    for number in range(before + 1, before + width + 1):
        tool = rng.choice(TOOLS)
        calls.append(
            ToolCallPart(f"call_{number:06d}", tool.name, json.dumps({"q": rng.choice(_WORDS)}))
        )
    return calls


def long_session(messages: int, *, seed: int = 7) -> Transcript:
    """A valid session of exactly ``messages`` messages (system, goal, then rings and turns)."""
    rng = random.Random(seed)
    out = _opening(rng)
    call_no = 0
    while len(out) < messages - 1:
        room = messages - 1 - len(out)
        if room >= 2 and rng.random() < 0.7:
            width = 1 if rng.random() < 0.7 else rng.randint(2, 4)
            calls = _calls(rng, width, call_no)
            call_no += width
            out.append(Message("assistant", (TextPart(_prose(rng, 12)), *calls)))
            out.append(
                Message(
                    "tool",
                    tuple(
                        ToolResultPart(
                            c.id, (TextPart(_result_text(rng)),), is_error=rng.random() < 0.05
                        )
                        for c in calls
                    ),
                )
            )
        else:
            role: Role = "user" if out[-1].role != "user" else "assistant"
            out.append(Message(role, (TextPart(_prose(rng, rng.randint(20, 200))),)))
    out.append(Message("user", (TextPart("What should we do next? " + _prose(rng, 20)),)))
    return Transcript(tuple(out), tools=TOOLS, model="gpt-4o")


def next_turn(session: Transcript, *, seed: int = 11) -> Transcript:
    """The same session with one more assistant reply appended (the next turn's input)."""
    rng = random.Random(seed + len(session))
    reply = Message("assistant", (TextPart(_prose(rng, 80)),))
    return session.with_messages((*session.messages, reply))


# ---------------------------------------------------------------------------- the realistic corpus


def _png(width: int, height: int, payload: int) -> str:
    """Base64 of a PNG header of that size plus ``payload`` bytes (the counters read the header)."""
    import base64
    import struct

    header = (
        b"\x89PNG\r\n\x1a\n" + struct.pack(">I", 13) + b"IHDR" + struct.pack(">II", width, height)
    )
    return base64.b64encode(header + b"\x08\x02\x00\x00\x00" + b"\x00" * payload).decode("ascii")


def _result_of(rng: random.Random, tokens: int) -> str:
    """About ``tokens`` o200k tokens of tool output (JSON rows, code or prose, ~4 chars a token)."""
    out: list[str] = []
    size = 0
    while size < tokens * 4:
        piece = _result_text(rng)
        out.append(piece)
        size += len(piece)
    return "".join(out)[: tokens * 4]


def realistic_session(messages: int, *, attachments: bool = False, seed: int = 7) -> Transcript:
    """A valid session of exactly ``messages`` messages shaped like a real agent's history.

    20 tool rings at 500 messages growing to 200 at 32,000 (``20 * (messages / 500) ** 0.55``), tool
    results of 200-8,000 tokens (log-uniform), a quarter of the rings parallel (2-4 calls); the
    rest are plain user/assistant turns of 10-60 words. With ``attachments``, 5% of the user turns
    carry an image (a 1024x768 PNG) and one ring in ten returns a file (a small PDF) in its result.
    """
    import math

    from reference_impl.transcript import FilePart, ImagePart

    rng = random.Random(seed)
    rings = max(20, min(200, round(20 * (messages / 500) ** 0.5537)))
    out = _opening(rng)
    image = _png(1024, 768, 2048)
    pdf = "JVBERi0xLjQK" + "A" * 4000
    call_no = 0
    rings_left = rings
    while len(out) < messages - 1:
        room = messages - 1 - len(out)
        # spread the rings evenly: a ring now with probability rings left / room left for them
        if (
            rings_left
            and room >= 3
            and out[-1].role == "user"
            and rng.random() < rings_left * 2.2 / room
        ):
            rings_left -= 1
            width = 1 if rng.random() < 0.75 else rng.randint(2, 4)
            calls = _calls(rng, width, call_no)
            call_no += width
            results = []
            for c in calls:
                tokens = round(math.exp(rng.uniform(math.log(200), math.log(8000))))
                content: list[TextPart | FilePart] = [TextPart(_result_of(rng, tokens))]
                if attachments and rng.random() < 0.1:
                    content.append(FilePart("base64", pdf, "application/pdf", "report.pdf"))
                results.append(ToolResultPart(c.id, tuple(content), is_error=rng.random() < 0.05))
            out.append(Message("assistant", (TextPart(_prose(rng, 12)), *calls)))
            out.append(Message("tool", tuple(results)))
            continue
        role: Role = "user" if out[-1].role != "user" else "assistant"
        parts: list[TextPart | ImagePart] = [TextPart(_prose(rng, rng.randint(10, 60)))]
        if role == "user" and attachments and rng.random() < 0.05:
            parts.append(ImagePart("base64", image, "image/png"))
        out.append(Message(role, tuple(parts)))
    out.append(Message("user", (TextPart("What should we do next? " + _prose(rng, 20)),)))
    return Transcript(tuple(out), tools=TOOLS, model="gpt-4o")


def new_ring(
    session: Transcript, *, seed: int = 11, tokens: int = 2000, call_id: str | None = None
) -> Transcript:
    """The next turn's input: the session plus one tool ring whose result is ``tokens`` long.

    The ring's content depends on ``seed`` only, not on the session: the same new content at
    every session size, so the next turn's time across sizes measures the session's weight.
    The call id is ``call_id``, by default one made from the session's length."""
    rng = random.Random(seed)
    call_id = call_id if call_id is not None else f"call_next_{len(session):06d}"
    call = ToolCallPart(call_id, "search_logs", '{"q": "latency"}')
    ring = (
        Message("assistant", (TextPart(_prose(rng, 12)), call)),
        Message("tool", (ToolResultPart(call.id, (TextPart(_result_of(rng, tokens)),)),)),
    )
    return session.with_messages((*session.messages, *ring))


def counted_texts(messages: Iterable[Message]) -> list[str]:
    """All the text a counter must encode in ``messages`` (texts, summaries, tool names and
    arguments, the text of tool results, reasoning), in order: encoding it alone is the floor the
    benchmarks compare counting with."""
    out: list[str] = []
    for message in messages:
        for part in message.parts:
            if isinstance(part, TextPart | SummaryPart):
                out.append(part.text)
            elif isinstance(part, ToolCallPart):
                out.extend((part.name, part.arguments))
            elif isinstance(part, ToolResultPart):
                out.extend(p.text for p in part.content if isinstance(p, TextPart))
            elif isinstance(part, ReasoningPart):
                out.append(part.data)
    return out
