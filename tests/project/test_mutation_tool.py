"""tools/mutation.py: the mutants it makes are real, distinct and found again in the live code."""

from __future__ import annotations

import ast
import subprocess
import sys
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


def _ids(path: Path, source: str) -> dict[str, str]:
    path.write_text(source)
    return {m.description: m.mutant_id for m in mutation.generate(path)}


def test_a_mutant_id_changes_with_its_line_and_only_with_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # An equivalence (or a kill kept by --resume) judged for one line must not carry over to
    # other code that happens to hold the same expression: the id hashes the line's text too.
    monkeypatch.setattr(mutation, "ROOT", tmp_path)
    path = tmp_path / "m.py"
    base = _ids(path, "def f(a, b):\n    if a <= b:\n        return 1\n    return 2\n")
    moved = _ids(path, "def f(a, b):\n    c = 0\n    if a <= b:\n        return 1\n    return 2\n")
    changed = _ids(path, "def f(a, b):\n    while a <= b:\n        return 1\n    return 2\n")
    compare = "LtE -> Lt: a <= b"
    assert moved[compare] == base[compare]  # a line added elsewhere: the same id
    assert changed[compare] != base[compare]  # the line itself changed: a new id
    assert moved["return None: return 2"] == base["return None: return 2"]


def test_an_equivalence_entry_no_mutant_matches_is_stale() -> None:
    mutants = mutation.generate(ROOT / "reference_impl" / "budget.py")
    live = mutants[0].mutant_id
    listing = {
        live: "judged",
        "reference_impl/budget.py::plan_budget::compare::0000000000": "its line changed",
        "reference_impl/rings.py::edges::compare::0000000000": "a file not run",
    }
    stale = mutation.stale_equivalents(
        listing, {m.mutant_id for m in mutants}, ["reference_impl/budget.py"]
    )
    assert stale == ["reference_impl/budget.py::plan_budget::compare::0000000000"]


def test_a_coverage_run_whose_tests_do_not_pass_is_an_error(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """A map from a run that stopped at a collection error would call every mutant uncovered."""
    (tmp_path / "test_broken.py").write_text("raise ImportError('cannot collect this file')\n")
    out = tmp_path / "coverage.json"
    # outside the project's pytest options: leave out langsmith's plug-in as they do
    args = [str(tmp_path), "-p", "no:langsmith_plugin"]
    with pytest.raises(SystemExit, match="the coverage run failed"):
        mutation.measure_coverage(["reference_impl/budget.py"], args, out)
    assert not out.exists()
    assert "cannot collect this file" in capfd.readouterr().err


def test_the_tests_collect_without_xdist() -> None:
    """The tool runs pytest with ``-p no:xdist``: the ``xdist_group`` marks must still collect
    under --strict-markers (the project declares the marker itself)."""
    marked = sorted(
        p for p in (ROOT / "tests").rglob("test_*.py") if "xdist_group" in p.read_text()
    )
    assert marked
    smallest = min(marked, key=lambda p: p.stat().st_size)
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:xdist", str(smallest)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]


def test_the_timeout_counts_cpu_time_not_a_busy_machine() -> None:
    """A child that sleeps spends no CPU: it is not over a 1 s timeout until 10 s of wall time,
    while a child that spins is over it as soon as it has spent 1 s of CPU."""
    import os
    import time

    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        started = time.monotonic()
        assert mutation.cpu_seconds(os.getpid()) is not None
        deadline = started + 20
        while not mutation.over_time(spinner.pid, started, 1.0):
            assert time.monotonic() < deadline, "a spinning child never went over 1 s of CPU"
            time.sleep(0.05)
        assert not mutation.over_time(sleeper.pid, started, 1.0)
        assert mutation.over_time(sleeper.pid, started - 11.0, 1.0)  # asleep 10x too long: hung
    finally:
        sleeper.kill()
        spinner.kill()
        sleeper.wait()
        spinner.wait()


def test_a_report_resumes_with_the_outcomes_it_holds(tmp_path: Path) -> None:
    mutants = mutation.generate(ROOT / "reference_impl" / "budget.py")[:3]
    report = tmp_path / "mutation.json"
    written = [mutation.Outcome(mutants[0], "killed", tests_run=2)]
    written.append(mutation.Outcome(mutants[1], "error", "child exit 2"))
    written.append(mutation.Outcome(mutants[2], "survived", tests_run=5))
    assert mutation.write_report(report, written) == pytest.approx(100 / 3)
    kept = mutation.resumed_outcomes(report, mutants)
    # the kill is kept; the runner's own error and the survivor (a new test may kill it) run again
    assert [(o.mutant.mutant_id, o.status, o.tests_run) for o in kept] == [
        (mutants[0].mutant_id, "killed", 2)
    ]
    # an id no longer generated (its code changed) is dropped, not carried as a stale outcome
    assert mutation.resumed_outcomes(report, mutants[1:]) == []
    assert not report.with_suffix(".json.part").exists()


def test_a_condition_split_over_lines_is_covered_by_the_tests_that_ran_any_of_its_lines(
    tmp_path: Path,
) -> None:
    """Python runs no code on the line of an ``if (`` whose condition continues below: the
    tests that ran the condition's other lines cover a mutant of the ``if``, none of its body's
    lines do."""
    source = tmp_path / "target.py"
    source.write_text(
        "def f(a, b):\n"  # 1
        "    if (\n"  # 2
        "        a\n"  # 3
        "        and b\n"  # 4
        "    ):\n"  # 5
        "        return 1\n"  # 6
        "    return 0\n"  # 7
    )
    tree = ast.parse(source.read_text())
    node = next(n for n in ast.walk(tree) if isinstance(n, ast.If))
    assert (node.lineno, mutation._last_line(node, node.lineno)) == (2, 4)
    boolop = node.test
    assert mutation._last_line(boolop, boolop.lineno) == 4
    mutant = mutation.Mutant("m", "target.py", "f", 2, 4, 1, "if", "condition negated", code=None)  # type: ignore[arg-type]
    loop = mutation._MutationLoop(
        [mutant],
        {
            "lines": {"target.py": {"3": ["t1"], "4": ["t2"], "6": ["t3"]}},
            "durations": {"t2": 0.1, "t1": 0.5},
        },
        jobs=1,
        timeout=1.0,
        equivalent={},
    )
    by_id = {"t1": object(), "t2": object(), "t3": object()}
    assert loop._covering(mutant, by_id) == ["t2", "t1"]  # fastest first; not t3 (the body)


def test_a_method_whose_mutant_drops_super_is_patched_through_its_class() -> None:
    """``super().__init__(...)`` removed leaves no ``__class__`` cell: the code cannot be swapped
    in place, so the class gets a new function (in a forked child, as the tool does)."""
    import os

    from conformance.checks.registry import Failure

    mutant = next(
        m
        for m in mutation.generate(ROOT / "conformance" / "checks" / "registry.py")
        if m.qualname == "Failure.__init__" and m.operator == "statement"
    )
    pid = os.fork()
    if pid == 0:  # child
        code = 2
        try:
            patched = mutation._patch(mutant)
            failure = Failure("title", "message")
            # Without AssertionError.__init__ the message is the bare args, not "title: message".
            code = 0 if patched and str(failure) == "('title', 'message')" else 1
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert str(Failure("title", "message")) == "title: message"  # the parent is untouched
