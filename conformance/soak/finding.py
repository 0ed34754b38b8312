"""A soak failure as a scenario ``ctxconf run --scenarios FILE`` replays, with its history shrunk.

The failing turn's stored session, budget, ledger and knobs make a one-case ``must`` scenario.
:func:`shrink` then removes middle units (whole rings and plain turns; never the system text, the
first user message or the last unit) as long as a *fresh* assembler (``new_session()`` when the
plug-in has one) still fails the same way on that single turn: a delta-debugging pass, halves
first, bounded in attempts. A failure that needs the plug-in's own history from earlier turns
does not reproduce on a fresh assembler; the finding then keeps the whole history and says so.
"""

from __future__ import annotations

import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from conformance.engine import DEFAULT_TIMEOUT
from conformance.events import CaseResult
from conformance.fuzzing import scenario_document, scenario_yaml
from conformance.loading import Plugin
from conformance.scenarios import load_file
from conformance.soak.loop import (
    SoakFailure,
    SoakReport,
    fresh_assembler,
    judge_turn,
    turn_scenario,
)
from conformance.soak.workload import Workload
from reference_impl.errors import CtxconfError
from reference_impl.rings import segment
from reference_impl.transcript import Transcript

__all__ = ["SoakFinding", "finding_document", "make_finding", "shrink", "unshrunk_finding"]

MAX_ATTEMPTS: Final = 60


@dataclass(frozen=True, slots=True)
class SoakFinding:
    """The scenario of a failure: shrunk session, whether it reproduces alone, the YAML."""

    session: Transcript
    reproduces: bool
    """Whether a fresh assembler fails the same way on this single turn."""
    removed_units: int
    document: Mapping[str, Any]
    unshrunk: str | None = None
    """Why the history was not shrunk (the plug-in ended or hung the process), or None."""

    @property
    def text(self) -> str:
        """The scenario file as YAML."""
        return scenario_yaml(self.document)


def _signature(result: CaseResult) -> tuple[str, frozenset[str]]:
    if result.status == "error":
        return "error", frozenset()
    if result.outcome == "refused":
        return "refused", frozenset()
    return result.status, frozenset(c.id for c in result.checks if c.status != "pass")


def _judge(
    plugin: Plugin,
    workload: Workload,
    shape: str,
    session: Transcript,
    *,
    ledger: tuple[Mapping[str, Any], ...],
    timeout: float,
) -> CaseResult:
    scenario = turn_scenario(workload, session, shape, ledger, 0)
    assembler = fresh_assembler(plugin, shape, timeout=timeout)
    result, _ = judge_turn(assembler, scenario, shape, 0, timeout=timeout)
    return result


def _units(session: Transcript) -> list[range]:
    return [s.indices for s in segment(session)]


def _without(session: Transcript, units: Sequence[range], dropped: set[int]) -> Transcript:
    keep = [i for n, unit in enumerate(units) if n not in dropped for i in unit]
    return session.with_messages(session.messages[i].with_id("") for i in keep)


def shrink(
    plugin: Plugin,
    workload: Workload,
    shape: str,
    session: Transcript,
    ledger: tuple[Mapping[str, Any], ...],
    *,
    timeout: float = DEFAULT_TIMEOUT,
) -> tuple[Transcript, bool, int]:
    """The smallest history found that fails like ``session`` (see the module docstring)."""
    wanted = _signature(_judge(plugin, workload, shape, session, ledger=ledger, timeout=timeout))
    if wanted[0] == "pass":
        return session, False, 0
    units = _units(session)
    messages = session.messages
    first_user = next((n for n, u in enumerate(units) if messages[u[0]].role == "user"), 0)
    removable = list(range(first_user + 1, len(units) - 1))
    dropped: set[int] = set()
    attempts = 0
    chunk = max(1, len(removable) // 2)
    while chunk >= 1 and attempts < MAX_ATTEMPTS:
        left = [n for n in removable if n not in dropped]
        progressed = False
        for start in range(0, len(left), chunk):
            if attempts >= MAX_ATTEMPTS:
                break
            trial = dropped | set(left[start : start + chunk])
            candidate = _without(session, units, trial)
            attempts += 1
            try:
                result = _judge(plugin, workload, shape, candidate, ledger=ledger, timeout=timeout)
            except CtxconfError:
                continue
            if _signature(result) == wanted:
                dropped = trial
                progressed = True
        if not progressed:
            chunk //= 2
    return _without(session, units, dropped), True, len(dropped)


def finding_document(
    report: SoakReport,
    failure: SoakFailure,
    session: Transcript,
    *,
    reproduces: bool,
    unshrunk: str | None = None,
) -> dict[str, Any]:
    """The scenario file (format version 1) of a soak failure (``unshrunk``: why the history was
    not shrunk, when shrinking could not run)."""
    workload = report.workload
    outcome = "assembled" if failure.kind == "refused_feasible" else "either"
    command = (
        f"ctxconf soak --impl {report.plugin} --workload {workload.id} --seed {report.seed} "
        f"--turns {report.turns_requested} --shape {report.shape}"
    )
    alone = (
        "A fresh assembler fails the same way on this single turn."
        if reproduces
        else "A fresh assembler does NOT fail on this single turn: the failure needs the "
        "plug-in's own state from earlier turns; replay the soak command instead."
    )
    if unshrunk is not None:
        alone = (
            f"The history is not shrunk ({unshrunk}); whether a fresh assembler fails the same "
            "way on this single turn was not established."
        )
    notes = (
        f"Found by `{command}` at turn {failure.turn} ({failure.kind}). {alone}\n{failure.message}"
    )
    document = scenario_document(
        session,
        scenario_id=f"soak-{workload.id}-{report.seed}-turn-{failure.turn}",
        title=f"soak finding: {workload.title}, turn {failure.turn} ({failure.kind})",
        shape=report.shape,
        budget=workload.budget,
        outcome=outcome,
        notes=notes,
    )
    document["topic"] = "soak finding"
    scenario = document["scenarios"][0]
    scenario["tags"] = ["soak"]
    scenario["model"] = {report.shape: report.model}
    scenario["ledger"] = [dict(e) for e in failure.ledger]
    scenario["config"] = dict(workload.plugin_config())
    return document


def unshrunk_finding(report: SoakReport, why: str) -> SoakFinding | None:
    """The report's failure with its whole history, when shrinking could not run (``why``)."""
    failure = report.failure
    if failure is None or not failure.is_finding or failure.session is None:
        return None
    document = finding_document(report, failure, failure.session, reproduces=False, unshrunk=why)
    return SoakFinding(failure.session, False, 0, document, unshrunk=why)


def make_finding(
    plugin: Plugin, report: SoakReport, *, timeout: float = DEFAULT_TIMEOUT
) -> SoakFinding | None:
    """The shrunk scenario of the report's failure, or None when the run had none."""
    failure = report.failure
    if failure is None or not failure.is_finding or failure.session is None:
        return None
    session, reproduces, removed = failure.session, False, 0
    if failure.kind in {"must", "error", "refused_feasible"}:
        session, reproduces, removed = shrink(
            plugin, report.workload, report.shape, failure.session, failure.ledger, timeout=timeout
        )
    document = finding_document(report, failure, session, reproduces=reproduces)
    return SoakFinding(session, reproduces, removed, document)


def replays(plugin: Plugin, finding: SoakFinding, report: SoakReport) -> bool:
    """Load the written scenario back through the runner's loader and check it fails again."""
    with tempfile.TemporaryDirectory(prefix="ctxconf-soak-") as folder:
        path = Path(folder) / "must" / "finding.yaml"
        path.parent.mkdir()
        path.write_text(finding.text, "utf-8")
        (loaded,) = load_file(path)
    result, _ = judge_turn(fresh_assembler(plugin, report.shape), loaded, report.shape, 0)
    return result.status != "pass"
