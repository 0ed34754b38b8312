"""Events the engine emits and reporters consume, and the result of one case.

The JSON-lines report is these events serialized (``header`` = :class:`RunStarted`, ``case`` =
:class:`CaseFinished`, ``footer`` = :class:`RunFinished`); every other format is derived from it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeAlias

from conformance.checks.outcome import StepStatus
from conformance.checks.registry import CheckResult, CheckStatus
from conformance.scenarios import LEVELS, Level

__all__ = [
    "CaseFinished",
    "CaseResult",
    "CaseStarted",
    "CaseStatus",
    "Event",
    "LevelTotals",
    "RunFinished",
    "RunStarted",
    "level_totals",
    "status_at_gate",
    "status_at_level",
]

CaseStatus: TypeAlias = CheckStatus
"""A case passes, fails or errors, as a check does."""


def status_at_level(
    checks: Iterable[CheckResult], level: Level, *, plugin_error: bool = False
) -> CaseStatus | None:
    """A case at one check level, from its check results: ``error`` when a check of that level
    raised, ``fail`` when one failed, ``pass`` when all passed, None when none ran. A plug-in
    error (nothing was judged) is an ``error`` at ``must`` and nothing at the other levels.

    The one reading of a case by level: the exit status (:func:`level_totals`), the JUnit
    report, the pytest items and the baseline comparison all go through it."""
    if plugin_error:
        return "error" if level == "must" else None
    ran = [c for c in checks if c.level == level]
    if not ran:
        return None
    if any(c.status == "error" for c in ran):
        return "error"
    return "fail" if any(c.status == "fail" for c in ran) else "pass"


def status_at_gate(
    checks: Iterable[CheckResult], gate: Iterable[Level], *, plugin_error: bool = False
) -> CaseStatus:
    """A case at a gate (its gated levels, as :data:`~conformance.scenarios.GATE_LEVELS`):
    ``error`` when a gated level is ``error``, else ``fail`` when one is ``fail``, else ``pass``
    (a check of a level the gate does not count, failed or raised, does not fail it)."""
    ran = tuple(checks)
    statuses = {status_at_level(ran, level, plugin_error=plugin_error) for level in gate}
    if "error" in statuses:
        return "error"
    return "fail" if "fail" in statuses else "pass"


@dataclass(frozen=True, slots=True)
class CaseResult:
    """One scenario x shape x dialect x budget run of a plug-in, judged by its checks."""

    index: int
    scenario: str
    title: str
    level: Level
    shape: str
    dialect: str | None
    budget: int
    status: CaseStatus
    outcome: StepStatus
    checks: tuple[CheckResult, ...] = ()
    tags: tuple[str, ...] = ()
    sweep: bool = False
    turns: int = 1
    verdict: Mapping[str, Any] | None = None
    tokens: int | None = None
    counter: str = ""
    reason: str | None = None
    refusal_code: str | None = None
    seconds: float = 0.0
    input: Mapping[str, Any] | None = None
    output: Mapping[str, Any] | None = None
    markup: Mapping[str, Any] | None = None
    """What the report marks on a case that did not pass (:mod:`conformance.case_markup`)."""
    plugin_output: Mapping[str, str] | None = None
    """What the plug-in printed during the case (``stdout``/``stderr``, non-empty ones only)."""

    @property
    def key(self) -> str:
        """``scenario[shape/dialect@budget]``, as :attr:`conformance.engine.Case.key`."""
        dialect = f"/{self.dialect}" if self.dialect else ""
        return f"{self.scenario}[{self.shape}{dialect}@{self.budget}]"

    def level_status(self, level: Level) -> CaseStatus | None:
        """This case at one check level: None when no check of that level ran
        (:func:`status_at_level`)."""
        return status_at_level(self.checks, level, plugin_error=self.outcome == "error")

    def gate_status(self, gate: Iterable[Level]) -> CaseStatus:
        """This case at a gate (:func:`status_at_gate`): what the exit status reads."""
        return status_at_gate(self.checks, gate, plugin_error=self.outcome == "error")

    def to_dict(self) -> dict[str, Any]:
        """The case line of the JSON-lines report."""
        out: dict[str, Any] = {
            "type": "case",
            "index": self.index,
            "scenario": self.scenario,
            "title": self.title,
            "level": self.level,
            "tags": list(self.tags),
            "shape": self.shape,
            "dialect": self.dialect,
            "budget": self.budget,
            "sweep": self.sweep,
            "turns": self.turns,
            "status": self.status,
            "outcome": self.outcome,
            "checks": [c.to_dict() for c in self.checks],
            "verdict": dict(self.verdict) if self.verdict is not None else None,
            "tokens": self.tokens,
            "counter": self.counter,
            "reason": self.reason,
            "refusal_code": self.refusal_code,
            "seconds": round(self.seconds, 6),
        }
        for optional in ("input", "output", "markup"):  # written only when the case kept them
            value = getattr(self, optional)
            if value is not None:
                out[optional] = value
        if self.plugin_output:
            out["plugin_output"] = dict(self.plugin_output)
        return out

    @staticmethod
    def from_dict(data: Mapping[str, Any]) -> CaseResult:
        """Read a case line of the JSON-lines report back."""
        return CaseResult(
            index=int(data["index"]),
            scenario=str(data["scenario"]),
            title=str(data.get("title", "")),
            level=data["level"],
            shape=str(data["shape"]),
            dialect=data.get("dialect"),
            budget=int(data["budget"]),
            status=data["status"],
            outcome=data["outcome"],
            checks=tuple(
                CheckResult(
                    c["id"], c["level"], c["status"], c.get("title", ""), c.get("message", "")
                )
                for c in data.get("checks", ())
            ),
            tags=tuple(data.get("tags", ())),
            sweep=bool(data.get("sweep", False)),
            turns=int(data.get("turns", 1)),
            verdict=data.get("verdict"),
            tokens=data.get("tokens"),
            counter=str(data.get("counter", "")),
            reason=data.get("reason"),
            refusal_code=data.get("refusal_code"),
            seconds=float(data.get("seconds", 0.0)),
            input=data.get("input"),
            output=data.get("output"),
            markup=data.get("markup"),
            plugin_output=data.get("plugin_output"),
        )


@dataclass(frozen=True, slots=True)
class LevelTotals:
    """Cases passed, failed and errored at one check level."""

    passed: int = 0
    failed: int = 0
    errors: int = 0

    @property
    def ok(self) -> bool:
        """No case failed or errored at this level."""
        return self.failed == 0 and self.errors == 0

    def to_dict(self) -> dict[str, int]:
        """``{pass, fail, error}`` as the report footer stores them."""
        return {"pass": self.passed, "fail": self.failed, "error": self.errors}


def level_totals(results: Iterable[CaseResult]) -> dict[Level, LevelTotals]:
    """Per level, how many cases passed, failed or errored (a case counts where it has checks)."""
    counts: dict[Level, list[int]] = {level: [0, 0, 0] for level in LEVELS}
    for result in results:
        for level in LEVELS:
            status = result.level_status(level)
            if status is not None:
                counts[level][("pass", "fail", "error").index(status)] += 1
    return {level: LevelTotals(*c) for level, c in counts.items()}


@dataclass(frozen=True, slots=True)
class RunStarted:
    """The first event of a run: plug-in, shapes, level, plan size and versions (the report header)."""

    plugin: str
    shapes: tuple[str, ...]
    level: Level
    case_count: int
    scenario_count: int
    corpus: str
    started: str
    ctxconf_version: str
    protocol_version: int
    timeout: float
    jobs: int
    strict: bool = False


@dataclass(frozen=True, slots=True)
class CaseStarted:
    """A case is handed to a worker and starts (``index`` in the plan, its ``key``).

    Its :class:`CaseFinished` comes later; with ``jobs > 1`` other cases may start in between
    (results still come in plan order), and a case the run stopped before it finished has
    started but never finishes."""

    index: int
    key: str


@dataclass(frozen=True, slots=True)
class CaseFinished:
    """A case's result."""

    result: CaseResult


@dataclass(frozen=True, slots=True)
class RunFinished:
    """The last event (the footer): totals, statuses, time, what went wrong with the plug-in's
    processes, why the run stopped early if it did, the gate and the exit status the process
    really returns."""

    totals: Mapping[Level, LevelTotals]
    statuses: Mapping[str, int]
    seconds: float
    hung_calls: int = 0
    """Plug-in calls that outlived the timeout (their worker was killed and replaced)."""
    crashed_workers: int = 0
    """Worker processes the plug-in ended (os._exit, a signal, the OOM killer)."""
    exit_status: int = 0
    gate: str = "must"
    """What decided the exit status: ``must``, ``must+should`` (``--strict``), ``baseline``,
    ``stopped``, ``interrupted`` or ``no cases`` (nothing was judged: exit status 2)."""
    stopped: str | None = None
    """Why the run ended before its last case (a signal, a run-level budget); None otherwise."""
    interrupted: bool = False
    """The run was stopped by SIGINT or SIGTERM."""
    not_run: int = 0
    """Planned cases that were not run because the run stopped early."""
    extra: Mapping[str, Any] = field(default_factory=dict)


Event: TypeAlias = "RunStarted | CaseStarted | CaseFinished | RunFinished"
