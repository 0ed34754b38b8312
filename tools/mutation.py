"""Mutation testing of the policy and the checks, with the project's own tests as the killer.

Why not mutmut: mutmut 3 never mutates a decorated function, and every conformance check is
registered with ``@check(...)``, so the checks would not be tested at all. This runner mutates
every function body, decorated or not, by swapping the live function's ``__code__`` in a forked
child, so registries, aliases and ``from x import f`` bindings all see the mutant.

Phases:

1. *coverage*: the selected tests run once in a child process under coverage.py with one context
   per test, giving for every line of a target file the tests that execute it (and each test's
   duration).
2. *mutation*: the parent imports the target modules, then forks one child per mutant; the child
   patches the enclosing top-level function (or method) and runs only the tests that cover the
   mutated line, fastest first, stopping at the first failure. A failing test (or a timeout)
   kills the mutant; a mutant no test covers survives as ``uncovered``. The timeout counts the
   CPU time the child (and the processes it waited for) spent, not the wall clock, so a busy
   machine never turns a slow survivor into a "kill"; a child that sleeps past ten times the
   timeout in wall time (a hang) is a timeout too.

Outcomes are written to the report as they come (``--report``), and ``--resume`` reads such a
report back and runs only the mutants it has no outcome for, so a long run can be stopped and
continued.

Equivalent mutants (no test can tell them apart, because the behaviour is the same) are listed
with a reason in ``tools/mutation-equivalent.txt`` and left out of the score. Mutant ids are
``file::qualname::operator::digest``, where the digest hashes the mutation, the mutated node's
source text, the text of the line it starts on and its occurrence in the function: ids survive
edits elsewhere in the file, and an edit of the line itself gives its mutants new ids, so an
outcome or an equivalence judged for the old line never carries over to new code (an entry of
the equivalence list that no mutant of the files run matches is printed as stale).

Usage: ``python tools/mutation.py [--jobs 2] [--timeout 60] [--only PATH] [--report FILE]``.
"""

from __future__ import annotations

import argparse
import ast
import copy
import gc
import hashlib
import io
import json
import os
import re
import signal
import sys
import time
import types
from collections.abc import Callable, Iterator
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent

#: The files where a silent mistake is worst: the checks, identity, the pipeline steps, rings, budget, assembler.
DEFAULT_TARGETS = (
    "conformance/checks/",
    "conformance/identity.py",
    "reference_impl/steps/",
    "reference_impl/rings.py",
    "reference_impl/budget.py",
    "reference_impl/assembler.py",
)
#: Tests that exercise the package as a whole from outside (an installed wheel, a browser) add
#: nothing here and cost minutes; they are left out by marker where the project declares one.
SKIPPED_MARKERS = ("slow", "wheel", "browser")
#: The parent imported the packages before forking, so pytest cannot rewrite their asserts (it
#: warns, and the project turns warnings into errors); the tests' own asserts are still rewritten.
_PYTEST_FLAGS = (
    "-p",
    "no:xdist",
    "-p",
    "no:cacheprovider",
    "-W",
    "ignore::pytest.PytestAssertRewriteWarning",
)
EQUIVALENT_FILE = ROOT / "tools" / "mutation-equivalent.txt"
#: How much of a failed coverage run's pytest output is shown.
_FAILED_RUN_LINES = 30

_COMPARE_SWAPS: dict[type[ast.cmpop], type[ast.cmpop]] = {
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
    ast.Lt: ast.LtE,
    ast.LtE: ast.Lt,
    ast.Gt: ast.GtE,
    ast.GtE: ast.Gt,
    ast.In: ast.NotIn,
    ast.NotIn: ast.In,
    ast.Is: ast.IsNot,
    ast.IsNot: ast.Is,
}
_BINOP_SWAPS: dict[type[ast.operator], type[ast.operator]] = {
    ast.Add: ast.Sub,
    ast.Sub: ast.Add,
    ast.Mult: ast.FloorDiv,
    ast.FloorDiv: ast.Mult,
    ast.Div: ast.Mult,
    ast.Mod: ast.FloorDiv,
}


@dataclass(frozen=True)
class Mutant:
    """One small change to one function body."""

    mutant_id: str
    path: str
    qualname: str  # of the top-level function or method whose code is replaced
    line: int
    last_line: int  # the mutated node's last line (an `if`'s: its condition's)
    first_line: int  # where the enclosing function's code starts (to find it live)
    operator: str
    description: str
    code: types.CodeType = field(compare=False, repr=False)


@dataclass
class Outcome:
    mutant: Mutant
    status: str  # killed | survived | uncovered | timeout | equivalent | error
    killer: str = ""
    tests_run: int = 0


# ---------------------------------------------------------------------------------------------
# Generating mutants
# ---------------------------------------------------------------------------------------------


def _is_docstring(node: ast.AST, parent: ast.AST | None) -> bool:
    return (
        isinstance(node, ast.Expr)
        and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, str)
        and parent is not None
    )


def _mutations(node: ast.AST) -> Iterator[tuple[str, str, ast.AST]]:
    """(operator, description, replacement node) for each mutation of one node."""
    if isinstance(node, ast.Compare) and len(node.ops) == 1:
        swap = _COMPARE_SWAPS.get(type(node.ops[0]))
        if swap is not None:
            new = copy.copy(node)
            new.ops = [swap()]
            yield "compare", f"{type(node.ops[0]).__name__} -> {swap.__name__}", new
    elif isinstance(node, ast.BoolOp):
        new_op: ast.boolop = ast.Or() if isinstance(node.op, ast.And) else ast.And()
        new_bool = copy.copy(node)
        new_bool.op = new_op
        yield "boolop", f"{type(node.op).__name__} -> {type(new_op).__name__}", new_bool
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        yield "not", "drop `not`", node.operand
    elif isinstance(node, ast.BinOp | ast.AugAssign):
        arith = _BINOP_SWAPS.get(type(node.op))
        if arith is not None:
            new_arith = copy.copy(node)
            new_arith.op = arith()
            kind, eq = ("binop", "") if isinstance(node, ast.BinOp) else ("augassign", "=")
            yield kind, f"{type(node.op).__name__}{eq} -> {arith.__name__}{eq}", new_arith
    elif isinstance(node, ast.Constant):
        value = node.value
        if value is True or value is False:
            yield "constant", f"{value} -> {not value}", ast.Constant(value=not value)
        elif isinstance(value, int) and not isinstance(value, bool):
            yield "constant", f"{value} -> {value + 1}", ast.Constant(value=value + 1)
    elif isinstance(node, ast.Return) and node.value is not None:
        if not (isinstance(node.value, ast.Constant) and node.value.value is None):
            yield "return", "return None", ast.Return(value=ast.Constant(value=None))
    elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
        yield "statement", "call removed", ast.Pass()
    elif isinstance(node, ast.Break):
        yield "loop", "break -> continue", ast.Continue()
    elif isinstance(node, ast.Continue):
        yield "loop", "continue -> break", ast.Break()
    elif isinstance(node, ast.If):
        new_if = copy.copy(node)
        new_if.test = ast.UnaryOp(op=ast.Not(), operand=node.test)
        yield "if", "condition negated", new_if


def _skip(node: ast.AST) -> bool:
    """Nodes whose mutants are noise: type-only code, assertions, logging, error wording."""
    if isinstance(node, (ast.Assert, ast.AnnAssign)) and getattr(node, "value", None) is None:
        return True
    if isinstance(node, ast.Assert):
        return True  # type narrowing and invariants; mutating them tests nothing of the policy
    if isinstance(node, ast.If):
        test = node.test
        name = test.id if isinstance(test, ast.Name) else getattr(test, "attr", "")
        return name == "TYPE_CHECKING"
    return False


def _top_level_functions(
    tree: ast.Module,
) -> Iterator[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]:
    for stmt in tree.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield stmt.name, stmt
        elif isinstance(stmt, ast.ClassDef):
            for inner in stmt.body:
                if isinstance(inner, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    yield f"{stmt.name}.{inner.name}", inner


def _walk_body(function: ast.AST) -> Iterator[tuple[ast.AST, ast.AST | None]]:
    """Every node of a function body (not its decorators, defaults or annotations)."""
    assert isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef))
    stack: list[tuple[ast.AST, ast.AST | None]] = [(stmt, function) for stmt in function.body]
    while stack:
        node, parent = stack.pop()
        if _skip(node):
            continue
        yield node, parent
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.expr_context, ast.arguments)):
                continue
            if isinstance(node, ast.AnnAssign) and child is node.annotation:
                continue
            stack.append((child, node))


def _first_line(function: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """The line a function's code object starts at: its first decorator, else ``def``."""
    return min([function.lineno, *(d.lineno for d in function.decorator_list)])


def _find_code(code: types.CodeType, name: str, first_line: int) -> types.CodeType | None:
    # co_qualname is 3.11+; the name and first line identify a code object on 3.10 as well.
    if code.co_name == name and code.co_firstlineno == first_line:
        return code
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            found = _find_code(const, name, first_line)
            if found is not None:
                return found
    return None


def generate(path: Path) -> list[Mutant]:
    rel = path.relative_to(ROOT).as_posix()
    source = path.read_text(encoding="utf-8")
    lines = source.splitlines()
    tree = ast.parse(source, filename=str(path))
    mutants: list[Mutant] = []
    for qualname, function in _top_level_functions(tree):
        seen: dict[str, int] = {}
        for node, parent in _walk_body(function):
            if _is_docstring(node, parent) and parent is function:
                continue
            for operator, description, replacement in _mutations(node):
                text = ast.get_source_segment(source, node) or ast.dump(node)
                line = lines[getattr(node, "lineno", function.lineno) - 1].strip()
                key = f"{operator}:{description}:{text}@{line}"
                seen[key] = seen.get(key, 0) + 1
                digest = hashlib.sha256(f"{key}#{seen[key]}".encode()).hexdigest()[:10]
                mutated = _replace_by_position(tree, node, replacement)
                ast.fix_missing_locations(mutated)
                try:
                    module_code = compile(mutated, str(path), "exec")
                except SyntaxError:
                    continue  # e.g. `continue` outside a loop after `break -> continue` nesting
                code = _find_code(module_code, function.name, _first_line(function))
                if code is None:
                    continue
                mutants.append(
                    Mutant(
                        mutant_id=f"{rel}::{qualname}::{operator}::{digest}",
                        path=rel,
                        qualname=qualname,
                        line=getattr(node, "lineno", function.lineno),
                        last_line=_last_line(node, getattr(node, "lineno", function.lineno)),
                        first_line=_first_line(function),
                        operator=operator,
                        description=f"{description}: {text.splitlines()[0][:80]}",
                        code=code,
                    )
                )
    return mutants


def _last_line(node: ast.AST, first: int) -> int:
    """The last line of what a mutant changes (from its ``first``): the node, or an ``if``'s or
    ``while``'s condition (not its body). Python runs no code on the first line of an ``if (``
    split over lines, so the tests that cover a mutant are those that ran any line of it."""
    head = node.test if isinstance(node, ast.If | ast.While) else node
    last = getattr(head, "end_lineno", None)
    return last if isinstance(last, int) else first


def _replace_by_position(tree: ast.Module, target: ast.AST, replacement: ast.AST) -> ast.Module:
    """A deep copy of ``tree`` with the node at ``target``'s place replaced."""
    path: list[tuple[str, int | None]] = []
    if not _locate(tree, target, path):
        raise LookupError("node not in tree")
    clone = copy.deepcopy(tree)
    holder: ast.AST = clone
    for name, index in path[:-1]:
        child = getattr(holder, name)
        holder = child[index] if index is not None else child
    name, index = path[-1]
    new = ast.copy_location(copy.deepcopy(replacement), target)
    if index is None:
        setattr(holder, name, new)
    else:
        getattr(holder, name)[index] = new
    return clone


def _locate(node: ast.AST, target: ast.AST, path: list[tuple[str, int | None]]) -> bool:
    for name, value in ast.iter_fields(node):
        if value is target:
            path.append((name, None))
            return True
        if isinstance(value, list):
            for index, item in enumerate(value):
                if item is target:
                    path.append((name, index))
                    return True
                if isinstance(item, ast.AST):
                    path.append((name, index))
                    if _locate(item, target, path):
                        return True
                    path.pop()
        elif isinstance(value, ast.AST):
            path.append((name, None))
            if _locate(value, target, path):
                return True
            path.pop()
    return False


# ---------------------------------------------------------------------------------------------
# Coverage: which tests execute which line
# ---------------------------------------------------------------------------------------------


class _PerTest:
    """A tiny pytest plugin: one coverage context per test node id, and each test's duration."""

    def __init__(self, cov: Any) -> None:
        self.cov = cov
        self.durations: dict[str, float] = {}

    def pytest_runtest_setup(self, item: Any) -> None:
        self.cov.switch_context(item.nodeid)

    def pytest_runtest_teardown(self, item: Any, nextitem: Any) -> None:
        del item, nextitem
        self.cov.switch_context("")

    def pytest_runtest_logreport(self, report: object) -> None:
        nodeid = str(getattr(report, "nodeid", ""))
        self.durations[nodeid] = self.durations.get(nodeid, 0.0) + float(
            getattr(report, "duration", 0.0)
        )


def measure_coverage(files: list[str], test_args: list[str], out: Path) -> None:
    """Run the tests once under coverage in a child process; write the line -> tests map."""
    pid = os.fork()
    if pid == 0:  # child
        code = 1
        try:
            import coverage

            cov = coverage.Coverage(
                data_file=None, config_file=False, include=[str(ROOT / f) for f in files]
            )
            per_test = _PerTest(cov)
            cov.start()
            output = io.StringIO()
            with redirect_stdout(output), redirect_stderr(output):
                status = pytest.main([*test_args, "-q", *_PYTEST_FLAGS], [per_test])
            cov.stop()
            if status != pytest.ExitCode.OK:
                # A map from a run that did not pass (a collection error, a failing test) would
                # call every line it missed "uncovered" and every mutant there a survivor.
                tail = "\n".join(output.getvalue().splitlines()[-_FAILED_RUN_LINES:])
                os.write(2, f"{tail}\nmutation: pytest exited {int(status)}\n".encode())
                os._exit(2)
            data = cov.get_data()
            lines: dict[str, dict[str, list[str]]] = {}
            for measured in data.measured_files():
                rel = Path(measured).resolve().relative_to(ROOT).as_posix()
                by_line = data.contexts_by_lineno(measured)
                lines[rel] = {
                    str(line): sorted(c for c in ctxs if c) for line, ctxs in by_line.items()
                }
            out.write_text(json.dumps({"lines": lines, "durations": per_test.durations}))
            code = 0
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    if status != 0 or not out.exists():
        raise SystemExit(
            "mutation: the coverage run failed: the tests must pass on their own first "
            "(pytest's last lines are above)"
        )


# ---------------------------------------------------------------------------------------------
# Running one mutant
# ---------------------------------------------------------------------------------------------


def live_function_index(path: str) -> dict[tuple[str, int], list[types.FunctionType]]:
    """Every live function object defined in ``path``, by (name, first line): one pass over the
    heap, however many mutants are then looked up."""
    filename = str(ROOT / path)
    index: dict[tuple[str, int], list[types.FunctionType]] = {}
    for obj in gc.get_objects():
        if isinstance(obj, types.FunctionType) and obj.__code__.co_filename == filename:
            index.setdefault((obj.__code__.co_name, obj.__code__.co_firstlineno), []).append(obj)
    return index


def _live_functions(path: str, name: str, first_line: int) -> list[types.FunctionType]:
    return live_function_index(path).get((name, first_line), [])


def _patch(mutant: Mutant) -> bool:
    """In the forked child: give every live copy of the function the mutant's code."""
    name = mutant.qualname.rpartition(".")[2]
    functions = _live_functions(mutant.path, name, mutant.first_line)
    if not functions:
        return False
    for function in functions:
        if len(function.__code__.co_freevars) == len(mutant.code.co_freevars):
            function.__code__ = mutant.code
        elif not _replace_method(function, mutant):
            return False
    return True


def _replace_method(function: types.FunctionType, mutant: Mutant) -> bool:
    """A method whose mutant uses fewer free variables (``super()`` removed: no ``__class__``
    cell) cannot take the new code in place: its class gets a new function instead, with the
    cells the mutant still uses."""
    owner_name, _, name = mutant.qualname.rpartition(".")
    owner = function.__globals__.get(owner_name)
    cells = dict(zip(function.__code__.co_freevars, function.__closure__ or (), strict=True))
    if (
        not isinstance(owner, type)
        or owner.__dict__.get(name) is not function
        or not set(mutant.code.co_freevars) <= cells.keys()
    ):
        return False
    replacement = types.FunctionType(
        mutant.code,
        function.__globals__,
        function.__name__,
        function.__defaults__,
        tuple(cells[v] for v in mutant.code.co_freevars),
    )
    replacement.__kwdefaults__ = function.__kwdefaults__
    replacement.__qualname__ = function.__qualname__
    setattr(owner, name, replacement)
    return True


_CLOCK_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
#: A child asleep (not spending CPU) for this many timeouts of wall time is hung.
_WALL_FACTOR = 10


def cpu_seconds(pid: int) -> float | None:
    """CPU time of a live process and of the children it has waited for (Linux ``/proc``);
    None where that cannot be read (the caller then falls back to the wall clock)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
            fields = stat.read().rpartition(")")[2].split()
    except OSError:
        return None
    # After the command name: state is field 3, utime..cstime are fields 14-17 (1-based).
    utime, stime, cutime, cstime = (int(fields[i]) for i in range(11, 15))
    return (utime + stime + cutime + cstime) / _CLOCK_TICKS


def over_time(pid: int, started: float, timeout: float) -> bool:
    """Whether a mutant's child has run past its timeout (CPU time; a hang by wall time)."""
    wall = time.monotonic() - started
    cpu = cpu_seconds(pid)
    if cpu is None:
        return wall > timeout
    return cpu > timeout or wall > timeout * _WALL_FACTOR


def _run_items(items: list[Any]) -> int:
    """Run collected pytest items in this process; 1 at the first failure, else 0."""
    from _pytest.runner import runtestprotocol

    sink = io.StringIO()
    with redirect_stdout(sink), redirect_stderr(sink):
        for index, item in enumerate(items):
            nextitem = items[index + 1] if index + 1 < len(items) else None
            reports = runtestprotocol(item, log=False, nextitem=nextitem)
            if any(report.failed for report in reports):
                return 1
    return 0


class _MutationLoop:
    """A pytest plugin that replaces the test loop: one forked child per mutant.

    The tests are collected once, in the parent; a child patches one function and runs the
    collected items that cover the mutated line, fastest first, stopping at the first failure.
    """

    def __init__(
        self,
        mutants: list[Mutant],
        coverage_map: dict[str, Any],
        *,
        jobs: int,
        timeout: float,
        equivalent: dict[str, str],
        on_outcome: Callable[[list[Outcome]], object] | None = None,
    ) -> None:
        self.mutants = mutants
        self.on_outcome = on_outcome
        self.lines: dict[str, dict[str, list[str]]] = coverage_map["lines"]
        self.durations: dict[str, float] = coverage_map["durations"]
        self.jobs = jobs
        self.timeout = timeout
        self.equivalent = equivalent
        self.outcomes: list[Outcome] = []

    def _covering(self, mutant: Mutant, by_id: dict[str, Any]) -> list[str]:
        """The collected tests that ran any line of the mutated node, fastest first."""
        by_line = self.lines.get(mutant.path, {})
        contexts = {
            c
            for line in range(mutant.line, max(mutant.line, mutant.last_line) + 1)
            for c in by_line.get(str(line), [])
        }
        return sorted(
            (c for c in contexts if c in by_id), key=lambda t: float(self.durations.get(t, 0.0))
        )

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtestloop(self, session: Any) -> bool:
        by_id = {item.nodeid: item for item in session.items}
        running: dict[int, tuple[Mutant, float, int]] = {}
        queue = list(self.mutants)
        done = 0
        while queue or running:
            while queue and len(running) < self.jobs:
                mutant = queue.pop(0)
                if mutant.mutant_id in self.equivalent:
                    reason = self.equivalent[mutant.mutant_id]
                    self.outcomes.append(Outcome(mutant, "equivalent", reason))
                    continue
                tests = self._covering(mutant, by_id)
                if not tests:
                    self.outcomes.append(Outcome(mutant, "uncovered"))
                    continue
                items = [by_id[t] for t in tests]
                pid = os.fork()
                if pid == 0:
                    code = 2
                    try:
                        code = _run_items(items) if _patch(mutant) else 3
                    finally:
                        os._exit(code)
                running[pid] = (mutant, time.monotonic(), len(items))
            time.sleep(0.01)
            for pid, (mutant, started, count) in list(running.items()):
                finished, status = os.waitpid(pid, os.WNOHANG)
                if finished == 0:
                    if over_time(pid, started, self.timeout):
                        os.kill(pid, signal.SIGKILL)
                        os.waitpid(pid, 0)
                        del running[pid]
                        self.outcomes.append(Outcome(mutant, "timeout", tests_run=count))
                    continue
                del running[pid]
                done += 1
                code = os.waitstatus_to_exitcode(status)
                if code == 0:
                    self.outcomes.append(Outcome(mutant, "survived", tests_run=count))
                elif code == 1 or code < 0:  # a test failed, or the mutant crashed the process
                    self.outcomes.append(Outcome(mutant, "killed", tests_run=count))
                elif code == 3:
                    self.outcomes.append(Outcome(mutant, "error", "function not found live"))
                else:  # the runner itself failed: never count that as a kill
                    self.outcomes.append(Outcome(mutant, "error", f"child exit {code}", count))
                if done % 50 == 0:
                    print(f"mutation: {done} mutants run", file=sys.__stderr__, flush=True)
                if self.on_outcome is not None and done % 10 == 0:
                    self.on_outcome(self.outcomes)
        return True


def run_mutants(
    mutants: list[Mutant],
    *,
    coverage_map: dict[str, Any],
    test_args: list[str],
    jobs: int,
    timeout: float,
    equivalent: dict[str, str],
    on_outcome: Callable[[list[Outcome]], object] | None = None,
) -> list[Outcome]:
    loop = _MutationLoop(
        mutants,
        coverage_map,
        jobs=jobs,
        timeout=timeout,
        equivalent=equivalent,
        on_outcome=on_outcome,
    )
    with redirect_stdout(io.StringIO()):
        pytest.main([*test_args, "-q", *_PYTEST_FLAGS], [loop])
    return loop.outcomes


# ---------------------------------------------------------------------------------------------
# Reporting
# ---------------------------------------------------------------------------------------------


def stale_equivalents(
    equivalent: dict[str, str], generated: set[str], files: list[str]
) -> list[str]:
    """The entries of ``equivalent`` for ``files`` (relative to the project) that no mutant
    generated now matches (their line changed or is gone): to judge again, or to remove."""
    run = set(files)
    return sorted(i for i in equivalent if i.split("::", 1)[0] in run and i not in generated)


def load_equivalent(path: Path = EQUIVALENT_FILE) -> dict[str, str]:
    """``mutant-id  # reason`` per line; blank lines and ``#`` lines are comments."""
    if not path.exists():
        return {}
    entries: dict[str, str] = {}
    for raw in path.read_text(encoding="utf-8").splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        mutant_id, _, reason = line.partition("#")
        entries[mutant_id.strip()] = reason.strip() or "equivalent"
    return entries


def score_lines(outcomes: list[Outcome]) -> tuple[list[str], float]:
    by_file: dict[str, list[Outcome]] = {}
    for outcome in outcomes:
        by_file.setdefault(outcome.mutant.path, []).append(outcome)
    rows = [f"{'file':<44} {'mutants':>7} {'killed':>7} {'equiv':>6} {'survived':>8}  score"]
    total_killed = total_counted = 0
    for path in sorted(by_file):
        group = by_file[path]
        killed = sum(o.status in {"killed", "timeout"} for o in group)
        equivalent = sum(o.status == "equivalent" for o in group)
        counted = len(group) - equivalent
        survived = counted - killed
        score = 100.0 * killed / counted if counted else 100.0
        total_killed += killed
        total_counted += counted
        rows.append(
            f"{path:<44} {len(group):>7} {killed:>7} {equivalent:>6} {survived:>8}  {score:5.1f}%"
        )
    total = 100.0 * total_killed / total_counted if total_counted else 100.0
    rows.append(f"{'total':<44} {'':>7} {total_killed:>7} {'':>6} {'':>8}  {total:5.1f}%")
    return rows, total


def _target_files(targets: list[str]) -> list[str]:
    files: list[str] = []
    for target in targets:
        path = ROOT / target
        if path.is_dir():
            files.extend(
                p.relative_to(ROOT).as_posix()
                for p in sorted(path.rglob("*.py"))
                if p.name != "__init__.py" or p.stat().st_size > 200
            )
        elif path.exists():
            files.append(path.relative_to(ROOT).as_posix())
        else:
            raise SystemExit(f"mutation: no such target: {target}")
    return files


def _default_test_args() -> list[str]:
    # The markers list of [tool.pytest.ini_options] holds lines "name: description" (no tomllib
    # on Python 3.10, and a pattern is enough for one quoted list).
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    names = set(re.findall(r'^\s*"([a-z_]+):', text, flags=re.MULTILINE))
    skipped = [m for m in SKIPPED_MARKERS if m in names]
    return ["tests", "-m", " and ".join(f"not {m}" for m in skipped)] if skipped else ["tests"]


#: Outcomes that a resumed run keeps (a survivor or an error is run again).
_FINAL = frozenset({"killed", "timeout"})


def write_report(path: Path, outcomes: list[Outcome]) -> float:
    """The report of the outcomes so far (also written while a run goes on); returns the score."""
    _, total = score_lines(outcomes)
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(path.suffix + ".part")
    partial.write_text(
        json.dumps(
            {
                "score": round(total, 2),
                "mutants": [
                    {
                        "id": o.mutant.mutant_id,
                        "line": o.mutant.line,
                        "description": o.mutant.description,
                        "status": o.status,
                        "tests_run": o.tests_run,
                        "note": o.killer,
                    }
                    for o in outcomes
                ],
            },
            indent=1,
        )
    )
    partial.replace(path)  # a reader never sees half a report
    return total


def resumed_outcomes(report: Path, mutants: list[Mutant]) -> list[Outcome]:
    """The kills an earlier report holds for mutants still generated now (same ids, so the same
    code). Survivors are run again: a test added since may kill them."""
    if not report.exists():
        return []
    by_id = {m.mutant_id: m for m in mutants}
    earlier = json.loads(report.read_text(encoding="utf-8")).get("mutants", [])
    return [
        Outcome(by_id[e["id"]], e["status"], e.get("note", ""), int(e.get("tests_run", 0)))
        for e in earlier
        if e.get("id") in by_id and e.get("status") in _FINAL
    ]


def _generate_all(files: list[str], limit: int | None) -> tuple[list[Mutant], set[str]]:
    """The mutants to run (at most ``limit`` a file, a sample) and the ids of all of them."""
    mutants: list[Mutant] = []
    ids: set[str] = set()
    for rel in files:
        generated = generate(ROOT / rel)
        ids.update(m.mutant_id for m in generated)
        if limit:
            step = max(1, len(generated) // limit)
            generated = generated[::step][:limit]
        mutants.extend(generated)
    return mutants, ids


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", action="append", help="a target file or folder (repeatable)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument(
        "--timeout", type=float, default=90.0, help="CPU seconds per mutant (a hang: 10x wall)"
    )
    parser.add_argument("--report", type=Path, default=ROOT / "reports" / "mutation.json")
    parser.add_argument("--coverage", type=Path, help="reuse a coverage map from an earlier run")
    parser.add_argument(
        "--resume", action="store_true", help="keep the outcomes --report already holds"
    )
    parser.add_argument("--limit", type=int, help="at most this many mutants per file (a sample)")
    parser.add_argument("--fail-under", type=float, default=0.0, help="exit 1 under this score")
    parser.add_argument("tests", nargs="*", help="pytest arguments (default: the unit tests)")
    args = parser.parse_args(argv)
    os.chdir(ROOT)
    sys.path.insert(0, str(ROOT))
    files = _target_files(args.only or list(DEFAULT_TARGETS))
    test_args = args.tests or _default_test_args()

    mutants, generated_ids = _generate_all(files, args.limit)
    print(f"mutation: {len(mutants)} mutants in {len(files)} files", flush=True)
    earlier = resumed_outcomes(args.report, mutants) if args.resume else []
    if earlier:
        done_ids = {o.mutant.mutant_id for o in earlier}
        mutants = [m for m in mutants if m.mutant_id not in done_ids]
        print(f"mutation: {len(earlier)} outcomes kept from {args.report}", flush=True)

    coverage_path = args.coverage
    if coverage_path is None:
        # Kept beside the report, so a later run can pass it to --coverage.
        coverage_path = args.report.with_name(args.report.stem + "-coverage.json")
        coverage_path.parent.mkdir(parents=True, exist_ok=True)
        started = time.monotonic()
        measure_coverage(files, test_args, coverage_path)
        print(
            f"mutation: coverage map in {time.monotonic() - started:.0f} s ({coverage_path})",
            flush=True,
        )
    coverage_map = json.loads(coverage_path.read_text())
    equivalent = load_equivalent()
    for stale in stale_equivalents(equivalent, generated_ids, files):
        print(f"mutation: stale equivalence entry (no such mutant now): {stale}", flush=True)

    started = time.monotonic()
    outcomes = earlier + run_mutants(
        mutants,
        coverage_map=coverage_map,
        test_args=test_args,
        jobs=args.jobs,
        timeout=args.timeout,
        equivalent=equivalent,
        on_outcome=lambda so_far: write_report(args.report, earlier + so_far),
    )
    elapsed = time.monotonic() - started

    rows, _ = score_lines(outcomes)
    print("\n".join(rows))
    print(f"mutation: {len(outcomes) - len(earlier)} mutants run in {elapsed:.0f} s")
    total = write_report(args.report, outcomes)
    survivors = [o for o in outcomes if o.status in {"survived", "uncovered"}]
    for outcome in survivors[:40]:
        m = outcome.mutant
        print(f"  {outcome.status:<9} {m.path}:{m.line} {m.qualname}: {m.description}")
    if len(survivors) > 40:
        print(f"  ... {len(survivors) - 40} more in {args.report}")
    return 1 if total < args.fail_under else 0


if __name__ == "__main__":
    sys.exit(main())
