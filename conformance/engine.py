"""The engine: runs scenarios x shapes x dialects x budgets through one plug-in and emits events.

For each case and each turn of its scenario the engine renders the session into the case's
shape (that body is what the plug-in receives), calls the plug-in under a timeout, parses what it
returned back into the transcript, asks for a verdict (a recorded round trip when a cassette
matches the request's skeleton, else the validators: the verdict says which), counts the view with
the reference counter, maps the view back to the session by content identity, and runs the checks.

Hung plug-ins: the call runs in a daemon worker thread and the engine waits ``timeout`` seconds.
A Python thread cannot be killed, so a hung call is *abandoned*: the case becomes an ``error``
result ("timed out"), the worker stays blocked in the background until the process exits (daemon
threads do not block exit), the next case gets a fresh worker, and the footer counts abandoned
calls. A plug-in that hangs in C code holding
the GIL would stall the run; run such plug-ins with ``--jobs N`` (worker processes), where only
the worker is stuck.

``jobs > 1`` forks worker processes (POSIX ``fork``: the loaded plug-in is inherited, nothing is
pickled except results); results are emitted in case order, so the output is the same for any N.
"""

from __future__ import annotations

import copy
import multiprocessing
import os
import queue
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from importlib import metadata
from typing import Any, Final, Literal

from conformance.checks import CaseOutcome, CheckSpec, TurnOutcome, checks_for, run_checks
from conformance.events import (
    CaseFinished,
    CaseResult,
    CaseStarted,
    Event,
    RunFinished,
    RunStarted,
    level_totals,
)
from conformance.identity import map_view
from conformance.loading import Plugin
from conformance.protocol import PROTOCOL_VERSION, Assembler, AssemblyRequest
from conformance.providers.validation import validate_request
from conformance.providers.verdict import Verdict
from conformance.recorded_verdicts import recorded_verdict
from conformance.scenarios import Level, Scenario
from reference_impl.errors import ContextAssemblyError, CtxconfError
from reference_impl.shapes import get_shape
from reference_impl.tokens import TokenCounter, counter_for
from reference_impl.transcript import (
    SHAPE_NAMES,
    Transcript,
    canonical_json,
    params_from_mapping,
)

__all__ = [
    "DEFAULT_MODELS",
    "DEFAULT_TIMEOUT",
    "Case",
    "judge",
    "plan_cases",
    "reference_counter",
    "render_input",
    "run_case",
    "run_events",
]

DEFAULT_TIMEOUT: Final = 10.0
# The model a case names when its scenario does not; it picks the reference counter's encoding.
DEFAULT_MODELS: Final[Mapping[str, str]] = {
    # Equal to conformance.roundtrip.DEFAULT_MODELS (a test pins it): cassettes match by skeleton,
    # which includes the model family, so a replayed verdict needs the same model.
    "openai-chat": "gpt-4o-mini",
    "openai-responses": "gpt-4o-mini",
    "anthropic-messages": "claude-haiku-4-5",
    "gemini": "gemini-2.5-flash",
    "bedrock-converse": "us.anthropic.claude-haiku-4-5-20251001-v1:0",
}
_COUNTERS: dict[tuple[str, str], TokenCounter] = {}
_COUNTERS_LOCK = threading.Lock()


@dataclass(frozen=True, slots=True)
class Case:
    index: int
    scenario: Scenario
    shape: str
    dialect: str | None
    budget: int

    @property
    def key(self) -> str:
        dialect = f"/{self.dialect}" if self.dialect else ""
        return f"{self.scenario.id}[{self.shape}{dialect}@{self.budget}]"


def plan_cases(
    scenarios: Sequence[Scenario], plugin_shapes: Sequence[str], shapes: Sequence[str] | None = None
) -> list[Case]:
    """Every case in a fixed order: scenario, then shape (catalog order), dialect, budget."""
    wanted = [s for s in SHAPE_NAMES if s in plugin_shapes and (shapes is None or s in shapes)]
    cases: list[Case] = []
    for scenario in scenarios:
        for shape in wanted:
            if shape not in scenario.shapes:
                continue
            for dialect in scenario.dialects:
                for budget in scenario.budget.for_shape(shape):
                    cases.append(Case(len(cases), scenario, shape, dialect, budget))
    return cases


def reference_counter(shape: str, model: str) -> TokenCounter:
    """The reference counter for a shape and model, shared (its memo is what makes runs fast)."""
    with _COUNTERS_LOCK:
        key = (shape, model)
        if key not in _COUNTERS:
            _COUNTERS[key] = counter_for(shape, model)
        return _COUNTERS[key]


def judge(
    body: Mapping[str, Any], shape: str, dialect: str | None, model: str | None = None
) -> Verdict:
    """A recorded verdict when a cassette holds a request of this skeleton, else the validators."""
    recorded = recorded_verdict(body, shape, dialect=dialect, model=model)
    if recorded is not None:
        return recorded
    return validate_request(body, shape, dialect=dialect)


# ----------------------------------------------------------------------------- calling a plug-in

CallResult = tuple[Literal["returned", "raised", "timeout"], Any]


class _PluginCaller:
    """One long-lived daemon worker thread per engine thread: starting a thread per call costs
    milliseconds, a queue hand-off microseconds. A call that times out abandons its worker (it
    stays blocked in the plug-in until the process exits) and the next call starts a fresh one."""

    def __init__(self) -> None:
        self._inbox: queue.SimpleQueue[tuple[Callable[[], Any], queue.SimpleQueue[CallResult]]]
        self._worker: threading.Thread | None = None

    def _serve(
        self, inbox: queue.SimpleQueue[tuple[Callable[[], Any], queue.SimpleQueue[CallResult]]]
    ) -> None:
        while True:
            function, box = inbox.get()
            try:
                box.put(("returned", function()))
            except BaseException as exc:  # noqa: BLE001 - a plug-in's crash is data, even SystemExit
                box.put(("raised", exc))

    def call(self, function: Callable[[], Any], timeout: float) -> CallResult:
        if self._worker is None:
            self._inbox = queue.SimpleQueue()
            self._worker = threading.Thread(
                target=self._serve, args=(self._inbox,), name="ctxconf-plugin-call", daemon=True
            )
            self._worker.start()
        box: queue.SimpleQueue[CallResult] = queue.SimpleQueue()
        self._inbox.put((function, box))
        try:
            return box.get(timeout=timeout)
        except queue.Empty:
            self._worker = None  # abandoned: still inside the plug-in
            return ("timeout", None)


_CALLERS = threading.local()


def call_with_timeout(function: Callable[[], Any], timeout: float) -> CallResult:
    """Run ``function`` in a daemon worker thread; abandon it after ``timeout`` seconds."""
    caller: _PluginCaller | None = getattr(_CALLERS, "caller", None)
    # A forked worker process inherits the object but not its thread: start afresh there.
    if caller is None or getattr(_CALLERS, "pid", None) != os.getpid():
        caller = _CALLERS.caller = _PluginCaller()
        _CALLERS.pid = os.getpid()
    return caller.call(function, timeout)


def render_input(scenario: Scenario, session: Transcript, shape: str) -> dict[str, Any]:
    prepared = replace(
        session,
        model=scenario.models.get(shape, DEFAULT_MODELS[shape]),
        params=params_from_mapping(scenario.params.get(shape, {})),
    )
    return get_shape(shape).render_request(prepared)


def _turn(
    case: Case, assembler: Assembler, turn: int, session: Transcript, timeout: float
) -> TurnOutcome:
    scenario, shape = case.scenario, case.shape
    adapter = get_shape(shape)
    input_body = render_input(scenario, session, shape)
    baseline = adapter.parse_request(input_body)
    model = scenario.models.get(shape, DEFAULT_MODELS[shape])
    counter = reference_counter(shape, model)
    request = AssemblyRequest(
        scenario_id=scenario.id,
        shape=shape,
        body=copy.deepcopy(input_body),
        budget=case.budget,
        counter=counter,
        ledger=tuple(dict(e) for e in scenario.ledger),
        memory=tuple(dict(m) for m in scenario.memory),
        config=dict(scenario.config),
        dialect=case.dialect,
        turn=turn,
    )
    base = TurnOutcome(turn=turn, status="error", session=baseline, input_body=input_body)
    kind, value = call_with_timeout(lambda: assembler.assemble(request), timeout)
    if kind == "timeout":
        return replace(
            base,
            reason=f"timed out after {timeout:g}s; the call was abandoned in a daemon thread",
        )
    if kind == "raised":
        if isinstance(value, ContextAssemblyError):
            return replace(base, status="refused", refusal_code=value.code, reason=value.message)
        return replace(base, reason=f"the plug-in raised {type(value).__name__}: {value}")
    if not isinstance(value, Mapping):
        return replace(
            base,
            reason=f"malformed return: {type(value).__name__}, expected a {shape} request body "
            f"(a mapping)",
        )
    try:
        body = dict(value)
        canonical_json(body)
        view = adapter.parse_request(body)
    except CtxconfError as exc:
        where = f" at {exc.where}" if exc.where else ""
        return replace(
            base,
            body=value,
            reason=f"malformed return: not a {shape} request{where}: {exc.message}",
        )
    except (TypeError, ValueError) as exc:
        return replace(base, body=value, reason=f"malformed return: not JSON data ({exc})")
    return replace(
        base,
        status="assembled",
        body=body,
        view=view,
        identity=map_view(baseline, view, ledger=scenario.ledger, memory=scenario.memory),
        verdict=judge(body, shape, case.dialect, model),
        tokens=counter.count(view).total,
    )


def run_case(
    case: Case, assembler: Assembler, specs: Sequence[CheckSpec], timeout: float
) -> CaseResult:
    """One case, every turn, judged; never raises for anything the plug-in does."""
    started = time.perf_counter()
    turns: list[TurnOutcome] = []
    for number, session in enumerate(case.scenario.sessions()):
        try:
            outcome = _turn(case, assembler, number, session, timeout)
        except CtxconfError as exc:  # the corpus, not the plug-in: `scenarios validate` says so
            outcome = TurnOutcome(
                turn=number,
                status="error",
                session=session,
                input_body={},
                reason=f"the scenario cannot be rendered in {case.shape}: {exc}",
            )
        turns.append(outcome)
        if outcome.status == "error":
            break
    model = case.scenario.models.get(case.shape, DEFAULT_MODELS[case.shape])
    result = CaseOutcome(
        case.shape,
        case.dialect,
        case.budget,
        reference_counter(case.shape, model).name,
        tuple(turns),
    )
    error = result.error
    checks = () if error else tuple(run_checks(case.scenario, result, specs))
    if error:
        status: Literal["pass", "fail", "error"] = "error"
    elif any(c.status == "error" for c in checks):
        status = "error"
    else:
        status = "fail" if any(c.status == "fail" for c in checks) else "pass"
    last = result.last
    judged = next((t for t in reversed(turns) if t.verdict is not None), None)
    return CaseResult(
        index=case.index,
        scenario=case.scenario.id,
        title=case.scenario.title,
        level=case.scenario.level,
        shape=case.shape,
        dialect=case.dialect,
        budget=case.budget,
        status=status,
        outcome="error" if error else last.status,
        checks=checks,
        tags=case.scenario.tags,
        sweep=case.scenario.budget.is_sweep,
        turns=len(case.scenario.turns) + 1,
        verdict=judged.verdict.to_dict() if judged and judged.verdict else None,
        tokens=last.tokens,
        counter=result.counter,
        reason=error or last.reason,
        refusal_code=last.refusal_code,
        seconds=time.perf_counter() - started,
        input=dict(last.input_body) if status != "pass" else None,
        output=_jsonable(last.body) if status != "pass" else None,
    )


def _jsonable(body: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    if body is None:
        return None
    try:
        canonical_json(body)
    except (TypeError, ValueError):
        return {"unserializable": repr(body)[:2000]}
    return dict(body)


# ------------------------------------------------------------------------------------ the run

# Set before forking workers: children inherit the loaded plug-in and the plan, nothing pickled.
_WORKER: dict[str, Any] = {}


def _worker_case(index: int) -> CaseResult:
    case: Case = _WORKER["cases"][index]
    assembler = _WORKER["plugin"].assemblers[case.shape]
    return run_case(case, assembler, _WORKER["specs"][case.scenario.id], _WORKER["timeout"])


def _results(
    cases: Sequence[Case],
    plugin: Plugin,
    specs: Mapping[str, Sequence[CheckSpec]],
    timeout: float,
    jobs: int,
) -> Iterator[CaseResult]:
    if jobs <= 1 or len(cases) < 2:
        for case in cases:
            yield run_case(case, plugin.assemblers[case.shape], specs[case.scenario.id], timeout)
        return
    _WORKER.update(cases=cases, plugin=plugin, specs=specs, timeout=timeout)
    context = multiprocessing.get_context("fork")
    with ProcessPoolExecutor(max_workers=jobs, mp_context=context) as pool:
        yield from pool.map(_worker_case, range(len(cases)), chunksize=8)
    _WORKER.clear()


def _version() -> str:
    try:
        return metadata.version("ctxconf")
    except metadata.PackageNotFoundError:  # running from a bare checkout
        return "0+unknown"


def run_events(
    plugin: Plugin,
    scenarios: Sequence[Scenario],
    *,
    shapes: Sequence[str] | None = None,
    level: Level = "may",
    timeout: float = DEFAULT_TIMEOUT,
    jobs: int = 1,
    strict: bool = False,
    corpus: str = "",
) -> Iterator[Event]:
    """Plan and run every case; yield RunStarted, CaseStarted/CaseFinished pairs, RunFinished."""
    cases = plan_cases(scenarios, plugin.shapes, shapes)
    specs = {s.id: checks_for(s, level=level) for s in scenarios}
    clock = time.perf_counter()
    yield RunStarted(
        plugin=plugin.name,
        shapes=tuple(s for s in SHAPE_NAMES if s in plugin.shapes and (not shapes or s in shapes)),
        level=level,
        case_count=len(cases),
        scenario_count=len({c.scenario.id for c in cases}),
        corpus=corpus,
        started=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        ctxconf_version=_version(),
        protocol_version=PROTOCOL_VERSION,
        timeout=timeout,
        jobs=jobs,
        strict=strict,
    )
    results: list[CaseResult] = []
    for result in _results(cases, plugin, specs, timeout, jobs):
        yield CaseStarted(result.index, cases[result.index].key)
        results.append(result)
        yield CaseFinished(result)
    totals = level_totals(results)
    gate: tuple[Level, ...] = ("must", "should") if strict else ("must",)
    statuses = {s: sum(1 for r in results if r.status == s) for s in ("pass", "fail", "error")}
    yield RunFinished(
        totals=totals,
        statuses=statuses,
        seconds=time.perf_counter() - clock,
        abandoned_threads=sum(1 for r in results if (r.reason or "").startswith("timed out")),
        exit_status=0 if all(totals[g].ok for g in gate) else 1,
    )
