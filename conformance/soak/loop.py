"""The soak loop: one plug-in, one workload, hundreds of turns of a simulated agent.

Each turn:

1. the stored session (neutral transcript) is rendered in the plug-in's shape and handed to the
   plug-in as an :class:`~conformance.protocol.AssemblyRequest` with the workload's budget and
   knobs and the execution ledger, through :func:`conformance.engine.run_case`: the very code
   ``ctxconf run`` uses, with the registry's ``must`` checks (provider validity for the target
   profile, pairing, nothing invented, and whatever else the registry holds at ``must``);
2. a refusal is judged here: it is the right answer only when the protected minimum (system text,
   the first user message, the ledger, the latest user message, the newest ring and everything
   after it) does not fit the budget;
3. the request the plug-in returned is measured (tokens against the budget, the common prefix
   with the previous request and what the provider's cache rules make of it, the input cost, the
   plug-in's own time, summaries);
4. what the plug-in says to store (``session_after``, optional) replaces the stored session, after
   a check that it holds only messages of the session or of the view;
5. the simulated model answers the request (:class:`~conformance.soak.world.World`) and its
   messages, the tool results and any user interjection are appended to the stored session.

The run stops at the first ``must`` failure (or error, or a refusal of a feasible turn), with the
turn number and the shrunk history as a scenario ``ctxconf run`` replays
(:mod:`conformance.soak.finding`), or after ``turns`` turns.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar, Final, Protocol

from conformance.blame import WRAPS_ATTR, raised_at
from conformance.checks import CheckSpec, checks_for
from conformance.engine import (
    DEFAULT_TIMEOUT,
    Case,
    call_plugin,
    exception_text,
    plain_body,
    reference_counter,
    run_case,
)
from conformance.events import CaseResult
from conformance.identity import Declarations
from conformance.loading import Plugin
from conformance.protocol import (
    PROTOCOL_VERSION,
    Assembler,
    AssemblerFactory,
    AssemblyRequest,
)
from conformance.scenarios import Budget, Expectation, Scenario
from conformance.soak.caching import CacheModel, price_for, price_table
from conformance.soak.workload import Workload
from conformance.soak.world import World
from conformance.traffic.verdicts import CassetteLibrary, load_library
from reference_impl.errors import CtxconfError
from reference_impl.ledger import Ledger
from reference_impl.memory import ledger_message
from reference_impl.rings import Ring, segment
from reference_impl.shapes import get_shape
from reference_impl.summary import summary_depth
from reference_impl.transcript import (
    Message,
    Part,
    SummaryPart,
    TextPart,
    Transcript,
    canonical_json,
)
from reference_impl.transcript.model import INSTRUCTION_ROLES
from reference_impl.wording import with_article

__all__ = [
    "DEFAULT_TURNS",
    "SOAK_REPORT_VERSION",
    "SoakFailure",
    "SoakReport",
    "SoakWatcher",
    "TurnRecord",
    "check_attachments_fit",
    "fresh_assembler",
    "judge_turn",
    "protected_minimum",
    "run_soak",
    "turn_scenario",
]

DEFAULT_TURNS: Final = 200
SOAK_REPORT_VERSION: Final = 1


@dataclass(frozen=True, slots=True)
class TurnRecord:
    """What one turn's request was and cost."""

    turn: int
    tokens: int
    input_tokens: int
    """Tokens of the stored session as handed to the plug-in (before any cut)."""
    prefix_tokens: int
    cached_tokens: int
    cache_write_tokens: int
    cost_usd: float
    uncached_cost_usd: float
    assembler_ms: float
    stored_messages: int
    summaries: int
    summary_depth: int
    repeated: int
    calls: int
    side_effect_calls: int

    def to_dict(self) -> dict[str, Any]:
        """The record as one JSON-lines ``turn`` line."""
        out: dict[str, Any] = {"type": "turn"}
        for name in self.__slots__:
            value = getattr(self, name)
            out[name] = round(value, 9) if isinstance(value, float) else value
        out["assembler_ms"] = round(self.assembler_ms, 3)
        return out


@dataclass(frozen=True, slots=True)
class SoakFailure:
    """Why a run stopped before its last turn."""

    turn: int
    kind: str
    """``must`` (a must check failed), ``error``, ``refused_feasible``, ``refused_infeasible``,
    ``stored_session`` (what the plug-in asked to store invents messages)."""
    message: str
    checks: tuple[Mapping[str, str], ...] = ()
    session: Transcript | None = field(default=None, repr=False)
    ledger: tuple[Mapping[str, Any], ...] = ()

    @property
    def is_finding(self) -> bool:
        """Whether this is a failure of the plug-in (an infeasible refusal is not)."""
        return self.kind != "refused_infeasible"


@dataclass(frozen=True, slots=True)
class SoakReport:
    """A whole run: its settings, every turn, where it stopped, and the run-level measurements."""

    plugin: str
    workload: Workload
    shape: str
    model: str
    seed: int
    turns_requested: int
    budget: int
    turns: tuple[TurnRecord, ...]
    failure: SoakFailure | None
    stateful: bool
    summary_failures: int
    counter: str
    cache_rules: str
    repeats: int
    seconds: float = field(default=0.0, compare=False)
    plugin_output: Mapping[str, str] | None = field(default=None, compare=False)
    """What the plug-in printed during the run, by stream (``stdout``, ``stderr``): see
    :func:`conformance.workers.read_captured`; None when it printed nothing or ran in-process."""

    @property
    def survived(self) -> int:
        """Turns assembled and judged without a ``must`` failure."""
        return len(self.turns)

    @property
    def window_full_turn(self) -> int | None:
        """The first turn whose request is smaller than the session handed over: the window
        filled and the plug-in cut, cleared or summarized."""
        return next((t.turn for t in self.turns if t.tokens < t.input_tokens), None)

    def measurements(self) -> dict[str, Any]:
        """The run-level numbers (the ``summary`` line of the JSON-lines report)."""
        turns = self.turns
        tokens = [t.tokens for t in turns]
        full = self.window_full_turn
        after = [t for t in turns if full is not None and t.turn >= full]
        # Cache reuse counts from the turn after the window filled (that turn itself is the first
        # request of the cut history, so no request before it can share its new prefix); over
        # every turn after the first when it never filled (``reuse_over`` says which).
        after_full = [t for t in turns if full is not None and t.turn > full]
        reuse_turns = after_full or list(turns[1:])
        times = [t.assembler_ms for t in turns]
        return {
            "turns_survived": self.survived,
            "turns_requested": self.turns_requested,
            "budget": self.budget,
            "tokens_max": max(tokens, default=0),
            "tokens_p95": _percentile(tokens, 95),
            "turns_over_budget": sum(1 for t in turns if t.tokens > self.budget),
            "window_full_turn": full,
            "tokens_growth_per_turn_after_full": (
                _slope([(t.turn, t.tokens) for t in after]) if full is not None else None
            ),
            "reuse_over": "after_full" if after_full else "whole_run",
            "prefix_reuse": _share(reuse_turns, "prefix_tokens"),
            "cache_reuse": _share(reuse_turns, "cached_tokens"),
            "cache_reuse_whole_run": _share(turns[1:], "cached_tokens"),
            "cost_usd": round(sum(t.cost_usd for t in turns), 6),
            "uncached_cost_usd": round(sum(t.uncached_cost_usd for t in turns), 6),
            "repeated_side_effects": self.repeats,
            "side_effect_calls": sum(t.side_effect_calls for t in turns),
            "summary_depth_max": max((t.summary_depth for t in turns), default=0),
            "turns_with_summary": sum(1 for t in turns if t.summaries),
            "summary_failures": self.summary_failures,
            "assembler_ms_p50": round(_percentile(times, 50), 3),
            "assembler_ms_p99": round(_percentile(times, 99), 3),
            "assembler_ms_p50_first_100": round(_percentile(times[:100], 50), 3),
            "assembler_ms_p50_last_100": round(_percentile(times[-100:], 50), 3),
        }


def _percentile(values: list[int] | list[float], q: int) -> float:
    if not values:
        return 0
    if len(values) == 1:
        return values[0]
    return float(statistics.quantiles(values, n=100, method="inclusive")[q - 1])


def _share(turns: Any, key: str) -> float:
    total = sum(t.tokens for t in turns)
    return round(sum(getattr(t, key) for t in turns) / total, 4) if total else 0.0


def _slope(points: list[tuple[int, int]]) -> float:
    if len(points) < 2:
        return 0.0
    xs = [float(x) for x, _ in points]
    ys = [float(y) for _, y in points]
    mean_x, mean_y = statistics.fmean(xs), statistics.fmean(ys)
    var = sum((x - mean_x) ** 2 for x in xs)
    if var == 0:
        return 0.0
    return round(sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys, strict=True)) / var, 3)


# --------------------------------------------------------------------------- the plug-in side


class _Capture:
    """Wraps the run's assembler: sets the turn number, times the call, keeps the body. It
    carries the plug-in's declarations (a summary prefix, a result placeholder), which the checks
    read off the object they are handed."""

    shape: ClassVar[str] = "openai-chat"

    def __init__(self, inner: Assembler, turn: int) -> None:
        self.inner = inner
        setattr(self, WRAPS_ATTR, inner)  # an exception is placed in the plug-in's code
        self.shape = inner.shape  # type: ignore[misc]  # instance attribute shadows the ClassVar
        declared = Declarations.of(inner)
        self.ctxconf_summary_prefix = declared.summary_prefix
        self.ctxconf_result_placeholder = declared.result_placeholder
        self.turn = turn
        self.body: Mapping[str, Any] | None = None
        self.seconds = 0.0

    def assemble(self, request: AssemblyRequest) -> Mapping[str, Any]:
        started = time.perf_counter()
        try:
            returned = self.inner.assemble(replace(request, turn=self.turn))
        finally:
            self.seconds = time.perf_counter() - started
        self.body = returned
        return returned


def fresh_assembler(plugin: Plugin, shape: str, *, timeout: float = DEFAULT_TIMEOUT) -> Assembler:
    """The plug-in's assembler for one new run in ``shape`` (``new_session()`` when it has one);
    a :class:`CtxconfError` naming it when ``new_session()`` raises, hangs or returns no assembler
    of ``shape``."""
    base = plugin.assemblers[shape]
    if isinstance(base, AssemblerFactory):
        kind, made = call_plugin(base.new_session, timeout)
        if kind == "timeout":
            raise CtxconfError(f"{plugin.name}: new_session() timed out after {timeout:g}s")
        if kind == "raised":
            where = raised_at(made, base)
            raise CtxconfError(f"{plugin.name}: new_session() raised {exception_text(made)}{where}")
        if _attribute(made, "shape") != shape or not callable(_attribute(made, "assemble")):
            raise CtxconfError(
                f"{plugin.name}: new_session() returned {with_article(type(made).__name__)}, "
                "not an "
                f"assembler of {shape}"
            )
        assert isinstance(made, Assembler)
        return made
    return base


def _attribute(obj: object, name: str) -> object:
    """``getattr(obj, name, None)``, and None when the plug-in's attribute raises."""
    try:
        return getattr(obj, name, None)
    except Exception:  # noqa: BLE001 - a plug-in's property that raises is one it does not have
        return None


def turn_scenario(
    workload: Workload,
    session: Transcript,
    shape: str,
    ledger: tuple[Mapping[str, Any], ...],
    turn: int,
) -> Scenario:
    """One turn as a one-case scenario (what ``run_case`` judges and a finding replays)."""
    return Scenario(
        id=f"soak-{workload.id}-turn-{turn}",
        title=f"{workload.title}, turn {turn}",
        level="must",
        source=f"<soak {workload.source}>",
        session=session,
        budget=Budget((workload.budget,)),
        expect=Expectation(outcome="either"),
        tags=("soak",),
        shapes=(shape,),
        ledger=ledger,
        config=workload.plugin_config(),
        models={shape: workload.model_for(shape)},
    )


def _specs(scenario: Scenario) -> tuple[CheckSpec, ...]:
    return checks_for(scenario, level="must")


def judge_turn(
    assembler: Assembler,
    scenario: Scenario,
    shape: str,
    turn: int,
    *,
    timeout: float = DEFAULT_TIMEOUT,
    library: CassetteLibrary | None = None,
) -> tuple[CaseResult, _Capture]:
    """Run and judge one turn exactly as ``ctxconf run`` judges a case, at ``must``."""
    capture = _Capture(assembler, turn)
    case = Case(turn, scenario, shape, None, scenario.budget.default[0])
    result = run_case(case, capture, _specs(scenario), timeout, library=library)
    return result, capture


def protected_minimum(session: Transcript, ledger: Ledger, shape: str, model: str) -> int:
    """Tokens of what no assembler may cut: system text, the first user message, the ledger, the
    latest user message, and the newest ring with everything after it."""
    messages = session.messages
    keep: set[int] = {i for i, m in enumerate(messages) if m.role in INSTRUCTION_ROLES}
    users = [i for i, m in enumerate(messages) if m.role == "user"]
    if users:
        keep |= {users[0], users[-1]}
    newest = [s for s in segment(session) if isinstance(s, Ring)]
    start = newest[-1].start if newest else len(messages)
    keep |= set(range(start, len(messages)))
    chosen = [messages[i] for i in sorted(keep)]
    pinned = ledger_message(ledger)
    if pinned is not None:
        chosen.insert(1, pinned)
    counter = reference_counter(shape, model)
    return counter.count(session.with_messages(m.with_id("") for m in chosen)).total


def check_attachments_fit(world: World, opening: Transcript, shape: str, model: str) -> None:
    """Refuse a workload whose attachments can never fit: when the opening (system text and goal)
    with one user turn carrying every attachment kind the run can paste costs more than the budget
    on ``model``, every turn after such a paste is infeasible and the run measures nothing. A
    :class:`CtxconfError` names the workload, the model and the cost."""
    kinds = world.attachment_kinds()
    if not kinds:
        return
    turn = Message("user", (TextPart("(attachments)"), *(world.attachment(k, 0) for k in kinds)))
    needed = (
        reference_counter(shape, model)
        .count(opening.with_messages((*opening.messages, turn)))
        .total
    )
    budget = world.workload.budget
    if needed > budget:
        raise CtxconfError(
            f"on {model} ({shape}) a user turn with "
            f"{' and '.join(f'one {k}' for k in kinds)} of unknown size costs up to {needed} "
            f"tokens with the opening, over the input budget of {budget}: every turn after such a "
            "paste would be infeasible; name a model with cheaper attachments under `models:` or "
            "widen `window`",
            where=f"workload {world.workload.id}: behaviour",
        )


def _stored_problem(stored: Transcript, session: Transcript, view: Transcript) -> str | None:
    known = {m.digest for m in session.messages} | {m.digest for m in view.messages}
    # A shape with strict alternation (Bedrock B3) sends same-role neighbours as one merged
    # message: a stored message whose every part is a part of a view message of its role (the
    # summary that opens the goal's merged user turn) is the view's too.
    merged: set[tuple[str, Part]] | None = None  # built when a stored message is not known
    for index, message in enumerate(stored.messages):
        if message.digest in known:
            continue
        if merged is None:
            merged = {(m.role, part) for m in view.messages for part in m.parts}
        if not all((message.role, part) in merged for part in message.parts):
            return (
                f"session_after()[{index}] ({message.role}) is in neither the session nor the "
                f"view: {message.text[:60]!r}"
            )
    return None


def _summaries(view: Transcript) -> tuple[int, int]:
    texts = [p.text for m in view.messages for p in m.parts if isinstance(p, SummaryPart)]
    return len(texts), max((summary_depth(t) for t in texts), default=0)


def _failed_checks(result: CaseResult) -> tuple[Mapping[str, str], ...]:
    return tuple(c.to_dict() for c in result.checks if c.status != "pass")


@dataclass(slots=True)
class _Run:
    plugin: Plugin
    workload: Workload
    shape: str
    seed: int
    timeout: float
    library: CassetteLibrary
    assembler: Assembler
    world: World
    model: str
    stored: Transcript
    cache: CacheModel
    records: list[TurnRecord] = field(default_factory=list)
    repeats: int = 0

    def ledger_dicts(self) -> tuple[Mapping[str, Any], ...]:
        return tuple(e.to_dict() for e in self.world.ledger)

    def stop(self, turn: int, kind: str, message: str, result: CaseResult | None) -> SoakFailure:
        return SoakFailure(
            turn,
            kind,
            message,
            _failed_checks(result) if result else (),
            self.stored,
            self.ledger_dicts(),
        )

    def step(self, turn: int) -> SoakFailure | None:
        ledger = self.ledger_dicts()
        scenario = turn_scenario(self.workload, self.stored, self.shape, ledger, turn)
        result, capture = judge_turn(
            self.assembler, scenario, self.shape, turn, timeout=self.timeout, library=self.library
        )
        if result.status == "error":
            return self.stop(turn, "error", result.reason or "error", result)
        if result.status == "fail":
            failed = "; ".join(
                f"{c['id']}: {c.get('title', '')}: {c.get('message', '')}"
                for c in _failed_checks(result)
            )
            return self.stop(turn, "must", failed, result)
        counter = reference_counter(self.shape, self.model)
        input_tokens = counter.count(self.stored).total
        if result.outcome == "refused":
            minimum = protected_minimum(
                self.stored, Ledger.from_list(ledger), self.shape, self.model
            )
            why = f"refusal {result.refusal_code}: {result.reason}"
            if minimum <= self.workload.budget:
                return self.stop(
                    turn,
                    "refused_feasible",
                    f"{why}; the protected minimum is {minimum} tokens, within the budget of "
                    f"{self.workload.budget}",
                    result,
                )
            return self.stop(
                turn,
                "refused_infeasible",
                f"{why}; the protected minimum is {minimum} tokens, over the budget of "
                f"{self.workload.budget}, so refusing is right",
                result,
            )
        body = capture.body
        assert body is not None
        adapter = get_shape(self.shape)
        view = adapter.parse_request(dict(body))
        cost = self.cache.observe(body, result.tokens or 0)
        after = _attribute(self.assembler, "session_after")
        returned: object = None
        if callable(after):
            kind, returned = call_plugin(after, self.timeout)
            if kind == "timeout":
                return self.stop(
                    turn, "error", f"session_after() timed out after {self.timeout:g}s", None
                )
            if isinstance(returned, BaseException) and kind == "raised":
                what = f"{exception_text(returned)}{raised_at(returned, self.assembler)}"
                return self.stop(turn, "error", f"session_after() raised {what}", None)
        if returned is not None:
            plain, problem = plain_body(returned)
            if plain is None:
                return self.stop(turn, "stored_session", f"session_after(): {problem}", None)
            try:
                stored = adapter.parse_request(plain)
            except CtxconfError as exc:
                return self.stop(turn, "stored_session", f"session_after(): {exc}", None)
            problem = _stored_problem(stored, self.stored, view)
            if problem is not None:
                return self.stop(turn, "stored_session", problem, None)
            self.stored = self.stored.with_messages(m.with_id("") for m in stored.messages)
        plan = self.world.play(turn, canonical_json(dict(body)))
        self.repeats += len(plan.repeated)
        summaries, depth = _summaries(view)
        self.records.append(
            TurnRecord(
                turn=turn,
                tokens=result.tokens or 0,
                input_tokens=input_tokens,
                prefix_tokens=cost.prefix_tokens,
                cached_tokens=cost.cached_tokens,
                cache_write_tokens=cost.cache_write_tokens,
                cost_usd=cost.cost_usd,
                uncached_cost_usd=cost.uncached_cost_usd,
                assembler_ms=capture.seconds * 1000,
                stored_messages=len(self.stored.messages),
                summaries=summaries,
                summary_depth=depth,
                repeated=len(plan.repeated),
                calls=plan.calls,
                side_effect_calls=plan.side_effect_calls,
            )
        )
        self.stored = self.stored.with_messages((*self.stored.messages, *plan.messages))
        return None

    def report(self, turns: int, failure: SoakFailure | None, seconds: float) -> SoakReport:
        """This run as a report: ``turns`` asked for, where it stopped (``failure``), how long it
        took."""
        failures = _attribute(self.assembler, "summary_failures")
        return SoakReport(
            plugin=self.plugin.name,
            workload=self.workload,
            shape=self.shape,
            model=self.model,
            seed=self.seed,
            turns_requested=turns,
            budget=self.workload.budget,
            turns=tuple(self.records),
            failure=failure,
            stateful=callable(_attribute(self.assembler, "session_after")),
            summary_failures=failures if type(failures) is int else 0,
            counter=reference_counter(self.shape, self.model).name,
            cache_rules=self.cache.rules,
            repeats=self.repeats,
            seconds=seconds,
        )


def run_soak(
    plugin: Plugin,
    workload: Workload,
    *,
    turns: int = DEFAULT_TURNS,
    seed: int = 0,
    shape: str | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    library: CassetteLibrary | None = None,
    on_turn: Callable[[int], None] | None = None,
    watch: SoakWatcher | None = None,
) -> SoakReport:
    """Drive ``plugin`` through ``turns`` turns of ``workload`` (see the module docstring);
    ``watch`` is told the run's settings, each turn's start and each turn's record as they
    happen (:mod:`conformance.soak.isolated` keeps them so a run whose process dies still has a
    report)."""
    # Without --shape: the workload's shape, or the plug-in's first when it does not speak that.
    chosen = shape or (workload.shape if workload.shape in plugin.shapes else plugin.shapes[0])
    if chosen not in plugin.shapes:
        raise CtxconfError(
            f"{plugin.name} speaks {', '.join(plugin.shapes)}, not {chosen}; pick one with --shape",
            where="--shape",
        )
    started = time.perf_counter()
    world = World(workload, seed, chosen)
    model = workload.model_for(chosen)
    opening = Transcript(world.opening(), world.tool_specs(), model)
    check_attachments_fit(world, opening, chosen, model)
    run = _Run(
        plugin=plugin,
        workload=workload,
        shape=chosen,
        seed=seed,
        timeout=timeout,
        library=library if library is not None else load_library(),
        assembler=fresh_assembler(plugin, chosen, timeout=timeout),
        world=world,
        model=model,
        stored=opening,
        cache=CacheModel(chosen, price_for(model)),
    )
    failure: SoakFailure | None = None
    if watch is not None:
        watch.started(run.report(turns, None, 0.0))
    for turn in range(turns):
        if watch is not None:
            watch.turn_starts(turn, run.stored, run.ledger_dicts())
        failure = run.step(turn)
        if watch is not None and failure is None:
            watch.turn_done(run.records[-1], run.repeats)
        if on_turn is not None:
            on_turn(turn)
        if failure is not None:
            break
    return run.report(turns, failure, time.perf_counter() - started)


class SoakWatcher(Protocol):
    """What :func:`run_soak` tells an observer while it runs."""

    def started(self, report: SoakReport) -> None:
        """The run's settings, as a report with no turns yet."""

    def turn_starts(
        self, turn: int, stored: Transcript, ledger: tuple[Mapping[str, Any], ...]
    ) -> None:
        """Turn ``turn`` is about to be handed ``stored`` with ``ledger``."""

    def turn_done(self, record: TurnRecord, repeats: int) -> None:
        """The turn passed; ``repeats`` is the run's count of repeated side effects so far."""


def header(report: SoakReport) -> dict[str, Any]:
    """The JSON-lines header of a soak report."""
    table = price_table()
    price = price_for(report.model)
    return {
        "type": "header",
        "report": "ctxconf-soak",
        "version": SOAK_REPORT_VERSION,
        "protocol_version": PROTOCOL_VERSION,
        "plugin": report.plugin,
        "workload": report.workload.id,
        "workload_source": report.workload.source,
        "shape": report.shape,
        "model": report.model,
        "seed": report.seed,
        "turns": report.turns_requested,
        "budget": report.budget,
        "stateful": report.stateful,
        "counter": report.counter,
        "cache_rules": report.cache_rules,
        "prices": {
            "read": table.read,
            "model": price.model if price else None,
            "input": price.input if price else None,
            "cached": price.cached if price else None,
            "cache_write": price.cache_write if price else None,
            "source": price.source if price else None,
        },
        "tokens_note": "request tokens by the reference counter; cached tokens spread over the "
        "body's blocks by their share of its characters (an estimate)",
    }
