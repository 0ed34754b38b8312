"""``ctxconf run``: the main job. Runs a plug-in over the scenario corpus and writes the reports.

Default: the built-in ``reference`` plug-in over the built-in corpus in every shape, recorded round
trips replayed where a cassette matches. Exit status 0 only when every ``must`` case passes (and
every ``should`` case too with ``--strict``; with ``--baseline``, when nothing regressed); 1
otherwise or when a run-level budget stopped the run early; 2 for bad options or files; 130/143
when SIGINT/SIGTERM interrupted it (the finished cases are still reported). The footer of every
report states the exit status the process returns.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import sys
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path
from typing import IO, Final, NoReturn

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from typing_extensions import Self

from conformance.baseline import (
    Baseline,
    compare_to_baseline,
    print_diff,
    read_baseline,
    write_baseline,
)
from conformance.checks import REGISTRY
from conformance.commands._io import describe_error, fail
from conformance.commands._options import (
    chosen_shapes,
    comma_list,
    count_option,
    file_option,
    load_impl,
    plugin_options,
    shapes_option,
    timeout_option,
)
from conformance.engine import DEFAULT_MAX_CONSECUTIVE_TIMEOUTS, NO_CASES_GATE, run_events
from conformance.errors import BaselineError
from conformance.events import CaseFinished, Event, RunFinished, RunStarted
from conformance.reporting import (
    JsonLinesWriter,
    record_from_events,
    render_html,
    render_junit,
    render_markdown,
    render_terminal,
)
from conformance.reporting.record import RunRecord
from conformance.scenarios import (
    LEVELS,
    Level,
    Scenario,
    default_corpus_path,
    load_corpus,
    select,
    unknown_selectors,
)
from conformance.workers import RunStop
from reference_impl.errors import CtxconfError

__all__ = ["command"]

_DERIVED_REPORTS: Final = ("report.md", "report.html", "junit.xml")


def _scenarios(specs: tuple[str, ...], level: Level) -> tuple[tuple[Scenario, ...], str]:
    """``--scenarios`` is a path (file or folder) or comma-separated ids/tags of the built-in
    corpus; given more than once, the ids and tags add up."""
    if len(specs) > 1 and any(Path(spec).exists() for spec in specs):
        fail(
            f"--scenarios given {len(specs)} times with a file or folder among them; give one "
            "scenario file or folder, or ids and tags of the corpus (repeatable)"
        )
    spec = ",".join(specs) if specs else None
    if spec is not None and not comma_list(spec):
        # `Path("")` is the current folder: an empty value walked it (a virtualenv included).
        fail(
            f"--scenarios {spec!r} names nothing; give a scenario file or folder, or ids and tags "
            "of the corpus (`ctxconf scenarios list` shows them)"
        )
    if spec is not None and Path(spec).exists():
        root = Path(spec)
        loaded = load_corpus(root)
        if not loaded:
            # Zero cases would "pass" a CI gate while testing nothing.
            fail(f"{root}: no scenario files (*.yaml under must/, should/ or may/) found")
        chosen_here = select(loaded, level=level)
        if not chosen_here:
            fail(f"{root}: no scenario at --level {level} or below")
        _check_ids_known(chosen_here)
        return chosen_here, str(root)
    root = default_corpus_path()
    selectors = comma_list(spec) if spec else ()
    corpus = load_corpus(root)
    unknown = unknown_selectors(corpus, selectors)
    if unknown:
        # One name mistyped among several would run fewer cases than asked, and pass.
        fail(
            f"--scenarios: {', '.join(unknown)} is neither a file or folder nor a scenario id or "
            f"tag of the corpus at {root}; `ctxconf scenarios list` shows ids and tags"
        )
    chosen = select(corpus, selectors=selectors, level=level)
    if spec and not chosen:
        fail(
            f"--scenarios {spec!r} is neither a file or folder nor an id or tag of the corpus at "
            f"{root}; `ctxconf scenarios list` shows ids and tags"
        )
    _check_ids_known(chosen)
    return chosen, str(root)


def _check_ids_known(scenarios: Iterable[Scenario]) -> None:
    """A check id the registry does not know would be skipped silently: refuse it up front."""
    for s in scenarios:
        for check_id in (*s.expect.checks, *s.expect.skip_checks):
            if check_id not in REGISTRY:
                fail(
                    f"{s.source}: scenario {s.id!r}: unknown check {check_id!r} in expect; "
                    f"`ctxconf scenarios validate` lists the corpus problems"
                )


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, "utf-8")


@click.command(name="run")
@plugin_options
@shapes_option("run", "all the plug-in speaks")
@click.option(
    "--level",
    type=click.Choice(LEVELS),
    default="may",
    show_default=True,
    help="Run scenarios and checks up to this level.",
)
@click.option(
    "--scenarios",
    "scenarios_spec",
    multiple=True,
    help="A scenario file or folder, or comma-separated ids/tags of the built-in corpus "
    "(repeatable; an id wins over a tag of the same name, tag:NAME names a tag).",
)
@click.option(
    "--report-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("reports"),
    show_default=True,
    help="Writes run.jsonl, report.md, report.html and junit.xml here.",
)
@click.option("--no-reports", is_flag=True, help="Write no report files.")
@click.option(
    "--format",
    "output_format",
    type=click.Choice(["table", "jsonl", "md"]),
    default="table",
    show_default=True,
    help="What to print on standard output.",
)
@count_option("--jobs", 1, "Worker processes (output order does not depend on it).", most=64)
@click.option("--strict", is_flag=True, help="Also fail (exit 1) on should failures.")
@file_option(
    "--baseline",
    "baseline_file",
    "Gate on this baseline: exit 1 only on regressions (passed there, fail now).",
)
@file_option(
    "--write-baseline",
    "write_baseline_file",
    "Write this run's case statuses as a baseline file (not when the run stops early).",
)
@timeout_option("case", note=" (its worker is killed)")
@click.option(
    "--max-consecutive-timeouts",
    type=click.IntRange(0, None),
    default=DEFAULT_MAX_CONSECUTIVE_TIMEOUTS,
    show_default=True,
    help="Stop the run after this many timed-out cases in a row (0: never).",
)
@click.option(
    "--max-seconds",
    type=click.FloatRange(0.01, None),
    default=None,
    help="Stop the run after this much wall time (default: no limit).",
)
def command(
    *,
    impl: str,
    impl_shape: str | None,
    shapes: str | None,
    level: Level,
    scenarios_spec: tuple[str, ...],
    report_dir: Path,
    no_reports: bool,
    output_format: str,
    jobs: int,
    strict: bool,
    baseline_file: Path | None,
    write_baseline_file: Path | None,
    timeout: float,
    max_consecutive_timeouts: int,
    max_seconds: float | None,
) -> None:
    """Run an assembler over the scenario corpus; print the matrix and write the reports."""
    plugin = load_impl(impl, impl_shape)
    try:
        chosen, corpus = _scenarios(scenarios_spec, level)
    except CtxconfError as exc:
        fail(describe_error(exc))
    baseline = None
    if baseline_file is not None:
        try:
            baseline = read_baseline(baseline_file)
        except BaselineError as exc:
            fail(describe_error(exc))
    # Output places are checked before the run, so a long run is never lost to a bad path.
    if not no_reports:
        _prepare_dir(report_dir, "--report-dir")
    if write_baseline_file is not None:
        _prepare_dir(write_baseline_file.parent, "--write-baseline")
    wanted = chosen_shapes(shapes, plugin, impl)
    stop = RunStop()
    # SIGINT/SIGTERM stop dispatching; the finished cases are reported and the process exits
    # 130/143 (the handlers stay until the reports are written).
    with stop.installed():
        events = run_events(
            plugin,
            chosen,
            shapes=wanted,
            level=level,
            timeout=timeout,
            jobs=jobs,
            strict=strict,
            corpus=corpus,
            stop=stop,
            max_consecutive_timeouts=max_consecutive_timeouts or None,
            max_seconds=max_seconds,
        )
        try:  # the engine reads the cassette library before its first event
            first = next(events)
        except CtxconfError as exc:  # a cassette it cannot read: named, exit 2
            fail(describe_error(exc))
        events = itertools.chain((first,), events)
        stdout: IO[str] = sys.stdout
        printer = JsonLinesWriter(stdout) if output_format == "jsonl" else None
        with contextlib.ExitStack() as open_report:
            report = None if no_reports else open_report.enter_context(_RunReport(report_dir))
            collected = _collect(events, printer, report)
            status = _final_status(collected, baseline, strict=strict)
            if printer is not None:
                printer(collected[-1])
            if report is not None:
                report(collected[-1])
        _finish(
            collected,
            no_reports=no_reports,
            report_dir=report_dir,
            output_format=output_format,
            write_baseline_file=write_baseline_file,
        )
    stop.close()
    raise SystemExit(status)


def _final_status(
    collected: list[Event], baseline: Baseline | None, *, strict: bool = False
) -> int:
    """The exit status the process returns, written into the footer event (the last one) so
    that every report states it: an interrupted or stopped run keeps the engine's status; with a
    baseline, regressions at the run's gate decide (``should`` counts only with
    ``--strict``). A run that judged no case keeps its ``no cases`` status even with a
    baseline: every baseline case would be "removed", no regression, and exit 0 with nothing
    tested."""
    finished = collected[-1]
    assert isinstance(finished, RunFinished)
    status = finished.exit_status
    if baseline is not None and finished.stopped is None and finished.gate != NO_CASES_GATE:
        record = record_from_events(collected)
        diff = compare_to_baseline(record, baseline, strict=strict)
        # A CI log gets the width the matrix is printed at (rich's 80 split lines mid-phrase).
        width = None if sys.stderr.isatty() else 120
        print_diff(diff, Console(stderr=True, width=width), strict=strict)
        status = diff.exit_status
        # The reports name what the baseline gate decided on (a pull-request comment that says
        # "exit status 1" must say which cases regressed).
        extra = {**finished.extra, "baseline": diff.summary()}
        finished = replace(finished, exit_status=status, gate="baseline", extra=extra)
    collected[-1] = finished
    return status


def _finish(
    collected: list[Event],
    *,
    no_reports: bool,
    report_dir: Path,
    output_format: str,
    write_baseline_file: Path | None,
) -> None:
    record = record_from_events(collected)
    if not no_reports:
        try:
            _write_reports(report_dir, record)
        except OSError as exc:
            fail(f"--report-dir {report_dir}: cannot write the reports ({exc.strerror or exc})")
    if output_format == "table":
        # A pipe or CI log gets a fixed width wide enough for five shape columns.
        console = Console(width=None if sys.stdout.isatty() else 120)
        render_terminal(record, console, reports=not no_reports)
        if not no_reports:
            click.echo(f"reports: {report_dir}/run.jsonl, report.md, report.html, junit.xml")
    elif output_format == "md":
        click.echo(render_markdown(record), nl=False)
    finished = collected[-1]
    assert isinstance(finished, RunFinished)  # the footer (``_final_status`` has read it)
    empty = finished.gate == NO_CASES_GATE
    if empty:
        left = finished.extra.get("not_judged")
        why = f" ({left['cases']} left out: {left['why']})" if isinstance(left, dict) else ""
        click.echo(
            f"ctxconf: no case to run: the scenarios and shapes chosen hold no case this plug-in "
            f"is judged on{why}; exit status {finished.exit_status}",
            err=True,
        )
    if write_baseline_file is not None and empty:
        click.echo(f"baseline: NOT written to {write_baseline_file}: no case ran", err=True)
    elif write_baseline_file is not None and finished.stopped:
        # A baseline of the cases that ran would leave the others ungated for good: later runs
        # list them as new cases, never as regressions.
        click.echo(
            f"baseline: NOT written to {write_baseline_file}: the run ended early "
            f"({finished.stopped}), {finished.not_run} case(s) not run, and a baseline of the "
            f"{len(record.cases)} that ran would leave the others ungated (re-run to completion "
            "to write it)",
            err=True,
        )
    elif write_baseline_file is not None:
        try:
            write_baseline(record, write_baseline_file)
        except OSError as exc:
            fail(f"--write-baseline {write_baseline_file}: cannot write ({exc.strerror or exc})")
        click.echo(f"baseline: wrote {write_baseline_file}", err=True)


def _prepare_dir(directory: Path, option: str) -> None:
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        fail(f"{option} {directory}: cannot create the folder ({exc.strerror or exc})")
    if not os.access(directory, os.W_OK):
        fail(f"{option} {directory}: the folder is not writable")


class _RunReport:
    """``run.jsonl`` in the report folder, written as the run goes: the header first, each case
    line as its case finishes (flushed), the footer once the exit status is final. A run killed
    mid-way (``kill -9``) leaves the lines of the cases that finished and no footer, which
    ``ctxconf report --partial`` renders. The reports derived from it are removed when it is
    opened: a killed run must not leave an earlier run's complete, passing ones looking
    current."""

    def __init__(self, report_dir: Path) -> None:
        self.report_dir = report_dir
        self._stream: IO[str] | None = None
        self._writer: JsonLinesWriter | None = None

    def __enter__(self) -> Self:
        try:
            for name in _DERIVED_REPORTS:
                (self.report_dir / name).unlink(missing_ok=True)
            self._stream = (self.report_dir / "run.jsonl").open("w", encoding="utf-8")
        except OSError as exc:
            self._cannot_write(exc)
        self._writer = JsonLinesWriter(self._stream)
        return self

    def __call__(self, event: Event) -> None:
        assert self._writer is not None  # opened by ``__enter__``
        try:
            self._writer(event)
        except OSError as exc:
            self._cannot_write(exc)

    def __exit__(self, *exc_info: object) -> None:
        if self._stream is not None:
            self._stream.close()

    def _cannot_write(self, exc: OSError) -> NoReturn:
        fail(f"--report-dir {self.report_dir}: cannot write the reports ({exc.strerror or exc})")


def _collect(
    events: Iterable[Event], printer: JsonLinesWriter | None, report: _RunReport | None
) -> list[Event]:
    """Consume the run's events, echoing JSON lines if asked and writing them to ``run.jsonl``
    as they come (all but the footer); a progress bar on a terminal only."""
    collected: list[Event] = []
    console = Console(stderr=True)
    with Progress(
        TextColumn("[bold]ctxconf run"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("{task.description}"),
        console=console,
        transient=True,
        disable=not console.is_terminal,
    ) as progress:
        task = progress.add_task("", total=None)
        for event in events:
            collected.append(event)
            # The footer is printed once the exit status is final (a baseline may change it).
            if not isinstance(event, RunFinished):
                if printer is not None:
                    printer(event)
                if report is not None:
                    report(event)
            if isinstance(event, RunStarted):
                progress.update(task, total=event.case_count)
            elif isinstance(event, CaseFinished):
                progress.update(task, advance=1, description=event.result.scenario)
    return collected


def _write_reports(report_dir: Path, record: RunRecord) -> None:
    """The reports derived from ``run.jsonl`` (written by :class:`_RunReport` as the run went)."""
    _write(report_dir / "report.md", render_markdown(record))
    _write(report_dir / "report.html", render_html(record))
    _write(report_dir / "junit.xml", render_junit(record))
