"""Every input body the engine hands a plug-in is valid for its target.

The protocol promises the session "exactly as the plug-in would send it": a plug-in that returns a
session that already fits unchanged must not fail ``provider_valid``. Each case's input (every
scenario x shape x dialect x turn; the budget does not change the input) is judged by the
validators of the profile the case is judged with (the model's profile, as ``judge`` does). A
scenario that wants a broken input says so (``expect.input: invalid``) and expects a refusal.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from conformance.engine import Case, assembly_request, plan_cases, run_case
from conformance.protocol import AssemblyRequest
from conformance.providers.catalog import profile_for_model
from conformance.providers.validation import lint_request
from conformance.scenarios import load_corpus
from reference_impl.rings import validate as pairing_violations
from reference_impl.transcript import SHAPE_NAMES

CORPUS = load_corpus()


def _input_cases() -> list[Case]:
    seen: set[tuple[str, str, str | None]] = set()
    out: list[Case] = []
    for case in plan_cases(CORPUS, SHAPE_NAMES):
        key = (case.scenario.id, case.shape, case.dialect)
        if key not in seen:
            seen.add(key)
            out.append(case)
    return out


CASES = _input_cases()


def _rejections(case: Case) -> list[tuple[int, str]]:
    profile = profile_for_model(case.shape, case.dialect, case.scenario.model_for(case.shape)).id
    found: list[tuple[int, str]] = []
    for turn, session in enumerate(case.scenario.sessions()):
        body = assembly_request(case, turn, session).body
        verdicts = lint_request(body, case.shape, dialect=case.dialect, profile=profile)
        found.extend((turn, f"{v.rule}: {v.error}") for v in verdicts if not v.accepted)
    return found


def _name(case: Case) -> str:
    dialect = f"/{case.dialect}" if case.dialect else ""
    return f"{case.scenario.id}[{case.shape}{dialect}]"


def test_the_corpus_has_cases_of_every_shape_and_some_dialects() -> None:
    shapes = {c.shape for c in CASES}
    assert shapes == set(SHAPE_NAMES)
    assert {"ollama", "mistral", "deepseek"} <= {c.dialect for c in CASES}


@pytest.mark.parametrize(
    "case", [c for c in CASES if c.scenario.expect.input == "valid"], ids=_name
)
def test_a_valid_scenario_s_input_is_accepted_by_its_target(case: Case) -> None:
    assert _rejections(case) == []


@pytest.mark.parametrize(
    "case", [c for c in CASES if c.scenario.expect.input == "invalid"], ids=_name
)
def test_an_invalid_input_is_declared_broken_and_expects_a_refusal(case: Case) -> None:
    """Broken on purpose: by the target's rules or by the pairing contract (a duplicate call id
    is ambiguous in every shape, whether or not that provider says so)."""
    assert case.scenario.expect.outcome == "refused"
    broken_by_pairing = any(pairing_violations(s) for s in case.scenario.sessions())
    assert _rejections(case) or broken_by_pairing


class _PassThrough:
    """Returns the session unchanged: valid wherever the session fits."""

    shape = "openai-chat"

    def assemble(self, request: AssemblyRequest) -> Mapping[str, Any]:
        return dict(request.body)


@pytest.mark.parametrize(
    ("scenario_id", "shape", "dialect"),
    [
        ("single-tool", "bedrock-converse", None),  # B3: results + user text are one turn
        ("assistant-text-then-call", "gemini", None),  # G1: text + functionCall are one turn
        ("ollama-no-null-content", "openai-chat", "ollama"),  # OL2: "" for content null
    ],
)
def test_returning_the_session_unchanged_is_provider_valid(
    scenario_id: str, shape: str, dialect: str | None
) -> None:
    scenario = next(s for s in CORPUS if s.id == scenario_id)
    case = next(
        c for c in plan_cases([scenario], SHAPE_NAMES) if c.shape == shape and c.dialect == dialect
    )
    result = run_case(case, _PassThrough(), [], 10.0)
    assert result.outcome == "assembled", result.reason
    assert result.verdict is not None
    assert result.verdict["verdict"] == "accept", result.verdict
