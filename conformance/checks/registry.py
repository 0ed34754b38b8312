"""The check registry: small pure functions over (scenario, outcome), with an id and a level.

A check passes by returning and fails by raising :class:`Failure`, whose title and message name the
offending message indices and ids. Any other exception inside a check is caught by
:func:`run_checks` and becomes an ``error`` result for that check only; the run goes on.

``default=True`` checks run on every case (unless a scenario lists them under
``expect.skip_checks``); the others run only where a scenario lists them in ``expect.checks``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Literal, TypeAlias

from conformance.checks.outcome import CaseOutcome
from conformance.scenarios import LEVELS, Level, Scenario

__all__ = [
    "REGISTRY",
    "CheckFunction",
    "CheckResult",
    "CheckSpec",
    "CheckStatus",
    "Failure",
    "check",
    "checks_for",
    "run_checks",
]

CheckFunction: TypeAlias = Callable[[Scenario, CaseOutcome], None]
CheckStatus: TypeAlias = Literal["pass", "fail", "error"]


class Failure(AssertionError):  # noqa: N818 - schemathesis' name; a failed check is not an error
    """A check failed: ``title`` is one line, ``message`` says where (indices, ids) and why."""

    def __init__(self, title: str, message: str) -> None:
        super().__init__(f"{title}: {message}")
        self.title = title
        self.message = message


@dataclass(frozen=True, slots=True)
class CheckSpec:
    """A registered check: id, level, function, whether it runs by default, and its title."""

    id: str
    level: Level
    function: CheckFunction
    default: bool
    title: str


@dataclass(frozen=True, slots=True)
class CheckResult:
    """The result of one check on one case: ``pass``, or ``fail``/``error`` with title and message."""

    id: str
    level: Level
    status: CheckStatus
    title: str = ""
    message: str = ""

    def to_dict(self) -> dict[str, str]:
        """The result as the JSON-lines report stores it (title and message only when not passed)."""
        out = {"id": self.id, "level": self.level, "status": self.status}
        if self.status != "pass":
            out |= {"title": self.title, "message": self.message}
        return out


REGISTRY: dict[str, CheckSpec] = {}


def check(
    *,
    id: str,  # noqa: A002 - `id` is the public keyword of @check
    level: Level,
    default: bool = True,
) -> Callable[[CheckFunction], CheckFunction]:
    """Register ``function`` under ``id`` at ``level``; the docstring's first line is its title."""
    if level not in LEVELS:
        raise ValueError(f"level {level!r} is not one of {', '.join(LEVELS)}")

    def register(function: CheckFunction) -> CheckFunction:
        if id in REGISTRY:
            raise ValueError(f"check id {id!r} is registered twice")
        title = (function.__doc__ or id).strip().splitlines()[0]
        REGISTRY[id] = CheckSpec(id, level, function, default, title)
        return function

    return register


def checks_for(scenario: Scenario, *, level: Level = "may") -> tuple[CheckSpec, ...]:
    """The checks a scenario runs, up to ``level``, in registry order."""
    top = LEVELS.index(level)
    chosen = [
        spec
        for spec in REGISTRY.values()
        if LEVELS.index(spec.level) <= top
        and spec.id not in scenario.expect.skip_checks
        and (spec.default or spec.id in scenario.expect.checks)
    ]
    return tuple(chosen)


def run_checks(
    scenario: Scenario, outcome: CaseOutcome, specs: Iterable[CheckSpec]
) -> list[CheckResult]:
    """Run ``specs`` in order; a failure or a crash of one check never stops the others."""
    results: list[CheckResult] = []
    for spec in specs:
        try:
            spec.function(scenario, outcome)
        except Failure as failure:  # noqa: PERF203 - one try per check is the point
            results.append(CheckResult(spec.id, spec.level, "fail", failure.title, failure.message))
        except Exception as exc:  # noqa: BLE001 - a crashing check is an error result, not a stopped run
            results.append(
                CheckResult(
                    spec.id,
                    spec.level,
                    "error",
                    "the check itself crashed",
                    f"{type(exc).__name__}: {exc}",
                )
            )
        else:
            results.append(CheckResult(spec.id, spec.level, "pass"))
    return results
