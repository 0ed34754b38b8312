"""The documented home of ``audit_lines`` and ``audit_paths`` before the traffic package: the
audit lives in :mod:`conformance.traffic.audit`; this path keeps working for code that imports it."""

from conformance.traffic.audit import (
    AuditRow,
    audit_file,
    audit_interaction,
    audit_lines,
    audit_paths,
    error_message,
    prepare,
    recording_files,
)

__all__ = [
    "AuditRow",
    "audit_file",
    "audit_interaction",
    "audit_lines",
    "audit_paths",
    "error_message",
    "prepare",
    "recording_files",
]
