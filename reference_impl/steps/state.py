"""The working state of one assembly: units in view order, their buckets, and running totals.

A **unit** is what the policy keeps or drops as one piece: a ring (assistant with calls plus all of
its results), one plain turn, one injection or the summary. Token costs are computed lazily and at
most once per unit (the counter memoizes per message as well), and ``fits`` sums the middle in
the order the fill keeps it and stops as soon as the budget is exceeded, so what the fill is going
to drop (the old end of a long session, the verbose rings first) is never encoded (ARCHITECTURE
section 6).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Final, Literal, TypeAlias

from reference_impl.budget import BucketTokens, BudgetPlan
from reference_impl.config import AssemblyConfig
from reference_impl.errors import ContextAssemblyError
from reference_impl.ledger import Ledger
from reference_impl.rings import validate
from reference_impl.steps.pairing import violations_details
from reference_impl.summary import DeterministicSummarizer, Summarizer
from reference_impl.tokens import TokenCounter
from reference_impl.transcript import Message, ToolSpec, Transcript

__all__ = ["KEEP_ORDER", "AssemblyState", "Bucket", "Step", "Tier", "Unit"]

Bucket: TypeAlias = Literal["prefix", "middle", "suffix"]
Tier: TypeAlias = Literal["summary", "error_ring", "plain_turn", "verbose_ring"]
"""Middle tiers in keep order: earlier tiers are kept longest."""
KEEP_ORDER: Final[tuple[Tier, ...]] = ("summary", "error_ring", "plain_turn", "verbose_ring")
"""Middle tiers, kept longest first: the fill of ``drop_middle_by_tier`` walks them in this
order, newest first within a tier (``AssemblyState.keep_order``)."""
UnitKind: TypeAlias = Literal["ring", "turn", "injection", "summary"]
Step: TypeAlias = Callable[["AssemblyState"], None]
"""One step of the pipeline: reads and changes the state (``steps.PIPELINE``)."""


@dataclass(slots=True)
class Unit:
    """What the policy keeps or drops as one piece (see the module docstring)."""

    kind: UnitKind
    messages: tuple[Message, ...]
    bucket: Bucket = "middle"
    tier: Tier = "plain_turn"
    kept: bool = True
    has_error_result: bool = False
    created: bool = False
    """True for what the assembler added itself (the new summary); not part of "tokens before"."""
    original_cost: int | None = None
    replaced: bool = False
    """Content changed (degraded, cleared); the identity (first message id) is kept."""
    cost_cache: int | None = None

    @property
    def id(self) -> str:
        """The id of the unit's first message (stable through degrading and clearing)."""
        return self.messages[0].id

    def replace_messages(self, messages: tuple[Message, ...]) -> None:
        """Swap in changed content (degraded, cleared). ``original_cost`` keeps the cost of the
        content as loaded, or stays None when that was never counted: a unit changed twice must
        not pass its first change's cost off as the session's."""
        self.messages = messages
        self.cost_cache = None
        self.replaced = True


@dataclass(slots=True)
class AssemblyState:
    """Everything the steps read and change. Steps are functions ``(state) -> None``."""

    config: AssemblyConfig
    counter: TokenCounter
    ledger: Ledger
    plan: BudgetPlan
    units: list[Unit]
    tools: tuple[ToolSpec, ...]
    session: Transcript
    shape: str = "openai-chat"
    summarizer: Summarizer = field(default_factory=DeterministicSummarizer)
    overhead: int = 0
    tools_cost: int = 0
    steps: list[str] = field(default_factory=list)
    dropped_ring_ids: list[str] = field(default_factory=list)
    dropped_turn_ids: list[str] = field(default_factory=list)
    cleared_result_ids: list[str] = field(default_factory=list)
    degraded_attachment_ids: list[str] = field(default_factory=list)
    repairs: list[str] = field(default_factory=list)
    merged_ids: list[str] = field(default_factory=list)
    """Messages merged into a same-side neighbour for the shape's alternation (B3, G1/G4)."""
    dropped_tool_names: list[str] = field(default_factory=list)
    summary_id: str | None = None
    summarizer_name: str | None = None
    summary_failed: bool = False
    notes: list[str] = field(default_factory=list)
    final_view: Transcript | None = None
    """The view normalized for ``shape`` (set by the last step before the final recount)."""
    raw_costs: dict[tuple[str, str], int] = field(default_factory=dict)
    """Tokens of the wire blocks no neutral part holds, by the id and digest of the session
    message that carries them (``TokenCounter.raw_costs``): part of that message's cost while
    its content is as loaded (a degraded or cleared message is another message, rendered
    without them)."""
    started: float = field(default_factory=time.perf_counter)
    cutting: bool | None = None
    """Whether the middle is cut: the view as loaded (after the bucket check, which may leave
    tool schemas out) does not fit the budget. Decided by the first step that asks for
    ``cut_budget``, before any step has changed the middle."""

    # -- counting ---------------------------------------------------------------------------

    def cost(self, unit: Unit) -> int:
        """Tokens of a unit, counted once and cached on it."""
        if unit.cost_cache is None:
            count, raw = self.counter.count_message, self.raw_costs
            unit.cost_cache = sum(count(m) for m in unit.messages)
            if raw:
                unit.cost_cache += sum(raw.get((m.id, m.digest), 0) for m in unit.messages)
            if not unit.replaced:
                unit.original_cost = unit.cost_cache
        return unit.cost_cache

    def refresh_overhead(self) -> None:
        """The request's fixed overhead for the tools offered now. It depends on them: Claude
        counters add the hidden tool-use system prompt whenever tools are sent."""
        empty = Transcript(
            (), tools=self.tools, model=self.session.model, params=self.session.params
        )
        self.overhead = self.counter.count(empty).overhead

    def kept(self, bucket: Bucket) -> list[Unit]:
        """The kept units of ``bucket``, in view order."""
        return [u for u in self.units if u.kept and u.bucket == bucket]

    def bucket_cost(self, bucket: Bucket) -> int:
        """Tokens of the kept units of ``bucket``."""
        return sum(self.cost(u) for u in self.kept(bucket))

    @property
    def fixed_cost(self) -> int:
        """Everything that is never cut for the middle: prefix, suffix, tools, reply overhead."""
        return (
            self.bucket_cost("prefix")
            + self.bucket_cost("suffix")
            + self.tools_cost
            + self.overhead
        )

    @property
    def budget(self) -> int:
        """The input-token budget of the plan."""
        return self.plan.input_budget

    def cut_budget(self) -> int:
        """What the steps that cut the middle (degrade, clear, drop) aim at: the budget; with a
        ``compaction_headroom``, once the view as loaded is over the budget, the budget less the
        headroom (but never below what they cannot cut: prefix, suffix, tools, overhead)."""
        budget = self.budget
        if self.config.headroom_tokens(budget) == 0:
            return budget
        if self.cutting is None:
            # Tool schemas the bucket check left out made the fixed part fit; they do not make
            # the middle cut (else every turn over a tool list too long would cut the middle).
            self.cutting = not self.fits()
        if not self.cutting:
            return budget
        return self.config.cut_target(budget, self.fixed_cost)

    def keep_order(self) -> list[Unit]:
        """The kept middle units in the order the fill keeps them: by tier (``KEEP_ORDER``),
        newest first within a tier. Before ``classify_middle`` every unit is a plain turn, so
        this is newest first."""
        tiers: dict[Tier, list[Unit]] = {tier: [] for tier in KEEP_ORDER}
        for unit in reversed(self.units):
            if unit.kept and unit.bucket == "middle":
                tiers[unit.tier].append(unit)
        return [unit for tier in KEEP_ORDER for unit in tiers[tier]]

    def fits(self, limit: float | None = None) -> bool:
        """Whether the kept units fit ``limit`` (the budget by default), counting lazily.

        The middle is summed in keep order (``keep_order``) and the walk stops at the first unit
        that overflows: the verdict does not depend on the order, and this one counts what the
        fill of ``drop_middle_by_tier`` keeps, plus the unit it stops at, and nothing it drops.
        """
        room = (self.budget if limit is None else limit) - self.fixed_cost
        if room < 0:
            return False
        used = 0
        for unit in self.keep_order():
            used += self.cost(unit)
            if used > room:
                return False
        return True

    def tokens(self) -> BucketTokens:
        """Per-bucket totals of what is kept (counts every kept unit)."""
        return BucketTokens(
            prefix=self.bucket_cost("prefix"),
            tools=self.tools_cost,
            middle=self.bucket_cost("middle"),
            suffix=self.bucket_cost("suffix"),
            overhead=self.overhead,
        )

    # -- the view ---------------------------------------------------------------------------

    def view(self) -> Transcript:
        """The transcript of the kept units, as it stands now."""
        messages = tuple(m for u in self.units if u.kept for m in u.messages)
        return Transcript(
            messages=messages,
            tools=self.tools,
            model=self.session.model,
            params=self.session.params,
        )

    def record(self, step: str, *, revalidate: bool = True) -> None:
        """Note a step that changed the view, then re-check pairing on the view.

        ``revalidate=False`` is for steps that only dropped whole units (rings, turns) from a
        view whose pairing held: a ring is its call and all of its results, so taking whole
        units away cannot unpair anything, and an O(n) check after each such step is waste.
        """
        self.steps.append(step)
        if not revalidate:
            return
        violations = validate(self.view())
        if violations:  # a bug in a step, never the caller's input: refuse rather than send it
            raise ContextAssemblyError(
                f"step {step!r} produced a view with {len(violations)} pairing violation(s); "
                "refusing to send it",
                code="context_assembly_pairing_error",
                details={"step": step, "violations": violations_details(violations)},
            )
