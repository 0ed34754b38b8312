"""``ctxconf soak``: drive one assembler through hundreds of turns of a simulated agent.

Writes the JSON-lines report (``--out``, default ``reports/soak.jsonl``) and an HTML page with
charts per turn beside it (``soak.html``), prints the run-level measurements, and, when a turn
fails a ``must`` check (or errors, or refuses a feasible turn), writes the shrunk history as a
scenario that ``ctxconf run --scenarios FILE`` replays (``--finding``, under a ``must/`` folder).

The run happens in a supervised child process (:mod:`conformance.soak.isolated`): a plug-in that
ends, kills or hangs its process stops the run at that turn with an ``error`` naming how, and the
reports are still written.

Exit status: 0 when every turn passed (a run that stopped on an infeasible refusal included),
1 when a turn failed, 2 for bad options or an unusable workload file.
"""

from __future__ import annotations

import os
from pathlib import Path

import click

from conformance.commands._io import EXIT_FINDING, describe_error, fail
from conformance.commands._options import (
    SHAPE_CHOICE,
    count_option,
    file_option,
    load_impl,
    plugin_options,
    seed_option,
    timeout_option,
)
from conformance.commands.fuzz import replayable_path
from conformance.soak import DEFAULT_TURNS, resolve_workload
from conformance.soak.finding import SoakFinding
from conformance.soak.isolated import run_soak_isolated
from conformance.soak.report import render_html, report_lines, write_jsonl
from reference_impl.errors import CtxconfError

__all__ = ["command"]


@click.command(name="soak")
@plugin_options
@click.option(
    "--workload",
    default="ops",
    show_default=True,
    help="A built-in workload (ops, coding, support) or a workload YAML file.",
)
@count_option("--turns", DEFAULT_TURNS, "Model calls to simulate.")
@seed_option(0, "Run seed.")
@click.option(
    "--shape",
    type=SHAPE_CHOICE,
    default=None,
    help="Wire shape to run in (default: the workload's, else the plug-in's first).",
)
@file_option(
    "--out",
    "out",
    "JSON-lines report; the HTML page is written beside it (.html).",
    default=Path("reports/soak.jsonl"),
)
@file_option(
    "--finding",
    "finding",
    "Where a failing turn's shrunk scenario goes (under a must/ folder).",
    default=Path("reports/must/soak-finding.yaml"),
)
@timeout_option("turn")
def command(
    *,
    impl: str,
    impl_shape: str | None,
    workload: str,
    turns: int,
    seed: int,
    shape: str | None,
    out: Path,
    finding: Path,
    timeout: float,
) -> None:
    """Drive an assembler through a simulated agent run; measure tokens, cache, cost, repeats."""
    plugin = load_impl(impl, impl_shape)
    try:
        loaded = resolve_workload(workload)
    except CtxconfError as exc:
        fail(describe_error(exc))
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        fail(f"--out {out}: cannot create {out.parent} ({exc.strerror or exc})")
    # Checked before the run (without creating it: most runs find nothing), so a finding is
    # never lost to a bad path.
    blocked = _unwritable(replayable_path(finding).parent)
    if blocked is not None:
        fail(f"--finding {finding}: cannot create {replayable_path(finding).parent} ({blocked})")
    try:
        outcome = run_soak_isolated(
            plugin, loaded, turns=turns, seed=seed, shape=shape, timeout=timeout
        )
    except CtxconfError as exc:
        fail(describe_error(exc))
    report, found = outcome.report, outcome.finding
    finding_path, unwritten = _write_finding(found, finding)
    lines = report_lines(report, finding_path=str(finding_path) if finding_path else None)
    page = out.with_suffix(".html")
    try:
        write_jsonl(lines, out)
        page.write_text(render_html(lines), "utf-8")
    except OSError as exc:
        fail(f"--out {out}: cannot write the report ({exc.strerror or exc})")
    _print_summary(report.measurements(), out, page)
    if report.plugin_output:
        streams = " and ".join(report.plugin_output)
        click.echo(f"the plug-in printed to {streams}: kept in {out} (plugin_output)", err=True)
    if unwritten is not None:
        fail(unwritten)
    failure = report.failure
    if failure is not None:
        click.echo(f"stopped at turn {failure.turn} ({failure.kind}): {failure.message}", err=True)
    if found is not None and finding_path is not None:
        alone = "reproduces on a fresh assembler" if found.reproduces else "needs earlier turns"
        shrunk = f"{found.removed_units} unit(s) removed by shrinking; {alone}"
        if found.unshrunk is not None:
            shrunk = f"not shrunk: {found.unshrunk}"
        click.echo(
            f"finding: {finding_path} ({shrunk}); replay with: ctxconf run --impl {impl} "
            f"--scenarios {finding_path}",
            err=True,
        )
        raise SystemExit(EXIT_FINDING)


def _write_finding(found: SoakFinding | None, finding: Path) -> tuple[Path | None, str | None]:
    """Where the finding was written (None when there is none or it could not be) and, when it
    could not be, why: the report is still written, the exit says what was not."""
    if found is None:
        return None, None
    path = replayable_path(finding)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(found.text, "utf-8")
    except OSError as exc:
        return None, f"--finding {path}: cannot write it ({exc.strerror or exc})"
    return path, None


def _unwritable(folder: Path) -> str | None:
    """Why ``folder`` cannot be created or written in, or None: its nearest existing ancestor is
    a file, or a folder this process may not write in."""
    for place in (folder, *folder.parents):
        if place.exists():
            if not place.is_dir():
                return f"{place} is not a folder"
            if not os.access(place, os.W_OK | os.X_OK):
                return f"{place} is not writable"
            return None
    return None


def _print_summary(numbers: dict[str, object], out: Path, page: Path) -> None:
    keys: tuple[tuple[str, str], ...] = (
        ("turns_survived", "turns survived"),
        ("tokens_max", "max request tokens"),
        ("tokens_p95", "p95 request tokens"),
        ("budget", "budget"),
        ("window_full_turn", "window full at turn"),
        ("tokens_growth_per_turn_after_full", "growth after full (tokens/turn)"),
        ("prefix_reuse", "common-prefix share after full"),
        ("cache_reuse", "cached share after full"),
        ("cost_usd", "estimated input cost (USD)"),
        ("uncached_cost_usd", "same without cache (USD)"),
        ("repeated_side_effects", "repeated side effects"),
        ("summary_depth_max", "max summary depth"),
        ("summary_failures", "summary failures"),
        ("assembler_ms_p50", "assembler ms p50"),
        ("assembler_ms_p99", "assembler ms p99"),
    )
    never = numbers["window_full_turn"] is None
    shown = {
        **numbers,
        "window_full_turn": "never (every request held the whole session)"
        if never
        else numbers["window_full_turn"],
        "tokens_growth_per_turn_after_full": "n/a (the window never filled)"
        if numbers["tokens_growth_per_turn_after_full"] is None
        else numbers["tokens_growth_per_turn_after_full"],
    }
    if numbers.get("reuse_over") == "whole_run":  # measured over every turn after the first
        keys = tuple(
            (key, label.replace("after full", "(whole run)") if key.endswith("_reuse") else label)
            for key, label in keys
        )
    width = max(len(label) for _, label in keys)
    for key, label in keys:
        click.echo(f"{label:<{width}}  {shown[key]}")
    click.echo(f"report: {out}  page: {page}")
