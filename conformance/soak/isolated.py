"""``ctxconf soak`` in a supervised process: a plug-in that ends, kills or hangs its process still
leaves a report.

A soak run keeps one plug-in object for hundreds of turns (its state is what a long run tests), so
unlike ``ctxconf run`` it cannot hand each call to a fresh worker. Instead the whole run (and then
the shrinking of its finding) happens in one child process forked from the command after the
plug-in is loaded. The child tells the parent, over a pipe, the run's settings, each turn's start
(its stored session and ledger), each passed turn's record, and every plug-in call's start and end
(:func:`conformance.engine.set_call_hook`: in the child the plug-in is called directly, no thread).
The parent only supervises:

- the child runs in a session of its own (:func:`conformance.workers.own_process_group`): a
  plug-in that signals its process group ends the child, not the command;
- a plug-in call that outlives the timeout gets the child killed (``SIGKILL``, with its process
  group: what the plug-in spawned goes too): the turn is an
  ``error`` "timed out", and no abandoned thread keeps running or allocating; so does judging
  what a call returned past :data:`conformance.workers.JUDGE_TIMEOUT`;
- a child that dies (``os._exit``, ``sys.exit`` outside a call, a segfault, the OOM killer) turns
  the turn it was in into an ``error`` naming how it died;
- either way the report holds every turn that finished, and the finding keeps the failing turn's
  whole history (not shrunk: shrinking would call the plug-in again) and says so;
- what the plug-in prints goes to files of the child (:class:`conformance.workers.OutputCapture`),
  never to the command's output: the report keeps it (``plugin_output``, the first
  :data:`~conformance.workers.MAX_CAPTURED_CHARS` of each stream), and a plug-in whose process
  ended before the first turn is named with the end of what it wrote to stderr.

A failure while shrinking (after the run) keeps the run's report whole and the finding unshrunk.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import signal
import sys
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from multiprocessing.connection import Connection, wait
from typing import TYPE_CHECKING, Any

from conformance.engine import DEFAULT_TIMEOUT, set_call_hook
from conformance.errors import WorkerInternalError
from conformance.loading import Plugin
from conformance.soak.finding import SoakFinding, make_finding, unshrunk_finding
from conformance.soak.loop import DEFAULT_TURNS, SoakFailure, SoakReport, TurnRecord, run_soak
from conformance.soak.workload import Workload
from conformance.workers import (
    JUDGE_TIMEOUT,
    CallClock,
    OutputCapture,
    describe_exit,
    kill_process_group,
    own_process_group,
    read_captured,
    start_forked,
)
from reference_impl.errors import CtxconfError
from reference_impl.transcript import Transcript

if TYPE_CHECKING:
    from multiprocessing.process import BaseProcess

__all__ = ["SoakOutcome", "run_soak_isolated"]


@dataclass(frozen=True, slots=True)
class SoakOutcome:
    """A supervised run: its report and its finding (None when the run found nothing)."""

    report: SoakReport
    finding: SoakFinding | None


class _Reporter:
    """The child's side: what :func:`run_soak` tells its watcher goes down the pipe."""

    def __init__(self, connection: Connection) -> None:
        self.connection = connection

    def started(self, report: SoakReport) -> None:
        self.connection.send(("started", report))

    def turn_starts(
        self, turn: int, stored: Transcript, ledger: tuple[Mapping[str, Any], ...]
    ) -> None:
        self.connection.send(("turn", turn, stored, ledger))

    def turn_done(self, record: TurnRecord, repeats: int) -> None:
        self.connection.send(("record", record, repeats))


def _child(
    connection: Connection,
    plugin: Plugin,
    workload: Workload,
    settings: tuple[int, int, str | None, float],
    capture_paths: tuple[str, str],
) -> None:
    own_process_group()
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent stops the child, not a Ctrl-C
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    OutputCapture(*capture_paths)
    turns, seed, shape, timeout = settings
    set_call_hook(lambda kind: connection.send((kind,)))
    try:
        report = run_soak(
            plugin,
            workload,
            turns=turns,
            seed=seed,
            shape=shape,
            timeout=timeout,
            watch=_Reporter(connection),
        )
        connection.send(("report", report))
        connection.send(("finding", make_finding(plugin, report, timeout=timeout)))
    except CtxconfError as exc:
        connection.send(("refused", exc.message, exc.where))
    except Exception as exc:  # noqa: BLE001 - a harness bug: the parent reports it
        connection.send(("internal", f"{type(exc).__name__}: {exc}"))
    connection.close()
    os._exit(0)  # no atexit handlers or inherited buffers of the parent run here


@dataclass(slots=True)
class _Progress:
    """What the parent knows of the child's run so far."""

    started: SoakReport | None = None
    records: tuple[TurnRecord, ...] = ()
    repeats: int = 0
    turn: int = 0
    stored: Transcript | None = None
    ledger: tuple[Mapping[str, Any], ...] = ()
    report: SoakReport | None = None
    finding: SoakFinding | None = None
    clock: CallClock = field(default_factory=CallClock)
    """The running call, or the judging of what it returned, until the turn's record."""


def run_soak_isolated(
    plugin: Plugin,
    workload: Workload,
    *,
    turns: int = DEFAULT_TURNS,
    seed: int = 0,
    shape: str | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    judge_timeout: float = JUDGE_TIMEOUT,
) -> SoakOutcome:
    """:func:`conformance.soak.run_soak` and :func:`conformance.soak.finding.make_finding` in a
    supervised child process (see the module docstring). Raises :class:`CtxconfError` for what
    ``run_soak`` refuses (a shape the plug-in lacks, a workload that cannot fit, a broken
    ``new_session()``) and :class:`WorkerInternalError` for a bug of the harness in the child."""
    for stream in (sys.stdout, sys.stderr):  # nothing buffered may be written twice
        with contextlib.suppress(Exception):
            stream.flush()
    with tempfile.TemporaryDirectory(prefix="ctxconf-soak-") as folder:
        capture = (os.path.join(folder, "plugin.out"), os.path.join(folder, "plugin.err"))
        context = multiprocessing.get_context("fork")
        parent_end, child_end = context.Pipe(duplex=False)
        process = context.Process(
            target=_child,
            args=(child_end, plugin, workload, (turns, seed, shape, timeout), capture),
            name="ctxconf-soak",
            daemon=True,
        )
        started = time.perf_counter()
        start_forked(process)
        child_end.close()
        progress = _Progress()
        why: str | None = None
        try:
            why = _supervise(process, parent_end, progress, (timeout, judge_timeout))
        finally:
            kill_process_group(process)  # what the plug-in spawned goes with it
            parent_end.close()
        printed = read_captured(capture)
    return _outcome(progress, why, time.perf_counter() - started, printed)


def _supervise(
    process: BaseProcess,
    connection: Connection,
    progress: _Progress,
    timeouts: tuple[float, float],
) -> str | None:
    """Follow the child until it finishes (None) or dies or hangs (why, in words). ``timeouts``:
    a plug-in call's and the judging of what one returned
    (:data:`conformance.workers.JUDGE_TIMEOUT`)."""
    while True:
        deadline = progress.clock.deadline(*timeouts)
        wait_for = None if deadline is None else max(0.0, deadline - time.monotonic())
        ready = wait([connection, process.sentinel], timeout=wait_for)
        if connection in ready or process.sentinel in ready:
            try:
                while connection.poll():
                    if _receive(connection.recv(), progress):
                        return None
            except (EOFError, OSError):
                pass
            if not process.is_alive() or process.sentinel in ready:
                process.join(timeout=5)
                return describe_exit(process.exitcode, "soak process")
        deadline = progress.clock.deadline(*timeouts)
        if deadline is not None and time.monotonic() >= deadline:
            kill_process_group(process)
            if progress.clock.calling_since is not None:
                return f"timed out after {timeouts[0]:g}s; the soak process was killed"
            return (
                f"timed out judging what the plug-in returned: over {timeouts[1]:g}s (judging "
                "takes time in proportion to the returned request's size); the soak process "
                "was killed"
            )


def _receive(message: tuple[Any, ...], progress: _Progress) -> bool:
    """Take in one message of the child; True when it was the last one (the finding)."""
    kind = message[0]
    if progress.clock.heard(kind):
        return False
    if kind == "started":
        progress.started = message[1]
    elif kind == "turn":
        _, progress.turn, progress.stored, progress.ledger = message
    elif kind == "record":
        progress.clock.stop()
        progress.records = (*progress.records, message[1])
        progress.repeats = message[2]
    elif kind == "report":
        progress.clock.stop()
        progress.report = message[1]
    elif kind == "finding":
        progress.finding = message[1]
        return True
    elif kind == "refused":
        raise CtxconfError(message[1], where=message[2])
    elif kind == "internal":
        raise WorkerInternalError(f"{message[1]} (in the soak process)")
    return False


def _outcome(
    progress: _Progress, why: str | None, seconds: float, printed: Mapping[str, str]
) -> SoakOutcome:
    output = dict(printed) or None
    if why is None:
        assert progress.report is not None
        return SoakOutcome(replace(progress.report, plugin_output=output), progress.finding)
    if progress.report is not None:  # the run was over: shrinking its finding failed
        report = replace(progress.report, plugin_output=output)
        return SoakOutcome(report, unshrunk_finding(report, f"shrinking it: {why}"))
    if progress.started is None:  # died before the first turn: new_session() or the set-up
        said = _last_words(printed.get("stderr", ""))
        raise CtxconfError(f"the plug-in's process ended before the first turn: {why}{said}")
    failure = SoakFailure(
        progress.turn, "error", why, (), progress.stored, tuple(dict(e) for e in progress.ledger)
    )
    report = replace(
        progress.started,
        turns=progress.records,
        failure=failure,
        repeats=progress.repeats,
        seconds=seconds,
        plugin_output=output,
    )
    return SoakOutcome(report, unshrunk_finding(report, why))


def _last_words(stderr: str, limit: int = 500) -> str:
    """The end of what a plug-in wrote to stderr (its traceback's last lines), for an error."""
    text = stderr.strip()
    if not text:
        return ""
    tail = text if len(text) <= limit else "..." + text[-limit:]
    return f"; its stderr ended with: {tail}"
