"""Checks on the scenario corpus itself (beyond its schema), for ``ctxconf scenarios validate``."""

from __future__ import annotations

from collections.abc import Sequence
from collections.abc import Set as AbstractSet
from pathlib import Path

import jsonschema

from conformance.engine import assembly_request, plan_cases, reference_counter, render_input
from conformance.scenarios import Scenario
from conformance.traffic.verdicts import default_cassette_root
from reference_impl.errors import CtxconfError
from reference_impl.ledger import Ledger
from reference_impl.rings import validate as pairing_violations
from reference_impl.shapes import get_shape
from reference_impl.transcript import SHAPE_NAMES

__all__ = ["case_problems", "corpus_problems", "recording_problems"]


def _cassette_root(given: Path | None) -> Path:
    if given is not None:
        return given
    return default_cassette_root()


def corpus_problems(
    scenarios: Sequence[Scenario],
    *,
    known_checks: AbstractSet[str],
    cassette_root: Path | None = None,
) -> list[str]:
    """``FILE: scenario-id [shape]: what is wrong`` for every problem found (empty when clean)."""
    problems: list[str] = []
    root = _cassette_root(cassette_root)
    for s in scenarios:
        problems.extend(
            f"{s.source}: {s.id}: unknown check {check_id!r} in expect"
            for check_id in (*s.expect.checks, *s.expect.skip_checks)
            if check_id not in known_checks
        )
        problems.extend(f"{s.source}: {s.id}: {p}" for p in _schema_problems(s))
        for shape in s.shapes:
            problems.extend(f"{s.source}: {s.id} [{shape}]: {p}" for p in _shape_problems(s, shape))
            if s.cassette and not any((root / shape).glob(f"{s.id}*.yaml")):
                problems.append(
                    f"{s.source}: {s.id} [{shape}]: declares cassette: true but "
                    f"{root / shape}/{s.id}*.yaml is missing; record it with "
                    f"`ctxconf record --shape {shape}`"
                )
    problems.extend(case_problems(scenarios))
    return problems


def case_problems(scenarios: Sequence[Scenario]) -> list[str]:
    """Each case planned and each turn's request built by the code ``ctxconf run`` uses
    (:func:`conformance.engine.plan_cases`, :func:`conformance.engine.assembly_request`), so a
    scenario that would error in every case of a run is reported here; one line per scenario
    and shape."""
    problems: list[str] = []
    reported: set[tuple[str, str]] = set()
    for case in plan_cases(scenarios, SHAPE_NAMES):
        key = (case.scenario.id, case.shape)
        if key in reported:
            continue
        try:
            for turn, session in enumerate(case.scenario.sessions()):
                request = assembly_request(case, turn, session)
                get_shape(case.shape).parse_request(request.body)
                Ledger.from_list(request.ledger)
        except CtxconfError as exc:
            reported.add(key)
            where = f" at {exc.where}" if exc.where else ""
            problems.append(
                f"{case.scenario.source}: {case.scenario.id} [{case.shape}]: every case would "
                f"error{where}: {exc.message}"
            )
    return problems


def recording_problems(
    scenarios: Sequence[Scenario], cassette_root: Path | None = None
) -> list[str]:
    """Every scenario x shape x dialect whose cassette is missing, or whose reference-assembler
    requests have a skeleton no cassette recorded (stale since the assembler or the scenario
    changed); each line says how to re-record."""
    # Imported here: the round-trip machinery loads the SDKs, which the other checks do not need.
    from conformance.traffic.roundtrip_cases import scenario_cases, unrecorded  # noqa: PLC0415
    from conformance.traffic.verdicts import load_library  # noqa: PLC0415

    library = load_library(_cassette_root(cassette_root))
    cases = [case for shape in SHAPE_NAMES for case in scenario_cases(scenarios, shape)]
    return unrecorded(cases, library)


def _schema_problems(scenario: Scenario) -> list[str]:
    """Tools whose parameters are no JSON Schema (``"required": [["a"]]``): a provider refuses
    such a tool, so no case of the scenario says anything about context assembly. Checked
    against the schema's own ``$schema`` dialect (the latest JSON Schema draft by default)."""
    found: list[str] = []
    for k, tool in enumerate(scenario.tools):
        try:
            schema = tool.parameters_value()
        except CtxconfError as exc:
            found.append(f"tools[{k}] ({tool.name}): {exc.message}")
            continue
        try:
            validator = jsonschema.validators.validator_for(schema, jsonschema.Draft202012Validator)
            validator.check_schema(schema)
        except jsonschema.SchemaError as exc:
            path = "".join(f"[{p!r}]" if isinstance(p, str) else f"[{p}]" for p in exc.path)
            found.append(
                f"tools[{k}] ({tool.name}): parameters{path} is not a valid JSON Schema: "
                f"{exc.message}"
            )
    return found


def _shape_problems(scenario: Scenario, shape: str) -> list[str]:
    adapter = get_shape(shape)
    try:
        sessions = [
            adapter.parse_request(render_input(scenario, t, shape)) for t in scenario.sessions()
        ]
    except CtxconfError as exc:
        return [f"cannot be rendered: {exc}; drop the shape from `shapes`"]
    if scenario.expect.outcome != "refused":
        return []
    session = sessions[-1]
    if pairing_violations(session):
        return []
    counter = reference_counter(shape, scenario.model_for(shape))
    total = counter.count(session).total
    smallest = min(scenario.budget.for_shape(shape))
    if total > smallest:
        return []  # over budget: whether the protected part fits is the assembler's to judge
    return [
        (
            f"expects refusal but the session is valid and fits ({total} <= {smallest} tokens); "
            f"break it or lower the budget"
        )
    ]
