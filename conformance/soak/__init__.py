"""Long agent runs: drive any assembler through hundreds of simulated turns and measure them.

``ctxconf soak`` (:mod:`conformance.commands.soak`) is the command; :func:`run_soak` the library
entry point (in-process), :func:`conformance.soak.isolated.run_soak_isolated` the same run in a
supervised child process, as the command runs it. See docs/long-runs.md.
"""

from __future__ import annotations

from conformance.soak.loop import (
    DEFAULT_TURNS,
    SOAK_REPORT_VERSION,
    SoakFailure,
    SoakReport,
    TurnRecord,
    run_soak,
)
from conformance.soak.workload import (
    WORKLOAD_FORMAT_VERSION,
    Workload,
    builtin_workloads,
    load_workload,
    resolve_workload,
)

__all__ = [
    "DEFAULT_TURNS",
    "SOAK_REPORT_VERSION",
    "WORKLOAD_FORMAT_VERSION",
    "SoakFailure",
    "SoakReport",
    "TurnRecord",
    "Workload",
    "builtin_workloads",
    "load_workload",
    "resolve_workload",
    "run_soak",
]
