"""The scenario x shape matrix that every human-readable format shows."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from conformance.events import CaseResult, CaseStatus
from conformance.recorded_verdicts import RERECORD_COMMAND

__all__ = [
    "PROVENANCES",
    "Cell",
    "Row",
    "matrix_rows",
    "provenance_counts",
    "provenance_summary",
    "stale_cases",
    "stale_warning",
]

# Strongest evidence first: a live provider's recorded answer, a recording against the emulator,
# the validators computing it now.
PROVENANCES: Final = ("recorded-live", "recorded-emulated", "emulated")


@dataclass(frozen=True, slots=True)
class Cell:
    cases: tuple[CaseResult, ...]

    @property
    def status(self) -> CaseStatus | None:
        if not self.cases:
            return None
        statuses = {c.status for c in self.cases}
        return "error" if "error" in statuses else "fail" if "fail" in statuses else "pass"

    @property
    def text(self) -> str:
        """``✓``, ``✓ 35`` (a sweep), ``✗ 3/35``, ``E 1/35`` or ``·`` (not applicable)."""
        if not self.cases:
            return "·"
        total = len(self.cases)
        bad = sum(1 for c in self.cases if c.status != "pass")
        mark = {"pass": "✓", "fail": "✗", "error": "E"}[self.status or "pass"]
        if bad == 0:
            return mark if total == 1 else f"{mark} {total}"
        return f"{mark} {bad}/{total}" if total > 1 else mark


@dataclass(frozen=True, slots=True)
class Row:
    scenario: str
    title: str
    level: str
    cells: tuple[Cell, ...]

    @property
    def status(self) -> CaseStatus | None:
        statuses = {c.status for c in self.cells if c.status}
        if not statuses:
            return None
        return "error" if "error" in statuses else "fail" if "fail" in statuses else "pass"


def matrix_rows(cases: Sequence[CaseResult], shapes: Sequence[str]) -> list[Row]:
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
        cells = tuple(Cell(tuple(c for c in members if c.shape == s)) for s in shapes)
        rows.append(Row(scenario, members[0].title, members[0].level, cells))
    return rows


def failing_cases(cases: Sequence[CaseResult]) -> list[CaseResult]:
    return [c for c in cases if c.status != "pass"]


def problem_lines(case: CaseResult) -> list[str]:
    """``check_id (level): title: message`` per failing check, or the error reason."""
    if case.outcome == "error":
        return [f"error: {case.reason}"]
    return [
        f"{c.id} ({c.level}, {c.status}): {c.title}: {c.message}"
        for c in case.checks
        if c.status != "pass"
    ]


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
