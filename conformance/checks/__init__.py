"""Checks by level. Importing this package registers every built-in check.

>>> from conformance.checks import REGISTRY
>>> REGISTRY["provider_valid"].level
'must'
"""

from __future__ import annotations

from conformance.checks import may, must, should  # noqa: F401 - imported to register
from conformance.checks.outcome import CaseOutcome, TurnOutcome
from conformance.checks.registry import (
    REGISTRY,
    CheckResult,
    CheckSpec,
    Failure,
    check,
    checks_for,
    run_checks,
)

__all__ = [
    "REGISTRY",
    "CaseOutcome",
    "CheckResult",
    "CheckSpec",
    "Failure",
    "TurnOutcome",
    "check",
    "checks_for",
    "run_checks",
]
