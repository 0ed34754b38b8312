"""A deterministic, realistic long agent session for the benchmarks.

Mixes what real agent histories hold: JSON tool output, source code, prose, some Chinese, parallel
tool rings, error results and plain turns. Sized by message count; about 500 o200k tokens a message
on average, so 2,000 messages come to roughly 1M tokens.
"""

from __future__ import annotations

import json
import random

from reference_impl.transcript import (
    Message,
    Role,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    ToolSpec,
    Transcript,
)

__all__ = ["long_session", "next_turn"]

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


def long_session(messages: int, *, seed: int = 7) -> Transcript:
    """A valid session of exactly ``messages`` messages (system, goal, then rings and turns)."""
    rng = random.Random(seed)
    out: list[Message] = [
        Message("system", (TextPart("You are ops-bot. Follow the runbook. " + _prose(rng, 60)),)),
        Message("user", (TextPart("GOAL: find why checkout latency doubled. " + _prose(rng, 40)),)),
    ]
    call_no = 0
    while len(out) < messages - 1:
        room = messages - 1 - len(out)
        if room >= 2 and rng.random() < 0.7:
            width = 1 if rng.random() < 0.7 else rng.randint(2, 4)
            calls = []
            for _ in range(width):
                call_no += 1
                tool = rng.choice(TOOLS)
                calls.append(
                    ToolCallPart(
                        f"call_{call_no:06d}", tool.name, json.dumps({"q": rng.choice(_WORDS)})
                    )
                )
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
