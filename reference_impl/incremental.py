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
attachments, and running sums. When the new session extends the previous one, only the new
messages are validated (together with the last old unit, and their call ids against every earlier
id: the same verdict as validating the whole session) and segmented; the decisions (prefix, suffix,
the middle fill in tier order) are then recomputed from those indexes in time proportional to what
is *kept*, never to the length of the session: ``_fast`` walks ``steps.PIPELINE`` and takes each
step from the index (``_FAST_STEPS``, sharing the steps' rules: ``range_start``, ``KEEP_ORDER``,
``DROP_STEPS``, ``short_error``, ``normalize_view``).

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
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from reference_impl.assembler import Assembly, AssemblyReport, _injections, _observe, assemble
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
    leading_system: int = 0
    """How many units at the start are system/developer turns (the security prompt)."""
    rings: list[int] = field(default_factory=list)
    error_rings: list[int] = field(default_factory=list)
    turns: list[int] = field(default_factory=list)
    """Plain turns after the leading system text (candidates for the plain-turn tier)."""
    users: list[int] = field(default_factory=list)
    systems: list[int] = field(default_factory=list)
    """System/developer turns after the leading ones (pinned by ``security_system_prompt``)."""
    summaries: list[int] = field(default_factory=list)
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
                if has_error:
                    self.error_rings.append(position)
            elif any(isinstance(p, SummaryPart) for p in head.parts):
                unit = Unit("summary", messages, tier="summary")
                self.summaries.append(position)
                self.unusual = self.unusual or head.role in _SYSTEM
            else:
                unit = Unit("turn", messages)
                if head.role in _SYSTEM and self.leading_system == position:
                    self.leading_system += 1
                    unit.bucket = "prefix"
                else:
                    self.turns.append(position)
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
            index.counted_cost += unit.cost_cache
            index.counted_units += 1
        return unit.cost_cache

    def _degraded_cost(self, index: _Index, position: int) -> int:
        assert self.counter is not None
        return sum(self.counter.count_message(m) for m in index.degraded_messages(position))

    def _degrade(
        self, index: _Index, degradable: list[int], protected: set[int], start: int, room: int
    ) -> dict[int, int | None]:
        """Which middle attachments ``steps.trim.degrade_attachments`` degrades: oldest first
        until the middle fits, with the same newest-first frontier. Every attachment older than
        the frontier is degraded without changing the verdict, so those are taken in one batch
        (their cost is counted only if the fill reaches them); the window is then walked as the
        step walks it. Returns position -> degraded cost (``None``: not needed yet)."""
        units = index.units
        # the frontier: the middle summed newest first up to the first unit that overflows
        used = 0
        frontier = start
        for p in range(start - 1, -1, -1):
            if p in protected:
                continue
            frontier = p
            known = units[p].cost_cache
            used += known if known is not None else self._cost(index, p)
            if used > room:
                break
        split = bisect.bisect_left(degradable, frontier)
        degraded: dict[int, int | None] = dict.fromkeys(degradable[:split])

        def cost(p: int) -> int:
            if p in degraded:
                found = degraded[p]
                if found is None:
                    found = degraded[p] = self._degraded_cost(index, p)
                return found
            return self._cost(index, p)

        older = (p for p in range(frontier - 1, -1, -1) if p not in protected)
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
        and the latest user messages one by one."""
        config, index = self.config, t.index
        n = len(index.units)
        t.start = range_start(
            index.rings, index.rings, lambda: index.users, n, config.recent_tool_rings
        )
        singles = [
            i for i in index.users[-max(1, config.recent_user_turns) :] if i not in t.prefix_set
        ]
        t.suffix = [i for i in range(t.start, n) if i not in t.prefix_set]
        t.suffix_set = set(t.suffix).union(singles)
        t.protected = t.prefix_set | t.suffix_set
        t.steps.append("protect_suffix")
        return None

    def _anchor_first_user(self, t: _Turn) -> str | None:
        """A protected unit that would open the conversation without a user message: the full
        pipeline protects an anchor."""
        units = t.index.units
        conversational = [i for i in t.protected if units[i].messages[0].role not in _SYSTEM]
        if conversational and units[min(conversational)].messages[0].role != "user":
            return "anchor"
        return None

    def _check_buckets(self, t: _Turn) -> str | None:
        """Prefix, suffix, tools and overhead over the budget: the full pipeline names the
        bucket (or drops tool schemas)."""
        index = t.index
        t.injection_cost, t.tools_cost, t.overhead = self._fixed_costs(t.session, t.settings)
        t.prefix_cost = sum(self._cost(index, i) for i in t.prefix) + t.injection_cost
        t.suffix_cost = sum(self._cost(index, i) for i in t.suffix_set)
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
        early = index.attachments[: bisect.bisect_left(index.attachments, t.start)]
        degradable = [i for i in early if i not in t.protected] if not t.everything else []
        if degradable:
            t.degraded.update(self._degrade(index, degradable, t.protected, t.start, t.room))
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
        units = t.index.units
        t.kept = sorted([*t.prefix, *t.suffix_set, *t.kept_middle])
        t.kept_middle_set = set(t.kept_middle)
        for i in t.kept:
            if units[i].messages[0].role in _SYSTEM:
                continue
            if units[i].messages[0].role == "user" or i not in t.kept_middle_set:
                break
            t.leading.append(i)
        if t.leading:
            for i in t.leading:
                t.kept_middle_set.discard(i)
                t.used -= self._cost_of(t, i)
            t.kept = [i for i in t.kept if i not in t.leading]
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
        the shape (``steps.normalize.normalize_view``)."""
        index, injections = t.index, t.settings.injections
        units = index.units
        base_messages: list[Message] = []
        placed = False
        for i in t.kept:
            if not placed and i >= index.leading_system:
                base_messages.extend(injections)
                placed = True
            base_messages.extend(
                index.degraded_messages(i) if i in t.degraded else units[i].messages
            )
        if not placed:
            base_messages.extend(injections)
        t.base = _trusted_view(tuple(base_messages), t.session)
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

    def _fill(self, t: _Turn) -> None:
        """The middle, newest first, in tier order (``steps.trim.KEEP_ORDER``), as
        ``drop_middle_by_tier`` fills it: kept while it fits, the rest of a tier and every later
        tier dropped once a unit does not."""
        index = t.index
        t.kept_middle = []
        t.dropped_tiers = set()
        t.used = 0
        t.everything = True
        exhausted = False
        cut = bisect.bisect_left
        members = {
            "summary": (index.summaries, ()),
            "error_ring": (t.errors, ()),
            "plain_turn": (index.turns, ()),
            "verbose_ring": (index.rings, t.error_set),
        }
        for tier in KEEP_ORDER:
            positions, skip = members[tier]
            for i in reversed(positions[: cut(positions, t.start)]):
                if i in t.protected or i in skip:
                    continue
                if not exhausted:
                    cost = self._cost_of(t, i)
                    if t.used + cost <= t.room:
                        t.used += cost
                        t.kept_middle.append(i)
                        continue
                    exhausted = True
                t.everything = False
                t.dropped_tiers.add(tier)
                break

    # -- the result ----------------------------------------------------------------------------

    def _assembly(self, t: _Turn, started: float) -> Assembly:
        config, index, units = self.config, t.index, t.index.units
        counter = self.counter
        assert counter is not None
        assert t.view is not None
        assert t.base is not None
        cut = bisect.bisect_left
        start, keep_set = t.start, t.protected | t.kept_middle_set | set(t.leading)
        # Dropped ids by position with set operations and itemgetter (C speed): this list is
        # as long as the old end of the session, the one part of the report that grows with it.
        ring_ids = _ids(index.ids, sorted(set(index.rings[: cut(index.rings, start)]) - keep_set))
        others = set(index.turns[: cut(index.turns, start)])
        others.update(index.summaries[: cut(index.summaries, start)])
        turn_ids = _ids(index.ids, sorted(others - keep_set))
        leading_rings = [i for i in t.leading if units[i].kind == "ring"]
        leading_turns = [i for i in t.leading if units[i].kind != "ring"]
        dropped_rings = ring_ids + _ids(index.ids, leading_rings)
        dropped_turns = turn_ids + _ids(index.ids, leading_turns)
        after = BucketTokens(t.prefix_cost, t.tools_cost, t.used, t.suffix_cost, t.overhead)
        # tokens before: every unit counted so far, on any turn (a lower bound when some of the
        # middle was never counted)
        protected_before = sum(1 for i in t.protected if i < start)
        before_middle = index.counted_cost - (t.prefix_cost - t.injection_cost) - t.suffix_cost
        lower = index.counted_units - len(t.protected) < start - protected_before
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
            degraded_attachment_ids=_ids(index.ids, list(t.degraded)),
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
        prefix_ids = [units[i].id for i in t.kept if i in t.prefix_set]
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
    suffix: list[int] = field(default_factory=list)
    suffix_set: set[int] = field(default_factory=set)
    protected: set[int] = field(default_factory=set)
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
    used: int = 0
    everything: bool = True
    """Whether the whole middle fits (nothing dropped by the fill)."""
    degraded: dict[int, int | None] = field(default_factory=dict)
    """Middle units whose attachments are replaced by placeholders: position -> cost."""
    kept: list[int] = field(default_factory=list)
    leading: list[int] = field(default_factory=list)
    base: Transcript | None = None
    view: Transcript | None = None
    merged: list[str] = field(default_factory=list)


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
