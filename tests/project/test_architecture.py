"""The import rules of docs/architecture.md, enforced over the source tree.

* ``reference_impl`` never imports ``conformance`` (the assembler ships and runs without the
  harness);
* the shapes never import the policy (a shape parses and renders; what to keep is decided by the
  steps, the assembler and the budget);
* the checks never import the CLI (a check judges an outcome; it is run by the engine, the pytest
  plug-in and the soak loop alike).

Imports are read from the syntax tree, so an import inside a function counts as much as one at the
top of a module.

The suite's own tree is held here too: every test module lives in the folder of its subject
(``tests/reference_impl/``, ``tests/conformance/``, ``tests/cli/``, or ``tests/project/`` for what
concerns the whole project), ``tests/support/`` holds only modules the tests import, and no two
modules share a name (pytest imports them by their bare name, from their own folder).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from paths import ROOT

# The policy: everything that decides what a request keeps.
POLICY = (
    "reference_impl.assembler",
    "reference_impl.budget",
    "reference_impl.config",
    "reference_impl.incremental",
    "reference_impl.metrics",
    "reference_impl.retry",
    "reference_impl.steps",
    "reference_impl.summary",
)
CLI = ("conformance.cli", "conformance.commands", "conformance.pytest_plugin")


@dataclass(frozen=True)
class Rule:
    name: str
    files: str  # a folder below the root, as a glob root
    forbidden: tuple[str, ...]


RULES = (
    Rule("reference_impl never imports conformance", "reference_impl", ("conformance",)),
    Rule("the shapes never import the policy", "reference_impl/shapes", POLICY),
    Rule("the checks never import the CLI", "conformance/checks", CLI),
)


def imported_modules(source: str, module: str) -> Iterator[tuple[int, str]]:
    """(line, absolute module name) of every import in ``source`` (relative ones resolved)."""
    package = module.rsplit(".", 1)[0] if "." in module else module
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            yield node.lineno, base
            for alias in node.names:
                yield node.lineno, f"{base}.{alias.name}"


def _is_under(name: str, prefixes: tuple[str, ...]) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def violations(rule: Rule, root: Path = ROOT) -> list[str]:
    """``file:line imports module`` for every import that breaks ``rule``."""
    found = []
    for path in sorted((root / rule.files).rglob("*.py")):
        module = ".".join(path.relative_to(root).with_suffix("").parts)
        first: dict[int, str] = {}
        for line, name in imported_modules(path.read_text("utf-8"), module):
            if _is_under(name, rule.forbidden):
                first.setdefault(line, name)
        found += [f"{path.relative_to(root)}:{line} imports {name}" for line, name in first.items()]
    return sorted(found)


@pytest.mark.parametrize("rule", RULES, ids=[r.name for r in RULES])
def test_import_rule_holds(rule: Rule) -> None:
    assert (ROOT / rule.files).is_dir(), rule.files
    assert violations(rule) == [], f"{rule.name}:\n" + "\n".join(violations(rule))


def test_the_checker_finds_a_violation_in_any_import_form(tmp_path: Path) -> None:
    folder = tmp_path / "reference_impl" / "shapes"
    folder.mkdir(parents=True)
    (folder / "fine.py").write_text("from reference_impl.transcript import Message\n", "utf-8")
    (folder / "bad.py").write_text(
        "import reference_impl.steps.trim\n"
        "def late():\n"
        "    from reference_impl import assembler\n"
        "    from reference_impl.budget import Budget\n",
        "utf-8",
    )
    rule = Rule("the shapes never import the policy", "reference_impl/shapes", POLICY)
    assert violations(rule, tmp_path) == [
        "reference_impl/shapes/bad.py:1 imports reference_impl.steps.trim",
        "reference_impl/shapes/bad.py:3 imports reference_impl.assembler",
        "reference_impl/shapes/bad.py:4 imports reference_impl.budget",
    ]


def test_relative_imports_are_resolved() -> None:
    source = "from ..steps import trim\nfrom . import base\n"
    names = {n for _, n in imported_modules(source, "reference_impl.shapes.gemini")}
    assert "reference_impl.steps.trim" in names
    assert "reference_impl.shapes.base" in names


# The folders of tests/ and what goes where (docs/architecture.md, "The tree").
TEST_FOLDERS = ("reference_impl", "conformance", "cli", "project")
SUPPORT_FOLDER = "support"


def misplaced_test_files(tests: Path) -> list[str]:
    """Every file of ``tests`` outside the tree the suite keeps, with what is wrong."""
    found = []
    for path in sorted(tests.rglob("*.py")):
        parts = path.relative_to(tests).parts
        if "__pycache__" in parts:
            continue
        where = "/".join(parts)
        if len(parts) == 1:
            if parts[0] != "conftest.py":
                found.append(f"{where}: only conftest.py sits at the top of tests/")
        elif parts[0] == SUPPORT_FOLDER:
            if path.name.startswith("test_"):
                found.append(f"{where}: a test module in support/ (it holds imported helpers)")
        elif parts[0] not in TEST_FOLDERS:
            found.append(f"{where}: not under {', '.join(TEST_FOLDERS)} or {SUPPORT_FOLDER}")
        elif not path.name.startswith("test_") and path.name != "conftest.py":
            found.append(f"{where}: a helper module belongs in {SUPPORT_FOLDER}/")
    seen: dict[str, str] = {}
    for path in sorted(tests.rglob("*.py")):
        where = "/".join(path.relative_to(tests).parts)
        if path.name in {"__init__.py", "conftest.py"} or "__pycache__" in where:
            continue
        if path.name in seen:
            found.append(f"{where}: the same module name as {seen[path.name]}")
        seen.setdefault(path.name, where)
    return found


def test_every_test_module_lives_in_the_folder_of_its_subject() -> None:
    assert (ROOT / "tests" / SUPPORT_FOLDER / "paths.py").is_file()
    for folder in ("reference_impl", "conformance"):
        assert (ROOT / folder / "__init__.py").is_file(), f"tests/{folder}/ mirrors no package"
    assert misplaced_test_files(ROOT / "tests") == []


def test_the_tree_check_finds_each_misplaced_file(tmp_path: Path) -> None:
    for name in (
        "conftest.py",
        "test_flat.py",
        "cli/test_run.py",
        "cli/helpers.py",
        "conformance/test_run.py",
        "support/fakes.py",
        "support/test_fakes.py",
        "elsewhere/test_x.py",
    ):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("", "utf-8")
    assert misplaced_test_files(tmp_path) == [
        "cli/helpers.py: a helper module belongs in support/",
        "elsewhere/test_x.py: not under reference_impl, conformance, cli, project or support",
        "support/test_fakes.py: a test module in support/ (it holds imported helpers)",
        "test_flat.py: only conftest.py sits at the top of tests/",
        "conformance/test_run.py: the same module name as cli/test_run.py",
    ]
