"""The scenario x shape matrix that every human-readable format shows."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from conformance.events import CaseResult, CaseStatus
from conformance.scenarios import GATE_LEVELS, LEVELS, STRICT_GATE_LEVELS, Level
from conformance.traffic.verdicts import RERECORD_COMMAND

__all__ = [
    "BELOW_GATE_MARK",
    "MATRIX_LEGEND",
    "PROVENANCES",
    "BaselineSection",
    "Cell",
    "Row",
    "baseline_counts",
    "baseline_section",
    "failing_cases",
    "gate_of",
    "gate_text",
    "matrix_legend",
    "matrix_rows",
    "problem_lines",
    "provenance_counts",
    "provenance_summary",
    "stale_cases",
    "stale_warning",
    "verdict_line",
]

# Strongest evidence first: a live provider's recorded answer, a recording against the emulator,
# the validators computing it now.
PROVENANCES: Final = ("recorded-live", "recorded-emulated", "emulated")


def gate_of(header: Mapping[str, Any]) -> tuple[Level, ...]:
    """The check levels a run's exit status was gated on, from its header (``--strict``: must
    and should; else must)."""
    return STRICT_GATE_LEVELS if header.get("strict") is True else GATE_LEVELS


@dataclass(frozen=True, slots=True)
class Cell:
    """The cases of one scenario in one shape (several for a budget sweep or dialects), read
    at the run's ``gate``."""

    cases: tuple[CaseResult, ...]
    gate: tuple[Level, ...] = GATE_LEVELS

    @property
    def status(self) -> CaseStatus | None:
        """The worst status of the cell's cases (error, fail, pass); ``None`` when empty."""
        if not self.cases:
            return None
        statuses = {c.status for c in self.cases}
        return "error" if "error" in statuses else "fail" if "fail" in statuses else "pass"

    @property
    def below_gate(self) -> bool:
        """Whether the cell's cases all pass the gate while some fail (or raise in) a check of
        a level below it: what the exit status does not count."""
        failing = [c for c in self.cases if c.status != "pass"]
        return bool(failing) and all(c.gate_status(self.gate) == "pass" for c in failing)

    @property
    def text(self) -> str:
        """``✓``, ``✓ 35`` (a sweep), ``✗ 3/35``, ``E 1/35``, ``△ 2/35`` (failing only checks
        below the gate) or ``·`` (not applicable)."""
        if not self.cases:
            return "·"
        total = len(self.cases)
        bad = sum(1 for c in self.cases if c.status != "pass")
        if self.below_gate:
            mark = BELOW_GATE_MARK
        else:
            mark = {"pass": "✓", "fail": "✗", "error": "E"}[self.status or "pass"]
        if bad == 0:
            return mark if total == 1 else f"{mark} {total}"
        return f"{mark} {bad}/{total}" if total > 1 else mark


BELOW_GATE_MARK: Final = "△"
"""A cell whose cases pass the gate and fail a check below it (a ``should`` or ``may`` check
in a run gated on ``must``)."""
MATRIX_LEGEND: Final = (
    "✓ pass (n: budgets of a sweep)  ✗ k/n failed  △ k/n failed below the gate  E error  "
    "· not applicable"
)
"""What the matrix's marks say, under it in every human-readable report."""


def matrix_legend(ended_early: bool) -> str:
    """:data:`MATRIX_LEGEND`, and for a run that ended before its last case (stopped,
    interrupted, its report cut short: ``RunRecord.stopped_note``) what a ``·`` cell may be
    there too: the run never reached it, so it does not read as a complete row."""
    return MATRIX_LEGEND + (", or not reached: the run ended early" if ended_early else "")


@dataclass(frozen=True, slots=True)
class Row:
    """One scenario: its level, title and a cell per shape, in the run's shape order."""

    scenario: str
    title: str
    level: str
    cells: tuple[Cell, ...]

    @property
    def status(self) -> CaseStatus | None:
        """The worst status over the row's cells; ``None`` when no shape applies."""
        statuses = {c.status for c in self.cells if c.status}
        if not statuses:
            return None
        return "error" if "error" in statuses else "fail" if "fail" in statuses else "pass"

    @property
    def below_gate(self) -> bool:
        """Whether the row's failing cells all fail only below the gate (:attr:`Cell.below_gate`)."""
        failing = [cell for cell in self.cells if cell.status not in (None, "pass")]
        return bool(failing) and all(cell.below_gate for cell in failing)


def matrix_rows(
    cases: Sequence[CaseResult], shapes: Sequence[str], gate: tuple[Level, ...] = GATE_LEVELS
) -> list[Row]:
    """One row per scenario, in the order the cases first name them, its cells read at
    ``gate`` (:func:`gate_of` a run's header)."""
    order: list[str] = []
    grouped: dict[str, list[CaseResult]] = {}
    for case in cases:
        if case.scenario not in grouped:
            order.append(case.scenario)
            grouped[case.scenario] = []
        grouped[case.scenario].append(case)
    rows = []
    for scenario in order:
        members = grouped[scenario]
        cells = tuple(Cell(tuple(c for c in members if c.shape == s), gate) for s in shapes)
        rows.append(Row(scenario, members[0].title, members[0].level, cells))
    return rows


def failing_cases(cases: Sequence[CaseResult]) -> list[CaseResult]:
    """The cases that did not pass (failed or errored): those with a ``must`` failure first (a
    plug-in error counts as one), then ``should``, then ``may``, in run order within each, so a
    list cut to its first few always shows what decided the exit status."""
    failing = [c for c in cases if c.status != "pass"]
    return sorted(failing, key=_worst_level)


def _worst_level(case: CaseResult) -> int:
    """The rank in ``LEVELS`` of the most severe level ``case`` did not pass at, as the exit
    status reads it (:meth:`CaseResult.level_status`; a plug-in error is ``must``'s)."""
    return next(
        (k for k, level in enumerate(LEVELS) if case.level_status(level) in ("fail", "error")), 0
    )


def problem_lines(case: CaseResult) -> list[str]:
    """``check_id (level): title: message`` per failing check, or the error reason."""
    if case.outcome == "error":
        return [f"error: {case.reason}"]
    return [
        f"{c.id} ({c.level}, {c.status}): {c.title}: {c.message}"
        for c in case.checks
        if c.status != "pass"
    ]


def verdict_line(verdict: Mapping[str, Any] | None) -> str:
    """The verdict of a case in one line, always with its provenance, and the rule's evidence
    class when a rule is named: ``verdict: reject 400 rule C1 (evidence recorded; provenance
    recorded-emulated, openai-chat/x.yaml#1)``."""
    if not verdict:
        return "verdict: none (nothing was assembled to judge)"
    said = f"{verdict.get('verdict', '?')} {verdict.get('status', '?')}"
    notes = []
    if verdict.get("rule"):
        said += f" rule {verdict['rule']}"
        notes.append(f"evidence {verdict.get('evidence') or 'unknown'}")
    where = f", {verdict['cassette']}" if verdict.get("cassette") else ""
    notes.append(f"provenance {verdict.get('provenance') or 'unknown'}{where}")
    stale = " [STALE CASSETTE]" if verdict.get("stale_cassette") else ""
    return f"verdict: {said} ({'; '.join(notes)}){stale}"


def provenance_counts(cases: Sequence[CaseResult]) -> dict[str, int]:
    """Cases per verdict provenance; ``none`` counts cases without a verdict (refused, error)."""
    counts = dict.fromkeys((*PROVENANCES, "none"), 0)
    for case in cases:
        provenance = str((case.verdict or {}).get("provenance") or "none")
        counts[provenance] = counts.get(provenance, 0) + 1
    return counts


def provenance_summary(cases: Sequence[CaseResult]) -> str:
    """``verdicts: 0 recorded-live, 270 recorded-emulated, 10 emulated; 144 without a verdict``."""
    counts = provenance_counts(cases)
    known = ", ".join(f"{counts.pop(p)} {p}" for p in PROVENANCES)
    none = counts.pop("none")
    other = "".join(f", {n} {p}" for p, n in sorted(counts.items()) if n)
    return (
        f"verdict provenance: {known}{other}; {none} case(s) without a verdict (refused or error)"
    )


def stale_cases(cases: Sequence[CaseResult]) -> list[CaseResult]:
    """Cases whose recorded verdict the validators contradict."""
    return [c for c in cases if (c.verdict or {}).get("stale_cassette")]


def stale_warning(cases: Sequence[CaseResult]) -> str | None:
    """One loud line when any cassette is stale; ``None`` otherwise."""
    stale = stale_cases(cases)
    if not stale:
        return None
    files = sorted({str((c.verdict or {}).get("cassette") or "?").split("#")[0] for c in stale})
    shown = ", ".join(files[:5]) + (f" and {len(files) - 5} more" if len(files) > 5 else "")
    return (
        f"WARNING: {len(stale)} case(s) hit a stale cassette (the recorded verdict and the "
        f"validators disagree): {shown}; re-record with `{RERECORD_COMMAND}`"
    )


def not_judged_text(footer: Mapping[str, Any]) -> str | None:
    """``17 case(s) not judged: <why>`` when the footer counts cases a plain function was not
    run on (``engine._not_judged``); None otherwise (an old footer, or none left out)."""
    found = footer.get("not_judged")
    if not isinstance(found, Mapping) or not isinstance(found.get("cases"), int):
        return None
    return f"{found['cases']} case(s) not judged: {found.get('why', '')}".rstrip(": ")


def gate_text(footer: Mapping[str, Any]) -> str:
    """`` (gate: baseline)`` after an exit status: what decided it (empty for an old footer)."""
    gate = footer.get("gate")
    return f" (gate: {gate})" if isinstance(gate, str) and gate else ""


@dataclass(frozen=True, slots=True)
class BaselineSection:
    """What a run's footer says of its baseline comparison, for the human-readable reports."""

    headline: str
    """``baseline: 3 regression(s), 1 new pass(es), 40 still failing, 47 unchanged pass(es),
    0 new, 0 removed case(s)``."""
    regressions: tuple[str, ...]
    new_passes: tuple[str, ...]
    notes: tuple[str, ...]


def baseline_section(footer: Mapping[str, Any]) -> BaselineSection | None:
    """The baseline comparison stored in the footer by ``ctxconf run --baseline``, or ``None``
    for a run without one."""
    data = footer.get("baseline")
    if not isinstance(data, Mapping):
        return None

    def keys(name: str) -> tuple[str, ...]:
        value = data.get(name)
        return tuple(str(k) for k in value) if isinstance(value, list) else ()

    regressions = keys("regressions")
    headline = f"baseline: {'FAIL' if regressions else 'OK'}, {baseline_counts(data)}"
    return BaselineSection(headline, regressions, keys("new_passes"), keys("notes"))


def baseline_counts(summary: Mapping[str, Any]) -> str:
    """``3 regression(s), 1 new pass(es), 40 still failing, 47 unchanged pass(es), 0 new, 0
    removed case(s)`` of a baseline comparison as the footer stores it
    (``BaselineDiff.summary``): what the terminal and the reports say of it."""

    def count(name: str) -> int:
        value = summary.get(name)
        if isinstance(value, list):
            return len(value)
        return value if isinstance(value, int) else 0

    return (
        f"{count('regressions')} regression(s), {count('new_passes')} new pass(es), "
        f"{count('still_failing')} still failing, {count('unchanged_passes')} unchanged "
        f"pass(es), {count('new_cases')} new, {count('removed_cases')} removed case(s)"
    )
