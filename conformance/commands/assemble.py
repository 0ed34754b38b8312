"""``ctxconf assemble SESSION --config FILE --shape S [--from S] [--budget N] [--format json|text]``.

SESSION is a transcript file (optionally with a top-level ``ledger`` list of side-effect entries)
or, with ``--from S``, a request body of shape S. Prints the assembled request in ``--shape`` and
the report. A refusal exits with status 3 and prints ``{"error": {"code": ..., "message": ...}}``;
bad input exits with status 2.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import click

from conformance.commands._io import (
    EXIT_REFUSED,
    describe_error,
    fail_input,
    or_fail_input,
    read_document,
)
from conformance.commands._options import SHAPE_CHOICE, format_option
from conformance.commands._sessions import is_transcript_document, load_session
from reference_impl.assembler import assemble
from reference_impl.config import AssemblyConfig
from reference_impl.errors import ConfigError, ContextAssemblyError, CtxconfError
from reference_impl.ledger import Ledger

__all__ = ["command"]


def _ledger(path: str) -> Ledger:
    document: Any = read_document(path)
    if not (is_transcript_document(document) and isinstance(document, Mapping)):
        return Ledger()
    entries = document.get("ledger")
    if entries is None:
        return Ledger()
    if not isinstance(entries, list):
        fail_input(path, "ledger: expected a list of entries")
    return or_fail_input(path, Ledger.from_list, entries)


def _config(path: str | None) -> AssemblyConfig:
    if path is None:
        return AssemblyConfig()
    document = read_document(path)
    if not isinstance(document, Mapping):
        fail_input(path, "expected a mapping with a context_assembly: key")
    return or_fail_input(path, AssemblyConfig.from_mapping, document, errors=ConfigError)


def _text_report(report: dict[str, Any]) -> str:
    after = report["tokens_after"] or {}
    lines = [
        f"decision: {report['decision']}",
        f"budget: {report['budget']['input_budget']} ({report['budget']['source']})",
        (
            f"tokens: {report['tokens_before']['total']}"
            f"{'+' if report['tokens_before_is_lower_bound'] else ''} -> {after.get('total')}"
        ),
        f"steps: {', '.join(report['steps'])}",
        (
            f"dropped rings: {len(report['dropped_ring_ids'])}, "
            f"dropped turns: {len(report['dropped_turn_ids'])}, "
            f"summary: {report['summary_id'] or 'none'}, repairs: {len(report['repairs'])}"
        ),
        f"counter: {report['counter']}",
    ]
    return "\n".join(lines)


@click.command("assemble")
@click.argument("session", metavar="SESSION")
@click.option(
    "--config",
    "config_path",
    default=None,
    metavar="FILE",
    help="AssemblyConfig YAML (context_assembly: ...). Default: the built-in defaults.",
)
@click.option(
    "--shape", "shape", type=SHAPE_CHOICE, required=True, help="Shape of the request to produce."
)
@click.option(
    "--from",
    "from_shape",
    type=SHAPE_CHOICE,
    default=None,
    help="SESSION is a request body of this shape (default: a transcript file).",
)
@click.option(
    "--budget",
    type=click.IntRange(min=0),
    default=None,
    help="Override the input budget (tokens) for a quick experiment.",
)
@format_option("text", "json")
def command(
    *,
    session: str,
    config_path: str | None,
    shape: str,
    from_shape: str | None,
    budget: int | None,
    fmt: str,
) -> None:
    """Assemble SESSION into a request for --shape within the budget; print request and report."""
    config = _config(config_path)
    transcript = load_session(session, from_shape, shape_option="--from")
    ledger = _ledger(session) if from_shape is None else Ledger()
    try:
        assembly = assemble(transcript, config, shape=shape, ledger=ledger, budget=budget)  # type: ignore[arg-type]
        request = assembly.render()
    except ContextAssemblyError as exc:
        click.echo(json.dumps({"error": {"code": exc.code, "message": exc.message}}))
        raise SystemExit(EXIT_REFUSED) from None
    except CtxconfError as exc:
        fail_input(session, describe_error(exc))
    report = assembly.report.to_dict()
    if fmt == "json":
        click.echo(json.dumps({"request": request, "report": report}, ensure_ascii=False))
    else:
        # The request alone on stdout (`> body.json` is a valid body); the report on stderr.
        click.echo(json.dumps(request, indent=2, ensure_ascii=False))
        click.echo(_text_report(report), err=True)
