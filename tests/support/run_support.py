"""The cases of a run, judged in this process: what each worker of ``run_events`` does, without
the worker. For the many tests that judge well-behaved miniatures over the whole corpus (a
forked, supervised worker per run costs them about a third more CPU); a test of this module
holds it to ``run_events``' results, and the tests of crashing, hanging or exiting plug-ins go
through ``run_events`` itself."""

from __future__ import annotations

from collections.abc import Sequence

from conformance.checks import checks_for
from conformance.engine import load_library, plan_cases, run_case, warm_up
from conformance.events import CaseResult
from conformance.loading import Plugin
from conformance.scenarios import Scenario


def run_in_process(
    plugin: Plugin, scenarios: Sequence[Scenario], *, timeout: float = 30.0
) -> tuple[CaseResult, ...]:
    """Every case of ``plugin`` over ``scenarios`` (all its shapes, every check level), in plan
    order, as ``run_events`` finishes them."""
    cases = plan_cases(scenarios, plugin.shapes, None, assemblers=plugin.assemblers)
    specs = {s.id: checks_for(s, level="may") for s in scenarios}
    library = load_library()
    warm_up(cases, library)
    return tuple(
        run_case(
            case, plugin.assemblers[case.shape], specs[case.scenario.id], timeout, library=library
        )
        for case in cases
    )
