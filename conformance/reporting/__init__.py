"""Reporters: the JSON-lines record (source of truth) and the formats derived from it."""

from __future__ import annotations

from conformance.reporting.html import render_html
from conformance.reporting.junit import render_junit
from conformance.reporting.markdown import render_markdown
from conformance.reporting.record import (
    REPORT_FORMAT,
    REPORT_VERSION,
    JsonLinesWriter,
    RunRecord,
    read_jsonl,
    record_from_events,
)
from conformance.reporting.terminal import render_terminal, terminal_renderable

__all__ = [
    "REPORT_FORMAT",
    "REPORT_VERSION",
    "JsonLinesWriter",
    "RunRecord",
    "read_jsonl",
    "record_from_events",
    "render_html",
    "render_junit",
    "render_markdown",
    "render_terminal",
    "terminal_renderable",
]
