"""The engine: runs scenarios x shapes x dialects x budgets through one plug-in and emits events.

For each case and each turn of its scenario the engine renders the session into the case's
shape (that body is what the plug-in receives), calls the plug-in under a timeout, parses what it
returned back into the transcript, asks for a verdict (a recorded round trip when a cassette
matches the request's skeleton, else the validators: the verdict says which), counts the view with
the reference counter, maps the view back to the session by content identity, and runs the checks.

Cassettes: the library under ``cassettes/`` (or ``$CTXCONF_CASSETTES``) is read once per run
(:func:`conformance.traffic.verdicts.load_library`) and each verdict is a dictionary lookup by
skeleton; the validators run too, so a recording that they contradict on its own request is a
stale cassette (a ``provider_valid`` failure saying so), never silently overruled (a recording
of another body of the skeleton, whose own request they judge as recorded but this body
otherwise, answers nothing for it).

Isolation (:mod:`conformance.workers`): ``run_events`` runs every case in a supervised worker
process forked after a warm-up (the tokenizer encodings, the rule catalog and the validators are
built once, in the parent, and inherited). A plug-in that crashes its process, hangs past the
timeout or prints turns that case into an ``error`` result (or keeps the printout in the case
record), the worker is replaced, and the run goes on; ``jobs`` is the number of workers. Results
are emitted in case order, so the output is the same for any N.

Run-level budgets: ``max_consecutive_timeouts`` stops the run after that many timed-out cases in
a row, ``max_seconds`` after that much wall time; a :class:`conformance.workers.RunStop` (SIGINT,
SIGTERM) stops it too. The footer says why (``stopped``) and how many cases were not run.

:func:`run_case` on its own (the pytest plug-in, library use) calls the plug-in in-process in a
daemon worker thread that is abandoned at the timeout (:func:`call_with_timeout`).
"""

from __future__ import annotations

import copy
import hashlib
import json
import logging
import os
import queue
import reprlib
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from importlib import metadata
from typing import Any, Final, Literal

from conformance.blame import raised_at
from conformance.case_markup import case_markup
from conformance.checks import CaseOutcome, CheckSpec, TurnOutcome, checks_for, run_checks
from conformance.checks.outcome import first_difference
from conformance.events import (
    CaseFinished,
    CaseResult,
    CaseStarted,
    Event,
    RunFinished,
    RunStarted,
    level_totals,
)
from conformance.identity import Declarations, map_view
from conformance.loading import Plugin
from conformance.protocol import PROTOCOL_VERSION, Assembler, AssemblyRequest, MalformedReturnError
from conformance.scenarios import (
    DEFAULT_MODELS,
    GATE_LEVELS,
    STRICT_GATE_LEVELS,
    Level,
    Scenario,
)
from conformance.traffic.verdicts import CassetteLibrary, Judgement, judge_request, load_library
from conformance.workers import JUDGE_TIMEOUT, RunStop, WorkerPool
from reference_impl.documents import INPUT_LIMIT_ENV, max_input_bytes, non_finite_number
from reference_impl.errors import ContextAssemblyError, CtxconfError
from reference_impl.shapes import get_shape
from reference_impl.shapes.dialects import render_for_dialect
from reference_impl.steps.normalize import normalize_view
from reference_impl.tokens import TokenCounter, counter_for
from reference_impl.transcript import (
    SHAPE_NAMES,
    Transcript,
    canonical_json,
    params_from_mapping,
)
from reference_impl.wording import with_article

_log = logging.getLogger(__name__)

__all__ = [
    "DEFAULT_MAX_CONSECUTIVE_TIMEOUTS",
    "DEFAULT_MODELS",
    "DEFAULT_TIMEOUT",
    "CallResult",
    "Case",
    "assembly_request",
    "call_plugin",
    "call_with_timeout",
    "exception_text",
    "judge",
    "plain_body",
    "plan_cases",
    "reference_counter",
    "render_input",
    "run_case",
    "run_events",
    "set_call_hook",
    "unrun_result",
    "warm_up",
]

DEFAULT_TIMEOUT: Final = 10.0
DEFAULT_MAX_CONSECUTIVE_TIMEOUTS: Final = 5
_COUNTERS: dict[tuple[str, str], TokenCounter] = {}
_COUNTERS_LOCK = threading.Lock()


@dataclass(frozen=True, slots=True)
class Case:
    """One planned case: a scenario in one shape, dialect and budget; ``index`` is its place in the
    run."""

    index: int
    scenario: Scenario
    shape: str
    dialect: str | None
    budget: int

    @property
    def key(self) -> str:
        """``scenario[shape/dialect@budget]``: the case's stable name in reports and baselines."""
        dialect = f"/{self.dialect}" if self.dialect else ""
        return f"{self.scenario.id}[{self.shape}{dialect}@{self.budget}]"


def plan_cases(
    scenarios: Sequence[Scenario],
    plugin_shapes: Sequence[str],
    shapes: Sequence[str] | None = None,
    *,
    assemblers: Mapping[str, object] | None = None,
) -> list[Case]:
    """Every case in a fixed order: scenario, then shape (catalog order), dialect, budget.

    With ``assemblers``, a case is left out when its shape's assembler says it cannot be judged
    on it (``can_be_judged_on(dialect, expected_checks)``: a plain message function that does not
    see the dialect or the tools, see :class:`conformance.protocol.MessageListAssembler`)."""
    wanted = [s for s in SHAPE_NAMES if s in plugin_shapes and (shapes is None or s in shapes)]
    cases: list[Case] = []
    for scenario in scenarios:
        for shape in wanted:
            if shape not in scenario.shapes:
                continue
            judgeable = getattr((assemblers or {}).get(shape), "can_be_judged_on", None)
            for dialect in scenario.dialects:
                if judgeable is not None and not judgeable(dialect, scenario.expect.checks):
                    continue
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
    body: Mapping[str, Any],
    shape: str,
    dialect: str | None,
    model: str | None = None,
    *,
    library: CassetteLibrary | None = None,
) -> Judgement:
    """A recorded verdict when a cassette holds a request of this skeleton, else the validators;
    both when they disagree (a stale cassette)."""
    chosen = library if library is not None else load_library()
    return judge_request(body, shape, dialect=dialect, model=model, library=chosen)


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


_CALL_HOOK: list[Callable[[str], None]] = []


def set_call_hook(announce: Callable[[str], None] | None) -> None:
    """In a supervised worker: call the plug-in directly in this thread, announcing ``call``
    before and ``done`` after, so the supervisor can time the call and kill the process."""
    _CALL_HOOK.clear()
    if announce is not None:
        _CALL_HOOK.append(announce)


def call_plugin(function: Callable[[], Any], timeout: float) -> CallResult:
    """Call the plug-in's ``function``: announced to the supervisor in a supervised process (see
    :func:`set_call_hook`), else under :func:`call_with_timeout`. Never raises what it raises."""
    if not _CALL_HOOK:
        return call_with_timeout(function, timeout)
    announce = _CALL_HOOK[0]
    announce("call")
    try:
        return ("returned", function())
    except BaseException as exc:  # noqa: BLE001 - a plug-in's crash is data, even SystemExit
        return ("raised", exc)
    finally:
        announce("done")


def render_input(
    scenario: Scenario,
    session: Transcript,
    shape: str,
    dialect: str | None = None,
    *,
    merge_turns: bool = True,
) -> dict[str, Any]:
    """The session rendered as a request body in ``shape`` (and ``dialect``), with the scenario's
    model and params: a body the target accepts as it stands, unless the scenario declares its
    input invalid (``expect.input: invalid``, the broken-pairing corpus).

    The neutral session keeps a ring's results and the next user text as two messages; where the
    target requires alternation (Bedrock B3, Gemini G1) they are one wire turn, merged exactly as
    :func:`reference_impl.steps.normalize.normalize_view` merges them (content and order kept).
    A gateway dialect gets its own renderer (Ollama, LM Studio, llama.cpp: ``""`` for a tool-call
    turn's ``content: null``, OL2/LM1/LC1); ids are never rewritten, so a scenario for Mistral
    brings Mistral ids itself. ``tests/conformance/test_engine_input_validity.py`` runs every case's
    input through the validators of its profile.

    ``merge_turns=False`` keeps the session's messages as they are: the harness judges a view
    against that form (each user turn its own message), so an assembler that keeps a merged
    turn's user text but summarizes or drops the ring whose results shared the turn is judged
    on what it kept, not read as inventing a user turn.
    """
    messages = normalize_view(session.messages, shape)[0] if merge_turns else session.messages
    prepared = replace(
        session,
        messages=messages,
        model=scenario.model_for(shape),
        params=params_from_mapping(scenario.params_for(shape)),
    )
    if dialect is not None and shape == "openai-chat":
        return render_for_dialect(prepared, dialect)
    return get_shape(shape).render_request(prepared)


def assembly_request(case: Case, turn: int, session: Transcript) -> AssemblyRequest:
    """What the plug-in receives for one turn of a case (``ctxconf record`` builds the reference
    assembler's requests through this too, so the cassettes hold exactly what a run sends)."""
    scenario, shape = case.scenario, case.shape
    input_body = render_input(scenario, session, shape, case.dialect)
    model = scenario.model_for(shape)
    return AssemblyRequest(
        scenario_id=scenario.id,
        shape=shape,
        body=input_body,
        budget=case.budget,
        counter=reference_counter(shape, model),
        ledger=tuple(dict(e) for e in scenario.ledger),
        memory=tuple(dict(m) for m in scenario.memory),
        config=dict(scenario.config),
        dialect=case.dialect,
        turn=turn,
    )


def _turn(
    case: Case,
    assembler: Assembler,
    turn: int,
    session: Transcript,
    timeout: float,
    *,
    library: CassetteLibrary | None,
) -> TurnOutcome:
    scenario, shape = case.scenario, case.shape
    adapter = get_shape(shape)
    prepared = assembly_request(case, turn, session)
    input_body = prepared.body
    # The session the view is judged against: the same request with the neutral session's
    # messages unmerged (a merged wire turn is two session messages, see render_input).
    baseline = adapter.parse_request(
        render_input(scenario, session, shape, case.dialect, merge_turns=False)
    )
    model = scenario.model_for(shape)
    counter = prepared.counter
    request = replace(prepared, body=copy.deepcopy(input_body))
    base = TurnOutcome(
        turn=turn, status="error", session=baseline, input_body=input_body, counter=counter
    )
    limit = max_input_bytes()
    kind, value = call_plugin(lambda: _Returned.of(assembler.assemble(request), limit), timeout)
    if kind != "timeout":  # the harness judges its own copy; a changed one is reported
        base = replace(base, input_mutation=_mutation(input_body, request.body))
    if kind == "timeout":
        return replace(
            base,
            reason=f"timed out after {timeout:g}s; the call was abandoned in a daemon thread",
        )
    if kind == "raised":
        if isinstance(value, ContextAssemblyError):
            return replace(base, status="refused", refusal_code=value.code, reason=value.message)
        if isinstance(value, MalformedReturnError):  # the wrapper's finding on the return, no raise
            return replace(base, reason=f"malformed return: {value}")
        where = raised_at(value, assembler)  # its own line, not the harness's
        return replace(base, reason=f"the plug-in raised {exception_text(value)}{where}")
    returned: _Returned = value
    if returned.body is None:
        what = returned.problem or "not JSON data"
        if returned.type_name is not None:
            what = f"{returned.type_name}, expected {with_article(shape)} request body (a mapping)"
        shown = None if returned.shown is None else {"unserializable": returned.shown}
        return replace(base, body=shown, reason=f"malformed return: {what}")
    body = returned.body
    try:
        view = adapter.parse_request(body)
    except CtxconfError as exc:
        where = f" at {exc.where}" if exc.where else ""
        return replace(
            base,
            body=body,
            reason=f"malformed return: not {with_article(shape)} request{where}: {exc.message}",
        )
    judgement = judge(body, shape, case.dialect, model, library=library)
    return replace(
        base,
        status="assembled",
        body=body,
        view=view,
        identity=map_view(
            baseline,
            view,
            ledger=scenario.ledger,
            memory=scenario.memory,
            declared=Declarations.of(assembler),
        ),
        verdict=judgement.verdict,
        judgement=judgement,
        tokens=counter.count(view).total,
    )


@dataclass(frozen=True, slots=True)
class _Returned:
    """What a plug-in call returned, made into the harness's own plain JSON data while the call's
    time still runs (so a body too big to copy times out as the plug-in's call, not the harness's).

    The copy goes through JSON text: whatever the plug-in's objects do (a ``str`` subclass with a
    raising ``__eq__``, a mapping whose ``keys`` raise, a self-referential list, nesting deeper than
    the interpreter can walk, a set), the harness only ever touches dicts, lists, strings, numbers,
    booleans and ``None`` it built itself, or names why it could not. A body whose JSON text is
    over the input limit (:func:`reference_impl.documents.max_input_bytes`, the limit every input
    file is read within) is refused before it is parsed: no provider takes such a request, and
    judging it would cost minutes and gigabytes."""

    body: dict[str, Any] | None
    problem: str | None = None
    type_name: str | None = None
    """Set when the plug-in returned something other than a mapping (its type's name)."""
    shown: str | None = None
    """A short picture of a mapping that is not a body (bounded ``reprlib`` text), for the report."""

    @classmethod
    def of(cls, value: object, limit: int | None) -> _Returned:
        """``value`` as plain JSON data, or why it is not a request body; never raises."""
        if not isinstance(value, Mapping):
            return cls(None, type_name=type(value).__name__)
        text: str | None = None
        try:
            text = json.dumps(value, ensure_ascii=False)  # NaN and Infinity pass: named below
            canonical_json(value)  # the checks' form: refuses NaN, mixed key types, sets, objects
        except RecursionError:
            return cls.refused(value, "not JSON data (nested deeper than the interpreter can walk)")
        except (TypeError, ValueError) as exc:
            return cls.refused(value, f"not JSON data ({_non_finite_in(text) or exc})")
        except Exception as exc:  # noqa: BLE001 - the plug-in's own objects raised while read
            return cls.refused(value, f"it cannot be read as JSON data ({exception_text(exc)})")
        if limit is not None and len(text) > limit:
            return cls.refused(
                value,
                f"its JSON text is {len(text):,} characters, over the input limit of {limit:,} "
                f"bytes (set {INPUT_LIMIT_ENV} to raise it)",
            )
        try:
            body: dict[str, Any] = json.loads(text)
        except RecursionError:
            return cls.refused(value, "not JSON data (nested deeper than the interpreter can walk)")
        return cls(body)

    @classmethod
    def refused(cls, value: object, problem: str) -> _Returned:
        """A mapping that is not a body: ``problem`` says why, ``shown`` what it looked like."""
        try:
            shown = _SHORT_REPR.repr(value)
        except Exception:  # noqa: BLE001 - reprlib guards instances; this guards the rest
            shown = f"<{type(value).__name__}>"
        return cls(None, problem, shown=shown[:2000])


def _non_finite_in(text: str | None) -> str | None:
    """Where NaN or Infinity is in the JSON text of a plug-in's return (the harness's own copy,
    never the plug-in's objects), said with its path; ``None`` when there is none."""
    if text is None:
        return None
    try:
        return non_finite_number(json.loads(text))
    except (ValueError, RecursionError):
        return None


_SHORT_REPR: Final = reprlib.Repr()
_SHORT_REPR.maxlevel, _SHORT_REPR.maxdict, _SHORT_REPR.maxlist = 6, 20, 20
_SHORT_REPR.maxstring, _SHORT_REPR.maxother = 200, 200


def plain_body(value: object) -> tuple[dict[str, Any] | None, str | None]:
    """A value a plug-in returned (or asked to store) as the harness's own plain JSON data, or
    ``(None, why it is not a request body)``; see :class:`_Returned`. Never raises."""
    returned = _Returned.of(value, max_input_bytes())
    if returned.body is not None:
        return returned.body, None
    if returned.type_name is not None:
        return None, f"{returned.type_name}, expected a request body (a mapping)"
    return None, returned.problem or "not JSON data"


def exception_text(exc: BaseException) -> str:
    """``Type: message`` of an exception a plug-in raised, even when its ``__str__`` raises."""
    try:
        message = str(exc)
    except Exception:  # noqa: BLE001 - a hostile __str__ must not take the case along
        message = "(its message cannot be shown: str() of it raised)"
    return f"{type(exc).__name__}: {message}"


def _mutation(before: Mapping[str, Any], after: object) -> str | None:
    """Where the plug-in changed the body it was handed (see ``first_difference``), never raising:
    a body turned into something that cannot be compared is reported as changed at its root."""
    try:
        return first_difference(before, after)
    except Exception as exc:  # noqa: BLE001 - the plug-in's objects are data, whatever they do
        return f"body was changed into something that cannot be compared ({type(exc).__name__})"


def _reported_turn(turns: Sequence[TurnOutcome]) -> TurnOutcome | None:
    """The turn whose verdict a case reports: a stale one first, then one judged by the
    validators now (a case counts as recorded only when every turn was), else the last."""
    judged = [(t, t.judgement) for t in turns if t.judgement is not None]
    stale = [t for t, j in judged if j.stale]
    computed = [t for t, j in judged if j.verdict.provenance == "emulated"]
    for found in (stale, computed):
        if found:
            return found[0]
    return judged[-1][0] if judged else None


def run_case(
    case: Case,
    assembler: Assembler,
    specs: Sequence[CheckSpec],
    timeout: float,
    *,
    library: CassetteLibrary | None = None,
) -> CaseResult:
    """One case, every turn, judged; never raises for anything the plug-in does. Without
    ``library`` the default cassette folder is used (read once, see ``load_library``)."""
    started = time.perf_counter()
    turns: list[TurnOutcome] = []
    if library is None:
        library = load_library()
    for number, session in enumerate(case.scenario.sessions()):
        try:
            outcome = _turn(case, assembler, number, session, timeout, library=library)
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
    model = case.scenario.model_for(case.shape)
    result = CaseOutcome(
        case.shape,
        case.dialect,
        case.budget,
        reference_counter(case.shape, model).name,
        tuple(turns),
    )
    error = result.error
    unseen: frozenset[str] = getattr(assembler, "unseen_checks", frozenset())
    specs = [s for s in specs if s.id not in unseen]  # what it was never handed is not judged
    checks = () if error else tuple(run_checks(case.scenario, result, specs))
    if error:
        status: Literal["pass", "fail", "error"] = "error"
    elif any(c.status == "error" for c in checks):
        status = "error"
    else:
        status = "fail" if any(c.status == "fail" for c in checks) else "pass"
    last = result.last
    judged = _reported_turn(turns)
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
        verdict=judged.judgement.to_dict() if judged and judged.judgement else None,
        tokens=last.tokens,
        counter=result.counter,
        reason=error or last.reason,
        refusal_code=last.refusal_code,
        seconds=time.perf_counter() - started,
        input=dict(last.input_body) if status != "pass" else None,
        output=_jsonable(last.body) if status != "pass" else None,
        markup=_markup(case, last) if status != "pass" else None,
    )


def _markup(case: Case, last: TurnOutcome) -> dict[str, Any] | None:
    """What the report marks on the case's last turn; None when its session cannot be counted."""
    counter = reference_counter(case.shape, case.scenario.model_for(case.shape))
    try:
        return case_markup(
            case.scenario,
            case.budget,
            session=last.session,
            view=last.view,
            identity=last.identity,
            counter=counter,
        )
    except CtxconfError:
        return None


REPORT_BODY_LIMIT: Final = 1024 * 1024
"""The most characters of JSON a report keeps of one returned body (a failing case's
``output``): a plug-in that returns a body near the input limit on every case would otherwise
write gigabytes of ``run.jsonl``. A larger body is kept as its size, digest and opening."""


def _jsonable(body: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    if body is None:
        return None
    try:
        text = canonical_json(body)
    except (TypeError, ValueError):
        return {"unserializable": repr(body)[:2000]}
    if len(text) > REPORT_BODY_LIMIT:
        return {
            "omitted": f"the returned body is {len(text):,} characters of JSON, over the "
            f"{REPORT_BODY_LIMIT:,} a report keeps of one body",
            "sha256": hashlib.sha256(text.encode()).hexdigest(),
            "opening": text[:2000],
        }
    return dict(body)


# ------------------------------------------------------------------------------------ the run


def unrun_result(
    case: Case, reason: str, plugin_output: Mapping[str, str] | None = None
) -> CaseResult:
    """The ``error`` result of a case whose worker died or hung (nothing came back from it)."""
    scenario = case.scenario
    try:
        first = next(iter(scenario.sessions()))
        input_body: dict[str, Any] | None = render_input(scenario, first, case.shape, case.dialect)
    except (CtxconfError, StopIteration):
        input_body = None
    return CaseResult(
        index=case.index,
        scenario=scenario.id,
        title=scenario.title,
        level=scenario.level,
        shape=case.shape,
        dialect=case.dialect,
        budget=case.budget,
        status="error",
        outcome="error",
        tags=scenario.tags,
        sweep=scenario.budget.is_sweep,
        turns=len(scenario.turns) + 1,
        counter=reference_counter(case.shape, scenario.model_for(case.shape)).name,
        reason=reason,
        input=input_body,
        plugin_output=dict(plugin_output) if plugin_output else None,
    )


def warm_up(cases: Sequence[Case], library: CassetteLibrary) -> None:
    """Build what every worker needs once, before forking: the reference counters (tokenizer
    encodings), the rule catalog and the validators of every shape, dialect and model of the
    plan, and the token memo of each scenario's first input."""
    seen: set[tuple[str, str | None, str]] = set()
    for case in cases:
        model = case.scenario.model_for(case.shape)
        key = (case.shape, case.dialect, model)
        if key in seen:
            continue
        seen.add(key)
        try:
            first = next(iter(case.scenario.sessions()))
            body = assembly_request(case, 0, first).body
            reference_counter(case.shape, model).count(get_shape(case.shape).parse_request(body))
            judge(body, case.shape, case.dialect, model, library=library)
        except (CtxconfError, StopIteration):
            continue  # the case itself reports it
        except Exception:  # noqa: BLE001 - a harness bug: each case it touches reports it
            # Warming up is an optimization: a failure here must not take the run (and its
            # reports) along; the worker running the case names it as an internal error.
            _log.warning("warm-up of %s failed", case.key, exc_info=True)
            continue


def _version() -> str:
    try:
        return metadata.version("ctxconf")
    except metadata.PackageNotFoundError:  # running from a bare checkout
        return "0+unknown"


NO_CASES_STATUS: Final = 2
NO_CASES_GATE: Final = "no cases"
"""The gate of a run whose selection holds no case the plug-in is judged on (exit status 2, as
for a bad option: every scenario chosen was left out, or none was chosen in the shapes asked)."""


def _not_judged(count: int) -> dict[str, Any]:
    """The footer's note on cases left out for a plain function (none: no note)."""
    if not count:
        return {}
    why = (
        "a plain message function without dialect=/tools= is not judged on dialect cases or on "
        "cases that expect the tool schemas dropped"
    )
    return {"not_judged": {"cases": count, "why": why}}


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
    library: CassetteLibrary | None = None,
    stop: RunStop | None = None,
    max_consecutive_timeouts: int | None = DEFAULT_MAX_CONSECUTIVE_TIMEOUTS,
    max_seconds: float | None = None,
    judge_timeout: float = JUDGE_TIMEOUT,
) -> Iterator[Event]:
    """Plan and run every case in supervised workers; yield RunStarted, a CaseStarted as each
    case starts and its CaseFinished (in plan order) when it is done, RunFinished.

    The cassette library is loaded once here (forked workers inherit it). The run stops early
    when ``stop`` is set (a signal), after ``max_consecutive_timeouts`` timed-out cases in a row,
    or after ``max_seconds``; the footer says why and the cases that finished are reported.
    Judging what one call returned may take ``judge_timeout`` seconds (see
    :data:`conformance.workers.JUDGE_TIMEOUT`)."""
    cases = plan_cases(scenarios, plugin.shapes, shapes, assemblers=plugin.assemblers)
    unseen = len(plan_cases(scenarios, plugin.shapes, shapes)) - len(cases)
    specs = {s.id: checks_for(s, level=level) for s in scenarios}
    clock = time.perf_counter()
    loading = time.perf_counter()
    cassettes = library if library is not None else load_library()
    loading = time.perf_counter() - loading
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
    warm_up(cases, cassettes)
    halt = stop if stop is not None else RunStop()
    streak = [0]

    def budget(result: CaseResult) -> None:
        timed_out = (result.reason or "").startswith("timed out")
        streak[0] = streak[0] + 1 if timed_out else 0
        if max_consecutive_timeouts and streak[0] >= max_consecutive_timeouts:
            halt.stop(
                f"stopped after {streak[0]} consecutive timed-out cases "
                f"(--max-consecutive-timeouts {max_consecutive_timeouts})",
                1,
            )

    results: list[CaseResult] = []
    try:
        with WorkerPool(
            plugin,
            jobs=jobs,
            timeout=timeout,
            library=cassettes,
            failed=unrun_result,
            judge_timeout=judge_timeout,
        ) as pool:
            work = ((case, specs[case.scenario.id]) for case in cases)
            deadline = (
                None
                if max_seconds is None
                else (
                    time.monotonic() + max_seconds,
                    f"stopped at the run's wall-time limit (--max-seconds {max_seconds:g})",
                )
            )
            for item in pool.progress(work, stop=halt, on_result=budget, deadline=deadline):
                if isinstance(item, int):
                    yield CaseStarted(item, cases[item].key)
                    continue
                results.append(item)
                yield CaseFinished(item)
            stats = pool.stats
    finally:
        if stop is None:
            halt.close()
    totals = level_totals(results)
    gate_levels: tuple[Level, ...] = STRICT_GATE_LEVELS if strict else GATE_LEVELS
    statuses = {s: sum(1 for r in results if r.status == s) for s in ("pass", "fail", "error")}
    if halt.reason is not None:
        status, gate = (halt.exit_status or 1), ("interrupted" if halt.signal else "stopped")
    elif not cases:
        # Nothing was judged: a gate that passes on no case would let CI go green untested.
        status, gate = NO_CASES_STATUS, NO_CASES_GATE
    else:
        status = 0 if all(totals[g].ok for g in gate_levels) else 1
        gate = "+".join(gate_levels)
    yield RunFinished(
        totals=totals,
        statuses=statuses,
        seconds=time.perf_counter() - clock,
        hung_calls=stats.killed_hung,
        crashed_workers=stats.crashed,
        exit_status=status,
        gate=gate,
        stopped=halt.reason,
        interrupted=halt.signal is not None,
        not_run=len(cases) - len(results),
        extra={
            **_not_judged(unseen),
            "cassettes": {
                "root": str(cassettes.root),
                "files": cassettes.files,
                "interactions": len(cassettes),
                "load_seconds": round(loading, 3),
            },
        },
    )
