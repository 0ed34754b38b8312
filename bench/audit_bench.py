"""``ctxconf audit`` throughput and memory on generated request logs.

Run with ``make bench-audit``. For 10k, 100k and 1M requests of each of openai-chat and
anthropic-messages (requests of the size ``docs/auditing-traffic.md`` and the tests show: a system
prompt, a user goal, zero to three tool rounds, a reply and a follow-up; ~1 KB a line), the
command runs as a child process writing JSON lines to /dev/null and the bench prints:

* requests/s on one core, steady state: (requests - 1) / (the child's CPU time (user + sys) - the
  CPU time of an audit of a one-request log of the same shape). The first request carries a fixed
  cost an empty log does not (loading the rule catalog, building the profile's facts and the type
  checkers: tens of milliseconds), so the start-up is measured with one request, not none; both
  start-ups are printed. Each measured run is paired with a one-request run just before it
  (A B A B ...) and the figure is the median of the paired rates (``REPEATS``) with their spread,
  as CPU time too moves with the load of a shared machine;
* peak RSS of the child (``ru_maxrss`` of that child alone, from ``wait4``; the highest of the
  runs): flat memory means the same peak at 10k and 1M;
* how many times one parse of the line (``json.loads``, in the bench's process, just before each
  measured run) judging one request costs: CPU time per request moves with the host (the same
  code measured 15-16k anthropic-messages requests/s on one day's host and 8-9k on a slower one
  the next), this ratio much less, so runs on different hosts can be compared (printed, no
  target);
* with ``--jobs 2``: the wall-clock speed-up over ``--jobs 1`` on the 100k log, run A B A B ...
  (``SPEEDUP_PAIRS``) and reported as the median of the paired ratios with their spread (the
  machine may be shared).

Targets (printed, never asserted in tests): >= 10,000 requests/s, <= 150 MiB peak RSS at 1M,
``--jobs 2`` >= 1.7x. One JSON line per metric: ``{"metric", "value", "target"}``.
"""

from __future__ import annotations

import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

CTXCONF = [str(Path(sys.executable).with_name("ctxconf"))]
DISTINCT = 500
"""Distinct request lines per log, repeated in order (the validators judge each line afresh)."""


_SYSTEM = "You are ops-bot. Follow the runbook."
_PARAMETERS = {"type": "object", "properties": {"q": {"type": "string"}}}
"""The one tool's parameters (``search_logs``: search service logs)."""
_RESULT = "p99 1840 ms " * 20
_CLOSING = (
    {"role": "assistant", "content": "The cache tier is saturated."},
    {"role": "user", "content": "What should we do next?"},
)


def _question(i: int) -> dict[str, Any]:
    return {"role": "user", "content": f"Why did checkout latency double in region {i % 7}?"}


def _logged(url: str, body: dict[str, Any]) -> dict[str, Any]:
    """A request-log line: the request sent to ``url`` and answered 200."""
    return {"url": url, "method": "POST", "status": 200, "body": body}


def _openai(i: int, rng: random.Random) -> dict[str, Any]:
    messages: list[dict[str, Any]] = [{"role": "system", "content": _SYSTEM}, _question(i)]
    for k in range(rng.randint(0, 3)):
        call = f"call_{i}_{k}"
        function = {"name": "search_logs", "arguments": '{"q": "latency"}'}
        messages.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": call, "type": "function", "function": function}],
            }
        )
        messages.append({"role": "tool", "tool_call_id": call, "content": _RESULT})
    messages += [dict(m) for m in _CLOSING]
    tool = {"name": "search_logs", "description": "Search service logs.", "parameters": _PARAMETERS}
    return _logged(
        "https://api.openai.com/v1/chat/completions",
        {
            "model": "gpt-4o",
            "messages": messages,
            "tools": [{"type": "function", "function": tool}],
            "temperature": 0.2,
        },
    )


def _anthropic(i: int, rng: random.Random) -> dict[str, Any]:
    messages: list[dict[str, Any]] = [_question(i)]
    for k in range(rng.randint(0, 3)):
        use = f"toolu_{i}_{k}"
        call = {"type": "tool_use", "id": use, "name": "search_logs", "input": {"q": "p99"}}
        result = {"type": "tool_result", "tool_use_id": use, "content": _RESULT}
        messages.append(
            {"role": "assistant", "content": [{"type": "text", "text": "Checking the logs."}, call]}
        )
        messages.append({"role": "user", "content": [result]})
    messages += [dict(m) for m in _CLOSING]
    tool = {
        "name": "search_logs",
        "description": "Search service logs.",
        "input_schema": _PARAMETERS,
    }
    return _logged(
        "https://api.anthropic.com/v1/messages",
        {
            "model": "claude-sonnet-4-5",
            "max_tokens": 1024,
            "system": _SYSTEM,
            "messages": messages,
            "tools": [tool],
        },
    )


SHAPES: dict[str, Callable[[int, random.Random], dict[str, Any]]] = {
    "openai-chat": _openai,
    "anthropic-messages": _anthropic,
}


def distinct_lines(shape: str) -> list[str]:
    """The ``DISTINCT`` request lines of a log of ``shape`` (with their newlines)."""
    rng = random.Random(13)
    return [json.dumps(SHAPES[shape](i, rng)) + "\n" for i in range(DISTINCT)]


def write_log(path: Path, shape: str, requests: int) -> None:
    lines = distinct_lines(shape)
    block = "".join(lines)
    with path.open("w", encoding="utf-8") as out:
        for _ in range(requests // DISTINCT):
            out.write(block)
        out.write("".join(lines[: requests % DISTINCT]))


def run_audit(path: Path, *jobs: str) -> tuple[float, float, float]:
    """(CPU seconds, wall seconds, peak RSS MiB) of one ``ctxconf audit`` run: the child's own
    resource use (``wait4``), its forked ``--jobs`` workers included in the CPU time."""
    started = time.perf_counter()
    with open(os.devnull, "w") as sink:
        child = subprocess.Popen(
            [*CTXCONF, "audit", str(path), "--format", "jsonl", "--all", *jobs],
            stdout=sink,
            stderr=subprocess.PIPE,
        )
        _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - started
    child.returncode = os.waitstatus_to_exitcode(status)
    errors = child.stderr.read() if child.stderr is not None else b""
    if child.returncode not in (0, 1):
        raise SystemExit(f"audit failed ({child.returncode}): {errors.decode()[-500:]}")
    return usage.ru_utime + usage.ru_stime, wall, usage.ru_maxrss / 1024  # KiB on Linux


REPEATS = 5
"""Runs of the start-ups and pairs of the 10k logs (cheap); the 100k logs run 3 times, the 1M logs
once (about 100 s of CPU each), each after its own one-request run. Each figure is the median of
its runs."""


SPEEDUP_PAIRS = 5
"""Pairs of the ``--jobs 2`` speed-up (``--jobs 1`` then ``--jobs 2`` on the 100k log): its wall
times move most on a shared machine, so it takes more pairs than the rates."""


def parse_seconds(shape: str) -> float:
    """CPU seconds of one ``json.loads`` of a request line of ``shape`` (the median of 5 passes
    over the log's distinct lines): the host's speed at plain Python work, now."""
    lines = distinct_lines(shape)
    passes = []
    for _ in range(5):
        started = time.process_time()
        for line in lines:
            json.loads(line)
        passes.append((time.process_time() - started) / len(lines))
    return statistics.median(passes)


def _repeats(size: int) -> int:
    return REPEATS if size <= 10_000 else 3 if size <= 100_000 else 1


def main() -> None:
    sizes = [int(s) for s in os.environ.get("AUDIT_SIZES", "10000,100000,1000000").split(",")]
    results: list[tuple[str, float, str | None]] = []
    load = os.getloadavg()[0]
    print(f"load average {load:.1f} on {os.cpu_count()} cores")
    with tempfile.TemporaryDirectory(prefix="ctxconf-audit-bench-") as tmp:
        empty = Path(tmp, "empty.jsonl")
        empty.write_text("", "utf-8")
        for shape in SHAPES:
            one = Path(tmp, f"{shape}-1.jsonl")
            write_log(one, shape, 1)
            pairs = [(run_audit(empty)[0], run_audit(one)[0]) for _ in range(REPEATS)]
            costs = [first - nothing for nothing, first in pairs]
            print(
                f"start-up, a one-request {shape} log: "
                f"{statistics.median(first for _, first in pairs) * 1000:.0f} ms CPU against "
                f"{statistics.median(nothing for nothing, _ in pairs) * 1000:.0f} ms for an empty "
                f"log; the first request's fixed cost {statistics.median(costs) * 1000:.0f} ms "
                f"(median of {REPEATS} pairs, spread {(max(costs) - min(costs)) * 1000:.0f} ms). "
                "Each measured run below is paired with a one-request run just before it."
            )
            for size in sizes:
                log = Path(tmp, f"{shape}-{size}.jsonl")
                write_log(log, shape, size)
                runs = []
                rates = []
                parses = []
                for _ in range(_repeats(size)):  # A B A B ...: one request, then the log
                    parse = parse_seconds(shape)
                    startup = run_audit(one)[0]
                    run = run_audit(log)
                    runs.append(run)
                    rates.append((size - 1) / max(run[0] - startup, 1e-9))
                    parses.append(1 / (rates[-1] * parse))
                rate = statistics.median(rates)
                parsed = statistics.median(parses)
                cpu, wall = (statistics.median(run[k] for run in runs) for k in range(2))
                peak = max(run[2] for run in runs)  # the worst run's
                mib = log.stat().st_size / 2**20
                print(
                    f"{shape:19s} {size:>9,d} requests ({mib:7.1f} MiB): {rate:9,.0f} requests/s "
                    f"on one core, {cpu:7.1f} s CPU, {wall:7.1f} s wall, peak RSS {peak:6.1f} MiB"
                    + (
                        f" (median of {len(runs)} pairs, spread {max(rates) - min(rates):,.0f})"
                        * (len(runs) > 1)
                    )
                    + f"; a request costs {parsed:.1f} parses of its line"
                )
                results.append((f"audit_{shape}_{size}_requests_per_s", rate, ">= 10000"))
                results.append((f"audit_{shape}_{size}_peak_rss_mib", peak, "<= 150"))
                results.append((f"audit_{shape}_{size}_cost_in_json_parses", parsed, None))
                if size == 100_000:
                    ratios = []
                    for _ in range(SPEEDUP_PAIRS):  # A B A B ...
                        single = run_audit(log)[1]
                        two = run_audit(log, "--jobs", "2")[1]
                        ratios.append(single / two)
                    spread = max(ratios) - min(ratios)
                    print(
                        f"  --jobs 2 speed-up (wall, paired): {[round(r, 2) for r in ratios]}, "
                        f"median {statistics.median(ratios):.2f}, spread {spread:.2f}"
                    )
                    results.append(
                        (f"audit_{shape}_jobs2_speedup", statistics.median(ratios), ">= 1.7")
                    )
                log.unlink()
    print(f"load average {os.getloadavg()[0]:.1f} at the end")
    for name, value, target in results:
        print(json.dumps({"metric": name, "value": round(value, 2), "target": target}))


if __name__ == "__main__":
    main()
