"""``ctxconf validate REQUEST --shape S [--dialect D] [--profile P] [--beta B] [--format json|text]
[--lint]``.

Judges one request body with the provider rule catalog and prints the verdict as JSON::

    {"verdict": "reject", "status": 400, "rule": "C1", "evidence": "observed",
     "provenance": "emulated", "error": {...the provider's own error body...}, ...}

``--lint`` prints every violation (a JSON array) instead of the first. ``--beta`` names a beta the
request sends in its ``anthropic-beta`` header, which the body does not show (interleaved
thinking lets a thinking budget exceed the cap, A27). A body holding NaN or Infinity (which Python's
JSON writer emits) is not JSON: it gets the provider's 400 for a body that is not JSON. Exit status: 0 accept, 1 reject, 2
unreadable file or unknown shape/dialect/profile.
"""

from __future__ import annotations

import json

import click

from conformance.commands._io import EXIT_FINDING, fail, read_document
from conformance.commands._options import format_option
from conformance.errors import UnknownProfileError
from conformance.providers.catalog import SHAPES, profile_for_model
from conformance.providers.validation import (
    betas_of_headers,
    lint_request,
    malformed_body_verdict,
    validate_request,
)
from conformance.providers.verdict import Verdict
from reference_impl.documents import non_finite_number

__all__ = ["command"]


def _text(verdict: Verdict) -> str:
    if verdict.accepted:
        return f"accept ({verdict.profile}, {verdict.provenance})"
    error = json.dumps(verdict.error, ensure_ascii=False)
    return (
        f"reject {verdict.status} {verdict.rule} [{verdict.evidence}] "
        f"({verdict.profile}, {verdict.provenance}): {error}"
    )


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
    body = read_document(request, read_non_finite=True)
    judge = lint_request if lint else validate_request
    # NaN or Infinity: the body cannot be sent as JSON, and a provider's parser refuses it as it
    # refuses any text that is not JSON (the emulator's first gate, C0/R0/A12/G0/B0)
    not_json = non_finite_number(body)
    result: Verdict | tuple[Verdict, ...]
    try:
        if profile is None:
            named = model or (body.get("model") if isinstance(body, dict) else None)
            if isinstance(named, str):
                profile = profile_for_model(shape, dialect, named).id
        if not_json is not None:
            detail = f"invalid JSON ({not_json})"
            result = malformed_body_verdict(shape, dialect=dialect, profile=profile, detail=detail)
        else:
            result = judge(
                body,
                shape,
                dialect=dialect,
                profile=profile,
                context_limit=context_limit,
                input_tokens=input_tokens,
                betas=betas_of_headers(betas),
            )
    except UnknownProfileError as exc:
        fail(str(exc))
    verdicts = result if isinstance(result, tuple) else (result,)
    if fmt == "json":
        payloads = [v.to_dict() for v in verdicts]
        click.echo(json.dumps(payloads if lint else payloads[0], ensure_ascii=False))
    else:
        for verdict in verdicts:
            click.echo(_text(verdict))
    if not all(v.accepted for v in verdicts):
        raise SystemExit(EXIT_FINDING)
