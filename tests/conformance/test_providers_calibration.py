"""Calibration against public evidence: our verdicts vs what providers answered.

Every request in ``../shared/recordings`` is audited. A recorded 2xx must be accepted. A recorded
4xx whose message matches a catalogued rule's template must be rejected with the same error type
and a message matching that template. Any other recorded 4xx (invalid model, credentials, quota,
rate limits) is outside context assembly: it is printed as out of scope and never counted as
agreement.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from paths import RECORDINGS

from conformance.providers.catalog import Rule, load_catalog, message_pattern
from conformance.traffic.audit import AuditRow, audit_interaction
from conformance.traffic.reading import RecordedInteraction, iter_recordings

pytestmark = pytest.mark.recordings


def _require_recordings() -> Path:
    if not RECORDINGS.is_dir():
        pytest.skip(f"{RECORDINGS} is absent: ../shared/recordings holds the public evidence")
    return RECORDINGS


def _error_parts(
    shape: str, body: object, headers: Mapping[str, tuple[str, ...]]
) -> tuple[str, str]:
    """(error type, message) of a recorded error body, per provider envelope."""
    data: Mapping[str, Any] = body if isinstance(body, Mapping) else {}
    if shape == "bedrock-converse":
        kind = (headers.get("x-amzn-errortype") or ("ValidationException",))[0].split(":")[0]
        return kind, str(data.get("message", ""))
    error = data.get("error", {})
    if not isinstance(error, Mapping):
        return "", str(error)
    error_kind = error.get("status") if shape == "gemini" else error.get("type")
    return str(error_kind or ""), str(error.get("message", ""))


def _param_code(body: object) -> tuple[object, object]:
    error = body.get("error") if isinstance(body, Mapping) else None
    return (error.get("param"), error.get("code")) if isinstance(error, Mapping) else (None, None)


def _normal(text: str) -> str:
    return " ".join(text.split())


@dataclass(frozen=True)
class Observation:
    interaction: RecordedInteraction
    row: AuditRow


def _observations() -> Iterator[Observation]:
    for interaction in iter_recordings(_require_recordings()):
        row = audit_interaction(interaction)
        if row is not None and interaction.status is not None:
            yield Observation(interaction, row)


def _catalogued_rule(shape: str, message: str) -> Rule | None:
    """The rule whose template the recorded message matches, if any (searched in that shape)."""
    for rule in load_catalog().rules.values():
        judged = rule.judgeable and rule.status >= 400  # envelopes (OR2, LL1) are not causes
        if (
            judged
            and shape in rule.shapes
            and rule.message
            and message_pattern(rule).fullmatch(message)
        ):
            return rule
    return None


def test_recorded_successes_are_accepted() -> None:
    successes = [o for o in _observations() if 200 <= (o.interaction.status or 0) < 300]
    assert successes, "the recordings hold no successful request"
    rejected = [
        f"{o.interaction}: {o.row.verdict.rule} {o.row.verdict.error}"
        for o in successes
        if not o.row.verdict.accepted
    ]
    assert rejected == []


def test_recorded_rejections_match_the_catalogued_rule() -> None:
    in_scope = 0
    out_of_scope: list[str] = []
    disagreements: list[str] = []
    for o in _observations():
        status = o.interaction.status or 0
        if not 400 <= status < 500:
            continue
        kind, message = _error_parts(
            o.row.shape, o.interaction.response_body, o.interaction.response_headers
        )
        rule = _catalogued_rule(o.row.shape, _normal(message))
        if rule is None:
            out_of_scope.append(f"{o.interaction} -> {status} {kind}: {message[:100]}")
            continue
        in_scope += 1
        verdict = o.row.verdict
        our_kind, our_message = _error_parts(o.row.shape, verdict.error, {})
        if verdict.accepted or verdict.status != status or our_kind != kind:
            disagreements.append(f"{o.interaction}: provider {status} {kind}, we {verdict}")
        elif not message_pattern(rule).fullmatch(_normal(our_message)):
            disagreements.append(f"{o.interaction}: our text {our_message!r} misses {rule.id}")
        elif o.row.shape.startswith("openai") and _param_code(verdict.error) != _param_code(
            o.interaction.response_body
        ):
            disagreements.append(f"{o.interaction}: param/code differ: {verdict.error}")
    print(f"\ncalibration: {in_scope} recorded rejections in scope")
    for line in out_of_scope:
        print(f"out of scope (not context assembly, not counted): {line}")
    assert disagreements == []
    assert in_scope >= 1, "no recorded rejection matched a catalogued rule"


def test_out_of_scope_rejections_are_not_counted_as_agreement() -> None:
    # An out-of-scope 4xx (the recorded unknown Bedrock model id: no body can tell) must not be
    # "explained" by any catalogued template; if a template ever matched it, it would be counted
    # wrongly above.
    seen = 0
    for o in _observations():
        if o.interaction.status == 400 and "model identifier is invalid" in str(
            o.interaction.response_body
        ):
            seen += 1
            _, message = _error_parts(o.row.shape, o.interaction.response_body, {})
            assert _catalogued_rule(o.row.shape, _normal(message)) is None
            assert o.row.verdict.accepted
    assert seen >= 1, "the recordings hold no unknown-model rejection"
