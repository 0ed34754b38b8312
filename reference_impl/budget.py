"""Input budgets: the model's window minus reserves, lowered by what the run may still spend.

``input_budget = model_input_limit - output_reserve_tokens - safety_margin_tokens``. A run often has
its own allowance (tokens, or money at a price per input token); the assembler plans against the
smaller of the two and says which one bound it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from typing import Any, Literal, TypeAlias

from reference_impl.config import AssemblyConfig
from reference_impl.errors import ConfigError

__all__ = ["BucketTokens", "BudgetPlan", "BudgetSnapshot", "BudgetSource", "plan_budget"]

BudgetSource: TypeAlias = Literal["model", "run_tokens", "run_cost", "override"]


@dataclass(frozen=True, slots=True)
class BudgetSnapshot:
    """What the run may still spend: tokens, or cost with a price per input token (or both)."""

    tokens_remaining: int | None = None
    cost_remaining: float | None = None
    price_per_input_token: float | None = None

    def __post_init__(self) -> None:
        if self.tokens_remaining is not None and self.tokens_remaining < 0:
            raise ConfigError("must not be negative", where="budget.tokens_remaining")
        if self.cost_remaining is not None:
            if not math.isfinite(self.cost_remaining):
                raise ConfigError("must be a finite number", where="budget.cost_remaining")
            if self.cost_remaining < 0:
                raise ConfigError("must not be negative", where="budget.cost_remaining")
            price = self.price_per_input_token
            if price is None or not math.isfinite(price) or price <= 0:
                raise ConfigError(
                    "a cost budget needs a positive, finite price per input token",
                    where="budget.price_per_input_token",
                )

    def token_limits(self) -> list[tuple[int, BudgetSource]]:
        """Each limit the snapshot sets on input tokens, with its source."""
        out: list[tuple[int, BudgetSource]] = []
        if self.tokens_remaining is not None:
            out.append((self.tokens_remaining, "run_tokens"))
        if self.cost_remaining is not None and self.price_per_input_token:
            # Round down: a request may never cost more than what is left.
            out.append((math.floor(self.cost_remaining / self.price_per_input_token), "run_cost"))
        return out


@dataclass(frozen=True, slots=True)
class BudgetPlan:
    """The budget one assembly plans against and where it came from."""

    input_budget: int
    model_budget: int
    source: BudgetSource

    def to_dict(self) -> dict[str, Any]:
        """The plan as JSON data (for the report): each field, in field order."""
        return {f.name: getattr(self, f.name) for f in fields(self)}


@dataclass(frozen=True, slots=True)
class BucketTokens:
    """Tokens per bucket. ``overhead`` is the request's fixed reply priming."""

    prefix: int = 0
    tools: int = 0
    middle: int = 0
    suffix: int = 0
    overhead: int = 0

    @property
    def total(self) -> int:
        """Tokens of the whole request."""
        return self.prefix + self.tools + self.middle + self.suffix + self.overhead

    def to_dict(self) -> dict[str, int]:
        """The per-bucket totals as JSON data (for the report): each bucket in field order, then
        the total."""
        return {**{f.name: getattr(self, f.name) for f in fields(self)}, "total": self.total}


def plan_budget(config: AssemblyConfig, budget: BudgetSnapshot | int | None = None) -> BudgetPlan:
    """The smaller of the model's input budget and the run's snapshot.

    A bare ``int`` is an explicit input budget override (the CLI's ``--budget``, a scenario's
    budget); it is still capped by the model's window.
    """
    model_budget = config.input_budget
    candidates: list[tuple[int, BudgetSource]] = [(model_budget, "model")]
    if isinstance(budget, bool):
        raise ConfigError("expected an integer or a BudgetSnapshot, got a boolean", where="budget")
    if isinstance(budget, int):
        if budget < 0:
            raise ConfigError(f"must not be negative (got {budget})", where="budget")
        candidates.append((budget, "override"))
    elif isinstance(budget, BudgetSnapshot):
        candidates.extend(budget.token_limits())
    elif budget is not None:
        raise ConfigError(
            f"expected an integer or a BudgetSnapshot, got {type(budget).__name__}", where="budget"
        )
    # min() is stable on ties: the model's own window wins when equal.
    tokens, source = min(candidates, key=lambda c: c[0])
    return BudgetPlan(input_budget=tokens, model_budget=model_budget, source=source)
