"""Provider rules proved end to end through a run.

Each broken plug-in is the reference assembler with one defect added to what it returns; the
case must fail ``provider_valid`` (must) with that rule, while the reference passes.
A19/A20: Anthropic blank text blocks; A26: Anthropic's required ``max_tokens``; B14: a blank
Converse text block; G11: a Gemini content without parts; G6: the current turn's
``thoughtSignature`` (reasoning-gemini-signature-current-turn).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from typing import Any

import pytest

from conformance.checks import checks_for
from conformance.engine import plan_cases, run_case
from conformance.protocol import AssemblyRequest
from conformance.providers.validation import validate_request
from conformance.reference_plugin import ReferenceAssembler
from conformance.scenarios import load_corpus
from reference_impl.transcript import SHAPE_NAMES

CORPUS = {s.id: s for s in load_corpus()}
Edit = Callable[[dict[str, Any]], None]


class _Broken:
    """The reference assembler, then one edit of the body it returns."""

    def __init__(self, shape: str, edit: Edit) -> None:
        self.shape = shape
        self.reference = ReferenceAssembler(shape)
        self.edit = edit

    def assemble(self, request: AssemblyRequest) -> Mapping[str, Any]:
        body = copy.deepcopy(dict(self.reference.assemble(request)))
        self.edit(body)
        return body


def _drop_signatures_of_last_call(body: dict[str, Any]) -> None:
    for content in reversed(body["contents"]):
        calls = [p for p in content["parts"] if "functionCall" in p]
        if calls:
            for part in calls:
                part.pop("thoughtSignature", None)
            return


def _empty_text_block(body: dict[str, Any]) -> None:
    body["messages"][0]["content"].append({"type": "text", "text": ""})


def _blank_text_block(body: dict[str, Any]) -> None:
    body["messages"][0]["content"].append({"type": "text", "text": " \n"})


def _no_max_tokens(body: dict[str, Any]) -> None:
    del body["max_tokens"]


def _empty_converse_text(body: dict[str, Any]) -> None:
    body["messages"][0]["content"].insert(0, {"text": ""})


def _drop_reasoning_of_last_use(body: dict[str, Any]) -> None:
    for message in reversed(body["messages"]):
        if any("toolUse" in block for block in message["content"]):
            message["content"] = [b for b in message["content"] if "reasoningContent" not in b]
            return


def _empty_gemini_parts(body: dict[str, Any]) -> None:
    body["contents"].insert(1, {"role": "model", "parts": []})


@pytest.mark.parametrize(
    ("scenario_id", "shape", "edit", "rule"),
    [
        ("reasoning-gemini-signature-current-turn", "gemini", _drop_signatures_of_last_call, "G6"),
        ("reasoning-gemini-parallel-current-turn", "gemini", _drop_signatures_of_last_call, "G6"),
        ("single-tool", "anthropic-messages", _empty_text_block, "A19"),
        ("single-tool", "anthropic-messages", _blank_text_block, "A20"),
        ("single-tool", "anthropic-messages", _no_max_tokens, "A26"),
        ("single-tool", "bedrock-converse", _empty_converse_text, "B14"),
        ("single-tool", "gemini", _empty_gemini_parts, "G11"),
        ("reasoning-bedrock-current-turn", "bedrock-converse", _drop_reasoning_of_last_use, "B10"),
    ],
)
def test_a_broken_variant_fails_must_with_the_new_rule(
    scenario_id: str, shape: str, edit: Edit, rule: str
) -> None:
    scenario = CORPUS[scenario_id]
    case = next(c for c in plan_cases([scenario], SHAPE_NAMES) if c.shape == shape)
    specs = checks_for(scenario, level="must")
    good = run_case(case, ReferenceAssembler(shape), specs, 10.0)
    assert good.status == "pass", good.reason
    bad = run_case(case, _Broken(shape, edit), specs, 10.0)
    failed = {c.id: c for c in bad.checks if c.status == "fail"}
    assert "provider_valid" in failed, bad.checks
    said = f"{failed['provider_valid'].title} {failed['provider_valid'].message}"
    assert f"rule {rule}" in said or rule in said, said
    # Judged by the validators now, never passed off as a recorded answer (a cassette of the
    # reference's request has the same skeleton except for what the edit broke).
    assert "provenance emulated" in said, said


def test_the_anthropic_input_carries_max_tokens_unless_the_scenario_sets_it() -> None:
    single = CORPUS["single-tool"]
    case = next(c for c in plan_cases([single], ["anthropic-messages"]))
    from conformance.engine import assembly_request

    assert assembly_request(case, 0, single.session).body["max_tokens"] == 1024
    thinking = CORPUS["reasoning-anthropic-thinking"]
    case = next(c for c in plan_cases([thinking], ["anthropic-messages"]))
    assert assembly_request(case, 0, thinking.session).body["max_tokens"] == 4096


def test_the_current_turn_rule_ignores_a_signature_dropped_before_the_last_user_text() -> None:
    """G6's scope: only calls after the last user text (an older turn's call may lose it)."""
    body = {
        "contents": [
            {"role": "user", "parts": [{"text": "go"}]},
            {"role": "model", "parts": [{"functionCall": {"name": "f", "args": {}}}]},
            {"role": "user", "parts": [{"functionResponse": {"name": "f", "response": {}}}]},
            {"role": "user", "parts": [{"text": "next"}]},
        ]
    }
    assert validate_request(body, "gemini", profile="gemini-thinking").accepted
    current = {"contents": body["contents"][:3]}
    assert validate_request(current, "gemini", profile="gemini-thinking").rule == "G6"
