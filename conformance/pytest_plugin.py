"""The pytest plug-in: one test item per scenario x shape (x budget) x check level.

Registered under the ``pytest11`` entry point, so it is active wherever ctxconf is installed; it
does nothing (and imports nothing heavy) unless ``--ctxconf-impl`` is given::

    pytest --ctxconf-impl=mypkg.ctx:assemble [--ctxconf-impl-shape openai-chat]
           [--ctxconf-shapes openai-chat,anthropic-messages] [--ctxconf-level should]
           [--ctxconf-scenarios PATH|ids,tags] [--ctxconf-timeout 10] [--ctxconf-strict]
           [--ctxconf-in-process]

Each case (a scenario in one shape, dialect and budget) gives one item per check level it runs:
``must::scenario-id[shape@budget]``, ``should::...``, ``may::...`` (``shape/dialect`` for gateway
dialects; node id ``ctxconf::must::scenario-id[shape@budget]``). The case runs once; each item judges the checks of its level.

**The gate is the CLI's** (``conformance.scenarios.GATE_LEVELS``): a failing ``must`` item fails
the session; a failing ``should`` or ``may`` item is reported as ``xfail`` with its message (shown
with ``-rx``), unless ``--ctxconf-strict`` also gates ``should`` (``ctxconf run --strict``). ``may``
is never gated. A plug-in error fails the ``must`` item; the case's other items are skipped.

**Isolation.** The cases run in a supervised worker process forked from the pytest process at
the first case (one per xdist worker), as with ``ctxconf run``
(:class:`conformance.workers.WorkerPool`): a plug-in that ends or kills its process, hangs past
``--ctxconf-timeout``, or returns what takes longer than
:data:`~conformance.workers.JUDGE_TIMEOUT` to judge fails its case's ``must`` item with the cause
named, and the session goes on with a fresh worker. What the plug-in prints is shown with the
item (``Captured plug-in stdout``). ``--ctxconf-in-process`` runs the cases in the pytest process
instead (a plug-in call past the timeout is abandoned in a daemon thread), for a debugger or a
coverage measurement of the plug-in.

**Selecting.** ``-m ctxconf_must`` / ``ctxconf_should`` / ``ctxconf_may`` and ``-k must`` select by
*check* level (``-k`` matches the item name's ``must::``); ``-m "ctxconf_scenario(level='must')"``
by the scenario's level. ``-k`` also matches the scenario id, shape, dialect and tags. A
failing item's message lists the failed checks with their titles and messages (message indices,
ids, the verdict's provenance). Collection is deterministic (corpus order, then shape, dialect,
budget, level), so ``pytest -n N`` (xdist) workers collect the same items.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import pytest

if TYPE_CHECKING:  # the heavy modules are imported only when --ctxconf-impl is given
    from conformance.checks import CheckSpec
    from conformance.engine import Case
    from conformance.loading import Plugin
    from conformance.protocol import Assembler
    from conformance.workers import WorkerPool

__all__ = ["CtxconfCaseError", "CtxconfItem"]

_LEVELS: Final = ("must", "should", "may")
_MARKERS: Final = {
    "ctxconf_must": "the must checks of a ctxconf case (provider validity, refusal): gated",
    "ctxconf_should": "the should checks of a ctxconf case (the policy): gated with --ctxconf-strict",
    "ctxconf_may": "the may checks of a ctxconf case (cache, degradation, memory): never gated",
    "ctxconf_scenario(level)": "a ctxconf case of a scenario of that level: "
    "-m \"ctxconf_scenario(level='must')\"",
}


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("ctxconf", "ctxconf conformance cases for a context assembler")
    group.addoption(
        "--ctxconf-impl",
        default=None,
        metavar="SPEC",
        help="Assembler to test: 'reference', module:attr, or a ctxconf.assemblers entry point.",
    )
    group.addoption(
        "--ctxconf-impl-shape",
        default=None,
        metavar="SHAPE",
        help="Shape of a plain f(messages, budget) function (default openai-chat).",
    )
    group.addoption(
        "--ctxconf-shapes",
        default=None,
        metavar="SHAPES",
        help="Comma-separated shapes (default: every shape the assembler speaks).",
    )
    group.addoption(
        "--ctxconf-level",
        default="may",
        choices=_LEVELS,
        help="Collect scenarios and run checks up to this level (default may).",
    )
    group.addoption(
        "--ctxconf-scenarios",
        default=None,
        metavar="PATH|IDS",
        help="A scenario file or folder, or comma-separated ids/tags of the built-in corpus.",
    )
    group.addoption(
        "--ctxconf-strict",
        action="store_true",
        default=False,
        help="Also fail on should checks (as ctxconf run --strict); by default only must fails.",
    )
    group.addoption(
        "--ctxconf-timeout",
        default=10.0,
        type=float,
        metavar="SECONDS",
        help="Seconds one assembler call may take before the case is an error (default 10).",
    )
    group.addoption(
        "--ctxconf-in-process",
        action="store_true",
        default=False,
        help="Run the cases in the pytest process, not a supervised worker (for a debugger or "
        "coverage of the plug-in; a crash of the plug-in then ends pytest).",
    )


def pytest_configure(config: pytest.Config) -> None:
    for name, text in _MARKERS.items():
        config.addinivalue_line("markers", f"{name}: {text}")


class CtxconfCaseError(AssertionError):
    """A conformance case did not pass; the message lists what failed."""


class _LastCase:
    """The last case run in this process: a case's items are collected next to each other, so
    its level items share one run."""

    key: tuple[int, int, str] | None = None
    result: Any = None


class _Worker:
    """The supervised worker of this pytest process's session, forked at its first case."""

    session: int | None = None
    pool: WorkerPool | None = None

    @classmethod
    def for_item(cls, item: CtxconfItem) -> WorkerPool:
        from conformance.engine import unrun_result, warm_up  # noqa: PLC0415 - lazy
        from conformance.traffic.verdicts import load_library  # noqa: PLC0415 - lazy
        from conformance.workers import WorkerPool  # noqa: PLC0415 - lazy

        if cls.pool is not None and cls.session == id(item.session):
            return cls.pool
        cls.close()
        library = load_library()
        # What every case needs (encodings, the catalog, validators) is built before the fork.
        warm_up([i.case for i in item.session.items if isinstance(i, CtxconfItem)], library)
        cls.pool = WorkerPool(
            item.plugin, jobs=1, timeout=item.timeout, library=library, failed=unrun_result
        )
        cls.session = id(item.session)
        return cls.pool

    @classmethod
    def close(cls) -> None:
        if cls.pool is not None:
            cls.pool.close()
        cls.pool, cls.session = None, None


def pytest_sessionfinish(session: pytest.Session) -> None:
    if _Worker.session == id(session):
        _Worker.close()


class CtxconfItem(pytest.Item):
    """The checks of one level of one case (a scenario in one shape, dialect and budget)."""

    def __init__(
        self,
        *,
        case: Case,
        plugin: Plugin,
        specs: tuple[CheckSpec, ...],
        timeout: float,
        check_level: str = "must",
        gated: bool = True,
        in_process: bool = False,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.case = case
        self.plugin = plugin
        self.assembler: Assembler = plugin.assemblers[case.shape]
        self.in_process = in_process
        self.specs = specs
        self.timeout = timeout
        self.check_level = check_level
        self.gated = gated
        scenario = case.scenario
        self.add_marker(f"ctxconf_{check_level}")
        # A keyword argument, not a name: -k matches marker names, and -k must is for checks.
        self.add_marker(pytest.mark.ctxconf_scenario(level=scenario.level))
        # Not the scenario's level: -k must selects must checks (the item name's ::must).
        words = [case.shape, *scenario.tags]
        if case.dialect:
            words.append(case.dialect)
        self.extra_keyword_matches.update(words)

    def _result(self) -> Any:
        from conformance.engine import run_case  # noqa: PLC0415 - lazy: see module docstring

        # Keyed by session and assembler too: in-process runs (pytester) reuse case keys.
        key = (id(self.session), id(self.assembler), self.case.key)
        if _LastCase.key != key:
            if self.in_process:
                result = run_case(self.case, self.assembler, self.specs, self.timeout)
            else:
                result = _Worker.for_item(self).run_one(self.case, self.specs)
                for stream, text in (result.plugin_output or {}).items():
                    self.add_report_section("call", f"plug-in {stream}", text)
            _LastCase.result, _LastCase.key = result, key
        return _LastCase.result

    def runtest(self) -> None:
        """Run the case (once for all its items); raise with the failing checks of this level."""
        result = self._result()
        level = self.check_level
        status = result.level_status(level)
        if status in (None, "pass"):
            if result.outcome == "error":
                pytest.skip(f"the case errored; its ::must item says why ({result.reason})")
            return
        lines = [f"{result.key}: {level} checks {status} ({result.outcome})"]
        if result.outcome == "error":
            lines.append(f"  error: {result.reason}")
        for check in result.checks:
            if check.level == level and check.status != "pass":
                lines.append(f"  {check.id} ({check.level}, {check.status}): {check.title}")
                lines.append(f"    {check.message}")
        if result.verdict:
            lines.append(f"  verdict provenance: {result.verdict.get('provenance', '?')}")
        lines.append(f"  scenario: {self.case.scenario.source}")
        if not self.gated:
            strict = " without --ctxconf-strict" if level == "should" else ""
            pytest.xfail(f"not gated ({level}{strict}): " + "\n".join(lines))
        raise CtxconfCaseError("\n".join(lines))

    def repr_failure(
        self,
        excinfo: pytest.ExceptionInfo[BaseException],
        style: Any = None,
    ) -> str:
        """The failing checks (or the error) as the pytest failure text."""
        if isinstance(excinfo.value, CtxconfCaseError):
            return str(excinfo.value)
        return str(super().repr_failure(excinfo, style=style))

    def reportinfo(self) -> tuple[Path, int | None, str]:
        """Where pytest reports the item: the scenario file and the case key."""
        return self.path, None, f"ctxconf {self.case.key}"


def _plan(
    config: pytest.Config,
) -> list[tuple[Case, Plugin, tuple[CheckSpec, ...], tuple[str, ...]]]:
    # Heavy imports only here: a project with ctxconf installed pays nothing without the option.
    from conformance.checks import checks_for  # noqa: PLC0415
    from conformance.commands._options import comma_list  # noqa: PLC0415
    from conformance.engine import plan_cases  # noqa: PLC0415
    from conformance.loading import load_plugin  # noqa: PLC0415
    from conformance.scenarios import (  # noqa: PLC0415
        default_corpus_path,
        load_corpus,
        select,
        unknown_selectors,
    )
    from reference_impl.errors import CtxconfError  # noqa: PLC0415
    from reference_impl.transcript import SHAPE_NAMES  # noqa: PLC0415

    spec: str = config.getoption("ctxconf_impl")
    level = config.getoption("ctxconf_level")
    chosen_shapes = config.getoption("ctxconf_shapes")
    scenarios_spec = config.getoption("ctxconf_scenarios")
    try:
        plugin = load_plugin(spec, impl_shape=config.getoption("ctxconf_impl_shape"))
        if scenarios_spec is not None and not comma_list(scenarios_spec):
            raise pytest.UsageError(
                f"--ctxconf-scenarios {scenarios_spec!r} names nothing; give a scenario file or "
                "folder, or ids and tags of the corpus (`ctxconf scenarios list` shows them)"
            )
        if scenarios_spec is not None and Path(scenarios_spec).exists():
            scenarios = select(load_corpus(Path(scenarios_spec)), level=level)
        else:
            selectors = comma_list(scenarios_spec or "")
            root = default_corpus_path()
            corpus = load_corpus(root)
            unknown = unknown_selectors(corpus, selectors)
            if unknown:
                raise pytest.UsageError(
                    f"--ctxconf-scenarios: {', '.join(unknown)} names no scenario id or tag of "
                    f"the corpus at {root}; `ctxconf scenarios list` shows them"
                )
            scenarios = select(corpus, selectors=selectors, level=level)
            if selectors and not scenarios:
                raise pytest.UsageError(
                    f"--ctxconf-scenarios {scenarios_spec!r} is neither a file or folder nor an "
                    f"id or tag of the corpus at {root}; `ctxconf scenarios list` shows them"
                )
    except CtxconfError as exc:
        where = f"{exc.where}: " if exc.where else ""
        raise pytest.UsageError(f"ctxconf: {where}{exc.message}") from None
    shapes = None
    if chosen_shapes:
        shapes = list(comma_list(chosen_shapes))
        unknown = [s for s in shapes if s not in SHAPE_NAMES]
        if unknown:
            raise pytest.UsageError(
                f"--ctxconf-shapes: unknown shape {unknown[0]!r}; choose from {', '.join(SHAPE_NAMES)}"
            )
    specs = {s.id: checks_for(s, level=level) for s in scenarios}
    levels = {
        sid: tuple(lv for lv in _LEVELS if lv == "must" or any(c.level == lv for c in found))
        for sid, found in specs.items()
    }
    return [
        (case, plugin, specs[case.scenario.id], levels[case.scenario.id])
        for case in plan_cases(scenarios, plugin.shapes, shapes, assemblers=plugin.assemblers)
    ]


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(
    session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
) -> None:
    # tryfirst: the items must exist before -k and -m deselect (they run in later implementations).
    if not config.getoption("ctxconf_impl", default=None):
        return
    from conformance.scenarios import GATE_LEVELS, STRICT_GATE_LEVELS  # noqa: PLC0415

    timeout = float(config.getoption("ctxconf_timeout"))
    in_process = bool(config.getoption("ctxconf_in_process"))
    gate = STRICT_GATE_LEVELS if config.getoption("ctxconf_strict") else GATE_LEVELS
    added = [
        CtxconfItem.from_parent(
            session,
            # The case key's ``[shape@budget]`` ends the node id, where pytest reads a node's
            # parameters (pytest 9 parses ids so; a level after the bracket was shown with an
            # extra ``]``).
            name=f"{check_level}::{case.key}",
            nodeid=f"ctxconf::{check_level}::{case.key}",
            path=Path(case.scenario.source),
            case=case,
            plugin=plugin,
            specs=specs,
            timeout=timeout,
            check_level=check_level,
            gated=check_level in gate,
            in_process=in_process,
        )
        for case, plugin, specs, levels in _plan(config)
        for check_level in levels
    ]
    items.extend(added)
    # Announced as collected, so the terminal's "collected N items / D deselected" counts them
    # (it counts collection reports; unannounced, it said "collected 0 items / -213 selected").
    config.hook.pytest_collectreport(
        report=pytest.CollectReport("ctxconf", "passed", None, list(added))
    )
