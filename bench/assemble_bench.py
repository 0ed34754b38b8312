"""Assembly cost as paired ratios on realistic sessions.

Run with ``make bench``. Every ratio compares two sides measured in pairs in one process on the
same content: each repetition prepares both sides, then times them back to back, A then B in
one pair and B then A in the next (at least ``BENCH_PAIRS``, 6 by default: three of each order;
more, an even count up to ``BENCH_MAX_PAIRS`` (20), until the timed runs of both sides add up to
``BENCH_MIN_SECONDS`` (2 s of CPU time), so that a ratio of sides that take milliseconds rests
on as many pairs as one of sides that take a second would need; the next turn, which takes
milliseconds, always 20, ``BENCH_NEXT_TURN_PAIRS``), the
ratio of each pair is kept, and the metric is the **median of the paired ratios**; the spread
(max - min of the paired ratios) is printed beside it. Load that drifts during the run moves
both sides of a pair alike, which is what keeps the ratios steady on a shared machine; the
alternating order keeps either side from always finding the caches warmed by the other (the
second side of a pair reads content the first has just read). Times are CPU times of this process
(``time.process_time``) with the collector off while a side runs.

Sessions (``bench/_corpus.py``, ``realistic_session``): 500, 2,000, 8,000 and 32,000 messages,
20-200 tool rings with results of 200-8,000 tokens, a quarter of them parallel; "with
attachments" adds an image to 5% of the user turns and a PDF to one tool result in ten. Budget:
100,000 input tokens, ``summarize_trigger_ratio: 1.0`` (trim to the budget; the default config's
summary is a separate cost). gpt-4o / o200k_base.

Yardsticks (the "plain pass" is ``encode_ordinary`` over the text of the messages named):

(a) cold ``assemble`` (new session object, new counter) / one plain pass over the content it
    KEPT: <= 1.5 up to 2,000 messages, <= 2.0 beyond, with and without attachments;
(b) cold ``assemble`` with a budget above the whole history / one plain pass over everything:
    <= 1.1;
(c) cold ``assemble`` / ``langchain_core`` ``trim_messages`` with a memoized counter (a new memo
    per repetition, so both sides start cold), same budget, same repetitions: <= 0.5;
(d) the next turn through ``SessionAssembler`` (the session plus a new tool ring whose result is
    2,000 tokens, the same rings at every size) / one plain pass over that new ring: <= 3;
(e) the same on the sessions with attachments, printed with no target: see (e');
(d'), (e') the same next turn / one plain pass over what enters the view (the messages of the
    new view that the previous view did not hold: the new ring, older units the freed room lets
    in, messages degraded anew), what the turn must count whatever it remembers: <= 3. This is
    the physical limit of the turn: the new ring moves the protected range by one ring, the
    ring that leaves it becomes a middle unit whose attachments are degraded (or that is
    dropped first, by its tier), and the room that frees lets in older units no turn has
    counted. On the sessions with attachments that is 1.3-3.3 times the ring's tokens (1.5-2.5
    times its plain pass) from 2,000 messages on (``docs/design-notes.md``): (e) is (e')
    times that factor, which is where the corpus puts its attachments, not the assembler's work,
    so its target is (e')'s; on the text sessions what enters is about the ring, and (d) keeps
    its target beside (d');
(d*), (e*) (d) and (e) with ``compaction_headroom`` 0.1 over 20 consecutive turns of an agent
    that stores the view (``session_after()``, as the docs advise) and appends one tool ring
    (2,000 tokens) a turn: a turn over the budget cuts until a tenth of it is free, and the
    turns until the next cut only append. Side A is what the agent asks of the assembler every
    turn (``assemble``, ``session_after``), side B a plain pass over the turn's new ring, the
    sides alternating turn by turn; the ratio of the sums (the amortized cost of a turn, every
    turn counted), median over the repetitions: <= 3. Without a headroom, (d) and (e) let units
    a cut dropped come back into the view when a later cut frees room, and count them then
    ((d'), (e') against them);
(f) the plug-in path (``parse_request`` of the wire body + ``assemble`` + ``render``) on the next
    request / one plain pass over everything that request holds: <= 0.5. A plug-in answers one
    request after another in one process, with one counter per shape and model (what
    ``counter_for`` caches, and what the built-in ``reference`` plug-in is handed), so the
    request before it (the session without the new ring) has been answered with the same
    counter (untimed); the timed request parses its whole body, digests every message and
    assembles from scratch (a new ``SessionAssembler``: a stateless plug-in keeps no index),
    finding the counts of the messages counted before in the counter's memo. The sessions with
    attachments go through the Responses shape (the same encoding and counting), whose wire
    carries a file in a tool result.
(f0) the same path cold (a new counter: the first request of a process) / the same pass: printed
    with no target. It holds (a)'s work (counting what is kept) plus parsing, so it cannot be
    below (a)'s floor: where the session fits (500 messages) the kept content is everything and
    (f0) >= 1 before any parsing, which is why (f)'s target is read as the steady state.

Every cold side must be linear in messages: growth exponent (slope of log time over log messages,
least squares over the four sizes) <= 1.1. The bench prints each side's exponent.

The next turn must be flat in session size: the growth exponent of its paired ratio against its
floor ((d) against the new ring, (e') against what enters, (d*) and (e*) against their new rings),
from 500 to 32,000 messages, <= 0.1 ("flatness"). A ratio, not a time: each size is measured at
another moment of the run, and a time taken then moves with the machine (a 1 ms turn slower by a
fifth at one end adds 0.05 to the exponent), while the ratio is paired at each size. The
next turn's own time exponents are printed beside them, with no target: with attachments what
enters the view differs from size to size (nothing at 500 messages, where the session fits), so
the time grows with the floor, not with the session.

The counter reads texts of 512 characters or more through tiktoken's buffer encoder, which skips
the Python ints ``encode_ordinary`` builds; the bench prints what that saves on the same texts
(``ref_count_texts_vs_plain_2000``, no target), the head start every ratio against the plain
pass holds on the encoding it shares.

Output: a table, then one JSON line per metric ``{"metric", "ratio", "target", "spread"}``.
"""

from __future__ import annotations

import gc
import json
import math
import os
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _corpus import counted_texts, new_ring, realistic_session

from reference_impl import AssemblyConfig, SessionAssembler, assemble
from reference_impl.shapes import get_shape
from reference_impl.tokens import TiktokenCounter, TokenCounter
from reference_impl.tokens.encodings import count_texts, get_encoding
from reference_impl.transcript import (
    Message,
    ToolResultPart,
    Transcript,
)

BUDGET = 100_000
SIZES = tuple(int(s) for s in os.environ.get("BENCH_SIZES", "500,2000,8000,32000").split(","))
PAIRS = int(os.environ.get("BENCH_PAIRS", "6"))
MAX_PAIRS = max(PAIRS, int(os.environ.get("BENCH_MAX_PAIRS", "20")))
MIN_SECONDS = float(os.environ.get("BENCH_MIN_SECONDS", "2.0"))
NEXT_TURN_PAIRS = max(PAIRS, int(os.environ.get("BENCH_NEXT_TURN_PAIRS", "20")))
"""The next turn takes 1-6 ms: its ratios take more pairs (20), so that the median and the growth
exponent taken from it do not move with a few disturbed runs."""


def _config(input_budget: int) -> AssemblyConfig:
    # input budget = limit - reserve - margin
    return AssemblyConfig.from_mapping(
        {
            "context_assembly": {
                "model_input_limit": input_budget + 8192 + 1024,
                "output_reserve_tokens": 8192,
                "safety_margin_tokens": 1024,
                "summarize_trigger_ratio": 1.0,
            }
        }
    )


def _counter(shape: str = "openai-chat") -> TokenCounter:
    """A new counter with an empty memo (gpt-4o: o200k_base, the cookbook formula)."""
    return TiktokenCounter("o200k_base", shape, model="gpt-4o")


def _timed(run: Callable[[], object]) -> float:
    gc.disable()
    try:
        start = time.process_time()
        run()
        return time.process_time() - start
    finally:
        gc.enable()


@dataclass
class Paired:
    """The paired measurements of one ratio: A and B times per repetition."""

    a: list[float]
    b: list[float]

    @property
    def ratios(self) -> list[float]:
        return [x / y for x, y in zip(self.a, self.b, strict=True)]

    @property
    def ratio(self) -> float:
        return statistics.median(self.ratios)

    @property
    def spread(self) -> float:
        return max(self.ratios) - min(self.ratios)


def paired(
    side_a: Callable[[int], Callable[[], object]],
    side_b: Callable[[int], Callable[[], object]],
    pairs: int = PAIRS,
    most: int = MAX_PAIRS,
) -> Paired:
    """Pairs of A and B: ``side_x(i)`` prepares repetition ``i`` (untimed) and returns the timed
    run. Both sides of a pair are prepared before either runs, and the order alternates (A B,
    then B A): the side that runs first meets the caches as the preparation left them, the
    other finds the same content just read, so a fixed order would favour the second side.
    At least ``pairs`` pairs; more, up to ``most``, until the timed runs add up to
    ``MIN_SECONDS`` (how many is decided by time alone, never by the ratios); always an even
    count, as many of each order (one more than asked when an odd number is set)."""
    a: list[float] = []
    b: list[float] = []
    gc.collect()
    i = 0
    while i < pairs or i % 2 or (i < most and sum(a) + sum(b) < MIN_SECONDS):
        run_a = side_a(i)
        run_b = side_b(i)
        if i % 2:
            b.append(_timed(run_b))
            a.append(_timed(run_a))
        else:
            a.append(_timed(run_a))
            b.append(_timed(run_b))
        i += 1
    return Paired(a, b)


def plain_pass(messages: Sequence[Message]) -> Callable[[int], Callable[[], object]]:
    encoding = get_encoding("o200k_base")
    texts = counted_texts(messages)

    def prepare(_: int) -> Callable[[], object]:
        return lambda: [encoding.encode_ordinary(t) for t in texts]

    return prepare


def _fresh(session: Transcript) -> Transcript:
    """A new session object with the same content: no digests, no ids, nothing memoized."""
    return Transcript(
        tuple(
            Message(m.role, m.parts, m.name, m.wire_id, m.empty_tool_calls)
            for m in session.messages
        ),
        tools=session.tools,
        model=session.model,
        params=session.params,
    )


def cold(session: Transcript, budget: int) -> Callable[[int], Callable[[], object]]:
    config = _config(budget)

    def prepare(_: int) -> Callable[[], object]:
        fresh, counter = _fresh(session), _counter()
        return lambda: assemble(fresh, config, shape="openai-chat", counter=counter)

    return prepare


def _wire_safe(session: Transcript) -> Transcript:
    """openai-chat has no is_error flag: the same content without it (for a wire body)."""
    return session.with_messages(
        replace(
            m,
            parts=tuple(
                replace(p, is_error=False) if isinstance(p, ToolResultPart) else p for p in m.parts
            ),
        )
        for m in session.messages
    )


def langchain_side(
    session: Transcript, budget: int
) -> Callable[[int], Callable[[], object]] | None:
    try:
        from langchain_core.messages import convert_to_messages, trim_messages
    except ImportError:
        return None
    body = get_shape("openai-chat").render_request(_wire_safe(session))
    lc_messages = convert_to_messages(body["messages"])
    encoding = get_encoding("o200k_base")

    def prepare(_: int) -> Callable[[], object]:
        memo: dict[int, int] = {}  # a new memo per repetition: the side starts cold, as ours

        def one(message: Any) -> int:
            found = memo.get(id(message))
            if found is None:
                content = message.content
                text = content if isinstance(content, str) else json.dumps(content)
                found = 3 + len(encoding.encode_ordinary(text))
                for call in getattr(message, "tool_calls", None) or ():
                    found += len(encoding.encode_ordinary(json.dumps(call["args"])))
                memo[id(message)] = found
            return found

        def counter(batch: list[Any]) -> int:
            return 3 + sum(one(m) for m in batch)

        return lambda: trim_messages(
            lc_messages,
            max_tokens=budget,
            token_counter=counter,
            strategy="last",
            include_system=True,
        )

    return prepare


def _entering(session: Transcript, turn: Transcript, config: AssemblyConfig) -> list[Message]:
    """The messages of ``turn``'s view that ``session``'s view did not hold (by id and content: a
    degraded message keeps its id): the new ring, units the freed room lets in, messages degraded
    anew; what the next turn must count whatever it remembers, so the floor of its counting."""
    before = assemble(session, config, shape="openai-chat", counter=_counter()).view
    after = assemble(turn, config, shape="openai-chat", counter=_counter()).view
    held = {(m.id, m.digest) for m in before.messages}
    return [m for m in after.messages if (m.id, m.digest) not in held]


def next_turn(session: Transcript, budget: int, floor: str) -> tuple[Paired, str]:
    """(d)/(e): turn N assembled, then turn N+1 = N plus a new tool ring (2,000 tokens), against
    a plain pass over the new ring (``floor="ring"``) or over what enters the view
    (``floor="view"``, ``_entering``)."""
    config = _config(budget)
    paths: list[str] = []
    turns: list[tuple[SessionAssembler, Transcript]] = []

    def prepare_turn(i: int) -> Callable[[], object]:
        assembler = SessionAssembler(config, shape="openai-chat", counter=_counter())
        assembler.assemble(session)  # turn N, untimed
        turn = new_ring(session, seed=i)
        turns.append((assembler, turn))

        def run() -> None:
            assembler.assemble(turn)
            paths.append(assembler.last_path)

        return run

    encoding = get_encoding("o200k_base")

    def prepare_plain(i: int) -> Callable[[], object]:
        _, turn = turns[i]
        new = turn.messages[len(session) :] if floor == "ring" else _entering(session, turn, config)
        texts = counted_texts(new)
        return lambda: [encoding.encode_ordinary(t) for t in texts]

    result = paired(prepare_turn, prepare_plain, NEXT_TURN_PAIRS, most=NEXT_TURN_PAIRS)
    return result, ",".join(sorted(set(paths)))


STORED_TURNS = int(os.environ.get("BENCH_STORED_TURNS", "20"))
STORED_HEADROOM = 0.1


def stored_turns(session: Transcript, budget: int) -> tuple[Paired, str]:
    """(d*)/(e*): (d)/(e) with ``compaction_headroom`` 0.1, over ``STORED_TURNS`` consecutive
    turns of an agent that stores the view (``session_after()``, as the docs advise) and appends
    one tool ring (2,000 tokens) a turn; a turn over the budget cuts until a tenth of it is free
    and the turns until the next cut only append. Side A is what the agent asks of the
    assembler every turn: ``assemble`` and ``session_after``; side B a plain pass over the
    turn's new ring. One pair per repetition: the two sides alternate turn by turn (A B, then
    B A), each side's time is the sum over the turns (every turn, the cuts and the turn after a
    cut, which indexes the stored view afresh, among them), so the ratio is the amortized cost
    of a turn, not its median."""
    config = _config(budget).with_changes(compaction_headroom=STORED_HEADROOM)
    encoding = get_encoding("o200k_base")
    a: list[float] = []
    b: list[float] = []
    paths: set[str] = set()
    cuts: list[int] = []
    gc.collect()
    for rep in range(PAIRS):
        assembler = SessionAssembler(config, shape="openai-chat", counter=_counter())
        stored = assembler.assemble(session).session_after()  # turn N, untimed
        spent_a = spent_b = 0.0
        cut = 0
        for i in range(STORED_TURNS):
            turn = new_ring(stored, seed=rep * STORED_TURNS + i, call_id=f"call_stored_{i:04d}")
            texts = counted_texts(turn.messages[len(stored) :])
            result: list[Any] = []

            def run_a(
                turn: Transcript = turn,
                result: list[Any] = result,
                assembler: SessionAssembler = assembler,
            ) -> None:
                assembly = assembler.assemble(turn)
                result.extend((assembly, assembly.session_after()))

            def run_b(texts: list[str] = texts) -> None:
                [encoding.encode_ordinary(t) for t in texts]

            if i % 2:
                spent_b += _timed(run_b)
                spent_a += _timed(run_a)
            else:
                spent_a += _timed(run_a)
                spent_b += _timed(run_b)
            paths.add(assembler.last_path)
            report = result[0].report
            cut += bool(
                report.dropped_ring_ids
                or report.dropped_turn_ids
                or report.degraded_attachment_ids
                or report.cleared_result_ids
            )
            stored = result[1]
        a.append(spent_a / STORED_TURNS)
        b.append(spent_b / STORED_TURNS)
        cuts.append(cut)
    how = f"{','.join(sorted(paths))}; turns that cut {min(cuts)}-{max(cuts)} of {STORED_TURNS}"
    return Paired(a, b), how


def plugin_path(
    session: Transcript, budget: int, shape_name: str
) -> Callable[[int], Callable[[], object]]:
    """(f): what a plug-in does: parse the wire body, assemble, render."""
    config = _config(budget)
    shape = get_shape(shape_name)
    body = shape.render_request(_wire_safe(session))

    def prepare(_: int) -> Callable[[], object]:
        counter = _counter(shape_name)

        def run() -> object:
            parsed = shape.parse_request(body)
            return assemble(parsed, config, shape=shape_name, counter=counter).render()

        return run

    return prepare


def plugin_next(
    session: Transcript, budget: int, shape_name: str
) -> tuple[Callable[[int], Callable[[], object]], Callable[[int], Callable[[], object]]]:
    """(f): the next request through the plug-in path, the previous one answered with the same
    counter; and its yardstick, one plain pass over everything the new request holds."""
    config = _config(budget)
    shape = get_shape(shape_name)
    before = shape.render_request(_wire_safe(session))
    turns: dict[int, Transcript] = {}

    def prepare(i: int) -> Callable[[], object]:
        counter = _counter(shape_name)
        turn = turns[i] = new_ring(session, seed=i)
        body = shape.render_request(_wire_safe(turn))
        parsed = shape.parse_request(before)  # the request before, untimed
        assemble(parsed, config, shape=shape_name, counter=counter).render()

        def run() -> object:
            parsed = shape.parse_request(body)
            return assemble(parsed, config, shape=shape_name, counter=counter).render()

        return run

    encoding = get_encoding("o200k_base")

    def prepare_plain(i: int) -> Callable[[], object]:
        texts = counted_texts(turns[i].messages)
        return lambda: [encoding.encode_ordinary(t) for t in texts]

    return prepare, prepare_plain


def exponent(sizes: Sequence[int], times: Sequence[float]) -> float:
    """Least-squares slope of log(time) over log(messages)."""
    xs = [math.log(s) for s in sizes]
    ys = [math.log(t) for t in times]
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sum(
        (x - mx) ** 2 for x in xs
    )


@dataclass
class Metric:
    name: str
    ratio: float
    target: float | None
    """None: printed for reference, no target."""
    spread: float | None = None

    def line(self) -> str:
        spread = None if self.spread is None else round(self.spread, 4)
        return json.dumps(
            {
                "metric": self.name,
                "ratio": round(self.ratio, 4),
                "target": self.target,
                "spread": spread,
            }
        )


def _row(label: str, p: Paired, target: float | None) -> str:
    verdict = "no target" if target is None else f"target <= {target}  " + _verdict(p.ratio, target)
    return (
        f"  {label:44s} {p.ratio:7.3f} (spread {p.spread:5.3f}, {len(p.a)} pairs; "
        f"A {statistics.median(p.a) * 1000:8.2f} ms, B {statistics.median(p.b) * 1000:8.2f} ms)"
        f"  {verdict}"
    )


def _verdict(ratio: float, target: float) -> str:
    return "ok" if ratio <= target else "MISSED"


@dataclass
class Results:
    """The metrics measured so far, and each side's median times by size (growth)."""

    metrics: list[Metric]
    growth: dict[str, list[tuple[int, float]]]
    """side -> (messages, median time) at each size the side was measured at."""
    flatness: dict[str, list[tuple[int, float]]] = field(default_factory=dict)
    """next-turn ratio -> (messages, median paired ratio) at each size (the flatness targets)."""

    def add(
        self,
        name: str,
        label: str,
        p: Paired,
        target: float | None,
        grows: tuple[str, int] | None = None,
        *,
        flat: tuple[str, int] | None = None,
    ) -> None:
        """Print the row of ``p``, keep its metric, (``grows``: side, messages) side A's median
        time and (``flat``: ratio, messages) the ratio itself."""
        print(_row(label, p, target))
        self.metrics.append(Metric(name, p.ratio, target, p.spread))
        if grows is not None:
            self.grew(grows[0], grows[1], p.a)
        if flat is not None:
            self.flatness.setdefault(flat[0], []).append((flat[1], p.ratio))

    def grew(self, side: str, size: int, times: list[float]) -> None:
        """Keep the median of ``times``, the side's time at ``size`` messages."""
        self.growth.setdefault(side, []).append((size, statistics.median(times)))


def measure(size: int, attachments: bool, results: Results) -> None:
    """Every ratio on the session of ``size`` messages (with attachments or not)."""
    tag = "attachments" if attachments else "text"
    session = realistic_session(size, attachments=attachments)
    total = _counter().count(session).total
    kept = assemble(_fresh(session), _config(BUDGET), shape="openai-chat", counter=_counter())
    print(f"{size:,} messages ({tag}): {total:,} tokens, kept {len(kept.view):,} messages at 100k")
    # (a) cold / plain pass over the kept content
    a = paired(cold(session, BUDGET), plain_pass(kept.view.messages))
    target_a = 1.5 if size <= 2000 else 2.0
    results.add(
        f"a_cold_vs_plain_kept_{tag}_{size}",
        "(a) cold / plain pass over kept",
        a,
        target_a,
        (f"cold assemble ({tag})", size),
    )
    # (b) nothing to drop / plain pass over everything
    b = paired(cold(session, total * 2), plain_pass(session.messages))
    results.add(
        f"b_whole_history_vs_plain_{tag}_{size}",
        "(b) whole history / plain pass over all",
        b,
        1.1,
        (f"whole history ({tag})", size),
    )
    results.grew(f"plain pass over all ({tag})", size, b.b)
    # (c) ours / langchain trim_messages, memoized counter; only where trimming happens (when
    # everything fits, both sides just count it all)
    lc = langchain_side(session, BUDGET) if not attachments and total > BUDGET else None
    if lc is not None:
        c = paired(cold(session, BUDGET), lc)
        results.add(
            f"c_cold_vs_langchain_{size}", "(c) cold / langchain trim_messages (memo)", c, 0.5
        )
        results.grew("langchain trim_messages", size, c.b)
    # (d)/(e) next turn / plain pass over the new ring, then over what enters the view
    # (e) has no target: what enters the view is the turn's floor, (e') (the module docstring);
    # the flatness targets are on (d), (e'), (d*) and (e*)
    label = "(e)" if attachments else "(d)"
    d, path = next_turn(session, BUDGET, "ring")
    results.add(
        f"{label[1]}_next_turn_vs_new_ring_{tag}_{size}",
        f"{label} next turn / plain pass over new ring [{path}]",
        d,
        None if attachments else 3.0,
        (f"next turn ({tag})", size),
        flat=None if attachments else ("next turn / new ring (text)", size),
    )
    results.grew(f"plain pass over the new ring ({tag})", size, d.b)
    v, _ = next_turn(session, BUDGET, "view")
    results.add(
        f"{label[1]}_next_turn_vs_entering_{tag}_{size}",
        f"{label}' next turn / plain pass over what enters",
        v,
        3.0,
        flat=(f"next turn / what enters ({tag})", size) if attachments else None,
    )
    # (d*)/(e*) the same with a compaction headroom, 20 turns, the cuts among them
    stored, how = stored_turns(session, BUDGET)
    results.add(
        f"{label[1]}_stored_next_turns_vs_new_ring_{tag}_{size}",
        f"{label[:2]}*) stored view, headroom 0.1, {STORED_TURNS} turns / new rings [{how}]",
        stored,
        3.0,
        (f"next turn, stored view ({tag})", size),
        flat=(f"stored next turns / new rings ({tag})", size),
    )
    # (f) the plug-in path on the next request; with attachments through the Responses shape,
    # whose wire carries a file in a tool result (Chat Completions' does not, rule C6)
    wire = "openai-responses" if attachments else "openai-chat"
    f = paired(*plugin_next(session, BUDGET, wire))
    results.add(
        f"f_plugin_path_next_request_vs_plain_{tag}_{size}",
        f"(f) next request: parse + assemble + render / plain pass [{wire}]",
        f,
        0.5,
        (f"plug-in path, next request ({tag})", size),
    )
    f0 = paired(plugin_path(session, BUDGET, wire), plain_pass(session.messages))
    results.add(
        f"f0_plugin_path_cold_vs_plain_{tag}_{size}",
        "(f0) the same, cold (a new counter)",
        f0,
        None,
        (f"plug-in path cold ({tag})", size),
    )


def counting_primitive(results: Results) -> None:
    """What the counter's own text pass costs against the plain pass, on the same texts (those
    of the 2,000-message session): the counter reads long texts through tiktoken's buffer
    encoder (``reference_impl.tokens.encodings.count_texts``), which skips the Python ints the
    plain pass builds. Printed for reference, no target: every ratio against the plain pass
    holds this much of a head start on the encoding it shares."""
    texts = counted_texts(realistic_session(2000).messages)
    encoding = get_encoding("o200k_base")
    counted = paired(
        lambda _: lambda: count_texts(encoding, texts),
        lambda _: lambda: [encoding.encode_ordinary(t) for t in texts],
        NEXT_TURN_PAIRS,
    )
    print("reference: the counter's text pass (count_texts) / plain pass, same texts")
    results.add("ref_count_texts_vs_plain_2000", "count_texts / encode_ordinary", counted, None)


def _key(side: str) -> str:
    return side.replace(",", "").replace(" / ", " vs ").replace(" ", "_").translate(_DROPPED)


_DROPPED = str.maketrans("", "", "()")


def growth_exponents(results: Results) -> None:
    """Print each side's growth exponent and each next-turn ratio's (flatness); keep those with
    a target, and the next turn's time exponents (no target), as metrics."""
    print("growth exponents (time ~ messages^k, least squares over the sizes):")
    for side, points in results.growth.items():
        if len(points) < 2:
            continue
        k = exponent([n for n, _ in points], [t for _, t in points])
        if side.startswith(("plain pass", "langchain")):  # a yardstick: no target
            print(f"  {side:34s} k = {k:5.2f}")
            continue
        # the next turn's time: no target, its flatness is read on its paired ratio (below)
        target = None if side.startswith("next turn") else 1.1
        verdict = "no target (flatness below)" if target is None else f"target <= {target}  "
        print(
            f"  {side:34s} k = {k:5.2f}  {verdict}{'' if target is None else _verdict(k, target)}"
        )
        results.metrics.append(Metric(f"growth_exponent_{_key(side)}", k, target))
    print("flatness (the next turn's paired ratio against its floor ~ messages^k):")
    for ratio, points in results.flatness.items():
        if len(points) < 2:
            continue
        k = exponent([n for n, _ in points], [r for _, r in points])
        print(f"  {ratio:40s} k = {k:5.2f}  target <= 0.1  {_verdict(k, 0.1)}")
        results.metrics.append(Metric(f"flatness_exponent_{_key(ratio)}", k, 0.1))


def main() -> None:
    load = os.getloadavg()
    print(
        f"paired, order alternating (A B, B A), {PAIRS}-{MAX_PAIRS} pairs a ratio (more while "
        f"the pairs add up to less than {MIN_SECONDS:g} s; {NEXT_TURN_PAIRS} for the next turn), "
        f"CPU time; load average "
        f"{load[0]:.1f}/{load[1]:.1f}/{load[2]:.1f} on {os.cpu_count()} cores; budget {BUDGET:,}"
    )
    results = Results([], {})
    counting_primitive(results)
    for attachments in (False, True):
        for size in SIZES:
            measure(size, attachments, results)
    if len(SIZES) >= 2:
        growth_exponents(results)
    metrics = [m for m in results.metrics if m.target is not None]
    missed = [m.name for m in metrics if m.target is not None and m.ratio > m.target]
    print(
        f"{len(metrics) - len(missed)} of {len(metrics)} targets met"
        + (f"; missed: {', '.join(missed)}" if missed else "")
    )
    for m in results.metrics:
        print(m.line())


if __name__ == "__main__":
    main()
