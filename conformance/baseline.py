"""Baselines for regression gating: what passed last time, so CI blocks only what got worse.

A baseline file is JSON (format ``ctxconf.baseline``, version :data:`BASELINE_VERSION`) keyed by
case id, the same key the reports use: ``scenario[shape/dialect@budget]``::

    {"format": "ctxconf.baseline", "version": 1, "plugin": "mypkg.ctx:assemble",
     "level": "may", "ctxconf_version": "0.1.0", "created": "2026-...",
     "cases": {"parallel-tools-2[openai-chat@4000]": {"status": "pass", "level": "must"},
               "sweep-...[openai-chat@500]": {"status": "fail", "level": "must",
                                             "failed": ["provider_valid"]}}}

Keys are sorted so that a baseline committed to a repository diffs line by line.

:func:`compare_to_baseline` sorts every case into regressions (passed before, fails or errors
now), new passes (failed or errored before, passes now), still failing, new cases and removed
cases. :func:`gate` is what ``ctxconf run --baseline FILE`` calls: it prints the comparison and
returns the exit status (1 on any regression, else 0). A case counts as passing at the run's gate,
the same levels ``ctxconf run`` and the pytest plug-in gate on: ``must`` checks by default
(:data:`GATE_LEVELS`), ``must`` and ``should`` with ``--strict`` (:data:`STRICT_GATE_LEVELS`),
read by the exit status's own rule (:func:`conformance.events.status_at_gate`): a check of a
level the gate does not count, failed or raised, does not fail the case there.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Final, TypeAlias

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from conformance.checks import REGISTRY, CheckResult
from conformance.errors import BaselineError
from conformance.events import CaseResult, CaseStatus, status_at_gate
from conformance.reporting.matrix import baseline_counts
from conformance.reporting.record import REPORT_FORMAT, RunRecord, read_jsonl
from conformance.scenarios import GATE_LEVELS, STRICT_GATE_LEVELS, Level
from reference_impl.documents import (
    DocumentLimitError,
    json_problem,
    loads_json,
    read_input_text,
)

__all__ = [
    "BASELINE_FORMAT",
    "BASELINE_VERSION",
    "Baseline",
    "BaselineCase",
    "BaselineDiff",
    "CaseChange",
    "Results",
    "compare_to_baseline",
    "gate",
    "print_diff",
    "read_baseline",
    "to_baseline",
    "write_baseline",
]

BASELINE_FORMAT: Final = "ctxconf.baseline"
BASELINE_VERSION: Final = 1

Results: TypeAlias = "RunRecord | Iterable[CaseResult] | Path | str"
"""A run: its record, its case results, or the path of its ``run.jsonl``."""


@dataclass(frozen=True, slots=True)
class BaselineCase:
    """One case of a baseline: its status and level, and the checks that did not pass."""

    status: str
    level: str
    failed: tuple[str, ...] = ()
    """Ids of the checks that failed or errored (empty for a pass or a plug-in error)."""
    errored: tuple[str, ...] = ()
    """Those of :attr:`failed` that raised instead of failing (a file written before this field
    existed has none; its errored checks then read as failed, which the gate counts the same)."""

    def checks(self) -> tuple[CheckResult, ...]:
        """The checks that did not pass, rebuilt from the file: each at the registry's level (a
        check the registry no longer knows is a ``must`` one, the safe side)."""
        return tuple(
            CheckResult(
                check,
                REGISTRY[check].level if check in REGISTRY else "must",
                "error" if check in self.errored else "fail",
            )
            for check in self.failed
        )

    def gate_status(self, gate: tuple[Level, ...] = GATE_LEVELS) -> CaseStatus:
        """``pass``, ``fail`` or ``error`` at the gate, read as ``ctxconf run``'s exit status
        reads a case (:func:`conformance.events.status_at_gate`): a case whose failed or raised
        checks are all of levels the gate does not count is a ``pass`` there. A case that did
        not pass with no check named is a plug-in error (a ``must`` error)."""
        plugin_error = self.status != "pass" and not self.failed
        return status_at_gate(self.checks(), gate, plugin_error=plugin_error)

    def passes(self, gate: tuple[Level, ...] = GATE_LEVELS) -> bool:
        """Whether the case passes the gate (:meth:`gate_status`). ``gate`` is
        :data:`GATE_LEVELS` (``must``) or :data:`STRICT_GATE_LEVELS` (``must`` and ``should``),
        as ``ctxconf run`` gates."""
        return self.gate_status(gate) == "pass"

    def to_dict(self) -> dict[str, Any]:
        """The case as the baseline file stores it (``failed`` and ``errored`` only when
        non-empty)."""
        out: dict[str, Any] = {"status": self.status, "level": self.level}
        if self.failed:
            out["failed"] = list(self.failed)
        if self.errored:
            out["errored"] = list(self.errored)
        return out


@dataclass(frozen=True, slots=True)
class Baseline:
    """The accepted state of a run, case key -> :class:`BaselineCase`, with where it came from."""

    cases: Mapping[str, BaselineCase]
    plugin: str = ""
    level: str = ""
    ctxconf_version: str = ""
    created: str = ""

    def to_dict(self) -> dict[str, Any]:
        """The baseline file's document (format, version, provenance, cases by key)."""
        return {
            "format": BASELINE_FORMAT,
            "version": BASELINE_VERSION,
            "plugin": self.plugin,
            "level": self.level,
            "ctxconf_version": self.ctxconf_version,
            "created": self.created,
            "cases": {key: self.cases[key].to_dict() for key in sorted(self.cases)},
        }


@dataclass(frozen=True, slots=True)
class CaseChange:
    """How one case moved between the baseline and this run (statuses before and after)."""

    key: str
    before: str | None
    after: str | None
    failed: tuple[str, ...] = ()
    """Checks failing now (for regressions and still-failing cases)."""
    before_gate: str | None = None
    """``pass``, ``fail`` or ``error`` at the comparison's gate in the baseline (``before`` is
    the case's status over every level: a ``should`` failure makes it ``fail``)."""
    after_gate: str | None = None
    """``pass``, ``fail`` or ``error`` at the comparison's gate in this run."""


@dataclass(frozen=True, slots=True)
class BaselineDiff:
    """This run against a baseline: regressions, new passes, still failing, added, removed."""

    regressions: tuple[CaseChange, ...] = ()
    new_passes: tuple[CaseChange, ...] = ()
    still_failing: tuple[CaseChange, ...] = ()
    new_cases: tuple[CaseChange, ...] = ()
    removed_cases: tuple[CaseChange, ...] = ()
    unchanged_passes: int = 0
    notes: tuple[str, ...] = field(default=())

    @property
    def ok(self) -> bool:
        """No case that passed in the baseline fails or errors now."""
        return not self.regressions

    @property
    def exit_status(self) -> int:
        """1 when a case regressed, else 0 (what ``ctxconf run --baseline`` exits with)."""
        return 0 if self.ok else 1

    def summary(self) -> dict[str, Any]:
        """The comparison as the run's footer stores it under ``baseline`` (the regressions and
        new passes by case key, the other buckets counted), for the reports to show."""
        return {
            "regressions": [c.key for c in self.regressions],
            "new_passes": [c.key for c in self.new_passes],
            "still_failing": len(self.still_failing),
            "unchanged_passes": self.unchanged_passes,
            "new_cases": len(self.new_cases),
            "removed_cases": len(self.removed_cases),
            "notes": list(self.notes),
        }


# ---------------------------------------------------------------------------------- building


def _record(results: Results) -> tuple[tuple[CaseResult, ...], Mapping[str, Any]]:
    if isinstance(results, str | Path):
        record = read_jsonl(Path(results))
        return record.cases, record.header
    if isinstance(results, RunRecord):
        return results.cases, results.header
    return tuple(results), {}


def _failed_checks(result: CaseResult) -> tuple[str, ...]:
    return tuple(c.id for c in result.checks if c.status != "pass")


def _errored_checks(result: CaseResult) -> tuple[str, ...]:
    return tuple(c.id for c in result.checks if c.status == "error")


def to_baseline(results: Results) -> Baseline:
    """A :class:`Baseline` of a run (record, case results, or ``run.jsonl`` path)."""
    cases, header = _record(results)
    entries: dict[str, BaselineCase] = {}
    for result in cases:
        if result.key in entries:
            raise BaselineError(
                f"case {result.key!r} appears twice in one run; a baseline needs unique case ids"
            )
        entries[result.key] = BaselineCase(
            result.status, result.level, _failed_checks(result), _errored_checks(result)
        )
    return Baseline(
        entries,
        plugin=str(header.get("plugin", "")),
        level=str(header.get("level", "")),
        ctxconf_version=str(header.get("ctxconf_version", "")),
        created=datetime.now(timezone.utc).isoformat(timespec="seconds"),
    )


def write_baseline(results: Results, path: Path | str) -> Baseline:
    """Write the baseline of a run to ``path`` (JSON, sorted keys); returns what was written.

    A file at ``path`` that already says the same (cases, plug-in, level, ctxconf version) keeps
    its ``created``: re-writing an unchanged baseline leaves the committed file unchanged, so it
    shows in a pull request only when something moved."""
    baseline = to_baseline(results)
    target = Path(path)
    with contextlib.suppress(BaselineError):
        before = read_baseline(target) if target.is_file() else None
        if before is not None and replace(before, created=baseline.created) == baseline:
            baseline = before
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(baseline.to_dict(), indent=2, ensure_ascii=False) + "\n", "utf-8")
    return baseline


def _run_report_instead(text: str) -> str:
    """What to say of a file that is not one JSON document because it is a run's report
    (``reports/run.jsonl``, one JSON object a line: ``Extra data at line 2`` to the parser);
    empty for anything else."""
    try:
        first = loads_json(text.partition("\n")[0])
    except (json.JSONDecodeError, RecursionError):
        return ""
    if not isinstance(first, dict) or first.get("format") != REPORT_FORMAT:
        return ""
    return (
        f"this is a run's report ({REPORT_FORMAT}, one JSON object a line), not a baseline; "
        "write a baseline with `ctxconf run --write-baseline conformance.json` and give that "
        "file to --baseline"
    )


def read_baseline(path: Path | str) -> Baseline:
    """Read a baseline file; a :class:`BaselineError` naming the file and JSON path otherwise."""
    source = Path(path)
    try:
        data = loads_json(read_input_text(source))
    except DocumentLimitError as exc:
        raise BaselineError(str(exc), where=str(source)) from None
    except FileNotFoundError:
        raise BaselineError(
            "no such baseline file; create one with `ctxconf run --write-baseline FILE`",
            where=str(source),
        ) from None
    except OSError as exc:
        raise BaselineError(exc.strerror or str(exc), where=str(source)) from None
    except UnicodeDecodeError as exc:
        raise BaselineError(f"not UTF-8 text (byte {exc.start})", where=str(source)) from None
    except RecursionError:
        raise BaselineError("not a baseline: JSON nested too deeply", where=str(source)) from None
    except json.JSONDecodeError as exc:
        raise BaselineError(
            _run_report_instead(exc.doc)
            or f"line {exc.lineno}: not valid JSON ({json_problem(exc)})",
            where=str(source),
        ) from None
    if not isinstance(data, dict) or data.get("format") != BASELINE_FORMAT:
        raise BaselineError(
            f"$.format must be {BASELINE_FORMAT!r}; is this a file written by "
            f"`ctxconf run --write-baseline`?",
            where=str(source),
        )
    if data.get("version") != BASELINE_VERSION:
        raise BaselineError(
            f"$.version is {data.get('version')!r}; this release reads version "
            f"{BASELINE_VERSION} (re-create it with `ctxconf run --write-baseline`)",
            where=str(source),
        )
    raw_cases = data.get("cases")
    if not isinstance(raw_cases, dict):
        raise BaselineError("$.cases must be an object keyed by case id", where=str(source))
    cases: dict[str, BaselineCase] = {}
    for key, entry in raw_cases.items():
        at = f"{source}: $.cases[{json.dumps(key)}]"
        if not isinstance(entry, dict) or entry.get("status") not in {"pass", "fail", "error"}:
            raise BaselineError("needs a status of pass, fail or error", where=at)
        lists = {}
        for name in ("failed", "errored"):
            ids = entry.get(name, [])
            if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
                raise BaselineError(f"{name} must be a list of check ids", where=at)
            lists[name] = tuple(ids)
        cases[key] = BaselineCase(
            entry["status"], str(entry.get("level", "")), lists["failed"], lists["errored"]
        )
    return Baseline(
        cases,
        plugin=str(data.get("plugin", "")),
        level=str(data.get("level", "")),
        ctxconf_version=str(data.get("ctxconf_version", "")),
        created=str(data.get("created", "")),
    )


# --------------------------------------------------------------------------------- comparing


def compare_to_baseline(
    current: Results | Baseline, baseline: Baseline | Path | str, *, strict: bool = False
) -> BaselineDiff:
    """How a run compares to a baseline, case by case, at the run's gate: a case passes when
    no check at a gated level failed (``must``; ``must`` and ``should`` with ``strict``), so a
    new ``should`` failure is not a regression unless the run is strict, as ``ctxconf run``."""
    now = current if isinstance(current, Baseline) else to_baseline(current)
    before = baseline if isinstance(baseline, Baseline) else read_baseline(baseline)
    levels = STRICT_GATE_LEVELS if strict else GATE_LEVELS
    regressions: list[CaseChange] = []
    new_passes: list[CaseChange] = []
    still_failing: list[CaseChange] = []
    new_cases: list[CaseChange] = []
    unchanged = 0
    for key in sorted(now.cases):
        case = now.cases[key]
        old = before.cases.get(key)
        change = CaseChange(
            key,
            old.status if old else None,
            case.status,
            case.failed,
            old.gate_status(levels) if old else None,
            case.gate_status(levels),
        )
        if old is None:
            new_cases.append(change)
        elif old.passes(levels) and not case.passes(levels):
            regressions.append(change)
        elif not old.passes(levels) and case.passes(levels):
            new_passes.append(change)
        elif not case.passes(levels):
            still_failing.append(change)
        else:
            unchanged += 1
    removed = tuple(
        CaseChange(key, before.cases[key].status, None, (), before.cases[key].gate_status(levels))
        for key in sorted(set(before.cases) - set(now.cases))
    )
    notes = []
    if before.plugin and now.plugin and before.plugin != now.plugin:
        notes.append(
            f"the baseline was written for plug-in {before.plugin!r}, this run is {now.plugin!r}"
        )
    if before.level and now.level and before.level != now.level:
        notes.append(f"the baseline ran up to level {before.level!r}, this run up to {now.level!r}")
    if (
        before.ctxconf_version
        and now.ctxconf_version
        and before.ctxconf_version != now.ctxconf_version
    ):
        notes.append(
            f"the baseline was written by ctxconf {before.ctxconf_version}, this run is ctxconf "
            f"{now.ctxconf_version}: its scenarios and recorded verdicts may differ"
        )
    return BaselineDiff(
        tuple(regressions),
        tuple(new_passes),
        tuple(still_failing),
        tuple(new_cases),
        removed,
        unchanged,
        tuple(notes),
    )


# ------------------------------------------------------------------------------------ output

_SHOWN: Final = 30


def _checks(failed: tuple[str, ...]) -> str:
    """Failing checks with their levels (the registry's), so that a reader sees which of them
    the gate counts: ``provider_valid (must), whole_rings (should)``."""
    return ", ".join(f"{c} ({REGISTRY[c].level if c in REGISTRY else 'must'})" for c in failed)


def _table(title: str, changes: tuple[CaseChange, ...], style: str, gate_name: str) -> Table:
    table = Table(title=f"{title} ({len(changes)})", title_style=style, title_justify="left")
    table.add_column("case", overflow="fold")
    table.add_column(f"before ({gate_name})")
    table.add_column(f"now ({gate_name})")
    table.add_column("failing checks now", overflow="fold")
    for change in changes[:_SHOWN]:
        table.add_row(
            escape(change.key),
            change.before_gate or change.before or "-",
            change.after_gate or change.after or "-",
            _checks(change.failed),
        )
    if len(changes) > _SHOWN:
        table.add_row(f"... and {len(changes) - _SHOWN} more", "", "", "")
    return table


def print_diff(diff: BaselineDiff, console: Console, *, strict: bool = False) -> None:
    """The comparison as rich tables: regressions first, then new passes, new and removed cases.
    The before and now columns are each case's status at the gate (``must``, or ``must+should``
    when ``strict``), the one the comparison judges by."""
    name = "+".join(STRICT_GATE_LEVELS if strict else GATE_LEVELS)
    for note in diff.notes:
        console.print(f"[yellow]note:[/] {escape(note)}")
    if diff.regressions:
        console.print(
            _table(
                "regressions: passed in the baseline, fail now", diff.regressions, "bold red", name
            )
        )
    if diff.new_passes:
        console.print(
            _table(
                "new passes: update the baseline to lock them in",
                diff.new_passes,
                "bold green",
                name,
            )
        )
    if diff.new_cases:
        console.print(_table("new cases (not in the baseline)", diff.new_cases, "cyan", name))
    if diff.removed_cases:
        console.print(
            _table("removed cases (only in the baseline)", diff.removed_cases, "dim", name)
        )
    verdict = "[bold red]FAIL[/]" if diff.regressions else "[bold green]OK[/]"
    console.print(f"baseline: {verdict} {baseline_counts(diff.summary())}")


def gate(
    results: Results,
    baseline: Baseline | Path | str,
    *,
    console: Console | None = None,
    strict: bool = False,
) -> int:
    """Compare a run with a baseline (or its file), print the summary, return the exit status.

    0 when no case regressed (known failures recorded in the baseline do not fail the gate), 1 on
    any regression. Raises :class:`BaselineError` for an unreadable baseline file.
    """
    diff = compare_to_baseline(results, baseline, strict=strict)
    print_diff(diff, console or Console(stderr=True), strict=strict)
    return diff.exit_status
