"""``ctxconf audit PATH... [--format table|jsonl] [--all] [--jobs N]``: which recorded requests
would be rejected?

Finds every provider request in vcrpy cassettes (every serialisation ``conformance.traffic.reading``
reads) and JSONL request logs under PATH (folders are walked recursively; ``-`` reads a JSONL log,
gzip-compressed or not, from standard input, named ``<stdin>`` in the rows), detects its shape from
the URL and body, picks the dialect from the host and the profile from the model, and judges it.
Rows stream out as the input is read. By default only findings are shown (requests that would be
rejected, and input that could not be read); ``--all`` lists accepted requests too. One JSON line
per row::

    {"file", "interaction", "location", "shape", "dialect", "profile", "verdict", "rule",
     "evidence", "status", "message", "recorded_status", "reading"}

``verdict`` is ``accept``, ``reject`` or ``unreadable`` (then ``message`` says why). A body that
gives a key twice is judged in both readings; ``reading`` names the one a rejection refused
(``last copy kept`` or ``first copy kept``), else ``null``. Exit status
(see ``docs/auditing-traffic.md``): 0 everything read and accepted; bit 1 set (1, 5) when any
request would be rejected; bit 4 set (4, 5) when any file or log line could not be read; 2 for a
PATH that does not exist (nothing is audited).
"""

from __future__ import annotations

import contextlib
import gc
import gzip
import io
import itertools
import multiprocessing
import sys
import zlib
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, wait
from multiprocessing.process import BaseProcess
from pathlib import Path
from typing import Any, Final

import click
from rich.console import Console
from rich.table import Table
from rich.text import Text
from typing_extensions import Self

from conformance.commands._io import EXIT_FINDING, fail, fail_input
from conformance.commands._options import format_option
from conformance.errors import RecordingError
from conformance.traffic.audit import (
    AuditRow,
    audit_file,
    audit_log_lines,
    log_lines,
    prepare,
    recording_files,
    unreadable_row,
)
from conformance.traffic.reading import LOG_SUFFIXES, not_a_recording_path
from conformance.workers import start_forked
from reference_impl.documents import max_input_bytes
from reference_impl.wording import plural

__all__ = ["EXIT_UNREADABLE", "command"]

EXIT_UNREADABLE: Final = 4
"""Added to the exit status when a file or a log line could not be read."""
_BLOCK_BYTES: Final = 1 << 20
"""Log lines are judged in blocks of about this many bytes (the unit of work of ``--jobs``)."""
_GZIP_MAGIC: Final = b"\x1f\x8b"
STDIN: Final = "-"
"""The PATH that reads a JSONL log from standard input."""
STDIN_NAME: Final = "<stdin>"
"""How the rows name standard input."""


@dataclass(slots=True)
class _Block:
    """What judging one piece of input produced: the rows to show and the totals.

    With ``--format jsonl`` the rows come already written out (``text``, their JSON lines) and
    ``rows`` stays empty: a worker renders its own rows, the parent only writes them.
    """

    rows: list[AuditRow] = field(default_factory=list)
    text: str = ""
    warnings: list[str] = field(default_factory=list)
    files: set[str] = field(default_factory=set)
    counts: Counter[str] = field(default_factory=Counter)
    rules: Counter[str] = field(default_factory=Counter)


def _collect(rows: Iterable[AuditRow], show_all: bool, jsonl: bool) -> _Block:
    block = _Block()
    lines: list[str] = []
    for row in rows:
        outcome = row.outcome
        block.counts[outcome] += 1
        if outcome == "reject" and row.verdict is not None and row.verdict.rule:
            block.rules[row.verdict.rule] += 1
        if show_all or outcome != "accept":
            block.files.add(row.file)
            if row.verdict is None:
                block.warnings.append(f"ctxconf: warning: {row.location}: {row.message}")
            if jsonl:
                lines.append(row.to_json() + "\n")
            else:
                block.rows.append(row)
    block.text = "".join(lines)
    return block


@dataclass(frozen=True, slots=True)
class _LogBlock:
    """Whole lines of a log: ``data``, read at byte ``offset``, its first line numbered ``start``."""

    file: str
    start: int
    offset: int
    data: bytes


@dataclass(frozen=True, slots=True)
class _Span:
    """Where a ``_LogBlock`` is in its file, what a worker is sent instead of the bytes (it reads
    them itself, so the log is not copied through the pool's pipes): its bytes must still be
    ``length`` long with this ``crc`` (``zlib.crc32``), else the parent sends the bytes."""

    file: str
    start: int
    offset: int
    length: int
    crc: int


@dataclass(frozen=True, slots=True)
class _Unread:
    """Where reading standard input failed: its gzip data corrupt or cut short (as a ``.gz``
    file's is, one ``unreadable`` row), or the stream itself."""

    file: str
    problem: str


_Work = _LogBlock | _Unread | str
"""A block of log lines, standard input's read error, or a cassette's path."""
_Sent = _Span | _LogBlock | _Unread | str
"""What a worker is sent: where a block of log lines is (the block itself when it was read from
standard input, which a worker cannot read again), or a cassette's path."""


@dataclass(frozen=True, slots=True)
class _Options:
    """How blocks are judged and shown: ``--all``, ``--format jsonl``, ``--context-limit``."""

    show_all: bool
    jsonl: bool
    context_limit: int | None = None


def _judge_work(work: _Work, options: _Options) -> _Block:
    show_all, jsonl, context = options.show_all, options.jsonl, options.context_limit
    if isinstance(work, str):
        return _collect(audit_file(work, context_limit=context), show_all, jsonl)
    if isinstance(work, _Unread):
        return _collect((unreadable_row(work.file, work.problem, log=True),), show_all, jsonl)
    limit = max_input_bytes()
    lines = ((work.start + i, line) for i, line in log_lines(io.BytesIO(work.data), limit))
    return _collect(audit_log_lines(lines, work.file, limit, context), show_all, jsonl)


def _judge_sent(sent: _Sent, options: _Options) -> _Block | None:
    """In a worker: the block judged; None for a ``_Span`` whose bytes are no longer those the
    parent read (the log was rewritten meanwhile)."""
    if isinstance(sent, str | _LogBlock | _Unread):
        return _judge_work(sent, options)
    data = _read_span(sent)
    if data is None:
        return None
    return _judge_work(_LogBlock(sent.file, sent.start, sent.offset, data), options)


def _read_span(span: _Span) -> bytes | None:
    try:
        with open(span.file, "rb") as raw:
            raw.seek(span.offset)
            data = raw.read(span.length)
    except OSError:
        return None
    return data if len(data) == span.length and zlib.crc32(data) == span.crc else None


def _log_blocks(path: Path) -> Iterator[_Work]:
    """A log as blocks of whole lines (about ``_BLOCK_BYTES`` each, cut after a newline); a log
    that cannot be opened is left to ``audit_file``."""
    name = str(path)
    try:
        raw: Any = path.open("rb")
    except OSError:
        yield name
        return
    with raw:
        if raw.peek(2)[:2] == _GZIP_MAGIC:
            yield name  # compressed: read (streaming) in one worker
            return
        yield from _stream_blocks(raw, name)


def _stdin_blocks() -> Iterator[_Work]:
    """Standard input as blocks of whole lines (``_stream_blocks``), decompressed as it is read
    when it starts as gzip does (``zcat`` not needed). A block is what has arrived (``read1``),
    cut after its last newline, so the rows of a log still being written come as its lines do."""
    raw: Any = sys.stdin.buffer
    if not hasattr(raw, "peek"):  # a stream handed over by a caller (a test runner's)
        raw = io.BufferedReader(raw)
    try:
        if raw.peek(2)[:2] == _GZIP_MAGIC:
            raw = gzip.GzipFile(fileobj=raw, mode="rb")
        yield from _stream_blocks(raw, STDIN_NAME, read=raw.read1)
    except (EOFError, zlib.error, gzip.BadGzipFile) as exc:  # as a corrupt .gz file is said
        yield _Unread(STDIN_NAME, f"corrupt gzip stream: {exc}")
    except OSError as exc:
        yield _Unread(STDIN_NAME, f"cannot read standard input: {exc.strerror or exc}")


def _stream_blocks(
    raw: Any, name: str, read: Callable[[int], bytes] | None = None
) -> Iterator[_LogBlock]:
    """The lines of the binary stream ``raw`` (the log ``name``) as blocks of whole lines, each
    read with ``read`` (``raw.read``: about ``_BLOCK_BYTES``)."""
    limit = max_input_bytes()
    start = offset = 0
    read = read or raw.read
    while data := read(_BLOCK_BYTES):
        skipped = 0
        if not data.endswith(b"\n"):
            try:
                data += raw.readline(-1 if limit is None else limit + 1)  # the line's rest
            except (OSError, EOFError, zlib.error):  # a gzip stream cut short or corrupt
                whole = data[: data.rfind(b"\n") + 1]  # its whole lines are still judged
                if whole:
                    yield _LogBlock(name, start, offset, whole)
                raise
            last_line = len(data) - data.rfind(b"\n") - 1
            if limit is not None and not data.endswith(b"\n") and last_line > limit:
                # over the input limit: the block holds enough of it to say so, the rest
                # of the line is skipped here, never held
                while (rest := raw.readline(_BLOCK_BYTES)) and not rest.endswith(b"\n"):
                    skipped += len(rest)
                skipped += len(rest)
        yield _LogBlock(name, start, offset, data)
        start += data.count(b"\n") + (not data.endswith(b"\n"))
        offset += len(data) + skipped


def _work(paths: Iterable[str]) -> Iterator[_Work]:
    for given in paths:
        if given == STDIN:
            yield from _stdin_blocks()
            continue
        for path in recording_files((given,)):
            if path.name.endswith(LOG_SUFFIXES):
                yield from _log_blocks(path)
            else:
                yield str(path)


def _sent(work: _Work) -> _Sent:
    """What a worker is sent for ``work``: a log block's place in its file, not its bytes."""
    if isinstance(work, _LogBlock) and work.file != STDIN_NAME:
        return _Span(work.file, work.start, work.offset, len(work.data), zlib.crc32(work.data))
    return work


def _blocks(paths: tuple[str, ...], options: _Options, jobs: int) -> Iterator[_Block]:
    """Judged blocks in input order; with ``jobs > 1`` in forked workers (``_Workers``)."""
    work = _work(paths)
    if jobs <= 1:
        for item in work:
            yield _judge_work(item, options)
        return
    first = next(work, None)
    if first is None:
        return
    # What every worker needs is built once, before forking, and shared: the catalog, the
    # validators and, from the first log line, what its shape and model need. Frozen, those
    # objects are left out of the workers' collections, which would otherwise write to (and so
    # copy) every page of them in each worker.
    prepare(first.data.split(b"\n", 1)[:1] if isinstance(first, _LogBlock) else ())
    gc.freeze()
    try:
        with _Workers(jobs, options) as workers:
            yield from workers.judged(itertools.chain((first,), work))
    finally:
        gc.unfreeze()


_DEPTH: Final = 2
"""Blocks sent to one worker and not yet answered, at most: it starts the next as soon as it has
sent one back, and the blocks in flight stay few (memory is flat however long the input)."""


def _serve(connection: Connection, options: _Options, parents: list[Connection]) -> None:
    """A worker: judge what the parent sends, in order, until it sends ``None``. A block it could
    not judge (its bytes changed, or judging it raised) is answered ``None``: the parent judges
    it from the bytes it read, so the rows (or the error) are those of ``--jobs 1``.

    ``parents``: the parent's ends of the pipes, its own and the earlier workers', inherited by
    the fork. They are closed first: held here, they would keep a worker from reading the end of
    its pipe when the parent is gone (killed), and it would wait for work forever."""
    for inherited in parents:
        inherited.close()
    try:
        while (message := connection.recv()) is not None:
            seq, sent = message
            try:
                judged = _judge_sent(sent, options)
            except Exception:  # noqa: BLE001 - the parent judges it again and reports
                judged = None
            try:
                connection.send((seq, judged))
            except (EOFError, OSError):
                raise
            except Exception:  # noqa: BLE001 - e.g. what it judged cannot be pickled
                connection.send((seq, None))
    except (EOFError, OSError, KeyboardInterrupt):
        pass  # the parent is gone or interrupted: nothing left to answer
    finally:
        connection.close()


class _Workers:
    """``jobs`` forked processes, each on its own pipe; the parent's one thread sends each block
    to the worker with the fewest in flight and yields the judged blocks in input order. No pool
    threads: ``multiprocessing.Pool``'s worker-handling thread woke at every byte its workers
    sent back and spent ~0.2 s of the parent's CPU on a 100k-request log. A worker that dies is
    not waited for: the blocks it held are judged by the parent, and so is the rest when none is
    left."""

    def __init__(self, jobs: int, options: _Options) -> None:
        self._options = options
        context = multiprocessing.get_context("fork")
        self._held: dict[Connection, list[int]] = {}
        self._processes: list[BaseProcess] = []
        for stream in (sys.stdout, sys.stderr):  # a child must not write what the parent had
            stream.flush()
        try:
            for _ in range(jobs):
                ours, theirs = context.Pipe()
                parents = [*self._held, ours]
                process = context.Process(
                    target=_serve, args=(theirs, options, parents), daemon=True
                )
                start_forked(process)
                theirs.close()
                self._held[ours] = []
                self._processes.append(process)
        except BaseException:  # a fork that failed: the workers started so far are ended
            self.__exit__()
            raise

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *_exc: object) -> None:
        for connection in self._held:
            with contextlib.suppress(OSError):
                connection.send(None)
            connection.close()
        for process in self._processes:
            process.join(timeout=5)
            if process.is_alive():
                process.kill()
                process.join()

    def judged(self, work: Iterable[_Work]) -> Iterator[_Block]:
        items: dict[int, _Work] = {}  # sent (or judged here), not yet yielded
        done: dict[int, _Block | None] = {}  # None: to be judged here when its turn comes
        sent = emitted = 0
        pending = iter(work)
        more = True
        while True:
            while emitted in done:  # first, so that a full window of judged blocks makes room
                block = done.pop(emitted)
                # in input order, so that an error judging it comes after the rows before it
                if block is None:
                    block = _judge_work(items[emitted], self._options)
                yield block
                del items[emitted]
                emitted += 1
            while more and len(items) < _DEPTH * max(1, len(self._held)):
                item = next(pending, None)
                if item is None:
                    more = False
                    break
                items[sent] = item
                self._send(sent, item, done)
                sent += 1
            if emitted == sent and not more:
                return
            if any(self._held.values()):  # else every block left was judged here: yield them
                self._receive(done)

    def _send(self, seq: int, item: _Work, done: dict[int, _Block | None]) -> None:
        while self._held:
            connection = min(self._held, key=lambda c: len(self._held[c]))
            try:
                connection.send((seq, _sent(item)))
            except OSError:  # the worker is gone: what it held is judged here
                self._lost(connection, done)
                continue
            self._held[connection].append(seq)
            return
        done[seq] = None

    def _receive(self, done: dict[int, _Block | None]) -> None:
        busy = [c for c, held in self._held.items() if held]
        for connection in wait(busy):
            assert isinstance(connection, Connection)
            try:
                seq, judged = connection.recv()
            except (EOFError, OSError):
                self._lost(connection, done)
                continue
            self._held[connection].remove(seq)
            done[seq] = judged

    def _lost(self, connection: Connection, done: dict[int, _Block | None]) -> None:
        for seq in self._held.pop(connection):
            done[seq] = None
        connection.close()


# ------------------------------------------------------------------------------- output


def _table(rows: list[AuditRow]) -> Table:
    table = Table(title="ctxconf audit (verdicts are emulated by ctxconf, not a provider's)")
    table.add_column("request", ratio=3, overflow="fold", min_width=16)
    table.add_column("verdict", no_wrap=True, min_width=7)
    table.add_column("rule", no_wrap=True, min_width=4)
    table.add_column("evidence", no_wrap=True, min_width=8)
    table.add_column("message", ratio=4, overflow="fold", min_width=16)
    for row in rows:
        verdict = row.verdict
        where = Text(row.location)
        if verdict is not None:
            where.append(f"\n{row.shape} · {verdict.profile}", style="dim")
        style = {"accept": "green", "reject": "red"}.get(row.outcome, "yellow")
        message = Text(row.message or "")
        if row.reading is not None:
            message.append(f"\n(a key given twice: rejected with the {row.reading})", style="dim")
        table.add_row(
            where,
            Text(row.outcome, style=style),
            verdict.rule or "" if verdict else "",
            verdict.evidence or "" if verdict else "",
            message,
        )
    return table


def _totals(counts: Counter[str], rules: Counter[str], files: int) -> str:
    requests = counts["accept"] + counts["reject"]
    text = (
        f"{plural(requests, 'request')} in {plural(files, 'file')}: "
        f"{counts['accept']:,} accepted, {counts['reject']:,} would be rejected"
    )
    if counts["unreadable"]:
        text += f", {counts['unreadable']:,} unreadable"
    if rules:
        text += "; by rule: " + ", ".join(f"{r} {n:,}" for r, n in sorted(rules.items()))
    return text


@click.command("audit")
@click.argument("paths", metavar="PATH...", nargs=-1, required=True)
@format_option("table", "jsonl")
@click.option(
    "--all", "show_all", is_flag=True, help="List accepted requests too (default: findings only)."
)
@click.option(
    "--jobs",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="Worker processes judging blocks of requests in parallel (same rows, same order).",
)
@click.option(
    "--context-limit",
    type=click.IntRange(min=1),
    default=None,
    metavar="TOKENS",
    help="The model's context window: also judge each request by the context-window rule "
    "(input from the recorded usage, else estimated). Without it, no request is judged too long.",
)
def command(
    paths: tuple[str, ...], fmt: str, show_all: bool, jobs: int, context_limit: int | None
) -> None:
    """Judge every provider request recorded in cassettes or JSONL logs under PATH (``-``: a
    JSONL log on standard input)."""
    if paths.count(STDIN) > 1:
        fail_input(STDIN, "standard input can be read once; give - once")
    if STDIN in paths and (sys.stdin is None or sys.stdin.closed):
        fail_input(STDIN, "standard input is closed; pipe a JSON-lines log into it")
    if STDIN in paths and sys.stdin.isatty():
        fail_input(STDIN, "standard input is a terminal; pipe a JSON-lines log into it")
    for path in paths:
        if path != STDIN and not Path(path).is_file() and not Path(path).is_dir():
            fail_input(path, not_a_recording_path(Path(path)))
    counts: Counter[str] = Counter()
    rules: Counter[str] = Counter()
    shown: list[AuditRow] = []
    files: set[str] = set()
    try:
        options = _Options(show_all, fmt == "jsonl", context_limit)
        for block in _blocks(paths, options, jobs):
            counts.update(block.counts)
            rules.update(block.rules)
            files.update(block.files)
            for warning in block.warnings:
                click.echo(warning, err=True)
            if block.text:
                # JSON lines hold no raw escape character (JSON writes it \u001b): nothing for
                # click to strip when stdout is no terminal, so it is not asked to scan for it
                click.echo(block.text, nl=False, color=True)
            shown.extend(block.rows)
    except RecordingError as exc:  # a path that vanished while walking
        fail(str(exc))
    named = tuple(p for p in paths if p != STDIN)
    read = sum(1 for _ in recording_files(named)) + (STDIN in paths)
    file_count = read if fmt == "table" else len(files)
    if fmt == "table":
        console = Console(soft_wrap=False)
        if shown:
            console.print(_table(shown))
        console.print(_totals(counts, rules, file_count), soft_wrap=True)
    status = (EXIT_FINDING if counts["reject"] else 0) | (
        EXIT_UNREADABLE if counts["unreadable"] else 0
    )
    if status:
        raise SystemExit(status)
