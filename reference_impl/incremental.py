"""``SessionAssembler``: the next turn of a session costs only its new messages.

``assemble()`` is stateless: every call validates, segments and (lazily) counts the whole session.
An agent calls the model once per turn on a session that only grows, so a ``SessionAssembler``
keeps what it learnt about the session between calls::

    assembler = SessionAssembler(config, shape="openai-chat", counter=counter)
    for turn in agent_loop():
        assembly = assembler.assemble(session)   # same result as assemble(session, config, ...)
        ...

What is kept: the messages seen (compared by **identity**, a C-speed tuple comparison of the
previous messages against the head of the new session), the units (rings, turns, summaries) with
their facts and token costs, the positions of rings, user turns, system text, summaries and
attachments with their ids beside them, and running sums. When the new session extends the
previous one, only the new messages are validated (together with the last old unit, and their
call ids against every earlier id: the same verdict as validating the whole session) and
segmented; the decisions (prefix, suffix, the middle fill in tier order) are then recomputed from
those indexes: ``_fast`` walks ``steps.PIPELINE`` and takes each step from the index
(``_FAST_STEPS``, sharing the steps' rules: ``range_start``, ``KEEP_ORDER``, ``DROP_STEPS``,
``short_error``, ``normalize_view``).

What a turn costs: the new messages (validated, segmented, counted) plus C-speed work on what is
kept, never a Python loop over the session. The protected range is summed from the list of unit
costs; each tier of the fill is a slice of its position list walked newest first in chunks that
double (``_take_newest``: ``map``, ``accumulate``, ``bisect``), counting a unit only when the walk
reaches it, as the unit-by-unit fill did; the view is the kept units' message tuples chained. The
dropped ids, as long as the old end of the session, are one ``IdSlice`` of a tuple of ids kept
between turns (no copy) when the units skipped are at its head, the usual case (the pinned goal).
What stays proportional to the session: the identity check (about 15 ns a message) and a turn
whose kept window reaches older units than before, which counts them once.

The fast path covers the common turn: a valid session that fits, or that fits after degrading
middle attachments (oldest first) and deleting middle units in tier order. Anything else (a
pairing error or repair, ``clear_tool_result`` under pressure, a summary to write, an anchor for a session without a pinned
user goal, escalation, a final recount over budget, changed config/tools/ledger/memory/budget)
runs the full stateless pipeline, ``assemble()``, with the shared counter's memo. Either way the
result equals ``assemble()`` on the same input (``tests/reference_impl/test_incremental.py`` checks
that), except ``tokens_before.middle``: a lower bound in both (``tokens_before_is_lower_bound``),
here including units counted on earlier turns.
"""

from __future__ import annotations

import bisect
import hashlib
import logging
import operator
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import accumulate, chain, pairwise
from typing import Any, ClassVar, TypeVar, cast

from reference_impl.assembler import (
    Assembly,
    AssemblyReport,
    IdSlice,
    _injections,
    _observe,
    assemble,
)
from reference_impl.budget import BucketTokens, BudgetPlan, BudgetSnapshot, plan_budget
from reference_impl.config import AssemblyConfig
from reference_impl.errors import ConfigError
from reference_impl.ledger import Ledger
from reference_impl.memory import MemoryItem
from reference_impl.metrics import AssemblyMetrics, default_metrics
from reference_impl.rings import Ring, segment, validate
from reference_impl.steps import (
    PIPELINE,
    Step,
    Unit,
    anchor_first_user,
    check_buckets,
    classify_middle,
    clear_tool_results,
    degrade_attachments,
    drop_leading_non_user,
    drop_middle_by_tier,
    escalate,
    final_recount,
    narrow_ledger_pin,
    normalize_for_shape,
    normalize_view,
    protect_prefix,
    protect_suffix,
    summarize_middle,
)
from reference_impl.steps.protect import range_start
from reference_impl.steps.state import Tier
from reference_impl.steps.trim import (
    DROP_STEPS,
    KEEP_ORDER,
    degrade_message,
    short_error,
    unit_chars,
)
from reference_impl.summary import DeterministicSummarizer, Summarizer
from reference_impl.tokens import TokenCounter, counter_for
from reference_impl.tokens.counters import _MemoizedCounter
from reference_impl.transcript import SHAPE_NAMES, Message, ShapeName, SummaryPart, Transcript

__all__ = ["SessionAssembler"]

log = logging.getLogger("reference_impl")

_SYSTEM = frozenset({"system", "developer"})


@dataclass(slots=True)
class _Index:
    """What is known about the session so far: units in order and positions by kind."""

    messages: tuple[Message, ...] = ()
    units: list[Unit] = field(default_factory=list)
    ids: list[str] = field(default_factory=list)
    starts: list[int] = field(default_factory=list)
    """Message index where each unit starts."""
    chars: list[int] = field(default_factory=list)
    """Characters of each unit (-1 until needed by the short-error test)."""
    costs: list[int | None] = field(default_factory=list)
    """Token cost of each unit (None until counted; the same as ``Unit.cost_cache``)."""
    unit_messages: list[tuple[Message, ...]] = field(default_factory=list)
    """Messages of each unit: the view is built from these at C speed."""
    leading_system: int = 0
    """How many units at the start are system/developer turns (the security prompt)."""
    rings: list[int] = field(default_factory=list)
    error_rings: list[int] = field(default_factory=list)
    ring_ids: list[str] = field(default_factory=list)
    turns: list[int] = field(default_factory=list)
    """Plain turns after the leading system text (candidates for the plain-turn tier)."""
    turn_ids: list[str] = field(default_factory=list)
    users: list[int] = field(default_factory=list)
    systems: list[int] = field(default_factory=list)
    """System/developer turns after the leading ones (pinned by ``security_system_prompt``)."""
    summaries: list[int] = field(default_factory=list)
    summary_ids: list[str] = field(default_factory=list)
    """Ids beside positions (``ring_ids`` beside ``rings`` ...): a report's dropped ids are
    slices of these."""
    attachments: list[int] = field(default_factory=list)
    short_errors: list[int] = field(default_factory=list)
    classified: int = 0
    """Error rings decided short or not so far (``short_errors`` holds the short ones)."""
    counted_cost: int = 0
    counted_units: int = 0
    """Sum and number of the units counted so far (for ``tokens_before``)."""
    unusual: bool = False
    """A system-role summary: rare enough to leave to the full pipeline."""
    call_ids: set[str] = field(default_factory=set)
    result_ids: set[str] = field(default_factory=set)
    degraded: dict[int, tuple[Message, ...]] = field(default_factory=dict)
    """Units with their attachments replaced by placeholders, made once when first needed."""
    digest: Any = field(default_factory=hashlib.sha256)
    frozen: dict[str, tuple[str, ...]] = field(default_factory=dict)
    """``turn_ids``, ``ring_ids`` ... as tuples, remade only when a slice reaches past their end:
    a report's dropped ids are one tuple slice (amortized O(1) a turn to keep, not O(dropped))."""

    def frozen_ids(self, name: str, ids: list[str], stop: int) -> tuple[str, ...]:
        """``ids`` (one of the lists of ids above, ``name``) as a tuple at least ``stop`` long."""
        found = self.frozen.get(name, ())
        if len(found) < stop:
            found = self.frozen[name] = tuple(ids)
        return found

    def start(self, session: Transcript) -> bool:
        """Index a whole session; False when it is not valid."""
        if validate(session):
            return False
        messages = session.messages
        self.messages = messages
        self.call_ids = {c.id for m in messages for c in m.tool_calls}
        self.result_ids = {r.call_id for m in messages for r in m.tool_results}
        self._digest(messages)
        self._add_units(session, 0)
        return True

    def extend(self, messages: tuple[Message, ...]) -> bool:
        """Add the messages after ``self.messages``; False when the session is not valid.

        Validating the last old unit with the new messages, plus new call ids against every
        earlier id, gives the verdict of validating the whole session: old units are closed (the
        old session was valid), so a new message can only break pairing with the last old unit
        or by reusing an id (C3/A5/R6) or answering an old call again.
        """
        old = len(self.messages)
        new = messages[old:]
        window_start = self.starts[-1] if self.starts else 0
        if validate(Transcript(messages[window_start:])):
            return False
        new_calls = {c.id for m in new for c in m.tool_calls}
        new_results = {r.call_id for m in new for r in m.tool_results}
        if not (
            new_calls.isdisjoint(self.call_ids)
            and new_calls.isdisjoint(self.result_ids)
            and new_results.isdisjoint(self.result_ids)
        ):
            return False
        self.call_ids |= new_calls
        self.result_ids |= new_results
        self.messages = messages
        self._digest(new)
        self._add_units(Transcript(new), old)
        return True

    def degraded_messages(self, position: int) -> tuple[Message, ...]:
        """The unit's messages with attachments replaced (``steps.trim.degrade_attachments``)."""
        found = self.degraded.get(position)
        if found is None:
            found = tuple(degrade_message(m) for m in self.units[position].messages)
            self.degraded[position] = found
        return found

    def _digest(self, messages: Sequence[Message]) -> None:
        for m in messages:  # the same digest as assembler.session_digest_of
            self.digest.update(m.id.encode("utf-8"))
            self.digest.update(b"\n")

    def _add_units(self, part: Transcript, offset: int) -> None:
        for seg in segment(part):
            if isinstance(seg, Ring):
                messages = part.messages[seg.start : seg.stop]
                start = seg.start + offset
            else:
                messages = (part.messages[seg.index],)
                start = seg.index + offset
            position = len(self.units)
            head = messages[0]
            if isinstance(seg, Ring):
                has_error = any(r.is_error for m in messages for r in m.tool_results)
                unit = Unit("ring", messages, tier="verbose_ring", has_error_result=has_error)
                self.rings.append(position)
                self.ring_ids.append(unit.id)
                if has_error:
                    self.error_rings.append(position)
            elif any(isinstance(p, SummaryPart) for p in head.parts):
                unit = Unit("summary", messages, tier="summary")
                self.summaries.append(position)
                self.summary_ids.append(unit.id)
                self.unusual = self.unusual or head.role in _SYSTEM
            else:
                unit = Unit("turn", messages)
                if head.role in _SYSTEM and self.leading_system == position:
                    self.leading_system += 1
                    unit.bucket = "prefix"
                else:
                    self.turns.append(position)
                    self.turn_ids.append(unit.id)
                    if head.role == "user":
                        self.users.append(position)
                    elif head.role in _SYSTEM:
                        self.systems.append(position)
            if any(
                p.kind in ("image", "file")
                or (p.kind == "tool_result" and any(c.kind != "text" for c in p.content))
                for m in messages
                for p in m.parts
            ):
                self.attachments.append(position)
            self.units.append(unit)
            self.ids.append(unit.id)
            self.starts.append(start)
            self.chars.append(-1)
            self.costs.append(None)
            self.unit_messages.append(messages)


@dataclass(frozen=True, slots=True)
class _Settings:
    """What must be unchanged for the previous turn's knowledge to apply."""

    plan: BudgetPlan
    tools: tuple[object, ...]
    model: str | None
    params: tuple[tuple[str, str], ...]
    injections: tuple[Message, ...]


class SessionAssembler:
    """A stateful assembler for one session: call ``assemble(session)`` once per turn.

    The arguments are those of ``assemble()`` and stay fixed for the session, except ``ledger``,
    ``memory`` and ``budget``, which may be passed per turn (a change makes that turn take the full
    pipeline). Not thread-safe: one instance per session.
    """

    def __init__(
        self,
        config: AssemblyConfig | None = None,
        *,
        shape: ShapeName = "openai-chat",
        counter: TokenCounter | None = None,
        summarizer: Summarizer | None = None,
        metrics: AssemblyMetrics | None = None,
    ) -> None:
        if shape not in SHAPE_NAMES:
            raise ConfigError(
                f"unknown shape {shape!r}; known shapes: {', '.join(SHAPE_NAMES)}", where="shape"
            )
        self.config = config if config is not None else AssemblyConfig()
        self.shape: ShapeName = shape
        self.counter = counter
        self.summarizer = summarizer if summarizer is not None else DeterministicSummarizer()
        self.metrics = metrics if metrics is not None else default_metrics()
        self._index: _Index | None = None
        self._settings: _Settings | None = None
        self._fixed: tuple[_Settings, tuple[int, int, int]] | None = None
        self.fast_turns = 0
        """Turns answered by the incremental path (the rest ran the full pipeline)."""
        self.last_path = ""
        """``incremental``, or ``full:<why>`` (``full:new_session``, ``full:summary`` ...)."""

    # ------------------------------------------------------------------------- entry point

    def assemble(
        self,
        session: Transcript,
        *,
        ledger: Ledger | None = None,
        memory: Sequence[MemoryItem] = (),
        budget: BudgetSnapshot | int | None = None,
    ) -> Assembly:
        """The assembly of ``session``, equal to ``assemble(session, ...)`` with the same knobs."""
        started = time.perf_counter()
        if self.counter is None:
            self.counter = counter_for(self.shape, session.model)
        ledger = ledger if ledger is not None else Ledger()
        plan = plan_budget(self.config, budget)
        settings = _Settings(
            plan,
            session.tools,
            session.model,
            session.params,
            tuple(_injections(self.config, ledger, memory)),
        )
        self.last_path = "full:invalid_or_new_session"
        index = self._follow(session, settings)
        # The narrowed ledger note depends on what is kept: left to the full pipeline.
        narrowing = self.config.ledger_pin_mode != "always" and bool(ledger.side_effects)
        if index is not None and not narrowing:
            fast = self._fast(index, session, settings, started)
            if fast is not None:
                self.fast_turns += 1
                self.last_path = "incremental"
                return fast
        return assemble(
            session,
            self.config,
            shape=self.shape,
            counter=self.counter,
            summarizer=self.summarizer,
            ledger=ledger,
            memory=memory,
            budget=budget,
            metrics=self.metrics,
        )

    def _follow(self, session: Transcript, settings: _Settings) -> _Index | None:
        """The index extended to ``session``, or None when the session is not valid."""
        messages = session.messages
        index = self._index
        if index is not None and settings == self._settings:
            seen = index.messages
            # Identity at C speed: the head of the new session must hold the very same objects
            # (Message equality ignores ids, so equal-but-new objects start afresh).
            if len(messages) >= len(seen) and all(map(operator.is_, messages, seen)):
                if len(messages) == len(seen):
                    return index
                if index.extend(messages):
                    return index
                self._index = None
                return None
        self._settings = settings
        index = _Index()
        if not messages or not index.start(session):
            self._index = None
            return None
        self._index = index
        return index

    # ----------------------------------------------------------------------------- fast path

    def _fixed_costs(self, session: Transcript, settings: _Settings) -> tuple[int, int, int]:
        """Injections, tool schemas and the request overhead: fixed while the settings are."""
        cached = self._fixed
        if cached is not None and cached[0] == settings:
            return cached[1]
        counter = self.counter
        assert counter is not None
        empty = Transcript((), tools=session.tools, model=session.model, params=session.params)
        costs = (
            sum(counter.count_message(m) for m in settings.injections),
            counter.count_tools(session.tools),
            counter.count(empty).overhead,
        )
        self._fixed = (settings, costs)
        return costs

    def _fallback(self, why: str) -> Assembly | None:
        """Leave this turn to the full pipeline, saying why (``last_path``)."""
        self.last_path = f"full:{why}"
        return None

    def _cost(self, index: _Index, position: int) -> int:
        unit = index.units[position]
        if unit.cost_cache is None:
            assert self.counter is not None
            unit.cost_cache = sum(self.counter.count_message(m) for m in unit.messages)
            unit.original_cost = unit.cost_cache
            index.costs[position] = unit.cost_cache
            index.counted_cost += unit.cost_cache
            index.counted_units += 1
        return unit.cost_cache

    def _degraded_cost(self, index: _Index, position: int) -> int:
        assert self.counter is not None
        return sum(self.counter.count_message(m) for m in index.degraded_messages(position))

    def _degrade(
        self, index: _Index, degradable: list[int], pinned: set[int], start: int, room: int
    ) -> dict[int, int | None]:
        """Which middle attachments ``steps.trim.degrade_attachments`` degrades: oldest first
        until the middle fits, with the same newest-first frontier. Every attachment older than
        the frontier is degraded without changing the verdict, so those are taken in one batch
        (their cost is counted only if the fill reaches them); the window is then walked as the
        step walks it. Returns position -> degraded cost (``None``: not needed yet), oldest first.
        """
        # the frontier: the middle summed newest first up to the first unit that overflows
        costs = index.costs
        taken, over, used, over_cost = _take_newest(
            range(start),
            start,
            skip=pinned,
            room=room,
            known=lambda chunk: list(map(costs.__getitem__, chunk)),
            count=lambda p: self._cost(index, p),
        )
        if over is not None:
            frontier = over
            used += over_cost
        else:
            frontier = taken[-1] if taken else start
        split = bisect.bisect_left(degradable, frontier)
        degraded: dict[int, int | None] = dict.fromkeys(degradable[:split])

        def cost(p: int) -> int:
            if p in degraded:
                found = degraded[p]
                if found is None:
                    found = degraded[p] = self._degraded_cost(index, p)
                return found
            return self._cost(index, p)

        older = (p for p in range(frontier - 1, -1, -1) if p not in pinned)
        pending = next(older, None)
        for a in degradable[split:]:
            counted = a >= frontier
            before = cost(a) if counted else 0
            degraded[a] = self._degraded_cost(index, a) if counted else None
            if counted:
                used += cost(a) - before
            while pending is not None and used <= room:  # the window grows while it fits
                frontier = pending
                used += cost(pending)
                pending = next(older, None)
            if used <= room and pending is None:
                break  # the middle fits now
        return degraded

    def _short_error(self, index: _Index, position: int) -> bool:
        """``steps.trim.short_error``, with the unit's characters kept in the index."""

        def chars() -> int:
            if index.chars[position] < 0:
                index.chars[position] = unit_chars(index.units[position])
            return index.chars[position]

        return short_error(
            chars, lambda: self._cost(index, position), self.config.short_error_max_tokens
        )

    def _fast(
        self, index: _Index, session: Transcript, settings: _Settings, started: float
    ) -> Assembly | None:
        """``steps.PIPELINE`` walked from the index: each step's counterpart (``_FAST_STEPS``)
        decides from positions, in time proportional to what is kept, or names why this turn
        needs the full pipeline."""
        if index.unusual:
            return self._fallback("unusual_summary")
        turn = _Turn(index, session, settings, settings.plan.input_budget)
        for step in PIPELINE:
            why = self._FAST_STEPS[step](self, turn)
            if why is not None:
                return self._fallback(why)
        return self._assembly(turn, started)

    # -- the steps, fed from the index (in PIPELINE order) ------------------------------------

    def _protect_prefix(self, t: _Turn) -> str | None:
        """Leading system text, the pinned goal, pinned later system text (injections are
        counted as fixed costs)."""
        config, index = self.config, t.index
        t.prefix = list(range(index.leading_system))
        if index.users and config.pinned("first_user_message"):
            t.prefix.append(index.users[0])
        if config.pinned("security_system_prompt"):
            t.prefix.extend(index.systems)
        t.prefix_set = set(t.prefix)
        t.steps.append("protect_prefix")
        return None

    def _protect_suffix(self, t: _Turn) -> str | None:
        """The range (``steps.protect.range_start``; every ring of a valid session is complete)
        and the latest user messages one by one. What is protected is the range ``start..``
        plus ``pinned``: the prefix and the single user messages older than the range (a few
        units), so no set as long as the range is built."""
        config, index = self.config, t.index
        n = len(index.units)
        t.start = range_start(
            index.rings, index.rings, lambda: index.users, n, config.recent_tool_rings
        )
        t.singles = [
            i
            for i in index.users[-max(1, config.recent_user_turns) :]
            if i not in t.prefix_set and i < t.start
        ]
        t.pinned = {i for i in t.prefix if i < t.start}.union(t.singles)
        t.steps.append("protect_suffix")
        return None

    def _anchor_first_user(self, t: _Turn) -> str | None:
        """A protected unit that would open the conversation without a user message: the full
        pipeline protects an anchor."""
        roles = t.index.unit_messages
        first = min((i for i in t.pinned if roles[i][0].role not in _SYSTEM), default=None)
        if first is None:
            first = next(
                (i for i in range(t.start, len(roles)) if roles[i][0].role not in _SYSTEM), None
            )
        if first is not None and roles[first][0].role != "user":
            return "anchor"
        return None

    def _check_buckets(self, t: _Turn) -> str | None:
        """Prefix, suffix, tools and overhead over the budget: the full pipeline names the
        bucket (or drops tool schemas). The range is summed at C speed from the unit costs
        (only its units never counted before, the new ones, are counted here)."""
        index, start = t.index, t.start
        t.injection_cost, t.tools_cost, t.overhead = self._fixed_costs(t.session, t.settings)
        t.prefix_cost = sum(self._cost(index, i) for i in t.prefix) + t.injection_cost
        costs = index.costs
        missing = start
        while (missing := _index_of_none(costs, missing)) >= 0:
            self._cost(index, missing)
        in_range = sum(costs[start:])  # type: ignore[arg-type]  # no None left from start on
        t.suffix_cost = (
            in_range
            - sum(self._cost(index, i) for i in t.prefix_set if i >= start)
            + sum(self._cost(index, i) for i in t.singles)
        )
        t.fixed = t.prefix_cost + t.suffix_cost + t.tools_cost + t.overhead
        if t.fixed > t.budget:
            return "bucket_over_budget"
        t.room = t.budget - t.fixed
        return None

    def _classify_middle(self, t: _Turn) -> str | None:
        """Short error rings: a fixed property of a unit, decided once per ring (O(new) a turn);
        the newest ``keep_middle_error_results`` of the middle form the error tier."""
        index, left = t.index, self.config.keep_middle_error_results
        if left > 0:
            for i in index.error_rings[index.classified :]:
                if self._short_error(index, i):
                    index.short_errors.append(i)
            index.classified = len(index.error_rings)
            t.errors = index.short_errors[: bisect.bisect_left(index.short_errors, t.start)][-left:]
        t.error_set = set(t.errors)
        return None

    def _degrade_attachments(self, t: _Turn) -> str | None:
        """The middle filled in tier order; when it does not all fit, middle attachments are
        degraded oldest first and the fill is made again."""
        index = t.index
        self._fill(t)
        if not t.everything:
            early = bisect.bisect_left(index.attachments, t.start)
            degradable = list(_without(index.attachments, index.attachments, early, t.pinned))
            if degradable:
                t.degraded = self._degrade(index, degradable, t.pinned, t.start, t.room)
                self._fill(t)
        if t.degraded:
            t.steps.append("degrade_attachments")
        return None

    def _clear_tool_results(self, t: _Turn) -> str | None:
        """``clear_tool_result`` with a middle that does not fit: results would be cleared."""
        if self.config.middle_delete_unit == "clear_tool_result" and not t.everything:
            return "clear_tool_results"
        return None

    def _drop_middle_by_tier(self, t: _Turn) -> str | None:
        """What the fill left out, named by tier (``steps.trim.DROP_STEPS``)."""
        t.steps.extend(step for tier, step in DROP_STEPS if tier in t.dropped_tiers)
        return None

    def _drop_leading_non_user(self, t: _Turn) -> str | None:
        """Kept middle units in front of the first user message go."""
        messages = t.index.unit_messages
        t.kept = sorted([*t.pinned, *t.kept_middle])
        t.kept.extend(range(t.start, len(messages)))
        t.kept_middle_set = set(t.kept_middle)
        for i in t.kept:
            if messages[i][0].role in _SYSTEM:
                continue
            if messages[i][0].role == "user" or i not in t.kept_middle_set:
                break
            t.leading.append(i)
        if t.leading:
            for i in t.leading:
                t.kept_middle_set.discard(i)
                t.used -= self._cost_of(t, i)
            leading = set(t.leading)
            t.kept = [i for i in t.kept if i not in leading]
            t.steps.append("drop_leading_non_user")
        return None

    def _summarize_middle(self, t: _Turn) -> str | None:
        """Above the trigger ratio with something to summarize: a summary would be written."""
        units = t.index.units
        summarizable = any(units[i].kind != "summary" for i in t.kept_middle_set)
        if summarizable and t.used > t.budget * self.config.summarize_trigger_ratio - t.fixed:
            return "summary"
        return None

    def _escalate(self, _t: _Turn) -> str | None:
        """Nothing to do: the buckets fit and the fill stayed within the room."""
        return None

    def _narrow_ledger_pin(self, _t: _Turn) -> str | None:
        """Nothing to do: a note to narrow never takes this path (``assemble``)."""
        return None

    def _normalize_for_shape(self, t: _Turn) -> str | None:
        """The view of the kept units, injections after the leading system text, normalized for
        the shape (``steps.normalize.normalize_view``). Built at C speed: the kept units'
        message tuples chained, the few degraded units in the kept window swapped in."""
        index, kept = t.index, t.kept
        pieces = list(map(index.unit_messages.__getitem__, kept))
        if t.degraded and t.kept_middle_set:
            order = t.degraded_order
            for d in order[bisect.bisect_left(order, min(t.kept_middle_set)) :]:
                if d in t.kept_middle_set:
                    pieces[bisect.bisect_left(kept, d)] = index.degraded_messages(d)
        pieces.insert(bisect.bisect_left(kept, index.leading_system), t.settings.injections)
        t.base = _trusted_view(tuple(chain.from_iterable(pieces)), t.session)
        final, t.merged = normalize_view(t.base.messages, self.shape)
        t.view = _trusted_view(final, t.session) if t.merged else t.base
        if t.merged:
            t.steps.append("normalize")
        return None

    def _final_recount(self, t: _Turn) -> str | None:
        """The final recount. Skipped only when it cannot differ from the running totals: nothing
        merged (every message cost is the memoized per-message count) and one of our counters,
        whose request overhead never grows with the messages."""
        counter = self.counter
        assert counter is not None
        assert t.view is not None
        if (t.merged or not isinstance(counter, _MemoizedCounter)) and (
            counter.count(t.view).total > t.budget
        ):
            return "final_recount"
        return None

    # -- the fill of the middle ----------------------------------------------------------------

    def _cost_of(self, t: _Turn, i: int) -> int:
        if i in t.degraded:
            found = t.degraded[i]
            if found is None:
                found = t.degraded[i] = self._degraded_cost(t.index, i)
            return found
        cost = t.index.units[i].cost_cache
        return cost if cost is not None else self._cost(t.index, i)

    def _known_costs(self, t: _Turn, chunk: list[int]) -> list[int | None]:
        """The costs of ``chunk`` (ascending positions) as the fill sees them: degraded units at
        their degraded cost; None where not counted yet."""
        found = list(map(t.index.costs.__getitem__, chunk))
        if t.degraded and chunk:
            order = t.degraded_order
            low = bisect.bisect_left(order, chunk[0])
            for d in order[low : bisect.bisect_right(order, chunk[-1])]:
                k = bisect.bisect_left(chunk, d)
                if k < len(chunk) and chunk[k] == d:
                    found[k] = t.degraded[d]
        return found

    def _fill(self, t: _Turn) -> None:
        """The middle, newest first, in tier order (``steps.trim.KEEP_ORDER``), as
        ``drop_middle_by_tier`` fills it: kept while it fits, the rest of a tier and every later
        tier dropped once a unit does not. Each tier is a slice of a position list walked at C
        speed (``_take_newest``); ``t.drop_stop[tier]`` records how much of it was dropped."""
        index = t.index
        t.kept_middle = []
        t.dropped_tiers = set()
        t.drop_stop = {}
        t.used = 0
        t.everything = True
        t.degraded_order = list(t.degraded)
        exhausted = False
        members: dict[Tier, tuple[Sequence[int], set[int]]] = {
            "summary": (index.summaries, t.pinned),
            "error_ring": (t.errors, t.pinned),
            "plain_turn": (index.turns, t.pinned),
            "verbose_ring": (index.rings, t.pinned | t.error_set),
        }
        for tier in KEEP_ORDER:
            positions, skip = members[tier]
            stop = bisect.bisect_left(positions, t.start)
            if exhausted:
                if stop > len(_skipped(positions, stop, skip)):
                    t.everything = False
                    t.dropped_tiers.add(tier)
                    t.drop_stop[tier] = stop
                continue
            taken, over, used, _ = _take_newest(
                positions,
                stop,
                skip=skip,
                room=t.room - t.used,
                known=lambda chunk: self._known_costs(t, chunk),
                count=lambda p: self._cost_of(t, p),
            )
            t.kept_middle.extend(taken)
            t.used += used
            if over is not None:
                exhausted = True
                t.everything = False
                t.dropped_tiers.add(tier)
                t.drop_stop[tier] = over + 1

    # -- the result ----------------------------------------------------------------------------

    @staticmethod
    def _dropped(t: _Turn, tier: Tier) -> tuple[Sequence[int], Sequence[str], int, Collection[int]]:
        """What the fill dropped of one tier: the first ``stop`` of the tier's positions and ids
        (``drop_stop``: everything older than the unit that did not fit), less those skipped."""
        index = t.index
        stop = t.drop_stop.get(tier, 0)
        if tier == "error_ring":
            return t.errors, [index.ids[i] for i in t.errors[:stop]], stop, frozenset()
        if tier == "verbose_ring":
            ids = index.frozen_ids("rings", index.ring_ids, stop)
            return index.rings, ids, stop, t.error_set
        if tier == "plain_turn":
            return index.turns, index.frozen_ids("turns", index.turn_ids, stop), stop, t.pinned
        ids = index.frozen_ids("summaries", index.summary_ids, stop)
        return index.summaries, ids, stop, t.pinned

    @classmethod
    def _dropped_in_order(cls, t: _Turn, rare: Tier, common: Tier) -> Sequence[str]:
        """The ids two tiers dropped, in session order: a slice of the common tier's ids when
        the rare tier dropped nothing (the usual case; an ``IdSlice``, no copy, when the skipped
        positions are all at the head), else merged by position."""
        if not t.drop_stop.get(rare):
            positions, ids, stop, skip = cls._dropped(t, common)
            head = _skipped_head(positions, stop, skip)
            if head is not None and isinstance(ids, tuple):
                return IdSlice(ids, head, stop)
            return _without(positions, ids, stop, skip)
        merged: list[int] = []
        for tier in (rare, common):
            positions, _, stop, skip = cls._dropped(t, tier)
            merged.extend(_without(positions, positions, stop, skip))
        return _ids(t.index.ids, sorted(merged))

    def _assembly(self, t: _Turn, started: float) -> Assembly:
        config, index, units = self.config, t.index, t.index.units
        counter = self.counter
        assert counter is not None
        assert t.view is not None
        assert t.base is not None
        start = t.start
        # Dropped ids by tier, each a slice of a list of ids kept beside the positions (C speed):
        # the one part of the report as long as the old end of the session.
        ring_ids = self._dropped_in_order(t, "error_ring", "verbose_ring")
        turn_ids = self._dropped_in_order(t, "summary", "plain_turn")
        leading_rings = [i for i in t.leading if units[i].kind == "ring"]
        leading_turns = [i for i in t.leading if units[i].kind != "ring"]
        # drop_leading_non_user's ids come after the tiers' (as the pipeline records them)
        dropped_rings = _joined(ring_ids, _ids(index.ids, leading_rings))
        dropped_turns = _joined(turn_ids, _ids(index.ids, leading_turns))
        after = BucketTokens(t.prefix_cost, t.tools_cost, t.used, t.suffix_cost, t.overhead)
        # tokens before: every unit counted so far, on any turn (a lower bound when some of the
        # middle was never counted); protected: the range and the pinned units older than it
        protected = len(index.units) - start + len(t.pinned)
        before_middle = index.counted_cost - (t.prefix_cost - t.injection_cost) - t.suffix_cost
        lower = index.counted_units - protected < start - len(t.pinned)
        report = AssemblyReport(
            decision="ok",
            code=None,
            shape=self.shape,
            strategy=config.middle_delete_unit,
            counter=counter.name,
            budget=t.settings.plan,
            tokens_before=BucketTokens(
                t.prefix_cost, t.tools_cost, before_middle, t.suffix_cost, t.overhead
            ),
            tokens_before_is_lower_bound=lower,
            tokens_after=after,
            total_after=after.total,
            steps=tuple(t.steps),
            dropped_ring_ids=dropped_rings,
            dropped_turn_ids=dropped_turns,
            degraded_attachment_ids=_ids(index.ids, t.degraded_order),
            merged_ids=tuple(t.merged),
            seconds=time.perf_counter() - started,
            session_digest=index.digest.hexdigest(),
        )
        _observe(self.metrics, report, self.shape, config.middle_delete_unit, None)
        log.info(
            "assembled (incremental): session=%s messages=%d->%d tokens=%s/%d steps=%s",
            report.session_digest[:16],
            len(index.messages),
            len(t.view.messages),
            report.total_after,
            t.budget,
            ",".join(t.steps),
        )
        injections = t.settings.injections
        prefix_ids = [index.ids[i] for i in sorted(t.prefix_set)]
        return Assembly(
            view=t.view,
            report=report,
            config=config,
            injected_ids=tuple(m.id for m in injections),
            prefix_ids=(
                *(units[i].id for i in range(index.leading_system)),
                *(m.id for m in injections),
                *prefix_ids[index.leading_system :],
            ),
            base_view=t.base,
        )

    _FAST_STEPS: ClassVar[Mapping[Step, Callable[[SessionAssembler, _Turn], str | None]]] = {
        protect_prefix: _protect_prefix,
        protect_suffix: _protect_suffix,
        anchor_first_user: _anchor_first_user,
        check_buckets: _check_buckets,
        classify_middle: _classify_middle,
        degrade_attachments: _degrade_attachments,
        clear_tool_results: _clear_tool_results,
        drop_middle_by_tier: _drop_middle_by_tier,
        drop_leading_non_user: _drop_leading_non_user,
        summarize_middle: _summarize_middle,
        escalate: _escalate,
        narrow_ledger_pin: _narrow_ledger_pin,
        normalize_for_shape: _normalize_for_shape,
        final_recount: _final_recount,
    }
    """Each step of ``steps.PIPELINE`` as the incremental path takes it: from the index, returning
    why the full pipeline is needed (``last_path``) or None."""


@dataclass(slots=True)
class _Turn:
    """One turn on the incremental path: the decisions so far, by unit position."""

    index: _Index
    session: Transcript
    settings: _Settings
    budget: int
    steps: list[str] = field(default_factory=lambda: ["load", "validate_pairing"])
    prefix: list[int] = field(default_factory=list)
    prefix_set: set[int] = field(default_factory=set)
    start: int = 0
    """Where the suffix range starts."""
    singles: list[int] = field(default_factory=list)
    """The latest user messages older than the range (protected one by one)."""
    pinned: set[int] = field(default_factory=set)
    """Protected units older than the range: the prefix there and ``singles`` (a few)."""
    injection_cost: int = 0
    tools_cost: int = 0
    overhead: int = 0
    prefix_cost: int = 0
    suffix_cost: int = 0
    fixed: int = 0
    room: int = 0
    errors: list[int] = field(default_factory=list)
    error_set: set[int] = field(default_factory=set)
    kept_middle: list[int] = field(default_factory=list)
    kept_middle_set: set[int] = field(default_factory=set)
    dropped_tiers: set[str] = field(default_factory=set)
    drop_stop: dict[Tier, int] = field(default_factory=dict)
    """Per tier: the fill dropped its positions before this index (less the skipped ones)."""
    used: int = 0
    everything: bool = True
    """Whether the whole middle fits (nothing dropped by the fill)."""
    degraded: dict[int, int | None] = field(default_factory=dict)
    """Middle units whose attachments are replaced by placeholders: position -> cost."""
    degraded_order: list[int] = field(default_factory=list)
    """The positions of ``degraded``, ascending."""
    kept: list[int] = field(default_factory=list)
    leading: list[int] = field(default_factory=list)
    base: Transcript | None = None
    view: Transcript | None = None
    merged: list[str] = field(default_factory=list)


def _take_newest(
    positions: Sequence[int],
    stop: int,
    *,
    skip: Collection[int],
    room: int,
    known: Callable[[list[int]], list[int | None]],
    count: Callable[[int], int],
) -> tuple[list[int], int | None, int, int]:
    """``positions[:stop]`` newest first, less ``skip``, taken while their running sum stays
    within ``room``: (taken, newest first; the index in ``positions`` of the first that did not
    fit, or None; the sum taken; that one's cost). Walked at C speed (slices, ``map``,
    ``accumulate``, ``bisect``) in chunks that double, so it costs what is taken, not the
    length of ``positions``. ``known(chunk)`` gives the costs of ascending positions (None: not
    counted yet); ``count(p)`` counts one when the walk reaches it, as a unit-by-unit walk would.
    """
    taken: list[int] = []
    used = 0
    hi, size = stop, 32
    while hi > 0:
        lo = max(0, hi - size)
        size *= 2
        chunk = list(positions[lo:hi])
        for p in skip:
            k = bisect.bisect_left(chunk, p)
            if k < len(chunk) and chunk[k] == p:
                del chunk[k]
        values = known(chunk)
        chunk.reverse()
        values.reverse()
        i = 0
        while i < len(chunk):
            try:
                gap = values.index(None, i)
            except ValueError:
                gap = len(chunk)
            if gap > i:
                sums = list(accumulate(cast("list[int]", values[i:gap])))
                fits = bisect.bisect_right(sums, room - used)
                if fits < gap - i:
                    taken.extend(chunk[i : i + fits])
                    used += sums[fits - 1] if fits else 0
                    over = bisect.bisect_left(positions, chunk[i + fits])
                    return taken, over, used, cast("int", values[i + fits])
                taken.extend(chunk[i:gap])
                used += sums[-1]
            if gap == len(chunk):
                break
            values[gap] = count(chunk[gap])
            i = gap
        hi = lo
    return taken, None, used, 0


_T = TypeVar("_T")


def _without(
    positions: Sequence[int], values: Sequence[_T], stop: int, skip: Collection[int]
) -> tuple[_T, ...]:
    """``values[:stop]`` (beside ``positions``) less the entries whose position is in ``skip``
    (a few): one slice when those are at the head (the pinned goal, the usual case), else
    slices joined; C speed either way."""
    cuts = _skipped(positions, stop, skip)
    out: list[_T] = list(values[: cuts[0] if cuts else stop])
    for k, following in pairwise([*cuts, stop]):
        out += values[k + 1 : following]
    return tuple(out)


def _skipped(positions: Sequence[int], stop: int, skip: Collection[int]) -> list[int]:
    """The indexes in ``positions[:stop]`` of the positions in ``skip``, ascending."""
    return sorted(
        k for p in skip if (k := bisect.bisect_left(positions, p)) < stop and positions[k] == p
    )


def _skipped_head(positions: Sequence[int], stop: int, skip: Collection[int]) -> int | None:
    """How many of ``positions[:stop]`` are skipped when those are all at its head, else None."""
    cuts = _skipped(positions, stop, skip)
    return len(cuts) if cuts == list(range(len(cuts))) else None


def _index_of_none(values: list[int | None], start: int) -> int:
    try:
        return values.index(None, start)
    except ValueError:
        return -1


def _joined(ids: Sequence[str], more: tuple[str, ...]) -> Sequence[str]:
    return (*ids, *more) if more else ids


def _ids(ids: list[str], positions: list[int]) -> tuple[str, ...]:
    if not positions:
        return ()
    if len(positions) == 1:
        return (ids[positions[0]],)
    found: tuple[str, ...] = operator.itemgetter(*positions)(ids)
    return found


def _trusted_view(messages: tuple[Message, ...], session: Transcript) -> Transcript:
    """A view of messages taken from a validated session (unique ids, all set): built without
    ``Transcript``'s per-message checks, which would make every turn cost the whole view."""
    view = object.__new__(Transcript)
    object.__setattr__(view, "messages", messages)
    object.__setattr__(view, "tools", session.tools)
    object.__setattr__(view, "model", session.model)
    object.__setattr__(view, "params", session.params)
    return view
