"""``ctxconf validate REQUEST --shape S [--dialect D] [--profile P] [--beta B] [--format json|text]
[--lint]``.

Judges one request body with the provider rule catalog and prints the verdict as JSON::

    {"verdict": "reject", "status": 400, "rule": "C1", "evidence": "observed",
     "provenance": "emulated", "error": {...the provider's own error body...}, ...}

``--lint`` prints every violation (a JSON array) instead of the first. ``--beta`` names a beta the
request sends in its ``anthropic-beta`` header, which the body does not show (interleaved
thinking lets a thinking budget exceed the cap, A27). A body holding NaN or Infinity (which Python's
JSON writer emits) is not JSON: it gets the provider's 400 for a body that is not JSON. A JSON
body that gives a key twice is judged in both readings, the last copy kept (as Python's parser
reads it) and the first (as another parser may): the first rejection is the verdict, and the output
says which reading it refused (``"reading": "first copy kept"``; ``null`` when both pass). Exit
status: 0 accept, 1 reject, 2 unreadable file or unknown shape/dialect/profile.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import click

from conformance.commands._io import EXIT_FINDING, fail, read_request_document
from conformance.commands._options import format_option
from conformance.errors import UnknownProfileError
from conformance.providers.catalog import SHAPES, profile_for_model
from conformance.providers.repeated_keys import (
    FIRST_COPY_KEPT,
    LAST_COPY_KEPT,
    Reading,
    judge_both_readings,
)
from conformance.providers.validation import (
    betas_of_headers,
    lint_request,
    malformed_body_verdict,
    validate_request,
)
from conformance.providers.verdict import Verdict
from reference_impl.documents import non_finite_number

__all__ = ["command"]


def _text(verdict: Verdict, reading: Reading | None) -> str:
    said = f"{verdict.profile}, {verdict.provenance}" + (f"; {reading}" if reading else "")
    if verdict.accepted:
        return f"accept ({said})"
    error = json.dumps(verdict.error, ensure_ascii=False)
    return f"reject {verdict.status} {verdict.rule} [{verdict.evidence}] ({said}): {error}"


def _both_readings(
    judge: Callable[[Any], tuple[Verdict, ...]], body: Any, first: Any | None, *, lint: bool
) -> list[tuple[Verdict, Reading | None]]:
    """The verdicts on ``body`` and, when a key repeats, on ``first`` (its first-copy reading),
    each with the reading it refused (``None``: no key repeats, or an accept): without
    ``lint``, the first rejection (:func:`judge_both_readings`); with it, every violation of
    the last-copy reading, then those only the first-copy reading has."""
    if not lint:
        verdict, reading = judge_both_readings(lambda judged: judge(judged)[0], body, first)
        return [(verdict, reading)]
    last = judge(body)
    if first is None:
        return [(verdict, None) for verdict in last]
    other = judge(first)
    found: list[tuple[Verdict, Reading | None]] = []
    found += [(v, LAST_COPY_KEPT) for v in last if not v.accepted]
    found += [(v, FIRST_COPY_KEPT) for v in other if not v.accepted and v not in last]
    return found or [(last[0], None)]


@click.command("validate")
@click.argument("request", metavar="REQUEST")
@click.option("--shape", type=click.Choice(SHAPES), required=True, help="Wire shape of REQUEST.")
@click.option("--dialect", default=None, help="Gateway dialect (mistral, deepseek, ollama ...).")
@click.option(
    "--profile", default=None, help="Rule profile (e.g. anthropic-2024-strict-alternation)."
)
@click.option(
    "--model",
    default=None,
    help="Model the request is for (default: the body's `model`); without --profile it picks the "
    "model's profile, e.g. bedrock-claude for a Claude model on Bedrock.",
)
@click.option("--context-limit", type=int, default=None, help="Also apply the context-window rule.")
@click.option("--input-tokens", type=int, default=None, help="Input tokens (else estimated).")
@click.option(
    "--beta",
    "betas",
    multiple=True,
    help="A beta the request names in its anthropic-beta header (repeatable, or comma-separated), "
    "e.g. interleaved-thinking-2025-05-14.",
)
@click.option("--lint", is_flag=True, help="List every violation, not only the first.")
@format_option("json", "text")
def command(
    *,
    request: str,
    shape: str,
    dialect: str | None,
    profile: str | None,
    model: str | None,
    context_limit: int | None,
    input_tokens: int | None,
    betas: tuple[str, ...],
    lint: bool,
    fmt: str,
) -> None:
    """Judge REQUEST (a JSON/YAML request body) the way the provider would."""
    body, first = read_request_document(request)
    judge = lint_request if lint else validate_request

    def verdicts(judged: Any) -> tuple[Verdict, ...]:
        # NaN or Infinity: the body cannot be sent as JSON, and a provider's parser refuses it
        # as it refuses any text that is not JSON (the emulator's first gate, C0/R0/A12/G0/B0)
        not_json = non_finite_number(judged)
        if not_json is not None:
            detail = f"invalid JSON ({not_json})"
            return (malformed_body_verdict(shape, dialect=dialect, profile=profile, detail=detail),)
        result = judge(
            judged,
            shape,
            dialect=dialect,
            profile=profile,
            context_limit=context_limit,
            input_tokens=input_tokens,
            betas=betas_of_headers(betas),
        )
        return result if isinstance(result, tuple) else (result,)

    try:
        if profile is None:
            named = model or (body.get("model") if isinstance(body, dict) else None)
            if isinstance(named, str):
                profile = profile_for_model(shape, dialect, named).id
        found = _both_readings(verdicts, body, first, lint=lint)
    except UnknownProfileError as exc:
        fail(str(exc))
    if fmt == "json":
        # the reading is said when the body repeats a key (a rejection's, else null)
        payloads = [
            v.to_dict() if first is None else {**v.to_dict(), "reading": reading}
            for v, reading in found
        ]
        click.echo(json.dumps(payloads if lint else payloads[0], ensure_ascii=False))
    else:
        for verdict, reading in found:
            click.echo(_text(verdict, reading))
    if not all(v.accepted for v, _ in found):
        raise SystemExit(EXIT_FINDING)
