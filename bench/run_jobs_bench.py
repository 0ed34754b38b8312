"""``ctxconf run --jobs 2`` against ``--jobs 1`` for a plug-in that takes 20 ms a call.

Run with ``make bench-run``. The plug-in is a plain message function that spends 20 ms of CPU
(not sleep: a sleeping plug-in would let any number of workers overlap on one core) and returns
the messages it was given; ``ctxconf run`` drives it over the built-in corpus (every level) as a
child process, reports off, JSON lines to /dev/null. The runs go A B A B A B (``--jobs 1``,
``--jobs 2``) and the bench prints each pair's wall-clock ratio, their median and spread.

Target (printed, never asserted in tests): the median ratio > 1.0 on this 2-core machine (the
workers are forked after the warm-up, so each inherits the encodings and the rule catalog
instead of building its own). One JSON line: ``{"metric", "value", "target"}``.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CTXCONF = str(Path(sys.executable).with_name("ctxconf"))
PAIRS = 3
CALL_SECONDS = 0.02

_PLUGIN = f'''
import time


def burn(messages, budget):
    """Spends {CALL_SECONDS} s of CPU, then keeps every message."""
    end = time.process_time() + {CALL_SECONDS}
    while time.process_time() < end:
        pass
    return messages
'''


def run(folder: str, jobs: int) -> tuple[float, int]:
    """(wall seconds, plug-in calls: one per turn of each case) of one ``ctxconf run``."""
    env = {**os.environ, "PYTHONPATH": folder}
    command = [CTXCONF, "run", "--impl", "slow_plugin:burn", "--impl-shape", "openai-chat"]
    command += ["--no-reports", "--format", "jsonl", "--jobs", str(jobs)]
    started = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - started
    if done.returncode not in (0, 1):
        raise SystemExit(f"run failed ({done.returncode}): {done.stderr[-500:]}")
    cases = [json.loads(line) for line in done.stdout.split("\n") if line.strip()]
    calls = sum(int(c.get("turns") or 0) for c in cases if c.get("type") == "case")
    return wall, calls


def main() -> None:
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    with tempfile.TemporaryDirectory(prefix="ctxconf-run-bench-") as folder:
        Path(folder, "slow_plugin.py").write_text(_PLUGIN, "utf-8")
        ratios = []
        for _ in range(PAIRS):  # A B A B A B
            one, calls = run(folder, 1)
            two, _ = run(folder, 2)
            ratios.append(one / two)
            print(f"--jobs 1 {one:6.2f} s, --jobs 2 {two:6.2f} s wall ({calls} plug-in calls)")
    median = statistics.median(ratios)
    print(
        f"--jobs 2 speed-up (wall, paired): {[round(r, 2) for r in ratios]}, "
        f"median {median:.2f}, spread {max(ratios) - min(ratios):.2f}"
    )
    print(json.dumps({"metric": "run_jobs2_speedup", "value": round(median, 2), "target": "> 1.0"}))


if __name__ == "__main__":
    main()
