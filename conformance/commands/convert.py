"""``ctxconf convert REQUEST --from S1 --to S2 [--dialect D]``: re-render a body in another shape.

The body is parsed into the neutral transcript and rendered by the target shape. Generation
options are mapped to the target's names; options and provider item ids with no meaning for the
target are listed on stderr (``ctxconf: note: ...``). Content the target cannot carry (the
``is_error`` flag of a tool result in ``openai-chat``) is refused with every such place named,
unless ``--lossy`` asks to drop exactly those (each drop is listed on stderr); a part the target
cannot carry at all is a one-line error (exit 2). Nothing is dropped silently.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

import click

from conformance.commands._io import describe_error, fail_input, or_fail_input
from conformance.commands._options import SHAPE_CHOICE
from conformance.commands._sessions import load_request
from reference_impl.errors import CtxconfError
from reference_impl.shapes import get_shape
from reference_impl.shapes.convert import convert, lossy_drops
from reference_impl.shapes.dialects import get_dialect, render_for_dialect
from reference_impl.transcript import Transcript

__all__ = ["command"]


def _dialect_renderer(
    dialect: str, *, remap_ids: bool
) -> Callable[[Transcript], Mapping[str, Any]]:
    """The openai-chat renderer of a gateway dialect (refuses what that gateway would reject)."""
    try:
        found = get_dialect(dialect)
    except CtxconfError as exc:
        raise click.BadParameter(describe_error(exc), param_hint="--dialect") from None

    def render(transcript: Transcript) -> Mapping[str, Any]:
        return render_for_dialect(transcript, found, remap_ids=remap_ids)

    return render


@click.command("convert")
@click.argument("request", metavar="REQUEST")
@click.option("--from", "source", type=SHAPE_CHOICE, required=True, help="Shape of REQUEST.")
@click.option("--to", "target", type=SHAPE_CHOICE, required=True, help="Shape to render.")
@click.option("--dialect", default=None, help="Gateway dialect of openai-chat for the output.")
@click.option(
    "--remap-ids",
    is_flag=True,
    help="Rewrite tool-call ids the dialect refuses (Mistral: 9 alphanumerics), calls and results alike.",
)
@click.option(
    "--lossy",
    is_flag=True,
    help="Drop what the target cannot carry (e.g. openai-chat has no is_error flag on results); "
    "each drop is listed on stderr.",
)
def command(
    request: str,
    *,
    source: str,
    target: str,
    dialect: str | None,
    remap_ids: bool,
    lossy: bool,
) -> None:
    """Re-render REQUEST (a --from body or a transcript file) as a --to body; print it as JSON."""
    transcript = load_request(request, source)
    if dialect is not None and target != "openai-chat":
        raise click.BadParameter("dialects exist for --to openai-chat only", param_hint="--dialect")
    render = (
        _dialect_renderer(dialect, remap_ids=remap_ids)
        if dialect
        else get_shape(target).render_request
    )
    conversion = convert(transcript, source, target)  # type: ignore[arg-type]
    converted, losses = lossy_drops(conversion.transcript, target)  # type: ignore[arg-type]
    if losses and not lossy:
        fail_input(
            request,
            f"{target} cannot carry {len(losses)} thing(s) of this request: "
            + "; ".join(losses)
            + "; pass --lossy to drop exactly these",
        )
    for dropped in (*conversion.dropped, *losses):
        click.echo(f"ctxconf: note: {request}: not carried to {target}: {dropped}", err=True)
    body = or_fail_input(request, render, converted, what=f"cannot be rendered as {target}: ")
    click.echo(json.dumps(body, indent=2, ensure_ascii=False))
