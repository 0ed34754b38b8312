"""The JSON-lines run report: the source of truth every other format is derived from.

Format ``ctxconf.run``, version 1, one JSON object per line::

    {"type": "header", "format": "ctxconf.run", "version": 1, "plugin": ..., "shapes": [...], ...}
    {"type": "case", "index": 0, "scenario": ..., "shape": ..., "status": "pass", "checks": [...]}
    ...
    {"type": "footer", "totals": {"must": {"pass": 10, "fail": 0, "error": 0}, ...}, ...}

Case lines carry the input and output request bodies only for cases that did not pass (to keep a
full run small); the verdict's provenance is in every case line that has a verdict.

Lines end at a line feed only: a string written with ``ensure_ascii=False`` may hold U+2028,
U+0085 or another character that :meth:`str.splitlines` also ends a line at. A run killed while
writing leaves its last line cut short, without its line feed, and no footer: :func:`read_jsonl`
names it, and with ``partial=True`` reads the complete lines before it
(:attr:`RunRecord.cut_short`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import IO, Any, Final

from conformance.errors import ReportFileError
from conformance.events import (
    CaseFinished,
    CaseResult,
    Event,
    LevelTotals,
    RunFinished,
    RunStarted,
    level_totals,
)
from conformance.scenarios import LEVELS, Level
from reference_impl.documents import (
    DocumentLimitError,
    json_problem,
    loads_json,
    non_finite_name,
    read_input_bytes,
)

__all__ = [
    "REPORT_FORMAT",
    "REPORT_VERSION",
    "JsonLinesWriter",
    "RunRecord",
    "footer_line",
    "header_line",
    "read_jsonl",
    "record_from_events",
]

REPORT_FORMAT: Final = "ctxconf.run"
REPORT_VERSION: Final = 1


@dataclass(frozen=True, slots=True)
class RunRecord:
    """A run read back from events or a JSON-lines report: header, cases, footer."""

    header: Mapping[str, Any]
    cases: tuple[CaseResult, ...]
    footer: Mapping[str, Any] = field(default_factory=dict)
    cut_short: str = ""
    """Why the run is incomplete, when it was read without its footer
    (``read_jsonl(path, partial=True)``): ``no footer line, 3 of 5 case(s) recorded; ...``.
    Empty for a complete run."""

    @property
    def shapes(self) -> tuple[str, ...]:
        """The shapes of the run, in order."""
        return tuple(self.header.get("shapes", ()))

    @property
    def totals(self) -> dict[Level, LevelTotals]:
        """Per check level, the cases passed, failed and errored."""
        return dict(level_totals(self.cases))

    @property
    def exit_status(self) -> int | None:
        """The exit status the run ended with; None for a run cut short (read without its
        footer, which holds it: not known, and never read as a success)."""
        if self.cut_short:
            return None
        return int(self.footer.get("exit_status", 0))

    @property
    def exit_status_text(self) -> str:
        """``exit status 1``, or, for a run cut short, that it is not known (no footer holds
        it): what the reports say after the case count."""
        return "exit status unknown" if self.cut_short else f"exit status {self.exit_status}"

    def level_result(self, level: Level) -> str:
        """What the totals table says of ``level``: ``FAILED`` when a case failed or errored at
        it; ``not reached`` when the run ended early (``stopped_note``) before recording any case
        of it, which is no pass; else ``ok``."""
        totals = self.totals[level]
        if not totals.ok:
            return "FAILED"
        if self.stopped_note and not (totals.passed or totals.failed or totals.errors):
            return "not reached"
        return "ok"

    @property
    def stopped_note(self) -> str:
        """What report.md and report.html say, in bold, of a run that ended before its last
        case: its report cut short (``Run cut short: no footer line, 2 of 5 case(s)
        recorded``), or the run stopped or interrupted (``Run interrupted by SIGINT: 12 case(s)
        not run``, the footer's ``stopped``). Empty for a run that ran to its end."""
        if self.cut_short:
            return f"Run cut short: {self.cut_short}"
        reason = self.footer.get("stopped")
        if not reason:
            return ""
        return f"Run {reason}: {self.footer.get('not_run', 0)} case(s) not run"


def header_line(event: RunStarted) -> dict[str, Any]:
    """The header line of the JSON-lines report (format, version, then the run's settings)."""
    data = asdict(event)
    data["shapes"] = list(event.shapes)
    return {"type": "header", "format": REPORT_FORMAT, "version": REPORT_VERSION, **data}


def footer_line(event: RunFinished) -> dict[str, Any]:
    """The footer line of the JSON-lines report (totals, statuses, time, exit status, extras)."""
    return {
        "type": "footer",
        "totals": {level: t.to_dict() for level, t in event.totals.items()},
        "statuses": dict(event.statuses),
        "seconds": round(event.seconds, 3),
        "hung_calls": event.hung_calls,
        "crashed_workers": event.crashed_workers,
        "exit_status": event.exit_status,
        "gate": event.gate,
        "stopped": event.stopped,
        "interrupted": event.interrupted,
        "not_run": event.not_run,
        **dict(event.extra),
    }


class JsonLinesWriter:
    """Consumes events and writes one line per event that belongs in the report."""

    def __init__(self, stream: IO[str]) -> None:
        self.stream = stream

    def __call__(self, event: Event) -> None:
        line: dict[str, Any] | None = None
        if isinstance(event, RunStarted):
            line = header_line(event)
        elif isinstance(event, CaseFinished):
            line = event.result.to_dict()
        elif isinstance(event, RunFinished):
            line = footer_line(event)
        if line is not None:
            # strict JSON: a value JSON does not have (NaN) is never written as a number; should
            # one reach a line, it is written as its name, a string, and the line still is
            try:
                text = json.dumps(line, ensure_ascii=False, sort_keys=False, allow_nan=False)
            except ValueError:
                text = json.dumps(_finite(line), ensure_ascii=False, sort_keys=False)
            self.stream.write(text + "\n")
            self.stream.flush()


def _finite(value: Any) -> Any:
    """``value`` with every NaN or infinite float replaced by its name (``"NaN"``,
    ``"Infinity"``, ``"-Infinity"``), as ``json`` would spell it outside a string."""
    if isinstance(value, float) and not math.isfinite(value):
        return non_finite_name(value)
    if isinstance(value, Mapping):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value


def record_from_events(events: Iterable[Event]) -> RunRecord:
    """Collect a run's events into a :class:`RunRecord`."""
    header: dict[str, Any] = {}
    cases: list[CaseResult] = []
    footer: dict[str, Any] = {}
    for event in events:
        if isinstance(event, RunStarted):
            header = header_line(event)
        elif isinstance(event, CaseFinished):
            cases.append(event.result)
        elif isinstance(event, RunFinished):
            footer = footer_line(event)
    return RunRecord(header, tuple(cases), footer)


def _what_it_is(text: str) -> str:
    """``; it is a ctxconf.baseline file, not a run report`` when the whole text is one JSON
    document (a baseline, a pretty-printed body): its first line alone is no JSON."""
    try:
        whole = loads_json(text)
    except (json.JSONDecodeError, RecursionError):
        return ""
    kind = whole.get("format") if isinstance(whole, dict) else None
    named = f"a {kind} file" if isinstance(kind, str) and kind else "one JSON document"
    return f"; it is {named}, not a run report (reports/run.jsonl, one JSON object a line)"


@dataclass(frozen=True, slots=True)
class _CutLine:
    """The last line of a file that ends inside it (no line feed after it) and is not JSON:
    what a run killed while writing its report leaves."""

    number: int
    problem: str
    """``Unterminated string starting at column 57``: the parser's words and where."""


def _text(data: bytes, path: Path) -> str:
    """The file as UTF-8 text. A character the file ends inside is left out: the writer keeps
    non-ASCII raw (``ensure_ascii=False``) and a run killed while writing stops at any byte, so
    its last line, then cut short, may end inside one; the file is no less UTF-8."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        text = data[: exc.start].decode("utf-8")  # valid up to the first error
        inside_last = exc.end == len(data) and exc.reason == "unexpected end of data"
        if inside_last and text.rpartition("\n")[2].lstrip().startswith("{"):
            return text
        # named as every other refusal is, by file:line (a byte offset alone cannot be found
        # in an editor), the byte counted in its line from 0, as `ctxconf audit` counts it
        number = data.count(b"\n", 0, exc.start) + 1
        in_line = exc.start - (data.rfind(b"\n", 0, exc.start) + 1)
        raise ReportFileError(
            f"not UTF-8 text (byte {in_line} of the line, {exc.start} of the file)",
            where=f"{path}:{number}",
        ) from None


def _lines(path: Path) -> Iterator[tuple[int, Any]]:
    """Each non-blank line's number and value; the last line, when it is cut short, as a
    :class:`_CutLine`; any other line that is not JSON is a named error."""
    try:
        text = _text(read_input_bytes(path), path)
    except DocumentLimitError as exc:
        raise ReportFileError(str(exc), where=str(path)) from None
    except OSError as exc:
        raise ReportFileError(exc.strerror or str(exc), where=str(path)) from None
    pieces = text.split("\n")  # the writer ends each line with "\n", and nothing else ends one
    for number, raw in enumerate(pieces, start=1):
        if not raw.strip():
            continue
        try:
            yield number, loads_json(raw)
        except json.JSONDecodeError as exc:
            if number == len(pieces) and raw.lstrip().startswith("{"):
                # an object the file ends inside (no "\n" after it): cut short, not malformed
                yield number, _CutLine(number, json_problem(exc))
                return
            raise ReportFileError(
                f"not valid JSON ({json_problem(exc)}){_what_it_is(text)}",
                where=f"{path}:{number}",
            ) from None
        except RecursionError:
            raise ReportFileError("JSON nested too deeply", where=f"{path}:{number}") from None


_STATUSES: Final = ("pass", "fail", "error")


# The fields the renderers read as a given JSON type (None: the field may be null or absent).
_CASE_FIELDS: Final[dict[str, tuple[type, ...]]] = {
    "dialect": (str,),
    "verdict": (dict,),
    "markup": (dict,),
    "plugin_output": (dict,),
    "reason": (str,),
    "refusal_code": (str,),
}
_HEADER_FIELDS: Final[dict[str, tuple[type, ...]]] = {"shapes": (list,)}
_FOOTER_FIELDS: Final[dict[str, tuple[type, ...]]] = {"exit_status": (int,), "totals": (dict,)}
_JSON_TYPE_NAMES: Final = {dict: "an object", list: "an array", str: "a string", int: "an integer"}


def _check_fields(
    line: Mapping[str, Any],
    fields: Mapping[str, tuple[type, ...]],
    where: str,
    *,
    nullable: bool = False,
) -> None:
    """Each of ``fields`` present in ``line`` is of its JSON type (or null, when ``nullable``),
    else a named error."""
    for key, kinds in fields.items():
        value = line.get(key)
        if value is None and (nullable or key not in line):
            continue
        if isinstance(value, bool) or not isinstance(value, kinds):
            wanted = " or ".join(_JSON_TYPE_NAMES[k] for k in kinds)
            raise ReportFileError(
                f"{key!r} is {type(value).__name__} {value!r:.60}, expected {wanted}", where=where
            )


def _check_case(case: CaseResult, where: str) -> None:
    """A case line's level and statuses, and its checks', are ones the renderers know: anything
    else is named here, not met as an internal error halfway through a page."""
    if case.level not in LEVELS:
        raise ReportFileError(f"unknown level {case.level!r}", where=where)
    if case.status not in _STATUSES:
        raise ReportFileError(
            f"unknown case status {case.status!r} (one of {', '.join(_STATUSES)})", where=where
        )
    for check in case.checks:
        if check.level not in LEVELS or check.status not in _STATUSES:
            raise ReportFileError(
                f"check {check.id!r}: unknown level or status ({check.level!r}, {check.status!r})",
                where=where,
            )


def read_jsonl(path: Path, *, partial: bool = False) -> RunRecord:
    """Read a saved run; a named error with ``file:line`` for anything that is not one.

    A run without its footer line (killed, disk full, a copy cut short; its last line then
    often cut short too) is a named error, or with ``partial`` the record of its complete
    lines, :attr:`RunRecord.cut_short` saying what is missing."""
    header: dict[str, Any] | None = None
    cases: list[CaseResult] = []
    footer: dict[str, Any] = {}
    cut: _CutLine | None = None
    for number, line in _lines(path):
        where = f"{path}:{number}"
        if isinstance(line, _CutLine):
            cut = line
            break
        kind = line.get("type") if isinstance(line, dict) else None
        if header is None:
            if kind != "header" or line.get("format") != REPORT_FORMAT:
                raise ReportFileError(
                    f"the first line must be a {REPORT_FORMAT!r} header; is this a ctxconf run "
                    f"report (reports/run.jsonl)?",
                    where=where,
                )
            if line.get("version") != REPORT_VERSION:
                raise ReportFileError(
                    f"report version {line.get('version')!r}; this release reads version "
                    f"{REPORT_VERSION}",
                    where=where,
                )
            _check_fields(line, _HEADER_FIELDS, where)
            if not all(isinstance(shape, str) for shape in line.get("shapes") or ()):
                raise ReportFileError("'shapes' must be an array of shape names", where=where)
            header = line
        elif kind == "case":
            _check_fields(line, _CASE_FIELDS, where, nullable=True)
            try:
                cases.append(CaseResult.from_dict(line))
            except (KeyError, TypeError, ValueError) as exc:
                raise ReportFileError(f"malformed case line ({exc!r})", where=where) from None
            _check_case(cases[-1], where)
        elif kind == "footer":
            _check_fields(line, _FOOTER_FIELDS, where)
            footer = line
        else:
            raise ReportFileError(f"unknown line type {kind!r}", where=where)
    return _ending(path, header, tuple(cases), footer, cut, partial=partial)


def _ending(
    path: Path,
    header: dict[str, Any] | None,
    cases: tuple[CaseResult, ...],
    footer: dict[str, Any],
    cut: _CutLine | None,
    *,
    partial: bool,
) -> RunRecord:
    """The record of the lines read, or the named error of a file that ends too early."""
    cut_words = (
        f"the last line is cut short (not valid JSON: {cut.problem}; the file ends inside it, "
        "as a run killed while writing leaves it)"
        if cut is not None
        else ""
    )
    where = f"{path}:{cut.number}" if cut is not None else str(path)
    if header is None:
        said = f"{cut_words}, and no line before it is complete" if cut_words else "empty report"
        raise ReportFileError(said, where=where)
    if footer:
        if cut_words:  # the footer is the last line a run writes: nothing follows it
            raise ReportFileError(f"{cut_words}, after the footer line", where=where)
        return RunRecord(header, cases, footer)
    # A run cut short (killed, disk full, truncated copy) must not render as a clean result.
    expected = header.get("case_count")
    of = f" of {expected}" if isinstance(expected, int) else ""
    missing = f"no footer line, {len(cases)}{of} case(s) recorded"
    if cut is not None:
        missing += f"; line {cut.number} is cut short ({cut.problem}) and left out"
    if partial:
        return RunRecord(header, cases, cut_short=missing)
    said = f"{cut_words}; no footer line" if cut_words else "no footer line"
    raise ReportFileError(
        f"{said}: the run was cut short ({len(cases)}{of} case(s) recorded); "
        "`ctxconf report --partial` renders the cases recorded, or re-run `ctxconf run` to get "
        "a complete report",
        where=where,
    )
