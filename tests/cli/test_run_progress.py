"""``ctxconf run`` draws a progress bar when standard error is a terminal, and none otherwise."""

from __future__ import annotations

import os
import pty
import re
import subprocess
import sys
import threading

from paths import ROOT


def _run_with_stderr(stderr_is_terminal: bool) -> str:
    """Run a tiny ``ctxconf run``; return what it wrote to standard error."""
    args = [
        sys.executable,
        "-c",
        "from conformance.cli import main; main()",
        "run",
        "--scenarios",
        "single-tool,parallel-tools-2",
        "--shapes",
        "openai-chat",
        "--no-reports",
    ]
    env = {k: v for k, v in os.environ.items() if k not in {"TTY_COMPATIBLE", "FORCE_COLOR"}}
    if not stderr_is_terminal:
        done = subprocess.run(
            args, check=False, capture_output=True, text=True, env=env, cwd=ROOT, timeout=120
        )
        assert done.returncode == 0, done.stderr
        return done.stderr
    master, slave = pty.openpty()
    chunks: list[bytes] = []

    def drain() -> None:  # a pty's buffer is small: read while the child writes
        while True:
            try:
                data = os.read(master, 4096)
            except OSError:  # EIO once the child closed its side
                return
            if not data:
                return
            chunks.append(data)

    reader = threading.Thread(target=drain)
    reader.start()
    try:
        process = subprocess.run(
            args, check=False, stdout=subprocess.PIPE, stderr=slave, env=env, cwd=ROOT, timeout=120
        )
    finally:
        os.close(slave)
        reader.join(timeout=10)
        os.close(master)
    assert process.returncode == 0
    return b"".join(chunks).decode("utf-8", "replace")


def test_run_draws_a_progress_bar_on_a_terminal_only() -> None:
    on_terminal = _run_with_stderr(stderr_is_terminal=True)
    assert "ctxconf run" in on_terminal
    assert re.search(r"(?<!\d)(\d+)/\1(?!\d)", on_terminal)  # MofN column: every planned case done
    assert "ctxconf run" not in _run_with_stderr(stderr_is_terminal=False)
