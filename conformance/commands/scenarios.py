"""``ctxconf scenarios list|validate``: show the corpus, or check the corpus itself.

``validate`` checks every file against the schema, that ids are unique, that every check a
scenario names exists, that every scenario renders in every shape it lists, that a scenario
expecting refusal really is broken or over budget there, and that the recorded round trips
are present: for the built-in corpus (or with ``--cassettes``) every scenario x shape x dialect
has its cassette and every request the reference assembler sends now is recorded in one (else:
re-record with ``ctxconf record --shape all --prune``). The soak workloads in the corpus's
``workloads/`` folder are not scenarios (the loader skips that folder); ``validate`` loads each
one against its own schema instead.
"""

from __future__ import annotations

from pathlib import Path

import click

from conformance.checks import REGISTRY
from conformance.commands._io import EXIT_FINDING, fail
from conformance.corpus_lint import corpus_problems, recording_problems
from conformance.errors import ScenarioError
from conformance.scenarios import (
    WORKLOADS_FOLDER,
    Scenario,
    default_corpus_path,
    load_corpus,
    scan_corpus,
)
from reference_impl.errors import CtxconfError

__all__ = ["command"]

_NO_SCENARIOS = "{root}: no scenario files (*.yaml under must/, should/ or may/) found"


def _load(path: Path | None) -> tuple[tuple[Scenario, ...], Path]:
    try:
        root = path if path is not None else default_corpus_path()
        loaded = load_corpus(root)
    except ScenarioError as exc:
        fail(str(exc))
    if not loaded:
        fail(_NO_SCENARIOS.format(root=root))
    return loaded, root


def _workload_problems(root: Path) -> tuple[int, list[str]]:
    """The soak workloads under ``root/workloads/`` (the scenario loader skips them): how many,
    and one line per file that does not load (schema, ranges, config knobs)."""
    folder = root / WORKLOADS_FOLDER
    if not root.is_dir() or not folder.is_dir():
        return 0, []
    from conformance.soak.workload import load_workload, workload_files  # noqa: PLC0415 - rare

    problems: list[str] = []
    files = workload_files(folder)
    for path in files:
        try:
            load_workload(path)
        except CtxconfError as exc:  # noqa: PERF203 - one report line per broken file
            problems.append(f"workload: {exc}")
    return len(files), problems


@click.group(name="scenarios")
def command() -> None:
    """List or validate the scenario corpus."""


@command.command(name="list")
@click.argument("path", required=False, type=click.Path(path_type=Path))
def list_scenarios(path: Path | None) -> None:
    """One line per scenario: level, id, shapes, budgets, tags, title."""
    scenarios, _ = _load(path)
    for s in scenarios:
        budgets = sorted({b for shape in s.shapes for b in s.budget.for_shape(shape)})
        span = str(budgets[0]) if len(budgets) == 1 else f"{budgets[0]}..{budgets[-1]}"
        dialects = f"/{','.join(d for d in s.dialects if d)}" if any(s.dialects) else ""
        click.echo(
            f"{s.level:6} {s.id:38} {len(s.shapes)} shape(s){dialects:9} budget {span:10} "
            f"[{', '.join(s.tags)}] {s.title}"
        )
    click.echo(f"{len(scenarios)} scenarios")


@command.command(name="validate")
@click.argument("path", required=False, type=click.Path(path_type=Path))
@click.option(
    "--cassettes",
    type=click.Path(path_type=Path),
    default=None,
    help="Cassette root to check every scenario's recordings against (default: cassettes/ for "
    "the built-in corpus; a corpus given as PATH is checked only when this is given).",
)
def validate_scenarios(path: Path | None, cassettes: Path | None) -> None:
    """Schema, unique ids, known checks, every case built as `run` builds it, cassettes present
    and current; every problem of every file, each with its file and place."""
    try:
        root = path if path is not None else default_corpus_path()
        scenarios, problems = scan_corpus(root)
    except ScenarioError as exc:
        fail(str(exc))
    if not scenarios and not problems:
        fail(_NO_SCENARIOS.format(root=root))
    try:
        problems += corpus_problems(scenarios, cassette_root=cassettes, known_checks=set(REGISTRY))
        if path is None or cassettes is not None:
            problems += recording_problems(scenarios, cassettes)
    except CtxconfError as exc:
        fail(str(exc))
    workloads = _workload_problems(root)
    problems += workloads[1]
    for problem in problems:
        click.echo(problem)
    also = f" and {workloads[0]} workload(s)" if workloads[0] else ""
    click.echo(f"{len(scenarios)} scenarios{also} in {root}: {len(problems)} problem(s)")
    if problems:
        raise SystemExit(EXIT_FINDING)
