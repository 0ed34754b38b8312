"""The scenario x shape matrix that every human-readable format shows."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from conformance.events import CaseResult, CaseStatus

__all__ = ["Cell", "Row", "matrix_rows"]


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
