"""Input budgets (``reference_impl/budget.py``): the model's window minus reserves, lowered by what
the run may still spend, with the source that bound it; named errors for impossible snapshots."""

from __future__ import annotations

import pytest

from reference_impl import AssemblyConfig, BudgetSnapshot
from reference_impl.budget import BucketTokens, BudgetPlan, plan_budget
from reference_impl.errors import ConfigError

NAN = float("nan")
INF = float("inf")
# input budget = 10,000 - 1,000 - 500 = 8,500
CONFIG = AssemblyConfig(
    model_input_limit=10_000, output_reserve_tokens=1_000, safety_margin_tokens=500
)


def test_without_anything_else_the_model_window_is_the_budget():
    plan = plan_budget(CONFIG)
    assert plan == BudgetPlan(input_budget=8_500, model_budget=8_500, source="model")
    assert plan.to_dict() == {"input_budget": 8_500, "model_budget": 8_500, "source": "model"}


@pytest.mark.parametrize(
    ("override", "budget", "source"),
    [
        (0, 0, "override"),
        (8_499, 8_499, "override"),
        (8_500, 8_500, "model"),
        (9_000, 8_500, "model"),
    ],
)
def test_an_explicit_budget_is_capped_by_the_model_window(override, budget, source):
    # On a tie the model's own window is named: the override did not lower anything.
    plan = plan_budget(CONFIG, override)
    assert (plan.input_budget, plan.model_budget, plan.source) == (budget, 8_500, source)


@pytest.mark.parametrize(
    ("fields", "budget", "source"),
    [
        ({"tokens_remaining": 0}, 0, "run_tokens"),
        ({"tokens_remaining": 3_000}, 3_000, "run_tokens"),
        ({"tokens_remaining": 20_000}, 8_500, "model"),
        # 1.00 at 0.0003 a token: 3,333.3 tokens, rounded down so the request never costs more.
        ({"cost_remaining": 1.0, "price_per_input_token": 0.0003}, 3_333, "run_cost"),
        ({"cost_remaining": 0.0, "price_per_input_token": 0.0003}, 0, "run_cost"),
        (
            {"tokens_remaining": 3_000, "cost_remaining": 0.6, "price_per_input_token": 0.0003},
            2_000,
            "run_cost",
        ),
        (
            {"tokens_remaining": 1_000, "cost_remaining": 0.6, "price_per_input_token": 0.0003},
            1_000,
            "run_tokens",
        ),
        # A price alone sets no limit: there is no amount of money to divide.
        ({"price_per_input_token": 0.0003}, 8_500, "model"),
        ({}, 8_500, "model"),
    ],
)
def test_a_run_snapshot_lowers_the_budget_and_names_what_bound_it(fields, budget, source):
    # Built in the test, not at collection: validating the snapshot is part of what is tested.
    plan = plan_budget(CONFIG, BudgetSnapshot(**fields))
    assert (plan.input_budget, plan.model_budget, plan.source) == (budget, 8_500, source)


def test_each_limit_of_a_snapshot_is_listed_with_its_source():
    assert BudgetSnapshot().token_limits() == []
    assert BudgetSnapshot(tokens_remaining=7).token_limits() == [(7, "run_tokens")]
    both = BudgetSnapshot(tokens_remaining=7, cost_remaining=0.01, price_per_input_token=0.001)
    assert both.token_limits() == [(7, "run_tokens"), (10, "run_cost")]


@pytest.mark.parametrize(
    ("fields", "where"),
    [
        ({"tokens_remaining": -1}, "budget.tokens_remaining"),
        ({"cost_remaining": -0.01, "price_per_input_token": 0.001}, "budget.cost_remaining"),
        ({"cost_remaining": 1.0}, "budget.price_per_input_token"),
        ({"cost_remaining": 1.0, "price_per_input_token": 0.0}, "budget.price_per_input_token"),
        ({"cost_remaining": 1.0, "price_per_input_token": -0.001}, "budget.price_per_input_token"),
        # Not a bare ValueError or OverflowError from rounding the budget down.
        ({"cost_remaining": NAN, "price_per_input_token": 0.001}, "budget.cost_remaining"),
        ({"cost_remaining": INF, "price_per_input_token": 0.001}, "budget.cost_remaining"),
        ({"cost_remaining": 1.0, "price_per_input_token": NAN}, "budget.price_per_input_token"),
        ({"cost_remaining": 1.0, "price_per_input_token": INF}, "budget.price_per_input_token"),
    ],
)
def test_an_impossible_snapshot_is_a_named_error(fields, where):
    with pytest.raises(ConfigError) as info:
        BudgetSnapshot(**fields)
    assert info.value.where == where


@pytest.mark.parametrize(
    ("budget", "message"),
    [
        (-1, "must not be negative (got -1)"),
        (True, "expected an integer or a BudgetSnapshot, got a boolean"),
        (1000.0, "expected an integer or a BudgetSnapshot, got float"),
        ("1000", "expected an integer or a BudgetSnapshot, got str"),
    ],
)
def test_a_budget_of_the_wrong_kind_is_a_named_error(budget, message):
    with pytest.raises(ConfigError) as info:
        plan_budget(CONFIG, budget)
    assert info.value.where == "budget"
    assert info.value.message == message


def test_bucket_tokens_add_up_to_the_whole_request():
    tokens = BucketTokens(prefix=10, tools=20, middle=30, suffix=40, overhead=3)
    assert tokens.total == 103
    assert tokens.to_dict() == {
        "prefix": 10,
        "tools": 20,
        "middle": 30,
        "suffix": 40,
        "overhead": 3,
        "total": 103,
    }
    assert BucketTokens(overhead=-4).total == -4  # a request-level adjustment can be negative
