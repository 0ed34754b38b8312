"""JUnit XML: one test suite per shape, one test case per case; failures carry the check text.

A case is a ``<failure>`` (or an ``<error>``) when it fails the run's gate, as the exit status
counts it: a failed check at a gated level (``must``; ``should`` too with ``--strict``). A case
that failed only checks below the gate is ``<skipped type="ctxconf.below-gate">`` with the same
text, as pytest writes an expected failure: a test-report step that fails on failures then agrees
with the exit status instead of going red on a run that passed.

A run cut short (no footer line, rendered with ``ctxconf report --partial``) gets one more suite,
``ctxconf``, whose one test case is an ``<error>`` saying what is missing: a test-report step
must not show the cases recorded as a complete, passing run.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Mapping
from typing import Any

from conformance.events import CaseResult
from conformance.reporting.matrix import gate_of, problem_lines, provenance_counts, verdict_line
from conformance.reporting.record import RunRecord
from conformance.scenarios import Level

__all__ = ["render_junit"]


def _verdict_properties(element: ET.Element, verdict: Mapping[str, Any] | None) -> None:
    """``verdict_provenance`` (and the rule with its evidence class, the cassette, and a
    stale-cassette message) per test case."""
    if not verdict:
        return
    properties = ET.SubElement(element, "properties")
    named = {
        "verdict": verdict.get("verdict"),
        "verdict_provenance": verdict.get("provenance"),
        "verdict_rule": verdict.get("rule"),
        "verdict_evidence": verdict.get("evidence") if verdict.get("rule") else None,
        "verdict_cassette": verdict.get("cassette"),
        "stale_cassette": (verdict.get("stale_cassette") or {}).get("message"),
    }
    for name, value in named.items():
        if value:
            ET.SubElement(properties, "property", name=name, value=str(value))


def _below_gate(case: CaseResult, gate: tuple[Level, ...]) -> bool:
    """Whether ``case`` did not pass only through checks of levels ``gate`` does not count, as
    the exit status reads a case (:meth:`CaseResult.gate_status`): failed ones, or one that
    raised (the case's status is then ``error``); a plug-in error is at the gate."""
    return case.status != "pass" and case.gate_status(gate) == "pass"


def _unfinished_suite(suites: ET.Element, record: RunRecord) -> None:
    """The ``ctxconf`` suite of a run that did not run every case (cut short, stopped,
    interrupted): one test case, an error saying so (``RunRecord.stopped_note``), so that a
    test-report step does not read the cases recorded as a complete, passing run."""
    note = record.stopped_note
    if not note:
        return
    kind = "cut-short" if record.cut_short else "stopped"
    suite = ET.SubElement(
        suites, "testsuite", name="ctxconf", tests="1", failures="0", errors="1", skipped="0"
    )
    case = ET.SubElement(suite, "testcase", classname="ctxconf.run", name="complete")
    message = note[0].lower() + note[1:]
    error = ET.SubElement(case, "error", message=message, type=f"ctxconf.{kind}")
    error.text = f"{note}. Re-run `ctxconf run` for a complete report."


def render_junit(record: RunRecord) -> str:
    """The run as JUnit XML: a suite per shape, a test case per case, verdict provenance as
    properties."""
    suites = ET.Element("testsuites", name=f"ctxconf: {record.header.get('plugin', '?')}")
    gate = gate_of(record.header)
    for shape in record.shapes:
        cases = [c for c in record.cases if c.shape == shape]
        below = {c.key for c in cases if _below_gate(c, gate)}
        suite = ET.SubElement(
            suites,
            "testsuite",
            name=shape,
            tests=str(len(cases)),
            failures=str(sum(1 for c in cases if c.status == "fail" and c.key not in below)),
            errors=str(sum(1 for c in cases if c.status == "error" and c.key not in below)),
            skipped=str(len(below)),
            time=f"{sum(c.seconds for c in cases):.3f}",
        )
        counts = ET.SubElement(suite, "properties")
        for source, count in provenance_counts(cases).items():
            ET.SubElement(counts, "property", name=f"verdicts.{source}", value=str(count))
        for case in cases:
            dialect = f"/{case.dialect}" if case.dialect else ""
            element = ET.SubElement(
                suite,
                "testcase",
                classname=f"{case.level}.{case.scenario}",
                name=f"{shape}{dialect}@{case.budget}",
                time=f"{case.seconds:.3f}",
            )
            _verdict_properties(element, case.verdict)
            if case.status == "pass":
                continue
            lines = problem_lines(case)
            below_gate = case.key in below
            tag = "skipped" if below_gate else "error" if case.status == "error" else "failure"
            child = ET.SubElement(element, tag, message=lines[0] if lines else case.status)
            if below_gate:
                child.set("type", "ctxconf.below-gate")
            child.text = "\n".join((*lines, verdict_line(case.verdict)))
    _unfinished_suite(suites, record)
    ET.indent(suites)
    return (
        '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(suites, encoding="unicode") + "\n"
    )
