"""Micro-benchmark: what counting a whole session costs next to one plain tiktoken pass.

Usage: ``python bench/count_bench.py [MESSAGES]`` (default 2,000 messages, about 1.15M o200k tokens,
from ``bench/_corpus.py``). Ratios are measured side by side in one process (ARCHITECTURE.md
section 6); absolute times are printed for orientation only.

* ``count_all_vs_plain_pass``: a fresh counter (empty memo) counts session objects it has never
  seen (no cached digests), i.e. encoding every text once plus all per-message work: digest, memo,
  frames, headers. Target <= 1.1.
* ``count_known_vs_plain_pass``: the same counter counts the same message objects again (every
  message memoized, digests cached on the objects). Target <= 0.01.
* ``count_next_turn_vs_plain_pass``: the next turn, one new message on top of the known ones.

Not used: ``Encoding.encode_ordinary_batch``. On this 2-core machine it was slower than a plain
loop over the same texts (about 340 ms with 1 or 2 threads, 260 ms with 4, against 200 ms), so
the counter encodes each text once, in order, on the calling thread.

Ends with one JSON line per ratio: ``{"metric": NAME, "ratio": VALUE, "target": TARGET}``.
"""

from __future__ import annotations

import dataclasses
import gc
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _corpus import counted_texts, long_session, next_turn

from reference_impl.tokens import TiktokenCounter
from reference_impl.tokens.encodings import get_encoding
from reference_impl.transcript import (
    Transcript,
)

REPEATS = 5


def _best(run: Callable[[], object], prepare: Callable[[], object] | None = None) -> float:
    times = []
    for _ in range(REPEATS):
        if prepare is not None:
            prepare()
        gc.collect()
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return min(times)


def _unseen(session: Transcript) -> Transcript:
    """Equal messages as new objects: no digest cached on them (as if just loaded from a file)."""
    return session.with_messages(dataclasses.replace(m) for m in session.messages)


def main(argv: list[str]) -> int:
    messages = int(argv[1]) if len(argv) > 1 else 2_000
    session = long_session(messages)
    encoding = get_encoding("o200k_base")
    texts = counted_texts(session.messages)
    tokens = sum(len(encoding.encode_ordinary(t)) for t in texts)
    plain = _best(lambda: [encoding.encode_ordinary(t) for t in texts])

    state: dict[str, object] = {}

    def fresh() -> None:
        state["counter"] = TiktokenCounter("o200k_base", "openai-chat", model="gpt-4o")
        state["session"] = _unseen(session)

    def count() -> None:
        counter = state["counter"]
        assert isinstance(counter, TiktokenCounter)
        transcript = state["session"]
        assert isinstance(transcript, Transcript)
        counter.count(transcript)

    cold = _best(count, fresh)

    known_counter = TiktokenCounter("o200k_base", "openai-chat", model="gpt-4o")
    known_counter.count(session)
    known = _best(lambda: known_counter.count(session))
    turns = iter([next_turn(session, seed=i) for i in range(REPEATS)])
    following = _best(lambda: known_counter.count(next(turns)))

    print(f"session: {messages} messages, {len(texts)} texts, {tokens:,} o200k tokens")
    print(f"plain encode_ordinary pass   {plain * 1000:9.1f} ms")
    print(f"count all (cold counter)     {cold * 1000:9.1f} ms")
    print(f"count again (all memoized)   {known * 1000:9.1f} ms")
    print(f"count the next turn          {following * 1000:9.1f} ms")
    for name, ratio, target in (
        ("count_all_vs_plain_pass", cold / plain, 1.1),
        ("count_known_vs_plain_pass", known / plain, 0.01),
        ("count_next_turn_vs_plain_pass", following / plain, 0.02),
    ):
        print(json.dumps({"metric": name, "ratio": round(ratio, 4), "target": target}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
