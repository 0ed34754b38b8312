"""Assembly speed and memory, as ratios measured side by side in one process (issue 3, item 10).

Run with ``make bench``. Prints a table, then one JSON line per ratio:
``{"metric": NAME, "ratio": VALUE, "target": TARGET}``. Absolute times depend on the machine; the
ratios compare work done in the same process on the same data, so they travel.

(a) cold assembly (empty caches) / one plain tiktoken pass over all content      target <= 0.25
(b) the same with a budget larger than the whole history / one plain pass        target <= 1.2
(c) cold assembly / langchain_core trim_messages (tiktoken counter), same budget target <= 0.15
(d) warm next-turn assembly / cold assembly, at 500, 2,000 and 8,000 messages    target <= 0.01
"""

from __future__ import annotations

import gc
import json
import statistics
import sys
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _corpus import long_session, next_turn

from reference_impl import AssemblyConfig, assemble
from reference_impl._encodings import get_encoding
from reference_impl.tokens import counter_for
from reference_impl.transcript import (
    Message,
    ReasoningPart,
    SummaryPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    Transcript,
)

BUDGET = 100_000
REPEATS = 5


def _config(input_budget: int) -> AssemblyConfig:
    # input budget = limit - reserve - margin (issue 3, item 3)
    return AssemblyConfig.from_mapping(
        {
            "context_assembly": {
                "model_input_limit": input_budget + 8192 + 1024,
                "output_reserve_tokens": 8192,
                "safety_margin_tokens": 1024,
            }
        }
    )


def _texts(message: Message) -> list[str]:
    out: list[str] = []
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


def _best(run: Callable[[], object], repeats: int = REPEATS) -> float:
    times = []
    for _ in range(repeats):
        gc.collect()
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return min(times)


def _fresh(messages: int) -> Transcript:
    """A new session object: no cached digests, nothing memoized."""
    return long_session(messages)


def plain_pass_seconds(session: Transcript) -> float:
    encoding = get_encoding("o200k_base")
    texts = [t for m in session.messages for t in _texts(m)]
    return _best(lambda: [encoding.encode_ordinary(t) for t in texts])


def cold_seconds(messages: int, budget: int) -> float:
    config = _config(budget)
    sessions = [_fresh(messages) for _ in range(REPEATS)]
    it = iter(sessions)

    def run() -> None:
        assemble(
            next(it), config, shape="openai-chat", counter=counter_for("openai-chat", "gpt-4o")
        )

    return _best(run)


def warm_seconds(messages: int, budget: int) -> float:
    config = _config(budget)
    counter = counter_for("openai-chat", "gpt-4o")
    session = _fresh(messages)
    assemble(session, config, shape="openai-chat", counter=counter)  # turn N, caches filled
    turns = [next_turn(session, seed=i) for i in range(REPEATS)]
    it = iter(turns)
    return _best(lambda: assemble(next(it), config, shape="openai-chat", counter=counter))


def langchain_seconds(session: Transcript, budget: int) -> float | None:
    try:
        from langchain_core.messages import convert_to_messages, trim_messages
    except ImportError:
        return None
    from reference_impl.shapes import get_shape

    body = get_shape("openai-chat").render_request(session)
    lc_messages = convert_to_messages(body["messages"])
    encoding = get_encoding("o200k_base")

    def lc_counter(batch: list[Any]) -> int:
        # the common user-side counter: tiktoken over content, plus the cookbook's 3 per message
        total = 3
        for message in batch:
            content = (
                message.content if isinstance(message.content, str) else json.dumps(message.content)
            )
            total += 3 + len(encoding.encode_ordinary(content))
            for call in getattr(message, "tool_calls", None) or ():
                total += len(encoding.encode_ordinary(json.dumps(call["args"])))
        return total

    return _best(
        lambda: trim_messages(
            lc_messages,
            max_tokens=budget,
            token_counter=lc_counter,
            strategy="last",
            include_system=True,
        ),
        repeats=2,
    )


def peak_memory_mib(messages: int, budget: int) -> float:
    session = _fresh(messages)
    config = _config(budget)
    tracemalloc.start()
    assemble(session, config, shape="openai-chat", counter=counter_for("openai-chat", "gpt-4o"))
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak / 2**20


def main() -> None:
    session = _fresh(2000)
    total = counter_for("openai-chat", "gpt-4o").count(session).total
    print(f"session: {len(session)} messages, {total:,} o200k tokens; budget {BUDGET:,}")
    plain = plain_pass_seconds(session)
    cold = cold_seconds(2000, BUDGET)
    whole = cold_seconds(2000, total * 2)
    lc = langchain_seconds(session, BUDGET)
    results: list[tuple[str, float, float]] = [
        ("cold_assembly_vs_plain_pass", cold / plain, 0.25),
        ("whole_history_assembly_vs_plain_pass", whole / plain, 1.2),
    ]
    print(f"plain tiktoken pass      {plain * 1000:9.1f} ms")
    print(f"cold assembly (100k)     {cold * 1000:9.1f} ms")
    print(f"assembly, budget > all   {whole * 1000:9.1f} ms")
    if lc is None:
        print("langchain_core not installed: ratio (c) skipped (pip install 'ctxconf[langchain]')")
    else:
        print(f"langchain trim_messages  {lc * 1000:9.1f} ms")
        results.append(("cold_assembly_vs_langchain_trim_messages", cold / lc, 0.15))
    for size in (500, 2000, 8000):
        cold_n = cold_seconds(size, BUDGET)
        warm_n = warm_seconds(size, BUDGET)
        print(
            f"{size:5d} messages: cold {cold_n * 1000:8.1f} ms, warm next turn {warm_n * 1000:8.2f} ms"
        )
        results.append((f"warm_vs_cold_{size}_messages", warm_n / cold_n, 0.01))
    print(f"peak memory, cold assembly of 2,000 messages: {peak_memory_mib(2000, BUDGET):.1f} MiB")
    print(f"median ratio / target: {statistics.median(r / t for _, r, t in results):.2f}")
    for name, ratio, target in results:
        print(json.dumps({"metric": name, "ratio": round(ratio, 4), "target": target}))


if __name__ == "__main__":
    main()
