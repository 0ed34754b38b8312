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
is *kept*, never to the length of the session.

The fast path covers the common turn: a valid session that fits, or that fits after degrading
middle attachments (oldest first) and deleting middle units in tier order. Anything else (a
pairing error or repair, ``clear_tool_result`` under pressure, a summary to write, an anchor for a session without a pinned
user goal, escalation, a final recount over budget, changed config/tools/ledger/memory/budget)
runs the full stateless pipeline, ``assemble()``, with the shared counter's memo. Either way the
result equals ``assemble()`` on the same input (``tests/test_assembler_incremental.py`` checks
that), except ``tokens_before.middle``: a lower bound in both (``tokens_before_is_lower_bound``),
here including units counted on earlier turns.
"""

from __future__ import annotations

import bisect
import hashlib
import logging
import operator
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from reference_impl.assembler import Assembly, AssemblyReport, _injections, _observe, assemble
from reference_impl.budget import BucketTokens, BudgetPlan, BudgetSnapshot, plan_budget
from reference_impl.config import AssemblyConfig
from reference_impl.errors import ConfigError
from reference_impl.ledger import Ledger
from reference_impl.memory import MemoryItem
from reference_impl.metrics import AssemblyMetrics, default_metrics
from reference_impl.rings import Ring, segment, validate
from reference_impl.steps.normalize import normalize_view
from reference_impl.steps.state import Unit
from reference_impl.steps.trim import CHARS_PER_TOKEN_CEILING, degrade_message, unit_chars
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
        limit = self.config.short_error_max_tokens
        if index.chars[position] < 0:
            index.chars[position] = unit_chars(index.units[position])
        if index.chars[position] > limit * CHARS_PER_TOKEN_CEILING:
            return False
        return self._cost(index, position) <= limit

    def _fast(  # noqa: PLR0915 - one pass over the decisions, in pipeline order
        self, index: _Index, session: Transcript, settings: _Settings, started: float
    ) -> Assembly | None:
        config = self.config
        counter = self.counter
        assert counter is not None
        if index.unusual:
            return self._fallback("unusual_summary")
        units = index.units
        n = len(units)
        budget = settings.plan.input_budget
        # prefix: leading system text, injections, the pinned goal, pinned later system text
        prefix = list(range(index.leading_system))
        first_user = index.users[0] if index.users else None
        if first_user is not None and config.pinned("first_user_message"):
            prefix.append(first_user)
        if config.pinned("security_system_prompt"):
            prefix.extend(index.systems)
        prefix_set = set(prefix)
        # suffix: the range, and the latest user messages one by one (steps.protect)
        rings = index.rings
        if config.recent_tool_rings > 0 and rings:
            start = rings[-min(config.recent_tool_rings, len(rings))]
        elif rings:
            start = rings[-1] + 1
        else:
            start = index.users[-1] if index.users else n
        singles = [
            i for i in index.users[-max(1, config.recent_user_turns) :] if i not in prefix_set
        ]
        suffix = [i for i in range(start, n) if i not in prefix_set]
        suffix_set = set(suffix).union(singles)
        protected = prefix_set | suffix_set
        # a user message must open the conversation (steps.normalize.anchor_first_user)
        conversational = [i for i in protected if units[i].messages[0].role not in _SYSTEM]
        if conversational and units[min(conversational)].messages[0].role != "user":
            return self._fallback("anchor")
        injections = settings.injections
        injection_cost, tools_cost, overhead = self._fixed_costs(session, settings)
        prefix_cost = sum(self._cost(index, i) for i in prefix) + injection_cost
        suffix_cost = sum(self._cost(index, i) for i in suffix_set)
        fixed = prefix_cost + suffix_cost + tools_cost + overhead
        if fixed > budget:  # the full pipeline names the bucket (or drops tool schemas)
            return self._fallback("bucket_over_budget")
        room = budget - fixed
        # the middle, newest first, in tier order (steps.trim.drop_middle_by_tier)
        cut = bisect.bisect_left

        # Short error rings: a fixed property of a unit, decided once per ring (O(new) a turn).
        left = config.keep_middle_error_results
        errors: list[int] = []
        if left > 0:
            for i in index.error_rings[index.classified :]:
                if self._short_error(index, i):
                    index.short_errors.append(i)
            index.classified = len(index.error_rings)
            errors = index.short_errors[: cut(index.short_errors, start)][-left:]
        error_set = set(errors)
        kept_middle: list[int] = []
        dropped_tiers: set[str] = set()
        exhausted = False
        used = 0
        everything = True
        # middle units whose attachments are replaced by placeholders: position -> cost
        degraded: dict[int, int | None] = {}

        def cost_of(i: int) -> int:
            if i in degraded:
                found = degraded[i]
                if found is None:
                    found = degraded[i] = self._degraded_cost(index, i)
                return found
            cost = units[i].cost_cache
            return cost if cost is not None else self._cost(index, i)

        def walk(positions: list[int], tier: str, skip: set[int]) -> None:
            nonlocal exhausted, used, everything
            for i in reversed(positions[: cut(positions, start)]):
                if i in protected or i in skip:
                    continue
                if not exhausted:
                    cost = cost_of(i)
                    if used + cost <= room:
                        used += cost
                        kept_middle.append(i)
                        continue
                    exhausted = True
                everything = False
                dropped_tiers.add(tier)
                return

        def fill() -> None:
            walk(index.summaries, "summary", set())
            walk(errors, "error_ring", set())
            walk(index.turns, "plain_turn", set())
            walk(index.rings, "verbose_ring", error_set)

        fill()
        early = index.attachments[: cut(index.attachments, start)]
        degradable = [i for i in early if i not in protected] if not everything else []
        if degradable:  # attachments are degraded, oldest first, before any text is cut
            degraded.update(self._degrade(index, degradable, protected, start, room))
            kept_middle.clear()
            dropped_tiers.clear()
            exhausted, used, everything = False, 0, True
            fill()
        kept = sorted([*prefix, *suffix_set, *kept_middle])
        steps = ["load", "validate_pairing", "protect_prefix", "protect_suffix"]
        if degraded:
            steps.append("degrade_attachments")
        for tier, step in (
            ("verbose_ring", "drop_middle_rings"),
            ("plain_turn", "drop_plain_turns"),
            ("error_ring", "drop_error_rings"),
            ("summary", "drop_old_summary"),
        ):
            if tier in dropped_tiers:
                steps.append(step)
        # a user message first (steps.normalize.drop_leading_non_user)
        kept_middle_set = set(kept_middle)
        leading: list[int] = []
        for i in kept:
            if units[i].messages[0].role in _SYSTEM:
                continue
            if units[i].messages[0].role == "user" or i not in kept_middle_set:
                break
            leading.append(i)
        if leading:
            for i in leading:
                kept_middle_set.discard(i)
                used -= cost_of(i)
            kept = [i for i in kept if i not in leading]
            steps.append("drop_leading_non_user")
        # a summary would be written above the trigger ratio (steps.compact.summarize_middle)
        summarizable = any(units[i].kind != "summary" for i in kept_middle_set)
        if summarizable and used > budget * config.summarize_trigger_ratio - fixed:
            return self._fallback("summary")
        # the view, normalized for the shape, and the final recount
        base_messages: list[Message] = []
        placed = False
        for i in kept:
            if not placed and i >= index.leading_system:
                base_messages.extend(injections)
                placed = True
            base_messages.extend(index.degraded_messages(i) if i in degraded else units[i].messages)
        if not placed:
            base_messages.extend(injections)
        base = _trusted_view(tuple(base_messages), session)
        final, merged = normalize_view(base.messages, self.shape)
        view = _trusted_view(final, session) if merged else base
        if merged:
            steps.append("normalize")
        # The final recount of the full pipeline. Skipped only when it cannot differ from the
        # running totals: nothing merged (every message cost is the memoized per-message count)
        # and one of our counters, whose request overhead never grows with the messages.
        if (merged or not isinstance(counter, _MemoizedCounter)) and (
            counter.count(view).total > budget
        ):
            return self._fallback("final_recount")
        # Dropped ids by position with set operations and itemgetter (C speed): this list is
        # as long as the old end of the session, the one part of the report that grows with it.
        keep_set = protected | kept_middle_set | set(leading)
        ring_ids = _ids(index.ids, sorted(set(index.rings[: cut(index.rings, start)]) - keep_set))
        others = set(index.turns[: cut(index.turns, start)])
        others.update(index.summaries[: cut(index.summaries, start)])
        turn_ids = _ids(index.ids, sorted(others - keep_set))
        dropped_rings = ring_ids + _ids(index.ids, [i for i in leading if units[i].kind == "ring"])
        dropped_turns = turn_ids + _ids(index.ids, [i for i in leading if units[i].kind != "ring"])
        kept_cost = used
        after = BucketTokens(prefix_cost, tools_cost, kept_cost, suffix_cost, overhead)
        # tokens before: every unit counted so far, on any turn (a lower bound when some of the
        # middle was never counted)
        protected_before = sum(1 for i in protected if i < start)
        before_middle = index.counted_cost - (prefix_cost - injection_cost) - suffix_cost
        lower = index.counted_units - len(protected) < start - protected_before
        seconds = time.perf_counter() - started
        report = AssemblyReport(
            decision="ok",
            code=None,
            shape=self.shape,
            strategy=config.middle_delete_unit,
            counter=counter.name,
            budget=settings.plan,
            tokens_before=BucketTokens(
                prefix_cost, tools_cost, before_middle, suffix_cost, overhead
            ),
            tokens_before_is_lower_bound=lower,
            tokens_after=after,
            total_after=after.total,
            steps=tuple(steps),
            dropped_ring_ids=dropped_rings,
            dropped_turn_ids=dropped_turns,
            degraded_attachment_ids=_ids(index.ids, list(degraded)),
            merged_ids=tuple(merged),
            seconds=seconds,
            session_digest=index.digest.hexdigest(),
        )
        _observe(self.metrics, report, self.shape, config.middle_delete_unit, None)
        log.info(
            "assembled (incremental): session=%s messages=%d->%d tokens=%s/%d steps=%s",
            report.session_digest[:16],
            len(index.messages),
            len(view.messages),
            report.total_after,
            budget,
            ",".join(steps),
        )
        prefix_ids = [units[i].id for i in kept if i in prefix_set]
        return Assembly(
            view=view,
            report=report,
            config=config,
            injected_ids=tuple(m.id for m in injections),
            prefix_ids=(
                *(units[i].id for i in range(index.leading_system)),
                *(m.id for m in injections),
                *prefix_ids[index.leading_system :],
            ),
            base_view=base,
        )


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
