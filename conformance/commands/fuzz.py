"""``ctxconf fuzz``: the ``must`` checks over generated sessions and budgets, shrunk to scenarios.

Prints each failing check's shrunk case (a plug-in error first, then by
:func:`conformance.fuzzing.finding_order`) and a scenario file (format version 1) holding one
scenario per case; with ``--out``, writes it where ``ctxconf run --scenarios FILE`` replays it. The runner takes a scenario's level
from its folder, so a file that is not under a ``must/`` folder is written into one (``--out
found.yaml`` writes ``must/found.yaml``) and the command says where.

Exit status: 0 when nothing failed in the examples tried, 1 when a failing case was found, 2 for
bad options.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import click

from conformance.commands._io import EXIT_FINDING, fail
from conformance.commands._options import (
    chosen_shapes,
    count_option,
    file_option,
    load_impl,
    plugin_options,
    seed_option,
    shapes_option,
    timeout_option,
)
from conformance.fuzzing import (
    DEFAULT_EXAMPLES,
    FuzzFinding,
    finding_document,
    finding_id,
    fuzz,
    scenario_yaml,
)
from reference_impl.wording import plural

__all__ = ["command", "replayable_path"]


def replayable_path(out: Path) -> Path:
    """``out`` itself when a parent folder is ``must``; otherwise ``out``'s folder + ``must/``."""
    if "must" in out.parent.parts:
        return out
    return out.parent / "must" / out.name


def _heading(number: int, count: int, seed: int, finding: FuzzFinding) -> str:
    """``[1/2] provider_valid: fuzz-1-provider_valid, valid session of 3 messages, openai-chat
    at 57``: which failure, its scenario id, and the case it was shrunk to."""
    size = len(finding.scenario.session.messages)
    # what the shrunk session is: a broken one keeps the name of its break; one the shrinking
    # left valid (the plug-in broke it) is said valid, whatever it was generated as
    kind = finding.generated_as if finding.scenario.expect.input == "invalid" else "valid"
    return (
        f"[{number}/{count}] {finding.key}: {finding_id(seed, finding)}, "
        f"{kind} session of {plural(size, 'message')}, {finding.shape} at {finding.budget}"
    )


@click.command(name="fuzz")
@plugin_options
@shapes_option("fuzz", "all it speaks")
@count_option("--examples", DEFAULT_EXAMPLES, "Generated cases to try before giving up.")
@seed_option(None, "Seed for the search (default: random, printed so the run can be repeated).")
@file_option("--out", "out", "Also write the scenario file here (under a must/ folder).")
@click.option(
    "--valid-only", is_flag=True, help="Generate valid sessions only (no broken pairing)."
)
@timeout_option("case")
def command(
    *,
    impl: str,
    impl_shape: str | None,
    shapes: str | None,
    examples: int,
    seed: int | None,
    out: Path | None,
    valid_only: bool,
    timeout: float,
) -> None:
    """Run the must checks over generated sessions and budgets; print each failing check's
    shrunk case."""
    plugin = load_impl(impl, impl_shape)
    wanted = chosen_shapes(shapes, plugin, impl)
    if out is not None:  # checked before the search, so a found failure is never lost to a bad path
        folder = replayable_path(out).parent
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            fail(f"--out {out}: cannot create {folder} ({exc.strerror or exc})")
    report = fuzz(
        plugin, shapes=wanted, examples=examples, seed=seed, timeout=timeout, broken=not valid_only
    )
    shown = ", ".join(report.shapes)
    if not report.found:
        click.echo(
            f"ctxconf fuzz: {impl}: no must failure in {examples} generated cases ({shown}); "
            f"seed {report.seed}",
            err=True,
        )
        return
    count = len(report.findings)
    found = "must failure found" if count == 1 else "must failures found, each"
    click.echo(
        f"ctxconf fuzz: {impl}: {count} {found} shrunk to its own case (seed {report.seed}, "
        f"{shown})",
        err=True,
    )
    for number, finding in enumerate(report.findings, 1):
        click.echo(_heading(number, count, report.seed, finding), err=True)
        click.echo(textwrap.indent(finding.describe(), "  "), err=True)
        if finding.replayed is False:
            click.echo(
                f"  warning: scenario {finding_id(report.seed, finding)}, loaded back, did not "
                "fail the same way (a flaky plug-in, or a session detail the scenario format "
                "cannot hold)",
                err=True,
            )
    text = scenario_yaml(finding_document(report))
    click.echo(text, nl=False)
    if out is not None:
        target = replayable_path(out)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, "utf-8")
        shape_flag = f" --impl-shape {impl_shape}" if impl_shape else ""
        click.echo(
            f"wrote {target}; replay: ctxconf run --impl {impl}{shape_flag} --scenarios {target}",
            err=True,
        )
    raise SystemExit(EXIT_FINDING)
