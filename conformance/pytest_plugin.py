"""The pytest plug-in: one test item per scenario x shape (x budget) for an assembler.

Registered under the ``pytest11`` entry point, so it is active wherever ctxconf is installed; it
does nothing (and imports nothing heavy) unless ``--ctxconf-impl`` is given::

    pytest --ctxconf-impl=mypkg.ctx:assemble [--ctxconf-impl-shape openai-chat]
           [--ctxconf-shapes openai-chat,anthropic-messages] [--ctxconf-level should]
           [--ctxconf-scenarios PATH|ids,tags] [--ctxconf-timeout 10]

Items are named ``scenario-id[shape@budget]`` (``shape/dialect`` for gateway dialects), carry a
``ctxconf_must`` / ``ctxconf_should`` / ``ctxconf_may`` marker for the scenario's level, and match
``-k`` on the scenario id, shape, dialect, level and tags. A failing item's message lists the failed
checks with their titles and messages (message indices, ids, the verdict's provenance). Collection
is deterministic (corpus order, then shape, dialect, budget), so ``pytest -n N`` (xdist) workers
collect the same items.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import pytest

if TYPE_CHECKING:  # the heavy modules are imported only when --ctxconf-impl is given
    from conformance.checks import CheckSpec
    from conformance.engine import Case
    from conformance.protocol import Assembler

__all__ = ["CtxconfCaseError", "CtxconfItem"]

_MARKERS: Final = {
    "ctxconf_must": "a ctxconf conformance case of a must scenario (provider validity, refusal)",
    "ctxconf_should": "a ctxconf conformance case of a should scenario (the policy)",
    "ctxconf_may": "a ctxconf conformance case of a may scenario (cache, degradation, memory)",
}
_LEVELS: Final = ("must", "should", "may")


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
        "--ctxconf-timeout",
        default=10.0,
        type=float,
        metavar="SECONDS",
        help="Seconds one assembler call may take before the case is an error (default 10).",
    )


def pytest_configure(config: pytest.Config) -> None:
    for name, text in _MARKERS.items():
        config.addinivalue_line("markers", f"{name}: {text}")


class CtxconfCaseError(AssertionError):
    """A conformance case did not pass; the message lists what failed."""


class CtxconfItem(pytest.Item):
    """One case: a scenario in one shape (and dialect) at one budget."""

    def __init__(
        self,
        *,
        case: Case,
        assembler: Assembler,
        specs: tuple[CheckSpec, ...],
        timeout: float,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.case = case
        self.assembler = assembler
        self.specs = specs
        self.timeout = timeout
        scenario = case.scenario
        self.add_marker(f"ctxconf_{scenario.level}")
        words = [case.shape, scenario.level, *scenario.tags]
        if case.dialect:
            words.append(case.dialect)
        self.extra_keyword_matches.update(words)

    def runtest(self) -> None:
        """Run the case; raise with the failing checks' text when it does not pass."""
        from conformance.engine import run_case  # noqa: PLC0415 - lazy: see module docstring

        result = run_case(self.case, self.assembler, self.specs, self.timeout)
        if result.status == "pass":
            return
        lines = [f"{result.key}: {result.status} ({result.outcome})"]
        if result.status == "error" and not result.checks:
            lines.append(f"  error: {result.reason}")
        for check in result.checks:
            if check.status != "pass":
                lines.append(f"  {check.id} ({check.level}, {check.status}): {check.title}")
                lines.append(f"    {check.message}")
        if result.verdict:
            lines.append(f"  verdict provenance: {result.verdict.get('provenance', '?')}")
        lines.append(f"  scenario: {self.case.scenario.source}")
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


def _plan(config: pytest.Config) -> list[tuple[Case, Assembler, tuple[CheckSpec, ...]]]:
    # Heavy imports only here: a project with ctxconf installed pays nothing without the option.
    from conformance.checks import checks_for  # noqa: PLC0415
    from conformance.engine import plan_cases  # noqa: PLC0415
    from conformance.loading import load_plugin  # noqa: PLC0415
    from conformance.scenarios import default_corpus_path, load_corpus, select  # noqa: PLC0415
    from reference_impl.errors import CtxconfError  # noqa: PLC0415
    from reference_impl.transcript import SHAPE_NAMES  # noqa: PLC0415

    spec: str = config.getoption("ctxconf_impl")
    level = config.getoption("ctxconf_level")
    chosen_shapes = config.getoption("ctxconf_shapes")
    scenarios_spec = config.getoption("ctxconf_scenarios")
    try:
        plugin = load_plugin(spec, impl_shape=config.getoption("ctxconf_impl_shape"))
        if scenarios_spec is not None and Path(scenarios_spec).exists():
            scenarios = select(load_corpus(Path(scenarios_spec)), level=level)
        else:
            selectors = [s.strip() for s in (scenarios_spec or "").split(",") if s.strip()]
            root = default_corpus_path()
            scenarios = select(load_corpus(root), selectors=selectors, level=level)
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
        shapes = [s.strip() for s in chosen_shapes.split(",") if s.strip()]
        unknown = [s for s in shapes if s not in SHAPE_NAMES]
        if unknown:
            raise pytest.UsageError(
                f"--ctxconf-shapes: unknown shape {unknown[0]!r}; choose from {', '.join(SHAPE_NAMES)}"
            )
    specs = {s.id: checks_for(s, level=level) for s in scenarios}
    return [
        (case, plugin.assemblers[case.shape], specs[case.scenario.id])
        for case in plan_cases(scenarios, plugin.shapes, shapes, assemblers=plugin.assemblers)
    ]


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(
    session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
) -> None:
    # tryfirst: the items must exist before -k and -m deselect (they run in later implementations).
    if not config.getoption("ctxconf_impl", default=None):
        return
    timeout = float(config.getoption("ctxconf_timeout"))
    for case, assembler, specs in _plan(config):
        items.append(
            CtxconfItem.from_parent(
                session,
                name=case.key,
                nodeid=f"ctxconf::{case.key}",
                path=Path(case.scenario.source),
                case=case,
                assembler=assembler,
                specs=specs,
                timeout=timeout,
            )
        )
