"""The public surface of ``conformance``: every module's ``__all__`` is sorted, names only what
exists, and every public class, function and method it names carries a docstring."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from types import ModuleType

import pytest

import conformance

# Optional extras (their third-party libraries may be absent) and the CLI's command modules.
_SKIPPED = (
    "conformance.adapters.",
    "conformance.commands",
)


def _modules() -> list[str]:
    walked = pkgutil.walk_packages(conformance.__path__, prefix="conformance.")
    found = [info.name for info in walked if not info.name.startswith(_SKIPPED)]
    return sorted([conformance.__name__, *found])


def _sort_key(name: str) -> tuple[int, str]:
    # ruff's RUF022 order: CONSTANTS, then Classes, then functions.
    return (0 if name.isupper() else 1 if name[0].isupper() else 2, name)


def _documented(module: ModuleType, name: str) -> list[str]:
    """``module.name`` and its public methods/properties that lack a docstring."""
    value = getattr(module, name)
    if not (inspect.isclass(value) or inspect.isfunction(value)):
        return []
    if getattr(value, "__module__", module.__name__) != module.__name__:
        return []  # re-exported: checked where it is defined
    missing = [] if inspect.getdoc(value) else [name]
    if inspect.isclass(value):
        for attr, member in vars(value).items():
            target = member.fget if isinstance(member, property) else member
            if isinstance(target, staticmethod | classmethod):
                target = target.__func__
            if attr.startswith("_") or not inspect.isfunction(target):
                continue
            if not target.__doc__:
                missing.append(f"{name}.{attr}")
    return missing


# Modules without ``__all__`` on purpose: they register checks by import, or only hold a docstring.
WITHOUT_ALL = {
    "conformance.adapters",
    "conformance.checks._helpers",
    "conformance.checks.may",
    "conformance.checks.must",
    "conformance.checks.should",
}


def test_only_the_listed_modules_lack_all() -> None:
    lacking = {m for m in _modules() if not hasattr(importlib.import_module(m), "__all__")}
    assert lacking == WITHOUT_ALL


@pytest.mark.parametrize("module_name", [m for m in _modules() if m not in WITHOUT_ALL])
def test_all_is_sorted_exists_and_documented(module_name: str) -> None:
    module = importlib.import_module(module_name)
    names = module.__all__
    assert list(names) == sorted(names, key=_sort_key), f"{module_name}.__all__ is not sorted"
    absent = [n for n in names if not hasattr(module, n)]
    assert not absent, f"{module_name}.__all__ names what it does not define: {absent}"
    undocumented = [m for n in names for m in _documented(module, n)]
    assert not undocumented, f"{module_name}: no docstring on {undocumented}"
