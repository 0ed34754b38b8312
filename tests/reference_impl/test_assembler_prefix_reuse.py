"""A multi-turn agent simulation: consecutive requests share their prefix up to the newest turn,
except at a compaction, so prompt caches keep hitting. Prints the prefix-reuse ratio."""

from __future__ import annotations

import json

from assembler_support import WordCounter, assistant, ring, session, system, user, words
from prometheus_client import CollectorRegistry

from reference_impl import AssemblyConfig, AssemblyMetrics, Ledger, LedgerEntry, assemble


def _common_prefix(a: list[str], b: list[str]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def test_consecutive_requests_share_their_prefix_except_at_a_compaction(capsys):
    config = AssemblyConfig(recent_tool_rings=1, recent_user_turns=1, summarize_trigger_ratio=0.8)
    counter = WordCounter()
    metrics = AssemblyMetrics(CollectorRegistry())
    ledger = Ledger((LedgerEntry("notify_ops", "t0", "succeeded", idempotency_key="k0"),))
    stored = session(system(), user("GOAL: migrate the billing database"))
    previous: list[str] | None = None
    reused = total = compactions = 0
    for turn in range(30):
        stored = stored.with_messages(
            [
                *stored.messages,
                *ring(f"t{turn}", words(25)),
                assistant(f"step {turn} done"),
                user(f"continue with step {turn + 1}"),
            ]
        )
        assembly = assemble(
            stored,
            config,
            shape="anthropic-messages",
            counter=counter,
            ledger=ledger,
            budget=600,
            metrics=metrics,
        )
        body = assembly.render()
        # cache_control markers are not content: compare the wire without them.
        wire = [json.dumps(_strip_cache(m), sort_keys=True) for m in body["messages"]]
        compacted = "summarize_middle" in assembly.report.steps or assembly.report.dropped_ring_ids
        if previous is not None:
            shared = _common_prefix(previous, wire)
            # Without a compaction, everything the previous request sent is sent again, byte-exact.
            if not compacted:
                assert shared == len(previous), (turn, shared, len(previous))
            reused += shared
            total += len(previous)
        compactions += bool(compacted)
        previous = wire
        # The caller stores the compacted session (summary kept, middle gone) for the next turn.
        stored = assembly.session_after()
        assert sum(1 for b in _blocks(body) if "cache_control" in b) <= 4
    ratio = reused / total
    with capsys.disabled():
        print(f"\nprefix reuse ratio over 30 turns: {ratio:.3f} ({compactions} compactions)")
    assert compactions >= 1
    assert ratio > 0.7


def _strip_cache(message: dict) -> dict:
    content = message.get("content")
    if isinstance(content, list):
        content = [{k: v for k, v in b.items() if k != "cache_control"} for b in content]
    return {**message, "content": content}


def _blocks(body: dict) -> list[dict]:
    out = list(body["system"]) if isinstance(body.get("system"), list) else []
    for m in body["messages"]:
        if isinstance(m["content"], list):
            out.extend(m["content"])
    return out
