"""Judge one provider request body the way that provider would: the public validation API.

>>> from conformance.providers.validation import validate_request
>>> body = {"model": "gpt-4o", "messages": [{"role": "tool", "tool_call_id": "c1", "content": "x"}]}
>>> verdict = validate_request(body, "openai-chat")
>>> verdict.rule, verdict.status, verdict.error["error"]["param"]
('C2', 400, 'messages.[0].role')

* :func:`validate_request` returns the **first** violation, as the provider reports one error;
* :func:`lint_request` returns **every** violation (``accept`` alone when there is none);
* :func:`overflow_verdict` is that provider's context-length error (C10/R10/A18/G8/B9, OR1 ...).

The body is judged as it travels on the wire (a ``Mapping`` parsed from JSON), never through the
transcript, so malformed bodies get the provider's own kind of 400 instead of an exception. Every
verdict says ``provenance="emulated"``: it is computed now, not a provider's answer.

Unknown shape/dialect/profile names are caller mistakes and raise
:class:`~conformance.providers.catalog.UnknownProfileError` (a ``ValueError``).
"""

from __future__ import annotations

import dataclasses
import json
import string
from collections.abc import Iterable, Mapping
from typing import Any, Final

from conformance.errors import UnknownProfileError
from conformance.providers.catalog import Profile, Rule, load_catalog, resolve_profile
from conformance.providers.envelopes import RenderedError, error_headers, render_error
from conformance.providers.validators import DETECTORS, STRUCTURE, Context, DetectorFn, Finding
from conformance.providers.validators._base import forget_views
from conformance.providers.verdict import Verdict

__all__ = [
    "BETA_HEADER",
    "UnknownProfileError",
    "accept_verdict",
    "betas_of_headers",
    "error_headers_for",
    "lint_request",
    "malformed_body_verdict",
    "overflow_verdict",
    "validate_request",
]


class _Values(dict[str, Any]):
    """Template values; a placeholder the detector did not supply renders visibly, never raises."""

    def __missing__(self, key: str) -> str:
        return "{" + key + "}"


def _fill(template: str | None, values: Mapping[str, Any]) -> str | None:
    if template is None:
        return None
    return string.Formatter().vformat(template, (), _Values(values))


def _seed(body: Any) -> str:
    try:
        return json.dumps(body, sort_keys=True, default=str)
    except (TypeError, ValueError):
        return repr(body)


def _reject(rule: Rule, profile: Profile, finding: Finding, seed: str) -> Verdict:
    variant = rule.variants.get(finding.variant) if finding.variant else None
    message = variant.message if variant else rule.message
    spec = variant.error if variant and variant.error else rule.error
    envelope = rule.envelope or profile.envelope
    code = spec.code
    rendered = RenderedError(
        status=rule.status,
        message=_fill(message, finding.values) or "",
        type=spec.type,
        code=_fill(code, finding.values) if isinstance(code, str) else code,
        param=_fill(spec.param, finding.values),
        seed=seed,
    )
    return Verdict(
        verdict="reject",
        status=rule.status,
        provenance="emulated",
        rule=rule.id,
        evidence=rule.evidence,
        error=render_error(envelope, rendered),
        shape=profile.shape,
        dialect=profile.dialect,
        profile=profile.id,
    )


def accept_verdict(profile: Profile) -> Verdict:
    """The profile's ``accept`` (200), computed now: provenance ``emulated``."""
    return Verdict(
        verdict="accept",
        status=200,
        provenance="emulated",
        shape=profile.shape,
        dialect=profile.dialect,
        profile=profile.id,
    )


def _rule_for(finding: Finding, profile: Profile, by_detector: Mapping[str, str]) -> Rule | None:
    """Which rule (and so which wording) a finding stands for in this profile."""
    rules = load_catalog().rules
    if finding.rule is not None and finding.rule in profile.rules:
        return rules[finding.rule]
    mapped = by_detector.get(finding.detector)
    if mapped is not None and rules[mapped].status >= 400:
        return rules[mapped]
    if finding.rule is not None and rules[finding.rule].status >= 400:
        # e.g. A10 still fires on Opus 4.8 where A10a replaced it, for a misplaced system message
        return rules[finding.rule]
    return None


def _structure_finding(body: Any, profile: Profile, ctx: Context) -> Verdict | None:
    structure_detector = STRUCTURE.get(profile.shape)
    finding = structure_detector(body, ctx) if structure_detector else None
    if finding is None:
        return None
    # The body-shape rule is the first rule of every profile (C0, R0, A12, G0, B0).
    rule = load_catalog().rules[finding.rule or profile.rules[0]]
    return _reject(rule, profile, finding, _seed(body))


_Facts = tuple[dict[str, str], Context, tuple[DetectorFn, ...], Verdict]
_FACTS: dict[str, tuple[Profile, _Facts]] = {}
"""Per profile id: what judging with that profile needs, built once (an audit judges millions of
requests with a handful of profiles): detector name -> the profile's first rule judged by that
detector (its wording wins), the detectors' context, the detectors to run, and its ``accept`` (a
frozen value). Rebuilt when another profile object has that id."""


def _profile_facts(profile: Profile) -> _Facts:
    found = _FACTS.get(profile.id)
    if found is None or (found[0] is not profile and found[0] != profile):
        rules = load_catalog().rules
        by_detector: dict[str, str] = {}
        for rid in profile.rules:
            by_detector.setdefault(rules[rid].detector_name, rid)
        registry = DETECTORS.get(profile.shape, {})
        functions: list[DetectorFn] = []
        for name, rid in by_detector.items():
            fn = registry.get(name)
            if fn is not None and rules[rid].judgeable and fn not in functions:
                functions.append(fn)
        facts = (by_detector, _new_context(profile), tuple(functions), accept_verdict(profile))
        found = _FACTS[profile.id] = (profile, facts)
    return found[1]


def _findings(
    body: Mapping[str, Any], detectors: tuple[DetectorFn, ...], ctx: Context
) -> list[Finding]:
    found: list[Finding] = []
    for fn in detectors:
        found.extend(fn(body, ctx))
    # Providers scan the request front to back: report the violation nearest the start first;
    # top-level parameters (position (-1,)) come before messages. sorted() is stable, so ties
    # keep the profile's rule order.
    if len(found) > 1:
        found.sort(key=lambda f: f.position)
    return found


def _new_context(profile: Profile) -> Context:
    return Context(
        shape=profile.shape,
        profile=profile.id,
        dialect=profile.dialect,
        settings=profile.settings,
        rules=frozenset(profile.rules),
    )


def _judge(
    body: Any,
    profile: Profile,
    context_limit: int | None,
    input_tokens: int | None,
    endpoint: str,
    *,
    first_only: bool,
    betas: frozenset[str] | None = frozenset(),
) -> tuple[Verdict, ...]:
    """What :func:`validate_request` (``first_only``) and :func:`lint_request` answer: the
    violations in the order the provider meets them, or the profile's accept."""
    by_detector, ctx, detectors, accept = _profile_facts(profile)
    if betas != ctx.betas:
        ctx = dataclasses.replace(ctx, betas=betas)
    forget_views()  # the detectors' shared views of the body are built afresh for this one
    shape_error = _structure_finding(body, profile, ctx)
    if shape_error is not None:
        return (shape_error,)
    verdicts: list[Verdict] = []
    seed: str | None = None  # serialized only for a rejection (most requests are accepted)
    for finding in _findings(body, detectors, ctx):
        rule = _rule_for(finding, profile, by_detector)
        if rule is None or endpoint not in rule.endpoints:
            continue
        seed = _seed(body) if seed is None else seed
        verdicts.append(_reject(rule, profile, finding, seed))
        if first_only:
            return tuple(verdicts)
    overflow = _overflow_from_body(body, profile, context_limit, input_tokens)
    if overflow is not None:
        verdicts.append(overflow)
    return tuple(verdicts) or (accept,)


def validate_request(
    body: Mapping[str, Any],
    shape: str,
    *,
    dialect: str | None = None,
    profile: str | None = None,
    context_limit: int | None = None,
    input_tokens: int | None = None,
    endpoint: str = "generate",
    betas: Iterable[str] | None = (),
) -> Verdict:
    """The first violation in the provider's exact envelope, or ``accept``.

    ``context_limit`` with ``input_tokens`` also applies the profile's context-window rule; without
    ``input_tokens`` the tokens are estimated locally (see :func:`_estimate_tokens`).
    ``endpoint="count"`` judges a token-count request: rules that only a generation request must
    meet (``endpoints: [generate]`` in the catalog, A26's ``max_tokens``) do not apply.
    ``betas``: those the request names in its headers (``betas_of_headers``), which a body does
    not show (Anthropic's interleaved thinking, A27); None when the request's headers are not
    known (a recording that does not hold them): a rule a header beta lifts is then not judged.
    """
    resolved = resolve_profile(shape, dialect, profile)
    found = _judge(
        body,
        resolved,
        context_limit,
        input_tokens,
        endpoint,
        first_only=True,
        betas=_set(betas),
    )
    return found[0]


def lint_request(
    body: Mapping[str, Any],
    shape: str,
    *,
    dialect: str | None = None,
    profile: str | None = None,
    context_limit: int | None = None,
    input_tokens: int | None = None,
    endpoint: str = "generate",
    betas: Iterable[str] | None = (),
) -> tuple[Verdict, ...]:
    """Every violation, in the order the provider would meet them; ``(accept,)`` when none
    (``endpoint`` and ``betas`` as for :func:`validate_request`)."""
    resolved = resolve_profile(shape, dialect, profile)
    return _judge(
        body,
        resolved,
        context_limit,
        input_tokens,
        endpoint,
        first_only=False,
        betas=_set(betas),
    )


def _set(betas: Iterable[str] | None) -> frozenset[str] | None:
    """``betas`` as a set; one name given as a string is that name, not its characters; None
    (not known) as it is."""
    if betas is None:
        return None
    return frozenset((betas,)) if isinstance(betas, str) else frozenset(betas)


BETA_HEADER: Final = "anthropic-beta"
"""The header that names Anthropic betas, comma-separated (first-party and Vertex requests)."""


def betas_of_headers(values: Iterable[str]) -> frozenset[str]:
    """The betas named by the values of ``BETA_HEADER`` (each comma-separated)."""
    return frozenset(b.strip() for value in values for b in value.split(",") if b.strip())


def _overflow_from_body(
    body: Any, profile: Profile, context_limit: int | None, input_tokens: int | None
) -> Verdict | None:
    cap = profile.settings.get("input_token_cap")
    if context_limit is None and cap is None:
        return None
    if not isinstance(body, Mapping):
        return None
    # R11: with truncation "auto" the Responses API drops items instead of failing.
    if profile.shape == "openai-responses" and body.get("truncation") == "auto":
        return None
    tokens = input_tokens if input_tokens is not None else _estimate_tokens(body, profile.shape)
    max_tokens = body.get("max_tokens", body.get("max_completion_tokens"))
    verdict = overflow_verdict(
        profile.shape,
        dialect=profile.dialect,
        profile=profile.id,
        input_tokens=tokens,
        context_limit=context_limit,
        max_tokens=max_tokens if isinstance(max_tokens, int) else None,
    )
    return None if verdict.accepted else verdict


def overflow_verdict(
    shape: str,
    *,
    dialect: str | None = None,
    profile: str | None = None,
    input_tokens: int,
    context_limit: int | None,
    max_tokens: int | None = None,
) -> Verdict:
    """That provider's context-length error when ``input_tokens`` do not fit, else ``accept``.

    Profiles whose overflow rule counts the completion (C10a, A18a) add ``max_tokens``; GPT-5's
    input cap (C10b) applies even under a larger ``context_limit``.
    """
    resolved = resolve_profile(shape, dialect, profile)
    if resolved.overflow is None:
        return accept_verdict(resolved)
    rule = load_catalog().rules[resolved.overflow]
    limit = context_limit
    cap = resolved.settings.get("input_token_cap")
    if isinstance(cap, int) and (limit is None or cap < limit):
        limit = cap
    if limit is None:
        return accept_verdict(resolved)
    completion = max_tokens or 0
    counts_completion = "max_tokens" in rule.message
    total = input_tokens + (completion if counts_completion else 0)
    if total <= limit:
        return accept_verdict(resolved)
    values = {
        "limit": limit,
        "tokens": input_tokens,
        "max_tokens": completion,
        "total": total,
    }
    variant = resolved.settings.get("overflow_variant")
    finding = Finding(
        detector=rule.id,
        position=(),
        values=values,
        variant=variant if isinstance(variant, str) and variant in rule.variants else None,
    )
    return _reject(rule, resolved, finding, f"overflow:{input_tokens}:{limit}")


def malformed_body_verdict(
    shape: str, *, dialect: str | None = None, profile: str | None = None, detail: str = ""
) -> Verdict:
    """The provider's 400 for a body that is not JSON at all (the emulator's first gate)."""
    resolved = resolve_profile(shape, dialect, profile)
    rule = load_catalog().rules[resolved.rules[0]]  # the body-shape rule (C0/R0/A12/G0/B0)
    values = {"path": "body", "expected": "an object", "got": detail or "invalid JSON"}
    return _reject(rule, resolved, Finding(detector=rule.id, position=(), values=values), detail)


def error_headers_for(verdict: Verdict) -> dict[str, str]:
    """Headers that go with a rejection's body (Bedrock's ``x-amzn-ErrorType``, request ids)."""
    if verdict.accepted or verdict.error is None or verdict.shape is None:
        return {}
    resolved = resolve_profile(verdict.shape, verdict.dialect, verdict.profile)
    rule = load_catalog().rules.get(verdict.rule or "")
    envelope = (rule.envelope if rule else None) or resolved.envelope
    return error_headers(envelope, verdict.error)


def _estimate_tokens(body: Mapping[str, Any], shape: str) -> int:
    """Input tokens of ``body`` when the caller gave none.

    Uses the reference counter for the shape when the body parses; otherwise about 4 characters
    per token of the compact JSON (a rough, documented fallback: pass ``input_tokens`` for exact).
    """
    try:
        from reference_impl.shapes import get_shape  # noqa: PLC0415 - optional, heavy
        from reference_impl.tokens import counter_for  # noqa: PLC0415

        transcript = get_shape(shape).parse_request(body)
        model = body.get("model")
        counter = counter_for(shape, model if isinstance(model, str) else None)
        return int(counter.count(transcript).total)
    except Exception:  # noqa: BLE001 - any failure falls back to the character estimate
        text = json.dumps(body, separators=(",", ":"), ensure_ascii=False, default=str)
        return len(text) // 4
