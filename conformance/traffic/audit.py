"""Audit recorded traffic: judge every provider request found in cassettes and request logs.

Shared by ``ctxconf audit``, the calibration tests and anyone auditing traffic from Python. Reading
the many cassette serialisations is ``conformance.traffic.reading``' job; this module decides shape,
dialect and profile for each recorded request, asks the validators for a verdict, and turns what
cannot be read into a named row instead of an exception.

Two entry points, both streaming (rows come out as input is read, memory stays flat):

* :func:`audit_paths` walks files and folders (cassettes and JSON-lines logs);
* :func:`audit_lines` judges an iterable of JSON-lines log lines (``str``/``bytes``) or already
  parsed records (mappings): the map step of an audit distributed over many machines
  (``docs/auditing-traffic.md`` has a Dask recipe).

A row is a request's verdict (``accept``/``reject``) or ``unreadable``: a file, or one line of a
log, that could not be read, with the reason. Unreadable input never stops the audit. A body that
gives a key twice is judged in both readings, the last copy kept and the first
(:mod:`conformance.providers.repeated_keys`); a rejected row names the reading refused.
"""

from __future__ import annotations

import gzip
import json
import re
import zlib
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path
from typing import Any, Final, Literal
from urllib.parse import urlsplit

from conformance.errors import RecordingError, UnknownProfileError
from conformance.providers.catalog import (
    Profile,
    catalog_dialect,
    list_dialects,
    load_catalog,
    profile_for_model,
    resolve_profile,
)
from conformance.providers.repeated_keys import (
    Reading,
    first_copies,
    judge_both_readings,
    read_unique,
    unique_reader_agrees,
)
from conformance.providers.validation import BETA_HEADER, betas_of_headers, validate_request
from conformance.providers.verdict import Verdict
from conformance.traffic.endpoints import endpoint_for_path, url_model
from conformance.traffic.reading import (
    LOG_SUFFIXES,
    RecordedInteraction,
    cassette_items,
    iter_recording_files,
    log_interaction,
    read_log_line,
    unwrap_request,
)
from reference_impl.documents import (
    INPUT_LIMIT_ENV,
    json_problem,
    max_input_bytes,
)

__all__ = [
    "AuditRow",
    "RowVerdict",
    "audit_interaction",
    "audit_lines",
    "audit_log_lines",
    "audit_paths",
    "dialect_for",
    "log_lines",
    "model_of",
    "prepare",
    "unreadable_row",
]

RowVerdict = Literal["accept", "reject", "unreadable"]

_GZIP_MAGIC: Final = b"\x1f\x8b"
_ROW_ENCODER: Final = json.JSONEncoder(ensure_ascii=False)
"""``json.dumps(row, ensure_ascii=False)``, built once (``dumps`` builds an encoder per call when
given any option)."""


@dataclass(frozen=True, slots=True)
class AuditRow:
    """One audited request (``verdict`` set), or input that could not be read (``problem`` set).

    ``interaction`` is the 0-based interaction of a cassette or line of a log (``None`` when the
    whole file is unreadable); ``location`` is what an editor opens: ``file:line`` for a log
    (1-based), ``file#interaction`` for a cassette.
    """

    file: str
    interaction: int | None
    shape: str | None
    dialect: str | None
    verdict: Verdict | None
    recorded_status: int | None
    url: str
    problem: str | None = None
    is_log: bool = False
    reading: Reading | None = None
    """For a rejected body that gives a key twice, the reading refused: ``last copy kept`` (as
    Python's parser reads it) or ``first copy kept`` (as another parser may)."""

    @property
    def outcome(self) -> RowVerdict:
        """``accept``, ``reject``, or ``unreadable``."""
        if self.verdict is None:
            return "unreadable"
        return self.verdict.verdict

    @property
    def is_finding(self) -> bool:
        """A rejected request or unreadable input: what the audit shows by default."""
        return self.verdict is None or not self.verdict.accepted

    @property
    def location(self) -> str:
        """``file:line`` (logs, 1-based), ``file#interaction`` (cassettes), or ``file``."""
        if self.interaction is None:
            return self.file
        if self.is_log:
            return f"{self.file}:{self.interaction + 1}"
        return f"{self.file}#{self.interaction}"

    @property
    def message(self) -> str | None:
        """The provider-style error message of a rejection, or why the input was unreadable."""
        if self.verdict is None:
            return self.problem
        return error_message(self.verdict.error)

    def to_json(self) -> str:
        """The row's line in ``ctxconf audit --format jsonl`` (no newline)."""
        return _ROW_ENCODER.encode(self.to_dict())

    def to_dict(self) -> dict[str, Any]:
        """The row as ``ctxconf audit --format jsonl`` prints it."""
        verdict = self.verdict
        return {
            "file": self.file,
            "interaction": self.interaction,
            "location": self.location,
            "shape": self.shape,
            "dialect": self.dialect,
            "profile": verdict.profile if verdict else None,
            "verdict": self.outcome,
            "rule": verdict.rule if verdict else None,
            "evidence": verdict.evidence if verdict else None,
            "status": verdict.status if verdict else None,
            "message": self.message,
            "recorded_status": self.recorded_status,
            "reading": self.reading,
        }


def error_message(error: Mapping[str, Any] | None) -> str | None:
    """The message of a provider error body, whatever its envelope (OpenAI, Anthropic, Gemini,
    Bedrock, the flat gateway bodies)."""
    if error is None:
        return None
    inner = error.get("error")
    if isinstance(inner, Mapping) and isinstance(inner.get("message"), str):
        return str(inner["message"])
    if isinstance(inner, str):
        return inner
    message = error.get("message")
    return message if isinstance(message, str) else None


# ------------------------------------------------------------------------- deciding the profile


def dialect_for(shape: str, detected: str | None) -> str | None:
    """The catalog dialect for a detected gateway; unknown gateways are judged as the base shape."""
    return _dialect_for(id(load_catalog()), shape, detected)


@lru_cache(maxsize=1024)
def _dialect_for(_catalog: int, shape: str, detected: str | None) -> str | None:
    dialect = catalog_dialect(shape, detected)
    return dialect if dialect in list_dialects(shape) else None


def _named_dialect_problem(url: str, shape: str) -> str | None:
    """Why the ``/dialect/{name}/`` prefix of an emulator URL names no dialect of ``shape`` (a
    misspelling, a dialect of another shape), in the words the emulator and the proxy refuse it
    with; None when the URL names none, or one of the shape's. A dialect told from the host is
    not named: an unknown gateway is judged as the base shape."""
    if "/dialect/" not in url:
        return None
    named = endpoint_for_path(urlsplit(url).path)
    if named is None or named.dialect is None:
        return None
    return _dialect_problem(id(load_catalog()), shape, named.dialect)


@lru_cache(maxsize=1024)
def _dialect_problem(_catalog: int, shape: str, dialect: str) -> str | None:
    try:
        resolve_profile(shape, dialect)
    except UnknownProfileError as exc:
        return f"the URL's /dialect/{dialect}/ prefix: {exc.message}"
    return None


@lru_cache(maxsize=8192)
def _profile(_catalog: int, shape: str, dialect: str | None, model: str | None) -> Profile:
    return profile_for_model(shape, dialect, model)


def model_of(url: str, body: object) -> str | None:
    """The model a request names, from its body or (Gemini, Bedrock) from its URL."""
    if isinstance(body, Mapping) and isinstance(body.get("model"), str):
        return str(body["model"])
    return url_model(url) if url else None


def prepare(sample: Iterable[bytes] = ()) -> None:
    """Load the rule catalog and the validators now (before forking workers, so each worker
    shares them instead of building its own); judging the log lines of ``sample`` (their rows
    are not kept) also builds what their shapes, gateways and models need: the profile, the
    dialect and the validators' facts for it."""
    load_catalog()
    validate_request({"model": "gpt-4o", "messages": []}, "openai-chat")
    for _ in audit_log_lines(enumerate(sample), "<sample>", max_input_bytes()):
        pass


def audit_interaction(
    interaction: RecordedInteraction, *, context_limit: int | None = None
) -> AuditRow | None:
    """The verdict on one recorded request; ``None`` when it is not a provider request we judge.
    ``context_limit``: the model's context window in tokens, which also applies the profile's
    context-window rule (the input counted from the recorded answer's usage when it has one,
    else estimated locally); without it no request is judged too long for a window."""
    return _judge(interaction, is_log=False, context_limit=context_limit)


_VERSION_HEADER: Final = "anthropic-version"


_SHOWN_KEYS: Final = 6


def _not_a_request(interaction: RecordedInteraction) -> str:
    """Why a POST line of a log without a URL is no provider request this audit can judge."""
    body = interaction.request_body
    if isinstance(body, Mapping):
        keys = [str(k) for k in list(body)[: _SHOWN_KEYS + 1]]
        held = ", ".join(keys[:_SHOWN_KEYS]) + (", ..." if len(keys) > _SHOWN_KEYS else "")
        found = f"an object with {held}" if keys else "an empty object"
    else:
        found = "no body" if body is None else f"a body of type {type(body).__name__}"
    return (
        f"not a provider request: no URL, and {found} (no `messages`, `contents` or `input`); "
        'a line is {"url": ..., "method": "POST", "body": {...}} or a bare request body'
    )


def recorded_betas(interaction: RecordedInteraction, shape: str) -> frozenset[str] | None:
    """The betas the recorded request's ``anthropic-beta`` header names; None when the recording
    does not hold the request's headers, so the betas are not known: an Anthropic request to the
    first-party API that recorded no ``anthropic-version`` (every such request sends it: a
    recorder that drops ``anthropic-*`` headers, or a log line without headers), or one through
    Vertex that recorded no header at all. Bedrock's InvokeModel reads betas from the body only,
    and the other shapes name none in headers: their betas are known (none). The platform is
    the one the URL names (``interaction.dialect``), whatever rule set judges the body."""
    headers, dialect = interaction.request_headers, interaction.dialect
    betas = betas_of_headers(headers.get(BETA_HEADER, ()))
    if betas or shape != "anthropic-messages" or dialect == "bedrock":
        return betas
    known = bool(headers) if dialect == "vertex" else _VERSION_HEADER in headers
    return betas if known else None


def _judge(
    interaction: RecordedInteraction,
    *,
    is_log: bool,
    context_limit: int | None = None,
    first: object | None = None,
) -> AuditRow | None:
    """``first``: the judged body of the log line read keeping the first copy of a key given
    twice, ``None`` when the line repeats no key."""
    if interaction.method.upper() != "POST":
        return None
    shape = interaction.shape  # told from the URL and, where the URL does not tell, the body
    if shape is None:
        # Other calls (an embedding, an upload, a token: a URL no generation route matches) are
        # not requests to judge. A log line with no URL is meant to be a request body: left out
        # silently, a log in another format would pass clean.
        if is_log and not interaction.url:
            return unreadable_row(
                interaction.file, _not_a_request(interaction), interaction.index, log=True
            )
        return None
    catalog = id(load_catalog())
    dialect = _dialect_for(catalog, shape, interaction.dialect)
    if dialect is None and (problem := _named_dialect_problem(interaction.url, shape)):
        # the emulator and the proxy refuse such a URL: judged as the base shape, it passed
        row = unreadable_row(interaction.file, problem, interaction.index, log=is_log)
        return replace(row, shape=shape, url=interaction.url)
    # A body that is not a JSON object is judged too: it gets the provider's own 400 (C0, A12 ...).
    body: Any = interaction.judged_body
    profile = _profile(catalog, shape, dialect, model_of(interaction.url, body))
    endpoint = "count" if interaction.is_token_count else "generate"
    betas = recorded_betas(interaction, shape)
    reported = None
    if context_limit is not None:
        from conformance.traffic.verdicts import reported_input_tokens  # noqa: PLC0415 - opt-in

        reported = reported_input_tokens(shape, interaction.response_body)

    def judge(judged: Any) -> Verdict:
        return validate_request(
            judged,
            shape,
            dialect=dialect,
            profile=profile.id,
            endpoint=endpoint,
            betas=betas,
            context_limit=context_limit,
            input_tokens=reported,
        )

    text = interaction.raw_request_text
    if first is None and text is not None and not interaction.request_keys_unique:
        # a body recorded as text, not read by the parser that stops at a repeated key
        copies = first_copies(text)
        first = None if copies is None else unwrap_request(interaction.url, copies)
    verdict, reading = judge_both_readings(judge, body, first)
    return AuditRow(
        file=interaction.file,
        interaction=interaction.index,
        shape=shape,
        dialect=dialect,
        verdict=verdict,
        recorded_status=interaction.status,
        url=interaction.url,
        is_log=is_log,
        reading=reading,
    )


# ----------------------------------------------------------------------------------- streaming


def unreadable_row(file: str, problem: str, index: int | None = None, *, log: bool) -> AuditRow:
    """The row of input that cannot be read: ``problem`` says why, ``index`` which interaction
    (or log line, 0-based) when it is one of them, ``log`` whether it is a log's."""
    return AuditRow(
        file=file,
        interaction=index,
        shape=None,
        dialect=None,
        verdict=None,
        recorded_status=None,
        url="",
        problem=problem,
        is_log=log,
    )


def _line_row(
    line: str | bytes | Mapping[str, Any], file: str, index: int, context_limit: int | None = None
) -> AuditRow | None:
    """``context_limit``: as ``audit_interaction`` takes it."""
    if type(line) is not bytes and isinstance(line, Mapping):
        return _record_row(line, file, index, context_limit)
    if not unique_reader_agrees():
        return _read_line(line, file, index, context_limit)
    try:
        # jiter's parser (pydantic-core's) reads the common line in about half the time; it
        # refuses all the standard library's reading refuses (text that is not UTF-8, a
        # byte-order mark, NaN and Infinity, blank lines) and some of what it takes (escaped
        # lone surrogates, nesting past ~200 levels, a str holding a lone surrogate), and a key
        # given twice: those lines are read again by _read_line, so every line gets
        # json.loads's value, or its named problem (tests/conformance/test_audit_line_json.py),
        # and only a line that repeats a key pays for its first-copy reading
        record = read_unique(line if isinstance(line, bytes) else line.encode("utf-8"))
    except ValueError:  # UnicodeEncodeError too
        return _read_line(line, file, index, context_limit)
    return _record_row(record, file, index, context_limit, strict=True)


def _read_line(
    line: str | bytes, file: str, index: int, context_limit: int | None = None
) -> AuditRow | None:
    """The row of a line read as ``json.loads`` reads it, or the row that names why it cannot be
    read (``None`` for a blank line)."""
    if isinstance(line, bytes):
        try:
            line = line.decode("utf-8")
        except UnicodeDecodeError as exc:
            # Replaced, the bytes would be judged as text the provider never received: its
            # JSON parser refuses a body that is not UTF-8.
            return unreadable_row(
                file, f"not UTF-8 text (byte {exc.start} of the line)", index, log=True
            )
    if not line.strip():
        return None
    # The line without its line end: parsed with it, a string the line ends inside reads its
    # "\n" as a control character, at a column past the line's last.
    line = line.removesuffix("\n")
    try:
        # NaN or Infinity in the line is read: a body holding one is judged as not JSON
        record, strict = read_log_line(line)
    except json.JSONDecodeError as exc:
        return unreadable_row(file, f"not valid JSON ({json_problem(exc)})", index, log=True)
    except RecursionError:
        return unreadable_row(file, "JSON nested too deeply", index, log=True)
    first = first_copies(line, read_non_finite=not strict)
    return _record_row(record, file, index, context_limit, strict=strict, first=first)


def _record_row(
    record: object,
    file: str,
    index: int,
    context_limit: int | None,
    *,
    strict: bool = False,
    first: object | None = None,
) -> AuditRow | None:
    """``first``: the line read keeping the first copy of a key given twice (``None`` when no
    key repeats); its request body is judged too."""
    try:
        interaction = log_interaction(record, file=file, index=index, strict=strict)
        copies = None if first is None else _first_body(first, file, index, strict)
        return _judge(interaction, is_log=True, context_limit=context_limit, first=copies)
    except RecordingError as exc:
        return unreadable_row(file, _why(exc, file), index, log=True)
    except RecursionError:
        return unreadable_row(file, "the body is nested too deeply to read", index, log=True)


def _first_body(first: object, file: str, index: int, strict: bool) -> object | None:
    """The judged request body of a line's first-copy reading; ``None`` when that reading holds
    no request the other does not (what it cannot read is the other reading's to name). A body
    logged as JSON text is read keeping its own first copies too: a key the line repeats (even
    one outside the body) must not hide one the body repeats."""
    try:
        interaction = log_interaction(first, file=file, index=index, strict=strict)
    except RecordingError:
        return None
    text = interaction.raw_request_text
    copies = None if text is None else first_copies(text)
    if copies is None:
        return interaction.judged_body
    return unwrap_request(interaction.url, copies)


def audit_lines(
    lines: Iterable[str | bytes | Mapping[str, Any]],
    *,
    file: str = "<lines>",
    start: int = 0,
    context_limit: int | None = None,
) -> Iterator[AuditRow]:
    """Rows for JSON-lines log lines (or parsed records), one at a time, in order.

    ``file`` names the source in each row; ``start`` is the 0-based number of the first line
    (for a slice of a larger log); ``context_limit`` as ``audit_interaction`` takes it. Blank
    lines are skipped but counted; a line that cannot be read is an ``unreadable`` row naming
    it. Each row depends on its line alone, so an audit can be split anywhere: the rows of the
    pieces, concatenated, are the rows of the whole.
    """
    for offset, line in enumerate(lines):
        row = _line_row(line, file, start + offset, context_limit)
        if row is not None:
            yield row


def _is_log(path: Path) -> bool:
    return path.name.removesuffix(".gz").endswith(LOG_SUFFIXES)


def _why(exc: RecordingError, file: str) -> str:
    """The reason without the file name (the row names the file)."""
    text = str(exc)
    return text[len(file) + 2 :] if text.startswith(file + ": ") else text


_CHUNK: Final = 1 << 20
"""A log is read in pieces of this many bytes."""
_BLANK_RUN: Final = re.compile(rb"[\t-\r\x1c- ]*")
"""ASCII white space (what ``str.strip`` strips of ASCII): a run of blank lines is skipped at C
speed, so a log of a billion empty lines (a gzip bomb of 1 MiB) costs seconds, not minutes."""


def log_lines(stream: Any, limit: int | None) -> Iterator[tuple[int, bytes | None]]:
    """The lines of a binary ``stream`` that are not blank, each with its 0-based line number (a
    line keeps its newline). At most ``limit`` bytes of one line are held: a longer line (a gzip
    bomb with no newline, a runaway record) yields ``None`` and is skipped without being read
    whole. Blank lines are counted, not yielded. A streamed log may be any size; the input limit
    bounds what one record may cost."""
    pending = b""  # the start of a line whose newline has not been read yet
    index = 0  # the number of the line ``pending`` (or the next piece) starts
    skipping = False  # the line being read is over the limit: drop it up to its newline
    # read1 where there is one: a gzip stream's read() decodes until it has all it was asked
    # for, and one that then finds the stream cut short or corrupt raises with what it decoded
    # lost (lines that were whole); read1 hands over each decoded piece before the error
    read = getattr(stream, "read1", None) or stream.read
    while chunk := read(_CHUNK):
        data = pending + chunk if pending else chunk
        pos = 0
        if skipping:
            newline = data.find(b"\n")
            if newline < 0:
                pending = b""
                continue
            skipping, index, pos = False, index + 1, newline + 1
        while True:
            run = _BLANK_RUN.match(data, pos)
            assert run is not None  # a `*` pattern matches everywhere, if only the empty string
            blank = data.rfind(b"\n", pos, run.end())
            if blank >= 0:  # whole blank lines: counted at once
                index += data.count(b"\n", pos, blank + 1)
                pos = blank + 1
            newline = data.find(b"\n", pos)
            if newline < 0:
                break
            yield (
                index,
                (data[pos : newline + 1] if limit is None or newline - pos <= limit else None),
            )
            index, pos = index + 1, newline + 1
        pending = data[pos:]
        if limit is not None and len(pending) > limit:
            yield index, None
            pending, skipping = b"", True
    if pending and not skipping and not _BLANK_RUN.fullmatch(pending):
        yield index, pending


def _audit_log(path: Path, context_limit: int | None) -> Iterator[AuditRow]:
    name = str(path)
    limit = max_input_bytes()
    try:
        raw: Any = path.open("rb")
    except OSError as exc:
        yield unreadable_row(name, f"cannot read the file: {exc.strerror or exc}", log=True)
        return
    with raw:
        # gzip by content, as conformance.traffic.reading reads it (``.gz`` or not)
        stream: Any = gzip.GzipFile(fileobj=raw) if raw.peek(2)[:2] == _GZIP_MAGIC else raw
        try:
            yield from audit_log_lines(log_lines(stream, limit), name, limit, context_limit)
        except (OSError, EOFError, zlib.error) as exc:  # a truncated or corrupt .gz
            yield unreadable_row(name, f"corrupt gzip file: {exc}", log=True)


def audit_log_lines(
    lines: Iterable[tuple[int, bytes | None]],
    file: str,
    limit: int | None,
    context_limit: int | None = None,
) -> Iterator[AuditRow]:
    """Rows for :func:`log_lines`'s numbered lines of ``file`` (``None``: a line over ``limit``
    bytes); ``context_limit`` as ``audit_interaction`` takes it."""
    for index, line in lines:
        if line is None:
            problem = f"line {index + 1} is over the input limit of {limit} bytes"
            yield unreadable_row(file, f"{problem} (set {INPUT_LIMIT_ENV})", index, log=True)
            continue
        row = _line_row(line, file, index, context_limit)
        if row is not None:
            yield row


def audit_file(path: str | Path, *, context_limit: int | None = None) -> Iterator[AuditRow]:
    """Rows for one recording file: a log is streamed line by line; a cassette is read whole
    (cassettes are small). A file that cannot be read is one ``unreadable`` row.
    ``context_limit`` as ``audit_interaction`` takes it."""
    path = Path(path)
    if _is_log(path):
        yield from _audit_log(path, context_limit)
        return
    try:
        items = cassette_items(path)
    except RecordingError as exc:
        yield unreadable_row(str(path), _why(exc, str(path)), exc.index, log=False)
        return
    for item in items:  # an interaction that cannot be read is its row; the others are judged
        if isinstance(item, RecordingError):
            yield unreadable_row(str(path), _why(item, str(path)), item.index, log=False)
            continue
        row = _judge(item, is_log=False, context_limit=context_limit)
        if row is not None:
            yield row


def recording_files(paths: Iterable[str | Path]) -> Iterator[Path]:
    """The recording files under ``paths`` (folders walked recursively, in sorted order).

    Raises ``conformance.traffic.reading.RecordingError`` for a path that does not exist.
    """
    for path in paths:
        yield from iter_recording_files(path)


def audit_paths(
    paths: Iterable[str | Path], *, context_limit: int | None = None
) -> Iterator[AuditRow]:
    """Every judged request under ``paths`` (files or folders, recursively, in sorted order), and
    an ``unreadable`` row for each file (or log line) that cannot be read; ``context_limit`` as
    ``audit_interaction`` takes it.

    Raises ``conformance.traffic.reading.RecordingError`` only for a path that does not exist.
    """
    for path in recording_files(paths):
        yield from audit_file(path, context_limit=context_limit)
