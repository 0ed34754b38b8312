"""A named pipe (FIFO) given as an input file: read when a writer comes within the wait, else a
named error (exit 2), never a command blocked for ever in ``open``. ``<(cmd)`` (an unnamed
pipe at ``/dev/fd/N``) is read however slow its writer is."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest
from cli_support import invoke
from paths import EXAMPLES

from reference_impl.documents import (
    PIPE_WAIT_ENV,
    PipeWithoutWriterError,
    read_input_bytes,
)

pytestmark = [
    pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no named pipes on this system"),
    # without the bounded wait, open() blocks for ever: fail instead of hanging the suite
    pytest.mark.timeout(20),
]

SESSION = (EXAMPLES / "session.json").read_bytes()

COMMANDS = [
    ["inspect", "{f}"],
    ["assemble", "{f}", "--shape", "openai-chat"],
    ["assemble", str(EXAMPLES / "session.json"), "--shape", "openai-chat", "--config", "{f}"],
    ["validate", "{f}", "--shape", "openai-chat"],
    ["count", "{f}", "--shape", "openai-chat"],
    ["convert", "{f}", "--from", "openai-chat", "--to", "gemini"],
    ["report", "{f}"],
    ["scenarios", "validate", "{f}"],
    ["run", "--scenarios", "{f}"],
    ["run", "--baseline", "{f}"],
]


@pytest.fixture
def fifo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv(PIPE_WAIT_ENV, "0.1")
    path = tmp_path / "pipe.json"
    os.mkfifo(path)
    return path


def _write_later(path: Path, data: bytes, delay: float) -> threading.Thread:
    """A writer that opens ``path`` after ``delay`` seconds, writes ``data`` and closes it."""

    def write() -> None:
        time.sleep(delay)
        with open(path, "wb") as out:  # blocks until the reader has opened it
            out.write(data)

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    return writer


@pytest.mark.parametrize("template", COMMANDS, ids=" ".join)
def test_a_named_pipe_with_no_writer_is_a_named_error_not_a_hang(
    fifo: Path, template: list[str]
) -> None:
    started = time.monotonic()
    code, _, err = invoke([str(fifo) if arg == "{f}" else arg for arg in template])
    assert time.monotonic() - started < 5
    assert code == 2, err
    assert f"{fifo}" in err
    assert "a named pipe nothing was written to within 0.1 s (no writer, or one that" in err
    assert PIPE_WAIT_ENV in err
    assert "Traceback" not in err
    assert len(err.strip().splitlines()) == 1, err


def test_a_named_pipe_whose_writer_comes_within_the_wait_is_read(
    fifo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(PIPE_WAIT_ENV, "10")
    writer = _write_later(fifo, SESSION, delay=0.2)
    code, out, err = invoke(["inspect", str(fifo)])
    writer.join(5)
    assert code == 0, err
    assert "12 messages" in out


def test_an_unnamed_pipe_is_read_however_slow_its_writer(fifo: Path) -> None:
    # what `<(cmd)` passes: /dev/fd/N of a pipe whose writer exists; the wait is not applied
    if not Path("/proc/self/fd").is_dir():
        pytest.skip("unnamed pipes are told apart through /proc (Linux)")
    read_end, write_end = os.pipe()

    def write() -> None:
        time.sleep(0.4)  # longer than the 0.1 s wait
        os.write(write_end, SESSION)
        os.close(write_end)

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    try:
        assert read_input_bytes(f"/dev/fd/{read_end}") == SESSION
    finally:
        writer.join(5)
        os.close(read_end)


def test_the_error_is_an_oserror_and_a_bad_wait_setting_is_named(
    fifo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(PipeWithoutWriterError) as caught:
        read_input_bytes(fifo)
    assert isinstance(caught.value, OSError)
    assert caught.value.filename == str(fifo)
    monkeypatch.setenv(PIPE_WAIT_ENV, "soon")
    code, _, err = invoke(["inspect", str(fifo)])
    assert code == 2
    assert f"${PIPE_WAIT_ENV}='soon' is not a number of seconds above 0" in err
