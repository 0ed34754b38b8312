"""``assemble()``: turn a session into a view that fits the budget and never breaks pairing.

The policy is ``steps.PIPELINE`` run on the state ``steps.load_state`` makes (pairing first);
this module adds the report, the metrics and the log line.

The result is an ``Assembly``: the view (a ``Transcript``) and an ``AssemblyReport`` that says what
happened, in ids and counts only. ``Assembly.render(shape)`` produces the wire body, valid for that
shape's default profile: the view is normalized for the shape it is rendered in (same-side turns
merged where the shape requires alternation, ``steps.normalize``); a shape with prompt-cache markers
(``anthropic-messages``) places them on the stable boundaries the view names
(``ShapeAdapter.place_cache_breakpoints``).
"""

from __future__ import annotations

import hashlib
import itertools
import logging
import operator
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, fields
from typing import Any, Literal, overload

from reference_impl import shapes
from reference_impl.budget import BucketTokens, BudgetPlan, BudgetSnapshot, plan_budget
from reference_impl.config import AssemblyConfig
from reference_impl.errors import ConfigError, ContextAssemblyError, ShapeError, TranscriptError
from reference_impl.ledger import Ledger
from reference_impl.memory import MemoryItem, ledger_message, memory_messages
from reference_impl.metrics import AssemblyMetrics, default_metrics
from reference_impl.steps import PIPELINE, AssemblyState, load_state, normalize_transcript
from reference_impl.summary import DeterministicSummarizer, Summarizer
from reference_impl.tokens import TokenCounter, counter_for
from reference_impl.transcript import SHAPE_NAMES, Message, ShapeName, ToolSpec, Transcript
from reference_impl.transcript.model import INSTRUCTION_ROLES, trusted_transcript

_ID_OF = operator.attrgetter("id")

__all__ = ["Assembly", "AssemblyReport", "Decision", "IdSlice", "assemble", "assemble_pipeline"]

log = logging.getLogger("reference_impl")


Decision = Literal["ok", "rejected"]


class IdSlice(Sequence[str]):
    """``ids[start:stop]`` of a tuple of ids, without copying it.

    The incremental path (``SessionAssembler``) reports the old end of a long session as one
    slice of a tuple it keeps between turns: copying it would make every turn cost the length of
    the session (tens of thousands of ids, each a cache miss). Equal to the tuple of the same ids
    (``==`` either way round), hashed, printed and pickled like it.
    """

    __slots__ = ("_ids", "_start", "_stop")

    def __init__(self, ids: tuple[str, ...], start: int = 0, stop: int | None = None) -> None:
        self._ids = ids
        self._start, self._stop, _ = slice(start, stop).indices(len(ids))
        self._stop = max(self._start, self._stop)

    def as_tuple(self) -> tuple[str, ...]:
        """The ids as a tuple (a copy, except when the slice is the whole tuple)."""
        return self._ids[self._start : self._stop]

    def __len__(self) -> int:
        return self._stop - self._start

    @overload
    def __getitem__(self, index: int) -> str: ...
    @overload
    def __getitem__(self, index: slice) -> tuple[str, ...]: ...
    def __getitem__(self, index: int | slice) -> str | tuple[str, ...]:
        if isinstance(index, slice):
            return self.as_tuple()[index]
        return self.as_tuple()[index] if index < 0 else self._at(index)

    def _at(self, index: int) -> str:
        if index >= len(self):
            raise IndexError("IdSlice index out of range")
        return self._ids[self._start + index]

    def __iter__(self) -> Iterator[str]:
        return itertools.islice(self._ids, self._start, self._stop)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, IdSlice):
            other = other.as_tuple()
        if isinstance(other, tuple):
            return len(other) == len(self) and self.as_tuple() == other
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self.as_tuple())

    def __repr__(self) -> str:
        return repr(self.as_tuple())

    def __reduce__(self) -> tuple[type[tuple[str, ...]], tuple[tuple[str, ...]]]:
        return (tuple, (self.as_tuple(),))


@dataclass(frozen=True, slots=True)
class AssemblyReport:
    """What one assembly did, in ids and counts (never message content)."""

    decision: Decision
    code: str | None
    shape: str
    strategy: str
    counter: str
    budget: BudgetPlan
    tokens_before: BucketTokens
    tokens_before_is_lower_bound: bool
    """True when the old end of the middle was dropped without being counted (section 6)."""
    tokens_after: BucketTokens | None
    total_after: int | None
    steps: tuple[str, ...]
    dropped_ring_ids: Sequence[str] = ()
    dropped_turn_ids: Sequence[str] = ()
    """Ids of the dropped units, in session order: a tuple, or an ``IdSlice`` equal to one."""
    cleared_result_ids: tuple[str, ...] = ()
    degraded_attachment_ids: tuple[str, ...] = ()
    repairs: tuple[str, ...] = ()
    """Call ids that received a synthesized ``is_error`` result."""
    merged_ids: tuple[str, ...] = ()
    """Messages merged into a same-side neighbour because the shape requires alternation."""
    dropped_tool_names: tuple[str, ...] = ()
    """Tool schemas dropped by ``drop_tools_schema_then_fail`` (schemas used by kept rings stay)."""
    summary_used: bool = False
    summary_id: str | None = None
    summarizer: str | None = None
    summary_failed: bool = False
    notes: tuple[str, ...] = ()
    seconds: float = 0.0
    session_digest_of: str | Callable[[], str] = field(default="", repr=False)
    """The session digest (``session_digest``), or what gives it when it is first read: the
    ids of a long session are hashed for a reader (a log line that is emitted, ``to_dict``),
    not for every assembly."""

    @property
    def session_digest(self) -> str:
        """sha256 over the session's message ids in order: identifies the input without content
        (``session_digest_of``)."""
        found = self.session_digest_of
        if not isinstance(found, str):
            found = found()
            object.__setattr__(self, "session_digest_of", found)
        return found

    def _values(self) -> tuple[object, ...]:
        """The fields' values, the digest read (what equality and pickling compare and keep)."""
        digest = self.session_digest
        return tuple(
            digest if f.name == "session_digest_of" else getattr(self, f.name) for f in fields(self)
        )

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._values() == other._values()

    def __hash__(self) -> int:
        return hash(self._values())

    def __getstate__(self) -> tuple[object, ...]:
        return self._values()

    def __setstate__(self, state: tuple[object, ...]) -> None:
        for f, value in zip(fields(self), state, strict=True):
            object.__setattr__(self, f.name, value)

    def __repr__(self) -> str:
        shown = ", ".join(f"{f.name}={getattr(self, f.name)!r}" for f in fields(self) if f.repr)
        return f"AssemblyReport({shown}, session_digest={self.session_digest!r})"

    def to_dict(self) -> dict[str, Any]:
        """The report as JSON data (the log line and the CLI output)."""
        return {
            "decision": self.decision,
            "code": self.code,
            "shape": self.shape,
            "strategy": self.strategy,
            "counter": self.counter,
            "budget": self.budget.to_dict(),
            "tokens_before": self.tokens_before.to_dict(),
            "tokens_before_is_lower_bound": self.tokens_before_is_lower_bound,
            "tokens_after": None if self.tokens_after is None else self.tokens_after.to_dict(),
            "total_after": self.total_after,
            "steps": list(self.steps),
            "dropped_ring_ids": list(self.dropped_ring_ids),
            "dropped_turn_ids": list(self.dropped_turn_ids),
            "cleared_result_ids": list(self.cleared_result_ids),
            "degraded_attachment_ids": list(self.degraded_attachment_ids),
            "repairs": list(self.repairs),
            "merged_ids": list(self.merged_ids),
            "dropped_tool_names": list(self.dropped_tool_names),
            "summary_used": self.summary_used,
            "summary_id": self.summary_id,
            "summarizer": self.summarizer,
            "summary_failed": self.summary_failed,
            "notes": list(self.notes),
            "seconds": self.seconds,
            "session_digest": self.session_digest,
        }


@dataclass(frozen=True, slots=True)
class Assembly:
    """The view to send and the report of how it was made.

    ``view`` is normalized for the assembly's shape; ``base_view`` is the same selection before
    normalization (what ``session_after`` stores, and what other shapes are rendered from).
    """

    view: Transcript
    report: AssemblyReport
    config: AssemblyConfig = field(repr=False)
    injected_ids: tuple[str, ...] = field(default=(), repr=False)
    prefix_ids: tuple[str, ...] = field(default=(), repr=False)
    base_view: Transcript | None = field(default=None, repr=False)
    session_tools: tuple[ToolSpec, ...] | None = field(default=None, repr=False)
    """The tools of the session handed over (None: the view's). ``session_after`` carries them:
    a schema the budget left out of this request (``drop_tools_schema_then_fail``) is offered
    again on a turn it fits, not lost to the stored session."""

    @property
    def shape(self) -> str:
        """The wire shape the view was assembled for."""
        return self.report.shape

    def session_after(self) -> Transcript:
        """The view without memory/ledger injections: store it as the session for the next turn
        so that a summary is reused and the request prefix stays byte-stable until the next
        compaction. Unmerged: a shape's alternation merges are redone at every render. With the
        session's own tools: a schema this request left out to fit the budget is not lost."""
        base = self.base_view if self.base_view is not None else self.view
        tools = self.session_tools
        if tools is None or tools == base.tools:
            tools = None
        if not self.injected_ids and tools is None:
            return base
        messages = base.messages
        if self.injected_ids:
            injected = set(self.injected_ids).__contains__
            kept = map(operator.not_, map(injected, map(_ID_OF, messages)))
            # at C speed; some of a valid view's messages are valid together
            messages = tuple(itertools.compress(messages, kept))
        return trusted_transcript(base, messages, tools)

    def view_for(self, shape: str) -> Transcript:
        """The view normalized for ``shape`` (the assembly's own view for its own shape)."""
        if shape == self.report.shape or self.base_view is None:
            return self.view
        view, _ = normalize_transcript(self.base_view, shape)
        return view

    def render(
        self,
        shape: ShapeName | None = None,
        *,
        dialect: str | None = None,
        remap_ids: bool = False,
    ) -> dict[str, Any]:
        """The request body in ``shape`` (the assembly's shape by default). Where the shape's
        provider requires an output cap the session does not set (Anthropic ``max_tokens``), the
        body asks for ``config.output_reserve_tokens``, the output room the budget kept. With a
        ``dialect`` whose tool-call ids have a form of their own (Mistral's nine alphanumerics),
        ``remap_ids=True`` rewrites the ids consistently, calls and results alike, where the
        dialect would refuse them (``shapes.dialects.render_for_dialect``)."""
        name = shape or self.report.shape
        view = self.view_for(name)
        if remap_ids and dialect is None:
            raise ShapeError("remap_ids rewrites ids for a dialect: pass dialect= too")
        if dialect is not None:
            if name != "openai-chat":
                raise ShapeError(f"dialects are variations of openai-chat, not of {name!r}")
            from reference_impl.shapes.dialects import render_for_dialect  # noqa: PLC0415 - optional

            body: dict[str, Any] = render_for_dialect(view, dialect, remap_ids=remap_ids)
        else:
            body = shapes.get_shape(name).render_request(view)
        options = shapes.get_shape(name).options
        if options.max_output_required and options.output_cap(body) is None:
            # A26: the provider refuses a request without its output cap. The budget was planned
            # with room for this much output, so that is the cap the request asks for.
            reserve = self.config.output_reserve_tokens
            found = options.output_cap_floor(body) if options.output_cap_floor else None
            if found is not None and reserve <= found[1]:
                # A27: a cap at or under the thinking budget is refused; a larger cap than the
                # reserve would ask for output room the budget never kept
                setting, floor = found
                raise ContextAssemblyError(
                    f"the session sets no {options.max_output} and its {setting} is {floor}: the "
                    f"cap the request would ask for, the output reserve of {reserve} tokens, must "
                    f"be greater (rule A27); set {options.max_output} in the session, or "
                    f"output_reserve_tokens above {floor}",
                    code="context_assembly_output_cap_under_setting",
                    details={"reserve": reserve, "setting": setting, "value": floor},
                )
            body = options.with_output_cap(body, reserve)
        place = shapes.get_shape(name).place_cache_breakpoints
        if place is not None and self.config.anthropic_cache_breakpoints > 0:
            body = place(
                body, view, self._stable_boundaries(view), self.config.anthropic_cache_breakpoints
            )
        return body

    def _stable_boundaries(self, view: Transcript) -> list[int]:
        """View indices after which the request stays stable from turn to turn, in order: the end
        of the pinned prefix, the summary, and the message just before the newest user turn
        (system text is its shape's own boundary)."""
        messages = view.messages
        boundaries: list[int] = []
        pinned = [
            i
            for i, m in enumerate(messages)
            if m.id in self.prefix_ids and m.role not in INSTRUCTION_ROLES
        ]
        if pinned:
            boundaries.append(pinned[-1])
        if self.report.summary_id is not None:
            boundaries.extend(i for i, m in enumerate(messages) if m.id == self.report.summary_id)
        users = [i for i, m in enumerate(messages) if m.role == "user"]
        if users and users[-1] > 0:
            boundaries.append(users[-1] - 1)
        return sorted({i for i in boundaries if messages[i].role not in INSTRUCTION_ROLES})


# ------------------------------------------------------------------------------ the pipeline


def session_digest_of(ids: Iterable[str]) -> str:
    """sha256 over the message ids in order, each followed by a newline: identifies the input in
    logs without reading (or hashing) any content, so messages that are never counted are never
    serialized either."""
    joined = "\n".join(ids)
    return hashlib.sha256(f"{joined}\n".encode() if joined else b"").hexdigest()


def assemble(
    session: Transcript,
    config: AssemblyConfig | None = None,
    *,
    shape: ShapeName = "openai-chat",
    counter: TokenCounter | None = None,
    summarizer: Summarizer | None = None,
    ledger: Ledger | None = None,
    memory: Sequence[MemoryItem] = (),
    budget: BudgetSnapshot | int | None = None,
    metrics: AssemblyMetrics | None = None,
) -> Assembly:
    """Assemble ``session`` into a view for ``shape`` within the budget, or raise
    ``ContextAssemblyError`` (fail closed) with a ``context_assembly_*`` code.

    The result is that of ``assemble_pipeline`` (every step of ``steps.PIPELINE`` on the
    session's units), reached the short way when it can be: a ``SessionAssembler`` indexes the
    session at C speed and takes each step from the index, in time proportional to what is kept
    (``reference_impl.incremental``); a session it does not cover (a pairing error, a summary to
    write, an anchor, an escalation ...) runs the pipeline itself.
    """
    from reference_impl.incremental import SessionAssembler  # noqa: PLC0415 - built on this module

    assembler = SessionAssembler(
        config, shape=shape, counter=counter, summarizer=summarizer, metrics=metrics
    )
    return assembler.assemble(session, ledger=ledger, memory=memory, budget=budget)


def check_arguments(session: object, config: object, ledger: object, memory: object) -> None:
    """Refuse arguments of the wrong type by name (a ``dict`` for the session is the usual slip),
    before anything reads them: :class:`TranscriptError` or :class:`ConfigError` with the
    argument as ``where``, never an ``AttributeError`` from deep inside a step."""
    if not isinstance(session, Transcript):
        raise TranscriptError(
            f"expected a Transcript, got {type(session).__name__}; read a session file with "
            "reference_impl.transcript.transcript_from_json, or a request body with "
            "reference_impl.shapes.get_shape(shape).parse_request",
            where="session",
        )
    if config is not None and not isinstance(config, AssemblyConfig):
        raise ConfigError(
            f"expected an AssemblyConfig, got {type(config).__name__}; read a mapping with "
            "AssemblyConfig.from_mapping or a file with AssemblyConfig.from_yaml",
            where="config",
        )
    if ledger is not None and not isinstance(ledger, Ledger):
        raise TranscriptError(
            f"expected a Ledger, got {type(ledger).__name__}; build one with Ledger.from_list",
            where="ledger",
        )
    if isinstance(memory, str | bytes) or not isinstance(memory, Sequence):
        raise TranscriptError(
            f"expected a sequence of MemoryItem, got {type(memory).__name__}", where="memory"
        )
    for i, item in enumerate(memory):
        if not isinstance(item, MemoryItem):
            raise TranscriptError(
                f"expected a MemoryItem, got {type(item).__name__}", where=f"memory[{i}]"
            )


def check_collaborators(counter: object, summarizer: object, metrics: object) -> None:
    """Refuse a counter, summarizer or metrics object that lacks what the assembler calls, by
    name (a :class:`ConfigError` with the argument as ``where``), never an ``AttributeError``
    from the middle of an assembly."""
    wanted: tuple[tuple[str, object, type, str], ...] = (
        ("counter", counter, TokenCounter, "a TokenCounter (reference_impl.tokens.counter_for)"),
        ("summarizer", summarizer, Summarizer, "a Summarizer (a summarize(request) method)"),
        ("metrics", metrics, AssemblyMetrics, "an AssemblyMetrics"),
    )
    for where, value, kind, what in wanted:
        if value is not None and not isinstance(value, kind):
            raise ConfigError(f"expected {what}, got {type(value).__name__}", where=where)


def assemble_pipeline(
    session: Transcript,
    config: AssemblyConfig | None = None,
    *,
    shape: ShapeName = "openai-chat",
    counter: TokenCounter | None = None,
    summarizer: Summarizer | None = None,
    ledger: Ledger | None = None,
    memory: Sequence[MemoryItem] = (),
    budget: BudgetSnapshot | int | None = None,
    metrics: AssemblyMetrics | None = None,
) -> Assembly:
    """``assemble`` the long way: ``steps.load_state`` and every step of ``steps.PIPELINE`` on
    the session's units (the definition of the policy; ``assemble`` gives the same result)."""
    check_arguments(session, config, ledger, memory)
    check_collaborators(counter, summarizer, metrics)
    config = config if config is not None else AssemblyConfig()
    if shape not in SHAPE_NAMES:
        raise ConfigError(
            f"unknown shape {shape!r}; known shapes: {', '.join(SHAPE_NAMES)}", where="shape"
        )
    counter = counter if counter is not None else counter_for(shape, session.model)
    summarizer = summarizer if summarizer is not None else DeterministicSummarizer()
    ledger = ledger if ledger is not None else Ledger()
    metrics = metrics if metrics is not None else default_metrics()
    plan = plan_budget(config, budget)
    started = time.perf_counter()
    digest = session_digest_of(m.id for m in session.messages)

    def finish(state: AssemblyState | None, code: str | None) -> AssemblyReport:
        """The report of this assembly (``code`` when it was refused), observed in the metrics."""
        report = _report(
            state=state,
            plan=plan,
            config=config,
            shape=shape,
            counter=counter,
            seconds=time.perf_counter() - started,
            digest=digest,
            code=code,
        )
        _observe(metrics, report, shape, config.middle_delete_unit, state)
        return report

    holder: list[AssemblyState] = []
    try:
        state = _run(
            session=session,
            config=config,
            counter=counter,
            summarizer=summarizer,
            ledger=ledger,
            memory=memory,
            plan=plan,
            shape=shape,
            holder=holder,
        )
    except ContextAssemblyError as exc:
        report = finish(holder[0] if holder else None, exc.code)
        exc.details["report"] = report.to_dict()
        log.info(
            "assembly rejected: session=%.16s code=%s steps=%s",
            digest,
            exc.code,
            ",".join(report.steps),
        )
        raise
    report = finish(state, None)
    base = state.view()
    log.info(
        "assembled: session=%.16s messages=%d->%d tokens=%s/%d steps=%s dropped_rings=%d",
        digest,
        len(session),
        len(base),
        report.total_after,
        plan.input_budget,
        ",".join(report.steps),
        len(report.dropped_ring_ids),
    )
    return Assembly(
        view=state.final_view if state.final_view is not None else base,
        report=report,
        config=config,
        injected_ids=tuple(u.id for u in state.units if u.kind == "injection"),
        prefix_ids=tuple(u.id for u in state.units if u.kept and u.bucket == "prefix"),
        base_view=base,
        session_tools=session.tools,
    )


def _injections(
    config: AssemblyConfig, ledger: Ledger, memory: Sequence[MemoryItem]
) -> list[Message]:
    out = list(memory_messages(memory, config.memory.max_items))
    if config.pinned("side_effect_ledger"):
        pinned = ledger_message(ledger)
        if pinned is not None:
            out.append(pinned)
    return out


def _run(
    *,
    session: Transcript,
    config: AssemblyConfig,
    counter: TokenCounter,
    summarizer: Summarizer,
    ledger: Ledger,
    memory: Sequence[MemoryItem],
    plan: BudgetPlan,
    shape: str,
    holder: list[AssemblyState],
) -> AssemblyState:
    state = load_state(
        session,
        config=config,
        counter=counter,
        summarizer=summarizer,
        ledger=ledger,
        plan=plan,
        shape=shape,
        injections=_injections(config, ledger, memory),
    )
    holder.append(state)
    for step in PIPELINE:
        step(state)
    return state


def _before(state: AssemblyState) -> tuple[BucketTokens, bool]:
    """Tokens of the session as loaded; the middle is a lower bound when parts were not counted."""
    middle = 0
    lower = False
    for u in state.units:
        if u.bucket == "middle" and not u.created:
            if u.original_cost is not None:
                middle += u.original_cost
            else:
                lower = True
    prefix = sum(u.original_cost or 0 for u in state.units if u.bucket == "prefix")
    suffix = sum(u.original_cost or 0 for u in state.units if u.bucket == "suffix")
    tools = state.counter.count_tools(state.session.tools)
    return BucketTokens(prefix, tools, middle, suffix, state.overhead), lower


def _report(
    *,
    state: AssemblyState | None,
    plan: BudgetPlan,
    config: AssemblyConfig,
    shape: str,
    counter: TokenCounter,
    seconds: float,
    digest: str,
    code: str | None,
) -> AssemblyReport:
    if state is None:
        before, lower = BucketTokens(), True
        steps: tuple[str, ...] = ("load",)
    else:
        before, lower = _before(state)
        steps = tuple(state.steps)
    after = state.tokens() if state is not None and code is None else None
    return AssemblyReport(
        decision="ok" if code is None else "rejected",
        code=code,
        shape=shape,
        strategy=config.middle_delete_unit,
        counter=counter.name,
        budget=plan,
        tokens_before=before,
        tokens_before_is_lower_bound=lower,
        tokens_after=after,
        total_after=None if after is None else after.total,
        steps=steps,
        dropped_ring_ids=tuple(state.dropped_ring_ids) if state else (),
        dropped_turn_ids=tuple(state.dropped_turn_ids) if state else (),
        cleared_result_ids=tuple(state.cleared_result_ids) if state else (),
        degraded_attachment_ids=tuple(state.degraded_attachment_ids) if state else (),
        repairs=tuple(state.repairs) if state else (),
        merged_ids=tuple(state.merged_ids) if state else (),
        dropped_tool_names=tuple(state.dropped_tool_names) if state else (),
        summary_used=bool(state and state.summary_id),
        summary_id=state.summary_id if state else None,
        summarizer=state.summarizer_name if state else None,
        summary_failed=bool(state and state.summary_failed),
        notes=tuple(state.notes) if state else (),
        seconds=seconds,
        session_digest_of=digest,
    )


def _observe(
    metrics: AssemblyMetrics,
    report: AssemblyReport,
    shape: str,
    strategy: str,
    state: AssemblyState | None,
) -> None:
    labels = {"shape": shape, "strategy": strategy}
    metrics.seconds.labels(**labels).observe(report.seconds)
    if report.total_after is not None:
        metrics.tokens.labels(**labels).observe(report.total_after)
    if report.dropped_ring_ids:
        metrics.dropped_rings.labels(**labels).inc(len(report.dropped_ring_ids))
    if report.summary_used:
        metrics.summaries.labels(**labels).inc()
    if state is not None and state.summary_failed:
        metrics.summary_failures.labels(**labels).inc()
    if report.repairs:
        metrics.pairing_errors.labels(**labels, outcome="repaired").inc(len(report.repairs))
    if report.code is not None:
        metrics.rejects.labels(**labels, code=report.code).inc()
        if report.code == "context_assembly_pairing_error":
            metrics.pairing_errors.labels(**labels, outcome="rejected").inc()
