"""``ctxconf convert REQUEST --from S1 --to S2 [--dialect D]``: re-render a body in another shape.

The body is parsed into the neutral transcript and rendered by the target shape. A part the
target cannot carry is a one-line error (exit 2): nothing is dropped silently.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Callable, Mapping
from typing import Any

import click

from conformance.commands._io import describe_error, fail_input
from conformance.commands._sessions import SHAPE_CHOICE, load_request
from reference_impl.errors import CtxconfError
from reference_impl.shapes import get_shape
from reference_impl.transcript import Transcript

__all__ = ["command"]


def _dialect_renderer(dialect: str) -> Callable[[Transcript], Mapping[str, Any]]:
    """The openai-chat renderer of a gateway dialect, if the dialect module provides one."""
    try:
        module = importlib.import_module("reference_impl.shapes.dialects")
    except ImportError:
        raise click.UsageError("gateway dialects are not available in this build") from None
    get_dialect = getattr(module, "get_dialect", None)
    if get_dialect is None:
        raise click.UsageError("gateway dialects are not available in this build")
    try:
        found = get_dialect(dialect)
    except CtxconfError as exc:
        raise click.BadParameter(describe_error(exc), param_hint="--dialect") from None
    render: Callable[[Transcript], Mapping[str, Any]] | None = getattr(
        found, "render_request", None
    )
    if render is None:
        raise click.UsageError(f"dialect {dialect!r} cannot render requests")
    return render


@click.command("convert")
@click.argument("request", metavar="REQUEST")
@click.option("--from", "source", type=SHAPE_CHOICE, required=True, help="Shape of REQUEST.")
@click.option("--to", "target", type=SHAPE_CHOICE, required=True, help="Shape to render.")
@click.option("--dialect", default=None, help="Gateway dialect of openai-chat for the output.")
def command(request: str, source: str, target: str, dialect: str | None) -> None:
    """Re-render REQUEST (a --from body or a transcript file) as a --to body; print it as JSON."""
    transcript = load_request(request, source)
    if dialect is not None and target != "openai-chat":
        raise click.BadParameter("dialects exist for --to openai-chat only", param_hint="--dialect")
    render = _dialect_renderer(dialect) if dialect else get_shape(target).render_request
    try:
        body = render(transcript)
    except CtxconfError as exc:
        fail_input(request, f"cannot be rendered as {target}: {describe_error(exc)}")
    click.echo(json.dumps(body, indent=2, ensure_ascii=False))
