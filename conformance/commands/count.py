"""``ctxconf count REQUEST --shape S [--model M] [--format text|json]``: input tokens of a body.

Counts messages (with their per-message overhead), tool schemas and the reply priming with the
reference counter for the shape (``reference_impl.tokens.counter_for``) and names that counter.
"""

from __future__ import annotations

import json

import click

from conformance.commands._options import SHAPE_CHOICE, format_option
from conformance.commands._sessions import load_request
from reference_impl.errors import TokenCountError
from reference_impl.tokens import counter_for
from reference_impl.tokens.encodings import encoding_for_model

__all__ = ["command"]


@click.command("count")
@click.argument("request", metavar="REQUEST")
@click.option("--shape", "shape", type=SHAPE_CHOICE, required=True, help="Shape of REQUEST.")
@click.option("--model", default=None, help="Model name (default: the body's `model`).")
@click.option(
    "--safety-factor",
    type=float,
    default=None,
    help="Safety factor of the estimate counters (Anthropic, Gemini, Bedrock).",
)
@format_option("text", "json")
def command(
    request: str, shape: str, model: str | None, safety_factor: float | None, fmt: str
) -> None:
    """Count the input tokens of REQUEST (a request body of --shape, or a transcript file)."""
    transcript = load_request(request, shape)
    model = model or transcript.model
    try:
        counter = counter_for(shape, model, safety_factor=safety_factor)
        result = counter.count(transcript)
    except TokenCountError as exc:
        raise click.UsageError(str(exc)) from None
    if shape in ("openai-chat", "openai-responses"):
        choice = encoding_for_model(model)
        if choice.reason.startswith(("unknown model", "no model")):
            click.echo(f"ctxconf: note: {request}: {choice.reason}", err=True)
    payload = {
        "shape": shape,
        "model": model,
        "encoding": result.encoding,
        "counter": result.counter,
        "input_tokens": result.total,
    }
    if fmt == "json":
        click.echo(json.dumps(payload))
    else:
        click.echo(
            f"{result.total} input tokens ({result.counter}; messages {sum(result.messages)}, "
            f"tools {result.tools}, overhead {result.overhead})"
        )
