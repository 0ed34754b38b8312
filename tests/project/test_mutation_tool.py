"""tools/mutation.py: the mutants it makes are real, distinct and found again in the live code."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from paths import ROOT
from script_support import load_script

mutation = load_script("tools/mutation.py", "ctxconf_mutation_tool")


def test_every_mutant_has_a_unique_id_and_changed_code() -> None:
    import reference_impl.budget as budget

    mutants = mutation.generate(ROOT / "reference_impl" / "budget.py")
    assert len(mutants) > 20
    assert len({m.mutant_id for m in mutants}) == len(mutants)
    index = mutation.live_function_index(mutants[0].path)
    for m in mutants:
        name = m.qualname.rpartition(".")[2]
        live = index.get((name, m.first_line), [])
        assert live, f"{m.mutant_id}: no live function {m.qualname} at line {m.first_line}"
        assert live[0].__code__.co_code != m.code.co_code or (
            live[0].__code__.co_consts != m.code.co_consts
        ), f"{m.mutant_id} compiles to the original code"
    assert budget.plan_budget.__code__.co_filename.endswith("budget.py")


@pytest.mark.parametrize(
    ("source", "operator", "expected"),
    [
        ("a == b", "compare", "a != b"),
        ("a < b", "compare", "a <= b"),
        ("x in y", "compare", "x not in y"),
        ("a and b", "boolop", "a or b"),
        ("not a", "not", "a"),
        ("a + b", "binop", "a - b"),
        ("True", "constant", "False"),
        ("3", "constant", "4"),
    ],
)
def test_expression_mutations(source: str, operator: str, expected: str) -> None:
    node = ast.parse(source, mode="eval").body
    produced = [(op, ast.unparse(new)) for op, _, new in mutation._mutations(node)]
    assert (operator, expected) in produced


def test_statement_mutations_cover_returns_calls_and_loops() -> None:
    tree = ast.parse("def f(xs):\n    for x in xs:\n        g(x)\n        break\n    return xs\n")
    function = tree.body[0]
    operators = {
        op for node, _ in mutation._walk_body(function) for op, _, _ in mutation._mutations(node)
    }
    assert {"statement", "loop", "return"} <= operators


def test_equivalent_list_and_score(tmp_path: Path) -> None:
    listing = tmp_path / "equivalent.txt"
    listing.write_text("# comment\n\na.py::f::compare::123  # same result for every input\n")
    assert mutation.load_equivalent(listing) == {
        "a.py::f::compare::123": "same result for every input"
    }
    mutants = mutation.generate(ROOT / "reference_impl" / "budget.py")[:4]
    outcomes = [
        mutation.Outcome(mutants[0], "killed"),
        mutation.Outcome(mutants[1], "timeout"),
        mutation.Outcome(mutants[2], "survived"),
        mutation.Outcome(mutants[3], "equivalent"),
    ]
    rows, total = mutation.score_lines(outcomes)
    assert total == pytest.approx(200 / 3)  # 2 killed of 3 counted; the equivalent is left out
    assert "reference_impl/budget.py" in rows[1]
