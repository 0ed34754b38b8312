"""JUnit XML: one test suite per shape, one test case per case; failures carry the check text."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from conformance.reporting.matrix import problem_lines
from conformance.reporting.record import RunRecord

__all__ = ["render_junit"]


def render_junit(record: RunRecord) -> str:
    suites = ET.Element("testsuites", name=f"ctxconf: {record.header.get('plugin', '?')}")
    for shape in record.shapes:
        cases = [c for c in record.cases if c.shape == shape]
        suite = ET.SubElement(
            suites,
            "testsuite",
            name=shape,
            tests=str(len(cases)),
            failures=str(sum(1 for c in cases if c.status == "fail")),
            errors=str(sum(1 for c in cases if c.status == "error")),
            time=f"{sum(c.seconds for c in cases):.3f}",
        )
        for case in cases:
            dialect = f"/{case.dialect}" if case.dialect else ""
            element = ET.SubElement(
                suite,
                "testcase",
                classname=f"{case.level}.{case.scenario}",
                name=f"{shape}{dialect}@{case.budget}",
                time=f"{case.seconds:.3f}",
            )
            if case.status == "pass":
                continue
            lines = problem_lines(case)
            tag = "error" if case.status == "error" else "failure"
            child = ET.SubElement(element, tag, message=lines[0] if lines else case.status)
            provenance = (case.verdict or {}).get("provenance")
            child.text = "\n".join(lines) + (
                f"\nverdict provenance: {provenance}" if provenance else ""
            )
    ET.indent(suites)
    return (
        '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(suites, encoding="unicode") + "\n"
    )
