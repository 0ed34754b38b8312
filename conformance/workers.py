"""Supervised worker processes: a plug-in that crashes, hangs or prints never takes the run along.

``ctxconf run`` and ``ctxconf fuzz`` run every case in a worker process forked from the harness
(POSIX ``fork``, after the warm-up, so the loaded plug-in, the cassette library, the rule catalog
and the tokenizer encodings are inherited instead of rebuilt). The parent process only plans,
supervises and reports:

- **Crashes.** A worker that dies before it answers (``os._exit``, a segfault, the OOM killer's
  ``SIGKILL``) turns its case into an ``error`` result naming how it died; a fresh worker replaces
  it and the run goes on. A ``MemoryError`` raised in the plug-in is an ordinary exception there.
- **Hangs.** The worker announces each plug-in call; a call that outlives the timeout gets its
  worker killed (``SIGKILL``) and replaced, so no abandoned thread is left behind. Judging what a
  call returned is bounded the same way (:data:`JUDGE_TIMEOUT`).
- **Output.** A worker's file descriptors 1 and 2 (and ``sys.stdout``/``sys.stderr``) go to
  files of its own, read back per case: what a plug-in prints is kept in the case record
  (``plugin_output``), never mixed into the harness's own output or its JSON-lines stream.
- **Process groups.** A worker runs in a session (and process group) of its own
  (:func:`own_process_group`): a plug-in that signals "its" group (``os.killpg(0, SIGTERM)`` in a
  cleanup routine) reaches its worker and what it spawned, never the harness or the user's shell,
  and its case is an ``error`` naming the signal. The harness kills a worker by its group
  (:func:`kill_process_group`), so what the plug-in spawned goes with it.
- **Stopping.** :class:`RunStop` (SIGINT/SIGTERM, a run-level budget) ends dispatching; the
  workers are killed, and the cases that finished are reported. The terminal's Ctrl-C reaches the
  harness only (the workers are in another process group): the harness stops them itself.

The worker receives each case pickled (a :class:`conformance.engine.Case` and its checks) and
answers with the pickled :class:`conformance.events.CaseResult`.
"""

from __future__ import annotations

import contextlib
import ctypes
import io
import multiprocessing
import os
import signal
import sys
import tempfile
import threading
import time
import warnings
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from multiprocessing.connection import Connection, wait
from types import FrameType
from typing import TYPE_CHECKING, Any, Final

from typing_extensions import Self

from conformance.errors import WorkerInternalError

if TYPE_CHECKING:
    from multiprocessing.process import BaseProcess

    from conformance.checks import CheckSpec
    from conformance.engine import Case
    from conformance.events import CaseResult
    from conformance.loading import Plugin
    from conformance.traffic.verdicts import CassetteLibrary

__all__ = [
    "JUDGE_TIMEOUT",
    "MAX_CAPTURED_CHARS",
    "CallClock",
    "OutputCapture",
    "RunStop",
    "WorkerPool",
    "describe_exit",
    "kill_process_group",
    "own_process_group",
    "read_captured",
    "start_forked",
]

MAX_CAPTURED_CHARS: Final = 64 * 1024
"""At most this much of a plug-in's stdout (and of its stderr) is kept per case (per soak run)."""

JUDGE_TIMEOUT: Final = 120.0
"""Seconds of wall time the harness may spend judging what one plug-in call returned (from the
call's end to the next call or the case's result). Judging is linear in the returned request's
size and takes well under a second for any request a provider would take; a body near the input
limit made of a million tiny messages takes minutes. Past this the worker is killed and the case
is a timed-out ``error`` (it counts towards ``--max-consecutive-timeouts``)."""


@dataclass(slots=True)
class CallClock:
    """Where a supervised process stands between the ``("call",)`` and ``("done",)`` messages
    its call hook (:func:`conformance.engine.set_call_hook`) sends: calling the plug-in since a
    time, judging what a call returned since a time, or neither. Its :meth:`deadline` is when
    that call, or that judging, is out of time."""

    calling_since: float | None = None
    judging_since: float | None = None
    """Set when a call ends, until the next call or a result: the harness is judging."""

    def heard(self, kind: str) -> bool:
        """Take in a message of the call hook; False when ``kind`` is not one of them."""
        if kind == "call":
            self.calling_since, self.judging_since = time.monotonic(), None
        elif kind == "done":
            self.calling_since, self.judging_since = None, time.monotonic()
        else:
            return False
        return True

    def stop(self) -> None:
        """Neither calling nor judging (a result is in, or nothing runs yet)."""
        self.calling_since = self.judging_since = None

    def deadline(self, timeout: float, judge_timeout: float) -> float | None:
        """When the running call, or the judging of what it returned, is out of time."""
        if self.calling_since is not None:
            return self.calling_since + timeout
        if self.judging_since is not None:
            return self.judging_since + judge_timeout
        return None


_SIGNAL_NAMES: Final = {
    signal.SIGKILL: "SIGKILL: killed, e.g. by the kernel's out-of-memory killer",
    signal.SIGSEGV: "SIGSEGV: a segmentation fault",
    signal.SIGABRT: "SIGABRT: aborted",
    signal.SIGBUS: "SIGBUS: a bus error",
    signal.SIGFPE: "SIGFPE: a floating-point exception",
    signal.SIGILL: "SIGILL: an illegal instruction",
    signal.SIGTERM: "SIGTERM: terminated, e.g. by os.killpg(0, ...) in the plug-in",
}


def describe_exit(exitcode: int | None, process: str = "worker process") -> str:
    """How a ``process`` ended, in words (``exitcode`` as ``multiprocessing`` reports it)."""
    if exitcode is None:
        return f"the {process} vanished"
    if exitcode < 0:
        number = -exitcode
        try:
            name = _SIGNAL_NAMES.get(signal.Signals(number), signal.Signals(number).name)
        except ValueError:
            name = f"signal {number}"
        return f"the {process} was killed by signal {number} ({name})"
    return (
        f"the plug-in ended the {process} with exit status {exitcode} (os._exit, or "
        "sys.exit outside the call)"
    )


class RunStop:
    """Why a run stops before its last case: a signal, or a run-level budget.

    :meth:`installed` puts SIGINT/SIGTERM handlers in place for a ``with`` block (main thread
    only); a signal sets :attr:`reason` and :attr:`exit_status` (128 + the signal number: 130 for
    SIGINT, 143 for SIGTERM) and wakes the supervisor through a pipe."""

    def __init__(self) -> None:
        self.reason: str | None = None
        self.exit_status: int | None = None
        self.signal: str | None = None
        self._read, self._write = os.pipe()
        os.set_blocking(self._write, False)

    @property
    def wake_fd(self) -> int:
        """Readable once :meth:`stop` was called (for ``multiprocessing.connection.wait``)."""
        return self._read

    def stop(self, reason: str, exit_status: int, *, signal_name: str | None = None) -> None:
        """Stop the run (the first reason wins)."""
        if self.reason is None:
            self.reason, self.exit_status, self.signal = reason, exit_status, signal_name
        with contextlib.suppress(OSError):
            os.write(self._write, b"!")

    def _handle(self, signum: int, _frame: FrameType | None) -> None:
        name = signal.Signals(signum).name
        self.stop(f"interrupted by {name}", 128 + signum, signal_name=name)

    @contextlib.contextmanager
    def installed(self) -> Iterator[RunStop]:
        """SIGINT and SIGTERM stop the run instead of killing the process, inside the block
        (outside the main thread, where Python cannot set handlers, nothing changes)."""
        if threading.current_thread() is not threading.main_thread():
            yield self
            return
        previous = {s: signal.signal(s, self._handle) for s in (signal.SIGINT, signal.SIGTERM)}
        try:
            yield self
        finally:
            for number, handler in previous.items():
                signal.signal(number, handler)

    def close(self) -> None:
        """Close the wake-up pipe."""
        for fd in (self._read, self._write):
            with contextlib.suppress(OSError):
                os.close(fd)


def start_forked(process: BaseProcess) -> None:
    """Start a forked child of the harness (a worker, the soak process). Python 3.12+ warns at a
    fork of a process with threads (an xdist worker has execnet's); the child only runs the
    harness's own loop, and under ``-W error`` the warning would turn every case into an error."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", r"This process .*is multi-threaded", DeprecationWarning)
        process.start()


def own_process_group() -> None:
    """In a forked child that runs plug-in code (a worker, the soak process): a session, and so a
    process group, of its own. A plug-in that signals its group (``os.killpg(0, SIGTERM)``, as a
    library's cleanup of "its" subprocesses may) then reaches this child and what it spawned, not
    the harness nor the shell that started it; the terminal's signals (Ctrl-C, hang-up) reach the
    harness only, which stops the child itself. The child is killed when the harness dies (Linux:
    ``PR_SET_PDEATHSIG``), as the terminal's hang-up used to kill it with the harness."""
    parent = os.getppid()
    with contextlib.suppress(OSError):
        os.setsid()
    if sys.platform == "linux":
        with contextlib.suppress(OSError, AttributeError):
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() != parent:  # the harness died before the request took effect
            os._exit(1)


_PR_SET_PDEATHSIG: Final = 1
"""``prctl`` option (linux/prctl.h): the signal a process gets when its parent dies."""


def kill_process_group(process: BaseProcess) -> None:
    """``SIGKILL`` a child started with :func:`own_process_group` and every process left in its
    group (what the plug-in spawned); only the child when it has no group of its own yet (it was
    killed before it made one: then it spawned nothing). Waits for the child to end."""
    if process.pid is not None and _group_is_ours(process.pid):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)
    if process.is_alive():
        process.kill()
    process.join()


def _group_is_ours(pid: int) -> bool:
    """Whether ``pid`` as a process-group id can only name the group our child made. While the
    child is not reaped (alive, or a zombie) its pid is ours. Reaped, the pid stays reserved as
    long as its group has members (what the plug-in spawned): the kernel hands out no id in use
    as a group id; so a process that has that pid now (recycled) means the group is empty, and
    signalling the group would reach a stranger's."""
    try:
        os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:  # reaped (joined): the pid may have been handed out again
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True  # no process has it: our group's members, if any, hold it
        except PermissionError:
            return False  # a stranger's process
        return False  # a process has the pid again: our group is empty
    return True


# ------------------------------------------------------------------------------ the worker side

# Set in the parent before forking: the child inherits them, nothing is pickled.
_INHERITED: dict[str, Any] = {}


class OutputCapture:
    """A child process's fds 1 and 2 (and ``sys.stdout``/``sys.stderr``) redirected to two
    files: a worker truncates them before each case; the soak process keeps them for its run."""

    def __init__(self, stdout_path: str, stderr_path: str) -> None:
        self.paths = (stdout_path, stderr_path)
        self.fds = tuple(os.open(p, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600) for p in self.paths)
        for fd, target in zip(self.fds, (1, 2), strict=True):
            os.dup2(fd, target)
        sys.stdout = io.TextIOWrapper(
            io.FileIO(1, "w", closefd=False),
            encoding="utf-8",
            errors="replace",
            line_buffering=True,
        )
        sys.stderr = io.TextIOWrapper(
            io.FileIO(2, "w", closefd=False),
            encoding="utf-8",
            errors="replace",
            line_buffering=True,
        )

    def reset(self) -> None:
        """Empty both files (a worker, before each case)."""
        for fd in self.fds:
            os.ftruncate(fd, 0)
            os.lseek(fd, 0, os.SEEK_SET)

    def collect(self) -> dict[str, str]:
        """What was written since the last reset, by stream (see :func:`read_captured`)."""
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        return read_captured(self.paths)


def read_captured(paths: Sequence[str]) -> dict[str, str]:
    """``{"stdout": ..., "stderr": ...}`` from a worker's capture files (non-empty ones only)."""
    out: dict[str, str] = {}
    for name, path in zip(("stdout", "stderr"), paths, strict=True):
        try:
            with open(path, "rb") as handle:
                data = handle.read(MAX_CAPTURED_CHARS * 4 + 1)
        except OSError:
            continue
        text = data.decode("utf-8", "replace")
        if len(text) > MAX_CAPTURED_CHARS or len(data) > MAX_CAPTURED_CHARS * 4:
            text = text[:MAX_CAPTURED_CHARS] + "\n[... truncated by ctxconf]"
        if text:
            out[name] = text
    return out


def _worker_main(connection: Connection, capture_paths: tuple[str, str] | None) -> None:
    """The worker loop: receive a case, run it, answer; ``None`` ends the loop."""
    own_process_group()
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the harness stops its workers, not a Ctrl-C
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    from conformance import engine  # noqa: PLC0415 - the engine imports this module

    capture = OutputCapture(*capture_paths) if capture_paths else None

    def announce(kind: str) -> None:
        connection.send((kind,))

    engine.set_call_hook(announce)
    plugin: Plugin = _INHERITED["plugin"]
    library: CassetteLibrary = _INHERITED["library"]
    timeout: float = _INHERITED["timeout"]
    while True:
        try:
            message = connection.recv()
        except (EOFError, OSError):
            break
        if message is None:
            break
        case, specs = message
        if capture:
            capture.reset()
        try:
            result = engine.run_case(
                case, plugin.assemblers[case.shape], specs, timeout, library=library
            )
        except Exception as exc:  # noqa: BLE001 - a harness bug: the parent reports it
            connection.send(("internal", f"{type(exc).__name__}: {exc}"))
            continue
        output = capture.collect() if capture else {}
        connection.send(("result", result, output))
    connection.close()
    os._exit(0)  # no atexit handlers or inherited buffers of the parent run here


# ------------------------------------------------------------------------------ the parent side


@dataclass(slots=True)
class _Worker:
    process: BaseProcess
    connection: Connection
    capture_paths: tuple[str, str] | None
    case: Case | None = None
    clock: CallClock = field(default_factory=CallClock)


@dataclass(slots=True)
class PoolStats:
    """What the supervisor did: workers replaced after a crash or a hung call."""

    crashed: int = 0
    killed_hung: int = 0
    started: int = 0
    notes: list[str] = field(default_factory=list)


FailedCase = Callable[["Case", str, Mapping[str, str]], "CaseResult"]


class WorkerPool:
    """``jobs`` supervised worker processes running cases of one plug-in.

    ``failed(case, reason, output)`` builds the ``error`` result of a case whose worker died or
    hung. Use as a context manager; :meth:`progress` yields results in case order."""

    def __init__(
        self,
        plugin: Plugin,
        *,
        jobs: int,
        timeout: float,
        library: CassetteLibrary,
        failed: FailedCase,
        capture: bool = True,
        judge_timeout: float = JUDGE_TIMEOUT,
    ) -> None:
        self.jobs = max(1, jobs)
        self.timeout = timeout
        self.judge_timeout = judge_timeout
        self.failed = failed
        self.capture = capture
        self.stats = PoolStats()
        self._workers: list[_Worker] = []
        self._tmp = tempfile.TemporaryDirectory(prefix="ctxconf-workers-")
        self._context = multiprocessing.get_context("fork")
        _INHERITED.update(plugin=plugin, library=library, timeout=timeout)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    # ---------------------------------------------------------------- worker management

    def _spawn(self) -> _Worker:
        for stream in (sys.stdout, sys.stderr):  # nothing buffered may be written twice
            with contextlib.suppress(Exception):
                stream.flush()
        paths: tuple[str, str] | None = None
        if self.capture:
            number = self.stats.started
            paths = (
                os.path.join(self._tmp.name, f"w{number}.out"),
                os.path.join(self._tmp.name, f"w{number}.err"),
            )
        parent_end, child_end = self._context.Pipe(duplex=True)
        process = self._context.Process(
            target=_worker_main, args=(child_end, paths), name="ctxconf-worker", daemon=True
        )
        start_forked(process)
        child_end.close()
        self.stats.started += 1
        worker = _Worker(process, parent_end, paths)
        self._workers.append(worker)
        return worker

    def _kill(self, worker: _Worker) -> None:
        kill_process_group(worker.process)  # even after a polite exit: what it spawned goes too
        worker.connection.close()
        self._workers.remove(worker)

    def close(self) -> None:
        """Stop every worker (politely when idle, killed when busy) and remove the capture files."""
        for worker in list(self._workers):
            if worker.case is None and worker.process.is_alive():
                with contextlib.suppress(OSError, ValueError):
                    worker.connection.send(None)
                worker.process.join(timeout=2)
            self._kill(worker)
        self._tmp.cleanup()

    # ---------------------------------------------------------------------- running

    def run_one(self, case: Case, specs: Sequence[CheckSpec]) -> CaseResult:
        """One case in a worker (``fuzz`` judges its examples through this)."""
        return next(item for item in self.progress([(case, specs)]) if not isinstance(item, int))

    def progress(
        self,
        cases: Iterable[tuple[Case, Sequence[CheckSpec]]],
        *,
        stop: RunStop | None = None,
        on_result: Callable[[CaseResult], None] | None = None,
        deadline: tuple[float, str] | None = None,
    ) -> Iterator[int | CaseResult]:
        """Each case's index just before the case is handed to a worker, and every case's result
        in case order (with ``jobs > 1`` other cases may start before a result is yielded).

        Stops early (what finished is still yielded, in order; a case stopped early has started
        but has no result) when ``stop`` is set, or at ``deadline`` (a ``time.monotonic()`` value
        and the reason to give; it needs ``stop``). ``on_result`` sees each result as it
        arrives."""
        pending = deque(cases)
        order = [case.index for case, _ in pending]
        done: dict[int, CaseResult] = {}
        emitted = 0

        def finish(result: CaseResult) -> None:
            done[result.index] = result
            if on_result is not None:
                on_result(result)

        while pending or any(w.case is not None for w in self._workers):
            if stop is not None and deadline is not None and time.monotonic() >= deadline[0]:
                stop.stop(deadline[1], 1)
            if stop is not None and stop.reason is not None:
                break
            # Keep `jobs` workers busy.
            while pending and sum(1 for w in self._workers if w.case is not None) < self.jobs:
                idle = next((w for w in self._workers if w.case is None), None)
                if idle is not None and not idle.process.is_alive():
                    # It died after its last answer: replace it before it gets a case to blame.
                    self._kill(idle)
                    self.stats.crashed += 1
                    idle = None
                idle = idle or self._spawn()
                case, specs = pending.popleft()
                idle.case = case
                idle.clock.stop()
                yield case.index
                try:
                    idle.connection.send((case, specs))
                except (BrokenPipeError, OSError):
                    self._lost(idle, finish)
            self._supervise(finish, stop, None if deadline is None else deadline[0])
            while emitted < len(order) and order[emitted] in done:
                yield done.pop(order[emitted])
                emitted += 1
        # Stopped (or finished): what is done is reported, in order, the rest is not run.
        for index in order[emitted:]:
            if index in done:
                yield done.pop(index)
        for worker in [w for w in self._workers if w.case is not None]:
            self._kill(worker)

    def _supervise(
        self, finish: Callable[[CaseResult], None], stop: RunStop | None, wall: float | None
    ) -> None:
        busy = [w for w in self._workers if w.case is not None]
        if not busy:
            return
        now = time.monotonic()
        deadlines = [d for w in busy if (d := self._deadline(w)) is not None]
        if wall is not None:
            deadlines.append(wall)
        wait_for = max(0.0, min(deadlines) - now) if deadlines else None
        handles: list[Any] = [w.connection for w in busy] + [w.process.sentinel for w in busy]
        if stop is not None:
            handles.append(stop.wake_fd)
        ready = set(map(id, wait(handles, timeout=wait_for)))
        for worker in busy:
            if id(worker.connection) in ready:
                self._receive(worker, finish)
            elif id(worker.process.sentinel) in ready and worker.case is not None:
                self._receive(worker, finish)  # a last message may still be in the pipe
        now = time.monotonic()
        for worker in [w for w in self._workers if w.case is not None]:
            case, deadline = worker.case, self._deadline(worker)
            if case is None or deadline is None or now < deadline:
                continue
            if worker.clock.calling_since is not None:
                why = f"timed out after {self.timeout:g}s"
                self.stats.killed_hung += 1
            else:
                why = (
                    f"timed out judging what the plug-in returned: over {self.judge_timeout:g}s "
                    "(judging takes time in proportion to the returned request's size)"
                )
            output = self._output(worker)
            self._kill(worker)
            finish(self.failed(case, f"{why}; the worker process was killed and replaced", output))

    def _deadline(self, worker: _Worker) -> float | None:
        """When the worker's plug-in call, or the judging of what it returned, is out of time."""
        return worker.clock.deadline(self.timeout, self.judge_timeout)

    def _receive(self, worker: _Worker, finish: Callable[[CaseResult], None]) -> None:
        while worker.case is not None:
            try:
                if not worker.connection.poll():
                    if not worker.process.is_alive():
                        self._lost(worker, finish)
                    return
                message = worker.connection.recv()
            except (EOFError, OSError):
                self._lost(worker, finish)
                return
            kind = message[0]
            if worker.clock.heard(kind):
                continue
            if kind == "result":
                _, result, output = message
                worker.case = None
                worker.clock.stop()
                if output:
                    result = replace(result, plugin_output=output)
                finish(result)
            elif kind == "internal":
                where = worker.case.key
                self._kill(worker)
                raise WorkerInternalError(f"{message[1]} (while running {where})")

    def _output(self, worker: _Worker) -> dict[str, str]:
        return read_captured(worker.capture_paths) if worker.capture_paths else {}

    def _lost(self, worker: _Worker, finish: Callable[[CaseResult], None]) -> None:
        case = worker.case
        worker.process.join(timeout=5)
        how = describe_exit(worker.process.exitcode)
        output = self._output(worker)
        self._kill(worker)
        self.stats.crashed += 1
        if case is not None:
            finish(self.failed(case, f"{how}; a fresh worker took over", output))
